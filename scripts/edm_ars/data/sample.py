"""The sample description ("Table 1") and the sample flow, computed by the DataEngineer on the analytic sample.

Everything here is computed from the values BEFORE imputation and encoding (after the reserve codes were recoded to
missing), with grouped pandas operations (no loops over rows):

* per predictor: its missing share over the analytic sample; continuous ones their mean and SD over the observed
  values, categorical ones the share of each level among the observed values (levels named by the registry's
  `values:` labels, in the registry's order when it gives one);
* beside them, for a binary outcome the same per outcome class (and the positive-class rate of each level), for a
  continuous outcome the outcome's mean per level and, for a continuous predictor, its Pearson correlation with
  the outcome (pairwise complete rows);
* the audited (protected / subgroup) attributes: group sizes and shares, and per group the base rate (binary) or
  the outcome's mean (continuous);
* the sample flow: raw rows -> outcome present -> analytic sample -> training / test rows and clusters ->
  complete cases -> test rows missing each audited attribute (the rows the subgroup audit leaves out).

The result is `output/branch_{b}/round_{r}/data/sample.json` (schema `sample`); :func:`table_rows` flattens it into the CSV
`output/branch_{b}/round_{r}/tables/sample.csv`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from edm_ars.data.registry import code_key

#: levels shown per categorical predictor; the rarer remaining levels are pooled into one "other levels" row
MAX_LEVELS = 6
#: ... and per audited attribute (its groups are the fairness audit's, so they are pooled only when very many)
MAX_GROUPS = 12
OTHER_LEVELS = "Other levels"


#: a numeric audited attribute with more distinct values is a scale: the audit bins it into quintiles
#: (edm_ars.analysis.fairness_groups) and Table 1 describes it like a continuous predictor
CONTINUOUS_MIN_UNIQUE = 10


def is_numeric_scale(s: pd.Series) -> bool:
    """A numeric attribute (or one read as text whose every value is a number) with many distinct values."""
    if pd.api.types.is_bool_dtype(s) or isinstance(s.dtype, pd.CategoricalDtype):
        return False
    values = s.dropna()
    numbers = pd.to_numeric(values, errors="coerce")
    return bool(numbers.notna().all()) and numbers.nunique() > CONTINUOUS_MIN_UNIQUE


def _audited_kind(values: pd.Series, labels: dict[str, str] | None) -> str:
    """How Table 1 describes an audited attribute: as the audit groups it (edm_ars.analysis.fairness_groups:
    codes that the registry labels are groups; else a numeric scale is binned into quintiles)."""
    if labels and _keys(values).dropna().isin(list(labels)).all():
        return "categorical"
    return "continuous" if is_numeric_scale(values) else "categorical"


def _num(value: Any) -> float | None:
    v = float(value)
    return None if not np.isfinite(v) else v


def _pct(part: float, whole: float) -> float:
    return round(100.0 * float(part) / float(whole), 4) if whole else 0.0


def _level_order(observed: pd.Series, labels: dict[str, str], order: list[str] | None = None) -> list[str]:
    """The observed levels (as code keys) in the codebook's order (`order`: codes or labels, as the registry's
    `values:` or a layout file list them; ordinal scales such as quintiles keep their order), then the registry's
    labelled codes, then the rest in natural order (numbers by value, text alphabetically)."""
    present = list(observed.index)
    rank: dict[str, int] = {}
    for k in list(order or []) + list(labels):
        rank.setdefault(str(k), len(rank))
    known = sorted((k for k in present if k in rank), key=rank.__getitem__)
    rest = [k for k in present if k not in rank]
    try:
        rest = sorted(rest, key=float)
    except ValueError:
        rest = sorted(rest)
    return known + rest


def _keys(s: pd.Series) -> pd.Series:
    """A categorical column's observed values as code keys ('1.0' -> '1'); missing stays missing."""
    out = s.astype("string").str.strip()
    keys = {v: code_key(v) for v in out.dropna().unique()}  # per distinct value, not per row
    return out.map(keys).astype("string")


def _categories(keys: pd.Series, labels: dict[str, str], max_levels: int, codebook: list[str] | None = None
                ) -> tuple[pd.Series, list[tuple[str, str]]]:
    """The column with rare levels pooled when it has more than `max_levels`, and its (value, label) rows in order."""
    counts = keys.value_counts(dropna=True)
    order = _level_order(counts, labels, codebook)
    if len(order) > max_levels:
        keep = set(counts.sort_values(ascending=False, kind="stable").index[:max_levels - 1])
        order = [k for k in order if k in keep]
        keys = keys.where(keys.isna() | keys.isin(order), OTHER_LEVELS)
        order.append(OTHER_LEVELS)
    return keys, [(k, labels.get(k, k)) for k in order]


def describe_variable(name: str, values: pd.Series, kind: str, y: pd.Series, task: str, classes: list[float],
                      labels: dict[str, str] | None = None, label: str | None = None,
                      max_levels: int = MAX_LEVELS, order: list[str] | None = None) -> dict[str, Any]:
    """One row block of Table 1 (see the module's docstring). `values` and `y` share an index (analytic rows)."""
    labels = labels or {}
    n = len(values)
    missing = int(values.isna().sum())
    rec: dict[str, Any] = {"name": name, "label": label or name, "kind": kind, "n": n, "n_missing": missing,
                           "pct_missing": _pct(missing, n)}
    binary = task == "binary_classification"
    if kind == "continuous":
        x = pd.to_numeric(values, errors="coerce").astype(float)
        rec["mean"], rec["sd"] = _num(x.mean()), _num(x.std())
        if binary:
            stats = x.groupby(y).agg(["mean", "std"])
            rec["by_class"] = [{"mean": _num(stats.loc[c, "mean"]) if c in stats.index else None,
                                "sd": _num(stats.loc[c, "std"]) if c in stats.index else None} for c in classes]
        else:
            both = x.notna() & y.notna()
            rec["corr"] = _num(np.corrcoef(x[both], y[both])[0, 1]) if both.sum() > 2 and x[both].std() > 0 else None
        return rec
    keys, rows = _categories(_keys(values), labels, max_levels, order)
    observed = int(keys.notna().sum())
    counts = keys.value_counts(dropna=True)
    levels = []
    if binary:
        table = pd.crosstab(keys, y)  # observed levels x outcome classes
        class_n = table.sum(axis=0)
        for value, lab in rows:
            row = table.loc[value] if value in table.index else pd.Series(0, index=table.columns)
            k = int(counts.get(value, 0))
            levels.append({"value": value, "label": lab, "n": k, "pct": _pct(k, observed),
                           "by_class_pct": [_pct(row.get(c, 0), class_n.get(c, 0)) for c in classes],
                           "rate": _pct(row.get(classes[-1], 0), k)})
    else:
        stats = y.groupby(keys).agg(["mean", "std"])
        for value, lab in rows:
            k = int(counts.get(value, 0))
            levels.append({"value": value, "label": lab, "n": k, "pct": _pct(k, observed),
                           "outcome_mean": _num(stats.loc[value, "mean"]) if value in stats.index else None,
                           "outcome_sd": _num(stats.loc[value, "std"]) if value in stats.index else None})
    rec["levels"] = levels
    return rec


def describe_sample(X: pd.DataFrame, kinds: dict[str, str], y: pd.Series, task: str, protected: pd.DataFrame,
                    flow: dict[str, Any], labels: dict[str, dict[str, str]] | None = None,
                    var_labels: dict[str, str] | None = None, max_levels: int = MAX_LEVELS,
                    orders: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """sample.json: Table 1 of the analytic sample (`X`: the predictors before imputation and encoding, coerced to
    their kinds; `y` the outcome; `protected` the audited attributes' original values; all on the same index) and
    the sample flow (`flow`, from :func:`sample_flow`). `labels` are the registry's value labels per variable,
    `orders` the codebook's order of each variable's values (codes and labels)."""
    labels, var_labels, orders = labels or {}, var_labels or {}, orders or {}
    binary = task == "binary_classification"
    y = y.astype(float)
    classes = sorted(y.dropna().unique().tolist()) if binary else []
    out: dict[str, Any] = {"task": task, "n": int(len(y)), "max_levels": max_levels}
    if binary:
        counts = y.value_counts()
        out["classes"] = [{"value": code_key(c), "n": int(counts.get(c, 0)), "pct": _pct(counts.get(c, 0), len(y))}
                          for c in classes]
    else:
        out["outcome"] = {"mean": _num(y.mean()), "sd": _num(y.std())}
    out["predictors"] = [describe_variable(c, X[c], kinds[c], y, task, classes, labels.get(c), var_labels.get(c),
                                           max_levels, orders.get(c)) for c in kinds]
    # the audited groups: sizes, shares and the base rate (binary: `rate`) or the outcome's mean per group
    out["audited"] = [describe_variable(c, protected[c], _audited_kind(protected[c], labels.get(c)), y, task,
                                        classes, labels.get(c),
                                        var_labels.get(c), max(max_levels, MAX_GROUPS), orders.get(c))
                      for c in protected.columns]
    out["flow"] = flow
    return out


def sample_flow(original_n: int, outcome_n: int, analytic_n: int, X: pd.DataFrame, train_idx: np.ndarray,
                test_idx: np.ndarray, groups: pd.Series, clustered: bool, protected: pd.DataFrame) -> dict[str, Any]:
    """The sample flow: raw rows -> outcome present -> analytic sample -> training / test (rows and clusters) ->
    complete cases -> test rows missing each audited attribute. `X` holds the analytic rows' predictors before
    imputation, `groups` their cluster ids, `protected` their audited attributes (positions match train/test_idx)."""
    complete = X.notna().all(axis=1).to_numpy()
    test_prot = protected.iloc[test_idx]
    n_test = len(test_idx)
    return {
        "raw_n": int(original_n),
        "outcome_missing_n": int(original_n - outcome_n),
        "outcome_present_n": int(outcome_n),
        "analytic_n": int(analytic_n),
        "train_n": int(len(train_idx)),
        "test_n": int(n_test),
        "clustered": bool(clustered),
        "train_clusters": int(groups.iloc[train_idx].nunique()) if clustered else None,
        "test_clusters": int(groups.iloc[test_idx].nunique()) if clustered else None,
        "complete_case_n": int(complete.sum()),
        "complete_case_train_n": int(complete[train_idx].sum()),
        "complete_case_test_n": int(complete[test_idx].sum()),
        "test_missing_protected": [{"name": c, "n": int(test_prot[c].isna().sum()),
                                    "pct": _pct(test_prot[c].isna().sum(), n_test)} for c in protected.columns],
    }


def table_rows(sample: dict[str, Any]) -> pd.DataFrame:
    """sample.json as one flat table (tables/sample.csv): one row per continuous variable and per level."""
    binary = sample["task"] == "binary_classification"
    classes = [c["value"] for c in sample.get("classes") or []]
    rows = []
    for section, recs in (("predictor", sample["predictors"]), ("audited", sample["audited"])):
        for rec in recs:
            base = {"section": section, "variable": rec["name"], "label": rec["label"], "kind": rec["kind"],
                    "pct_missing": rec["pct_missing"]}
            if rec["kind"] == "continuous":
                row = {**base, "level": "", "n": rec["n"] - rec["n_missing"], "mean": rec["mean"], "sd": rec["sd"]}
                if binary:
                    for c, b in zip(classes, rec["by_class"], strict=True):
                        row[f"mean_y{c}"], row[f"sd_y{c}"] = b["mean"], b["sd"]
                else:
                    row["corr_outcome"] = rec["corr"]
                rows.append(row)
                continue
            for lv in rec["levels"]:
                row = {**base, "level": lv["label"], "n": lv["n"], "pct": lv["pct"]}
                if binary:
                    for c, p in zip(classes, lv["by_class_pct"], strict=True):
                        row[f"pct_y{c}"] = p
                    row["positive_rate"] = lv["rate"]
                else:
                    row["outcome_mean"], row["outcome_sd"] = lv["outcome_mean"], lv["outcome_sd"]
                rows.append(row)
    return pd.DataFrame(rows)


def codebook_order(values: dict[Any, Any] | None, layout_labels: dict[int, str] | None = None) -> list[str]:
    """The order of a variable's values in its codebook, as codes and as labels (the data may hold either): the
    registry's `values:` in their listed order, then a layout file's labelled codes by code."""
    out: list[str] = []
    for code, label in list((values or {}).items()) + sorted((layout_labels or {}).items()):
        out += [code_key(code), " ".join(str(label).split())]
    return list(dict.fromkeys(out))
