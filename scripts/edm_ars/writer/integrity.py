"""Citations from retrieval only, placeholders, the review's verdict, and the paper's lint.

- :func:`citations` / :func:`cited_keys`: the keys of every natbib or biblatex citation command
  (:data:`CITE_NAME`: ``\\cite``, ``\\citet``, ``\\citep``, ``\\citealt``, ``\\citealp``, ``\\citeauthor``,
  ``\\citeyear``, ``\\citeyearpar``, ``\\citenum``, the capitalised ``\\Citet``-style forms, ``\\parencite``,
  ``\\textcite``, ``\\autocite``, ``\\smartcite``, ``\\footcite``, ``\\supercite``, ``\\fullcite``, ``\\citetitle``,
  ``\\nocite``; starred, with up to two optional arguments, keys separated by commas and spaces).
- :func:`repair_citations`: every citation key must be a verified reference; an unknown key is removed,
  and when a citation loses all its keys the sentence is repaired (a parenthetical citation disappears
  with its space; a textual one becomes "prior work"). Placeholders such as ``[Author, Year]``, ``[?]``,
  ``[citation needed]`` or a key like ``TODO`` are never repaired: they fail (:class:`CitationError`).
- :func:`placeholders` / :func:`document_placeholders`: text that stands in for missing content: bracketed
  notes (``[TBD]``, ``[INSERT FIGURE 2]``, ``[REF]``), unfilled template slots (the template's
  ``%%PLACEHOLDER:NAME%%``, ``{{name}}``, ``<<name>>``, ``${name}``, ``$snake_case$``, ``%(name)s`` and the
  prompts' ``{name}`` str.format fields), TODO/TBD/TBA/TBC/FIXME/XXX as words, "Lorem ipsum" and "??".
  LaTeX comments are not printed and are not read, except for the two slot forms that are comments
  themselves (``%%PLACEHOLDER:NAME%%``, and a ``%(name)s`` that cuts the rest of its line off).
- :func:`unverified_reasons`: why a review leaves the paper unverified (the UNVERIFIED block is then due).
- :func:`lint`: placeholder text, empty sections, section lengths outside 50-150% of their word
  targets, causal verbs in result sentences (:func:`causal_wording`, from a word list; in a causal study a sentence
  that names its treatment may use them: it reports the estimand), and "subjects" for students.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from edm_ars.core.causal import CAUSAL, FRAMING, NEGATED, causal_phrases  # noqa: F401 (CAUSAL, FRAMING, NEGATED: re-exported)
from edm_ars.core.errors import EdmArsError

#: words per section: (low, high) of the target range; the lint allows 50% of low to 150% of high.
WORD_TARGETS = {"ABSTRACT": (150, 250), "INTRODUCTION": (800, 1200), "RELATED_WORK": (500, 800),
                "METHODS": (800, 1300), "RESULTS": (600, 1000), "DISCUSSION": (600, 1000),
                "LIMITATIONS": (300, 500)}
#: sections whose sentences report findings (causal verbs there are flagged)
RESULT_SECTIONS = ("ABSTRACT", "RESULTS", "DISCUSSION")
PLACEHOLDER_KEY = re.compile(r"^(?:\?+|todo|tbd|fixme|xxx+|placeholder|citation_?needed|key|ref|reference|"
                             r"author_?year|authoryear|author\d*|cite|citation|unknown|missing|none|null)$", re.I)


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


def strip_comments(tex: str) -> str:
    """`tex` without its LaTeX comments (an unescaped % to the end of its line); line breaks are kept."""
    return re.sub(r"(?<!\\)%.*", "", tex)


# ---- citations ---------------------------------------------------------------------------------------
#: natbib and biblatex commands whose mandatory argument is a list of keys (no letter may follow the name)
CITE_NAME = (r"(?:[Cc]ite(?:t|p|alt|alp|author|year(?:par)?|num)?|[Pp]arencite|[Tt]extcite|[Aa]utocite|"
             r"[Ss]martcite|[Ff]ootcite(?:text)?|[Ss]upercite|[Ff]ullcite|[Cc]itetitle|nocite)(?![A-Za-z])")
#: the commands that are part of the sentence ("\citet{x} showed"): a citation of these that loses all its keys
#: becomes "prior work"; any other (parenthetical, a year, a number) disappears
TEXTUAL_CITE = re.compile(r"[Cc]ite(?:t|alt|author)|[Tt]extcite|[Ff]ullcite|[Cc]itetitle")
_CITE = re.compile(rf"(?P<space>[ \t~]*)\\(?P<cmd>{CITE_NAME})(?P<star>\*?)"
                   rf"(?P<opt>(?:[ \t]*\[[^\[\]]*\]){{0,2}})\s*\{{(?P<keys>[^{{}}]*)\}}")


@dataclass(frozen=True)
class Citation:
    command: str  # as written, without the backslash: "citep", "Citet*"
    key: str  # "" for an empty argument (or an empty item between commas)
    line: int  # 1-based line of the key in the text read


def citations(tex: str) -> list[Citation]:
    """Every key of every citation command of `tex`, in order, with its line. Comments are not read; the key
    "*" of \\nocite{*} (the whole bibliography) is no key."""
    text = strip_comments(tex)
    out: list[Citation] = []
    for m in _CITE.finditer(text):
        command, offset = m.group("cmd") + m.group("star"), m.start("keys")
        for part in m.group("keys").split(","):
            key = part.strip()
            if key != "*":
                lead = len(part) - len(part.lstrip())
                out.append(Citation(command, key, text.count("\n", 0, offset + lead) + 1))
            offset += len(part) + 1
    return out


def cited_keys(tex: str) -> list[str]:
    """The distinct keys cited in `tex`, in order of first citation."""
    return list(dict.fromkeys(c.key for c in citations(tex) if c.key))


def placeholder_keys(text: str) -> list[str]:
    return [c.key for c in citations(text) if not c.key or PLACEHOLDER_KEY.match(c.key)]


# ---- placeholders ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Placeholder:
    kind: str  # citation | note | slot | word | filler | unresolved
    text: str
    start: int  # offset in the text read


#: a bracketed group that is not an optional argument (after a command, a star, a closing brace or bracket)
#: nor a line-break skip (\\[2pt])
_BRACKET = re.compile(r"(?<![\\\w@*}\]])\[(?P<inner>[^\[\]\n]{1,80})\]")
#: a citation stand-in: [?], [citation needed], [REF], [Author, Year], [Smith et al., 2020]
_CITATION_NOTE = re.compile(
    r"(?i:\?+|citations?(?: needed)?|cite|refs?\.?|references?(?: needed)?|sources?(?: needed)?|"
    r"authors?(?:,? (?:year|\d{4}))?)"
    r"|[A-Z][A-Za-z'-]+(?: et al\.?| and [A-Z][A-Za-z'-]+)?,? (?:19|20)\d\d[a-z]?")
#: an editor's note: [INSERT FIGURE 2], [TBD], [to be added], [...]
_NOTE = re.compile(
    r"(?i:(?:insert|add|todo|tbd|tba|tbc|fixme|placeholder|missing|fill in|to be (?:added|completed|confirmed|"
    r"determined|written)|xx+)\b.*)|\.\.\.|\\ldots(?:\{\})?|\u2026")
_SLOT = re.compile(
    r"\{\{\s*[A-Za-z_][\w.]*\s*\}\}"  # {{name}}: Jinja, Mustache
    r"|(?:<<|\\textless\{\}\\textless\{\})\s*[A-Za-z_][\w.]*\s*(?:>>|\\textgreater\{\}\\textgreater\{\})"
    r"|\\?\$\\?\{[A-Za-z_]\w*\\?\}"  # ${name}: string.Template (also escaped)
    r"|\\\$[A-Za-z_]\w*"  # $name, escaped into the text
    r"|(?<!\\)\$[A-Za-z]+(?:_[A-Za-z]{3,})+\$"  # $snake_case$: an identifier set as mathematics
    r"|\\%\([A-Za-z_]\w*\)[sdifr]"  # %(name)s, escaped into the text
    r"|\\\{[a-z_][a-z0-9_]*(?:![rsa])?(?::[^{}\\\s]*)?\\\}")  # {name}, escaped into the text
#: a str.format field ({name}, {name.attr}, {name!r}, {name:.3f}, {:.3f}) as the prompts write them: a group of its
#: own, not the argument of a command (\emph{name}, \begin {table}) nor a script (^{ab}, _{ab})
_FORMAT_FIELD = re.compile(r"(?<![\\\w@*}\]^_$])\{(?:[a-z_][a-z0-9_]+(?:\.[a-z_]\w*|\[\w+\])*(?:![rsa])?(?::[^{}\s]*)?"
                           r"|(?:![rsa])?:[^{}\s]+)\}")
_ARGUMENT_BEFORE = re.compile(r"(?:\\[A-Za-z@]+\*?|[}\]])\s+$")
_WORD = re.compile(r"(?<!\w)(?:(?i:todos?|fixme|tbd)|TBA|TBC|XXX+)(?!\w)|\bINSERT (?:[A-Z]+)\b")
_FILLER = re.compile(r"(?i)lorem\s+ipsum")
_UNRESOLVED = re.compile(r"\?\?")
#: template slots that are LaTeX comments themselves: the template's unfilled %%PLACEHOLDER:NAME%% line, and a
#: %(name)s that starts the comment (it cut the rest of its line off)
_COMMENT_SLOT = re.compile(r"%%PLACEHOLDER:[A-Za-z_]+%%")
_COMMENT_FORMAT = re.compile(r"%\([A-Za-z_]\w*\)[sdifr]")


def _capital_note(inner: str) -> bool:
    """[CITATION NEEDED], [NEED DATA HERE]: capitals only, with two or more words of two or more letters."""
    return bool(re.fullmatch(r"[A-Z0-9 :/,.-]+", inner)) and len(re.findall(r"[A-Z]{2,}", inner)) >= 2


def placeholders(text: str) -> list[Placeholder]:
    """Placeholder text in `text` (LaTeX whose comments the caller has removed), in order; of two overlapping
    findings ("[??]") the first and longer is kept."""
    found: list[Placeholder] = []
    for m in _BRACKET.finditer(text):
        inner = m.group("inner").strip()
        if _CITATION_NOTE.fullmatch(inner):
            found.append(Placeholder("citation", m.group(0), m.start()))
        elif _NOTE.fullmatch(inner) or _capital_note(inner):
            found.append(Placeholder("note", m.group(0), m.start()))
    for kind, rx in (("slot", _SLOT), ("word", _WORD), ("filler", _FILLER), ("unresolved", _UNRESOLVED)):
        found += [Placeholder(kind, m.group(0), m.start()) for m in rx.finditer(text)]
    found += [Placeholder("slot", m.group(0), m.start()) for m in _FORMAT_FIELD.finditer(text)
              if not _ARGUMENT_BEFORE.search(text, max(0, m.start() - 40), m.start())]
    found.sort(key=lambda p: (p.start, -len(p.text)))
    kept: list[Placeholder] = []
    for p in found:
        if not kept or p.start >= kept[-1].start + len(kept[-1].text):
            kept.append(p)
    return kept


def document_placeholders(tex: str) -> list[tuple[int, str, str]]:
    """(line, kind, text) of every placeholder in the body of a .tex file (from \\begin{document}; the preamble
    is not printed), comments not read except for the template slots that are comments themselves."""
    lines = tex.splitlines()
    start = next((i for i, line in enumerate(lines) if "\\begin{document}" in strip_comments(line)), 0)
    body = [line if i >= start else "" for i, line in enumerate(lines)]
    text = "\n".join(strip_comments(line) for line in body)
    out = [(text.count("\n", 0, p.start) + 1, p.kind, p.text) for p in placeholders(text)]
    for lineno, raw in enumerate(body, start=1):
        out += [(lineno, "slot", m.group(0)) for m in _COMMENT_SLOT.finditer(raw)]
        comment = re.search(r"(?<!\\)%", raw)
        if comment and (m := _COMMENT_FORMAT.match(raw, comment.start())):
            out.append((lineno, "slot", m.group(0)))
    return sorted(out)


# ---- the review --------------------------------------------------------------------------------------
def unverified_reasons(review: dict[str, Any]) -> list[str]:
    """Why a review leaves the paper unverified ([] when it does not): the review is marked `unverified` (the
    Critic's REVISE with no revision round left, or a REVISE no stage can act on), its verdict is not PASS, or
    its rubric verdict is not PASS (a PASS that only the round cap made)."""
    reasons = []
    if review.get("unverified"):
        reasons.append("the review is marked unverified")
    verdict = review.get("verdict")
    if verdict != "PASS":
        reasons.append(f"its verdict is {verdict}")
    rubric = review.get("rubric_verdict")
    if rubric is not None and rubric not in ("PASS", verdict):
        reasons.append(f"its rubric verdict is {rubric}")
    return reasons


#: the template's warning box (\unverifiedbox{...}, defined in config/paper_template.tex) with some content
UNVERIFIED_BLOCK = re.compile(r"\\unverifiedbox\s*\{\s*[^\s}]")


# ---- repair ------------------------------------------------------------------------------------------
def repair_citations(text: str, known: set[str] | frozenset[str]) -> tuple[str, list[str]]:
    """Remove unknown keys from every citation command; repair the sentence when a citation loses all its keys.
    Returns (text, removed keys). Placeholder keys and placeholder citations ([?], [Author, Year]) raise
    CitationError."""
    bad = placeholder_keys(text)
    marks = [p.text for p in placeholders(strip_comments(text)) if p.kind == "citation"]
    if bad or marks:
        raise CitationError("placeholder citation(s) in the text: " + ", ".join(
            [f"\\cite{{{k}}}" for k in bad] + marks) + " (a citation must be a retrieved, verified reference)")
    removed: list[str] = []

    def fix(m: re.Match[str]) -> str:
        keys = [k.strip() for k in m.group("keys").split(",") if k.strip()]
        keep = [k for k in keys if k in known or k == "*"]
        removed.extend(k for k in keys if k not in keep)
        if keep:
            return f"{m.group('space')}\\{m.group('cmd')}{m.group('star')}{m.group('opt')}{{{','.join(keep)}}}"
        if TEXTUAL_CITE.fullmatch(m.group("cmd")):
            return f"{m.group('space')}prior work"
        return ""

    out = _CITE.sub(fix, text)
    if removed:  # tidy what a vanished citation leaves behind
        out = re.sub(r"[ \t]*\(\s*(?:;\s*)*\)", "", out)
        out = re.sub(r"[ \t~]+([.,;:])", r"\1", out)
        out = re.sub(r"(^|[.!?]\s+)prior work", lambda m: m.group(1) + "Prior work", out)
    return out, removed


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\\])", text) if s.strip()]


def plain_words(tex: str) -> int:
    """Words of a LaTeX fragment: commands, environments, comments and floats are not counted."""
    t = re.sub(r"(?<!\\)%.*", "", tex)
    t = re.sub(r"\\begin\{(table|figure)\*?\}.*?\\end\{\1\*?\}", " ", t, flags=re.S)
    t = re.sub(rf"\\(?:{CITE_NAME}|ref|label|input|includegraphics)\*?(?:\[[^\]]*\])*\{{[^}}]*\}}", " ", t)
    t = re.sub(r"\\[A-Za-z]+\{\}", " N ", t)  # a number macro prints one word
    t = re.sub(r"\\[A-Za-z]+\*?", " ", t)
    return len(re.findall(r"[A-Za-z0-9][A-Za-z0-9'.,-]*", t))


def causal_wording(text: str) -> list[tuple[str, str]]:
    """(causal verb, sentence) of every causal verb of `text` (:data:`CAUSAL`) that is not negated shortly before
    it (:data:`NEGATED`) in a sentence that does not state the predictive framing itself (:data:`FRAMING`). The
    lint flags these in result sentences; tests/writer/test_phrases.py holds every fixed phrase to it."""
    return [(verb, " ".join(sentence.split())) for sentence in _sentences(text) for verb in causal_phrases(sentence)]


def names_treatment(sentence: str, phrases: list[str] | tuple[str, ...]) -> bool:
    """True when `sentence` names the treatment by one of its phrases (case-insensitive, whole words)."""
    return any(re.search(r"(?<!\w)" + re.escape(p.strip()) + r"(?!\w)", sentence, re.I) for p in phrases if p.strip())


def lint(sections: dict[str, str], *, lines: dict[str, int] | None = None,
         treatment_phrases: list[str] | tuple[str, ...] | None = None) -> list[LintFinding]:
    """Lint the filled sections (slot name -> LaTeX). `lines`: the first line of each slot in the .tex.

    `treatment_phrases` (a causal study: research_spec.json treatment.phrases) lets a sentence with causal verbs pass
    when it names the treatment by one of them, since such a sentence reports the estimand under the stated
    assumptions; every other sentence with causal verbs still fails. None (a prediction study): none passes."""
    out: list[LintFinding] = []
    lines = lines or {}
    phrases = [str(p) for p in treatment_phrases or []]
    for name, tex in sections.items():
        body = strip_comments(tex)
        for p in placeholders(body):
            line = lines.get(name, 0) + body[: p.start].count("\n") + 1 if name in lines else None
            out.append(LintFinding("placeholder", name, f"placeholder {p.kind} {p.text!r}", line))
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
            for verb, sentence in causal_wording(body):
                if phrases and names_treatment(sentence, phrases):
                    continue
                out.append(LintFinding("causal", name, f"causal verb {verb!r} in a result sentence: "
                                       f"{sentence[:160]}", lines.get(name)))
    return out
