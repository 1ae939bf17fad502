"""The code of the quickstart and of the user guide runs as written (docs/quickstart.md, docs/guide/).

Each page's ``python`` blocks run in order in one namespace, in a temporary
working directory (a page may write a checkpoint), so a renamed argument or
a changed result type fails here rather than on a reader's screen.
"""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = [DOCS / "quickstart.md", *sorted((DOCS / "guide").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_the_pages_have_code():
    assert sum(len(BLOCK.findall(page.read_text(encoding="utf-8"))) for page in PAGES) >= 10


@pytest.mark.parametrize("page", PAGES, ids=[page.stem for page in PAGES])
def test_the_code_of_the_page_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"docs_{page.stem}"}
    for block in BLOCK.findall(page.read_text(encoding="utf-8")):
        exec(compile(block, str(page), "exec"), namespace)
