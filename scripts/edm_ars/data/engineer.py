"""DataEngineer: the certified, leakage-safe data preparation.

Order of operations (each step is a pure function, tested on small frames):
1. select the outcome, predictors, subgroup and school-fingerprint columns;
2. recode every numeric reserve code and text missing label to NaN, before anything else;
3. build the outcome (explicit label mapping, derived outcomes) and drop rows whose outcome is
   missing (the outcome is never imputed);
4. reconstruct schools from the fingerprint and split 80/20 before any encoding (stratified for
   classification, grouped by school so no school is on both sides);
5. impute per variable with imputers fitted on training rows only;
6. one-hot encode with encoders fitted on training rows only (with a cardinality guard);
7. run the data checks and write the report.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.experimental import enable_iterative_imputer  # noqa: F401  (enables IterativeImputer)
from sklearn.impute import IterativeImputer
from sklearn.model_selection import GroupShuffleSplit, ShuffleSplit, StratifiedKFold

from edm_ars.core.conventions import LEAKAGE_CORR, level_slug
from edm_ars.core.errors import DataError
from edm_ars.data.layout import Layout
from edm_ars.data.raw import recode_sentinels
from edm_ars.data.registry import Registry, value_labels
from edm_ars.data.sample import codebook_order, describe_sample, sample_flow

log = logging.getLogger(__name__)

MISSING_CATEGORY = "Missing (imputation category)"


@dataclass
class Protocol:
    """The stated imputation and feasibility protocol (thresholds from config)."""

    test_fraction: float = 0.2
    seed: int = 42
    simple_below: float = 5.0  # % missing: median / mode below this
    warn_above: float = 20.0  # % missing: impute and warn above this
    drop_above: float = 99.0  # % missing: a suppressed variable carries no information
    min_analytic_n: int = 1000
    min_retention: float = 0.60
    max_categories: int = 100
    iterative_max_iter: int = 5
    min_clusters: int = 50
    structural_above: float = 40.0  # % missing (training rows): missing by design, so an indicator is added
    leakage_corr: float = LEAKAGE_CORR  # |r| with the outcome in the training rows above which a column is a proxy
    imputation: str = "by_missingness"  # by_missingness | simple | iterative (edm_ars.review.actions.IMPUTATIONS)


# ---- 1-2. selection and sentinel recoding: edm_ars.data.raw ---------------------------------


# ---- 3. outcome ------------------------------------------------------------------------------


def binary_mapping(reg: Registry, layout: Layout | None, name: str, values: list[str],
                   positive_label: str | None = None) -> dict[str, int]:
    """Explicit label -> {0, 1} map for a binary outcome (never `to_numeric(errors='coerce')`)."""
    rec = reg.variable(name) or {}
    if rec.get("derive"):
        return {str(k): int(v) for k, v in rec["derive"]["map"].items()}
    observed = sorted({str(v).strip() for v in values})
    if positive_label:
        if positive_label not in observed:
            raise DataError(f"outcome {name}: positive label '{positive_label}' not among its values {observed}")
        return {v: int(v == positive_label) for v in observed}
    codes = layout.substantive_codes(name) if layout else {}
    if set(codes) == {0, 1}:
        mapping = {codes[0]: 0, codes[1]: 1}
        unknown = [v for v in observed if v not in mapping and v not in {"0", "1"}]
        if unknown:
            raise DataError(f"outcome {name}: values {unknown} are not in its codebook labels {sorted(mapping)}")
        return {**mapping, "0": 0, "1": 1}
    if set(observed) <= {"0", "1", "0.0", "1.0"}:
        return {"0": 0, "1": 1, "0.0": 0, "1.0": 1}
    if set(observed) == {"No", "Yes"}:
        return {"No": 0, "Yes": 1}
    raise DataError(
        f"outcome {name}: cannot map values {observed[:6]} to 0/1; give research_spec outcome.positive_label"
    )


def build_outcome(frame: pd.DataFrame, reg: Registry, layout: Layout | None, name: str, task: str,
                  positive_label: str | None = None) -> pd.Series:
    """The outcome as numbers (NaN where missing), derived from its source when the registry says so."""
    rec = reg.variable(name) or {}
    source = rec.get("derive", {}).get("from", name) if rec.get("derive") else name
    if source not in frame.columns:
        raise DataError(f"outcome {name}: column '{source}' is not in the data")
    s = frame[source]
    derive = rec.get("derive") or {}
    if "threshold" in derive:  # a binary outcome from a numeric source: 1 above the stated threshold
        num = pd.to_numeric(s, errors="coerce")
        bad = s[num.isna() & s.notna()]
        if len(bad):
            raise DataError(f"outcome {name}: source column {source} has non-numeric values such as "
                            f"{bad.astype(str).unique()[:3].tolist()}")
        return (num > float(derive["threshold"])).astype(float).where(num.notna()).rename(name)
    if task == "regression":
        num = pd.to_numeric(s, errors="coerce")
        bad = s[num.isna() & s.notna()]
        if len(bad):
            raise DataError(f"outcome {name}: non-numeric values such as {bad.astype(str).unique()[:3].tolist()}")
        return num.astype(float).rename(name)
    present = s.dropna().astype(str).str.strip()
    mapping = binary_mapping(reg, layout, name, present.unique().tolist(), positive_label)
    mapped = s.astype("string").str.strip().map(mapping)
    unmapped = s.notna() & mapped.isna()
    if rec.get("derive"):
        mapped = mapped.mask(unmapped)  # labels outside the derivation map count as missing
    elif unmapped.any():
        raise DataError(f"outcome {name}: unmapped values {s[unmapped].astype(str).unique()[:5].tolist()}")
    return pd.to_numeric(mapped, errors="raise").astype(float).rename(name)


# ---- 4. schools and the split -----------------------------------------------------------------


def fingerprint_ids(frame: pd.DataFrame) -> np.ndarray:
    """Group ids of the rows' value combinations, numbered in the sorted order of the combinations written as text
    (a missing value as "<NA>"): what `frame.astype("string").fillna("<NA>").groupby(columns, sort=True,
    dropna=False).ngroup()` gives, computed from each column's distinct values (their text and rank) and the rows'
    integer codes, so its cost is a sort of integers, not of a million rows of text."""
    combined = np.zeros(len(frame), dtype=np.int64)
    for col in frame.columns:
        s = frame[col]
        if pd.api.types.is_float_dtype(s.dtype) and not isinstance(s.dtype, pd.api.extensions.ExtensionDtype):
            # by bit pattern: -0.0 and 0.0 are different texts ("-0.0", "0.0"), which factorize would merge
            values = s.to_numpy(dtype=np.float64)
            codes, bits = pd.factorize(values.view(np.int64))
            codes[np.isnan(values)] = -1
            uniques = bits.view(np.float64)
        else:
            codes, uniques = pd.factorize(s, use_na_sentinel=True)
        text = pd.Series(uniques).astype("string").fillna("<NA>").to_numpy(dtype=object)
        text = np.append(text, "<NA>").astype(str)  # code -1 (a missing value) is the last entry
        names, rank = np.unique(text, return_inverse=True)
        rank = rank.astype(np.int64)[codes]  # equal texts (e.g. two spellings of a missing value) share a rank
        combined = _combine_codes(combined, rank, len(names))
    return np.unique(combined, return_inverse=True)[1].astype(np.int64)


def _combine_codes(combined: np.ndarray, rank: np.ndarray, k: int) -> np.ndarray:
    """The pair (combined, rank) as one integer code ordered as the pairs are (combined first), renumbered to
    consecutive codes first when the product would not fit in 64 bits."""
    top = int(combined.max()) + 1 if len(combined) else 1
    if top * k >= 2 ** 62:
        combined = np.unique(combined, return_inverse=True)[1].astype(np.int64)
        top = int(combined.max()) + 1 if len(combined) else 1
    return combined * k + rank


def reconstruct_schools(frame: pd.DataFrame, columns: list[str], min_clusters: int = 50
                        ) -> tuple[pd.Series, dict[str, Any]]:
    """Pseudo school ids from the school-level fingerprint (missing values are part of it)."""
    present = [c for c in columns if c in frame.columns]
    if not present:
        ids = pd.Series(np.arange(len(frame)), index=frame.index, name="pseudo_school_id")
        # the registry names no cluster (a file without schools) or none of its columns is in the data
        return ids, {"status": "failed_zero_clusters" if columns else "no_grouping", "n_clusters": 0, "columns": []}
    ids = pd.Series(fingerprint_ids(frame[present]), index=frame.index, name="pseudo_school_id")
    n = int(ids.nunique())
    status = "success" if n >= min_clusters else "degenerate_few_clusters"
    sizes = ids.value_counts()
    return ids, {
        "status": status, "n_clusters": n, "columns": present,
        "median_cluster_size": float(sizes.median()), "max_cluster_size": int(sizes.max()),
    }


def stratified_group_fold0(y: np.ndarray, groups: np.ndarray, n_splits: int, seed: int) -> np.ndarray:
    """The rows of the first test fold of scikit-learn's StratifiedGroupKFold(n_splits, shuffle=True,
    random_state=seed): the same groups, assigned by the same greedy rule in the same order, with the class counts
    per group counted at once and the greedy pass in plain Python over a handful of numbers per group (scikit-learn
    loops over the rows in Python and makes a dozen numpy calls per group: a tenth of the DataEngineer's time).
    tests/test_engineer.py compares the two on many random inputs."""
    y, groups = np.asarray(y), np.asarray(groups)
    _, y_inv, y_cnt = np.unique(y, return_inverse=True, return_counts=True)
    if np.all(n_splits > y_cnt):
        raise ValueError(f"n_splits={n_splits} cannot be greater than the number of members in each class.")
    if n_splits > int(y_cnt.min()):
        warnings.warn(f"The least populated class in y has only {int(y_cnt.min())} members, which is less than "
                      f"n_splits={n_splits}.", UserWarning, stacklevel=2)
    n_classes = len(y_cnt)
    _, groups_inv, groups_cnt = np.unique(groups, return_inverse=True, return_counts=True)
    n_groups = len(groups_cnt)
    if n_splits > n_groups:
        raise ValueError(f"Cannot have number of splits n_splits={n_splits} greater than the number of groups: "
                         f"{n_groups}.")
    per_group = np.zeros((n_groups, n_classes))
    np.add.at(per_group, (groups_inv.ravel(), y_inv.ravel()), 1)
    perm = np.arange(n_groups)
    np.random.RandomState(seed).shuffle(perm)  # scikit-learn's check_random_state(seed), shuffle=True
    per_group = per_group[perm]
    order = np.argsort(-np.std(per_group, axis=1), kind="stable")
    totals = [float(c) for c in y_cnt]
    folds = [[0.0] * n_classes for _ in range(n_splits)]
    rows = per_group.tolist()
    fold0 = []
    for g in order.tolist():
        counts = rows[g]
        best, min_eval, min_samples = 0, math.inf, math.inf
        for i in range(n_splits):
            spread = 0.0
            for c in range(n_classes):  # the SD over folds of each class's share, fold i with the group added
                shares = [(folds[f][c] + counts[c] if f == i else folds[f][c]) / totals[c] for f in range(n_splits)]
                mean = sum(shares) / n_splits
                spread += math.sqrt(sum((x - mean) * (x - mean) for x in shares) / n_splits)
            fold_eval = spread / n_classes
            samples = sum(folds[i])
            close = math.isfinite(min_eval) and abs(fold_eval - min_eval) <= 1e-8 + 1e-5 * abs(min_eval)
            if fold_eval < min_eval or (close and samples < min_samples):
                best, min_eval, min_samples = i, fold_eval, samples
        folds[best] = [a + b for a, b in zip(folds[best], counts, strict=True)]
        if best == 0:
            fold0.append(g)
    # positions after the shuffle back to the original group codes
    return np.flatnonzero(np.isin(groups_inv, perm[np.asarray(fold0, dtype=np.int64)]))


def split_train_test(y: pd.Series, groups: pd.Series | None, task: str, test_fraction: float, seed: int,
                     group_label: str = "reconstructed school") -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Positions of training and test rows; grouped by cluster (e.g. school) when groups are given."""
    n_splits = max(2, int(round(1 / test_fraction)))
    idx = np.arange(len(y))
    yv = y.to_numpy()
    if groups is not None:
        g = groups.to_numpy()
        if task == "binary_classification":
            test = stratified_group_fold0(yv, g, n_splits, seed)
            train = np.setdiff1d(idx, test, assume_unique=True)
            method = f"StratifiedGroupKFold(n_splits={n_splits}) fold 0, grouped by {group_label}"
        else:
            splitter = GroupShuffleSplit(n_splits=1, test_size=test_fraction, random_state=seed)
            train, test = next(splitter.split(idx, yv, g))
            method = f"GroupShuffleSplit, grouped by {group_label}"
        overlap = len(set(g[train]) & set(g[test]))
    else:
        if task == "binary_classification":
            splitter = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
            train, test = next(splitter.split(idx, yv))
            method = f"StratifiedKFold(n_splits={n_splits}) fold 0 (no cluster groups available)"
        else:
            train, test = next(ShuffleSplit(n_splits=1, test_size=test_fraction, random_state=seed).split(idx))
            method = "ShuffleSplit (no cluster groups available)"
        overlap = 0
    info = {"method": method, "seed": seed, "test_fraction": round(len(test) / len(y), 4),
            "group_overlap": int(overlap)}
    return np.sort(train), np.sort(test), info


# ---- 5. imputation --------------------------------------------------------------------------


def variable_kinds(predictors: list[str], reg: Registry, frame: pd.DataFrame) -> dict[str, str]:
    """'continuous' or 'categorical' per predictor: from the registry, else from the values."""
    kinds = {}
    for name in predictors:
        rec = reg.variable(name) or {}
        typ = rec.get("type")
        if typ in ("continuous", "binary", "categorical"):
            kinds[name] = "continuous" if typ == "continuous" else "categorical"
        else:
            values = frame[name].dropna()
            numeric = pd.to_numeric(values, errors="coerce")
            kinds[name] = "continuous" if len(values) and numeric.notna().all() and values.nunique() > 10 \
                else "categorical"
    return kinds


def coerce_types(frame: pd.DataFrame, kinds: dict[str, str]) -> pd.DataFrame:
    out = {}
    for name, kind in kinds.items():
        s = frame[name]
        if kind == "continuous":
            num = pd.to_numeric(s, errors="coerce")
            bad = s[num.isna() & s.notna()]
            if len(bad):
                raise DataError(f"predictor {name}: continuous in the registry but has text values such as "
                                f"{bad.astype(str).unique()[:3].tolist()}")
            out[name] = num.astype(float)
        else:
            out[name] = s.astype("string").str.strip().astype(object).where(s.notna(), np.nan)
    return pd.DataFrame(out, index=frame.index)


@dataclass
class FittedImputer:
    """Per-variable imputation fitted on training rows only."""

    methods: dict[str, str] = field(default_factory=dict)
    pct_missing: dict[str, float] = field(default_factory=dict)
    fill_values: dict[str, Any] = field(default_factory=dict)
    iterative: IterativeImputer | None = None
    iterative_columns: list[str] = field(default_factory=list)
    continuous: list[str] = field(default_factory=list)
    # structurally missing continuous predictors -> the name of their missing indicator (1 = not observed)
    indicators: dict[str, str] = field(default_factory=dict)

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = frame.copy()
        for col, name in self.indicators.items():  # from the values before they are filled
            out[name] = frame[col].isna().astype(float)
        if self.iterative is not None:
            values = self.iterative.transform(out[self.continuous].to_numpy(dtype=float))
            imputed = pd.DataFrame(values, columns=self.continuous, index=out.index)
            for col in self.iterative_columns:
                out[col] = imputed[col]
        for col, value in self.fill_values.items():
            out[col] = out[col].fillna(value)
        return out


def imputation_protocol(proto: Protocol) -> str:
    """The imputation protocol in words, as the paper states it."""
    iterative = (f"scikit-learn IterativeImputer (max_iter={proto.iterative_max_iter}) over the continuous "
                 "predictors for continuous variables and an explicit missing category for categorical ones")
    if proto.imputation == "simple":
        rule = "Every incomplete variable, decided on training rows: median (continuous) or mode (categorical)"
    elif proto.imputation == "iterative":
        rule = f"Every incomplete variable, decided on training rows: {iterative}"
    elif proto.imputation == "by_missingness":
        rule = (f"Per variable, decided on training rows: under {proto.simple_below:g}% missing, median "
                f"(continuous) or mode (categorical); {proto.simple_below:g}% or more, {iterative}")
    else:
        raise DataError(f"engineer.imputation: unknown strategy {proto.imputation!r} "
                        "(by_missingness, simple or iterative)")
    structural = (f" A predictor over {proto.structural_above:g}% missing in the training rows is taken to be "
                  "missing by design for part of the sample (structural missingness): a continuous one also gets a "
                  "missing indicator (1 where it was not observed) beside its imputed value, a categorical one an "
                  "explicit missing category.")
    return (f"{rule}; over {proto.warn_above:g}% the variable is flagged as a limitation.{structural} Imputers and "
            "encoders are fitted on training rows only.")


def fit_imputer(train: pd.DataFrame, kinds: dict[str, str], proto: Protocol) -> tuple[FittedImputer, list[str]]:
    """Choose and fit the imputation per variable on training rows; return it and the warnings."""
    imp = FittedImputer()
    notes = []
    imp.continuous = [c for c, k in kinds.items() if k == "continuous"]
    for col, kind in kinds.items():
        pct = float(train[col].isna().mean() * 100)
        imp.pct_missing[col] = round(pct, 2)
        structural = pct > proto.structural_above
        if pct == 0:
            imp.methods[col] = "none (complete)"
        elif structural and kind == "categorical":  # missing by design: its own category, whatever the strategy
            imp.methods[col] = "missing_category"
            imp.fill_values[col] = MISSING_CATEGORY
        elif proto.imputation == "simple" or (proto.imputation == "by_missingness" and pct < proto.simple_below):
            if kind == "continuous":
                imp.methods[col] = "median"
                imp.fill_values[col] = float(train[col].median())
            else:
                imp.methods[col] = "mode"
                imp.fill_values[col] = train[col].mode(dropna=True).iloc[0]
        elif kind == "continuous":
            imp.methods[col] = "iterative_imputer"
            imp.iterative_columns.append(col)
        else:
            imp.methods[col] = "missing_category"
            imp.fill_values[col] = MISSING_CATEGORY
        if structural and kind == "continuous":
            imp.indicators[col] = f"{col}__not_observed"
            imp.methods[col] += " + missing_indicator"
        if pct > proto.warn_above:
            method = imp.methods[col].replace("_", " ")
            why = f"structural: >{proto.structural_above:g}% missing; " if structural else ""
            imp.methods[col] += f" ({why}flagged: >{proto.warn_above:g}% missing)"
            notes.append(f"{col} is {pct:.1f}% missing in the training rows; imputed by {method} and "
                         "reported as a limitation")
    if imp.iterative_columns:
        it = IterativeImputer(max_iter=proto.iterative_max_iter, random_state=proto.seed, sample_posterior=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence notices at max_iter=5 are expected and stated
            it.fit(train[imp.continuous].to_numpy(dtype=float))
        imp.iterative = it
    return imp, notes


# ---- 6. encoding ----------------------------------------------------------------------------


@dataclass
class FittedEncoder:
    categories: dict[str, list[str]] = field(default_factory=dict)
    continuous: list[str] = field(default_factory=list)

    def transform(self, frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
        parts = {c: frame[c].astype(float) for c in self.continuous}
        sources = {c: c for c in self.continuous}
        for col, cats in self.categories.items():
            values = frame[col].astype(str)
            levels = cats[1:] if len(cats) == 2 else cats  # one column for a binary variable
            for level in levels:
                name = f"{col}__{level_slug(level)}"
                parts[name] = (values == level).astype(float)
                sources[name] = col
        return pd.DataFrame(parts, index=frame.index), sources


def fit_encoder(train: pd.DataFrame, kinds: dict[str, str], proto: Protocol) -> FittedEncoder:
    enc = FittedEncoder(continuous=[c for c, k in kinds.items() if k == "continuous"])
    for col, kind in kinds.items():
        if kind != "categorical":
            continue
        levels = sorted(train[col].dropna().astype(str).unique())
        if len(levels) > proto.max_categories:
            raise DataError(f"predictor {col}: {len(levels)} distinct values exceed the cardinality guard "
                            f"({proto.max_categories}); is it a continuous variable recorded as categorical?")
        enc.categories[col] = levels
    return enc


def duplicated_columns(frame: pd.DataFrame) -> dict[str, str]:
    """{column: the earlier column it equals} for every column whose values repeat an earlier column's."""
    seen: dict[int, list[str]] = {}  # a hash of the column's values -> the earlier columns with that hash
    copies: dict[str, str] = {}
    for col in frame.columns:
        key = int(pd.util.hash_pandas_object(frame[col], index=False).to_numpy().sum(dtype=np.uint64))
        same = next((c for c in seen.get(key, []) if frame[col].equals(frame[c])), None)
        if same is None:
            seen.setdefault(key, []).append(col)
        else:
            copies[col] = same
    return copies


# ---- 7. checks ------------------------------------------------------------------------------


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
                proto: Protocol, structural: bool, outcome_range: list[float] | None = None
                ) -> list[dict[str, Any]]:
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


def is_structural(reg: Registry, outcome: str) -> bool:
    """Structural (MNAR) outcome missingness: a later-wave outcome recorded > 30% missing."""
    rec = reg.variable(outcome) or {}
    wave = rec.get("wave")
    pct = rec.get("pct_missing") or 0
    return bool(wave and reg.wave_order.get(wave, 0) > 0 and pct > 30)


# ---- the whole protocol -----------------------------------------------------------------------


@dataclass
class Prepared:
    train_X: pd.DataFrame
    train_y: pd.Series
    test_X: pd.DataFrame
    test_y: pd.Series
    test_protected: pd.DataFrame
    train_groups: pd.Series
    report: dict[str, Any]
    # cluster ids of the test rows (a cluster bootstrap resamples them); each row its own id when the split is
    # not grouped, so the cluster bootstrap is then the ordinary one
    test_groups: pd.Series
    # sample.json: Table 1 of the analytic sample and the sample flow (edm_ars.data.sample)
    sample: dict[str, Any] | None = None


def outcome_source(reg: Registry, outcome: str) -> str:
    """The data column an outcome is read from (itself, or the source of a derived outcome)."""
    rec = reg.variable(outcome) or {}
    return rec["derive"]["from"] if rec.get("derive") else outcome


def needed_columns(spec: dict[str, Any], reg: Registry) -> list[str]:
    """The columns the protocol reads for a specification: predictors, the outcome's source column,
    subgroup attributes and the grouping columns."""
    return list(dict.fromkeys([p["name"] for p in spec["predictors"]]
                              + [outcome_source(reg, spec["outcome"]["name"])]
                              + list(spec.get("subgroups", [])) + reg.grouping["columns"]))


def protocol(cfg: dict[str, Any], seed: int, imputation: str | None = None) -> Protocol:
    """The protocol of the config's `engineer` section with the run's seed; `imputation` is the strategy the
    reviews' revisions chose (edm_ars.review.actions.imputation), the section's own when None."""
    return Protocol(test_fraction=cfg["test_fraction"], seed=seed, simple_below=cfg["simple_below"],
                    warn_above=cfg["warn_above"], min_analytic_n=cfg["min_analytic_n"],
                    min_retention=cfg["min_retention"], max_categories=cfg["max_categories"],
                    structural_above=cfg.get("structural_above", Protocol.structural_above),
                    imputation=imputation or cfg["imputation"],
                    leakage_corr=float(cfg.get("leakage_corr", LEAKAGE_CORR)))


def read_needed(path: str | Path, spec: dict[str, Any], reg: Registry, available: Iterable[str]) -> pd.DataFrame:
    """The columns of the raw data file the protocol reads for a specification (needed_columns), of those the
    data have (`available`: the data set's manifest columns); a missing subgroup or grouping column is left to
    prepare, which reports it. DataError naming the predictor and outcome columns the data lack."""
    from edm_ars.data.raw import read_raw

    available = set(available)
    absent = [c for c in [p["name"] for p in spec["predictors"]] + [outcome_source(reg, spec["outcome"]["name"])]
              if c not in available]
    if absent:
        raise DataError(f"{path}: columns named by the specification are not in the data: {absent}")
    return read_raw(path, usecols=[c for c in needed_columns(spec, reg) if c in available])


def prepare(raw: pd.DataFrame, spec: dict[str, Any], reg: Registry, layout: Layout | None,
            proto: Protocol, describe: bool = True) -> Prepared:
    """Run the DataEngineer protocol on a raw frame for a validated research specification. `describe`: also
    describe the analytic sample (Prepared.sample, Table 1); a re-preparation for a sensitivity analysis (another
    split, another imputation) has no use for it and leaves it out."""
    outcome = spec["outcome"]["name"]
    task = spec["task"]
    predictors = [p["name"] for p in spec["predictors"]]
    subgroups = list(spec.get("subgroups", []))
    fingerprint = reg.grouping["columns"]
    rec = reg.variable(outcome) or {}
    source = outcome_source(reg, outcome)
    missing = [c for c in predictors + [source] if c not in raw.columns]
    if missing:
        raise DataError(f"columns not in the data: {missing}")
    original_n = len(raw)
    warnings_: list[str] = []

    # 1-2. select, then recode sentinels before anything else (including the outcome filter)
    needed = list(dict.fromkeys(predictors + [source] + subgroups + fingerprint))
    needed = [c for c in needed if c in raw.columns]
    absent_sub = [c for c in subgroups if c not in raw.columns]
    if absent_sub:
        warnings_.append(f"subgroup attributes not in the data: {absent_sub}")
    data, recoded = recode_sentinels(raw[needed], reg)

    # 3. outcome; rows with a missing outcome leave (never imputed)
    y_all = build_outcome(data, reg, layout, outcome, task, spec["outcome"].get("positive_label"))
    keep = y_all.notna().to_numpy()
    data, y = data.loc[keep].reset_index(drop=True), y_all.loc[keep].reset_index(drop=True)
    analytic_n = len(y)
    retention = analytic_n / original_n if original_n else 0.0
    structural = is_structural(reg, outcome)
    if analytic_n < proto.min_analytic_n:
        raise DataError(f"outcome {outcome}: only {analytic_n} students have a valid value; at least "
                        f"{proto.min_analytic_n} analytic cases are required")
    if retention < proto.min_retention and not structural:
        raise DataError(f"outcome {outcome}: {analytic_n} of {original_n} students ({retention:.1%}) have a valid "
                        f"value, under the {proto.min_retention:.0%} retention floor, and the registry does not "
                        "record its missingness as structural")
    if structural:
        pct = rec.get("pct_missing")
        warnings_.append(
            f"Outcome {outcome} has structural missingness ({pct}% in full dataset); analytic sample represents "
            f"students with a valid {rec.get('label', outcome)} record. This is a population restriction, not "
            "random dropout. Findings generalize to this subpopulation only.")

    # predictors that the data suppress (all but entirely missing) carry no information
    kinds = variable_kinds(predictors, reg, data)
    dropped = [c for c in predictors if data[c].isna().mean() * 100 >= proto.drop_above]
    for c in dropped:
        warnings_.append(f"predictor {c} is {data[c].isna().mean():.0%} missing (suppressed) and was dropped")
        kinds.pop(c)
    if not kinds:
        raise DataError("no usable predictor is left after dropping suppressed variables")
    X = coerce_types(data, kinds)
    complete_case_n = int(X.notna().all(axis=1).sum())

    # 4. schools, then the split, before any encoding or imputation
    groups, school = reconstruct_schools(data, fingerprint, proto.min_clusters)
    use_groups = school["status"] == "success"
    if not use_groups and school["status"] != "no_grouping":
        warnings_.append(f"{reg.grouping['unit']} clusters: {school['status']} ({school['n_clusters']} clusters); "
                         f"the split is not grouped by {reg.grouping['unit']}")
    grouping = reg.grouping
    label = (f"reconstructed {grouping['unit']}" if grouping["reconstructed"]
             else f"{grouping['unit']} ({', '.join(grouping['columns'])})")
    train_idx, test_idx, split = split_train_test(y, groups if use_groups else None, task, proto.test_fraction,
                                                  proto.seed, group_label=label)
    split["school_reconstruction"] = school
    split["grouping"] = grouping
    split["clustered"] = bool(use_groups)
    if not use_groups:
        groups = pd.Series(np.arange(len(data)), index=data.index, name="pseudo_school_id")
    split["train_clusters"] = int(groups.iloc[train_idx].nunique())
    split["test_clusters"] = int(groups.iloc[test_idx].nunique())
    X_train, X_test = X.iloc[train_idx], X.iloc[test_idx]

    # 5. imputation fitted on training rows only
    imputer, notes = fit_imputer(X_train, kinds, proto)
    # the flagged missing shares are Table 1's missing-share column (sample.json) and missingness[var].flagged in
    # this report, not one warning per variable
    for note in notes:
        log.info(note)
    X_train_i, X_test_i = imputer.transform(X_train), imputer.transform(X_test)

    # 6. encoding fitted on training rows only
    encoder = fit_encoder(X_train_i, kinds | {ind: "continuous" for ind in imputer.indicators.values()}, proto)
    train_X, sources = encoder.transform(X_train_i)
    test_X, _ = encoder.transform(X_test_i)
    sources |= {ind: col for col, ind in imputer.indicators.items()}
    constant = [c for c in train_X.columns if train_X[c].nunique() <= 1]
    if constant:
        warnings_.append(f"constant columns removed after encoding: {constant}")
        train_X, test_X = train_X.drop(columns=constant), test_X.drop(columns=constant)
        sources = {k: v for k, v in sources.items() if k not in constant}
    # identical columns on the training rows (two variables missing for the same students give the same
    # missing-category indicator): the later copy carries no information and is removed, as decided on training rows
    copies = duplicated_columns(train_X)
    if copies:  # the Methods state it (data_report.duplicated_columns), so it is no data warning
        log.info("columns identical to an earlier column on the training rows removed after encoding: %s",
                 ", ".join(f"{c} (= {first})" for c, first in copies.items()))
        train_X, test_X = train_X.drop(columns=list(copies)), test_X.drop(columns=list(copies))
        sources = {k: v for k, v in sources.items() if k not in copies}
    train_X, test_X = train_X.reset_index(drop=True), test_X.reset_index(drop=True)
    train_y, test_y = y.iloc[train_idx].reset_index(drop=True), y.iloc[test_idx].reset_index(drop=True)

    # protected snapshot: original labels of the subgroup variables, test rows, before encoding
    present_sub = [c for c in subgroups if c in data.columns]
    test_protected = data.iloc[test_idx][present_sub].reset_index(drop=True)

    checks = data_checks(train_X, test_X, train_y, test_y, task, outcome, len(kinds), analytic_n, retention,
                         split["group_overlap"], proto, structural, rec.get("range"))
    analytic_missing = {c: round(float(X[c].isna().mean() * 100), 2) for c in kinds}
    flow = sample_flow(original_n, analytic_n, analytic_n, X, train_idx, test_idx, groups, bool(use_groups),
                       data[present_sub])
    described = list(kinds) + [c for c in present_sub if c not in kinds]
    sample = None if not describe else describe_sample(X, kinds, y, task, data[present_sub], flow,
                             labels={c: value_labels(reg, c) for c in described},
                             var_labels={c: (reg.variable(c) or {}).get("label") or c for c in described},
                             orders={c: codebook_order((reg.variable(c) or {}).get("values"),
                                                       layout.value_labels.get(c) if layout else None)
                                     for c in described})
    report = {
        "original_n": original_n,
        "analytic_n": analytic_n,
        "retention": round(retention, 4),
        "complete_case_n": complete_case_n,
        "train_n": len(train_y),
        "test_n": len(test_y),
        "outcome": outcome,
        "outcome_source": source,
        "task": task,
        "class_balance": ({str(int(k)): int(v) for k, v in y.value_counts().sort_index().items()}
                          if task == "binary_classification" else None),
        "outcome_summary": (None if task == "binary_classification" else
                            {"mean": float(y.mean()), "sd": float(y.std()), "min": float(y.min()),
                             "max": float(y.max())}),
        "missingness": {c: {"pct_missing": analytic_missing[c], "pct_missing_train": imputer.pct_missing[c],
                            "method": imputer.methods[c], "kind": kinds[c],
                            "flagged": imputer.pct_missing[c] > proto.warn_above,
                            "structural": imputer.pct_missing[c] > proto.structural_above,
                            **({"indicator": imputer.indicators[c]} if c in imputer.indicators else {})}
                        for c in kinds},
        "duplicated_columns": copies,
        "missing_thresholds": {"warn_above": proto.warn_above, "structural_above": proto.structural_above},
        "predictors_before": predictors,
        "predictors_dropped": dropped,
        "predictors_after": list(train_X.columns),
        "feature_sources": sources,
        "split": split,
        "checks": checks,
        "validation_passed": all(c["passed"] for c in checks),
        "warnings": warnings_,
        "sentinel_recoding": {"n_values_recoded": int(sum(recoded.values())), "by_variable": recoded,
                              "codes": sorted(int(c) for c in reg.sentinel_codes),
                              "labels": reg.sentinel_labels},
        "imputation_strategy": proto.imputation,
        "imputation_protocol": imputation_protocol(proto),
        "protected": present_sub,
        "thresholds": {"leakage_corr": proto.leakage_corr},
    }
    return Prepared(train_X, train_y, test_X, test_y, test_protected, groups.iloc[train_idx].reset_index(drop=True),
                    report, groups.iloc[test_idx].reset_index(drop=True), sample)
