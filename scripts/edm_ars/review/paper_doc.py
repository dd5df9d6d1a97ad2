"""A paper's LaTeX source read for the consistency check: its (sub)sections with their numbers, titles and labels,
the labels it defines (of sections, tables and figures), and the sentences of its body outside floats."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from edm_ars.review.claim_reading import plain


# ---- the document -----------------------------------------------------------------------------------------
@dataclass
class Section:
    level: int  # 1 section, 2 subsection, 3 subsubsection
    number: str  # "4", "4.2" (empty after \appendix: lettered)
    title: str
    label: str | None
    start: int
    end: int = 0


@dataclass
class Doc:
    tex: str
    body_start: int
    lines: list[int]
    sections: list[Section]
    labels: dict[str, tuple[str, int]]  # label -> (kind, position)

    def line(self, pos: int) -> int:
        return bisect.bisect_right(self.lines, pos)

    def section_at(self, pos: int) -> Section | None:
        inner = [s for s in self.sections if s.start <= pos < s.end]
        return max(inner, key=lambda s: s.level) if inner else None

    def where(self, pos: int) -> str:
        s = self.section_at(pos)
        return (s.label or s.title) if s else "front matter"

    def section_of(self, label: str) -> Section | None:
        return next((s for s in self.sections if s.label == label), None)

    def text_of(self, s: Section) -> str:
        return self.tex[s.start:s.end]


def _blank_comments(tex: str) -> str:
    return re.sub(r"(?<!\\)%.*$", lambda m: " " * len(m.group(0)), tex, flags=re.M)


def parse(tex: str) -> Doc:
    tex = _blank_comments(tex)
    lines = [i for i, ch in enumerate(tex) if ch == "\n"]
    begin = tex.find("\\begin{document}")
    body_start = begin if begin >= 0 else 0
    end_doc = tex.find("\\end{document}")
    end_doc = end_doc if end_doc >= 0 else len(tex)
    sections: list[Section] = []
    counters = [0, 0, 0]
    appendix = None
    heads = list(re.finditer(r"\\(sub)?(sub)?section(\*?)\{((?:[^{}]|\{[^{}]*\})*)\}|\\appendix\b", tex[:end_doc]))
    for m in heads:
        if m.start() < body_start:
            continue
        if m.group(0).startswith("\\appendix"):
            appendix = m.start()
            counters = [0, 0, 0]
            continue
        level = 1 + bool(m.group(1)) + bool(m.group(2))
        starred = bool(m.group(3))
        if not starred:
            counters[level - 1] += 1
            for i in range(level, 3):
                counters[i] = 0
        top = counters[0] if appendix is None else chr(ord("A") + counters[0] - 1) if counters[0] else "?"
        number = "" if starred else ".".join([str(top)] + [str(c) for c in counters[1:level]])
        after = tex[m.end():m.end() + 80]
        lab = re.match(r"\s*\\label\{([^}]*)\}", after)
        sections.append(Section(level, number, plain(m.group(4)), lab.group(1) if lab else None, m.start()))
    for i, s in enumerate(sections):
        nxt = next((t.start for t in sections[i + 1:] if t.level <= s.level), None)
        if appendix is not None and s.start < appendix and (nxt is None or nxt > appendix):
            nxt = appendix
        s.end = nxt if nxt is not None else end_doc
    labels: dict[str, tuple[str, int]] = {}
    for m in re.finditer(r"\\label\{([^}]*)\}", tex):
        env = _enclosing_env(tex, m.start())
        kind = "table" if env and env.startswith("table") else "figure" if env and env.startswith("figure") else \
            "section"
        labels.setdefault(m.group(1), (kind, m.start()))
    return Doc(tex, body_start, lines, sections, labels)


def _enclosing_env(tex: str, pos: int) -> str | None:
    depth: dict[str, int] = {}
    for m in re.finditer(r"\\(begin|end)\{([a-z*]+)\}", tex[:pos]):
        depth[m.group(2)] = depth.get(m.group(2), 0) + (1 if m.group(1) == "begin" else -1)
    open_ = [e for e, d in depth.items() if d > 0 and e.rstrip("*") in ("table", "figure")]
    return open_[-1] if open_ else None


_FLOAT = re.compile(r"\\begin\{(table|figure)\*?\}.*?\\end\{\1\*?\}", re.S)
_BOUNDARY = re.compile(r"\n\s*\n|\\item\b|\\(?:sub)*section\*?\{[^}]*\}(?:\\label\{[^}]*\})?|"
                       r"\\begin\{[a-z*]+\}|\\end\{[a-z*]+\}")
_ABBREV = re.compile(r"(?:\be\.g|\bi\.e|\bet al|\bcf|\bvs|\bFig|\bSec|\bTab|\bNo)\.$")


def sentences(doc: Doc) -> list[tuple[int, str]]:
    """(position, LaTeX text) of every sentence of the body outside floats (captions are not claims)."""
    tex = doc.tex
    body = _FLOAT.sub(lambda m: " " * len(m.group(0)), tex)
    out = []
    chunks, last = [], doc.body_start
    for m in _BOUNDARY.finditer(body, doc.body_start):
        chunks.append((last, body[last:m.start()]))
        last = m.end()
    chunks.append((last, body[last:]))
    for start, chunk in chunks:
        pos = 0
        for m in re.finditer(r"(?<=[.!?])\s+(?=[A-Z\\(])", chunk):
            piece = chunk[pos:m.start()]
            if _ABBREV.search(piece):
                continue
            if piece.strip():
                out.append((start + pos + len(piece) - len(piece.lstrip()), piece.strip()))
            pos = m.end()
        if chunk[pos:].strip():
            piece = chunk[pos:]
            out.append((start + pos + len(piece) - len(piece.lstrip()), piece.strip()))
    return out
