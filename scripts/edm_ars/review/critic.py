"""Critic: the rubric as data, its code checks, dimension scores and the verdict computed by rule.

The rubric (config/rubric.yaml) lists about thirty items in four weighted dimensions. Items checked in
code run first, as small pure functions registered in :data:`CHECKS` by name, before any model reads
anything. The offline Critic (:func:`review`) scores the code issues; the model Critic
(:func:`review_with_model`) adds a model's reading of the artifacts (the rubric's `model` items) and
merges its issues with the code's. Either way the verdict is computed in code by
:func:`compute_verdict`: a model's verdict is advisory, and every disagreement is written to the notes.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import read_yaml
from edm_ars.core.conventions import REGRESSION, STACKING, applied_threshold
from edm_ars.core.errors import EdmArsError
from edm_ars.data.registry import DRAFT_MARKER, Registry, draft_marker_keys, rules_text
from edm_ars.formulate.spec import validate_spec
from edm_ars.review import actions as act

STAGES = ["formulate", "engineer", "analyze"]  # the stages a review can re-run, in order
TARGETS = [*STAGES, "write"]  # write-targeted issues go to the Writer and re-run nothing
SEVERITIES = ("critical", "major", "minor")
VERDICTS = ("PASS", "REVISE", "ABORT")
DIMENSIONS = {"problem_formulation": 0.25, "data_preparation": 0.25, "analysis": 0.30,
              "substantive_validity": 0.20}
STAGE_DIMENSION = {"formulate": "problem_formulation", "engineer": "data_preparation", "analyze": "analysis",
                   "write": "substantive_validity"}
PENALTY = {"critical": 4.0, "major": 2.0, "minor": 0.5}
START_SCORE = 10.0
PASS_SCORE = 7.0
MAX_MAJOR = 2
DEFAULT_RUBRIC = Path(__file__).resolve().parents[3] / "config" / "rubric.yaml"
RESULTS = "results.json"  # the artifact the checks read the applied thresholds from
#: Figures a model Critic may see as images (when a PNG rendering exists), in this order.
KEY_FIGURES = ("roc", "observed_predicted", "shap_summary", "fairness")
MAX_IMAGE_BYTES = 5_000_000
SCORE_RULE = "overall score = min(model overall score, rubric overall score of the merged issues)"


# ==================================================================================== the rubric
def load_rubric(path: str | Path | None = None) -> dict[str, Any]:
    """Read and check a rubric file; returns {version, path, dimensions {name: weight}, penalties, start, items}."""
    path = Path(path) if path is not None else DEFAULT_RUBRIC
    data = read_yaml(path, "rubric", EdmArsError)
    if not isinstance(data, dict) or not isinstance(data.get("items"), list) or not isinstance(
            data.get("dimensions"), dict):
        raise EdmArsError(f"{path}: a rubric needs a mapping `dimensions` and a list `items`")
    dims = {name: float(d["weight"] if isinstance(d, dict) else d) for name, d in data["dimensions"].items()}
    scoring = data.get("scoring") or {}
    rubric = {"version": data.get("version", 1), "path": str(path), "dimensions": dims,
              "descriptions": {n: (d.get("description", "") if isinstance(d, dict) else "")
                               for n, d in data["dimensions"].items()},
              "penalties": {**PENALTY, **{k: float(v) for k, v in (scoring.get("penalties") or {}).items()}},
              "start": float(scoring.get("start", START_SCORE)), "items": data["items"]}
    problems = rubric_problems(rubric)
    if problems:
        raise EdmArsError(f"{path}: the rubric is not valid:\n" + "\n".join(f"  - {p}" for p in problems))
    return rubric


def rubric_problems(rubric: dict[str, Any]) -> list[str]:
    """Everything wrong with a parsed rubric (empty when it is usable)."""
    problems = []
    weights = rubric["dimensions"]
    if not math.isclose(sum(weights.values()), 1.0, abs_tol=1e-6):
        problems.append(f"dimension weights sum to {sum(weights.values()):g}, not 1")
    seen: set[str] = set()
    for n, item in enumerate(rubric["items"]):
        where = f"item {n + 1} ({item.get('id', '?') if isinstance(item, dict) else item!r})"
        if not isinstance(item, dict):
            problems.append(f"{where}: not a mapping")
            continue
        missing = [k for k in ("id", "dimension", "description", "severity", "check", "target_stage",
                               "recommendation") if not item.get(k)]
        if missing:
            problems.append(f"{where}: missing {', '.join(missing)}")
        if item.get("id") in seen:
            problems.append(f"{where}: duplicate id")
        seen.add(item.get("id"))
        if item.get("dimension") not in weights:
            problems.append(f"{where}: unknown dimension {item.get('dimension')!r}")
        if item.get("severity") not in SEVERITIES:
            problems.append(f"{where}: severity must be one of {', '.join(SEVERITIES)}")
        if item.get("target_stage") not in TARGETS:
            problems.append(f"{where}: target_stage must be one of {', '.join(TARGETS)}")
        if item.get("check") == "code":
            if item.get("function") not in CHECKS:
                problems.append(f"{where}: unknown check function {item.get('function')!r}")
        elif item.get("check") != "model":
            problems.append(f"{where}: check must be code or model")
        if item.get("unfixable") and item.get("severity") != "critical":
            problems.append(f"{where}: only a critical item can be unfixable")
    return problems


def _rubric(rubric: dict[str, Any] | str | Path | None) -> dict[str, Any]:
    return rubric if isinstance(rubric, dict) else load_rubric(rubric)


def items_of(rubric: dict[str, Any], check: str) -> list[dict[str, Any]]:
    return [i for i in rubric["items"] if i["check"] == check]


# ==================================================================================== code checks
@dataclass(frozen=True)
class Artifacts:
    """What the code checks read: the round's specification, data report and results (and the registry).

    The thresholds the analysis applied (quality floor, leakage AUC, stability) are read from the results
    (`thresholds`, `stability.thresholds`), never from the rubric: a check that needs a missing one fails
    with an error naming results.json and the key."""

    spec: dict[str, Any]
    report: dict[str, Any]
    results: dict[str, Any]
    reg: Registry | None = None
    claims: dict[str, Any] | None = None  # the results debate's claims.json of the round
    manifest: dict[str, Any] | None = None  # output/data/dataset.json: what the rows are (provenance)
    dgp: dict[str, Any] | None = None  # output/data/dgp.json when the workflow generated the rows


@dataclass(frozen=True)
class Finding:
    """One check's outcome. passed None: not applicable or skipped (no issue). severity: overrides the
    item's severity for a stated reason (given in the message)."""

    passed: bool | None
    detail: Any = None
    message: str = ""
    severity: str | None = None
    actions: tuple[dict[str, Any], ...] = ()  # structured revision actions that would fix the failure


Check = Callable[[Artifacts, dict[str, Any]], Finding]
CHECKS: dict[str, Check] = {}


def code_check(name: str) -> Callable[[Check], Check]:
    """Register a check function under the name a rubric item's `function` uses."""
    def register(fn: Check) -> Check:
        CHECKS[name] = fn
        return fn
    return register


def _figure_kinds(results: dict[str, Any]) -> set[str]:
    return {f.get("kind") for f in results.get("figures") or []}


def _phase_errors(results: dict[str, Any], phase: str) -> list[dict[str, Any]]:
    return [e for e in results.get("errors") or [] if isinstance(e, dict) and e.get("phase") == phase]


def _explain_failed(results: dict[str, Any]) -> str:
    errs = _phase_errors(results, "explain")
    if not errs:
        return ""
    kinds = sorted({str(e.get("type")) for e in errs})
    return (f" The explain phase recorded {len(errs)} error(s) ({', '.join(kinds)}), so this is reported as "
            "minor: the failure is known and must be reported.")


@code_check("spec_gate")
def check_spec_gate(a: Artifacts, p: dict[str, Any]) -> Finding:
    if a.reg is None:
        return Finding(None, None, "skipped: no registry was given")
    violations = validate_spec(a.spec, a.reg)
    return Finding(not violations, violations, "The specification breaks the registry's rules: "
                   + "; ".join(violations) + ".")


@code_check("registry_final")
def check_registry_final(a: Artifacts, p: dict[str, Any]) -> Finding:
    if a.reg is None:
        return Finding(None, None, "skipped: no registry was given")
    keys = draft_marker_keys(a.reg)
    return Finding(not keys, keys, f"The registry still holds drafted text ({DRAFT_MARKER}) that the paper would "
                   f"print as fact: {', '.join(keys)}.")


@code_check("outcome_absent")
def check_outcome_absent(a: Artifacts, p: dict[str, Any]) -> Finding:
    outcome = a.report.get("outcome") or (a.spec.get("outcome") or {}).get("name")
    names = {n for n in (outcome, a.report.get("outcome_source")) if n}
    sources = a.report.get("feature_sources") or {}
    leaked = sorted(c for c in a.report.get("predictors_after") or []
                    if c in names or sources.get(c) in names or any(c.startswith(f"{n}__") for n in names))
    check = next((c for c in a.report.get("checks") or [] if c.get("name") == "outcome_not_in_features"), None)
    failed = check is not None and not check.get("passed")
    passed = not leaked and not failed
    why = f"columns {leaked}" if leaked else "the data check outcome_not_in_features failed"
    return Finding(passed, {"outcome": outcome, "leaked_columns": leaked, "data_check_failed": failed},
                   f"The outcome {outcome} reached the feature matrix ({why}).")


#: Data checks with a rubric item of their own (not counted twice).
COVERED_DATA_CHECKS = {"outcome_not_in_features", "zero_school_overlap", "analytic_n_at_least_min",
                       "events_per_predictor_10", "no_outcome_proxy"}


@code_check("data_checks")
def check_data_checks(a: Artifacts, p: dict[str, Any]) -> Finding:
    failed = [c.get("name") for c in a.report.get("checks") or []
              if not c.get("passed") and c.get("name") not in COVERED_DATA_CHECKS]
    return Finding(not failed, failed, f"Data checks failed: {', '.join(map(str, failed))}.")


@code_check("school_overlap")
def check_school_overlap(a: Artifacts, p: dict[str, Any]) -> Finding:
    overlap = (a.report.get("split") or {}).get("group_overlap")
    if overlap is None:
        return Finding(None, None, "skipped: the data report records no split")
    return Finding(overlap == 0, overlap,
                   f"{overlap} clusters (schools) appear in both the training and the test rows.")


@code_check("analytic_n")
def check_analytic_n(a: Artifacts, p: dict[str, Any]) -> Finding:
    n, least = int(a.report.get("analytic_n") or 0), int(p.get("min_analytic_n", 1000))
    return Finding(n >= least, {"analytic_n": n, "minimum": least},
                   f"Only {n} analytic cases; at least {least} are required.")


@code_check("cases_per_predictor")
def check_cases_per_predictor(a: Artifacts, p: dict[str, Any]) -> Finding:
    n = int(a.report.get("analytic_n") or 0)
    k = len(a.report.get("predictors_before") or a.spec.get("predictors") or [])
    per = int(p.get("per_predictor", 10))
    return Finding(n >= per * k, {"analytic_n": n, "predictors": k, "per_predictor": per},
                   f"{n} analytic cases for {k} predictors is under {per} per predictor.")


@code_check("model_count")
def check_model_count(a: Artifacts, p: dict[str, Any]) -> Finding:
    singles = sorted(m for m in a.results.get("models") or {} if m != STACKING)
    least = int(p.get("min_models", 4))
    missing = [m for m in act.MODEL_ORDER if m not in singles][:max(0, least - len(singles))]
    return Finding(len(singles) >= least, {"models": singles, "minimum": least},
                   f"{len(singles)} individual model(s) were compared ({', '.join(singles) or 'none'}); "
                   f"at least {least} are required.",
                   actions=tuple(act.action("add_model", m, reason=f"at least {least} individual models are "
                                            "required") for m in missing))


@code_check("test_rows_only")
def check_test_rows_only(a: Artifacts, p: dict[str, Any]) -> Finding:
    got, expected = a.results.get("test_n"), a.report.get("test_n")
    return Finding(got is not None and got == expected, {"results": got, "report": expected},
                   f"Held-out metrics were computed on {got} rows, but the split has {expected} test rows.")


def _valid_interval(ci: Any) -> bool:
    return (isinstance(ci, (list, tuple)) and len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci)
            and all(math.isfinite(v) for v in ci) and ci[0] <= ci[1])


@code_check("intervals")
def check_intervals(a: Artifacts, p: dict[str, Any]) -> Finding:
    primary = a.results.get("primary_metric")
    missing = sorted(m for m, r in (a.results.get("models") or {}).items()
                     if not _valid_interval((r.get("ci") or {}).get(primary)))
    return Finding(not missing, missing,
                   f"Models without a valid 95% interval for {primary}: {', '.join(missing)}.")


@code_check("quality_floor")
def check_quality_floor(a: Artifacts, p: dict[str, Any]) -> Finding:
    primary, best = a.results.get("primary_metric"), a.results.get("best_model")
    floor = applied_threshold(a.results, "quality_floor", file=RESULTS)
    value = ((a.results.get("models") or {}).get(best) or {}).get("metrics", {}).get(primary)
    if floor is None or value is None:
        return Finding(None, {"metric": primary, "best_model": best},
                       f"not applicable: no quality floor for {primary} or no value for {best}")
    return Finding(value >= floor, {"best_model": best, "metric": primary, "value": value, "floor": floor},
                   f"The selected model {best} reaches {primary.upper()} {value:.3f}, under the quality floor "
                   f"{floor:g}: its interpretation means little.")


@code_check("shap_figures")
def check_shap_figures(a: Artifacts, p: dict[str, Any]) -> Finding:
    missing = sorted({"shap_summary", "shap_importance"} - _figure_kinds(a.results))
    note = _explain_failed(a.results)
    return Finding(not missing, {"missing": missing, "explain_errors": len(_phase_errors(a.results, "explain"))},
                   f"SHAP figures are missing: {', '.join(missing)}." + note, "minor" if note else None)


@code_check("top_features")
def check_top_features(a: Artifacts, p: dict[str, Any]) -> Finding:
    top = a.results.get("top_features") or []
    note = _explain_failed(a.results)
    return Finding(bool(top), len(top), f"No top features are reported for the interpreted model "
                   f"({a.results.get('interpreted_model')})." + note, "minor" if note else None)


@code_check("subgroup_results")
def check_subgroup_results(a: Artifacts, p: dict[str, Any]) -> Finding:
    audit = a.results.get("fairness") or {}
    reported = sorted(name for name, rec in (audit.get("attributes") or {}).items()
                      if any(g.get("metric") is not None for g in rec.get("groups") or []))
    errs = _phase_errors(a.results, "fairness")
    why = f" The fairness phase recorded {len(errs)} error(s)." if errs else ""
    return Finding(bool(reported), {"attributes": reported, "skipped": audit.get("skipped") or {}},
                   "No subgroup (fairness) results are reported for any protected attribute." + why)


def fairness_audit_gaps(results: dict[str, Any]) -> list[str]:
    """What a subgroup audit lacks to mean something, each naming the results.json key: binary outcomes need
    per-group calibration (citl, calibration_slope) and error rates at a stated decision rule (decision_rule), not at
    an unstated 0.5 threshold; continuous outcomes need per-group RMSE and bias in outcome SD units (error_scale),
    not R2. Empty when there is no audit (an_subgroup_results reports that)."""
    audit = results.get("fairness") or {}
    attrs = {a: r for a, r in (audit.get("attributes") or {}).items() if r.get("kind") != "intersection"}
    if not attrs:
        return []
    groups = [(a, g) for a, r in attrs.items() for g in r.get("groups") or [] if g.get("reliable")]
    out = []
    if results.get("task") == "binary_classification":
        if not isinstance(audit.get("decision_rule"), dict):
            out.append("results.json:fairness.decision_rule is missing: the TPR/FPR are not at a stated decision rule")
        lacking = sorted({a for a, g in groups if "citl" not in g or "calibration_slope" not in g})
        if lacking:
            out.append(f"results.json:fairness.attributes.{{{', '.join(lacking)}}}.groups lack citl/calibration_slope "
                       "(per-group calibration)")
    else:
        if audit.get("primary_metric") == "r2" or any("r2" in g for _, g in groups):
            out.append("results.json:fairness compares R2 across groups (not comparable when the groups' outcome "
                       "variances differ); report RMSE and mean error")
        if not isinstance(audit.get("error_scale"), dict):
            out.append("results.json:fairness.error_scale is missing: the errors' units are not stated")
    return out


def supplementary_problems(results: dict[str, Any]) -> list[str]:
    """What is wrong with the round's supplementary analyses (results.json `supplementary`): an analysis dropped after
    its attempts, or one whose result does not report the numbers its purpose announced. Empty when none were
    planned (codegen.n 0) or all ran to what they announced."""
    sup = results.get("supplementary") or {}
    out = []
    for name, rec in sorted((sup.get("analyses") or {}).items()):
        if rec.get("status") != "ok":
            out.append(f"{name} was dropped ({rec.get('reason') or 'no reason recorded'})")
            continue
        missing = [r for r in rec.get("reports") or [] if r not in (rec.get("numbers") or {})]
        if missing:
            out.append(f"{name}: its purpose announced {', '.join(missing)}, which its result does not report")
    return out


@code_check("supplementary_analyses")
def check_supplementary(a: Artifacts, p: dict[str, Any]) -> Finding:
    if not (a.results.get("supplementary") or {}).get("analyses"):
        return Finding(None, {}, "No supplementary analyses were planned.")
    problems = supplementary_problems(a.results)
    return Finding(not problems, {"problems": problems},
                   "Supplementary analyses: " + "; ".join(problems) + ".")


@code_check("fairness_audit")
def check_fairness_audit(a: Artifacts, p: dict[str, Any]) -> Finding:
    gaps = fairness_audit_gaps(a.results)
    return Finding(not gaps, {"missing": gaps}, "The subgroup audit lacks " + "; ".join(gaps) + ".")


def fairness_flags(results: dict[str, Any]) -> list[str]:
    """The flagged subgroup gaps (unreliable-group notices excluded)."""
    flags = [f[len("fairness:"):].strip() for f in results.get("flags") or [] if f.startswith("fairness:")]
    if not flags:
        flags = [f for f in (results.get("fairness") or {}).get("flags") or [] if "unreliable" not in f]
    return flags


@code_check("fairness_flags")
def check_fairness_flags(a: Artifacts, p: dict[str, Any]) -> Finding:
    flags = fairness_flags(a.results)
    attrs = sorted({f.split(":", 1)[0].strip() for f in flags})
    return Finding(not flags, {"n_flags": len(flags), "attributes": attrs, "flags": flags},
                   f"{len(flags)} subgroup gap(s) were flagged ({', '.join(attrs)}): discuss the disparity.")


@code_check("stability")
def check_stability(a: Artifacts, p: dict[str, Any]) -> Finding:
    st = a.results.get("stability") or {}
    unstable = st.get("unstable")
    overlap = (st.get("top5_overlap") or {}).get("mean")
    detail = {"unstable": unstable, "top5_overlap_mean": overlap, "n_perturbations": st.get("n_perturbations")}
    if unstable is None:
        return Finding(None, detail, "not assessed: no stability verdict was recorded")
    detail["threshold"] = threshold = applied_threshold(a.results, "unstable_top5", file=RESULTS, at="stability")
    mean = f"{overlap:.2f}" if isinstance(overlap, (int, float)) else "unknown"
    return Finding(not unstable, detail, f"The interpretation is unstable: the mean top-5 SHAP overlap ({mean}) "
                   f"across {st.get('n_perturbations')} perturbations is under the stability threshold "
                   f"{threshold:g}.")


@code_check("phase_errors")
def check_phase_errors(a: Artifacts, p: dict[str, Any]) -> Finding:
    errors = [e for e in a.results.get("errors") or [] if isinstance(e, dict)]
    listed = [" ".join(str(x) for x in (e.get("phase"), e.get("what")) if x) + f": {e.get('type')}" for e in errors]
    return Finding(not errors, [{k: e.get(k) for k in ("phase", "what", "type")} for e in errors],
                   f"{len(errors)} analysis phase error(s) were recorded: " + "; ".join(listed[:8])
                   + ("; ..." if len(listed) > 8 else "") + ".")


@code_check("evaluation_figures")
def check_evaluation_figures(a: Artifacts, p: dict[str, Any]) -> Finding:
    need = ({"roc", "calibration"} if a.results.get("task") == "binary_classification"
            else {"observed_predicted", "residuals"})
    missing = sorted(need - _figure_kinds(a.results))
    return Finding(not missing, missing, f"Evaluation figures are missing: {', '.join(missing)}.")


@code_check("figure_sanity")
def check_figure_sanity(a: Artifacts, p: dict[str, Any]) -> Finding:
    """Each figure as drawn (its `drawn` record in results.json): numeric axes labelled, a legend wherever more
    than one series is plotted, an ordered categorical axis in its order (edm_ars.analysis.figure_sanity)."""
    from edm_ars.analysis.figure_sanity import figures_problems

    problems = figures_problems(a.results, a.reg)
    shown = "; ".join(problems[:6]) + ("; ..." if len(problems) > 6 else "")
    return Finding(not problems, {"figures": len(a.results.get("figures") or []), "problems": problems},
                   f"{len(problems)} figure defect(s) in results.json figures: {shown}.")


def outcome_proxies(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The feature columns the DataEngineer's failed data check no_outcome_proxy found near-identical to the outcome
    in the training rows, each with its source predictor and the threshold applied (empty: none, or no such check)."""
    check = next((c for c in report.get("checks") or [] if c.get("name") == "no_outcome_proxy"), None)
    if check is None or check.get("passed"):
        return []
    detail = check.get("detail") or {}
    sources = report.get("feature_sources") or {}
    return [{**p, "source": sources.get(p.get("column"), p.get("column")), "threshold": detail.get("threshold")}
            for p in detail.get("proxies") or [] if isinstance(p, dict)]


@code_check("leakage_auc")
def check_leakage_auc(a: Artifacts, p: dict[str, Any]) -> Finding:
    """Possible leakage, for both tasks: a held-out AUC (binary) or R2 (regression) above the ceiling the analysis
    recorded (results.json thresholds.leakage_auc, thresholds.leakage_r2), a possible_leakage flag, or a feature
    column that the DataEngineer's data check no_outcome_proxy found near-identical to the outcome in the training
    rows. (The item keeps its historical name `leakage_auc`.)"""
    limit = applied_threshold(a.results, "leakage_auc", file=RESULTS)  # None: not applied (no AUC)
    r2_limit = (applied_threshold(a.results, "leakage_r2", file=RESULTS) if a.results.get("task") == REGRESSION
                else None)  # a binary results.json may predate the R2 ceiling; it never applies there

    def above(metric: str, ceiling: float | None) -> dict[str, float]:
        return {m: float(r["metrics"][metric]) for m, r in (a.results.get("models") or {}).items()
                if ceiling is not None and isinstance((r.get("metrics") or {}).get(metric), (int, float))
                and r["metrics"][metric] > ceiling}

    high, high_r2 = above("auc", limit), above("r2", r2_limit)
    flagged = [f for f in a.results.get("flags") or [] if f.startswith("possible_leakage")]
    proxies = outcome_proxies(a.report)
    reasons = []
    if high or (flagged and not high_r2 and r2_limit is None):
        why = f"above the leakage threshold {limit:g}" if limit is not None else "flagged as possible leakage"
        listed = ", ".join(f"{m} {v:.3f}" for m, v in sorted(high.items())) or "; ".join(flagged)
        reasons.append(f"Held-out AUC {why} suggests leakage through a proxy of the outcome ({listed}).")
    if high_r2 or (flagged and not high and r2_limit is not None):
        listed = ", ".join(f"{m} {v:.3f}" for m, v in sorted(high_r2.items())) or "; ".join(flagged)
        why = f"above the leakage threshold {r2_limit:g}" if high_r2 else "flagged as possible leakage"
        reasons.append(f"Held-out R2 {why} suggests leakage through a proxy of the outcome ({listed}).")
    if proxies:
        outcome = a.report.get("outcome") or (a.spec.get("outcome") or {}).get("name")
        listed = "; ".join(q["column"] + (f" (predictor {q['source']})" if q["source"] != q["column"] else "")
                           + f" r = {q['r']:.3f}" + (", separating the two classes" if q.get("separates_classes")
                                                      else "") for q in proxies[:5])
        binary = a.results.get("task") != REGRESSION
        reasons.append(f"The data check no_outcome_proxy failed: in the training rows, feature columns correlate with "
                       f"the outcome {outcome} above |r| = {proxies[0]['threshold']:g}"
                       + (" or separate its two classes" if binary else "")
                       + f" ({listed}); such a predictor is a copy or a proxy of the outcome.")
    predictors = {q["name"] for q in a.spec.get("predictors") or []}
    # the proxy the data check names is the first suspect; else the strongest predictor of a too-accurate model
    suspect = next((q["source"] for q in proxies if q["source"] in predictors), None)
    top = suspect or next((f["feature"] for f in a.results.get("top_features") or []
                           if f.get("feature") in predictors), None)
    reason = ("feature column correlated with the outcome in the training rows above the data check's threshold "
              "(suspected proxy of the outcome)" if suspect else
              "strongest predictor of a model with held-out performance above the leakage threshold (suspected proxy "
              "of the outcome)")
    fix = (act.action("drop_predictor", top, reason=reason),) if top else ()
    passed = not high and not high_r2 and not flagged and not proxies
    return Finding(passed, {"models": high, "flags": flagged, "leakage_auc": limit, "r2_models": high_r2,
                            "leakage_r2": r2_limit, "proxies": proxies}, " ".join(reasons), actions=fix)


@code_check("claims_consistent")
def check_claims_consistent(a: Artifacts, p: dict[str, Any]) -> Finding:
    """The results debate's claims agree with each other and with the comparison evidence of results.json
    (writer.consistency.claim_problems)."""
    if a.claims is None:
        return Finding(None, None, "skipped: no claims.json was given")
    from edm_ars.review.consistency import claim_problems

    problems = claim_problems(a.claims, a.results)
    return Finding(not problems, problems, "The results debate's claims are inconsistent: " + "; ".join(problems)
                   + ".")


def generated_evidence(manifest: dict[str, Any] | None, dgp: dict[str, Any] | None) -> list[str]:
    """What shows that the rows were generated, whatever the manifest declares: a data-generating process, or a
    source the workflow generates."""
    found = []
    if dgp is not None:
        found.append("output/data/dgp.json records the data-generating process of the rows (rule synthesize)")
    prov = (manifest or {}).get("provenance")
    if isinstance(prov, dict) and prov.get("source_kind") == "synthetic":
        found.append("the data manifest records the source kind synthetic (registry/datasets.yaml)")
    if isinstance(prov, dict) and prov.get("generator"):
        found.append("the data manifest names the rule that generated the rows")
    return found


@code_check("generated_data_disclosed")
def check_generated_data_disclosed(a: Artifacts, p: dict[str, Any]) -> Finding:
    """Generated rows must be declared as such in the data manifest (provenance.kind generated), the one fact the
    Writer states in the abstract, the data section, the limitations and the availability statement."""
    evidence = generated_evidence(a.manifest, a.dgp)
    if not evidence:
        return Finding(None, None, "not applicable: nothing shows that the rows were generated"
                       if a.manifest is not None else "skipped: no data manifest was given")
    why = "; ".join(evidence)
    prov = (a.manifest or {}).get("provenance")
    declared = prov.get("kind") if isinstance(prov, dict) else None
    detail = {"evidence": evidence, "declared_kind": declared}
    if a.manifest is None:
        return Finding(False, detail, f"The rows were generated ({why}), but no data manifest "
                       "(output/data/dataset.json) discloses their provenance.")
    if not declared:
        return Finding(False, detail, f"The rows were generated ({why}), but the data manifest "
                       "output/data/dataset.json does not disclose it (no provenance.kind): the paper would present "
                       "generated rows as collected data.")
    return Finding(declared == "generated", detail,
                   f"The rows were generated ({why}), but the data manifest output/data/dataset.json declares "
                   f"provenance.kind '{declared}': the paper would present generated rows as a {declared} "
                   "data set.")


def _issue(id_: str, severity: str, dimension: str, stage: str, description: str, recommendation: str,
           unfixable: bool = False, source: str = "code", actions: tuple | list = (),
           caps: bool = False) -> dict[str, Any]:
    issue = {"id": id_, "severity": severity, "category": dimension, "target_stage": stage,
             "description": description, "recommendation": recommendation, "unfixable": unfixable,
             "source": source, "actions": [dict(a, issue=a.get("issue") or id_) for a in actions]}
    if caps:
        issue["caps_verdict"] = True
    return issue


def run_checks(rubric: dict[str, Any], artifacts: Artifacts, overrides: dict[str, Any] | None = None
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every code item of the rubric; returns (checks, issues). `overrides` replace item parameters of the
    same name (e.g. min_models from the workflow's configuration)."""
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    checks, issues = [], []
    for item in items_of(rubric, "code"):
        params = dict(item.get("params") or {})
        params.update({k: v for k, v in overrides.items() if k in params})
        f = CHECKS[item["function"]](artifacts, params)
        severity = f.severity or item["severity"]
        record = {"id": item["id"], "function": item["function"], "passed": f.passed, "detail": f.detail,
                  "severity": severity}
        if f.passed is None:
            record.update(skipped=True, message=f.message)
        checks.append(record)
        if f.passed is False:
            record["message"] = f.message
            issues.append(_issue(item["id"], severity, item["dimension"], item["target_stage"],
                                 f.message or item["description"], item["recommendation"],
                                 unfixable=bool(item.get("unfixable")) and severity == "critical",
                                 actions=f.actions, caps=bool(item.get("caps_verdict"))))
    return checks, issues


def rubric_checks(spec: dict[str, Any], report: dict[str, Any], results: dict[str, Any], reg: Registry | None,
                  *, min_models: int | None = None, min_analytic_n: int | None = None,
                  rubric: dict[str, Any] | str | Path | None = None,
                  claims: dict[str, Any] | None = None, manifest: dict[str, Any] | None = None,
                  dgp: dict[str, Any] | None = None) -> tuple[list[dict], list[dict]]:
    """Run the code-checked rubric items; return (checks, issues)."""
    return run_checks(_rubric(rubric), Artifacts(spec, report, results, reg, claims=claims, manifest=manifest, dgp=dgp),
                      {"min_models": min_models, "min_analytic_n": min_analytic_n})


# ==================================================================================== scores and verdict
def dimension_scores(issues: list[dict[str, Any]], weights: dict[str, float] | None = None,
                     penalties: dict[str, float] | None = None, start: float = START_SCORE
                     ) -> tuple[dict[str, float], float]:
    """Each dimension starts at `start` and loses its issues' penalties (never below 0); overall = weighted sum."""
    weights, penalties = weights or DIMENSIONS, penalties or PENALTY
    scores = {d: float(start) for d in weights}
    for i in issues:
        d = i.get("category")
        if d not in scores:
            d = STAGE_DIMENSION.get(i.get("target_stage"), "analysis")
            d = d if d in scores else next(iter(scores))
        scores[d] = max(0.0, scores[d] - penalties[i["severity"]])
    overall = round(sum(scores[d] * w for d, w in weights.items()), 2)
    return scores, overall


def _not_pass_reasons(critical: list[dict], major: list[dict], overall: float, forced: bool,
                      capping: list[dict] | None = None) -> list[str]:
    reasons = []
    if capping:
        reasons.append(f"issue(s) that cap the verdict {', '.join(i['id'] for i in capping)}")
    if critical:
        reasons.append(f"critical issue(s) {', '.join(i['id'] for i in critical)}")
    if len(major) > MAX_MAJOR:
        reasons.append(f"{len(major)} major issues (at most {MAX_MAJOR})")
    if overall < PASS_SCORE:
        reasons.append(f"overall score {overall:g} under {PASS_SCORE:g}")
    if forced:
        reasons.append("a revision forced by configuration")
    return reasons


def compute_verdict(issues: list[dict[str, Any]], overall: float, *, round_: int, max_revisions: int,
                    model_verdict: str | None = None, forced: bool = False) -> dict[str, Any]:
    """PASS iff no critical issue, no issue that caps the verdict (`caps_verdict`: a failed data check, a
    leakage flag, an undisclosed generated data set, an inconsistent claim, whatever its severity), at most two
    major and overall >= 7; ABORT only for an unfixable critical issue; REVISE otherwise. REVISE with no rounds left (round >= max_revisions) becomes PASS flagged
    UNVERIFIED. A model's verdict is advisory: a disagreement is recorded in the notes, never followed."""
    critical = [i for i in issues if i["severity"] == "critical"]
    major = [i for i in issues if i["severity"] == "major"]
    unfixable = [i for i in critical if i.get("unfixable")]
    capping = [i for i in issues if i.get("caps_verdict")]
    reasons = _not_pass_reasons(critical, major, overall, forced, capping)
    if unfixable:
        verdict = "ABORT"
    elif not reasons:
        verdict = "PASS"
    else:
        verdict = "REVISE"
    notes = []
    if model_verdict and model_verdict != verdict:
        if model_verdict == "ABORT":
            notes.append(f"model verdict ABORT not honoured: no unfixable critical issue; the rubric verdict is "
                         f"{verdict}")
        elif model_verdict == "PASS":
            why = ("unfixable critical issue(s) " + ", ".join(i["id"] for i in unfixable)) if unfixable else \
                "; ".join(reasons)
            notes.append(f"model verdict PASS overruled by the rubric verdict {verdict}: {why}")
        else:
            why = ("unfixable critical issue(s) " + ", ".join(i["id"] for i in unfixable)) if unfixable else \
                f"no critical issue, {len(major)} major, overall {overall:g} >= {PASS_SCORE:g}"
            notes.append(f"model verdict {model_verdict} overruled by the rubric verdict {verdict}: {why}")
    rubric_verdict, unverified = verdict, False
    if verdict == "REVISE" and round_ >= max_revisions:
        notes.append(f"REVISE in round {round_} with no revision rounds left (max {max_revisions}): "
                     "the paper is written and flagged UNVERIFIED")
        verdict, unverified = "PASS", True
    return {"verdict": verdict, "rubric_verdict": rubric_verdict, "unverified": unverified, "notes": notes}


def rerun_from(issues: list[dict[str, Any]], actions: list[dict[str, Any]] | None = None) -> str | None:
    """The earliest stage any issue or revision action targets (formulate < engineer < analyze): it and
    everything downstream re-run. Write-targeted issues re-run nothing."""
    targets = [i["target_stage"] for i in issues if i.get("target_stage") in STAGES]
    targets += [a["stage"] for a in actions or [] if a.get("stage") in STAGES]
    return min(targets, key=STAGES.index) if targets else None


def revision_actions(issues: list[dict[str, Any]], extra: list[dict[str, Any]] | None = None
                     ) -> list[dict[str, Any]]:
    """The structured actions of the issues, then any extra (a model Critic's validated ones), no repeats."""
    return act.unique([a for i in issues for a in i.get("actions") or []] + list(extra or []))


def _instructions(issues: list[dict[str, Any]], extra: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for stage, text in [(i["target_stage"], i.get("recommendation")) for i in issues] + [
            (s, t) for s, texts in (extra or {}).items() for t in texts]:
        if text and text not in out.setdefault(stage, []):
            out[stage].append(text)
    return {s: v for s, v in out.items() if v}


def _assemble(round_: int, issues: list[dict[str, Any]], checks: list[dict[str, Any]], scores: dict[str, float],
              overall: float, decision: dict[str, Any], *, forced: bool, backend: str, max_revisions: int,
              model_verdict: str | None = None, notes: list[str] | None = None,
              extra_instructions: dict[str, list[str]] | None = None,
              extra_actions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The review: the verdict's consequences (re-run stage, abort reason, write notes) and every field."""
    notes = list(notes or []) + decision["notes"]
    verdict, unverified = decision["verdict"], decision["unverified"]
    instructions = _instructions(issues, extra_instructions)
    actions = revision_actions(issues, extra_actions)
    for a in [a for a in actions if a.get("issue") != "forced_revision"]:  # forced: its own recommendation
        text = f"Apply {act.describe(a)}: {a.get('reason') or a.get('issue')}"
        if text not in instructions.setdefault(a["stage"], []):
            instructions[a["stage"]].append(text)
    start = rerun_from(issues, actions)
    if start is None:
        stages = [s for s in STAGES if instructions.get(s)]
        start = stages[0] if stages else None
    if verdict == "REVISE" and start is None:
        notes.append("REVISE without an issue targeting formulate, engineer or analyze: no stage can be re-run, "
                     "so the paper is written and flagged UNVERIFIED")
        verdict, unverified = "PASS", True
    write = [i["id"] for i in issues if i["target_stage"] == "write"]
    if write:
        notes.append(f"{len(write)} issue(s) target the write stage ({', '.join(write)}): they go to the Writer "
                     "as instructions and re-run no analysis stage")
    abort = next((i["description"] for i in issues if i.get("unfixable") and i["severity"] == "critical"), None)
    return {
        "round": round_,
        "verdict": verdict,
        "rubric_verdict": decision.get("rubric_verdict", verdict),
        "model_verdict": model_verdict,
        "overall_score": overall,
        "dimension_scores": scores,
        "issues": issues,
        "checks": checks,
        "revision_instructions": instructions,
        "revision_actions": actions if verdict == "REVISE" else [],
        "rerun_from": start if verdict == "REVISE" else None,
        "abort_reason": abort if verdict == "ABORT" else None,
        "unverified": unverified,
        "forced": forced,
        "max_revisions": max_revisions,
        "backend": backend,
        "notes": notes,
    }


def forced_actions(stage: str, report: dict[str, Any], results: dict[str, Any]) -> list[dict[str, Any]]:
    """What a configured (forced) revision of a stage changes, so that the round differs in a stated way:
    formulate restates the question; engineer switches the imputation strategy (by missingness <-> simple);
    analyze adds the first model family not yet compared (nothing when all are)."""
    why = "revision requested by configuration (force_revise)"
    if stage == "formulate":
        return [act.action("tighten_question", reason=why)]
    if stage == "engineer":
        current = report.get("imputation_strategy") or "by_missingness"
        return [act.action("change_imputation", "simple" if current != "simple" else "by_missingness",
                           reason=why)]
    if stage == "analyze":
        missing = [m for m in act.MODEL_ORDER if m not in (results.get("models") or {})]
        return [act.action("add_model", missing[0], reason=why)] if missing else []
    return []


def review(spec: dict[str, Any], report: dict[str, Any], results: dict[str, Any], reg: Registry | None, *,
           round_: int, max_revisions: int, force_revise: str | None = None, min_models: int | None = None,
           min_analytic_n: int | None = None, rubric: dict[str, Any] | str | Path | None = None,
           force_rounds: int = 1, claims: dict[str, Any] | None = None, manifest: dict[str, Any] | None = None,
           dgp: dict[str, Any] | None = None) -> dict[str, Any]:
    """The offline Critic: the rubric's code checks, scores and the verdict by rule (model_verdict None).

    `min_models` and `min_analytic_n` override the rubric's parameters when given; `force_revise` (in the
    first `force_rounds` rounds, with revision rounds allowed) forces REVISE targeting that stage. `claims` is the
    round's claims.json (the results debate), which the check of consistent claims reads. `manifest` (the data
    manifest) and `dgp` (the data-generating process of generated rows) feed the provenance check."""
    rub = _rubric(rubric)
    checks, issues = run_checks(rub, Artifacts(spec, report, results, reg, claims=claims, manifest=manifest, dgp=dgp),
                                {"min_models": min_models, "min_analytic_n": min_analytic_n})
    forced = bool(force_revise) and round_ < force_rounds and max_revisions > 0
    if forced:
        issues.append(_issue("forced_revision", "major", STAGE_DIMENSION.get(force_revise, "analysis"),
                             force_revise, f"Revision of the {force_revise} stage requested by configuration "
                             "(force_revise).", f"Re-run {force_revise} and everything downstream of it.",
                             source="config", actions=forced_actions(force_revise, report, results)))
    scores, overall = dimension_scores(issues, rub["dimensions"], rub["penalties"], rub["start"])
    decision = compute_verdict(issues, overall, round_=round_, max_revisions=max_revisions, forced=forced)
    return _with_outcome(_assemble(round_, issues, checks, scores, overall, decision, forced=forced,
                                   backend="offline", max_revisions=max_revisions), spec)


def _with_outcome(review_: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """Actions name the outcome they were asked for (a lesson carries a predictor action only to studies
    of the same outcome)."""
    outcome = (spec.get("outcome") or {}).get("name")
    review_["revision_actions"] = [dict(a, outcome=outcome) for a in review_["revision_actions"]]
    return review_


# ==================================================================================== the model Critic
_ISSUE_SCHEMA = {
    "type": "object", "required": ["id", "severity", "description", "recommendation", "target_stage"],
    "properties": {"id": {"type": "string", "minLength": 1}, "severity": {"enum": list(SEVERITIES)},
                   "category": {"type": "string"}, "description": {"type": "string", "minLength": 1},
                   "recommendation": {"type": "string"}, "target_stage": {"enum": TARGETS}}}
MODEL_REVIEW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["overall_score", "dimension_scores", "issues", "revision_instructions", "verdict"],
    "properties": {
        "overall_score": {"type": "number", "minimum": 0, "maximum": 10},
        "dimension_scores": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0,
                                                                        "maximum": 10}},
        "issues": {"type": "array", "items": _ISSUE_SCHEMA},
        "revision_instructions": {"type": "object", "additionalProperties": {
            "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]}},
        "verdict": {"enum": list(VERDICTS)},
        "revision_actions": {"type": "array", "items": {"type": "object", "required": ["action"]}},
    },
}


def _r(v: Any, digits: int = 4) -> Any:
    if isinstance(v, float):
        return round(v, digits)
    if isinstance(v, list):
        return [_r(x, digits) for x in v]
    if isinstance(v, dict):
        return {k: _r(x, digits) for k, x in v.items()}
    return v


def _dump(obj: Any) -> str:
    return json.dumps(_r(obj), indent=1, ensure_ascii=False, default=str)


def spec_summary(spec: dict[str, Any]) -> dict[str, Any]:
    keys = ("research_question", "outcome", "task", "population", "subgroups", "expected_contribution",
            "limitations", "novelty_score", "revision_notes")
    out = {k: spec.get(k) for k in keys if k in spec}
    out["predictors"] = [{k: p.get(k) for k in ("name", "label", "wave", "rationale")}
                         for p in spec.get("predictors") or []]
    return out


def report_summary(report: dict[str, Any]) -> dict[str, Any]:
    keys = ("original_n", "analytic_n", "retention", "complete_case_n", "train_n", "test_n", "outcome", "task",
            "class_balance", "outcome_summary", "predictors_before", "predictors_dropped", "split",
            "imputation_protocol", "warnings", "revision_notes")
    out = {k: report.get(k) for k in keys if k in report}
    out["encoded_columns"] = len(report.get("predictors_after") or [])
    out["missingness"] = {v: {"pct_missing": m.get("pct_missing"), "method": m.get("method")}
                          for v, m in (report.get("missingness") or {}).items()}
    out["failed_checks"] = [c for c in report.get("checks") or [] if not c.get("passed")]
    return out


def results_summary(results: dict[str, Any], *, max_flags: int = 30) -> dict[str, Any]:
    """Models with metrics and intervals, top features, subgroup results and flags, stability, errors."""
    primary = results.get("primary_metric")
    models = {name: {"label": m.get("label"), "metrics": m.get("metrics"),
                     f"{primary}_95ci": (m.get("ci") or {}).get(primary)}
              for name, m in (results.get("models") or {}).items()}
    audit = results.get("fairness") or {}
    attributes = {}
    for name, rec in (audit.get("attributes") or {}).items():
        attributes[name] = {
            "groups": [{k: g.get(k) for k in ("group", "n", "reliable", "metric", "ci")}
                       for g in rec.get("groups") or []],
            "flagged_gaps": {m: {k: g.get(k) for k in ("gap", "ci", "min_group", "max_group")}
                             for m, g in (rec.get("gaps") or {}).items() if g and g.get("flagged")},
            "derived_from": rec.get("derived_from")}
    st = results.get("stability") or {}
    flags = fairness_flags(results)
    return {
        "task": results.get("task"), "primary_metric": primary, "best_model": results.get("best_model"),
        "selection_rule": results.get("selection_rule"), "selection_evidence": results.get("selection_evidence"),
        "interpreted_model": results.get("interpreted_model"), "test_n": results.get("test_n"),
        "n_bootstrap": results.get("n_bootstrap"), "thresholds": results.get("thresholds"), "models": models,
        "top_features": [{k: f.get(k) for k in ("feature", "label", "mean_abs_shap", "direction")}
                         for f in (results.get("top_features") or [])[:10]],
        "shap_skipped": (results.get("shap") or {}).get("skipped"),
        "fairness": {"model": audit.get("model"), "primary_metric": audit.get("primary_metric"),
                     "gap_threshold": audit.get("gap_threshold"), "min_group": audit.get("min_group"),
                     "decision_rule": audit.get("decision_rule"), "error_scale": audit.get("error_scale"),
                     "bootstrap": audit.get("bootstrap"), "n_clusters": audit.get("n_clusters"),
                     "overall": audit.get("overall"), "attributes": attributes,
                     "flags": flags[:max_flags], "n_flags": len(flags)},
        "stability": {k: st.get(k) for k in ("model", "metric", "unstable", "rule", "thresholds", "n_perturbations",
                                               "metric_spread", "top5_overlap", "rank_correlation")},
        "supplementary": {name: {k: rec.get(k) for k in ("purpose", "source", "status", "reason", "reports", "numbers")}
                          for name, rec in ((results.get("supplementary") or {}).get("analyses") or {}).items()},
        "other_flags": [f for f in results.get("flags") or [] if not f.startswith("fairness:")],
        "errors": [{k: (str(e.get(k))[:200] if k == "message" else e.get(k)) for k in ("phase", "what", "type",
                                                                                       "message")}
                   for e in results.get("errors") or [] if isinstance(e, dict)],
    }


def code_findings(checks: list[dict[str, Any]], issues: list[dict[str, Any]]) -> str:
    lines = []
    for c in checks:
        state = "skipped" if c["passed"] is None else "passed" if c["passed"] else f"FAILED ({c['severity']})"
        lines.append(f"- {c['id']}: {state}" + (f": {c['message']}" if c.get("message") else ""))
    extra = [i for i in issues if i["id"] not in {c["id"] for c in checks}]
    lines += [f"- {i['id']} ({i['severity']}, {i['target_stage']}): {i['description']}" for i in extra]
    return "\n".join(lines) or "- (no code checks)"


def _item_lines(items: list[dict[str, Any]]) -> str:
    return "\n".join(f"- {i['id']} [{i['dimension']}; {i['severity']}{'; unfixable' if i.get('unfixable') else ''};"
                     f" target {i['target_stage']}]: {' '.join(str(i['description']).split())}" for i in items)


def figure_blocks(figure_paths: dict[str, str | Path] | None, *, kinds: tuple[str, ...] = KEY_FIGURES
                  ) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Anthropic content blocks for the key figures that have a PNG rendering (the file itself when it is a
    PNG, else a .png next to it); a PDF without a PNG is skipped. Returns (blocks, attached, skipped)."""
    blocks, attached, skipped = [], [], []
    for kind in kinds:
        if not figure_paths or kind not in figure_paths:
            continue
        path = Path(figure_paths[kind])
        png = path if path.suffix.lower() == ".png" else path.with_suffix(".png")
        if not png.is_file():
            skipped.append(f"{kind}: no PNG rendering of {path.name}")
            continue
        data = png.read_bytes()
        if not data.startswith(b"\x89PNG\r\n\x1a\n") or len(data) > MAX_IMAGE_BYTES:
            skipped.append(f"{kind}: {png.name} is not a PNG or is over {MAX_IMAGE_BYTES} bytes")
            continue
        blocks.append({"type": "text", "text": f"Figure ({kind}): {png.name}"})
        blocks.append({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                   "data": base64.b64encode(data).decode("ascii")}})
        attached.append(kind)
    return blocks, attached, skipped


def key_figure_paths(results: dict[str, Any], round_dir: str | Path) -> dict[str, Path]:
    """{kind: path} of the results' key figures, resolved against the round's output folder."""
    return {f["kind"]: Path(round_dir) / f["path"] for f in results.get("figures") or []
            if f.get("kind") in KEY_FIGURES and f.get("path")}


def _figures_text(results: dict[str, Any], attached: list[str]) -> str:
    lines = [f"- {f.get('kind')}: {f.get('caption', '')}" + (" (attached as an image)" if f.get("kind") in attached
                                                              else "")
             for f in results.get("figures") or []]
    return "\n".join(lines) or "- (no figures)"


def _answer_problems(answer: Any) -> list[str]:
    """Problems the schema cannot express: unknown dimensions and repeated issue ids."""
    problems = []
    if not isinstance(answer, dict):
        return problems
    unknown = sorted(set(answer.get("dimension_scores") or {}) - set(DIMENSIONS))
    if unknown:
        problems.append(f"dimension_scores: unknown dimensions {unknown}; use {sorted(DIMENSIONS)}")
    ids = [i.get("id") for i in answer.get("issues") or [] if isinstance(i, dict)]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        problems.append(f"issues: ids used more than once: {dupes}; give each issue its own id")
    return problems


def merge_issues(code_issues: list[dict[str, Any]], model_issues: list[dict[str, Any]], rubric: dict[str, Any],
                 checks: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Code issues are always kept; a model issue is dropped when its id duplicates a kept issue or names a code
    item whose check passed. A model issue is unfixable only through a `model` rubric item marked unfixable."""
    items = {i["id"]: i for i in rubric["items"]}
    passed_code = {c["id"] for c in checks if c.get("passed")}
    merged = [dict(i, source=i.get("source", "code")) for i in code_issues]
    seen, notes = {i["id"] for i in merged}, []
    for raw in model_issues:
        id_ = str(raw["id"]).strip()
        if id_ in seen:
            notes.append(f"model issue {id_} dropped: duplicate of an issue already listed")
            continue
        if id_ in passed_code:
            notes.append(f"model issue {id_} dropped: its rubric item is checked in code and the check passed")
            continue
        item = items.get(id_)
        stage = raw["target_stage"]
        category = item["dimension"] if item else raw.get("category")
        if category not in rubric["dimensions"]:
            category = STAGE_DIMENSION[stage]
        unfixable = bool(item and item["check"] == "model" and item.get("unfixable")) and raw["severity"] == "critical"
        merged.append(_issue(id_, raw["severity"], category, stage, raw["description"],
                             raw.get("recommendation") or (item or {}).get("recommendation", ""), unfixable,
                             source="model", caps=bool(item and item.get("caps_verdict"))))
        seen.add(id_)
    return merged, notes


def review_with_model(client: Any, prompts: dict[str, Any], spec: dict[str, Any], report: dict[str, Any],
                      results: dict[str, Any], figure_paths: dict[str, str | Path] | None,
                      code_review: dict[str, Any], *, max_revisions: int | None = None,
                      rubric: dict[str, Any] | str | Path | None = None, images: bool = False,
                      tag: str = "critique", reg: Registry | None = None, lessons: str = "") -> dict[str, Any]:
    """The model Critic on top of the code review (the output of :func:`review` for the same round).

    The model reads the specification, data report, results summary and the code checks' findings (and,
    with `images` and the anthropic backend, the key figures as PNG images) and answers with scores, issues,
    instructions and a verdict. Its issues are merged with the code's; the verdict is recomputed by rule from
    the merged list with overall = min(model overall, rubric overall); disagreements go to the notes."""
    from edm_ars.llm.prompts import fill  # here: the offline Critic never imports the LLM layer

    rub = _rubric(rubric)
    if max_revisions is None and "max_revisions" not in code_review:
        raise ValueError("review_with_model needs max_revisions (the code review does not record it)")
    max_revisions = int(code_review["max_revisions"] if max_revisions is None else max_revisions)
    round_, forced = int(code_review["round"]), bool(code_review.get("forced"))
    notes: list[str] = []
    blocks: list[dict[str, Any]] = []
    attached: list[str] = []
    settings = getattr(client, "settings", None)
    backend = getattr(settings, "backend", None) or "model"
    if images:
        if backend not in ("anthropic", "model"):
            notes.append(f"figures not attached: images are sent only with the anthropic backend (not {backend})")
        else:
            blocks, attached, skipped = figure_blocks(figure_paths)
            notes += [f"figure not attached: {s}" for s in skipped]
    system = fill(
        prompts["system"], dimensions=", ".join(f"{d} ({w:g})" for d, w in rub["dimensions"].items()),
        dataset_title=reg.dataset.get("title", reg.name) if reg else spec.get("dataset", "the data set"),
        dataset_rules=rules_text(reg),
        code_items=_item_lines(items_of(rub, "code")), model_items=_item_lines(items_of(rub, "model")))
    user = fill(
        prompts["user"], round=round_, max_revisions=max_revisions, spec=_dump(spec_summary(spec)),
        data_report=_dump(report_summary(report)), results=_dump(results_summary(results)),
        code_findings=code_findings(code_review["checks"], code_review["issues"]),
        figures=_figures_text(results, attached),
        lessons=lessons or "(no lessons from earlier runs)")
    content: str | list[dict[str, Any]] = [{"type": "text", "text": user}, *blocks] if blocks else user
    answer, _ = client.complete_json(system, [{"role": "user", "content": content}], tag=tag,
                                     schema=MODEL_REVIEW_SCHEMA, check=_answer_problems)
    issues, merge_notes = merge_issues(code_review["issues"], answer["issues"], rub, code_review["checks"])
    notes += merge_notes
    scores, rubric_overall = dimension_scores(issues, rub["dimensions"], rub["penalties"], rub["start"])
    model_overall = float(answer["overall_score"])
    overall = round(min(model_overall, rubric_overall), 2)
    notes.append(f"{SCORE_RULE}: min({model_overall:g}, {rubric_overall:g}) = {overall:g}")
    decision = compute_verdict(issues, overall, round_=round_, max_revisions=max_revisions,
                               model_verdict=answer["verdict"], forced=forced)
    extra = {s: [t] if isinstance(t, str) else list(t) for s, t in (answer.get("revision_instructions") or {}).items()
             if s in TARGETS}
    proposed = []
    for raw in answer.get("revision_actions") or []:
        valid, why = act.validate(raw, reg=reg, spec=spec)
        if valid:
            proposed.append(dict(valid, source="model"))
        else:
            notes.append(f"model revision action not kept: {why}")
    out = _assemble(round_, issues, code_review["checks"], scores, overall, decision, forced=forced,
                    backend=backend, max_revisions=max_revisions, model_verdict=answer["verdict"], notes=notes,
                    extra_instructions=extra, extra_actions=proposed)
    out.update(rubric_overall_score=rubric_overall, model_overall_score=model_overall,
               model_dimension_scores=answer.get("dimension_scores") or {}, figures_attached=attached)
    return _with_outcome(out, spec)
