"""The recovery check of a study on generated data: what the analysis found against the truth the generator planted.

Generated rows come with their data-generating process (output/data/dgp.json, written by the `synthesize` rule;
schema scripts/edm_ars/schemas/dgp.json): the standardized effect of every predictor on each outcome, and a group
whose outcome carries extra noise. On such data a finding is not a fact about students: the paper reports instead
whether the workflow recovers what was planted.

- **Predictors.** The planted strong effects of the outcome are those above the largest gap between consecutive
  absolute standardized effects (the generator separates five strong effects from weak ones). Of the strong ones that
  are among the study's predictors (k of them), the check counts those among the interpreted model's k highest
  ranked features (results.json top_features, SHAP per source variable): recovered predictors.
- **Group.** When the generator planted extra outcome noise for a group of an attribute, the model should predict
  that group's outcome less accurately: the group is recovered when its primary metric is the lowest (the highest
  for an error) among the reliable groups of that attribute in the fairness audit. When nothing was planted for
  the outcome, the check records the largest gap the audit found for that attribute.

Pure functions of the artifacts; the `recovery` rule writes the result as output/paper/recovery.json.
"""

from __future__ import annotations

from typing import Any

from edm_ars.core.conventions import LOWER_IS_BETTER
from edm_ars.core.errors import EdmArsError


def strong_effects(effects: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float | None]:
    """The planted strong effects (above the largest gap between consecutive absolute standardized effects, in
    order of size) and the smallest absolute strong effect (None when there are fewer than two effects)."""
    def size(e: dict[str, Any]) -> float:
        return abs(float(e.get("standardized_effect", e.get("effect", 0.0))))

    ordered = sorted(effects, key=lambda e: (-size(e), int(e.get("rank", 0))))
    if len(ordered) < 2:
        return ordered, (size(ordered[0]) if ordered else None)
    gaps = [size(a) - size(b) for a, b in zip(ordered, ordered[1:], strict=False)]
    cut = max(range(len(gaps)), key=lambda i: (gaps[i], -i)) + 1  # the first of equal gaps
    return ordered[:cut], size(ordered[cut - 1])


def predictor_recovery(dgp_outcome: dict[str, Any], predictors: list[str], top: list[str]) -> dict[str, Any]:
    """The planted strong predictors against the interpreted model's ranking of source variables (`top`, best
    first): k strong ones among the predictors, and which of them are among the k highest ranked features."""
    strong, threshold = strong_effects(list(dgp_outcome.get("effects") or []))
    in_set = [e for e in strong if e["variable"] in predictors]
    k = len(in_set)
    ranking = list(dict.fromkeys(top))  # source variables, best first, each once
    found = ranking[:k]
    rows = []
    for e in strong:
        var = e["variable"]
        rank = ranking.index(var) + 1 if var in ranking else None  # its place in the whole ranking
        rows.append({"variable": var, "standardized_effect": e.get("standardized_effect"),
                     "planted_rank": e.get("rank"), "in_predictors": var in predictors, "found_rank": rank,
                     "recovered": var in found})
    planted = {e["variable"] for e in strong}
    return {
        "strong_threshold": threshold,
        "n_planted_strong": len(strong),
        "n_in_predictors": k,
        "top_k": k,
        "n_recovered": sum(r["recovered"] for r in rows),
        "n_found": len(found),
        "planted_strong": rows,
        "found_top": found,
        "found_not_planted": [v for v in found if v not in planted],
        "share_recovered": (sum(r["recovered"] for r in rows) / k) if k else None,
    }


def group_recovery(disparity: dict[str, Any], outcome: str, fairness: dict[str, Any]) -> dict[str, Any]:
    """The planted group effect against the fairness audit of the attribute it was planted on."""
    attr, group = disparity.get("attribute"), disparity.get("group")
    planted = outcome in (disparity.get("outcomes") or [])
    metric = fairness.get("primary_metric")
    rec = (fairness.get("attributes") or {}).get(attr) if attr else None
    out: dict[str, Any] = {"attribute": attr, "group": group, "planted": planted, "metric": metric,
                           "extra_noise_sd": disparity.get("extra_noise_sd"),
                           "audited": isinstance(rec, dict)}
    if not isinstance(rec, dict):
        out["recovered"] = None
        return out
    reliable = [g for g in rec.get("groups") or [] if g.get("reliable") and isinstance(g.get("metric"), (int, float))]
    gap = (rec.get("gaps") or {}).get(metric) or {}
    out.update(label=rec.get("label"), n_reliable_groups=len(reliable),
               gap=gap.get("gap"), gap_flagged=bool(gap.get("flagged")), gap_min_group=gap.get("min_group"),
               gap_max_group=gap.get("max_group"))
    overall = (fairness.get("overall") or {}).get(metric)
    out["overall_metric"] = overall
    mine = next((g for g in rec.get("groups") or [] if g.get("group") == group), None)
    if mine is None or not mine.get("reliable") or not isinstance(mine.get("metric"), (int, float)):
        out.update(group_found=mine is not None, group_reliable=bool(mine and mine.get("reliable")),
                   group_n=(mine or {}).get("n"), recovered=None)
        return out
    worse_first = sorted(reliable, key=lambda g: g["metric"], reverse=metric in LOWER_IS_BETTER)
    position = next(i for i, g in enumerate(worse_first, start=1) if g.get("group") == group)
    out.update(group_found=True, group_reliable=True, group_n=mine.get("n"), group_metric=mine["metric"],
               group_ci=mine.get("ci"), worst_position=position,
               difference_to_overall=(abs(overall - mine["metric"]) if isinstance(overall, (int, float)) else None))
    out["recovered"] = (position == 1) if planted else None
    return out


def school_recovery(truth: dict[str, Any], multilevel: dict[str, Any]) -> dict[str, Any]:
    """The between-school variance the generator planted beyond the predictors (the school effect's variance: on the
    logit scale for a logistic outcome, on the outcome's scale otherwise) beside the between-cluster variance of the
    multilevel analysis's model with the study's predictors (results.json multilevel.levels[0]); {} without both."""
    sd = truth.get("school_noise_sd")
    levels = multilevel.get("levels") or []
    estimate = ((levels[0] if levels else {}).get("predictor_model") or {}).get("between_var")
    if sd is None or estimate is None:
        return {}
    return {"planted_between_var": round(float(sd) ** 2, 6), "estimated_between_var": float(estimate),
            "scale": "logit" if truth.get("link") == "logistic" else "outcome",
            "unit": (levels[0] or {}).get("unit")}


def recovery_check(dgp: dict[str, Any], spec: dict[str, Any], results: dict[str, Any]) -> dict[str, Any]:
    """The whole check for one study: the outcome's planted predictors and the planted group effect against the
    interpreted model's top features and the fairness audit. Fails (EdmArsError) when the data-generating process
    does not describe the study's outcome."""
    outcome = (spec.get("outcome") or {}).get("name")
    truth = (dgp.get("outcomes") or {}).get(outcome)
    if truth is None:
        raise EdmArsError(f"dgp.json: the data-generating process records no outcome {outcome!r} "
                          f"(it records {sorted(dgp.get('outcomes') or {})}); the recovery check needs its truth")
    predictors = [p["name"] for p in spec.get("predictors") or []]
    top = [f["feature"] for f in results.get("top_features") or [] if f.get("feature")]
    return {
        "outcome": outcome,
        "link": truth.get("link"),
        "interpreted_model": results.get("interpreted_model"),
        "n_top_features": len(top),
        "predictors": predictor_recovery(truth, predictors, top),
        "group": group_recovery(dgp.get("disparity") or {}, outcome, results.get("fairness") or {}),
        "school": school_recovery(truth, results.get("multilevel") or {}),
        "leakage_trap": {"variable": (dgp.get("leakage_trap") or {}).get("variable"),
                         "in_predictors": (dgp.get("leakage_trap") or {}).get("variable") in predictors},
        "seed": dgp.get("seed"),
    }
