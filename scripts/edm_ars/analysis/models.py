"""Model families and their tuning on training rows only.

Tuning is a budgeted random search raced over grouped, stratified folds (successive halving over
folds): every candidate is scored on the first folds, only the best fraction goes on to the rest,
and the winner is the candidate with the best mean over all folds. The search keeps the winner's
out-of-fold predictions, so stacking is built from them without refitting any base model.
XGBoost stops early on each validation fold; the MLP stops early on an internal validation split.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet, LogisticRegression, Ridge
from sklearn.metrics import r2_score, roc_auc_score
from sklearn.model_selection import GroupKFold, ParameterSampler, StratifiedGroupKFold
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from edm_ars.core.conventions import BINARY, STACKING  # noqa: F401 (STACKING: re-exported)
from edm_ars.core.errors import EdmArsError, FitDiverged, SingleClass, TooFewGroups

log = logging.getLogger("edm_ars")


@dataclass(frozen=True)
class Family:
    name: str
    label: str
    build: Callable[[str, int, dict[str, Any]], BaseEstimator]
    space: Callable[[str], dict[str, list[Any]]]
    n_candidates: int
    complexity: int  # lower is simpler: breaks ties between models whose intervals overlap
    early_stopping: bool = False


# ---- builders -------------------------------------------------------------------------------


def _logistic(task: str, seed: int, p: dict[str, Any]) -> BaseEstimator:
    if task == BINARY:
        return make_pipeline(StandardScaler(), LogisticRegression(C=p.get("C", 1.0), max_iter=2000))
    return make_pipeline(StandardScaler(), Ridge(alpha=p.get("alpha", 1.0)))


def _logistic_space(task: str) -> dict[str, list[Any]]:
    if task == BINARY:
        return {"C": [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 10.0]}
    return {"alpha": [0.1, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0]}


def _elastic_net(task: str, seed: int, p: dict[str, Any]) -> BaseEstimator:
    if task == BINARY:
        model = LogisticRegression(solver="saga", l1_ratio=p.get("l1_ratio", 0.5), C=p.get("C", 1.0),
                                   max_iter=300, tol=1e-3, random_state=seed)
    else:
        model = ElasticNet(alpha=p.get("alpha", 0.01), l1_ratio=p.get("l1_ratio", 0.5), max_iter=5000,
                           random_state=seed)
    return make_pipeline(StandardScaler(), model)


def _elastic_net_space(task: str) -> dict[str, list[Any]]:
    if task == BINARY:
        return {"C": [0.003, 0.01, 0.03, 0.1, 0.3, 1.0], "l1_ratio": [0.1, 0.5, 0.7, 0.9]}
    return {"alpha": [0.001, 0.003, 0.01, 0.03, 0.1, 0.3], "l1_ratio": [0.1, 0.5, 0.7, 0.9]}


def _forest(task: str, seed: int, p: dict[str, Any]) -> BaseEstimator:
    cls = RandomForestClassifier if task == BINARY else RandomForestRegressor
    return cls(n_estimators=p.get("n_estimators", 100), max_depth=p.get("max_depth"),
               min_samples_leaf=p.get("min_samples_leaf", 5), max_features=p.get("max_features", "sqrt"),
               max_samples=p.get("max_samples", 0.5), n_jobs=1, random_state=seed)


def _forest_space(task: str) -> dict[str, list[Any]]:
    return {"max_depth": [8, 12, 16, None], "min_samples_leaf": [2, 5, 10, 20],
            "max_features": ["sqrt", 0.2, 0.33]}


def _xgboost(task: str, seed: int, p: dict[str, Any]) -> BaseEstimator:
    import xgboost as xgb

    cls = xgb.XGBClassifier if task == BINARY else xgb.XGBRegressor
    kwargs = dict(n_estimators=p.get("n_estimators", 1000), learning_rate=p.get("learning_rate", 0.05),
                  max_depth=p.get("max_depth", 4), subsample=p.get("subsample", 0.8),
                  colsample_bytree=p.get("colsample_bytree", 0.8), min_child_weight=p.get("min_child_weight", 1),
                  reg_lambda=p.get("reg_lambda", 1.0), tree_method="hist", n_jobs=1, random_state=seed,
                  eval_metric="auc" if task == BINARY else "rmse")
    if p.get("early_stopping_rounds"):
        kwargs["early_stopping_rounds"] = p["early_stopping_rounds"]
    return cls(**kwargs)


def _xgboost_space(task: str) -> dict[str, list[Any]]:
    return {"learning_rate": [0.05, 0.1], "max_depth": [2, 3, 4, 6], "subsample": [0.7, 0.9],
            "colsample_bytree": [0.5, 0.8], "min_child_weight": [1, 5, 20], "reg_lambda": [1.0, 10.0]}


def _mlp(task: str, seed: int, p: dict[str, Any]) -> BaseEstimator:
    cls = MLPClassifier if task == BINARY else MLPRegressor
    net = make_pipeline(StandardScaler(), cls(
        hidden_layer_sizes=tuple(p.get("hidden_layer_sizes", (64,))), alpha=p.get("alpha", 1e-3),
        learning_rate_init=p.get("learning_rate_init", 1e-3), batch_size=512, max_iter=100, early_stopping=True,
        validation_fraction=0.1, n_iter_no_change=5, random_state=seed))
    if task == BINARY:
        return net
    # an outcome on a scale far from 0 (test scores in the hundreds) would need many epochs just to reach its
    # mean from small initial weights: the network learns the standardized outcome instead
    return TransformedTargetRegressor(regressor=net, transformer=StandardScaler())


def _mlp_space(task: str) -> dict[str, list[Any]]:
    return {"hidden_layer_sizes": [(32,), (64,), (64, 32)], "alpha": [1e-4, 1e-3, 1e-2, 1e-1],
            "learning_rate_init": [1e-3, 3e-3]}


FAMILIES: dict[str, Family] = {
    "logistic": Family("logistic", "Logistic regression (L2)", _logistic, _logistic_space, 8, 1),
    "elastic_net": Family("elastic_net", "Elastic net", _elastic_net, _elastic_net_space, 8, 2),
    "random_forest": Family("random_forest", "Random forest", _forest, _forest_space, 6, 3),
    "xgboost": Family("xgboost", "XGBoost", _xgboost, _xgboost_space, 8, 4, early_stopping=True),
    "mlp": Family("mlp", "Multilayer perceptron", _mlp, _mlp_space, 4, 5),
}
STACKING_COMPLEXITY = 6
COMPLEXITY = {name: f.complexity for name, f in FAMILIES.items()} | {STACKING: STACKING_COMPLEXITY}


def family(name: str) -> Family:
    if name not in FAMILIES:
        raise EdmArsError(f"unknown model family '{name}' (known: {sorted(FAMILIES) + [STACKING]})")
    return FAMILIES[name]


def label_of(name: str, task: str) -> str:
    if name == STACKING:
        return "Stacking"
    if name == "logistic" and task != BINARY:
        return "Ridge regression"
    return family(name).label


# ---- cross-validation -------------------------------------------------------------------------


def cv_folds(task: str, y: np.ndarray, groups: np.ndarray, n_folds: int, seed: int) -> list[tuple[np.ndarray, ...]]:
    """Folds consistent with the train/test split: stratified (classification) and grouped by school.
    TooFewGroups when there are fewer groups than folds."""
    n_groups = len(np.unique(groups))
    if n_groups < n_folds:
        raise TooFewGroups(f"{n_folds}-fold cross-validation grouped by school needs {n_folds} schools; the training "
                           f"rows have {n_groups}")
    idx = np.zeros(len(y))
    if task == BINARY:
        splitter = StratifiedGroupKFold(n_splits=n_folds, shuffle=True, random_state=seed)
        return list(splitter.split(idx, y, groups))
    return list(GroupKFold(n_splits=n_folds, shuffle=True, random_state=seed).split(idx, y, groups))


def score(task: str, y: np.ndarray, pred: np.ndarray) -> float:
    """AUC or R2 of predictions; FitDiverged when a prediction is not finite."""
    pred = np.asarray(pred)
    if not np.all(np.isfinite(pred)):
        raise FitDiverged(f"{int(np.sum(~np.isfinite(pred)))} of {pred.size} predictions are not finite "
                          "(the fit diverged)")
    return float(roc_auc_score(y, pred) if task == BINARY else r2_score(y, pred))


def fit(name: str, task: str, seed: int, params: dict[str, Any], X: pd.DataFrame, y: np.ndarray,
        **fit_params: Any) -> BaseEstimator:
    """A model of family `name` with these parameters, fitted on (X, y). SingleClass when a classifier's
    training rows hold one outcome class."""
    if task == BINARY and len(np.unique(y)) < 2:
        raise SingleClass(f"{label_of(name, task)}: the {len(y)} training rows hold one outcome class only "
                          f"({np.unique(y).tolist()}), so no classifier can be fitted")
    if isinstance(params.get("max_samples"), int) and params["max_samples"] > len(y):
        # a random forest's rows per tree (the large-data policy) refitted on fewer rows (a stability resample)
        params = params | {"max_samples": None}
    model = family(name).build(task, seed, params).fit(X, y, **fit_params)
    return keep_range(model, task, y)


# ---- predictions within the training outcome's range -------------------------------------------------------------

#: the attribute of a fitted regression (model, stacking, baseline) holding the observed (low, high) of its training
#: outcome; every regression prediction is clipped to it (a fit made before it was recorded has none: not clipped)
RANGE_ATTR = "outcome_range_"


def keep_range(model: Any, task: str, y: Any) -> Any:
    """Record on a fitted regression the observed range of the outcome it was fitted on; returns the model."""
    if task != BINARY:
        v = np.asarray(y, dtype=float)
        v = v[np.isfinite(v)]
        if v.size:
            setattr(model, RANGE_ATTR, (float(v.min()), float(v.max())))
    return model


def outcome_range(model: Any) -> tuple[float, float] | None:
    """The (low, high) a fitted regression's predictions are kept within, or None."""
    rng = getattr(model, RANGE_ATTR, None)
    return None if rng is None else (float(rng[0]), float(rng[1]))


def within_range(pred: Any, rng: tuple[float, float] | None) -> tuple[np.ndarray, int]:
    """Predictions clipped to the range and how many were outside it. A non-finite prediction is left as it is, so
    that :func:`score` still reports a diverged fit. The predictions keep their dtype (XGBoost's float32)."""
    pred = np.asarray(pred)
    if not np.issubdtype(pred.dtype, np.floating):
        pred = pred.astype(float)
    if rng is None:
        return pred, 0
    finite = np.isfinite(pred)
    outside = finite & ((pred < rng[0]) | (pred > rng[1]))
    return np.where(finite, np.clip(pred, rng[0], rng[1]), pred), int(outside.sum())


def predict(model: Any, task: str, X: pd.DataFrame, *, clip: bool = True) -> np.ndarray:
    """Predicted probabilities (binary) or values (regression), the latter kept within the observed range of the
    training outcome (clip=False: as the model gives them)."""
    if task == BINARY:
        return model.predict_proba(X)[:, 1]
    pred = model.predict(X)
    return within_range(pred, outcome_range(model))[0] if clip else np.asarray(pred)


def _fit_fold(fam: Family, task: str, seed: int, params: dict[str, Any], X: pd.DataFrame, y: np.ndarray,
              train: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
    """Fit on the fold's training rows and predict its validation rows (with early stopping for XGBoost)."""
    Xt, yt, Xv, yv = X.iloc[train], y[train], X.iloc[valid], y[valid]
    info: dict[str, Any] = {}
    if fam.early_stopping:
        model = fit(fam.name, task, seed, params | {"n_estimators": 2000, "early_stopping_rounds": 30}, Xt, yt,
                    eval_set=[(Xv, yv)], verbose=False)
        info["best_iteration"] = int(model.best_iteration)
    else:
        model = fit(fam.name, task, seed, params, Xt, yt)
    return predict(model, task, Xv), info


def _log_fit_time(name: str, cpu: float, wall: float) -> None:
    """A fit's wall and CPU seconds go to the job's log, never into its record: artifacts hold no timings, so two
    runs of the same inputs give the same bytes (Snakemake's benchmarks/ files keep each job's times)."""
    log.info("%s: fitted in %.1f s (%.1f CPU s)", name, time.perf_counter() - wall, time.process_time() - cpu)


def tune(name: str, task: str, X: pd.DataFrame, y: pd.Series | np.ndarray, groups: np.ndarray, *, seed: int,
         n_folds: int = 5, n_candidates: int | None = None, race_folds: int = 2, keep: float = 1 / 3
         ) -> dict[str, Any]:
    """Budgeted random search raced over folds; refit the winner on all training rows.

    Returns the fitted model, its parameters, the mean CV score, the winner's out-of-fold
    predictions (for stacking) and the record of every trial."""
    fam = family(name)
    y = np.asarray(y, dtype=float)
    space = fam.space(task)
    size = math.prod(len(v) for v in space.values())
    budget = min(n_candidates or fam.n_candidates, size)
    candidates = list(ParameterSampler(space, n_iter=budget, random_state=seed))
    folds = cv_folds(task, y, groups, n_folds, seed)
    cpu, wall = time.process_time(), time.perf_counter()
    oof = {i: np.full(len(y), np.nan) for i in range(len(candidates))}
    scores: dict[int, list[float]] = {i: [] for i in range(len(candidates))}
    extra: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(candidates))}

    def run(i: int, fold_ids: range) -> None:
        for f in fold_ids:
            train, valid = folds[f]
            pred, info = _fit_fold(fam, task, seed, candidates[i], X, y, train, valid)
            oof[i][valid] = pred
            scores[i].append(score(task, y[valid], pred))
            extra[i].append(info)

    first = min(race_folds, n_folds)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        for i in range(len(candidates)):
            run(i, range(first))
        ranked = sorted(scores, key=lambda i: -np.mean(scores[i]))
        survivors = ranked[:max(2, math.ceil(len(candidates) * keep))] if len(candidates) > 2 else ranked
        for i in survivors:
            run(i, range(first, n_folds))
        best = max(survivors, key=lambda i: np.mean(scores[i]))
        params = dict(candidates[best])
        if fam.early_stopping:
            params["n_estimators"] = int(np.mean([e["best_iteration"] for e in extra[best]]) + 1)
        model = fit(name, task, seed, params, X, y)
    trials = [{"params": candidates[i], "cv_scores": scores[i], "cv_mean": float(np.mean(scores[i])),
               "n_folds": len(scores[i]), "survived": i in survivors} for i in range(len(candidates))]
    _log_fit_time(name, cpu, wall)
    return {
        "model": model,
        "family": name,
        "label": label_of(name, task),
        "best_params": params,
        "cv_score": float(np.mean(scores[best])),
        "cv_sd": float(np.std(scores[best])),
        "cv_metric": "auc" if task == BINARY else "r2",
        "oof": oof[best],
        "n_candidates": len(candidates),
        "n_folds": n_folds,
        "n_fold_fits": int(sum(len(s) for s in scores.values())),
        "search": f"random search of {len(candidates)} candidates raced over folds: all on {first} folds, the best "
                  f"{len(survivors)} on all {n_folds}" + ("; early stopping on each validation fold"
                                                          if fam.early_stopping else ""),
        "trials": trials,
        "convergence_warnings": sum(1 for w in caught if issubclass(w.category, ConvergenceWarning)),
    }


# ---- stacking ---------------------------------------------------------------------------------


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


class StackedModel:
    """A meta-learner over base models' predictions; base models are not stored or refitted here."""

    def __init__(self, task: str, base_names: list[str], meta: BaseEstimator):
        self.task, self.base_names, self.meta = task, list(base_names), meta

    def _features(self, base_predictions: dict[str, np.ndarray]) -> np.ndarray:
        cols = [np.asarray(base_predictions[n], dtype=float) for n in self.base_names]
        Z = np.column_stack(cols)
        return _logit(Z) if self.task == BINARY else Z

    def predict_from_base(self, base_predictions: dict[str, np.ndarray], *, clip: bool = True) -> np.ndarray:
        """The meta-learner's predictions; a regression's kept within its training outcome's range (unless clip is
        False)."""
        Z = self._features(base_predictions)
        if self.task == BINARY:
            return self.meta.predict_proba(Z)[:, 1]
        pred = self.meta.predict(Z)
        return within_range(pred, outcome_range(self))[0] if clip else np.asarray(pred)


def fit_stacking(task: str, oof: dict[str, np.ndarray], y: np.ndarray, groups: np.ndarray, *, seed: int,
                 n_folds: int = 5) -> dict[str, Any]:
    """Fit the meta-learner on the base models' out-of-fold predictions; score it by CV on them."""
    y = np.asarray(y, dtype=float)
    names = sorted(oof)
    if len(names) < 2:
        raise EdmArsError(f"stacking needs at least two base models, got {names}")
    cpu, wall = time.process_time(), time.perf_counter()
    meta_of = (lambda: LogisticRegression(C=1.0, max_iter=1000)) if task == BINARY else (lambda: Ridge(alpha=1.0))
    stack = StackedModel(task, names, meta_of())
    Z = stack._features(oof)
    scores = []
    for train, valid in cv_folds(task, y, groups, n_folds, seed):
        meta = meta_of().fit(Z[train], y[train])
        if task == BINARY:
            pred = meta.predict_proba(Z[valid])[:, 1]
        else:
            pred = within_range(meta.predict(Z[valid]), outcome_range(keep_range(meta, task, y[train])))[0]
        scores.append(score(task, y[valid], pred))
    stack.meta = meta_of().fit(Z, y)
    keep_range(stack, task, y)
    coefs = np.ravel(stack.meta.coef_)
    _log_fit_time(STACKING, cpu, wall)
    return {
        "model": stack,
        "family": STACKING,
        "label": label_of(STACKING, task),
        "best_params": {"meta_learner": "logistic regression on logit base predictions" if task == BINARY
                        else "ridge regression on base predictions", "base_models": names},
        "meta_weights": {n: float(c) for n, c in zip(names, coefs, strict=True)},
        "cv_score": float(np.mean(scores)),
        "cv_sd": float(np.std(scores)),
        "cv_metric": "auc" if task == BINARY else "r2",
        "search": "meta-learner fitted on the base models' out-of-fold predictions (no base model refitted)",
    }


#: the modules that held the classes of fitted models before the package was laid out by stage (2026-11-27); a fit
#: written then names them, and its classes are found in their new modules
MOVED_MODULES = {"edm_ars.models": "edm_ars.analysis.models", "edm_ars.baselines": "edm_ars.analysis.baselines"}


def load_fitted(path: str) -> Any:
    """A fitted model, or the baselines, as fit_model, fit_stacking and fit_baselines wrote it (joblib). A run made
    before the stage layout keeps its fits when it goes on (code changes rerun nothing): they load too."""
    import importlib
    import sys

    import joblib

    for old, new in MOVED_MODULES.items():
        if old not in sys.modules:
            sys.modules[old] = importlib.import_module(new)
    return joblib.load(path)
