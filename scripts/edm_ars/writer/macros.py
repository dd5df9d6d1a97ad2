"""Number macros: every number printed in the paper is a macro defined in numbers.tex.

Each macro records its LaTeX value, the raw value and the artifact path it came from (for example
`results.json:models.xgboost.metrics.auc`), so a verifier can reconcile the paper with the
artifacts. Macro names are letters only: digits are spelled out (X1SES -> XOneSES).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from edm_ars.core.texescape import escape_latex

_DIGITS = ["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine"]

# Short, conventional spellings of metric names in macro names and in prose/tables.
METRIC_MACRO = {
    "auc": "AUC", "roc_auc": "AUC", "accuracy": "Accuracy", "precision": "Precision",
    "recall": "Recall", "f1": "FOne", "balanced_accuracy": "BalAcc", "brier": "Brier",
    "rmse": "RMSE", "mae": "MAE", "r2": "RSquared", "log_loss": "LogLoss", "pr_auc": "PRAUC",
}
METRIC_LABEL = {
    "auc": "AUC", "roc_auc": "AUC", "accuracy": "Accuracy", "precision": "Precision",
    "recall": "Recall", "f1": "F1", "balanced_accuracy": r"Bal.\ acc.", "brier": "Brier",
    "rmse": "RMSE", "mae": "MAE", "r2": r"\Rsq{}", "log_loss": "Log loss", "pr_auc": "PR-AUC",
}


#: a definition of a command: \newcommand{\Name}[n]{...}, \providecommand, \renewcommand, \DeclareRobustCommand
_DEFINITION = re.compile(r"\\(?:(?:new|renew|provide)command|DeclareRobustCommand)\*?\s*\{?\s*\\([A-Za-z]+)\s*\}?"
                         r"\s*(\[\s*\d+\s*\])?")


def template_macros(template: str) -> frozenset[str]:
    """The notation (label) macros a paper template defines: argument-free commands such as \\Rsq that print
    fixed text, not numbers. The generated text may use them as `\\Rsq{}` like a number macro; they come from
    the template itself (its comments are not read), so a new notation macro needs no list kept in code."""
    text = re.sub(r"(?<!\\)%.*", "", template)
    return frozenset(m.group(1) for m in _DEFINITION.finditer(text) if not m.group(2))


def spell_digits(text: str) -> str:
    return "".join(_DIGITS[int(c)] if c.isdigit() else c for c in text)


def macro_name(*parts: object) -> str:
    """A letters-only macro name from parts: ('logistic_regression', 'auc') -> LogisticRegressionAUC."""
    out = []
    for part in parts:
        text = str(part)
        if text in METRIC_MACRO:
            out.append(METRIC_MACRO[text])
            continue
        for word in re.split(r"[^A-Za-z0-9]+", text):
            if not word:
                continue
            word = spell_digits(word)
            out.append(word[0].upper() + word[1:])
    name = "".join(out)
    name = re.sub(r"[^A-Za-z]", "", name)
    return name or "Value"


def _minus(text: str) -> str:
    return "$-$" + text[1:] if text.startswith("-") else text


def fmt_metric(value: float, digits: int = 3) -> str:
    """A metric with a fixed number of decimals (0.823); a negative value gets a math minus."""
    value = float(value)
    if value != 0 and abs(value) < 0.5 * 10 ** (-digits):
        if value < 0 and value <= -5e-7:
            # a small negative value ("-<0.001" would read as a bound below -0.001): its first significant digit
            return _minus(f"{value:.{math.ceil(-math.log10(-value) - 1e-12)}f}")
        return ("$-$" if value < 0 else "") + "$<$" + f"{10 ** (-digits):.{digits}f}"
    text = f"{value:.{digits}f}"
    if re.fullmatch(r"-0\.0*", text):
        text = text[1:]
    return _minus(text)


def fmt_count(value: int | float) -> str:
    """A count with a thousands separator that LaTeX does not space: 23{,}503."""
    return _minus(f"{int(round(value)):,}".replace(",", "{,}"))


def fmt_pct(value: float) -> str:
    """A percentage with one decimal and an escaped percent sign: 52.3\\%."""
    return _minus(f"{float(value):.1f}") + r"\%"


def fmt_p(value: float) -> str:
    """A p-value with three decimals (under 0.0005: $<$0.001)."""
    return fmt_metric(value, 3)


def fmt_ci(low: float, high: float, digits: int = 3) -> str:
    return rf"95\% CI [{fmt_metric(low, digits)}, {fmt_metric(high, digits)}]"


def fmt_plain(value: Any) -> str:
    """A hyperparameter or other loose value: ints as ints, floats with 4 significant digits."""
    if isinstance(value, bool) or value is None:
        return escape_latex(str(value))
    if isinstance(value, int):
        return fmt_count(value) if abs(value) >= 10000 else _minus(str(value))
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return escape_latex(str(value))
        if value == int(value) and abs(value) < 1e6:
            return _minus(str(int(value)))
        text = f"{value:.4g}"
        if "e" in text:
            mant, exp = text.split("e")
            return rf"\ensuremath{{{mant}\times 10^{{{int(exp)}}}}}"
        return _minus(text)
    return escape_latex(str(value))


@dataclass
class Macro:
    name: str
    value: str
    raw: Any
    source: str
    derived: bool = False
    quoted: bool = False

    def record(self) -> dict[str, Any]:
        rec = {"macro": "\\" + self.name, "value": self.value, "raw": self.raw, "source": self.source}
        if self.derived:
            rec["derived"] = True
        if self.quoted:
            rec["quoted"] = True
        return rec


class MacroTable:
    """The macros of one paper, in definition order."""

    def __init__(self) -> None:
        self._defs: dict[str, Macro] = {}
        self._quoted = 0

    def __len__(self) -> int:
        return len(self._defs)

    def __contains__(self, name: str) -> bool:
        return name in self._defs

    @property
    def macros(self) -> list[Macro]:
        return list(self._defs.values())

    def get(self, name: str) -> Macro:
        return self._defs[name]

    def add(self, name: str, value: str, raw: Any, source: str, *, derived: bool = False,
            quoted: bool = False) -> str:
        """Define a macro (or reuse an identical one) and return its use, e.g. `\\BestAUC{}`."""
        name = re.sub(r"[^A-Za-z]", "", name) or "Value"
        base, k = name, 0
        while name in self._defs:
            old = self._defs[name]
            if old.value == value and old.source == source:
                return "\\" + name + "{}"
            k += 1
            name = base + _suffix(k - 1)
        self._defs[name] = Macro(name, value, raw, source, derived, quoted)
        return "\\" + name + "{}"

    # convenience wrappers --------------------------------------------------------------
    def metric(self, name: str, value: float, source: str, **kw: Any) -> str:
        return self.add(name, fmt_metric(value), _num(value), source, **kw)

    def count(self, name: str, value: int | float, source: str, **kw: Any) -> str:
        return self.add(name, fmt_count(value), _num(value), source, **kw)

    def pct(self, name: str, value: float, source: str, **kw: Any) -> str:
        return self.add(name, fmt_pct(value), _num(value), source, **kw)

    def ci(self, name: str, low: float, high: float, source: str) -> str:
        return self.add(name, fmt_ci(low, high), [_num(low), _num(high)], source)

    def quoted(self, literal: str, source: str) -> str:
        """A number found in artifact free text, kept as written (23,503 -> 23{,}503)."""
        value = literal.replace(",", "{,}")
        for m in self._defs.values():
            if m.quoted and m.value == value and m.source == source:
                return "\\" + m.name + "{}"
        self._quoted += 1
        return self.add("TextNum" + spell_digits(str(self._quoted)), value, literal, source,
                        quoted=True)

    # output ------------------------------------------------------------------------------
    def to_tex(self) -> str:
        lines = [
            "% numbers.tex: generated by the EDM-ARS writer from the run's artifacts; do not edit.",
            "% Every number printed in paper.tex is one of these macros.",
            "% macro | value | source (artifact:json.path); numbers.json holds the same table.",
        ]
        for m in self._defs.values():
            src = m.source.replace("%", r"\%")
            lines.append(f"\\newcommand{{\\{m.name}}}{{{m.value}}} % {src}")
        return "\n".join(lines) + "\n"

    def to_json(self) -> str:
        return json.dumps({"macros": [m.record() for m in self._defs.values()]}, indent=2,
                          ensure_ascii=False) + "\n"


def _num(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def _suffix(k: int) -> str:
    letters = ""
    while True:
        k, r = divmod(k, 26)
        letters = chr(ord("A") + r) + letters
        if k == 0:
            return letters
        k -= 1


# ---- numbers inside free text ----------------------------------------------------------------
# Identifier-like tokens (ABC:09, X1SES, 9th, F1) are not numbers; standalone numbers are.
_TOKENS = re.compile(
    r"(?P<ident>[A-Za-z][A-Za-z0-9]*:\d+)"
    r"|(?P<num>(?<![A-Za-z0-9_.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![A-Za-z0-9_]))"
)


def text_with_macros(text: object, table: MacroTable, source: str) -> str:
    """Escape artifact free text, turning each standalone number into a quoted-number macro."""
    if text is None:
        return ""
    text = str(text)
    out: list[str] = []
    pos = 0
    for m in _TOKENS.finditer(text):
        if m.group("num") is None:
            continue
        out.append(escape_latex(text[pos:m.start()]))
        out.append(table.quoted(m.group("num"), source))
        pos = m.end()
    out.append(escape_latex(text[pos:]))
    return "".join(out)
