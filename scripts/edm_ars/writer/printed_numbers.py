"""The numbers printed in a paper, read for `edm-ars verify-paper`: every number of the document body (the number
macros of numbers.tex expanded; scientific notation, percentages, bounds such as "<0.001", the two ends of an
interval "[a, b]"), with its line, section, whether it is checked strictly (the abstract, the results, every table
float and tabular environment), the macro that printed it and the metric named before it in its sentence."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edm_ars.writer.integrity import CITE_NAME

STRICT_SLOTS = {"ABSTRACT", "RESULTS"}


@dataclass
class Number:
    line: int
    text: str  # as printed (after macro expansion)
    value: float
    decimals: int
    percent: bool
    section: str
    strict: bool
    macro: str | None = None
    source: str | None = None
    bound: bool = False  # printed as "<0.001"
    interval: int | None = None  # numbers of one "[a, b]" share an id
    metric: list[str] | None = None  # the metric named before it in its sentence
    status: str = ""  # matched | exempt | unmatched
    how: str = ""
    exponent: int = 0  # scientific notation: the value is the printed mantissa times 10**exponent
    level: bool = False  # a confidence level ("95\% CI"): exempt


#: metric names in running text -> the artifact keys that hold them
METRIC_WORDS = [
    (r"\bAUC\b|area under the ROC", {"auc"}), (r"balanced accuracy|Bal\.?\\? acc", {"balanced_accuracy"}),
    (r"\baccuracy\b", {"accuracy"}), (r"\bprecision\b", {"precision"}),
    (r"\brecall\b|\bTPR\b|true positive rate", {"recall", "tpr"}), (r"\bF1\b|F-score", {"f1"}),
    (r"\bBrier\b", {"brier"}), (r"\bRMSE\b", {"rmse"}), (r"\bMAE\b", {"mae"}),
    (r"R\$\^\{?2\}?\$|\\Rsq|\bR2\b|R-squared|coefficient of determination", {"r2"}),
    (r"\bFPR\b|false positive rate", {"fpr"}), (r"selection rate", {"selection_rate"}),
    (r"flag rate|share of the group flagged", {"flag_rate"}), (r"\bCITL\b|calibration in the large", {"citl"}),
    (r"calibration slopes?", {"calibration_slope"}),
]


def metric_context(before: str) -> set[str] | None:
    """The metric named closest before a number in its sentence (None when none is named)."""
    sentence = re.split(r"[.;:]\s", before)[-1][-80:]
    best, where = None, -1
    for rx, keys in METRIC_WORDS:
        for m in re.finditer(rx, sentence):
            if m.start() > where:
                best, where = keys, m.start()
    return best


# ---- reading the LaTeX -----------------------------------------------------------------------------
_MACRO_DEF = re.compile(r"^\\newcommand\{\\([A-Za-z]+)\}\{(.*)\}\s*%\s*(.*)$")
_DROP = [  # commands and arguments that carry no reported number
    re.compile(rf"\\(?:{CITE_NAME}|ref|eqref|autoref|label|input|include|url|"
               r"includegraphics|bibliography|bibliographystyle|documentclass|usepackage|setcopyright|"
               r"acmConference|acmYear|acmISBN|acmDOI|acmPrice|copyrightyear|vspace|hspace|setlength|"
               r"cmidrule|cline|addlinespace|resizebox|scalebox|fontsize|arraystretch|renewcommand)\*?"
               r"(?:\[[^\]]*\]|\([^)]*\))*(?:\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})*"),
    re.compile(r"\\begin\{(?:tabularx|tabulary|tabular\*?|longtable\*?|table\*?|figure\*?|minipage|array)\}"
               r"(?:\[[^\]]*\])?(?:\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})*"),
    re.compile(r"\\multicolumn\{\d+\}\{[^{}]*\}"),
    re.compile(r"\\\\\[[^\]]*\]"),
    re.compile(r"\[[^\]]*(?:width|height|scale|angle|pt|em|ex|cm|mm|in)\b[^\]]*\]"),
    re.compile(r"-?\d*\.?\d+\s*\\(?:columnwidth|textwidth|linewidth|hsize|baselineskip)"),
    re.compile(r"\d*\.?\d+(?:pt|em|ex|cm|mm|in|bp)\b"),
]
_LEAD = r"(?P<lt>\$<\$|<|\\textless\{\})?(?P<neg>\$-\$|\$\\?-\$|-|\\textminus\{\})?"
_NUMBER = re.compile(_LEAD + r"(?P<num>\d{1,3}(?:(?:\{,\}|,)\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)")
_POWER = (r"10\s*(?:\^|\\textsuperscript)\s*"
          r"(?:\{\s*(?P<exp>(?:-|\+|\$-\$|\\textminus\{\})?\s*\d+)\s*\}|(?P<exp_bare>[-+]?\d+))")
_TIMES = r"\s*\$?\s*(?:\\times|\\cdot|\\texttimes(?:\{\})?|\\ensuremath\{\\(?:times|cdot)\})\s*\$?\s*"
#: scientific notation, in the order they are looked for: 1.2 \times 10^{-3} (also \cdot, \texttimes{},
#: \textsuperscript, inside or outside $...$), 1.2e-3, and a bare power of ten 10^{-3}
SCIENTIFIC = [re.compile(_LEAD + r"(?P<mant>\d+(?:\.\d+)?)" + _TIMES + _POWER),
              re.compile(_LEAD + r"(?P<mant>\d+(?:\.\d+)?)[eE](?P<exp_bare>[-+]?\d+)(?!\w|\.\d)"),
              re.compile(_LEAD + _POWER)]
_INTERVAL = re.compile(r"\[\s*(\S+?)\s*,\s*(\S+?)\s*\]")
#: a percent sign or word after a number: 84.4\%, 84.4~\%, 84.4\,\%, 84.4 percent, 84 per cent, \SI{84.4}{\percent}
_PERCENT = re.compile(r"(?:\s|~|\\[,;: ]|\\thinspace(?:\{\})?|\{\})*"
                      r"(?:\\%|%|\\textpercent(?![A-Za-z])|\}?\s*\{\\percent\}|per\s?cent(?!ile))", re.I)
#: a confidence level ("95\% CI", "confidence intervals (95\%)") is exempt like a year
CONFIDENCE_LEVELS = {80.0, 90.0, 95.0, 99.0}
_LEVEL_AFTER = re.compile(r"[^.;]{0,30}?(?:\bCI\b|confiden|interval|bootstrap)", re.I)
_LEVEL_BEFORE = re.compile(r"(?:confiden|interval)[^.;]{0,30}$", re.I)
#: environments whose numbers are checked strictly wherever they are
_TABLE_ENV = r"(?:table|tabular|tabularx|tabulary|longtable)\*?"


def read_macros(numbers_tex: Path, numbers_json: Path | None = None) -> dict[str, dict[str, Any]]:
    """macro name -> {value, source, quoted}: numbers.json when present (it records quoted numbers),
    else the definitions and source comments of numbers.tex."""
    if numbers_json is not None and numbers_json.exists():
        return {m["macro"].lstrip("\\"): {"value": m["value"], "source": m["source"], "quoted": m.get("quoted", False)}
                for m in json.loads(numbers_json.read_text())["macros"]}
    out = {}
    for line in numbers_tex.read_text(encoding="utf-8").splitlines():
        if m := _MACRO_DEF.match(line):
            out[m.group(1)] = {"value": m.group(2), "source": m.group(3).replace(r"\%", "%"), "quoted": False}
    return out


def _strip_comment(line: str) -> str:
    m = re.search(r"(?<!\\)%", line)
    return line[: m.start()] if m else line


def _expand(line: str, macros: dict[str, dict[str, Any]]) -> tuple[str, list[tuple[int, int, str]]]:
    """The line with macro uses replaced by their values, and the (start, end, macro) spans."""
    out, spans, pos = [], [], 0
    for m in re.finditer(r"\\([A-Za-z]+)(?:\{\})?", line):
        if m.group(1) not in macros:
            continue
        out.append(line[pos:m.start()])
        start = sum(len(x) for x in out)
        value = macros[m.group(1)]["value"]
        out.append(value)
        spans.append((start, start + len(value), m.group(1)))
        pos = m.end()
    out.append(line[pos:])
    return "".join(out), spans


def _clean(text: str) -> str:
    for rx in _DROP:
        text = rx.sub(lambda m: " " * len(m.group(0)), text)
    return text


def _skip_identifier(text: str, start: int) -> bool:
    """A number glued to what precedes it is part of an identifier: X1SES, ABC:09, F1, file.v2."""
    before = text[start - 1] if start else " "
    return before.isalnum() or before in "_.:\\@"


def _sign(m: re.Match[str], text: str) -> str:
    """The minus of a match, unless it is a hyphen after a letter (a range or a compound word)."""
    neg = m.group("neg") or ""
    return "" if neg == "-" and m.start() and text[m.start() - 1].isalpha() else neg


def _exponent(m: re.Match[str]) -> int:
    raw = m.groupdict().get("exp") or m.group("exp_bare")
    return int(re.sub(r"\s|\$", "", raw.replace("\\textminus{}", "-").replace("$-$", "-")))


def _scientific(text: str) -> tuple[str, list[tuple[int, dict[str, Any]]]]:
    """The numbers of `text` in scientific notation as (start, fields of a Number), and the text with them blanked
    out (so that their mantissa and exponent are not read again as numbers)."""
    found: list[tuple[int, dict[str, Any]]] = []
    for rx in SCIENTIFIC:
        spans = []
        for m in rx.finditer(text):
            if _skip_identifier(text, m.start()):
                continue
            mant, neg, exponent = m.groupdict().get("mant") or "1", _sign(m, text), _exponent(m)
            if abs(exponent) > 300:  # no number: an identifier such as a hexadecimal hash (957773e28598)
                continue
            at = m.start() + len(m.group("lt") or "") + len(m.group("neg") or "")  # where the digits begin
            found.append((m.start(), {
                "text": ("-" if neg else "") + text[at:m.end()].strip(),
                "value": float(mant) * 10 ** exponent * (-1 if neg else 1),
                "decimals": len(mant.split(".")[1]) if "." in mant else 0,
                "exponent": exponent, "bound": bool(m.group("lt")), "percent": False, "at": at}))
            spans.append((m.start(), m.end()))
        for start, end in spans:
            text = text[:start] + " " * (end - start) + text[end:]
    return text, found


def _confidence_level(value: float, decimals: int, before: str, after: str) -> bool:
    return (decimals == 0 and abs(value) in CONFIDENCE_LEVELS
            and bool(_LEVEL_AFTER.match(after) or _LEVEL_BEFORE.search(before[-40:])))


def _line_numbers(text: str) -> list[tuple[int, dict[str, Any]]]:
    """(start, fields of a Number) of every number of one expanded, cleaned line, in order; `at` is where the
    number's digits (or mantissa) begin, which decides the macro that printed it."""
    text, found = _scientific(text)
    for m in _NUMBER.finditer(text):
        if _skip_identifier(text, m.start()):
            continue
        num, neg = m.group("num"), _sign(m, text)
        after = text[m.end(): m.end() + 40]
        if after[:1].isalpha() and not after.startswith(("th", "st", "nd", "rd")):
            continue  # units or identifiers glued to digits (3D, 2x)
        digits = num.replace("{,}", "").replace(",", "")
        value = float(digits) * (-1 if neg else 1)
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        percent = bool(_PERCENT.match(after))
        found.append((m.start(), {
            "text": ("-" if neg else "") + num, "value": value, "decimals": decimals, "percent": percent,
            "bound": bool(m.group("lt")), "at": m.start("num"),
            "level": percent and _confidence_level(value, decimals, text[:m.start()], after)}))
    return sorted(found, key=lambda t: t[0])


def scan(tex_path: Path, macros: dict[str, dict[str, Any]]) -> list[Number]:
    """Every number of the document body, with its line, section, strictness and macro."""
    numbers: list[Number] = []
    slot, section, in_table, in_abstract, body = "", "", 0, False, False
    interval_id = 0
    for lineno, raw in enumerate(tex_path.read_text(encoding="utf-8").splitlines(), start=1):
        if m := re.match(r"^\s*%%BEGIN:([A-Z_]+)%%", raw):
            slot = m.group(1)
        elif re.match(r"^\s*%%END:[A-Z_]+%%", raw):
            slot = ""
        line = _strip_comment(raw)
        if "\\begin{document}" in line:
            body = True
            continue
        if not body:
            continue
        if m := re.search(r"\\(?:sub)*section\*?\{([^}]*)\}", line):
            section = m.group(1)
        if "\\begin{abstract}" in line:
            in_abstract = True
        in_table += len(re.findall(rf"\\begin\{{{_TABLE_ENV}\}}", line))
        strict = bool(in_table) or in_abstract or slot in STRICT_SLOTS or (
            not slot and section.lower().startswith("results"))
        where = slot or ("ABSTRACT" if in_abstract else section or "body")
        text, spans = _expand(line, macros)
        text = _clean(text)
        found: list[tuple[int, Number]] = []
        for start, f in _line_numbers(text):
            at = f.pop("at")
            macro = next((name for s, e, name in spans if s <= at < e), None)
            context = metric_context(text[:start])
            found.append((start, Number(lineno, section=where, strict=strict, macro=macro,
                                        source=macros[macro]["source"] if macro else None,
                                        metric=sorted(context) if context else None, **f)))
        for iv in _INTERVAL.finditer(text):
            inside = [n for start, n in found if iv.start() < start <= iv.end()]
            if len(inside) == 2:
                interval_id += 1
                for n in inside:
                    n.interval = interval_id
        numbers += [n for _, n in found]
        in_table = max(0, in_table - len(re.findall(rf"\\end\{{{_TABLE_ENV}\}}", line)))
        if "\\end{abstract}" in line:
            in_abstract = False
    return numbers
