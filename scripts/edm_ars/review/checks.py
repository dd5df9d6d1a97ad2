"""The Critic's code checks: the artifacts they read, their findings, and the registry of check functions.

Each rubric item checked in code (config/rubric.yaml, `check: code`) names a small pure function registered
in :data:`CHECKS` by :func:`code_check`; it reads the round's :class:`Artifacts` and returns a
:class:`Finding`. The helpers the rest of the workflow shares (fairness gaps and flags, supplementary
problems, outcome proxies, evidence of generated rows) live here with the checks that use them. Running the
checks of a rubric and turning findings into issues is edm_ars.review.critic's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edm_ars.core.conventions import REGRESSION, STACKING, applied_threshold
from edm_ars.data.protocol import too_few_cases
from edm_ars.data.registry import DRAFT_MARKER, Registry, draft_marker_keys
from edm_ars.formulate.spec import validate_spec
from edm_ars.review import actions as act

RESULTS = "results.json"  # the artifact the checks read the applied thresholds from


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
                   f"Only {n} analytic cases; at least {least} are required (critic.abort_below_n); "
                   + too_few_cases(n, "analytic cases", None, least) + ".")


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


@code_check("test_n")
def check_test_n(a: Artifacts, p: dict[str, Any]) -> Finding:
    """The held-out metrics and their intervals rest on at least `min_test_n` test rows (critic.min_test_n):
    fewer cannot support the intervals. No revision can add rows, so the rubric item targets the Writer (the
    abstract says the sample is small) and caps the verdict: the paper is flagged UNVERIFIED."""
    n = a.results.get("test_n", a.report.get("test_n"))
    least = int(p.get("min_test_n", 200))
    if n is None:
        return Finding(None, {"minimum": least}, "skipped: neither results.json nor the data report records test_n")
    return Finding(int(n) >= least, {"test_n": int(n), "minimum": least},
                   f"The held-out metrics rest on {int(n)} test rows, fewer than the {least} "
                   "(critic.min_test_n) that support their 95% intervals; no revision can add rows, so the paper "
                   "must say in its abstract that the sample is small and every held-out estimate imprecise.")


@code_check("test_clusters")
def check_test_clusters(a: Artifacts, p: dict[str, Any]) -> Finding:
    """A grouped split leaves at least `min_test_clusters` clusters (or units) in the test set: the intervals and the
    paired p-values resample them, and a bootstrap over a handful (4 schools: 35 distinct resamples) cannot estimate
    the spread. No revision can add clusters, so the item targets the Writer and caps the verdict."""
    split = a.report.get("split") or {}
    k = split.get("test_clusters")
    least = int(p.get("min_test_clusters", 10))
    if not split.get("grouped") or not isinstance(k, int):
        return Finding(None, {"minimum": least}, "skipped: the split keeps no clusters together")
    return Finding(k >= least, {"test_clusters": k, "minimum": least},
                   f"The test set holds {k} {'units' if split.get('grouped_by') == 'unit' else 'clusters'}, fewer than the "
                   f"{least} (rubric an_test_clusters_min) a cluster bootstrap needs to estimate the spread of the "
                   "held-out metrics; no revision can add clusters, so the paper must say in its abstract that the "
                   "intervals and p-values understate the uncertainty.")


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


def interpretation_skipped(results: dict[str, Any]) -> str | None:
    """Why the analysis interpreted no model by rule (None when it did, or when nothing says it skipped by
    rule): no individual model reaches the quality floor (core/conventions.py QUALITY_FLOOR, as applied in
    results.json thresholds), so results.json names no interpreted model and no SHAP figure or top feature is
    drawn. No revision of the analysis can make them; the quality-floor check asks for what can change."""
    if results.get("interpreted_model"):
        return None
    primary = results.get("primary_metric")
    floor = applied_threshold(results, "quality_floor", file=RESULTS)
    values = {m: (r.get("metrics") or {}).get(primary) for m, r in (results.get("models") or {}).items()
              if m != STACKING}
    if floor is None or not values or any(not isinstance(v, (int, float)) or v >= floor for v in values.values()):
        return None
    return (f"skipped by rule: no model reaches the quality floor ({primary} {floor:g}; the best "
            f"{max(values.values()):.3f}), so no model is interpreted")


@code_check("shap_figures")
def check_shap_figures(a: Artifacts, p: dict[str, Any]) -> Finding:
    skipped = interpretation_skipped(a.results)
    if skipped:
        return Finding(None, {"skipped": "quality_floor"}, skipped)
    missing = sorted({"shap_summary", "shap_importance"} - _figure_kinds(a.results))
    note = _explain_failed(a.results)
    return Finding(not missing, {"missing": missing, "explain_errors": len(_phase_errors(a.results, "explain"))},
                   f"SHAP figures are missing: {', '.join(missing)}." + note, "minor" if note else None)


@code_check("top_features")
def check_top_features(a: Artifacts, p: dict[str, Any]) -> Finding:
    skipped = interpretation_skipped(a.results)
    if skipped:
        return Finding(None, {"skipped": "quality_floor"}, skipped)
    top = a.results.get("top_features") or []
    note = _explain_failed(a.results)
    return Finding(bool(top), len(top), f"No top features are reported for the interpreted model "
                   f"({a.results.get('interpreted_model')})." + note, "minor" if note else None)


@code_check("subgroup_results")
def check_subgroup_results(a: Artifacts, p: dict[str, Any]) -> Finding:
    audit = a.results.get("fairness") or {}
    if not a.spec.get("subgroups") and not audit.get("attributes"):
        # a data set without protected attributes: there is nothing to audit, and no revision can add one
        return Finding(None, {"attributes": []}, "skipped: the study declares no protected attribute to audit")
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


#: words by which a stated contribution claims to be the first on its question
_NOVELTY = re.compile(r"\b(?:the first (?:study|work|analysis|paper|model|attempt|to)|first to|novel|"
                      r"no (?:prior|previous|earlier) (?:work|stud(?:y|ies)|research)|never been|unprecedented|"
                      r"for the first time)\b", re.I)


@code_check("prior_findings")
def check_prior_findings(a: Artifacts, p: dict[str, Any]) -> Finding:
    """When the registry lists published findings on the data (dataset.findings), the study tests each that concerns
    its outcome and reports it in the replication table (results.json `replication`), and the specification's stated
    contribution does not claim to be first on data with published findings: it is stated against them."""
    if a.reg is None:
        return Finding(None, None, "skipped: no registry was given")
    findings = [f for f in a.reg.dataset.get("findings") or [] if isinstance(f, dict)]
    outcome = (a.spec.get("outcome") or {}).get("name")
    concerned = [f["id"] for f in findings if not f.get("outcomes") or outcome in f.get("outcomes")]
    if not concerned:  # nothing published to report: nothing left out
        return Finding(True, {"findings": 0}, "")
    table = a.results.get("replication")
    reported = {f.get("id") for f in ((table or {}).get("findings") or []) if isinstance(f, dict)}
    missing = [i for i in concerned if i not in reported]
    if table is None or missing:
        return Finding(False, {"missing": missing or concerned},
                       "The registry lists published findings on these data that the replication table of results.json "
                       f"does not report: {', '.join(missing or concerned)}; each must be tested or said to be "
                       "untestable here, with the reason.")
    claim = str(a.spec.get("expected_contribution") or "")
    tested = [f.get("id") for f in table["findings"] if f.get("status") in ("agrees", "differs")]
    novelty = _NOVELTY.search(claim)
    if novelty and tested:
        return Finding(False, {"claim": novelty.group(0), "tested": tested},
                       f"The stated contribution claims to be '{novelty.group(0)}', but published work on these data "
                       f"holds findings this study tests ({', '.join(tested)}): state the contribution against them.",
                       severity="minor")
    counts = table.get("counts") or {}
    return Finding(True, {"counts": counts}, "")
