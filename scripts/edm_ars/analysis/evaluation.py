"""Analyst (evaluation phase): held-out metrics with intervals, model selection, flags."""

from __future__ import annotations

from typing import Any

import numpy as np

from edm_ars.analysis.metrics import (
    HIGHER_IS_BETTER,
    PRIMARY,
    binary_metrics,
    bootstrap_counts,
    cluster_bootstrap_counts,
    over_resamples,
    regression_metrics,
)
from edm_ars.analysis.models import COMPLEXITY, STACKING
from edm_ars.core.conventions import LEAKAGE_AUC, LEAKAGE_R2, QUALITY_FLOOR  # noqa: F401 (QUALITY_FLOOR: re-exported)

#: the level of the paired comparisons (two-sided, after the Holm adjustment over the selected model's comparisons)
ALPHA = 0.05

ORDER_TEXT = "logistic/ridge < elastic net < random forest < XGBoost < MLP"


def overlaps(a: list[float], b: list[float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def split_grouped(split: dict[str, Any]) -> bool:
    """Whether a split's groups (data_report.json:split; the test_groups file) are more than rows: clusters, or the
    units of repeated records (`grouped`, written since the DataEngineer groups units; `clustered` in older
    reports). The bootstrap then resamples them whole."""
    return bool(split.get("grouped", split.get("clustered")))


def resample_counts(n: int, n_resamples: int, seed: int, groups: np.ndarray | None = None,
                    clustered: bool = False) -> tuple[np.ndarray, dict[str, Any]]:
    """The (B x n) bootstrap count matrix every model is evaluated on, and how it was drawn.

    When the split kept clusters (schools) together (`clustered`, data_report.json:split.clustered) the test
    clusters are resampled whole (metrics.cluster_bootstrap_counts), so the intervals reflect that students of a
    school share errors; otherwise the test rows are resampled (metrics.bootstrap_counts)."""
    if clustered and groups is not None and len(groups) == n:
        k = int(len(np.unique(np.asarray(groups))))
        return cluster_bootstrap_counts(groups, n_resamples, seed), {"interval_method": "cluster_bootstrap",
                                                                     "test_clusters": k}
    k = int(len(np.unique(np.asarray(groups)))) if groups is not None and len(groups) == n else None
    return bootstrap_counts(n, n_resamples, seed), {"interval_method": "bootstrap", "test_clusters": k}


def evaluate_models(task: str, y: np.ndarray, predictions: dict[str, np.ndarray], *, n_resamples: int,
                    seed: int, counts: np.ndarray | None = None
                    ) -> tuple[dict[str, dict[str, Any]], dict[str, np.ndarray]]:
    """Metrics and 95% intervals for every model on the same bootstrap resamples (paired): `counts` (B x n, from
    resample_counts) when given, else an ordinary bootstrap of the rows.

    Returns the per-model summary and the primary metric's bootstrap distribution per model."""
    y = np.asarray(y, dtype=float)
    fn = binary_metrics if task == "binary_classification" else regression_metrics
    counts = bootstrap_counts(len(y), n_resamples, seed) if counts is None else counts
    ones = np.ones((1, len(y)))
    primary = PRIMARY[task]
    out, dist = {}, {}
    for name, pred in predictions.items():
        pred = np.asarray(pred, dtype=float)
        point = {k: float(v[0]) for k, v in fn(y, pred, ones).items()}
        boot = over_resamples(fn, y, pred, counts)
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

    Among single models: the highest primary metric; among the models tied with that top model (the 95% interval
    of their paired bootstrap difference to it contains zero), the simplest family wins. Stacking is selected only
    when it is clearly better: the 95% interval of its paired bootstrap difference to the selected single model
    lies above zero. Without bootstrap distributions (`dist`), ties fall back to overlapping 95% intervals.

    The evidence keeps the key `overlapping_top` (read by the Writer and the Critic) for the models tied with the
    top one, whichever test made them tied (`tie_test`)."""
    sign = 1 if HIGHER_IS_BETTER[primary] else -1
    singles = [m for m in models if m != STACKING]
    top = max(singles, key=lambda m: sign * models[m]["metrics"][primary])
    if dist is not None and all(m in dist for m in singles):
        top_minus = {m: paired_difference(dist, top, m) for m in singles if m != top}
        tied = [top] + [m for m in singles if m != top and top_minus[m]["ci"][0] <= 0 <= top_minus[m]["ci"][1]]
        test = "paired"
    else:
        top_minus = {}
        tied = [m for m in singles if overlaps(models[m]["ci"][primary], models[top]["ci"][primary])]
        test = "intervals"
    chosen = min(tied, key=lambda m: (COMPLEXITY.get(m, 99), -sign * models[m]["metrics"][primary]))
    evidence: dict[str, Any] = {"top_single": top, "overlapping_top": sorted(tied, key=lambda m: COMPLEXITY.get(m, 99)),
                                "tie_test": test}
    if top_minus:
        evidence["top_minus"] = top_minus
    if STACKING in models and dist is not None:
        diff = paired_difference(dist, STACKING, chosen)
        evidence["stacking_minus_selected"] = diff
        if sign * diff["ci"][0] > 0:
            chosen = STACKING
    rule = (f"highest held-out {primary.upper()}; among the models tied with the top model (the 95% interval of "
            f"their paired bootstrap difference to it contains zero), the simplest family is preferred ({ORDER_TEXT}); "
            "stacking only when the 95% interval of its paired bootstrap difference to that model lies above zero")
    return chosen, rule, evidence


def bootstrap_p(diff: np.ndarray) -> float:
    """Two-sided bootstrap p-value of a paired difference: twice the smaller share of resamples on either side
    of zero, each share counted as (1 + resamples at or beyond zero) / (B + 1), capped at 1."""
    diff = np.asarray(diff, dtype=float)
    b = len(diff)
    below = (1 + int(np.sum(diff <= 0))) / (b + 1)
    above = (1 + int(np.sum(diff >= 0))) / (b + 1)
    return float(min(1.0, 2 * min(below, above)))


def holm(p: list[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the order given."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out = [0.0] * len(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


def paired_comparisons(dist: dict[str, np.ndarray], selected: str, primary: str, *, alpha: float = ALPHA,
                       extra: list[tuple[str, str]] = ()) -> list[dict[str, Any]]:
    """The selected model against every other model on the same bootstrap resamples: the paired difference of the
    primary metric (selected - other) with its 95% percentile interval, a two-sided bootstrap p-value
    (bootstrap_p) and the Holm-adjusted p over this family of comparisons. `verdict` reads the comparison from
    the selected model's side: better or worse when the Holm-adjusted p is under `alpha` and the interval
    excludes zero, else indistinct (on a lower-is-better metric, a negative difference is better).

    `extra` pairs (a, b) are recorded too, outside the Holm family (p_holm None): the selection rule's
    comparisons of the top single model with the models tied to it."""
    sign = 1 if HIGHER_IS_BETTER[primary] else -1
    others = [m for m in dist if m != selected]
    recs = []
    for b in others:
        d = dist[selected] - dist[b]
        recs.append({"a": selected, "b": b, "metric": primary, "mean": float(d.mean()),
                     "ci": [float(np.percentile(d, 2.5)), float(np.percentile(d, 97.5))], "p": bootstrap_p(d),
                     "family": "selected"})
    for rec, ph in zip(recs, holm([r["p"] for r in recs]), strict=True):
        rec["p_holm"] = ph
    for a, b in extra:
        if a == b or selected in (a, b) or a not in dist or b not in dist:
            continue
        d = dist[a] - dist[b]
        recs.append({"a": a, "b": b, "metric": primary, "mean": float(d.mean()),
                     "ci": [float(np.percentile(d, 2.5)), float(np.percentile(d, 97.5))], "p": bootstrap_p(d),
                     "p_holm": None, "family": "selection"})
    for rec in recs:
        rec["verdict"] = comparison_verdict(rec["ci"], rec["p_holm"], sign, alpha)
    return recs


def comparison_verdict(ci: list[float], p_holm: float | None, sign: int, alpha: float = ALPHA) -> str:
    """better / worse / indistinct for a paired difference a - b (sign: +1 when higher is better)."""
    if ci[0] <= 0 <= ci[1] or (p_holm is not None and p_holm >= alpha):
        return "indistinct"
    return "better" if sign * ci[0] > 0 else "worse"


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
