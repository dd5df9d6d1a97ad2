"""The documentation's links: every relative link in README.md and docs/*.md names a file of the repository and,
with a `#anchor`, a heading of that file (GitHub's anchors: the heading's text lowercased, punctuation removed,
spaces to hyphens); every page of docs/ is listed in its index, docs/README.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^()\s]+)\)")


def prose(text: str) -> str:
    """The text outside fenced code blocks (```), whose brackets are not links and whose `#` lines not headings."""
    return "\n".join(part for k, part in enumerate(re.split(r"^```.*$", text, flags=re.M)) if k % 2 == 0)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: inline markup dropped, lowercased, punctuation removed, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose(path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6} +(.+?) *#* *$", line)
        if m:
            slug = anchor(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(path: Path) -> list[str]:
    """The relative link targets of a Markdown file (web and mail addresses left out)."""
    text = re.sub(r"`[^`\n]*`", "", prose(path.read_text(encoding="utf-8")))  # inline code holds no links
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_the_pages_exist():
    assert (ROOT / "docs" / "README.md").exists()
    assert len(PAGES) > 2


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        where, _, frag = target.partition("#")
        dest = (page.parent / where).resolve() if where else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif frag and (dest.suffix != ".md" or frag not in anchors(dest)):
            broken.append(f"{target}: no heading with the anchor #{frag} in {dest.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_index_lists_every_page():
    index = ROOT / "docs" / "README.md"
    listed = {(index.parent / t.partition("#")[0]).resolve() for t in links(index)}
    missing = [p.name for p in PAGES[1:] if p != index and p.resolve() not in listed]
    assert not missing, f"docs/README.md does not link to {missing}"


def test_the_anchor_rule():
    assert anchor("Breadth: several candidate studies in one run") == "breadth-several-candidate-studies-in-one-run"
    assert anchor("Scale-out and portability: clusters and containers") == (
        "scale-out-and-portability-clusters-and-containers")
    assert anchor("Checking `edm-ars verify-paper`") == "checking-edm-ars-verify-paper"
