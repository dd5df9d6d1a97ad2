"""Model families and their tuning by grouped, stratified cross-validation on training rows only."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GroupKFold, ParameterSampler, StratifiedGroupKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from .errors import EdmArsError


@dataclass(frozen=True)
class Family:
    name: str
    label: str
    build: Callable[[str, int, dict[str, Any]], BaseEstimator]
    space: Callable[[str], dict[str, list[Any]]]
    n_candidates: int
    complexity: int  # lower is simpler; used to break ties between overlapping intervals


def _linear(task: str, seed: int, p: dict[str, Any]) -> BaseEstimator:
    if task == "binary_classification":
        model = LogisticRegression(C=p.get("C", 1.0), max_iter=2000, random_state=seed)
    else:
        model = Ridge(alpha=p.get("alpha", 1.0), random_state=seed)
    return make_pipeline(StandardScaler(), model)


def _linear_space(task: str) -> dict[str, list[Any]]:
    if task == "binary_classification":
        return {"C": [0.001, 0.01, 0.1, 1.0, 10.0]}
    return {"alpha": [0.1, 1.0, 10.0, 100.0, 1000.0]}


def _forest(task: str, seed: int, p: dict[str, Any]) -> BaseEstimator:
    cls = RandomForestClassifier if task == "binary_classification" else RandomForestRegressor
    return cls(n_estimators=p.get("n_estimators", 200), max_depth=p.get("max_depth"),
               min_samples_leaf=p.get("min_samples_leaf", 5), max_features=p.get("max_features", "sqrt"),
               n_jobs=1, random_state=seed)


def _forest_space(task: str) -> dict[str, list[Any]]:
    return {"n_estimators": [200], "max_depth": [8, 12, None], "min_samples_leaf": [5, 10, 20],
            "max_features": ["sqrt", 0.3]}


def _xgboost(task: str, seed: int, p: dict[str, Any]) -> BaseEstimator:
    import xgboost as xgb

    cls = xgb.XGBClassifier if task == "binary_classification" else xgb.XGBRegressor
    return cls(n_estimators=p.get("n_estimators", 300), learning_rate=p.get("learning_rate", 0.05),
               max_depth=p.get("max_depth", 4), subsample=p.get("subsample", 0.8),
               colsample_bytree=p.get("colsample_bytree", 0.8), min_child_weight=p.get("min_child_weight", 1),
               reg_lambda=p.get("reg_lambda", 1.0), tree_method="hist", n_jobs=1, random_state=seed)


def _xgboost_space(task: str) -> dict[str, list[Any]]:
    return {"n_estimators": [150, 300], "learning_rate": [0.03, 0.05, 0.1], "max_depth": [3, 4, 6],
            "subsample": [0.8, 1.0], "colsample_bytree": [0.6, 0.8], "min_child_weight": [1, 5]}


FAMILIES: dict[str, Family] = {
    "logistic": Family("logistic", "Logistic regression (L2)", _linear, _linear_space, 5, 1),
    "random_forest": Family("random_forest", "Random forest", _forest, _forest_space, 4, 3),
    "xgboost": Family("xgboost", "XGBoost", _xgboost, _xgboost_space, 6, 4),
}


def family(name: str) -> Family:
    if name not in FAMILIES:
        raise EdmArsError(f"unknown model family '{name}' (known: {sorted(FAMILIES)})")
    return FAMILIES[name]


def label_of(name: str, task: str) -> str:
    if name == "logistic" and task == "regression":
        return "Ridge regression"
    return family(name).label


def cv_splitter(task: str, groups: np.ndarray | None, n_folds: int, seed: int):
    if task == "binary_classification":
        return StratifiedGroupKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    return GroupKFold(n_splits=n_folds, shuffle=True, random_state=seed)


def tune(name: str, task: str, X: pd.DataFrame, y: pd.Series, groups: np.ndarray, *, seed: int,
         n_folds: int = 5, n_candidates: int | None = None) -> dict[str, Any]:
    """Budgeted random search over the family's space, scored by grouped CV; refit on all training rows."""
    fam = family(name)
    scoring = "roc_auc" if task == "binary_classification" else "r2"
    space = fam.space(task)
    size = int(np.prod([len(v) for v in space.values()]))
    budget = min(n_candidates or fam.n_candidates, size)
    candidates = list(ParameterSampler(space, n_iter=budget, random_state=seed))
    splitter = cv_splitter(task, groups, n_folds, seed)
    trials = []
    start = time.process_time()
    wall = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for params in candidates:
            scores = cross_val_score(fam.build(task, seed, params), X, y, groups=groups, cv=splitter,
                                     scoring=scoring, n_jobs=1)
            trials.append({"params": params, "cv_mean": float(scores.mean()), "cv_sd": float(scores.std())})
        best = max(trials, key=lambda t: t["cv_mean"])
        model = fam.build(task, seed, best["params"]).fit(X, y)
    return {
        "model": model,
        "family": name,
        "label": label_of(name, task),
        "best_params": best["params"],
        "cv_score": best["cv_mean"],
        "cv_metric": scoring,
        "n_candidates": len(candidates),
        "n_folds": n_folds,
        "trials": trials,
        "fit_cpu_seconds": time.process_time() - start,
        "fit_seconds": time.perf_counter() - wall,
    }


def predict(model: BaseEstimator, task: str, X: pd.DataFrame) -> np.ndarray:
    if task == "binary_classification":
        return model.predict_proba(X)[:, 1]
    return model.predict(X)
