"""The ```python blocks of README.md and docs/*.md run as written.

Every block runs on the CPU here; a block right after the line
`<!-- example: needs cuda -->` runs only where a CUDA device is present (and
is skipped, saying so, elsewhere). Each block runs in a fresh namespace, in
this process, against the installed my_ops. Blocks in other languages (bash,
C++, sample output) are not run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
NEEDS_CUDA = "<!-- example: needs cuda -->"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def python_blocks(path: Path) -> list[tuple[int, str, bool]]:
    """(line number, code, needs CUDA) of each ```python block of a Markdown file."""
    text = path.read_text()
    blocks = []
    for match in BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        blocks.append((line, match.group(1), before == NEEDS_CUDA))
    return blocks


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = [pytest.param(page, line, code, cuda, id=f"{page.relative_to(ROOT)}:{line}")
            for page in PAGES for line, code, cuda in python_blocks(page)]


def test_the_readme_has_a_first_example_for_cpu_and_gpu():
    """The README's first block of Python runs everywhere: the example a new user tries first."""
    line, code, cuda = python_blocks(ROOT / "README.md")[0]
    assert not cuda and "torch.cuda.is_available()" in code, f"README.md:{line}"


def test_block_markers_are_recognised(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n\n```python\nprint(1)\n```\n\n" + NEEDS_CUDA + "\n```python\nprint(2)\n```\n"
                    "```bash\necho 3\n```\n")
    assert python_blocks(page) == [(3, "print(1)\n", False), (8, "print(2)\n", True)]


@pytest.mark.parametrize("page, line, code, cuda", EXAMPLES)
def test_example_runs(page, line, code, cuda):
    if cuda and not torch.cuda.is_available():
        pytest.skip("a CUDA example (<!-- example: needs cuda -->), and torch sees no CUDA device")
    namespace = {"__name__": "__main__"}
    # (padded so that a traceback names the line of the page)
    exec(compile("\n" * line + code, str(page), "exec"), namespace)
    if cuda:
        torch.cuda.synchronize()
