"""Baselines: the simple models every model of the battery is compared with, fitted on the same training rows.

Three baselines, each fitted without tuning and evaluated like every other model (same test rows, same bootstrap
resamples); none of them can be the selected model, enter stacking, SHAP or the fairness audit:

- ``baseline_constant``: the outcome's training base rate (binary) or mean (continuous), predicted for everyone.
  Its AUC is 0.5 by construction (every test student gets the same score) and its R2 is at most about zero.
- ``baseline_prior``: a model on one predictor, the strongest prior-achievement measure the registry declares
  (``dataset.prior_achievement``: source variables; the strongest of those present by univariate association on
  the training rows), else the single predictor with the strongest training-set association.
- ``baseline_core``: a plain (unpenalised) logistic or linear regression on the ``k`` predictors (default 5) with
  the strongest univariate association with the outcome on the training rows.

The univariate association of a predictor is the largest absolute Pearson correlation of its encoded columns with
the outcome (for a binary outcome: the point-biserial correlation), on training rows only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from edm_ars.analysis.models import keep_range, outcome_range, within_range
from edm_ars.core.conventions import BINARY

CONSTANT, PRIOR, CORE = "baseline_constant", "baseline_prior", "baseline_core"
BASELINES = (CONSTANT, PRIOR, CORE)
CORE_K = 5


def is_baseline(name: str) -> bool:
    return name in BASELINES


class ConstantModel:
    """Predicts one value for everyone: the training base rate (a probability) or mean."""

    def __init__(self, value: float):
        self.value = float(value)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return np.full(len(X), self.value)


class ColumnsModel:
    """A fitted estimator on named columns of the prepared predictors."""

    def __init__(self, columns: list[str], estimator: Any):
        self.columns, self.estimator = list(columns), estimator


def predict(model: Any, task: str, X: pd.DataFrame, *, clip: bool = True) -> np.ndarray:
    """A baseline's predictions; a regression's kept within its training outcome's range like every model's
    (edm_ars.analysis.models.within_range; clip=False: as the estimator gives them)."""
    if isinstance(model, ConstantModel):
        return model.predict(X)
    Z = X[model.columns]
    if task == BINARY:
        return model.estimator.predict_proba(Z)[:, 1]
    pred = model.estimator.predict(Z)
    return within_range(pred, outcome_range(model))[0] if clip else np.asarray(pred)


def associations(X: pd.DataFrame, y: np.ndarray) -> dict[str, float]:
    """|Pearson r| of every column with the outcome (0 for a constant column)."""
    y = np.asarray(y, dtype=float)
    Xv = X.to_numpy(dtype=float)
    xc = Xv - Xv.mean(axis=0)
    yc = y - y.mean()
    denom = np.sqrt((xc ** 2).sum(axis=0) * (yc ** 2).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(denom > 0, (xc * yc[:, None]).sum(axis=0) / np.where(denom > 0, denom, 1), 0.0)
    return {c: float(abs(v)) for c, v in zip(X.columns, r, strict=True)}


def by_source(columns: list[str], sources: dict[str, str]) -> dict[str, list[str]]:
    """Source variable -> its encoded columns (a column without a recorded source is its own source)."""
    out: dict[str, list[str]] = {}
    for c in columns:
        out.setdefault(sources.get(c, c), []).append(c)
    return out


def _plain(task: str) -> Any:
    if task == BINARY:
        return make_pipeline(StandardScaler(), LogisticRegression(C=np.inf, max_iter=5000))
    return make_pipeline(StandardScaler(), LinearRegression())


def fit_baselines(task: str, X: pd.DataFrame, y: np.ndarray, sources: dict[str, str], *,
                  prior: list[str] | None = None, k: int = CORE_K, labels: dict[str, str] | None = None
                  ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The three baselines fitted on (X, y): the models by name, and what each is (label, predictors, how chosen)."""
    y = np.asarray(y, dtype=float)
    labels = labels or {}
    assoc = associations(X, y)
    groups = by_source(list(X.columns), sources)
    strength = {v: max(assoc[c] for c in cols) for v, cols in groups.items()}
    ranked = sorted(strength, key=lambda v: (-strength[v], v))
    models: dict[str, Any] = {}
    meta: dict[str, dict[str, Any]] = {}
    value = float(y.mean())
    models[CONSTANT] = keep_range(ConstantModel(value), task, y)  # the mean lies within the range: never clipped
    meta[CONSTANT] = {"label": "Base-rate baseline" if task == BINARY else "Training-mean baseline",
                      "kind": "constant", "predictors": [], "columns": [], "value": value,
                      "chosen_by": "training_rows"}
    declared = [v for v in (prior or []) if v in groups]
    if declared:
        var = max(declared, key=lambda v: (strength[v], -declared.index(v)))
        how = "registry"
        label = "Prior-achievement baseline"
    else:
        var = ranked[0] if ranked else None
        how = "training_association"
        label = "Single-predictor baseline"
    if var is not None:
        cols = groups[var]
        models[PRIOR] = keep_range(ColumnsModel(cols, _plain(task).fit(X[cols], y)), task, y)
        meta[PRIOR] = {"label": label, "kind": "one_predictor", "predictors": [var], "columns": cols,
                       "predictor_labels": [labels.get(var, var)], "chosen_by": how,
                       "declared": list(prior or []), "association": strength[var]}
    core = ranked[:k]
    if core:
        cols = [c for v in core for c in groups[v]]
        models[CORE] = keep_range(ColumnsModel(cols, _plain(task).fit(X[cols], y)), task, y)
        meta[CORE] = {"label": "Core logistic baseline" if task == BINARY else "Core linear baseline",
                      "kind": "core_linear", "predictors": core, "columns": cols, "k": k,
                      "predictor_labels": [labels.get(v, v) for v in core], "chosen_by": "training_association",
                      "association": {v: strength[v] for v in core}}
    return models, meta
