"""Analyst (evaluation phase): held-out metrics with intervals, model selection, flags."""

from __future__ import annotations

from typing import Any

import numpy as np

from .metrics import HIGHER_IS_BETTER, PRIMARY, bootstrap_counts, evaluate
from .models import FAMILIES

LEAKAGE_AUC = 0.95


def overlaps(a: list[float], b: list[float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def select_best(models: dict[str, dict[str, Any]], primary: str) -> tuple[str, str]:
    """The best model by the primary metric; among models whose intervals overlap the best one's,
    the simplest family wins (logistic < random forest < XGBoost)."""
    sign = 1 if HIGHER_IS_BETTER[primary] else -1
    top = max(models, key=lambda m: sign * models[m]["metrics"][primary])
    tied = [m for m in models if overlaps(models[m]["ci"][primary], models[top]["ci"][primary])]
    simplest = min(tied, key=lambda m: (FAMILIES[m].complexity if m in FAMILIES else 99,
                                         -sign * models[m]["metrics"][primary]))
    rule = (f"highest held-out {primary.upper()}; among models whose 95% intervals overlap the top model's, "
            "the simplest family is preferred (logistic < random forest < XGBoost)")
    return simplest, rule


def evaluate_models(task: str, y_test: np.ndarray, predictions: dict[str, np.ndarray], *, n_resamples: int,
                    seed: int) -> dict[str, dict[str, Any]]:
    """Metrics and intervals for every model, on the same bootstrap resamples (paired)."""
    counts = bootstrap_counts(len(y_test), n_resamples, seed)
    out = {}
    for name, pred in predictions.items():
        point, ci = evaluate(task, y_test, pred, counts=counts)
        out[name] = {"metrics": point, "ci": ci}
    return out


def flags_for(task: str, models: dict[str, dict[str, Any]]) -> list[str]:
    flags = []
    if task == "binary_classification":
        for name, m in models.items():
            if m["metrics"]["auc"] > LEAKAGE_AUC:
                flags.append(f"possible_leakage: {name} AUC {m['metrics']['auc']:.3f} > {LEAKAGE_AUC}")
    return flags


def primary_metric(task: str) -> str:
    return PRIMARY[task]
