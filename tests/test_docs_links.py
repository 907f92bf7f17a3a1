"""The README and docs/ point only at files of the repository: every relative Markdown
link resolves to a file or folder of the clone, and no text names a path outside it (a
newcomer's clone is all they have)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
OUTSIDE = re.compile(r"\.\./shared|/work/|shared/(?:SPEC|DESIGN|STYLE)\.md")


def _relative_links(text: str) -> list[str]:
    return [
        target.split("#", 1)[0]
        for target in LINK.findall(text)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")
    ]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_inside_the_repository(doc: Path) -> None:
    text = doc.read_text()
    missing = [t for t in _relative_links(text) if t and not (doc.parent / t).exists()]
    assert missing == []
    assert OUTSIDE.findall(text) == []


def test_the_link_rule_sees_a_broken_link_and_an_outside_path() -> None:
    text = "see [a](docs/nope.md), [b](https://example.org/x), [c](#top) and ../shared/SPEC.md"
    assert _relative_links(text) == ["docs/nope.md"]
    assert OUTSIDE.findall(text) == ["../shared"]
