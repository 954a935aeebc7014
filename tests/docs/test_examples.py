"""Every fenced ```python block in docs/*.md runs, so the documentation cannot rot.

Each page's blocks run in order in one namespace (a page is a tutorial: later blocks use
earlier names), in a fresh interpreter whose HOME and working directory are a temporary
directory, so examples never touch the user's ~/.hpcjobs. A block whose fence line is
```python no-test is shown but not run (it needs Slurm or Flux, or is a fragment).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
_FENCE = re.compile(r"^```python(?:[ \t]+(?P<rest>.*))?$")

# Runs the blocks given as JSON [[label, source], ...]; a traceback names the page and line.
_RUNNER = """
import json, sys
namespace = {"__name__": "__main__"}
for label, source in json.load(open(sys.argv[1])):
    exec(compile(source, label, "exec"), namespace)
"""


def python_blocks(text: str, page: str) -> list[tuple[str, str]]:
    """(``page:line``, source) of each runnable python block, in order.

    Blank lines are prepended so that a traceback's line number is the page's.
    """
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start = i + 1
        end = start
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"{page}:{i + 1}: unclosed ```python block")
        if "no-test" not in (m.group("rest") or "").split():
            blocks.append((page, "\n" * start + "\n".join(lines[start:end]) + "\n"))
        i = end + 1
    return blocks


def test_block_extraction() -> None:
    text = "x\n```python\na = 1\n```\n```python no-test\nb = 2\n```\n```pythonic\n```\n" \
           "```python\nc = a\n```\n"
    blocks = python_blocks(text, "p.md")
    assert [src.strip() for _, src in blocks] == ["a = 1", "c = a"]
    assert blocks[1][1].index("c = a") == blocks[1][1].count("\n") - 1 == 10


# pages with nothing to run (decisions.md) are left out rather than reported as skipped
PAGES = {p.name: blocks for p in sorted(DOCS.glob("*.md"))
         if (blocks := python_blocks(p.read_text(encoding="utf-8"), f"docs/{p.name}"))}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_examples_run(page: str, tmp_path: Path) -> None:
    blocks = PAGES[page]
    script = tmp_path / "blocks.json"
    script.write_text(json.dumps(blocks))
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home),
               # examples may run the `hpcjobs` command of this environment
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    p = subprocess.run([sys.executable, "-c", _RUNNER, str(script)], cwd=home, env=env,
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, f"{page} examples failed:\n{p.stdout}\n{p.stderr}"
