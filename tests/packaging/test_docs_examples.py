"""The ```python blocks of README.md and docs/*.md run as written.

Every block runs on the CPU here; a block right after the line
`<!-- example: needs cuda -->` runs only where a CUDA device is present (and
is skipped, saying so, elsewhere); one right after
`<!-- example: not run: WHY -->` is skipped with that reason, which must
name the test that does run it (a block that compiles a package, say). Each block runs in a fresh namespace, in
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
NOT_RUN = re.compile(r"^<!-- example: not run: (.*\btests/\S+\.py\b.*) -->$")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def python_blocks(path: Path) -> list[tuple[int, str, bool]]:
    """(line number, code, needs CUDA) of each ```python block of a Markdown file that runs here."""
    return [(line, code, cuda) for line, code, cuda, why_not in marked_blocks(path) if why_not is None]


def marked_blocks(path: Path) -> list[tuple[int, str, bool, str | None]]:
    """(line number, code, needs CUDA, why it is not run or None) of each ```python block."""
    text = path.read_text()
    blocks = []
    for match in BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        not_run = NOT_RUN.match(before)
        blocks.append((line, match.group(1), before == NEEDS_CUDA, not_run.group(1) if not_run else None))
    return blocks


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = [pytest.param(page, line, code, cuda, id=f"{page.relative_to(ROOT)}:{line}")
            for page in PAGES for line, code, cuda in python_blocks(page)]


def test_blocks_not_run_name_the_test_that_runs_them():
    """A block marked not run names an existing test file (the marker's pattern requires one)."""
    for page in PAGES:
        for line, _, _, why_not in marked_blocks(page):
            if why_not is not None:
                named = re.search(r"\btests/\S+\.py\b", why_not).group(0)
                assert (ROOT / named).is_file(), f"{page.relative_to(ROOT)}:{line} names {named}, which is not a file"


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
