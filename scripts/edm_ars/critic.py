"""Critic: rubric checks evaluated in code, dimension scores, and the verdict computed by rule."""

from __future__ import annotations

from typing import Any

from .formulate import validate_spec
from .registry import Registry

STAGES = ["formulate", "engineer", "analyze"]
DIMENSIONS = {"problem_formulation": 0.25, "data_preparation": 0.25, "analysis": 0.30,
              "substantive_validity": 0.20}
PENALTY = {"critical": 4.0, "major": 2.0, "minor": 0.5}
PASS_SCORE = 7.0
MAX_MAJOR = 2


def _issue(id_: str, severity: str, dimension: str, stage: str, description: str, recommendation: str,
           unfixable: bool = False) -> dict[str, Any]:
    return {"id": id_, "severity": severity, "category": dimension, "target_stage": stage,
            "description": description, "recommendation": recommendation, "unfixable": unfixable}


def rubric_checks(spec: dict[str, Any], report: dict[str, Any], results: dict[str, Any], reg: Registry,
                  *, min_models: int = 2, min_analytic_n: int = 1000) -> tuple[list[dict], list[dict]]:
    """Run the code-checked rubric items; return (checks, issues)."""
    checks, issues = [], []

    def check(id_: str, passed: bool, detail: Any, issue: dict[str, Any] | None) -> None:
        checks.append({"id": id_, "passed": bool(passed), "detail": detail})
        if not passed and issue:
            issues.append(issue)

    violations = validate_spec(spec, reg)
    check("pf_spec_gate", not violations, violations,
          _issue("pf_spec_gate", "critical", "problem_formulation", "formulate",
                 "The specification breaks registry rules: " + "; ".join(violations),
                 "Remove the offending predictors and keep only variables from strictly earlier waves."))
    by_name = {c["name"]: c for c in report.get("checks", [])}
    leak = by_name.get("outcome_not_in_features", {"passed": True})
    check("dp_outcome_absent", leak["passed"], leak.get("detail"),
          _issue("dp_outcome_absent", "critical", "data_preparation", "engineer",
                 "The outcome column reached the feature matrix.", "Remove the outcome from the features."))
    failed = [c["name"] for c in report.get("checks", []) if not c["passed"]]
    check("dp_data_checks", not failed, failed,
          _issue("dp_data_checks", "major", "data_preparation", "engineer",
                 f"Data checks failed: {failed}.", "Fix the preparation so that every data check passes."))
    overlap = report.get("split", {}).get("group_overlap", 0)
    check("dp_school_overlap", overlap == 0, overlap,
          _issue("dp_school_overlap", "major", "data_preparation", "engineer",
                 f"{overlap} reconstructed schools appear in both training and test rows.",
                 "Split by reconstructed school so no school is on both sides."))
    n, p = report.get("analytic_n", 0), len(report.get("predictors_before", []))
    check("dp_analytic_n_min", n >= min_analytic_n, n,
          _issue("dp_analytic_n_min", "critical", "data_preparation", "formulate",
                 f"Only {n} analytic cases (minimum {min_analytic_n}).", "Choose an outcome with more valid cases.",
                 unfixable=True))
    check("dp_ten_per_predictor", n >= 10 * p, {"analytic_n": n, "predictors": p},
          _issue("dp_ten_per_predictor", "major", "problem_formulation", "formulate",
                 f"{n} analytic cases for {p} predictors is under ten per predictor.",
                 "Reduce the predictor set."))
    models = results.get("models", {})
    check("an_model_count", len(models) >= min_models, len(models),
          _issue("an_model_count", "major", "analysis", "analyze",
                 f"{len(models)} models were compared; at least {min_models} are required.",
                 "Fit the configured model battery."))
    missing_ci = [m for m, r in models.items() if results["primary_metric"] not in r.get("ci", {})]
    check("an_intervals", not missing_ci, missing_ci,
          _issue("an_intervals", "major", "analysis", "analyze",
                 f"Models without an interval for the primary metric: {missing_ci}.",
                 "Report bootstrap intervals for every model."))
    test_only = results.get("test_n") == report.get("test_n")
    check("an_test_rows_only", test_only, {"results": results.get("test_n"), "report": report.get("test_n")},
          _issue("an_test_rows_only", "critical", "analysis", "analyze",
                 "Held-out metrics were not computed on exactly the test rows of the split.",
                 "Evaluate on the held-out test rows only."))
    leak_flags = [f for f in results.get("flags", []) if f.startswith("possible_leakage")]
    check("sv_no_leakage_flag", not leak_flags, leak_flags,
          _issue("sv_no_leakage_flag", "critical", "substantive_validity", "formulate",
                 "Held-out AUC above 0.95 suggests leakage: " + "; ".join(leak_flags),
                 "Find and remove proxies of the outcome among the predictors."))
    errors = results.get("errors", [])
    check("an_no_errors", not errors, errors,
          _issue("an_no_errors", "minor", "analysis", "analyze", f"{len(errors)} analysis phases reported errors.",
                 "Fix the failing analysis phases."))
    has_fig = bool(results.get("figures"))
    check("an_figures", has_fig, len(results.get("figures", [])),
          _issue("an_figures", "minor", "analysis", "analyze", "No result figures were produced.",
                 "Produce the ROC or residual figures."))
    return checks, issues


def dimension_scores(issues: list[dict[str, Any]]) -> tuple[dict[str, float], float]:
    scores = {d: 10.0 for d in DIMENSIONS}
    for i in issues:
        d = i.get("category") if i.get("category") in scores else "analysis"
        scores[d] = max(0.0, scores[d] - PENALTY[i["severity"]])
    overall = round(sum(scores[d] * w for d, w in DIMENSIONS.items()), 2)
    return scores, overall


def compute_verdict(issues: list[dict[str, Any]], overall: float, *, round_: int, max_revisions: int,
                    model_verdict: str | None = None, forced: bool = False) -> dict[str, Any]:
    """PASS iff no critical issue, at most two major, overall >= 7; ABORT only for an unfixable
    critical issue; REVISE otherwise. REVISE with no rounds left becomes PASS flagged UNVERIFIED.
    A model's verdict is advisory: disagreements are recorded, never followed blindly."""
    critical = [i for i in issues if i["severity"] == "critical"]
    major = [i for i in issues if i["severity"] == "major"]
    notes = []
    if any(i.get("unfixable") for i in critical):
        verdict = "ABORT"
    elif not critical and len(major) <= MAX_MAJOR and overall >= PASS_SCORE and not forced:
        verdict = "PASS"
    else:
        verdict = "REVISE"
    if model_verdict and model_verdict != verdict:
        notes.append(f"model verdict {model_verdict} overruled by the rubric verdict {verdict}")
    unverified = False
    if verdict == "REVISE" and round_ >= max_revisions:
        notes.append(f"REVISE in round {round_} with no revision rounds left (max {max_revisions}): "
                     "the paper is written and flagged UNVERIFIED")
        verdict, unverified = "PASS", True
    return {"verdict": verdict, "unverified": unverified, "notes": notes}


def rerun_from(issues: list[dict[str, Any]]) -> str | None:
    """The earliest stage any issue targets: that stage and everything downstream re-runs."""
    targets = [i["target_stage"] for i in issues if i["target_stage"] in STAGES]
    return min(targets, key=STAGES.index) if targets else None


def review(spec: dict[str, Any], report: dict[str, Any], results: dict[str, Any], reg: Registry, *, round_: int,
           max_revisions: int, force_revise: str | None = None, min_models: int = 2,
           min_analytic_n: int = 1000) -> dict[str, Any]:
    checks, issues = rubric_checks(spec, report, results, reg, min_models=min_models,
                                   min_analytic_n=min_analytic_n)
    forced = bool(force_revise) and round_ == 0 and max_revisions > 0
    if forced:
        issues.append(_issue("forced_revision", "major", "analysis" if force_revise == "analyze" else
                             "problem_formulation" if force_revise == "formulate" else "data_preparation",
                             force_revise, f"Revision of the {force_revise} stage requested by configuration "
                             "(force_revise).", f"Re-run {force_revise} and everything downstream of it."))
    scores, overall = dimension_scores(issues)
    decision = compute_verdict(issues, overall, round_=round_, max_revisions=max_revisions, forced=forced)
    instructions: dict[str, list[str]] = {}
    for i in issues:
        instructions.setdefault(i["target_stage"], []).append(i["recommendation"])
    verdict = decision["verdict"]
    abort = next((i["description"] for i in issues if i.get("unfixable") and i["severity"] == "critical"), None)
    return {
        "round": round_,
        "verdict": verdict,
        "model_verdict": None,
        "overall_score": overall,
        "dimension_scores": scores,
        "issues": issues,
        "checks": checks,
        "revision_instructions": instructions,
        "rerun_from": rerun_from(issues) if verdict == "REVISE" else None,
        "abort_reason": abort if verdict == "ABORT" else None,
        "unverified": decision["unverified"],
        "forced": forced,
        "backend": "offline",
        "notes": decision["notes"],
    }
