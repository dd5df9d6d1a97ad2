"""Steps 5-6 of the DataEngineer (edm_ars.data.engineer): the predictors' kinds and types, imputation per
variable and one-hot encoding, each fitted on training rows only, the imputation protocol in words, and the
columns that repeat an earlier one after encoding.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.experimental import enable_iterative_imputer  # noqa: F401  (enables IterativeImputer)
from sklearn.impute import IterativeImputer

from edm_ars.core.conventions import level_slug
from edm_ars.core.errors import DataError
from edm_ars.data.protocol import Protocol
from edm_ars.data.registry import Registry

MISSING_CATEGORY = "Missing (imputation category)"


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
