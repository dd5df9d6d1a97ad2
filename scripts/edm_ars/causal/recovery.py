"""Recovery of a planted effect (generated data only): whether the study's interval contains the effect the data
generator planted, overall and for its one group, and whether the naive difference in means does."""

from __future__ import annotations

from typing import Any

from edm_ars.core.errors import DataError


def _contains(lo: Any, hi: Any, value: float) -> bool:
    return lo is not None and hi is not None and float(lo) <= value <= float(hi)


def _number(value: Any, where: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise DataError(f"the data generator's record {where} is {value!r}, not a number") from None


def causal_recovery(dgp: dict[str, Any], spec: dict[str, Any], results: dict[str, Any]) -> dict[str, Any]:
    """The planted effect of the spec's treatment (dgp["treatments"][variable]: its ATE over the students with the
    outcome, and its group effect) against the primary and naive estimates and the heterogeneity entry of the
    planted group in `results`."""
    try:
        variable = spec["treatment"]["variable"]
        outcome = spec["outcome"]["name"]
    except (KeyError, TypeError):
        raise DataError("the research specification names no treatment.variable or outcome.name") from None
    planted = (dgp or {}).get("treatments", {}).get(variable)
    if not isinstance(planted, dict):
        raise DataError(f"the data generator planted no effect of treatment {variable!r} "
                        f"(dgp treatments: {sorted((dgp or {}).get('treatments', {}))})")
    if planted.get("outcome") is not None and planted["outcome"] != outcome:
        raise DataError(f"the effect of {variable!r} was planted on outcome {planted['outcome']!r}, but the "
                        f"specification's outcome is {outcome!r}")
    for side in ("treated", "control"):
        given, made = spec["treatment"].get(side), planted.get(f"{side}_value")
        label = spec["treatment"].get(f"{side}_label")  # the data may hold the code or its label
        if given is not None and made is not None and str(made) not in (str(given), str(label)):
            raise DataError(f"the specification compares {side} = {given!r}, but the effect of {variable!r} was "
                            f"planted for {side}_value = {made!r}")
    if "ate_observed" not in planted:
        raise DataError(f"the data generator's record of {variable!r} has no ate_observed")
    truth = _number(planted["ate_observed"], f"treatments.{variable}.ate_observed")
    primary, naive = results["primary"], results["naive"]
    out: dict[str, Any] = {
        "treatment": variable, "outcome": outcome, "planted_ate": round(truth, 6),
        "estimate": primary["estimate"], "ci_low": primary["ci_low"], "ci_high": primary["ci_high"],
        "covered": _contains(primary["ci_low"], primary["ci_high"], truth),
        "naive": naive["estimate"], "naive_ci_low": naive["ci_low"], "naive_ci_high": naive["ci_high"],
        "naive_covered": _contains(naive["ci_low"], naive["ci_high"], truth), "group": None}
    group = (planted.get("effect") or {}).get("group")
    if group:
        attribute, label = str(group["attribute"]), str(group["group"])
        effects = {str(k): v for k, v in (planted.get("group_effects") or {}).items()}
        if label not in effects:
            raise DataError(f"the data generator's record of {variable!r} has no group_effects[{label!r}]")
        value = _number(effects[label], f"treatments.{variable}.group_effects.{label}")
        entry = next((g for g in results.get("heterogeneity", {}).get("groups", [])
                      if str(g["attribute"]) == attribute and str(g["group"]) == label), None)
        out["group"] = {"attribute": attribute, "group": label, "planted": round(value, 6),
                        "estimate": entry["estimate"] if entry else None,
                        "ci_low": entry["ci_low"] if entry else None, "ci_high": entry["ci_high"] if entry else None,
                        "covered": bool(entry) and _contains(entry["ci_low"], entry["ci_high"], value)}
    return out
