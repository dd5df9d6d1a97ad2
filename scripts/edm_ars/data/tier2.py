"""Tier 2: every usable variable of the data that is neither curated (Tier 1) nor excluded (Tier 3)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from edm_ars.data.layout import Layout
from edm_ars.data.registry import Registry, is_excluded, sentinels, wave_of


def infer_type(values: pd.Series) -> str:
    """empty, binary, continuous (numeric, more than 12 values) or categorical; judged on the distinct values, so
    the cost is one pass over the rows whatever their type."""
    present = values.dropna()
    if present.empty:
        return "empty"
    distinct = pd.Series(np.asarray(present.unique(), dtype=object))
    k = len(distinct)
    if pd.to_numeric(distinct, errors="coerce").notna().all():
        return "binary" if k == 2 else "continuous" if k > 12 else "categorical"
    return "binary" if k == 2 else "categorical"


def _labelled_missing(s: pd.Series, labels: list[str]) -> pd.Series:
    """True where a text value (stripped) is one of the sentinel labels: decided once per distinct value."""
    codes, distinct = pd.factorize(s, use_na_sentinel=True)
    wanted = set(labels)
    hit = np.array([str(v).strip() in wanted for v in distinct] + [False], dtype=bool)  # code -1: missing
    return pd.Series(hit[codes], index=s.index)


def build_tier2(frame: pd.DataFrame, reg: Registry, layout: Layout | None) -> dict[str, Any]:
    """Wave from the prefix, type from the values, missing rate after sentinel recoding, label from the codebook."""
    codes, labels = sentinels(reg)
    code_list = sorted(codes)
    variables = {}
    for col in frame.columns:
        if col in reg.tier1 or is_excluded(reg, col):
            continue
        wave = wave_of(reg, col)
        if wave is None:
            continue
        s = frame[col]
        if pd.api.types.is_numeric_dtype(s):
            s = s.mask(s.isin(code_list))
        else:
            s = s.mask(_labelled_missing(s, list(labels)))
        typ = infer_type(s)
        rec = {
            "label": (layout.labels.get(col) if layout else None) or col,
            "wave": wave,
            "type": typ,
            "pct_missing": round(float(s.isna().mean() * 100), 2),
            "n_unique": int(s.nunique()),
        }
        if layout and layout.substantive_codes(col):
            rec["n_categories"] = len(layout.substantive_codes(col))
        variables[col] = rec
    return {"dataset": reg.dataset.get("name", ""), "n_variables": len(variables), "variables": variables}
