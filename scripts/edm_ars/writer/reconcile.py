"""Reconciling a printed number with the run's artifacts (`edm-ars verify-paper`): exempt (a year, a small integer,
a confidence level), matched (a macro's value agrees with its recorded source, which writer/sources.py evaluates, or
with the artifact text it was quoted from; a literal agrees with some artifact value, list length, or sum or
difference of sibling values) or unmatched."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any

from edm_ars.review.claims import is_number
from edm_ars.writer import sources
from edm_ars.writer.printed_numbers import Number

SMALL_INT = 100
YEARS = (1900, 2100)
MAX_SIBLINGS = 80  # containers with more children are not expanded into pairwise sums/differences


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
