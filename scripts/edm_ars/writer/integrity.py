"""Citations from retrieval only, and the paper's lint.

- :func:`repair_citations`: every ``\\cite`` key must be a verified reference; an unknown key is removed,
  and when a citation loses all its keys the sentence is repaired (a parenthetical citation disappears
  with its space; a textual one becomes "prior work"). Placeholders such as ``[Author, Year]``, ``[?]``
  or a key like ``TODO`` are never repaired: they fail (:class:`CitationError`).
- :func:`lint`: TODO or placeholder text, empty sections, section lengths outside 50-150% of their word
  targets, causal verbs in result sentences (from a word list), and "subjects" for students.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import EdmArsError

#: words per section: (low, high) of the target range; the lint allows 50% of low to 150% of high.
WORD_TARGETS = {"ABSTRACT": (150, 250), "INTRODUCTION": (800, 1200), "RELATED_WORK": (500, 800),
                "METHODS": (800, 1300), "RESULTS": (600, 1000), "DISCUSSION": (600, 1000),
                "LIMITATIONS": (300, 500)}
#: sections whose sentences report findings (causal verbs there are flagged)
RESULT_SECTIONS = ("ABSTRACT", "RESULTS", "DISCUSSION")
CAUSAL = re.compile(
    r"\b(?:causes?|caused|causing|leads? to|led to|results? in|resulted in|drives?|drove|driven by|"
    r"determines?|determined by|impacts?|impacted|affects?|affected|effect of|influences?|influenced|"
    r"boosts?|boosted|improves? (?:student |students' )?outcomes|reduces? the (?:risk|likelihood)|"
    r"increases? the (?:risk|likelihood|chance)|is responsible for|because of)\b", re.I)
#: a negation shortly before the verb ("does not show that changing it would change ...")
NEGATED = re.compile(r"\b(?:not|no|never|neither|nor|without|cannot)\b[^.;]{0,50}$", re.I)
#: sentences that state the predictive framing itself
FRAMING = re.compile(r"causal (?:claim|interpretation|finding|effect|reading|language|conclusion)|"
                     r"(?:not|never) (?:a )?causal|identify causes|causal(?:ly)? interpret", re.I)
PLACEHOLDER_TEXT = re.compile(
    r"\bTODO\b|\bTBD\b|\bFIXME\b|\bXXX+\b|lorem ipsum|%%PLACEHOLDER|\[citation needed\]|\[\?+\]|\?\?"
    r"|\[(?:[A-Z][A-Za-z'-]+(?: et al\.?| and [A-Z][A-Za-z'-]+)?),? (?:19|20)\d\d[a-z]?\]"
    r"|\[(?:Author|Authors|Citation|Ref|Reference)s?(?:,? (?:Year|\d{4}))?\]"
    r"|\\(?:cite[tp]?)\{\s*\}|INSERT (?:NUMBER|CITATION|REFERENCE)", re.I)
PLACEHOLDER_KEY = re.compile(r"^(?:\?+|todo|tbd|fixme|xxx+|placeholder|citation_?needed|key|ref|reference|"
                             r"author_?year|authoryear|author\d*|cite|citation|unknown|missing|none|null)$", re.I)
_CITE = re.compile(r"(?P<space>\s*)\\(?P<cmd>cite[tp]?\*?)(?P<opt>(?:\[[^\]]*\])*)\{(?P<keys>[^}]*)\}")


class CitationError(EdmArsError):
    """A placeholder citation (it is never silently repaired)."""


@dataclass
class LintFinding:
    kind: str  # placeholder | empty_section | length | causal | wording
    section: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}, " if self.line else ""
        return f"[{self.kind}] {where}{self.section}: {self.message}"


def placeholder_keys(text: str) -> list[str]:
    return [k.strip() for m in _CITE.finditer(text) for k in m.group("keys").split(",")
            if not k.strip() or PLACEHOLDER_KEY.match(k.strip())]


def repair_citations(text: str, known: set[str] | frozenset[str]) -> tuple[str, list[str]]:
    """Remove unknown keys from every \\cite; repair the sentence when a citation loses all its keys.
    Returns (text, removed keys). Placeholder keys and placeholder text raise CitationError."""
    bad = placeholder_keys(text)
    marks = [m.group(0) for m in PLACEHOLDER_TEXT.finditer(text) if "[" in m.group(0) or "cite" in m.group(0)]
    if bad or marks:
        raise CitationError("placeholder citation(s) in the text: " + ", ".join(
            [f"\\cite{{{k}}}" for k in bad] + marks) + " (a citation must be a retrieved, verified reference)")
    removed: list[str] = []

    def fix(m: re.Match[str]) -> str:
        keys = [k.strip() for k in m.group("keys").split(",") if k.strip()]
        keep = [k for k in keys if k in known]
        removed.extend(k for k in keys if k not in known)
        if keep:
            return f"{m.group('space')}\\{m.group('cmd')}{m.group('opt')}{{{','.join(keep)}}}"
        if m.group("cmd").startswith("citet"):
            return f"{m.group('space')}prior work"
        return ""

    out = _CITE.sub(fix, text)
    if removed:  # tidy what a vanished citation leaves behind
        out = re.sub(r"\(\s*(?:;\s*)*\)", "", out)
        out = re.sub(r"[ \t]+([.,;:])", r"\1", out)
        out = re.sub(r"(^|[.!?]\s+)prior work", lambda m: m.group(1) + "Prior work", out)
    return out, removed


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\\])", text) if s.strip()]


def plain_words(tex: str) -> int:
    """Words of a LaTeX fragment: commands, environments, comments and floats are not counted."""
    t = re.sub(r"(?<!\\)%.*", "", tex)
    t = re.sub(r"\\begin\{(table|figure)\*?\}.*?\\end\{\1\*?\}", " ", t, flags=re.S)
    t = re.sub(r"\\(?:cite[tp]?|ref|label|input|includegraphics)\*?(?:\[[^\]]*\])*\{[^}]*\}", " ", t)
    t = re.sub(r"\\[A-Za-z]+\{\}", " N ", t)  # a number macro prints one word
    t = re.sub(r"\\[A-Za-z]+\*?", " ", t)
    return len(re.findall(r"[A-Za-z0-9][A-Za-z0-9'.,-]*", t))


def lint(sections: dict[str, str], *, lines: dict[str, int] | None = None) -> list[LintFinding]:
    """Lint the filled sections (slot name -> LaTeX). `lines`: the first line of each slot in the .tex."""
    out: list[LintFinding] = []
    lines = lines or {}
    for name, tex in sections.items():
        body = re.sub(r"(?<!\\)%.*", "", tex)
        for m in PLACEHOLDER_TEXT.finditer(body):
            line = lines.get(name, 0) + body[: m.start()].count("\n") + 1 if name in lines else None
            out.append(LintFinding("placeholder", name, f"placeholder text {m.group(0)!r}", line))
        for m in re.finditer(r"\b(?:research |study )?subjects\b", body, re.I):
            out.append(LintFinding("wording", name, f"{m.group(0)!r}: EDM papers say \"students\"", lines.get(name)))
        words = plain_words(body)
        if name in WORD_TARGETS:
            lo, hi = WORD_TARGETS[name]
            if words == 0:
                out.append(LintFinding("empty_section", name, "the section is empty", lines.get(name)))
            elif words < 0.5 * lo or words > 1.5 * hi:
                out.append(LintFinding("length", name, f"{words} words, outside 50-150% of the target {lo}-{hi}",
                                       lines.get(name)))
        if name in RESULT_SECTIONS:
            for sentence in _sentences(body):
                for m in CAUSAL.finditer(sentence):
                    if NEGATED.search(sentence[: m.start()]) or FRAMING.search(sentence):
                        continue
                    out.append(LintFinding("causal", name, f"causal verb {m.group(0)!r} in a result sentence: "
                                           f"{' '.join(sentence.split())[:160]}", lines.get(name)))
    return out
