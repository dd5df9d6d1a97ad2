"""`edm-ars verify-paper`: reconcile every number printed in a paper with the run's artifacts.

Each number of the document body is found in the LaTeX source after the number macros of numbers.tex
are expanded (scientific notation too: 1.2e-3, 1.2 \\times 10^{-3}, 1.2\\cdot10^{-3}, $1.2\\times 10^{-3}$, a bare
10^{-3}, read as the printed mantissa times the power of ten), and classified:

- **exempt**: years (1900-2100) and small integers (|n| <= 100) printed without decimals, and confidence levels
  ("95\\% CI"); any other integer percentage ("84 per cent") is a share of something and is reconciled;
- **matched**: a number printed through a macro agrees, at its printed precision, with the value at the
  macro's recorded source (a JSON path in an artifact or a derivation of such paths, ``len(...)``,
  ``count(...[filter])``, ``|a - b|``, a ratio ``a / b``, ``100 * a``: every form the Writer emits is evaluated
  by writer/sources.py, and a computed macro whose source cannot be evaluated is unmatched; or the artifact
  text a number was quoted from); a literal number agrees with some value of
  the artifacts: a leaf, a list length, or a sum or difference of sibling values (values of one object,
  or the same key across the objects of one list or mapping). A percentage (84.4\\%, 84.4~\\%, 84.4 percent,
  84 per cent, \\SI{84.4}{\\percent}) also matches a value 100 times smaller at the same printed precision
  ("84.4\\%" matches 0.8443, "84.9\\%" does not). "-1.90" and "-1.905" both match -1.904982835; "-1.92" does not;
- **unmatched** otherwise. In strict places (the abstract, the results, every table float and every tabular,
  tabular*, tabularx, tabulary or longtable environment wherever it is) an unmatched number fails the paper;
  elsewhere it warns. An interval "[a, b]" whose two ends are both unmatched fails wherever it is; with one end
  unmatched it warns.

Then the text: every key of every citation command (integrity.CITE_NAME) must be in references.bib; placeholder
text anywhere in the body fails (integrity.document_placeholders); a review that leaves the paper unverified
(integrity.unverified_reasons; review_report.json is among the artifacts sources.json lists) requires the
UNVERIFIED block; and the lint (empty sections and causal verbs fail, lengths warn).

The artifacts are found through sources.json next to the paper (written by the Writer) or given as
NAME=PATH pairs. Findings name their line in the .tex file.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from edm_ars.core.errors import EdmArsError
from edm_ars.review.claims import is_number
from edm_ars.writer import sources
from edm_ars.writer.integrity import (
    CITE_NAME,
    PLACEHOLDER_KEY,
    UNVERIFIED_BLOCK,
    WORD_TARGETS,
    citations,
    cited_keys,
    document_placeholders,
    lint,
    strip_comments,
    unverified_reasons,
)

STRICT_SLOTS = {"ABSTRACT", "RESULTS"}
SMALL_INT = 100
YEARS = (1900, 2100)
MAX_SIBLINGS = 80  # containers with more children are not expanded into pairwise sums/differences


class VerifyError(EdmArsError):
    """The paper or its artifacts could not be read."""


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


@dataclass
class Report:
    paper: str
    numbers: list[Number] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lint: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        by = {s: sum(1 for n in self.numbers if n.status == s) for s in ("matched", "exempt", "unmatched")}
        return {"numbers": len(self.numbers), "checked": by["matched"] + by["unmatched"], **by,
                "failures": len(self.failures), "warnings": len(self.warnings)}

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return {"paper": self.paper, "ok": self.ok, "counts": self.counts, "failures": self.failures,
                "warnings": self.warnings, "lint": self.lint, "numbers": [asdict(n) for n in self.numbers]}

    def summary(self) -> str:
        c = self.counts
        head = (f"{self.paper}: {c['numbers']} numbers: {c['checked']} checked, {c['matched']} matched, "
                f"{c['exempt']} exempt, {c['unmatched']} unmatched ({c['failures']} failing, "
                f"{c['warnings']} warnings)")
        lines = [head] + [f"  FAIL {f}" for f in self.failures] + [f"  warn {w}" for w in self.warnings]
        return "\n".join(lines)


# ---- artifacts -------------------------------------------------------------------------------------
def load_artifacts(paper: Path, given: dict[str, str] | None = None) -> dict[str, Any]:
    """NAME -> parsed JSON: from sources.json next to the paper (paths relative to it), then `given`."""
    paths: dict[str, Path] = {}
    sources = paper.parent / "sources.json"
    if sources.exists():
        for name, rel in json.loads(sources.read_text()).items():
            paths[name] = (paper.parent / rel).resolve()
    for name, path in (given or {}).items():
        paths[name] = Path(path)
    if not paths:
        raise VerifyError(f"{paper}: no artifacts to verify against (no {sources.name} next to the paper and "
                          "none given with --artifact NAME=PATH)")
    out = {}
    for name, path in paths.items():
        try:
            out[name] = json.loads(Path(path).read_text())
        except FileNotFoundError as exc:
            raise VerifyError(f"artifact {name} not found: {path}") from exc
        except json.JSONDecodeError as exc:
            raise VerifyError(f"artifact {name} ({path}) is not valid JSON: {exc}") from exc
    return out


@dataclass
class Pool:
    """Artifact values, sorted, overall and by the name of the key that holds them (so that a number printed
    next to a metric's name is matched against that metric's values only)."""

    all: list[float]
    by_key: dict[str, list[float]]

    def has(self, target: float, tol: float, keys: set[str] | None = None) -> bool:
        lists = [self.by_key.get(k, []) for k in keys] if keys else [self.all]
        for values in lists:
            i = bisect.bisect_left(values, target - tol)
            if i < len(values) and values[i] <= target + tol:
                return True
        return False


def value_pool(artifacts: dict[str, Any]) -> Pool:
    """Every number of the artifacts, list lengths, and sums and differences of sibling values: the numbers
    of one list (an interval's ends, counts per class), the counts of one object, and the same key across the
    objects of one list or mapping (a metric of two models, the sizes of two groups)."""
    by_key: dict[str, set[float]] = {}

    def put(key: str, *values: float) -> None:
        by_key.setdefault(key, set()).update(values)

    def pairs(key: str, values: list[float]) -> None:
        for i, a in enumerate(values):
            for b in values[i + 1:]:
                put(key, a + b, a - b, b - a)

    def walk(node: Any, key: str) -> None:
        if is_number(node):
            put(key, float(node))
            return
        if not isinstance(node, (dict, list)):
            return
        children = list(node.items()) if isinstance(node, dict) else [(key, c) for c in node]
        if isinstance(node, list):
            put(key, float(len(node)))
        if len(children) <= MAX_SIBLINGS:
            nums = [float(v) for _, v in children if is_number(v)]
            if isinstance(node, list) or (nums and all(v.is_integer() for v in nums)):
                pairs(key, nums)
            keyed: dict[str, list[float]] = {}
            for _, child in children:
                if isinstance(child, dict):
                    for k, v in child.items():
                        if is_number(v):
                            keyed.setdefault(k, []).append(float(v))
                        elif isinstance(v, dict):  # one level further: models.<m>.metrics.<k>
                            for k2, v2 in v.items():
                                if is_number(v2):
                                    keyed.setdefault(k2, []).append(float(v2))
            for k, values in keyed.items():
                pairs(k, values)
        for k, child in children:
            walk(child, k if isinstance(node, dict) else key)

    for doc in artifacts.values():
        walk(doc, "")
    return Pool(sorted({v for vs in by_key.values() for v in vs}), {k: sorted(v) for k, v in by_key.items()})


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


# ---- macro sources ---------------------------------------------------------------------------------
def source_values(source: str, artifacts: dict[str, Any]) -> list[float] | None:
    """The value(s) a macro's recorded source denotes (writer/sources.py evaluates every form the Writer emits),
    or None when it cannot be evaluated."""
    try:
        return sources.source_values(source, artifacts)
    except sources.SourceError:
        return None


def quoted_text(source: str, artifacts: dict[str, Any]) -> str | None:
    m = re.fullmatch(sources.PATH, source)
    if not m:
        return None
    file, path = source.split(":", 1)
    try:
        v = sources.resolve(artifacts, file, path)[0]
    except (KeyError, sources.SourceError):
        return None
    return v if isinstance(v, str) else None


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


# ---- reconciliation --------------------------------------------------------------------------------
def _tol(decimals: int, exponent: int = 0) -> float:
    """Half a unit of the last printed digit (of the mantissa times 10**exponent in scientific notation)."""
    return 0.5 * 10 ** (exponent - decimals) + 1e-9 * 10 ** min(exponent, 0)


def _exemption(n: Number) -> str | None:
    """Why a number is not reconciled: a year, a small integer (a count, a rank) or a confidence level. A percentage
    is a share of something, so an integer percentage other than a confidence level is reconciled."""
    if n.decimals or n.bound or n.exponent:
        return None
    if n.percent:
        return "confidence level" if n.level else None
    if YEARS[0] <= abs(n.value) <= YEARS[1]:
        return "year"
    return "small integer" if abs(n.value) <= SMALL_INT else None


def _agrees(n: Number, candidates: list[float]) -> bool:
    tol = _tol(n.decimals, n.exponent)
    for c in candidates:
        for v in (c, c * 100) if n.percent else (c,):
            if n.bound and abs(v) < abs(n.value) + 1e-12:
                return True
            if abs(v - n.value) <= tol:
                return True
    return False


def reconcile(n: Number, artifacts: dict[str, Any], macros: dict[str, dict[str, Any]], pool: Pool) -> None:
    if why := _exemption(n):
        n.status, n.how = "exempt", why
        return
    if n.macro:
        info = macros[n.macro]
        if info.get("quoted"):
            text = quoted_text(info["source"], artifacts)
            digits = n.text.lstrip("-").replace("{,}", ",")
            if text is not None and (digits in text or digits.replace(",", "") in text.replace(",", "")):
                n.status, n.how = "matched", f"quoted from {info['source']}"
                return
        try:
            values = sources.source_values(info["source"], artifacts)
        except sources.SourceError as exc:
            if not info.get("quoted"):  # a computed number whose source cannot be evaluated is not verified
                n.status, n.how = "unmatched", f"\\{n.macro} prints {n.text} but its source cannot be evaluated: {exc}"
                return
        else:
            if _agrees(n, values):
                n.status, n.how = "matched", f"{info['source']}"
                return
            n.status = "unmatched"
            n.how = (f"\\{n.macro} prints {n.text} but {info['source']} is "
                     + ", ".join(f"{v:.6g}" for v in values))
            return
    tol = _tol(n.decimals, n.exponent)
    # a percentage is the value times 100 at its printed precision: 84.4\% is 0.844 +- 0.0005
    targets = [(n.value, tol)] + ([(n.value / 100, tol / 100)] if n.percent else [])
    keys = set(n.metric) if n.metric and not n.macro else None  # a literal next to a metric's name
    if n.bound:
        if any(pool.has(t / 2, abs(t) / 2, keys) for t, _ in targets):
            n.status, n.how = "matched", "bound holds for an artifact value"
            return
    elif any(pool.has(t, tt, keys) for t, tt in targets):
        n.status = "matched"
        n.how = "artifact value" + (f" of {', '.join(sorted(keys))}" if keys else "") + (
            " (a macro of a derived source)" if n.macro else "")
        return
    n.status = "unmatched"
    n.how = ("no artifact value" + (f" of {', '.join(sorted(keys))}" if keys else "")
             + (f" (macro \\{n.macro}, source {n.source})" if n.macro else "")
             + f" equals {n.text} at {n.decimals} decimal(s)" + (" as a percentage" if n.percent else ""))


def verify_paper(tex_path: str | Path, artifacts: dict[str, Any] | None = None,
                 given: dict[str, str] | None = None) -> Report:
    """Reconcile the numbers of `tex_path` (with numbers.tex / numbers.json beside it) with the artifacts."""
    tex_path = Path(tex_path)
    if not tex_path.exists():
        raise VerifyError(f"paper not found: {tex_path}")
    if artifacts is None:
        artifacts = load_artifacts(tex_path, given)
    numbers_tex, numbers_json = tex_path.parent / "numbers.tex", tex_path.parent / "numbers.json"
    macros = read_macros(numbers_tex, numbers_json) if numbers_tex.exists() or numbers_json.exists() else {}
    pool = value_pool(artifacts)
    report = Report(paper=str(tex_path))
    report.numbers = scan(tex_path, macros)
    for n in report.numbers:
        reconcile(n, artifacts, macros, pool)
    by_interval: dict[int, list[Number]] = {}
    for n in report.numbers:
        if n.interval is not None:
            by_interval.setdefault(n.interval, []).append(n)
    for n in report.numbers:
        if n.status != "unmatched":
            continue
        where = f"{tex_path.name}:{n.line}: [{n.section}] {n.text}: {n.how}"
        if n.interval is not None:
            pair = by_interval[n.interval]
            both = all(p.status == "unmatched" for p in pair)
            if both and n is pair[0]:
                report.failures.append(where + " (both ends of the interval are unmatched)")
            elif not both:
                report.warnings.append(where + " (one end of an interval)")
        elif n.strict:
            report.failures.append(where)
        else:
            report.warnings.append(where)
    _check_text(tex_path, report, artifacts)
    from edm_ars.review.consistency import check_paper  # claims consistent with each other and with the evidence

    report.failures += check_paper(tex_path, artifacts).failures()
    return report


#: lint findings that fail the paper (placeholders are found in the whole document, see _check_placeholders)
LINT_FAILS = {"empty_section", "causal"}


MIN_RELATED_CITATIONS = 5


def _body(tex: str) -> str:
    """The document body: the lines before \\begin{document} are blanked (not printed), so line numbers stay."""
    lines = tex.splitlines()
    start = next((i for i, line in enumerate(lines) if "\\begin{document}" in _strip_comment(line)), 0)
    return "\n".join("" if i < start else line for i, line in enumerate(lines))


def _check_citations(tex_path: Path, body: str, report: Report) -> None:
    """Every key of every citation command (integrity.CITE_NAME) is in references.bib and is no placeholder."""
    bib = tex_path.parent / "references.bib"
    known = set(re.findall(r"@\w+\s*\{\s*([^,\s]+)\s*,", bib.read_text(encoding="utf-8"))) if bib.exists() else set()
    for c in citations(body):
        where = f"{tex_path.name}:{c.line}: \\{c.command}"
        if not c.key or PLACEHOLDER_KEY.match(c.key):
            report.failures.append(f"{where}: placeholder citation key {c.key!r}")
        elif c.key not in known:
            report.failures.append(f"{where} key {c.key!r} is not in {bib.name}")


def _check_placeholders(tex_path: Path, tex: str, report: Report) -> None:
    for line, kind, text in document_placeholders(tex):
        report.failures.append(f"{tex_path.name}:{line}: placeholder {kind} {text!r}")


def _check_unverified(tex_path: Path, tex: str, report: Report, artifacts: dict[str, Any]) -> None:
    """A review that leaves the paper unverified (integrity.unverified_reasons) requires the UNVERIFIED block."""
    review = artifacts.get("review_report.json")
    if not isinstance(review, dict):
        report.warnings.append(f"{tex_path.name}: no review_report.json among the artifacts: whether the paper "
                               "must carry the UNVERIFIED block was not checked")
        return
    reasons = unverified_reasons(review)
    if not reasons or UNVERIFIED_BLOCK.search(strip_comments(_body(tex))):
        return
    lines = tex.splitlines()
    line = next((i for i, text in enumerate(lines, start=1) if re.search(r"%%(?:BEGIN|PLACEHOLDER):UNVERIFIED%%", text)),
                next((i for i, text in enumerate(lines, start=1) if "\\maketitle" in text), 1))
    report.failures.append(f"{tex_path.name}:{line}: the review (review_report.json, round {review.get('round')}) "
                           f"leaves the paper unverified ({'; '.join(reasons)}) but the paper has no UNVERIFIED "
                           "block (\\unverifiedbox{...})")


#: words that say the rows themselves were generated ("This study was generated automatically" says nothing about
#: the data, so `generated` counts only next to data, rows, records, students or stand-in)
GENERATED_DATA = re.compile(
    r"\b(?:synthetic|simulated|stand-in)\b"
    r"|\bgenerated\s+(?:these\s+|the\s+)?(?:data|rows|records|students|stand-in)\b"
    r"|\b(?:data|rows|records)\s+(?:were|are|was|is)\s+(?:\w+\s+)?generated\b", re.I)


def _slot_line(tex: str, name: str) -> int:
    return next((i for i, text in enumerate(tex.splitlines(), start=1) if f"%%BEGIN:{name}%%" in text), 1)


def _check_generated_disclosure(tex_path: Path, tex: str, report: Report, artifacts: dict[str, Any]) -> None:
    """A paper whose rows were generated (provenance.json among the artifacts: data.kind generated) says so in its
    abstract and in the data section of its Methods (the first subsection whose title names the data, else the
    first). Without provenance.json the check does not apply (older runs record no provenance)."""
    from edm_ars.writer.paper import slot_content

    prov = artifacts.get("provenance.json")
    if not isinstance(prov, dict) or (prov.get("data") or {}).get("kind") != "generated":
        return
    why = ("the data are generated (provenance.json: data.kind generated) but {where} does not say so "
           "(no 'synthetic', 'simulated', 'stand-in' or 'generated' data, rows or records)")
    abstract = strip_comments(slot_content(tex, "ABSTRACT"))
    if not GENERATED_DATA.search(" ".join(abstract.split())):
        report.failures.append(f"{tex_path.name}:{_slot_line(tex, 'ABSTRACT')}: " + why.format(where="the abstract"))
    methods = strip_comments(slot_content(tex, "METHODS"))
    parts = re.split(r"\\subsection\*?\{", methods)[1:]
    data = next((p for p in parts if re.match(r"[^}]*\bdata\b", p, re.I)), parts[0] if parts else methods)
    if not GENERATED_DATA.search(" ".join(data.split())):
        title = data.split("}", 1)[0] if parts else "Methods"
        report.failures.append(f"{tex_path.name}:{_slot_line(tex, 'METHODS')}: "
                               + why.format(where=f"the data section ({title})"))


def _check_text(tex_path: Path, report: Report, artifacts: dict[str, Any]) -> None:
    """Citations (every key in references.bib, no placeholder), placeholders anywhere in the body, the UNVERIFIED
    block the review calls for, and the lint (empty sections and causal verbs fail; lengths warn)."""
    from edm_ars.writer.paper import slot_content

    tex = tex_path.read_text(encoding="utf-8")
    body = _body(tex)
    _check_citations(tex_path, body, report)
    _check_placeholders(tex_path, tex, report)
    _check_unverified(tex_path, tex, report, artifacts)
    _check_generated_disclosure(tex_path, tex, report, artifacts)
    lines = {}
    for i, line in enumerate(tex.splitlines(), start=1):
        if m := re.match(r"^\s*%%BEGIN:([A-Z_]+)%%", line):
            lines[m.group(1)] = i
    sections = {name: slot_content(tex, name) for name in WORD_TARGETS if name in lines}
    papers = [p for p in (artifacts.get("literature_context.json") or {}).get("papers", [])
              if p.get("status") != "HALLUCINATED"]
    if "RELATED_WORK" in sections and len(papers) >= MIN_RELATED_CITATIONS:
        cited = cited_keys(sections["RELATED_WORK"])
        if len(cited) < MIN_RELATED_CITATIONS:
            report.failures.append(f"{tex_path.name}:{lines['RELATED_WORK']}: related work cites {len(cited)} "
                                   f"reference(s); at least {MIN_RELATED_CITATIONS} are required when the "
                                   f"literature holds {len(papers)}")
    findings = lint(sections, lines=lines)
    report.lint = [str(f) for f in findings]
    for f in findings:
        if f.kind == "placeholder":
            continue  # reported by _check_placeholders, which reads the whole body
        (report.failures if f.kind in LINT_FAILS else report.warnings).append(f"{tex_path.name}: lint {f}")
