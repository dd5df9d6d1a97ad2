"""Reading a paper's PDF for the links of its numbers (issue 38): the link annotations (pypdf), the words under
each one (poppler's `pdftotext -bbox`), and the appendix's targets; shared by the workflow tests of both kinds of
paper."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pypdf


def _words(pdf: Path) -> dict[int, list[tuple[float, float, float, float, str]]]:
    """Each page's words with their boxes (x0, y0, x1, y1 from the top left, in points)."""
    html = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages: dict[int, list] = {}
    for i, page in enumerate(re.findall(r"<page[^>]*>(.*?)</page>", html, re.S)):
        pages[i] = [(float(a), float(b), float(c), float(d), w) for a, b, c, d, w in re.findall(
            r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>', page)]
    return pages


def number_links(pdf: Path) -> list[tuple[int, str, str]]:
    """(page, target, text under the link) of every link annotation to a number's source (target src:...)."""
    reader = pypdf.PdfReader(str(pdf))
    words = _words(pdf)
    out = []
    for i, page in enumerate(reader.pages):
        height = float(page.mediabox.height)
        for annot in page.get("/Annots") or []:
            a = annot.get_object()
            if a.get("/Subtype") != "/Link":
                continue
            dest = a.get("/Dest") or (a.get("/A") or {}).get("/D")
            if not str(dest).startswith("src:"):
                continue
            x0, y0, x1, y1 = (float(v) for v in a["/Rect"])
            top, bottom = height - y1, height - y0
            # the words the link overlaps (a number glued to text, "max_iter=5", is one word wider than the link)
            under = [w for (a0, b0, a1, b1, w) in words.get(i, [])
                     if a0 < x1 - 0.5 and a1 > x0 + 0.5 and top - 0.5 <= (b0 + b1) / 2 <= bottom + 0.5]
            out.append((i + 1, str(dest), " ".join(under)))
    return out


def check_numbers_linked(paper_dir: Path, pdf: Path) -> dict:
    """Every checked number of the paper is a working link: as many links to sources as the paper prints checked
    numbers (a number broken over two lines makes two), each to a destination the PDF holds, each over a printed
    number, and every target of the checked macros is an appendix line (one line per target). Returns counts."""
    verification = json.loads((paper_dir / "verification.json").read_text())
    trace = json.loads((paper_dir / "trace.json").read_text())
    links = number_links(pdf)
    named = set(pypdf.PdfReader(str(pdf)).named_destinations)
    assert all(target in named for _, target, _ in links), [t for _, t, _ in links if t not in named][:5]
    # a link covers a printed number (a version, a bound "< 0.001", a commit quoted from the provenance)
    not_numbers = [(p, t, text) for p, t, text in links if not re.search(r"\d", text)]
    assert not not_numbers, not_numbers[:5]
    checked = verification["counts"]["checked"]
    # every use of a macro whose number verify-paper checked is a link (a quoted text holding several numbers is
    # one link; a number broken over two lines makes two)
    uses = {(n["line"], n["macro"]) for n in verification["numbers"]
            if n["status"] in ("matched", "unmatched") and n["macro"]}
    assert len(links) >= len(uses), (len(links), len(uses))
    wrapped = set(re.findall(r"\\newcommand\{\\([A-Za-z]+)\}\{\\srclink", (paper_dir / "numbers.tex").read_text()))
    assert {m.lstrip("\\") for _, m in uses} <= wrapped
    sources = (paper_dir / "sources.tex").read_text()
    targets = re.findall(r"\\hypertarget\{(src:[0-9a-f]+)\}", sources)
    assert len(targets) == len(set(targets))  # each source once
    linked = {t for _, t, _ in links}
    assert linked <= set(targets)
    assert {n["target"] for n in trace["numbers"] if n["checked"]} >= linked
    return {"links": len(links), "checked": checked, "targets": len(targets)}
