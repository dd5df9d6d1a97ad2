"""The causal study's analytic frame: one row per unit with a value of the treatment that is compared.

From the raw data: the reserve codes and missing labels become missing (as for prediction); the treatment is
recoded to 1 (the treated value) and 0 (the comparison value), rows with another value (a third arm) or none are
left out and counted; the outcome is the registry's variable or the sum of its parts (missing when any part is);
rows keep a missing outcome, so the attrition analysis can compare who has one by arm. Covariates, all measured
before the treatment (the specification's gate), become features: a continuous covariate its value with missing
values filled by the mean of the observed rows, a categorical one an indicator per value (a missing value sets none), and each continuous
covariate with a missing value an indicator of it (the missing-indicator method, which keeps every row and, with covariates
measured before a randomised assignment, keeps the comparison unbiased). Nothing is fitted on the outcome here, so
no split is needed: the estimators cross-fit where they learn from the data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from edm_ars.core.errors import DataError
from edm_ars.data.raw import recode_sentinels
from edm_ars.data.registry import Registry, value_labels

FEATURE = "x__"
GROUP = "g__"


def _matches(values: pd.Series, code: str, labels: dict[str, str]) -> pd.Series:
    """Rows whose value is the code or its label (the data hold one or the other)."""
    wanted = {code, labels.get(code, code)} | {k for k, v in labels.items() if v == code}
    text = values.astype("string").str.strip()
    numeric = pd.to_numeric(values, errors="coerce")
    as_int = numeric.dropna()
    hit = text.isin(sorted(wanted)).fillna(False).astype(bool)
    if len(as_int) and (as_int == as_int.round()).all():
        ints = {w for w in wanted if w.lstrip("-").isdigit()}
        hit |= numeric.isin([int(w) for w in ints]).fillna(False).astype(bool)
    return hit


def _label(values: pd.Series, labels: dict[str, str]) -> pd.Series:
    """Value labels as text (a code the registry labels becomes its label); missing stays missing."""
    def one(v: Any) -> Any:
        if v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and np.isnan(v)):
            return None
        key = _text(v)
        return labels.get(key, key)
    return pd.Series([one(v) for v in values.tolist()], index=values.index, dtype=object)


def _text(v: Any) -> str:
    """A value as text: a whole number without its decimal point (a school id 63.0 is "63")."""
    if isinstance(v, (int, float, np.integer, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v).strip()


def analytic_frame(raw: pd.DataFrame, spec: dict[str, Any], reg: Registry,
                   id_column: str | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """(frame, data report) of a causal specification: the frame's columns are described in the contract of
    edm_ars.causal (unit_id, treated, outcome, block, cluster, x__ features, g__ subgroup labels)."""
    t, o, d = spec["treatment"], spec["outcome"], spec["design"]
    frame, _ = recode_sentinels(raw, reg)
    n_rows = len(frame)
    labels = value_labels(reg, t["variable"])
    treat = frame[t["variable"]]
    is_t = _matches(treat, t["treated"], labels)
    is_c = _matches(treat, t["control"], labels)
    missing_t = treat.isna()
    other = ~(is_t | is_c | missing_t)
    excluded = {str(k): int(v) for k, v in _label(treat[other], labels).value_counts().items()}
    keep = is_t | is_c
    if int(is_t.sum()) == 0 or int(is_c.sum()) == 0:
        raise DataError(f"treatment {t['variable']}: {int(is_t.sum())} row(s) with the treated value "
                        f"{t['treated']!r} and {int(is_c.sum())} with the comparison value {t['control']!r}: a "
                        "causal comparison needs both (check treatment.treated and treatment.control against the "
                        f"values of {t['variable']} in the data)")
    rows = frame[keep]
    out = pd.DataFrame(index=rows.index)
    ids = rows[id_column] if id_column and id_column in rows.columns else pd.Series(rows.index, index=rows.index)
    out["unit_id"] = ids.astype(str).to_numpy()
    out["treated"] = is_t[keep].astype(int).to_numpy()
    parts = o.get("sum_of") or [o["name"]]
    values = [pd.to_numeric(rows[p], errors="coerce") for p in parts]
    if o.get("type") == "binary" and not o.get("sum_of"):
        positive = spec["outcome"].get("positive")
        raw_out = rows[o["name"]]
        if positive is not None:
            y = _matches(raw_out, str(positive), value_labels(reg, o["name"])).astype(float)
            y[raw_out.isna()] = np.nan
        else:
            y = pd.to_numeric(raw_out, errors="coerce")
    else:
        y = values[0]
        for v in values[1:]:
            y = y + v  # missing when any part is
    out["outcome"] = y.astype(float).to_numpy()
    for key, name in (("blocks", "block"), ("cluster", "cluster")):
        col = d.get(key)
        if col:
            out[name] = pd.Series([None if pd.isna(v) else _text(v) for v in rows[col].tolist()], dtype=object).to_numpy()
            if out[name].isna().any():
                n = int(out[name].isna().sum())
                raise DataError(f"design.{key} column {col}: {n} analysed row(s) have no value; every unit "
                                "needs its block and cluster")
    covariates = []
    features: list[str] = []
    for c in spec["covariates"]:
        s = rows[c["name"]]
        pct = round(100.0 * float(s.isna().mean()), 2)
        made = []
        if c.get("type") == "continuous":
            v = pd.to_numeric(s, errors="coerce")
            if v.notna().sum() == 0:
                raise DataError(f"covariate {c['name']}: no numeric value among the analysed rows")
            name = f"{FEATURE}{c['name']}"
            out[name] = v.fillna(v.mean()).astype(float).to_numpy()
            made.append(name)
        else:
            lab = _label(s, value_labels(reg, c["name"]))
            for level in sorted({v for v in lab if v is not None}, key=str):
                name = f"{FEATURE}{c['name']}={level}"
                out[name] = (lab == level).astype(float).to_numpy()
                made.append(name)
        if s.isna().any() and c.get("type") == "continuous":
            # a categorical covariate's missing rows are those with no indicator set: another column would repeat it
            name = f"{FEATURE}{c['name']}__missing"
            out[name] = s.isna().astype(float).to_numpy()
            made.append(name)
        features += made
        covariates.append({"name": c["name"], "label": c["label"], "type": c.get("type"), "wave": c.get("wave"),
                           "features": made, "pct_missing": pct})
    subgroups = []
    for g in spec["subgroups"]:
        lab = _label(rows[g["name"]], value_labels(reg, g["name"]))
        out[f"{GROUP}{g['name']}"] = lab.to_numpy()
        counts = lab.dropna().value_counts()
        subgroups.append({"name": g["name"], "label": g["label"],
                          "levels": {str(k): int(v) for k, v in sorted(counts.items(), key=lambda kv: str(kv[0]))}})
    out = out.reset_index(drop=True)
    missing_y = out["outcome"].isna()
    report = {
        "task": "causal", "n_rows": int(n_rows), "n_treated": int(out["treated"].sum()),
        "n_control": int((out["treated"] == 0).sum()), "excluded_levels": excluded,
        "n_missing_treatment": int(missing_t.sum()),
        "outcome_missing": {"treated": int((missing_y & (out["treated"] == 1)).sum()),
                            "control": int((missing_y & (out["treated"] == 0)).sum())},
        "features": features, "covariates": covariates,
        "blocks": {"column": d["blocks"], "n": int(out["block"].nunique())} if d.get("blocks") else None,
        "cluster": {"column": d["cluster"], "n": int(out["cluster"].nunique())} if d.get("cluster") else None,
        "subgroups": subgroups,
    }
    return out, report
