"""The groups of the fairness audit (edm_ars.analysis.fairness): each test student's group in a protected attribute
(:func:`_grouping`: the registry's label of the original code, float-coded integers normalised; a numeric attribute
with many distinct values binned into quintiles), the groups in their natural order (the registry's, else ordinal
words, kindergarten and numbered grades, numbers, text), and the numeric predictor an ordered attribute's groups are
a binned version of (:func:`derived_predictor`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from edm_ars.analysis.figure_sanity import ranked
from edm_ars.data.registry import code_key
from edm_ars.data.sample import is_numeric_scale

DERIVED_CONCORDANCE = 0.98  # share of cross-group pairs a predictor orders like the groups: a binned predictor
_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]


# ---- group names and their order --------------------------------------------------------------


def _value_label(v: Any, values: dict[str, str] | None = None) -> str:
    """A group's name: the registry's label of the code (`values:`), else the code itself, float-coded integers
    normalised ('1.0' -> '1')."""
    key = code_key(float(v) if isinstance(v, np.floating) else v)
    return (values or {}).get(key, key)


_KINDERGARTEN = ("k", "kg", "kindergarten", "pre-k", "prek")


def _sort_key(label: str) -> tuple[int, float, str]:
    """Natural order of group labels: ordinal words ("First quintile" < "Second quintile"), then kindergarten
    before numbered grades and numbers in numeric order ("K" < "1" < "2" < "10"), then text order."""
    low = label.strip().lower()
    for i, word in enumerate(_ORDINALS):
        if low.startswith(word + " ") or low == word:
            return (0, float(i), low)
    if low in _KINDERGARTEN:
        return (1, -1.0, low)
    m = re.match(r"^(?:q|grade\s*)?(-?\d+(?:\.\d+)?)(?:st|nd|rd|th)?\b", low)
    if m:
        return (1, float(m.group(1)), low)
    return (2, 0.0, low)


# ---- grouping ---------------------------------------------------------------------------------


def _quintile_labels(k: int) -> list[str]:
    labels = [f"Q{i + 1}" for i in range(k)]
    if k >= 2:
        labels[0] += " (lowest)"
        labels[-1] += " (highest)"
    return labels


def _mapped(s: pd.Series, fn: Callable[[Any], Any]) -> pd.Series:
    """fn applied to each distinct value once (not once a row), as an object Series in the rows' order; a missing
    value (whichever kind) is passed as itself."""
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    table = np.array([fn(v) for v in uniques] + [fn(np.nan)], dtype=object)  # code -1 (missing): the last entry
    return pd.Series(table[codes], index=s.index, dtype=object)


def _grouping(s: pd.Series, values: dict[str, str] | None = None
              ) -> tuple[list[str | None], list[str], dict[str, Any] | None]:
    """Row labels (None = missing), the ordered group labels, and binning details for a continuous attribute.
    `values` maps codes to the registry's labels (code_key form); labelled groups come in the registry's order."""
    if values:
        s = _mapped(s, lambda v: v if pd.isna(v) else code_key(v))
        if s.dropna().isin(list(values)).all():  # every code labelled: groups, not a continuous scale
            rows = _mapped(s, lambda v: None if pd.isna(v) else values[v]).tolist()
            present = {r for r in rows if r is not None}
            order = [lab for lab in dict.fromkeys(values.values()) if lab in present]
            return rows, ranked(order) or order, None  # labels stating their places in that order
    if is_numeric_scale(s):
        x = pd.to_numeric(s, errors="coerce").astype(float)
        _, edges = pd.qcut(x, 5, retbins=True, duplicates="drop")
        k = len(edges) - 1
        labels = _quintile_labels(k)
        binned = pd.cut(x, edges, labels=labels, include_lowest=True)
        rows = [None if pd.isna(v) else str(v) for v in binned]
        order = [lab for lab in labels if lab in set(rows)]
        return rows, order, {"bins": k, "edges": [float(e) for e in edges]}
    rows = _mapped(s, lambda v: None if pd.isna(v) else _value_label(v, values)).tolist()
    present = {r for r in rows if r is not None}
    if isinstance(s.dtype, pd.CategoricalDtype):
        order = [c for c in (_value_label(c, values) for c in s.cat.categories) if c in present]
    else:
        order = sorted(present, key=_sort_key)
    return rows, order, None


# ---- attributes derived from a predictor -------------------------------------------------------


def derived_predictor(rows: list[str | None], order: list[str], predictors: pd.DataFrame,
                      min_concordance: float = DERIVED_CONCORDANCE) -> dict[str, Any] | None:
    """The numeric predictor an attribute's groups are a binned version of, or None: the groups, in their order
    (either direction), split the predictor's values into non-overlapping ranges: of the pairs of rows from two
    different groups, at least `min_concordance` are ordered by the predictor as the groups are (Mann-Whitney
    concordance, averaged over pairs of groups weighted by their sizes). Needs an ordered attribute (at least three
    groups, so that a binary attribute correlated with a predictor is not taken for it)."""
    lab = pd.Series([r for r in rows], dtype=object)
    present = [g for g in order if (lab == g).any()]
    if len(present) < 3:
        return None
    best = None
    for col in predictors.columns:
        x = pd.to_numeric(predictors[col], errors="coerce").to_numpy(dtype=float)
        if np.isfinite(x).sum() < 10 or np.nanstd(x) == 0:
            continue
        groups = [x[(lab == g).to_numpy() & np.isfinite(x)] for g in present]
        if any(len(v) == 0 for v in groups):
            continue
        num = den = 0.0
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                a, b = np.sort(groups[i]), groups[j]
                below = np.searchsorted(a, b, side="left")  # a < b
                ties = np.searchsorted(a, b, side="right") - below
                num += float(below.sum() + 0.5 * ties.sum())
                den += float(len(a) * len(b))
        conc = num / den if den else 0.5
        conc = max(conc, 1 - conc)  # either direction
        if conc >= min_concordance and (best is None or conc > best["concordance"]):
            best = {"predictor": str(col), "source": "detected", "concordance": round(conc, 4)}
    return best
