"""Analyst (evaluation phase): held-out metrics with intervals, model selection, flags."""

from __future__ import annotations

from typing import Any

import numpy as np

from .conventions import LEAKAGE_AUC, LEAKAGE_R2, QUALITY_FLOOR  # noqa: F401 (QUALITY_FLOOR: re-exported)
from .metrics import HIGHER_IS_BETTER, PRIMARY, binary_metrics, bootstrap_counts, regression_metrics
from .models import COMPLEXITY, STACKING

ORDER_TEXT = "logistic/ridge < elastic net < random forest < XGBoost < MLP"


def overlaps(a: list[float], b: list[float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def evaluate_models(task: str, y: np.ndarray, predictions: dict[str, np.ndarray], *, n_resamples: int,
                    seed: int) -> tuple[dict[str, dict[str, Any]], dict[str, np.ndarray]]:
    """Metrics and 95% intervals for every model on the same bootstrap resamples (paired).

    Returns the per-model summary and the primary metric's bootstrap distribution per model."""
    y = np.asarray(y, dtype=float)
    fn = binary_metrics if task == "binary_classification" else regression_metrics
    counts = bootstrap_counts(len(y), n_resamples, seed)
    ones = np.ones((1, len(y)))
    primary = PRIMARY[task]
    out, dist = {}, {}
    for name, pred in predictions.items():
        pred = np.asarray(pred, dtype=float)
        point = {k: float(v[0]) for k, v in fn(y, pred, ones).items()}
        boot = fn(y, pred, counts)
        ci = {k: [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))] for k, v in boot.items()}
        out[name] = {"metrics": point, "ci": ci}
        dist[name] = boot[primary]
    return out, dist


def paired_difference(dist: dict[str, np.ndarray], a: str, b: str) -> dict[str, float]:
    """The bootstrap distribution of metric(a) - metric(b) on the same resamples."""
    diff = dist[a] - dist[b]
    return {"mean": float(diff.mean()), "ci": [float(np.percentile(diff, 2.5)), float(np.percentile(diff, 97.5))]}


def select_best(models: dict[str, dict[str, Any]], primary: str, dist: dict[str, np.ndarray] | None = None
                ) -> tuple[str, str, dict[str, Any]]:
    """The selected model, the rule as a sentence, and the evidence.

    Among single models: the highest primary metric; among those whose 95% intervals overlap the
    top one's, the simplest family wins. Stacking is selected only when it is clearly better: the
    95% interval of its paired bootstrap difference to the selected single model lies above zero."""
    sign = 1 if HIGHER_IS_BETTER[primary] else -1
    singles = [m for m in models if m != STACKING]
    top = max(singles, key=lambda m: sign * models[m]["metrics"][primary])
    tied = [m for m in singles if overlaps(models[m]["ci"][primary], models[top]["ci"][primary])]
    chosen = min(tied, key=lambda m: (COMPLEXITY.get(m, 99), -sign * models[m]["metrics"][primary]))
    evidence: dict[str, Any] = {"top_single": top, "overlapping_top": sorted(tied, key=lambda m: COMPLEXITY.get(m, 99))}
    if STACKING in models and dist is not None:
        diff = paired_difference(dist, STACKING, chosen)
        evidence["stacking_minus_selected"] = diff
        if sign * diff["ci"][0] > 0:
            chosen = STACKING
    rule = (f"highest held-out {primary.upper()}; among models whose 95% intervals overlap the top model's, the "
            f"simplest family is preferred ({ORDER_TEXT}); stacking only when the 95% interval of its paired "
            "bootstrap difference to that model lies above zero")
    return chosen, rule, evidence


def above_floor(models: dict[str, dict[str, Any]], primary: str) -> list[str]:
    """Models good enough to interpret (AUC >= 0.60 or R2 >= 0.05), stacking excluded."""
    floor = QUALITY_FLOOR[primary]
    return [m for m, r in models.items() if m != STACKING and r["metrics"][primary] >= floor]


def best_interpretable(models: dict[str, dict[str, Any]], primary: str, selected: str) -> str | None:
    """The model whose SHAP values are reported: the selected one unless it is stacking."""
    eligible = above_floor(models, primary)
    if selected in eligible:
        return selected
    if not eligible:
        return None
    sign = 1 if HIGHER_IS_BETTER[primary] else -1
    return max(eligible, key=lambda m: sign * models[m]["metrics"][primary])


def flags_for(task: str, models: dict[str, dict[str, Any]], leakage: dict[str, float] | None = None) -> list[str]:
    """The evaluation's flags: possible leakage (held-out AUC, or R2 for a regression task, above the ceiling of
    thresholds_for) and models under the quality floor."""
    flags = []
    primary = PRIMARY[task]
    ceilings = thresholds_for(task, leakage)
    for name, m in models.items():
        for metric, key in (("auc", "leakage_auc"), ("r2", "leakage_r2")):
            limit, value = ceilings[key], m["metrics"].get(metric)
            if limit is not None and isinstance(value, (int, float)) and value > limit:
                flags.append(f"possible_leakage: {name} {metric.upper()} {value:.3f} > {limit:g}")
        if m["metrics"][primary] < QUALITY_FLOOR[primary]:
            flags.append(f"below_quality_floor: {name} {primary.upper()} {m['metrics'][primary]:.3f} < "
                         f"{QUALITY_FLOOR[primary]} (not interpreted)")
    return flags


def thresholds_for(task: str, leakage: dict[str, float] | None = None) -> dict[str, float | None]:
    """The thresholds the evaluation applies (flags_for, above_floor), recorded in evaluation.json and
    results.json under `thresholds`: the quality floor of the task's primary metric, the leakage AUC ceiling
    (None for a regression task, which has no AUC) and the leakage R2 ceiling (None for a binary task).
    `leakage`: the configured ceilings {"leakage_auc", "leakage_r2"} (config analysis.*), else the conventions'."""
    leakage = leakage or {}
    binary = task == "binary_classification"
    return {"quality_floor": QUALITY_FLOOR[PRIMARY[task]],
            "leakage_auc": float(leakage.get("leakage_auc", LEAKAGE_AUC)) if binary else None,
            "leakage_r2": None if binary else float(leakage.get("leakage_r2", LEAKAGE_R2))}


def primary_metric(task: str) -> str:
    return PRIMARY[task]
