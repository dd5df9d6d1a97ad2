"""Escaping text for LaTeX: one table of specials for the paper's text and the BibTeX fields alike.

Standard library only: edm_ars.formulate.metadata (envs/agents.yaml) writes BibTeX fields with it and edm_ars.writer
(envs/writer.yaml) the paper's text.
"""

from __future__ import annotations

import unicodedata

# Braces as \textbraceleft{} and \textbraceright{}: in text mode the kernel's \{ is \textbraceleft, so the paper
# typesets the same, and a BibTeX field stays balanced (BibTeX counts the brace of \{ as a group's brace).
_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\textbraceleft{}",
    "}": r"\textbraceright{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}

# Non-ASCII characters that pdflatex (utf8 + T1) would reject or render badly.
_UNICODE = {
    "\u2014": "---", "\u2013": "--", "\u2212": "-", "\u2018": "`", "\u2019": "'",
    "\u201c": "``", "\u201d": "''", "\u2026": r"\ldots{}", "\u00a0": "~",
    "\u2265": r"\ensuremath{\geq}", "\u2264": r"\ensuremath{\leq}", "\u00d7": r"\ensuremath{\times}",
    "\u00b1": r"\ensuremath{\pm}", "\u2192": r"\ensuremath{\rightarrow}", "\u00b2": r"\textsuperscript{2}",
}


def escape_latex(text: object, *, fold_unicode: bool = True) -> str:
    """`text` (None as "") escaped to typeset literally in text mode.

    Apostrophes are kept, line breaks and tabs become spaces, LaTeX specials and the characters of the
    unicode table are replaced. Any other character beyond Latin-1 is replaced by its ASCII decomposition
    (its accents dropped, nothing when it has none) with `fold_unicode`, the paper's text; BibTeX fields keep
    it (fold_unicode=False): pdflatex's utf8 and T1 typeset the letters of names such as Gašević or Łukasz,
    which folding would turn into Gasevic and ukasz.
    """
    if text is None:
        return ""
    out = []
    for ch in str(text):
        if ch in _SPECIAL:
            out.append(_SPECIAL[ch])
        elif ch in _UNICODE:
            out.append(_UNICODE[ch])
        elif ch in "\r\t\n":
            out.append(" ")
        elif not fold_unicode or ord(ch) < 128 or "\u00c0" <= ch <= "\u00ff" and ch != "\u00f7":
            out.append(ch)
        else:
            out.append(unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode())
    return "".join(out)
