"""Step 7 of the DataEngineer (edm_ars.data.engineer): the data checks on the prepared frames (missing values,
constant and duplicated columns, outcome proxies, sizes, school overlap, the outcome's values).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from edm_ars.data.impute import duplicated_columns
from edm_ars.data.protocol import Protocol


def outcome_proxies(train_X: pd.DataFrame, train_y: pd.Series, task: str, limit: float,
                    min_class: int = 10) -> list[dict[str, Any]]:
    """The feature columns that look like a copy of the outcome in the training rows, strongest first: absolute
    Pearson correlation with the outcome above `limit`, and for a binary outcome also a column that separates the
    two classes perfectly (every value of one class below every value of the other; each class at least
    `min_class` rows). Each entry: {"column", "r" (rounded to 4 places), "separates_classes" (binary only)}.
    One vectorised pass over the columns; a constant column has r = 0."""
    y = pd.to_numeric(train_y, errors="coerce").to_numpy(dtype=float)
    try:
        X = train_X.to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError):  # a column left as text: its values count as missing here
        X = train_X.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    keep = np.isfinite(y)
    X, y = X[keep], y[keep]
    if len(y) < 3 or X.shape[1] == 0:
        return []
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column has no mean: it counts as constant
        Xc = X - np.nanmean(X, axis=0)
        Xc = np.where(np.isfinite(Xc), Xc, 0.0)  # a missing value counts as the column's mean
        yc = y - y.mean()
        sx, sy = np.sqrt((Xc ** 2).sum(axis=0)), float(np.sqrt((yc ** 2).sum()))
        r = np.where(sx > 0, (Xc * yc[:, None]).sum(axis=0) / (sx * sy), 0.0) if sy > 0 else np.zeros(X.shape[1])
    separates = np.zeros(X.shape[1], dtype=bool)
    if task == "binary_classification":
        one, zero = y == 1, y == 0
        if one.sum() >= min_class and zero.sum() >= min_class:
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column within a class
                lo1, hi1 = np.nanmin(X[one], axis=0), np.nanmax(X[one], axis=0)
                lo0, hi0 = np.nanmin(X[zero], axis=0), np.nanmax(X[zero], axis=0)
            separates = (hi0 < lo1) | (hi1 < lo0)
    hits = np.flatnonzero((np.abs(r) > limit) | separates)
    out = []
    for j in sorted(hits, key=lambda j: -abs(r[j])):
        entry: dict[str, Any] = {"column": str(train_X.columns[j]), "r": round(float(r[j]), 4)}
        if task == "binary_classification":
            entry["separates_classes"] = bool(separates[j])
        out.append(entry)
    return out


def data_checks(train_X: pd.DataFrame, test_X: pd.DataFrame, train_y: pd.Series, test_y: pd.Series, task: str,
                outcome: str, n_predictors: int, analytic_n: int, retention: float, overlap: int,
                proto: Protocol, structural: bool, outcome_range: list[float] | None = None,
                units_on_both_sides: int | None = None) -> list[dict[str, Any]]:
    """The data checks, each {name, passed, detail}. `units_on_both_sides`: for repeated records of a unit
    (dataset.repeated), the number of units with records in both the training and the test rows (the check
    `no_unit_on_both_sides`, which the DataEngineer stops on); None: one row per unit, no such check."""
    checks = []

    def check(name: str, passed: bool, detail: Any) -> None:
        checks.append({"name": name, "passed": bool(passed), "detail": detail})

    check("no_missing_values", not train_X.isna().any().any() and not test_X.isna().any().any(),
          int(train_X.isna().sum().sum() + test_X.isna().sum().sum()))
    constant = [c for c in train_X.columns if train_X[c].nunique() <= 1]
    check("no_zero_variance_columns", not constant, constant)
    dup_names = train_X.columns[train_X.columns.duplicated()].tolist()
    dup_values = list(duplicated_columns(train_X))  # by hashed values: transposing the frame took seconds
    check("no_duplicated_columns", not dup_names and not dup_values, dup_names + dup_values)
    check("outcome_not_in_features", outcome not in train_X.columns
          and not any(c.startswith(f"{outcome}__") for c in train_X.columns), outcome)
    proxies = outcome_proxies(train_X, train_y, task, proto.leakage_corr)
    check("no_outcome_proxy", not proxies, {"threshold": proto.leakage_corr, "proxies": proxies})
    check("same_columns_train_test", list(train_X.columns) == list(test_X.columns), len(train_X.columns))
    check("encoded_width_reasonable", train_X.shape[1] <= 1000 and train_X.shape[1] < 5 * max(n_predictors, 1) + 50,
          {"encoded_columns": train_X.shape[1], "predictors": n_predictors})
    check("analytic_n_at_least_min", analytic_n >= proto.min_analytic_n, analytic_n)
    check("retention_at_least_min_or_structural", retention >= proto.min_retention or structural,
          {"retention": round(retention, 4), "structural_missingness": structural})
    check("events_per_predictor_10", analytic_n >= 10 * n_predictors, {"analytic_n": analytic_n,
                                                                       "predictors": n_predictors})
    check("zero_school_overlap", overlap == 0, overlap)
    if units_on_both_sides is not None:
        check("no_unit_on_both_sides", units_on_both_sides == 0, units_on_both_sides)
    check("train_test_sizes", len(train_y) > 0 and len(test_y) > 0,
          {"train": len(train_y), "test": len(test_y)})
    if task == "binary_classification":
        values = set(pd.concat([train_y, test_y]).unique().tolist())
        check("outcome_binary_0_1", values <= {0.0, 1.0} and len(values) == 2, sorted(values))
        check("both_classes_in_test", test_y.nunique() == 2, int(test_y.nunique()))
    else:
        both = pd.concat([train_y, test_y])
        check("outcome_finite", np.isfinite(both).all(), None)
        if outcome_range:
            lo, hi = outcome_range
            outside = int(((both < lo) | (both > hi)).sum())
            check("outcome_within_codebook_range", outside == 0, {"range": [lo, hi], "outside": outside})
    return checks
