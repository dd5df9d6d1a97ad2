"""The Critic's causal checklist: eight items judged in code on a causal study's specification, data report and
results, and the verdict computed from them by rule.

The review is written to the same file and with the same top-level fields as the prediction Critic's
(output/branch_<b>/round_<r>/review_report.json: verdict, round, rerun_from, issues, revision_actions, abort_reason,
unverified, ...), so the revision loop, the gates and the Writer read it unchanged; `checklist` adds the items,
each {"id", "label", "passed", "severity", "detail"} with the numbers it judged.

The items (the thresholds are defaults that a rubric mapping may override, see :data:`DEFAULTS`):

- comparison_group (critical): both arms have at least `min_arm_n` analysed rows;
- identification (major): an identification argument and a design kind; a randomised design states how the
  treatment was assigned, an observational one states conditional exchangeability on the listed covariates,
  positivity and consistency (no interference);
- pre_treatment (critical): every time-order check of the specification holds (no covariate after the treatment, a
  covariate of the treatment's own wave declared measured before it, the outcome not before it);
- overlap (major, observational): at most `max_share_outside` of the cross-fitted propensities outside the bounds;
  randomised designs pass (assignment by design);
- balance: the largest |SMD| at most `smd_threshold`, at baseline for a randomised design (minor: chance imbalance,
  which the covariate-adjusted estimate checks), after weighting for an observational one (major);
- attrition (major): the missing-outcome rates of the arms differ by at most `max_attrition_difference`, and in a
  randomised design the arms' stayers differ by at most `max_stayers_smd` in |SMD| (in an observational design the
  arms differ by design among the stayers too; the balance item judges them after weighting);
- sensitivity (major, observational): the omitted-variable bounds are reported with their robustness value;
- heterogeneity_exploratory (major): the subgroup estimates are labelled exploratory.

A failed item is one of four kinds, and the verdict follows from them: a failed critical item ends the study
(ABORT, nothing re-estimated can fix it); a failed item with a revision action (too little overlap while the
trimming threshold is below `trimming_threshold`: the action ``trimming`` asks the next round's analyze
stage for that threshold) makes a REVISE that re-runs from analyze while rounds remain; a failed item no re-run
can supply (no identification argument, no sensitivity analysis, subgroups not labelled exploratory, a diagnostic
not reported) and a revision at the cap make the review UNVERIFIED (rubric verdict REVISE: the paper is written and
flagged, as the prediction Critic flags a REVISE with no round left); a failed item that is a fact of the data
(differential attrition, imbalance, limited overlap after trimming) is a limitation: the review can PASS, and the
issue, targeted at the Writer, and `limitations` say what the paper must report.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import read_yaml
from edm_ars.core.errors import EdmArsError
from edm_ars.review.critic import (
    DIMENSIONS,
    PENALTY,
    STAGE_DIMENSION,
    STAGES,
    START_SCORE,
    UNVERIFIED,
    dimension_scores,
)

DESIGNS = ("randomized", "observational")
FORCED_ISSUE = "forced_revision"  # the id edm_ars.formulate.lessons skips, as for the prediction Critic
#: the revision action that sets the next round's propensity trimming threshold (value: the threshold)
TRIMMING_ACTION = "trimming"
#: the checklist's thresholds; a rubric mapping (or its `causal:` section) may override each
DEFAULTS: dict[str, Any] = {
    "min_arm_n": 30,  # analysed rows per arm
    "smd_threshold": 0.1,  # |standardised mean difference|
    "max_share_outside": 0.10,  # share of cross-fitted propensities outside the overlap bounds
    "trimming_threshold": 0.05,  # the trimming a revision asks for when overlap fails
    "max_attrition_difference": 0.05,  # |difference in missing-outcome rates between the arms|
    "max_stayers_smd": 0.1,  # largest |SMD| between the arms among the rows with an outcome
}
ORDER = ("comparison_group", "identification", "pre_treatment", "overlap", "balance", "attrition", "sensitivity",
         "heterogeneity_exploratory")
LABELS = {
    "comparison_group": "Both arms have analysed rows",
    "identification": "Identification argument stated",
    "pre_treatment": "No post-treatment adjustment",
    "overlap": "Overlap of the propensities",
    "balance": "Covariate balance",
    "attrition": "Attrition by arm",
    "sensitivity": "Sensitivity to unmeasured confounding",
    "heterogeneity_exploratory": "Heterogeneity labelled exploratory",
}
DIMENSION = {"comparison_group": "data_preparation", "identification": "problem_formulation",
             "pre_treatment": "problem_formulation", "overlap": "analysis", "balance": "analysis",
             "attrition": "data_preparation", "sensitivity": "analysis",
             "heterogeneity_exploratory": "substantive_validity"}
#: the stage whose artifact a failed item is about (a limitation goes to the Writer instead)
STAGE = {"comparison_group": "engineer", "identification": "formulate", "pre_treatment": "formulate",
         "overlap": "analyze", "balance": "analyze", "attrition": "engineer", "sensitivity": "analyze",
         "heterogeneity_exploratory": "analyze"}
#: what an observational identification statement must state, each as (assumption, pattern)
ASSUMPTIONS = (
    ("conditional exchangeability", re.compile(r"exchangeab|unconfounded|ignorab|no unmeasured confound|"
                                               r"no unobserved confound|conditional(?:ly)? independen", re.I)),
    ("positivity", re.compile(r"positivity|overlap|common support", re.I)),
    ("consistency (no interference)", re.compile(r"consisten|sutva|interference|stable unit", re.I)),
)


# ==================================================================================== settings
def settings(rubric: dict[str, Any] | str | Path | None = None) -> dict[str, Any]:
    """The checklist's thresholds and scoring: :data:`DEFAULTS` with a rubric's overrides. `rubric` is None, a
    mapping of thresholds, a mapping with a `causal:` section of them (and optionally the prediction rubric's
    `dimensions`, `penalties`, `start` for scoring, as edm_ars.review.critic.load_rubric returns them), or the path
    of a YAML rubric whose `causal:` section and `scoring` are read."""
    dims, penalties, start = dict(DIMENSIONS), dict(PENALTY), START_SCORE
    if rubric is None:
        section: dict[str, Any] = {}
    elif isinstance(rubric, (str, Path)):
        data = read_yaml(rubric, "rubric", EdmArsError)
        if not isinstance(data, dict):
            raise EdmArsError(f"{rubric}: a rubric must be a mapping")
        section = data.get("causal") or {}
        scoring = data.get("scoring") or {}
        penalties.update({k: float(v) for k, v in (scoring.get("penalties") or {}).items()})
        start = float(scoring.get("start", start))
        if isinstance(data.get("dimensions"), dict):
            dims = {n: float(d["weight"] if isinstance(d, dict) else d) for n, d in data["dimensions"].items()}
    elif isinstance(rubric, dict):
        if "causal" in rubric or "items" in rubric:  # a whole rubric: its causal section and its scoring
            section = rubric.get("causal") or {}
            dims = {k: float(v) for k, v in (rubric.get("dimensions") or dims).items()}
            penalties.update({k: float(v) for k, v in (rubric.get("penalties") or {}).items()})
            start = float(rubric.get("start", start))
        else:
            section = rubric
    else:
        raise EdmArsError(f"rubric: expected None, a mapping or a path, not {type(rubric).__name__}")
    if not isinstance(section, dict):
        raise EdmArsError(f"rubric: the causal section must be a mapping of thresholds, not {section!r}")
    unknown = sorted(set(section) - set(DEFAULTS))
    if unknown:
        raise EdmArsError(f"rubric: unknown causal threshold(s) {', '.join(unknown)}; known: {', '.join(DEFAULTS)}")
    out = dict(DEFAULTS)
    for key, value in section.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise EdmArsError(f"rubric: causal threshold {key} must be a non-negative number, not {value!r}")
        out[key] = value
    if not 0 < out["trimming_threshold"] < 0.5:
        raise EdmArsError(f"rubric: causal threshold trimming_threshold must be in (0, 0.5), not "
                          f"{out['trimming_threshold']!r}")
    if set(PENALTY) - set(penalties):
        raise EdmArsError(f"rubric: penalties need {', '.join(PENALTY)}")
    return {"thresholds": out, "dimensions": dims, "penalties": penalties, "start": start}


# ==================================================================================== reading the artifacts
def _need(obj: Any, key: str, where: str) -> Any:
    if not isinstance(obj, dict):
        raise EdmArsError(f"{where}: expected a mapping, not {type(obj).__name__}")
    if key not in obj:
        raise EdmArsError(f"{where}: missing key {key!r}")
    return obj[key]


def _num(value: Any) -> float | None:
    """A finite number, or None (absent, null, NaN, not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _f(value: Any, digits: int = 3) -> str:
    x = _num(value)
    return "n/a" if x is None else f"{x:.{digits}f}"


def _pct(value: Any) -> str:
    x = _num(value)
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _g(value: Any) -> str:
    x = _num(value)
    return "n/a" if x is None else f"{x:g}"


def _item(id_: str, passed: bool, severity: str, detail: str, *, kind: str = "", recommendation: str = "",
          actions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One judged item; `kind` (critical, action, defect, limitation) says what its failure does to the verdict."""
    return {"id": id_, "label": LABELS[id_], "passed": bool(passed), "severity": severity, "detail": detail,
            "kind": kind if not passed else "", "recommendation": recommendation, "actions": list(actions or [])}


def _arms(spec: dict[str, Any]) -> str:
    t = spec.get("treatment") or {}
    treated = t.get("treated_label") or t.get("treated")
    control = t.get("control_label") or t.get("control")
    return f"{treated} vs {control}" if treated is not None and control is not None else "the two arms"


# ==================================================================================== the items
def check_comparison_group(spec: dict[str, Any], report: dict[str, Any], results: dict[str, Any],
                           t: dict[str, Any]) -> dict[str, Any]:
    n = _need(results, "n", "results.json")
    nt, nc = _need(n, "treated", "results.json n"), _need(n, "control", "results.json n")
    least = t["min_arm_n"]
    ok = _num(nt) is not None and _num(nc) is not None and nt >= least and nc >= least
    detail = (f"{_g(nt)} treated and {_g(nc)} control rows with an outcome ({_arms(spec)}; at least {_g(least)} "
              "per arm needed)")
    if isinstance(report, dict) and "n_treated" in report and "n_control" in report:
        detail += (f"; the analytic frame has {_g(report['n_treated'])} treated and {_g(report['n_control'])} "
                   "control rows")
    return _item("comparison_group", ok, "critical", detail, kind="critical",
                 recommendation="There is no comparison to estimate: choose a treatment whose both values are "
                                "observed for enough students.")


def check_identification(spec: dict[str, Any], results: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
    design = _need(spec, "design", "research_spec.json")
    kind = design.get("kind") if isinstance(design, dict) else None
    text = spec.get("identification")
    text = text.strip() if isinstance(text, str) else ""
    problems, stated = [], []
    if not text:
        problems.append("the specification states no identification argument (identification is empty)")
    if kind not in DESIGNS:
        problems.append(f"the design kind {kind!r} is not one of {', '.join(DESIGNS)}")
    elif kind == "randomized":
        assignment = design.get("statement")
        if not (isinstance(assignment, str) and assignment.strip()):
            problems.append("the randomised design does not state how the treatment was assigned (design.statement "
                            "is empty)")
        else:
            stated.append("the assignment: " + assignment.strip().rstrip(".")[:120])
    else:
        for name, pattern in ASSUMPTIONS:
            if pattern.search(text):
                stated.append(name)
            else:
                problems.append(f"the identification argument does not state {name}")
        covariates = [c.get("name") for c in spec.get("covariates") or [] if isinstance(c, dict)]
        if not covariates:
            problems.append("no covariates are listed for the exchangeability to be conditional on")
        else:
            stated.append(f"adjustment for {len(covariates)} covariates ({', '.join(map(str, covariates))})")
    detail = f"design {kind}; identification argument of {len(text)} characters"
    if stated:
        detail += "; states " + "; ".join(stated)
    if problems:
        detail += "; " + "; ".join(problems)
    return _item("identification", not problems, "major", detail, kind="defect",
                 recommendation="State the identification argument: for a randomised design how the treatment was "
                                "assigned, for an observational one conditional exchangeability given the listed "
                                "covariates, positivity and consistency (no interference between students).")


def check_pre_treatment(spec: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
    order = _need(spec, "time_order", "research_spec.json")
    if not isinstance(order, list) or not all(isinstance(c, dict) and "check" in c and "ok" in c for c in order):
        raise EdmArsError("research_spec.json: time_order must be a list of {check, ok, detail} records")
    treatment = spec.get("treatment") or {}
    t_wave = treatment.get("wave")
    covariates = [c for c in spec.get("covariates") or [] if isinstance(c, dict)]
    without_waves = any(c["check"] == "waves" for c in order)
    judged = {c["check"] for c in order}
    problems = [str(c.get("detail") or c["check"]) for c in order if c["ok"] is not True]
    if not without_waves:
        problems += [f"{c.get('name')} has no time-order check" for c in covariates
                     if f"covariate {c.get('name')}" not in judged]
    declared = spec.get("measured_before_treatment")
    if isinstance(declared, list) and t_wave is not None:
        problems += [f"{c.get('name')} is of the treatment's wave ({t_wave}) and is not listed in "
                     "measured_before_treatment" for c in covariates
                     if c.get("wave") == t_wave and c.get("name") not in declared]
    problems = list(dict.fromkeys(problems))
    same = [c.get("name") for c in covariates if t_wave is not None and c.get("wave") == t_wave]
    if without_waves:
        detail = "the registry has no waves: the time order is as the question states it"
    else:
        detail = (f"{len(covariates)} covariate(s) checked against the treatment {treatment.get('variable')} "
                  f"(wave {t_wave})")
        if same:
            detail += f"; of its wave and declared measured before it: {', '.join(map(str, same))}"
        if "outcome" in judged:
            detail += "; the outcome is checked to come after it"
    if problems:
        detail += "; " + "; ".join(problems)
    return _item("pre_treatment", not problems, "critical", detail, kind="critical",
                 recommendation="Adjust only for covariates measured before the treatment; a covariate measured "
                                "after it may be a consequence of the treatment, and no re-estimation removes that.")


def check_overlap(design: str, results: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
    if design == "randomized":
        return _item("overlap", True, "major", "assignment by design: the treatment was randomised, no propensity is "
                                               "estimated")
    ov = results.get("overlap")
    if not isinstance(ov, dict):
        return _item("overlap", False, "major", "results.json reports no overlap diagnostics for the observational "
                                                "design (overlap is null)", kind="defect",
                     recommendation="Report the cross-fitted propensities' overlap (shares outside the bounds, "
                                    "trimming) for the observational design.")
    below, above = _num(ov.get("share_below")), _num(ov.get("share_above"))
    if below is None or above is None:
        raise EdmArsError(f"results.json overlap: share_below and share_above must be numbers, not "
                          f"{ov.get('share_below')!r} and {ov.get('share_above')!r}")
    bounds = ov.get("bounds") or [None, None]
    share, most = below + above, t["max_share_outside"]
    current, wanted = _num(ov.get("trimming_threshold")), t["trimming_threshold"]
    detail = (f"{_pct(share)} of the cross-fitted propensities lie outside [{_g(bounds[0])}, {_g(bounds[1])}] "
              f"({_pct(below)} below, {_pct(above)} above; at most {_pct(most)}); propensities from "
              f"{_f(ov.get('propensity_min'))} to {_f(ov.get('propensity_max'))}; trimming threshold "
              f"{_g(current)}, {_g(ov.get('n_trimmed'))} trimmed")
    if share <= most:
        return _item("overlap", True, "major", detail)
    if current is None or current < wanted - 1e-12:
        act = {"action": TRIMMING_ACTION, "stage": "analyze", "value": wanted, "issue": "overlap",
               "reason": f"{_pct(share)} of the propensities lie outside the overlap bounds (at most {_pct(most)}): "
                         f"trim at {_g(wanted)} instead of {_g(current)}"}
        return _item("overlap", False, "major", detail + f"; trimming at {_g(wanted)} is stricter", kind="action",
                     recommendation=f"Re-estimate with the propensities trimmed at {_g(wanted)} and "
                                    f"{_g(1 - wanted)}.", actions=[act])
    return _item("overlap", False, "major", detail + f"; already trimmed at {_g(current)}: the limited overlap is a "
                                                     "limitation of the data", kind="limitation",
                 recommendation="State the limited overlap and the trimming in the paper: the estimate leans on "
                                "the students whose propensities are trimmed.")


def _worst(rows: list[dict[str, Any]], key: str) -> str:
    vals = [(abs(_num(r.get(key))), r) for r in rows if isinstance(r, dict) and _num(r.get(key)) is not None]
    if not vals:
        return ""
    _, row = max(vals, key=lambda v: v[0])
    return f" ({row.get('feature') or row.get('covariate')})"


def _above(rows: list[dict[str, Any]], key: str, thr: float, counted: Any) -> Any:
    """How many feature rows have |`key`| above the review's threshold `thr` (the rubric's, which may differ from the
    one the estimation counted at: results.json `balance.threshold`); `counted` when no row carries the value."""
    values = [abs(v) for r in rows if isinstance(r, dict) and (v := _num(r.get(key))) is not None]
    return sum(v > thr for v in values) if values else counted


def check_balance(design: str, results: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
    bal = _need(results, "balance", "results.json")
    rows = (bal.get("rows") or []) if isinstance(bal, dict) else []
    thr = t["smd_threshold"]
    raw = _num(_need(bal, "max_abs_smd", "results.json balance"))
    if not rows and raw is None:
        return _item("balance", True, "minor" if design == "randomized" else "major",
                     "no covariate feature to compare between the arms")
    if design == "randomized":
        detail = (f"largest baseline |SMD| {_f(raw)}{_worst(rows, 'smd')}; "
                  f"{_g(_above(rows, 'smd', thr, bal.get('n_above')))} of {len(rows)} features above {_g(thr)}")
        adjusted = results.get("adjusted")
        if isinstance(adjusted, dict) and _num(adjusted.get("estimate")) is not None:
            detail += (f"; the covariate-adjusted estimate {_f(adjusted['estimate'])} [{_f(adjusted.get('ci_low'))}, "
                       f"{_f(adjusted.get('ci_high'))}] is the check")
        ok = raw is not None and raw <= thr
        return _item("balance", ok, "minor", detail, kind="limitation",
                     recommendation="Report the chance imbalance at baseline and set the covariate-adjusted estimate "
                                    "beside the primary one.")
    weighted = _num(bal.get("max_abs_smd_weighted"))
    if weighted is None:
        return _item("balance", False, "major", f"largest |SMD| {_f(raw)} before weighting; no balance after "
                                                "weighting is reported (max_abs_smd_weighted is null)",
                     kind="defect", recommendation="Report the standardised mean differences after weighting.")
    detail = (f"largest |SMD| after weighting {_f(weighted)}{_worst(rows, 'smd_weighted')} (before weighting "
              f"{_f(raw)}); {_g(_above(rows, 'smd_weighted', thr, bal.get('n_above_weighted')))} of {len(rows)} "
              f"features above {_g(thr)} after weighting")
    return _item("balance", weighted <= thr, "major", detail, kind="limitation",
                 recommendation="Report the covariates left imbalanced after weighting as a limitation: the "
                                "estimate leans on the outcome model for them.")


def check_attrition(design: str, results: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
    """The missing-outcome rates of the arms, and for a randomised design the arms' balance among the rows with an
    outcome (in an observational design the arms differ by design there: the balance item judges them weighted)."""
    a = _need(results, "attrition", "results.json")
    rt, rc = _num(_need(a, "rate_treated", "results.json attrition")), _num(_need(a, "rate_control",
                                                                                "results.json attrition"))
    diff = _num(a.get("difference"))
    if diff is None and rt is not None and rc is not None:
        diff = rt - rc
    stay = _num(a.get("stayers_max_abs_smd"))
    judged_stayers = design == "randomized"
    missing = (_num(a.get("missing_treated")) or 0) + (_num(a.get("missing_control")) or 0)
    detail = (f"outcome missing for {_g(a.get('missing_treated'))} treated ({_pct(rt)}) and "
              f"{_g(a.get('missing_control'))} control ({_pct(rc)}) rows: difference "
              f"{'n/a' if diff is None else f'{100 * diff:+.1f} percentage points'}")
    if _num(a.get("ci_low")) is not None and _num(a.get("ci_high")) is not None:
        detail += f" (95% CI {100 * a['ci_low']:+.1f} to {100 * a['ci_high']:+.1f})"
    detail += f", at most {100 * t['max_attrition_difference']:.1f} either way"
    if judged_stayers:
        detail += (f"; largest |SMD| between the arms among the rows with an outcome {_f(stay)} (at most "
                   f"{_g(t['max_stayers_smd'])})")
    else:
        detail += (f"; largest unweighted |SMD| between the arms among the rows with an outcome {_f(stay)}, not "
                   "judged here (the arms differ by design; the balance item judges them after weighting)")
    if diff is None or (judged_stayers and stay is None and missing > 0):
        return _item("attrition", False, "major", detail + "; not fully reported", kind="defect",
                     recommendation="Report the missing-outcome rates by arm and the balance among the rows with "
                                    "an outcome.")
    ok = abs(diff) <= t["max_attrition_difference"] + 1e-12 and (
        not judged_stayers or stay is None or stay <= t["max_stayers_smd"])
    return _item("attrition", ok, "major", detail, kind="limitation",
                 recommendation="Report the differential attrition as a limitation: the estimate holds for the "
                                "students with an outcome, and those who left may differ by arm.")


def check_sensitivity(design: str, results: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
    if design == "randomized":
        adjusted = results.get("adjusted")
        detail = "not required for a randomised comparison"
        if isinstance(adjusted, dict) and _num(adjusted.get("estimate")) is not None:
            detail += (f"; covariate-adjusted check reported ({adjusted.get('estimator') or 'adjusted'} "
                       f"{_f(adjusted['estimate'])} [{_f(adjusted.get('ci_low'))}, {_f(adjusted.get('ci_high'))}])")
        return _item("sensitivity", True, "major", detail)
    s = results.get("sensitivity")
    if not isinstance(s, dict) or _num(s.get("rv")) is None:
        return _item("sensitivity", False, "major",
                     "no sensitivity analysis for unmeasured confounding is reported (sensitivity "
                     + ("is null" if not isinstance(s, dict) else f"has no robustness value: rv {s.get('rv')!r}")
                     + ")", kind="defect",
                     recommendation="Report the omitted-variable bounds (robustness value, bounds on the effect) "
                                    "for the observational estimate.")
    detail = (f"robustness value {_f(s['rv'])} ({_f(s.get('rva'))} for the confidence bound); with confounding of "
              f"strength cf_y {_g(s.get('cf_y'))}, cf_d {_g(s.get('cf_d'))}, rho {_g(s.get('rho'))} the effect lies in "
              f"[{_f(s.get('theta_lower'))}, {_f(s.get('theta_upper'))}], its interval in "
              f"[{_f(s.get('ci_lower'))}, {_f(s.get('ci_upper'))}]")
    return _item("sensitivity", True, "major", detail)


def check_heterogeneity(results: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
    h = results.get("heterogeneity")
    if not isinstance(h, dict):
        return _item("heterogeneity_exploratory", False, "major", "results.json reports no heterogeneity section",
                     kind="defect", recommendation="Report the subgroup estimates, labelled exploratory.")
    groups, skipped = h.get("groups") or [], h.get("skipped") or []
    ok = h.get("exploratory") is True
    detail = (f"{len(groups)} subgroup estimate(s) ({h.get('method') or 'method not stated'}), {len(skipped)} "
              "skipped; " + ("labelled exploratory" if ok else f"not labelled exploratory (exploratory: "
                                                                f"{h.get('exploratory')!r})"))
    return _item("heterogeneity_exploratory", ok, "major", detail, kind="defect",
                 recommendation="Label the subgroup estimates exploratory: they were not the design's comparison "
                                "and many were estimated.")


def checklist(spec: dict[str, Any], data_report: dict[str, Any], results: dict[str, Any],
              thresholds: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every item judged (with `kind`, `recommendation` and `actions`, which the review keeps out of its
    `checklist`)."""
    t = dict(DEFAULTS, **(thresholds or {}))
    if spec.get("task") not in (None, "causal"):
        raise EdmArsError(f"research_spec.json: task is {spec.get('task')!r}, not causal")
    design = (_need(spec, "design", "research_spec.json") or {}).get("kind")
    reported = results.get("design")
    if reported is not None and design is not None and reported != design:
        raise EdmArsError(f"results.json: design {reported!r} differs from the specification's design {design!r}")
    design = design or reported
    return [check_comparison_group(spec, data_report, results, t), check_identification(spec, results, t),
            check_pre_treatment(spec, t), check_overlap(design, results, t), check_balance(design, results, t),
            check_attrition(design, results, t), check_sensitivity(design, results, t), check_heterogeneity(results, t)]


# ==================================================================================== the review
def _issue(item: dict[str, Any]) -> dict[str, Any]:
    """A failed item as an issue; a limitation of the data goes to the Writer (target_stage write)."""
    stage = "write" if item["kind"] == "limitation" else STAGE[item["id"]]
    return {"id": item["id"], "severity": item["severity"], "category": DIMENSION[item["id"]],
            "target_stage": stage, "description": f"{item['label']}: {item['detail']}.",
            "recommendation": item["recommendation"], "unfixable": item["kind"] == "critical",
            "source": "code", "kind": item["kind"], "actions": [dict(a) for a in item["actions"]]}


def _forced_stage(force_revise: bool | str | None) -> str | None:
    if not force_revise:
        return None
    if force_revise is True:
        return "analyze"
    if force_revise in STAGES:
        return str(force_revise)
    raise EdmArsError(f"force_revise: expected true or one of {', '.join(STAGES)}, not {force_revise!r}")


def review_causal(spec: dict[str, Any], data_report: dict[str, Any], results: dict[str, Any], *, round: int,
                  max_revisions: int, rubric: dict[str, Any] | str | Path | None = None,
                  force_revise: bool | str | None = False, force_rounds: int = 1) -> dict[str, Any]:
    """The causal Critic's review (review_report.json): the checklist and the verdict by rule.

    ABORT on a failed critical item (no comparison group, a post-treatment covariate); REVISE when a failed item
    carries a revision action and a round is left (round < max_revisions), or when `force_revise` (true or a
    stage; in the first `force_rounds` rounds with a round left) asks for one; UNVERIFIED (rubric verdict REVISE,
    `unverified` true: the paper is written and flagged) when a failed major item no re-run supplies remains or an
    action is left at the cap; PASS otherwise, with the failed items that are limitations of the data kept as
    write-targeted issues and in `limitations`."""
    cfg = settings(rubric)
    if isinstance(round, bool) or not isinstance(round, int) or round < 0:
        raise EdmArsError(f"review_causal: round must be a non-negative integer, not {round!r}")
    if isinstance(max_revisions, bool) or not isinstance(max_revisions, int) or max_revisions < 0:
        raise EdmArsError(f"review_causal: max_revisions must be a non-negative integer, not {max_revisions!r}")
    items = checklist(spec, data_report, results, cfg["thresholds"])
    left = round < max_revisions
    failed = [i for i in items if not i["passed"]]
    critical = [i for i in failed if i["kind"] == "critical"]
    acting = [i for i in failed if i["kind"] == "action"]
    defects = [i for i in failed if i["kind"] == "defect"]
    limits = [i for i in failed if i["kind"] == "limitation"]
    issues = [_issue(i) for i in failed]
    stage = _forced_stage(force_revise)
    forced = stage is not None and round < force_rounds and left
    if forced:
        issues.append({"id": FORCED_ISSUE, "severity": "major", "category": STAGE_DIMENSION[stage],
                       "target_stage": stage,
                       "description": f"Revision of the {stage} stage requested by configuration (force_revise).",
                       "recommendation": f"Re-run {stage} and everything downstream of it.", "unfixable": False,
                       "source": "config", "kind": "forced", "actions": []})
    scores, overall = dimension_scores(issues, cfg["dimensions"], cfg["penalties"], cfg["start"])
    notes: list[str] = []
    if critical:
        verdict = rubric_verdict = "ABORT"
    elif acting or defects or forced:
        rubric_verdict = "REVISE"
        if (acting and left) or forced:
            verdict = "REVISE"
        else:
            verdict = UNVERIFIED
            if acting:
                notes.append(f"REVISE in round {round} with no revision rounds left (max {max_revisions}): "
                             "the paper is written and flagged UNVERIFIED")
            if defects:
                notes.append(f"failed item(s) {', '.join(i['id'] for i in defects)} that no re-run supplies: the "
                             "paper is written and flagged UNVERIFIED")
    else:
        verdict = rubric_verdict = "PASS"
    actions = [dict(a, outcome=(spec.get("outcome") or {}).get("name")) for i in acting for a in i["actions"]]
    start = None
    if verdict == "REVISE":
        stages = [a["stage"] for a in actions] + ([stage] if forced else [])
        start = min(stages, key=STAGES.index)
    instructions: dict[str, list[str]] = {}
    for i in issues:
        if i.get("recommendation") and i["recommendation"] not in instructions.setdefault(i["target_stage"], []):
            instructions[i["target_stage"]].append(i["recommendation"])
    for a in actions if verdict == "REVISE" else []:
        text = f"Apply {a['action']} {a['value']} ({a['stage']}): {a['reason']}"
        instructions.setdefault(a["stage"], []).append(text)
    limitations = [f"{i['label']}: {i['detail']}" for i in limits]
    if limitations and verdict != "ABORT":
        notes.append(f"{len(limitations)} limitation(s) of the data the paper must report "
                     f"({', '.join(i['id'] for i in limits)}): write-targeted issues")
    if verdict == "REVISE":
        notes.append(f"REVISE: the next round re-runs from {start}")
    abort = next((f"{i['label']}: {i['detail']}." for i in critical), None)
    return {
        "round": round,
        "task": "causal",
        "design": (spec.get("design") or {}).get("kind"),
        "verdict": verdict,
        "rubric_verdict": rubric_verdict,
        "model_verdict": None,
        "overall_score": overall,
        "dimension_scores": scores,
        "checklist": [{k: i[k] for k in ("id", "label", "passed", "severity", "detail")} for i in items],
        "checks": [{"id": i["id"], "function": f"causal.{i['id']}", "passed": i["passed"], "detail": i["detail"],
                    "severity": i["severity"]} for i in items],
        "issues": issues,
        "limitations": limitations,
        "revision_instructions": {s: v for s, v in instructions.items() if v},
        "revision_actions": actions if verdict == "REVISE" else [],
        "rerun_from": start,
        "abort_reason": abort if verdict == "ABORT" else None,
        "unverified": verdict == UNVERIFIED,
        "forced": forced,
        "max_revisions": max_revisions,
        "thresholds": dict(cfg["thresholds"]),
        "backend": "offline",
        "notes": notes,
    }


def trimming_threshold(reviews: list[dict[str, Any]], default: float) -> float:
    """The propensity trimming threshold a round's analyze stage applies: `default` (settings
    trimming_threshold), raised by the trimming actions of the earlier reviews (the largest asked wins, so
    a later review never loosens an earlier request)."""
    out = float(default)
    for rv in reviews:
        for a in rv.get("revision_actions") or []:
            if a.get("action") == TRIMMING_ACTION:
                value = _num(a.get("value"))
                if value is None or not 0 < value < 0.5:
                    raise EdmArsError(f"review of round {rv.get('round')}: {TRIMMING_ACTION} needs a threshold in "
                                      f"(0, 0.5), not {a.get('value')!r}")
                out = max(out, value)
    return out
