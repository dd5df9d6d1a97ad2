"""Repeated grouped splits: how much the primary metric moves when the study is done on another split.

The main split (split 0) is the DataEngineer's. Splits 1..K-1 repeat the DataEngineer's own preparation of the
raw data (edm_ars.data.engineer.prepare: same protocol, same columns, same imputation strategy, the split grouped by
cluster exactly as the main one) with another seed, derived from the run's seed and the split number. Each split
refits every single model family with the hyperparameters tuned on the main split (models/<m>.json best_params;
no re-tuning) on that split's training rows and scores the primary metric on its test rows. The stacked model is
not refitted: its meta-learner is fitted on the base models' out-of-fold predictions, which a split would have to
recompute with five cross-validation fits of every base model.

This module holds the arithmetic (no model library at import: the workflow imports it for the split numbers).
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edm_ars.data.engineer import Prepared

log = logging.getLogger("edm_ars")

#: the seed of split k is seed + SEED_STEP * k (split 0 is the main split, with the run's seed)
SEED_STEP = 1009


def split_seed(seed: int, k: int) -> int:
    """The split seed of split k: the run's seed for the main split (k = 0), else seed + 1009 k (deterministic,
    distinct for distinct k)."""
    if k < 0:
        raise ValueError(f"split number {k} is negative")
    return int(seed) + SEED_STEP * int(k)


def extra_splits(repeated: int) -> list[int]:
    """The split numbers run as jobs for `analysis.repeated_splits` = K: 1..K-1 (none when K <= 1)."""
    return list(range(1, max(1, int(repeated))))


def split_facts(report: dict[str, Any]) -> dict[str, Any]:
    """Students and clusters on each side of a split, from a data report (the DataEngineer's or a split's)."""
    split = report["split"]
    return {"seed": int(split["seed"]), "train_n": int(report["train_n"]), "test_n": int(report["test_n"]),
            "train_clusters": int(split["train_clusters"]), "test_clusters": int(split["test_clusters"]),
            "clustered": bool(split.get("clustered")), "group_overlap": int(split["group_overlap"]),
            "method": str(split["method"])}


def refit_models(task: str, fitted: dict[str, dict[str, Any]], prep: Prepared, seed: int,
                 errors: list[dict[str, Any]], what: str) -> dict[str, dict[str, Any]]:
    """Each family in `fitted` (name -> its models/<m>.json record) refitted with its tuned best_params and the
    run's seed (as the main fit) on the training rows of the split `prep` (edm_ars.data.engineer.prepare's output) and
    scored on its test rows: name -> {metric}. A family stopped by a condition of the data (edm_ars.core.errors.AnalysisLimitation) or the memory
    is recorded in `errors` with metric None; anything else raises."""
    import numpy as np

    from edm_ars.analysis.models import fit, predict, score
    from edm_ars.core.errors import SingleClass
    from edm_ars.core.phases import recorded

    out: dict[str, dict[str, Any]] = {}
    X, y = prep.train_X, prep.train_y.to_numpy(dtype=float)
    Xt, yt = prep.test_X, prep.test_y.to_numpy(dtype=float)
    for name, info in fitted.items():
        if list(X.columns) != list(info.get("features") or X.columns):
            # another split's encoding may see other category levels; the family is refitted on its own columns
            log.info("%s: split %s has %d columns (main fit: %d)", name, what, X.shape[1], len(info["features"]))
        rec: dict[str, Any] = {"metric": None}
        with recorded(errors, "splits", f"{what} {name}"):
            if task == "binary_classification" and len(np.unique(yt)) < 2:
                raise SingleClass(f"the {len(yt)} test rows of {what} hold one outcome class only, so no AUC")
            wall = time.perf_counter()
            model = fit(name, task, seed, info["best_params"], X, y)
            value = score(task, yt, predict(model, task, Xt))
            rec = {"metric": None if value is None or not np.isfinite(value) else float(value)}
            log.info("%s: %s refitted and scored in %.1f s", what, name, time.perf_counter() - wall)
        out[name] = rec
    return out


def spread(values: list[float]) -> dict[str, Any] | None:
    """{n, mean, sd, min, max} of a list of values (SD with n - 1; 0 for one value); None for an empty list."""
    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    if not v:
        return None
    mean = sum(v) / len(v)
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return {"n": len(v), "mean": mean, "sd": sd, "min": min(v), "max": max(v)}


def summarize(evaluation: dict[str, Any], report: dict[str, Any], runs: list[dict[str, Any]],
              repeated: int) -> dict[str, Any]:
    """splits.json: the main split (split 0, from evaluation.json and the data report) and the split jobs' runs,
    per model the primary metric on every split and its mean, SD, min and max across the splits it was scored on;
    the reference model (the selected one, or the single model stacking was compared with when stacking was
    selected) with its single-split interval's half-width beside its split-to-split SD."""
    from edm_ars.analysis.metrics import HIGHER_IS_BETTER
    from edm_ars.core.conventions import STACKING

    primary = evaluation["primary_metric"]
    models = evaluation["models"]
    main = split_facts(report) | {"split": 0, "metrics": {
        m: rec["metrics"].get(primary) for m, rec in models.items() if m != STACKING}}
    splits = [main] + [{"split": r["split"], **r["facts"], "metrics": {m: v["metric"] for m, v in r["models"].items()}}
                       for r in sorted(runs, key=lambda r: r["split"])]
    higher = HIGHER_IS_BETTER.get(primary, True)
    per_model = {}
    for m in main["metrics"]:
        values = [s["metrics"].get(m) for s in splits]
        per_model[m] = {"values": values, **(spread([v for v in values if v is not None]) or {"n": 0}),
                        "best_on": 0}
    for s in splits:  # on how many splits each model had the best metric of the refitted models (ties: each)
        scored = {m: v for m, v in s["metrics"].items() if v is not None and m in per_model}
        if scored:
            top = max(scored.values()) if higher else min(scored.values())
            for m, v in scored.items():
                per_model[m]["best_on"] += int(v == top)
    best = evaluation["best_model"]
    reference = best
    if best == STACKING or best not in per_model:
        # the single model stacking was compared with: the simplest of those tied with the top one (select_best
        # sorts `overlapping_top` by complexity), else the top one
        ev = evaluation.get("selection_evidence") or {}
        reference = next((m for m in (*(ev.get("overlapping_top") or [])[:1], ev.get("top_single")) if m in per_model),
                         None)
    ref: dict[str, Any] | None = None
    if reference and per_model[reference].get("n", 0) > 1:
        lo, hi = models[reference]["ci"][primary]
        half = (hi - lo) / 2
        ref = {"model": reference, "selected": reference == best, "ci": [lo, hi], "ci_half_width": half,
               "sd": per_model[reference]["sd"], "sd_over_half_width": per_model[reference]["sd"] / half if half
               else None, "spread_larger": bool(per_model[reference]["sd"] > half)}
    errors = [e for r in runs for e in r.get("errors", [])]
    tested = [s["test_clusters"] for s in splits]
    return {
        "primary_metric": primary,
        "n_splits": len(splits),
        "n_repeated": len(splits) - 1,
        "configured": int(repeated),
        "seeds": [s["seed"] for s in splits],
        "clustered": bool(main["clustered"]),
        "test_clusters": {"min": min(tested), "max": max(tested)},
        "test_n": {"min": min(s["test_n"] for s in splits), "max": max(s["test_n"] for s in splits)},
        "refitted": sorted(per_model),
        "not_refitted": [m for m in models if m == STACKING],
        "tuning": "hyperparameters tuned on the main split's training rows (models/<m>.json best_params); "
                  "not re-tuned on the other splits",
        "splits": splits,
        "models": per_model,
        "reference": ref,
        "errors": errors,
    }
