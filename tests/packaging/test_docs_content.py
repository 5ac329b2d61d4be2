"""What a new user must find in the README and docs/install.md: what my_ops is
and how to install it before the contributor's commands, where to report a
bug, the license, a CPU-only recipe that keeps pip off CUDA torch, and every
command the package installs."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
INSTALL = (ROOT / "docs" / "install.md").read_text()


def _sections(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, re.M)


def test_the_readme_leads_with_install_and_a_first_example():
    sections = _sections(README)
    assert sections.index("Install") < sections.index("A first example") < sections.index("Building and testing")
    assert sections[0] == "Install"
    # the contributor's two commands, still the README's build and test commands
    assert "bash ci/build.sh   # (1)" in README and "bash ci/test.sh    # (2)" in README


def test_the_readme_says_where_to_report_bugs_and_the_license():
    bugs = README.split("## Reporting bugs", 1)[1].split("\n## ", 1)[0]
    assert "https://github.com/my-ops/my_ops/issues" in bugs and "python -m my_ops" in bugs
    assert "BSD-3-Clause" in README and "(LICENSE)" in README and "(CHANGELOG.md)" in README


def test_the_cpu_only_recipe_installs_torch_from_the_cpu_index_first():
    """Without torch's CPU index first, pip resolves PyPI's torch: a CUDA build on Linux."""
    blocks = re.findall(r"```bash\n(.*?)```", INSTALL, re.S)
    recipes = [b for b in blocks if "my_ops==1.0+cpu" in b and "download.pytorch.org/whl/cpu" in b]
    assert recipes, "docs/install.md has no CPU-only recipe"
    lines = recipes[0].strip().splitlines()
    cpu_index = "--index-url https://download.pytorch.org/whl/cpu"
    torch_line = next(i for i, line in enumerate(lines) if line.startswith("pip install torch ") and cpu_index in line)
    my_ops_line = next(i for i, line in enumerate(lines) if "my_ops==1.0+cpu" in line)
    assert torch_line < my_ops_line


def test_every_console_script_is_documented():
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get("scripts", {})
    for name, target in scripts.items():
        assert f"`{name}`" in README and f"`{name}`" in INSTALL, name
    assert scripts.get("my-ops-info") == "my_ops.__main__:main"  # the same report as python -m my_ops
