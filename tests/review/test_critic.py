"""The Critic: the rubric file, its code checks, scores, the verdict rules, and the model Critic's merge."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
import yaml

from edm_ars.core.artifacts import validate
from edm_ars.core.errors import EdmArsError, SchemaError
from edm_ars.data.registry_rules import MIN_PREDICTORS
from edm_ars.formulate.spec import offline_spec, validate_spec
from edm_ars.llm import load_prompt, placeholders
from edm_ars.review import actions as act
from edm_ars.review.checks import CHECKS, Artifacts
from edm_ars.review.critic import (
    DIMENSIONS,
    STAGES,
    compute_verdict,
    dimension_scores,
    load_rubric,
    rerun_from,
    review,
    rubric_checks,
)
from edm_ars.review.model_critic import (
    KEY_FIGURES,
    MODEL_REVIEW_SCHEMA,
    SCORE_RULE,
    figure_blocks,
    key_figure_paths,
    review_with_model,
)

ROOT = Path(__file__).resolve().parents[2]
RUBRIC = ROOT / "config" / "rubric.yaml"
PROMPT = ROOT / "config" / "prompts" / "critique.yaml"
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4"
       b"\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND"
       b"\xaeB`\x82")


# ------------------------------------------------------------------------------------------ fixtures
def _axis(label="", categories=None, shared=()):
    if categories is not None:
        return {"label": label, "kind": "categorical", "categories": list(categories), "shared_with": list(shared)}
    return {"label": label, "kind": "numeric", "shared_with": list(shared)}


def drawn_record(kind):
    """What a well-drawn figure of this kind records when drawn (edm_ars.analysis.figures.figure_facts), for the good
    artifacts below."""
    def panel(x, y, series=1, legend=None, gid=None, title=""):
        return {"panel": gid, "drawn": True, "title": title, "x": x, "y": y, "texts": [],
                "legend": {"title": "", "entries": list(legend)} if legend else None,
                "series": [{"kind": "line", "label": None, "n": 10}] * series}
    models = ["Logistic regression (AUC 0.800)", "Elastic net (AUC 0.790)"]
    axes = {
        "roc": [panel(_axis("False-positive rate"), _axis("True-positive rate"), 2, models)],
        "calibration": [panel(_axis("Mean predicted probability (decile)"), _axis("Observed proportion"), 1,
                              ["Logistic regression"])],
        "shap_summary": [panel(_axis("SHAP value"), _axis(categories=["SES"]), gid="ranking")],
        "shap_importance": [panel(_axis("Mean |SHAP value|"), _axis(categories=["SES"]), gid="ranking")],
        "fairness": [panel(_axis("AUC (95% bootstrap CI)"), _axis(categories=["Female"]), gid="X1SEX",
                           title="X1 Student's sex")],
    }[kind]
    bars = [{"label": "Feature value (grey: categorical)"}] if kind == "shap_summary" else []
    return {"axes": axes, "colorbars": bars, "legends": []}


@pytest.fixture(scope="module")
def rubric():
    return load_rubric(RUBRIC)


@pytest.fixture(scope="module")
def prompts():
    return load_prompt(PROMPT)


@pytest.fixture(scope="module")
def good(reg):
    """Small artifacts that pass every code check."""
    spec = offline_spec(reg, prompt=None, question_id="college_attendance", round_=0)
    outcome = spec["outcome"]["name"]
    names = [p["name"] for p in spec["predictors"]]
    report = {"analytic_n": 5000, "test_n": 1000, "outcome": outcome, "outcome_source": outcome,
              "predictors_before": names, "predictors_after": names, "feature_sources": {n: n for n in names},
              "split": {"group_overlap": 0, "grouped": True, "test_clusters": 189},
              "checks": [{"name": "no_missing_values", "passed": True, "detail": 0},
                         {"name": "outcome_not_in_features", "passed": True, "detail": outcome}]}
    models = {m: {"metrics": {"auc": 0.80 - 0.01 * k}, "ci": {"auc": [0.77 - 0.01 * k, 0.83 - 0.01 * k]}}
              for k, m in enumerate(["logistic", "elastic_net", "random_forest", "xgboost", "stacking"])}
    figures = [{"path": f"figures/{k}.pdf", "kind": k, "caption": f"The {k} figure.", "drawn": drawn_record(k)}
               for k in ("roc", "calibration", "shap_summary", "shap_importance", "fairness")]
    results = {"task": "binary_classification", "primary_metric": "auc", "best_model": "logistic",
               "interpreted_model": "logistic", "test_n": 1000, "models": models,
               "top_features": [{"feature": "X1SES", "label": "SES", "mean_abs_shap": 0.4, "direction": "positive"}],
               "fairness": {"attributes": {"X1SEX": {"groups": [{"group": "Female", "n": 500, "reliable": True,
                                                                  "metric": 0.8, "ci": [0.77, 0.83], "citl": 0.01,
                                                                  "calibration_slope": 0.97}],
                                                      "gaps": {}, "flags": []}}, "flags": [],
                            "decision_rule": {"at_risk_class": 0, "share": 0.25, "share_source": "at_risk_share"}},
               "stability": {"unstable": False, "top5_overlap": {"mean": 0.9}, "n_perturbations": 3,
                             "thresholds": {"unstable_top5": 0.6}},
               "figures": figures, "flags": [], "errors": [],
               "thresholds": {"quality_floor": 0.6, "leakage_auc": 0.95, "leakage_r2": None},
               "supplementary": {"sandbox": "bwrap", "backend": "offline", "max_attempts": 3, "n_planned": 1, "n_ok": 1,
                                 "skipped": [],
                                 "analyses": {"drop_top_predictor": {
                                     "status": "ok", "reports": ["score_drop"],
                                     "numbers": {"score_drop": {"value": 0.02, "meaning": "AUC lost without X1SES"}}}}}}
    claims = {"claims": [{"id": "outperforms_xgboost", "statement": "The selected model (logistic) predicts better "
                          "than xgboost.", "status": "inconclusive", "reason": "", "evidence": [], "source": "code",
                          "compares": {"a": "logistic", "b": "xgboost", "assertion": "better"}}]}
    # generated rows (a data-generating process) declared as generated in the data manifest
    manifest = {"dataset": "hsls09_synthetic", "provenance": {"kind": "generated", "source_kind": "synthetic"}}
    return {"spec": spec, "report": report, "results": results, "claims": claims, "manifest": manifest,
            "dgp": {"seed": 42}}


def artifacts(good, reg, mutate=None):
    a = dict(copy.deepcopy(good), reg=reg)
    if mutate:
        mutate(a)
    return Artifacts(a["spec"], a["report"], a["results"], a["reg"], claims=a["claims"], manifest=a["manifest"],
                     dgp=a["dgp"])


def _a_finding_left_out(a):
    """The registry lists a published finding on the outcome that the results do not report."""
    a["reg"] = copy.deepcopy(a["reg"])
    a["reg"].dataset["findings"] = [{"id": "published_gap", "claim": "A published gap.", "cite": "x", "where": "p. 1",
                                     "test": {"kind": "none", "reason": "not testable"}}]


def _drafted(a):
    a["reg"] = copy.deepcopy(a["reg"])
    a["reg"].dataset["prose"]["about"] = "[DRAFT] students whose records make up data.csv"


def issue(id_, severity, stage="analyze", **kw):
    return {"id": id_, "severity": severity, "category": "analysis", "target_stage": stage, "description": id_,
            "recommendation": f"fix {id_}", **kw}


# ------------------------------------------------------------------------------------------ the verdict rules
def test_score_8_no_issues_passes():
    assert compute_verdict([], 8.0, round_=0, max_revisions=2)["verdict"] == "PASS"


def test_score_9_with_one_critical_revises():
    assert compute_verdict([issue("c", "critical")], 9.0, round_=0, max_revisions=2)["verdict"] == "REVISE"


def test_score_6_no_issues_revises():
    assert compute_verdict([], 6.0, round_=0, max_revisions=2)["verdict"] == "REVISE"


def test_three_major_revise():
    majors = [issue(f"m{k}", "major") for k in range(3)]
    assert compute_verdict(majors, 8.0, round_=0, max_revisions=2)["verdict"] == "REVISE"


def test_two_major_at_score_7_pass():
    majors = [issue(f"m{k}", "major") for k in range(2)]
    assert compute_verdict(majors, 7.0, round_=0, max_revisions=2)["verdict"] == "PASS"


def test_an_issue_that_caps_the_verdict_never_passes_whatever_its_severity_and_the_score():
    capped = [issue("dp_data_checks", "minor", caps_verdict=True)]
    mid = compute_verdict(capped, 9.9, round_=0, max_revisions=2, model_verdict="PASS")
    assert mid["verdict"] == "REVISE"
    assert any("cap the verdict dp_data_checks" in n for n in mid["notes"])
    last = compute_verdict(capped, 9.9, round_=2, max_revisions=2)
    assert (last["verdict"], last["unverified"]) == ("UNVERIFIED", True)


def test_a_failed_data_check_caps_the_offline_review(good, reg):
    report = dict(good["report"], checks=[*good["report"]["checks"], {"name": "no_constant_columns", "passed": False}])
    r = review(good["spec"], report, good["results"], reg, round_=0, max_revisions=2)
    failed = next(i for i in r["issues"] if i["id"] == "dp_data_checks")
    assert failed["caps_verdict"] is True
    assert r["verdict"] == "REVISE" and r["overall_score"] >= 7


def test_a_registry_that_still_holds_drafted_text_caps_the_review(good, reg):
    a = {"reg": reg}
    _drafted(a)
    r = review(good["spec"], good["report"], good["results"], a["reg"], round_=0, max_revisions=2)
    issue_ = next(i for i in r["issues"] if i["id"] == "pf_registry_final")
    assert issue_["caps_verdict"] and "dataset.prose.about" in issue_["description"]
    assert r["verdict"] == "REVISE"
    clean = review(good["spec"], good["report"], good["results"], reg, round_=0, max_revisions=2)
    assert "pf_registry_final" not in {i["id"] for i in clean["issues"]}


def test_model_pass_with_a_critical_is_overruled_then_unverified_in_the_last_round():
    critical = [issue("an_test_rows_only", "critical")]
    mid = compute_verdict(critical, 8.0, round_=1, max_revisions=2, model_verdict="PASS")
    assert mid["verdict"] == "REVISE" and not mid["unverified"]
    assert any("model verdict PASS overruled" in n and "an_test_rows_only" in n for n in mid["notes"])
    last = compute_verdict(critical, 8.0, round_=2, max_revisions=2, model_verdict="PASS")
    assert last["verdict"] == "UNVERIFIED" and last["unverified"] and last["rubric_verdict"] == "REVISE"
    assert any("UNVERIFIED" in n for n in last["notes"])


def test_model_abort_is_honoured_only_for_an_unfixable_critical_issue():
    plain = compute_verdict([issue("m", "major")], 8.0, round_=0, max_revisions=2, model_verdict="ABORT")
    assert plain["verdict"] != "ABORT" and any("ABORT not honoured" in n for n in plain["notes"])
    fixable = compute_verdict([issue("c", "critical")], 8.0, round_=0, max_revisions=2, model_verdict="ABORT")
    assert fixable["verdict"] == "REVISE"
    unfixable = [issue("sv_confirmed_leakage", "critical", "formulate", unfixable=True)]
    aborted = compute_verdict(unfixable, 6.0, round_=0, max_revisions=2, model_verdict="ABORT")
    assert aborted["verdict"] == "ABORT" and aborted["notes"] == []
    # ABORT is final: no revision round turns it into PASS
    assert compute_verdict(unfixable, 6.0, round_=2, max_revisions=2)["verdict"] == "ABORT"


def test_agreement_leaves_no_note_and_forced_revision_never_passes():
    assert compute_verdict([], 9.0, round_=0, max_revisions=2, model_verdict="PASS")["notes"] == []
    forced = compute_verdict([], 10.0, round_=0, max_revisions=2, forced=True)
    assert forced["verdict"] == "REVISE"


def test_dimension_scores_subtract_penalties_and_weight():
    scores, overall = dimension_scores([issue("c", "critical"), issue("m", "major"),
                                        {**issue("x", "minor"), "category": "substantive_validity"}])
    assert scores == {"problem_formulation": 10.0, "data_preparation": 10.0, "analysis": 4.0,
                      "substantive_validity": 9.5}
    assert overall == round(2.5 + 2.5 + 0.3 * 4 + 0.2 * 9.5, 2)
    floor, _ = dimension_scores([issue(f"c{k}", "critical") for k in range(4)])
    assert floor["analysis"] == 0.0


def test_rerun_from_picks_the_earliest_stage():
    assert rerun_from([issue("a", "minor", "analyze"), issue("b", "major", "engineer")]) == "engineer"
    assert rerun_from([issue("a", "minor", "analyze"), issue("f", "minor", "formulate"),
                       issue("e", "minor", "engineer")]) == "formulate"
    assert rerun_from([issue("w", "critical", "write")]) is None
    assert rerun_from([issue("w", "critical", "write"), issue("a", "minor", "analyze")]) == "analyze"
    assert rerun_from([]) is None


# ------------------------------------------------------------------------------------------ the rubric file
def test_rubric_loads_with_four_weighted_dimensions(rubric):
    assert rubric["dimensions"] == DIMENSIONS
    assert sum(rubric["dimensions"].values()) == pytest.approx(1.0)
    assert 26 <= len(rubric["items"]) <= 45
    ids = [i["id"] for i in rubric["items"]]
    assert len(ids) == len(set(ids))
    assert {i["dimension"] for i in rubric["items"]} == set(DIMENSIONS)
    for item in rubric["items"]:
        assert item["severity"] in {"critical", "major", "minor"}
        assert item["check"] in {"code", "model"}
        assert item["target_stage"] in {"formulate", "engineer", "analyze", "write"}
        if item["check"] == "code":
            assert item["function"] in CHECKS
    functions = {i["function"] for i in rubric["items"] if i["check"] == "code"}
    assert {"outcome_absent", "data_checks", "model_count", "shap_figures", "top_features", "subgroup_results",
            "test_rows_only", "intervals", "leakage_auc", "school_overlap", "cases_per_predictor", "spec_gate",
            "analytic_n", "fairness_flags", "stability", "quality_floor", "phase_errors"} <= functions
    unfixable = {i["id"] for i in rubric["items"] if i.get("unfixable")}
    assert {"dp_analytic_n_min", "sv_confirmed_leakage", "pf_answerable"} <= unfixable
    by_fn = {i.get("function"): i for i in rubric["items"]}
    assert by_fn["leakage_auc"]["severity"] == "critical" and not by_fn["leakage_auc"].get("unfixable")
    assert by_fn["stability"]["severity"] == "major" and by_fn["fairness_flags"]["severity"] == "minor"
    assert len([i for i in rubric["items"] if i["check"] == "model"]) >= 10


def test_broken_rubrics_are_refused(tmp_path):
    data = yaml.safe_load(RUBRIC.read_text())
    data["dimensions"]["analysis"]["weight"] = 0.5
    data["items"][0]["function"] = "no_such_check"
    bad = tmp_path / "rubric.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(EdmArsError, match="sum to 1.2") as err:
        load_rubric(bad)
    assert "no_such_check" in str(err.value)
    with pytest.raises(EdmArsError, match="not found"):
        load_rubric(tmp_path / "missing.yaml")


# ------------------------------------------------------------------------------------------ the code checks
def test_every_code_check_passes_on_good_artifacts(good, reg, rubric):
    checks, issues = rubric_checks(good["spec"], good["report"], good["results"], reg, rubric=rubric,
                                   claims=good["claims"], manifest=good["manifest"], dgp=good["dgp"])
    assert issues == [] and all(c["passed"] is True for c in checks)
    assert len(checks) == len([i for i in rubric["items"] if i["check"] == "code"])


def _add_predictor(a, name):
    a["spec"]["predictors"].append({"name": name, "rationale": "a test rationale"})


FAILURES = {
    "spec_gate": lambda a: _add_predictor(a, "X4EVRAPPCLG"),
    "registry_final": _drafted,
    "outcome_absent": lambda a: a["report"]["predictors_after"].append(a["report"]["outcome"]),
    "data_checks": lambda a: a["report"]["checks"].append({"name": "no_missing_values_test", "passed": False}),
    "school_overlap": lambda a: a["report"]["split"].update(group_overlap=3),
    "analytic_n": lambda a: a["report"].update(analytic_n=900),
    "cases_per_predictor": lambda a: a["report"].update(analytic_n=100),
    "model_count": lambda a: [a["results"]["models"].pop(m) for m in ("xgboost", "random_forest")],
    "test_rows_only": lambda a: a["results"].update(test_n=1200),
    "test_n": lambda a: (a["results"].update(test_n=11), a["report"].update(test_n=11)),
    "test_clusters": lambda a: a["report"]["split"].update(test_clusters=4),
    "prior_findings": _a_finding_left_out,
    "intervals": lambda a: a["results"]["models"]["xgboost"]["ci"].pop("auc"),
    "quality_floor": lambda a: a["results"]["models"]["logistic"]["metrics"].update(auc=0.55),
    "shap_figures": lambda a: a["results"].update(figures=[f for f in a["results"]["figures"]
                                                           if not f["kind"].startswith("shap")]),
    "top_features": lambda a: a["results"].update(top_features=[]),
    "subgroup_results": lambda a: a["results"].update(fairness={}),
    "fairness_flags": lambda a: a["results"]["flags"].append("fairness: X1RACE: AUC gap 0.126 between A and B"),
    "fairness_audit": lambda a: a["results"]["fairness"].pop("decision_rule"),
    "supplementary_analyses": lambda a: a["results"]["supplementary"]["analyses"]["drop_top_predictor"].update(
        status="dropped", reason="attempt 3 of 3: timeout"),
    "generated_data_disclosed": lambda a: a["manifest"]["provenance"].update(kind="public_use_file"),
    "stability": lambda a: a["results"]["stability"].update(unstable=True, top5_overlap={"mean": 0.4}),
    "phase_errors": lambda a: a["results"]["errors"].append({"phase": "fairness", "what": None, "type": "ValueError",
                                                             "message": "boom"}),
    "evaluation_figures": lambda a: a["results"].update(figures=[f for f in a["results"]["figures"]
                                                                 if f["kind"] != "roc"]),
    "figure_sanity": lambda a: a["results"]["figures"][0]["drawn"]["axes"][0]["x"].update(label=""),
    "leakage_auc": lambda a: a["results"]["models"]["xgboost"]["metrics"].update(auc=0.97),
    # the same comparison judged two ways (and a supported one the overlapping intervals do not support)
    "claims_consistent": lambda a: a["claims"]["claims"].append(dict(a["claims"]["claims"][0], id="model_claim",
                                                                     status="supported", source="model")),
}


def test_every_registered_check_has_a_failing_case():
    assert set(FAILURES) == set(CHECKS)


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_each_code_check_passes_and_fails(name, good, reg):
    params = {"min_models": 4, "min_analytic_n": 1000, "per_predictor": 10}
    ok = CHECKS[name](artifacts(good, reg), params)
    assert ok.passed is True, ok
    bad = CHECKS[name](artifacts(good, reg, FAILURES[name]), params)
    assert bad.passed is False and bad.message, bad


def test_check_messages_name_what_failed(good, reg):
    params = {"min_models": 4, "min_analytic_n": 1000}
    assert "X4EVRAPPCLG" in CHECKS["spec_gate"](artifacts(good, reg, FAILURES["spec_gate"]), params).message
    leak = CHECKS["leakage_auc"](artifacts(good, reg, FAILURES["leakage_auc"]), params)
    assert "xgboost 0.970" in leak.message and "leakage threshold 0.95" in leak.message
    shaky = CHECKS["stability"](artifacts(good, reg, FAILURES["stability"]), params)
    assert "stability threshold 0.6." in shaky.message and shaky.detail["threshold"] == 0.6
    count = CHECKS["model_count"](artifacts(good, reg, FAILURES["model_count"]), params)
    assert count.detail == {"models": ["elastic_net", "logistic"], "minimum": 4}  # stacking is not counted
    assert CHECKS["model_count"](artifacts(good, reg, FAILURES["model_count"]), {"min_models": 2}).passed
    flagged = CHECKS["fairness_flags"](artifacts(good, reg, FAILURES["fairness_flags"]), {})
    assert "discuss the disparity" in flagged.message and flagged.detail["attributes"] == ["X1RACE"]


def test_outcome_leak_through_a_derived_column(good, reg):
    def derived(a):
        a["report"]["predictors_after"].append(f"{a['report']['outcome']}__Yes")
    found = CHECKS["outcome_absent"](artifacts(good, reg, derived), {})
    assert found.passed is False and found.detail["leaked_columns"]
    flagged = CHECKS["outcome_absent"](artifacts(good, reg, lambda a: a["report"]["checks"][1].update(passed=False)),
                                       {})
    assert flagged.passed is False and "outcome_not_in_features" in flagged.message


def test_missing_shap_is_minor_when_the_explain_phase_recorded_a_failure(good, reg):
    def failed(a):
        FAILURES["shap_figures"](a)
        a["results"]["top_features"] = []
        a["results"]["errors"].append({"phase": "explain", "what": "logistic", "type": "SHAPTimeout",
                                       "message": "timeout"})
    for name in ("shap_figures", "top_features"):
        assert CHECKS[name](artifacts(good, reg, FAILURES[name]), {}).severity is None  # the item's (major)
        f = CHECKS[name](artifacts(good, reg, failed), {})
        assert f.passed is False and f.severity == "minor" and "SHAPTimeout" in f.message


# ------------------------------------------------------------------------------------------ figure sanity
QUINTILES = ["First quintile (lowest)", "Second quintile", "Third quintile", "Fourth quintile",
             "Fifth quintile (highest)"]


def _figure(a, kind):
    return next(f for f in a["results"]["figures"] if f["kind"] == kind)


def _quintile_panel(drawn_order):
    """An ordered attribute (SES quintiles) in the audit, and a second fairness panel showing its groups in
    `drawn_order` (bottom up); the panels share the x axis, labelled on the bottom one only."""
    def mutate(a):
        metrics = dict(zip(QUINTILES, (0.74, 0.79, 0.80, 0.77, 0.82), strict=True))
        a["results"]["fairness"]["attributes"]["X1SESQ5"] = {
            "groups": [{"group": g, "n": 200, "reliable": True, "metric": m, "ci": [m - 0.03, m + 0.03]}
                       for g, m in metrics.items()], "gaps": {}, "flags": []}
        axes = _figure(a, "fairness")["drawn"]["axes"]
        label = axes[0]["x"]["label"]
        axes[0]["x"].update(label="", shared_with=[1])
        axes.append({"panel": "X1SESQ5", "drawn": True, "title": "X1 Quintile coding of X1SES composite",
                     "x": _axis(label, shared=[0]), "y": _axis(categories=drawn_order), "legend": None,
                     "series": [{"kind": "errorbar", "label": None, "n": None}], "texts": []})
    return mutate


def _ranked(order):
    def mutate(a):
        a["results"]["top_features"] = [{"feature": f"X{k}", "label": f"Predictor {k}", "mean_abs_shap": 1 / k,
                                         "direction": "positive"} for k in (1, 2, 3)]
        _figure(a, "shap_importance")["drawn"]["axes"][0]["y"]["categories"] = order
        _figure(a, "shap_summary")["drawn"]["axes"][0]["y"]["categories"] = ["Predictor 3", "Predictor 2",
                                                                            "Predictor 1"]
    return mutate


PLANTED_FIGURE_DEFECTS = {
    "no x label": (lambda a: _figure(a, "roc")["drawn"]["axes"][0]["x"].update(label=""),
                   "figure roc (figures/roc.pdf), panel 1: the x axis has no label"),
    "no y label": (lambda a: _figure(a, "calibration")["drawn"]["axes"][0]["y"].update(label=" "),
                   "figure calibration (figures/calibration.pdf), panel 1: the y axis has no label"),
    "legend missing": (lambda a: _figure(a, "roc")["drawn"]["axes"][0].update(legend=None),
                       "panel 1: 2 series are plotted but there is no legend"),
    "legend naming one of two series": (
        lambda a: _figure(a, "roc")["drawn"]["axes"][0]["legend"].update(entries=["Logistic regression"]),
        "2 series are plotted but the legend names only 1"),
    "quintiles out of order (by metric)": (
        _quintile_panel(["First quintile (lowest)", "Fourth quintile", "Second quintile", "Third quintile",
                         "Fifth quintile (highest)"]),
        "panel 2 (X1SESQ5): the categories of the y axis ['First quintile (lowest)', 'Fourth quintile', "
        "'Second quintile', 'Third quintile', 'Fifth quintile (highest)'] are not in the order of the groups of "
        "X1SESQ5 (fairness audit)"),
    "a group the audit does not have": (_quintile_panel(["First quintile (lowest)", "Sixth quintile"]),
                                        "the y axis shows ['Sixth quintile'], not in the order of the groups"),
    "shared x axis unlabelled": (
        lambda a: (_quintile_panel(QUINTILES)(a), _figure(a, "fairness")["drawn"]["axes"][1]["x"].update(label="")),
        "figure fairness (figures/fairness.pdf), panel 2 (X1SESQ5): the x axis has no label", 2),  # both panels
    "SHAP ranking scrambled": (_ranked(["Predictor 2", "Predictor 3", "Predictor 1"]),
                               "are not in the ranking of the top features"),
    "colour bar unlabelled": (lambda a: _figure(a, "shap_summary")["drawn"]["colorbars"][0].update(label=""),
                              "figure shap_summary (figures/shap_summary.pdf): colour bar 1 has no label"),
    "categorical axis without categories": (
        lambda a: _figure(a, "shap_importance")["drawn"]["axes"][0]["y"].update(categories=[]),
        "the categorical y axis names no category"),
    "no record of the drawn figure": (lambda a: _figure(a, "fairness").pop("drawn"),
                                      "figure fairness (figures/fairness.pdf): no record of what it shows"),
}


@pytest.mark.parametrize("defect", sorted(PLANTED_FIGURE_DEFECTS))
def test_figure_sanity_catches_a_planted_defect(defect, good, reg, rubric):
    mutate, expected, *count = PLANTED_FIGURE_DEFECTS[defect]
    found = CHECKS["figure_sanity"](artifacts(good, reg, mutate), {})
    assert found.passed is False and expected in found.message, found.message
    assert len(found.detail["problems"]) == (count or [1])[0], found.detail  # the planted defect, nothing else
    a = copy.deepcopy(good)
    mutate(a)
    rv = review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2, rubric=rubric)
    [raised] = [i for i in rv["issues"] if i["id"] == "an_figure_sanity"]
    assert raised["severity"] == "minor" and raised["target_stage"] == "analyze" and expected in raised["description"]


@pytest.mark.parametrize("fine", [
    _quintile_panel(QUINTILES),  # bottom up
    _quintile_panel(QUINTILES[::-1]),  # top down
    _quintile_panel(["First quintile\n(lowest)", "Third quintile", "Fifth quintile (highest)"]),  # wrapped, some
    _ranked(["Predictor 3", "Predictor 2", "Predictor 1"]),  # the largest at the top
    lambda a: _figure(a, "fairness")["drawn"]["axes"][0]["y"].update(categories=["Male", "Female"]) or  # nominal
    a["results"]["fairness"]["attributes"]["X1SEX"]["groups"].append({"group": "Male", "n": 500, "reliable": True,
                                                                     "metric": 0.7, "ci": [0.67, 0.73]}),
])
def test_figure_sanity_passes_what_is_drawn_right(fine, good, reg):
    found = CHECKS["figure_sanity"](artifacts(good, reg, fine), {})
    assert found.passed is True, found.message


def test_figure_sanity_keeps_waves_and_stated_places_in_their_order(good):
    waves = SimpleNamespace(waves=[{"key": "grade1", "order": 1, "label": "1st grade"},
                                   {"key": "kindergarten", "order": 0, "label": "kindergarten"},
                                   {"key": "grade2", "order": 2, "label": "2nd grade"}])

    def with_x(categories):
        a = copy.deepcopy(good)
        axes = _figure(a, "calibration")["drawn"]["axes"]
        axes[0]["x"] = _axis(categories=categories)
        return Artifacts(a["spec"], a["report"], a["results"], waves)

    assert CHECKS["figure_sanity"](with_x(["kindergarten", "1st grade", "2nd grade"]), {}).passed is True
    late = CHECKS["figure_sanity"](with_x(["kindergarten", "2nd grade", "1st grade"]), {})
    assert late.passed is False and "the registry's order of waves" in late.message
    assert CHECKS["figure_sanity"](with_x(["Grade 9", "Grade 11", "Grade 10"]), {}).passed is True  # no stated places
    grades = CHECKS["figure_sanity"](with_x(["9", "11", "10", "12"]), {})
    assert grades.passed is False and "the places the labels state" in grades.message


def test_skipped_checks_raise_no_issue(good, reg, rubric):
    a = copy.deepcopy(good)
    a["results"]["stability"] = {}
    checks, issues = rubric_checks(a["spec"], a["report"], a["results"], None, rubric=rubric)
    skipped = {c["id"] for c in checks if c["passed"] is None}
    assert skipped == {"pf_spec_gate", "pf_registry_final", "sv_stability", "sv_claims_consistent",
                       "sv_generated_data_disclosed", "sv_prior_findings"} and issues == []


# ------------------------------------------------------------------------------------------ applied thresholds
def _with(results_changes):
    def mutate(a):
        for key, value in results_changes.items():
            *path, last = key.split(".")
            cur = a["results"]
            for part in path:
                cur = cur[part]
            cur[last] = value
    return mutate


def test_the_leakage_threshold_is_the_one_the_analysis_recorded(good, reg):
    """An AUC between two ceilings: the verdict follows the ceiling results.json records, not a rubric value."""
    def verdict(ceiling):
        a = artifacts(good, reg, _with({"models.xgboost.metrics": {"auc": 0.96}, "thresholds.leakage_auc": ceiling}))
        return review(a.spec, a.report, a.results, reg, round_=0, max_revisions=2)
    strict, lenient = verdict(0.95), verdict(0.97)
    assert strict["verdict"] == "REVISE" and [i["id"] for i in strict["issues"]] == ["sv_no_leakage_flag"]
    assert "leakage threshold 0.95" in strict["issues"][0]["description"]
    assert lenient["verdict"] == "PASS" and lenient["issues"] == []
    leak = next(c for c in lenient["checks"] if c["id"] == "sv_no_leakage_flag")
    assert leak["detail"]["leakage_auc"] == 0.97


def test_the_quality_floor_and_stability_threshold_come_from_the_results(good, reg):
    low = _with({"models.logistic.metrics": {"auc": 0.62}})
    assert CHECKS["quality_floor"](artifacts(good, reg, low), {}).passed is True
    raised = CHECKS["quality_floor"](artifacts(good, reg, _with({"models.logistic.metrics": {"auc": 0.62},
                                                                 "thresholds.quality_floor": 0.65})), {})
    assert raised.passed is False and "quality floor 0.65" in raised.message
    shaky = CHECKS["stability"](artifacts(good, reg, _with({"stability.unstable": True,
                                                            "stability.top5_overlap": {"mean": 0.7},
                                                            "stability.thresholds": {"unstable_top5": 0.8}})), {})
    assert shaky.passed is False and "(0.70)" in shaky.message and "threshold 0.8." in shaky.message


def test_a_regression_records_no_leakage_threshold(good, reg):
    a = artifacts(good, reg, _with({"thresholds.leakage_auc": None}))
    assert CHECKS["leakage_auc"](a, {}).passed is True
    flagged = artifacts(good, reg, _with({"thresholds.leakage_auc": None, "flags": ["possible_leakage: x"]}))
    found = CHECKS["leakage_auc"](flagged, {})
    assert found.passed is False and "flagged as possible leakage" in found.message


@pytest.mark.parametrize("check, key", [("leakage_auc", "thresholds.leakage_auc"),
                                        ("quality_floor", "thresholds.quality_floor"),
                                        ("stability", "stability.thresholds.unstable_top5")])
def test_a_missing_threshold_is_an_error_naming_the_file_and_key(good, reg, check, key):
    def drop(a):
        *path, record, name = key.split(".")
        part = a["results"]
        for step in path:
            part = part[step]
        del part[record][name]
    a = artifacts(good, reg, drop)
    with pytest.raises(SchemaError, match=f"results.json: no {key} recorded"):
        CHECKS[check](a, {})
    with pytest.raises(SchemaError, match=f"no {key} recorded"):
        review(a.spec, a.report, a.results, reg, round_=0, max_revisions=2)


def test_the_rubric_repeats_no_threshold_the_analysis_applies(rubric):
    for item in rubric["items"]:
        assert not {"max_auc", "floors", "unstable_top5", "leakage_auc", "quality_floor"} & set(item.get("params")
                                                                                                 or {}), item["id"]
        text = f"{item['description']} {item['recommendation']}"
        assert not any(n in text for n in ("0.95", "0.6", "0.05")), item["id"]
    by_fn = {i.get("function"): i for i in rubric["items"]}
    assert "leakage_auc" in by_fn["leakage_auc"]["description"]
    assert "unstable_top5" in by_fn["stability"]["description"]
    assert "quality_floor" in by_fn["quality_floor"]["description"]


def test_the_results_schema_requires_the_applied_thresholds(good):
    res = copy.deepcopy(good["results"])
    res.update(shap={"by_model": {}, "skipped": {}})
    validate(res, "results")
    for drop in ("thresholds", "stability"):
        bad = copy.deepcopy(res)
        if drop == "thresholds":
            del bad["thresholds"]
        else:
            del bad["stability"]["thresholds"]
        with pytest.raises(SchemaError, match="thresholds"):
            validate(bad, "results")
    unassessed = copy.deepcopy(res)
    unassessed["stability"] = {"unstable": None}
    validate(unassessed, "results")


# ------------------------------------------------------------------------------------------ the offline review
def test_offline_review_validates_and_passes(good, reg):
    rv = review(good["spec"], good["report"], good["results"], reg, round_=0, max_revisions=2)
    validate(rv, "review_report")
    assert rv["verdict"] == "PASS" and rv["model_verdict"] is None and rv["overall_score"] == 10.0
    assert rv["backend"] == "offline" and rv["rerun_from"] is None and rv["checks"]


def test_offline_review_targets_the_earliest_stage(good, reg):
    a = copy.deepcopy(good)
    a["results"]["test_n"] = 999  # critical, analyze
    a["report"]["split"]["group_overlap"] = 2  # major, engineer
    a["results"]["flags"].append("fairness: X1SEX: AUC gap 0.1 between A and B")  # minor, write
    rv = review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2)
    validate(rv, "review_report")
    assert rv["verdict"] == "REVISE" and rv["rerun_from"] == "engineer"
    assert set(rv["revision_instructions"]) == {"analyze", "engineer", "write"}
    assert any("write stage (sv_fairness_flags)" in n for n in rv["notes"])


def test_offline_review_min_models_override_and_abort(good, reg):
    a = copy.deepcopy(good)
    FAILURES["model_count"](a)
    strict = review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2)
    assert [i["id"] for i in strict["issues"]] == ["an_model_count"]
    assert review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2, min_models=2)["issues"] == []
    a["report"]["analytic_n"] = 800
    aborted = review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2, min_models=2)
    validate(aborted, "review_report")
    assert aborted["verdict"] == "ABORT" and "800 analytic cases" in aborted["abort_reason"]
    assert aborted["rerun_from"] is None
    # the abort names both floors and the --configfile lines that lower them
    reason = aborted["abort_reason"]
    assert "critic.abort_below_n = 1000" in reason and "engineer.min_analytic_n" in reason
    assert "--configfile" in reason and "min_analytic_n: 800\n" in reason and "abort_below_n: 800\n" in reason
    assert review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2, min_models=2,
                  min_analytic_n=800)["verdict"] == "PASS"


def test_a_test_set_under_the_floor_caps_the_verdict_without_a_revision_that_cannot_add_rows(good, reg):
    a = copy.deepcopy(good)
    FAILURES["test_n"](a)  # 11 test rows
    rv = review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2)
    validate(rv, "review_report")
    [issue] = rv["issues"]
    assert issue["id"] == "an_test_n_min" and issue["target_stage"] == "write" and issue["caps_verdict"]
    assert "11 test rows" in issue["description"] and "critic.min_test_n" in issue["description"]
    # no stage can add rows: no revision round, the paper is written flagged UNVERIFIED in round 0
    assert (rv["verdict"], rv["rubric_verdict"], rv["unverified"]) == ("UNVERIFIED", "REVISE", True)
    assert rv["rerun_from"] is None and rv["revision_actions"] == []
    lowered = review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2, min_test_n=10)
    assert (lowered["verdict"], lowered["unverified"], lowered["issues"]) == ("PASS", False, [])
    # the default floor leaves a study of 200 or more test rows alone
    assert review(good["spec"], good["report"], good["results"], reg, round_=0, max_revisions=2)["verdict"] == "PASS"


@pytest.mark.parametrize("round_", [0, 1, 2])
@pytest.mark.parametrize("issues", [[], [("m", "major", False)], [("c", "critical", False)],
                                    [("d", "minor", True)], [("m1", "major", False), ("m2", "major", False),
                                                             ("m3", "major", False)]])
def test_the_verdict_and_the_unverified_flag_never_contradict_each_other(issues, round_):
    found = [issue(i, sev, caps_verdict=caps) if caps else issue(i, sev) for i, sev, caps in issues]
    d = compute_verdict(found, 8.0, round_=round_, max_revisions=2)
    assert d["unverified"] == (d["verdict"] == "UNVERIFIED")
    assert (d["verdict"] == "UNVERIFIED") == (round_ == 2 and d["rubric_verdict"] == "REVISE")


def _under_the_floor(a):
    """Every model under the quality floor: the analysis interprets none by rule (no SHAP, no top features)."""
    for k, rec in enumerate(a["results"]["models"].values()):
        rec["metrics"]["auc"], rec["ci"]["auc"] = 0.55 - 0.01 * k, [0.52 - 0.01 * k, 0.58 - 0.01 * k]
    a["results"].update(interpreted_model=None, top_features=[],
                        figures=[f for f in a["results"]["figures"] if not f["kind"].startswith("shap")])
    a["results"]["stability"] = {}
    a["results"]["supplementary"] = {}


def test_no_issue_or_action_asks_for_an_interpretation_the_quality_floor_skipped_by_rule(good, reg):
    a = copy.deepcopy(good)
    _under_the_floor(a)
    rv = review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2)
    assert [i["id"] for i in rv["issues"]] == ["an_quality_floor"]  # the only issue a revision can act on
    asked = json.dumps([rv["issues"], rv["revision_instructions"], rv["revision_actions"]])
    assert "SHAP" not in asked and "top features" not in asked
    skipped = {c["function"]: c for c in rv["checks"] if c.get("skipped")}
    assert {"shap_figures", "top_features"} <= set(skipped)
    assert "quality floor" in skipped["shap_figures"]["message"]
    # one model above the floor is interpreted: its SHAP figures are required again
    a["results"]["models"]["xgboost"]["metrics"]["auc"] = 0.65
    a["results"]["interpreted_model"] = "xgboost"
    again = review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2)
    assert {"an_shap_figures", "an_top_features"} <= {i["id"] for i in again["issues"]}


def _three_predictors(a):
    """A study of exactly MIN_PREDICTORS predictors, X1SES (the interpreted model's top feature) among them."""
    keep = ["X1SES"] + [p["name"] for p in a["spec"]["predictors"] if p["name"] != "X1SES"][:MIN_PREDICTORS - 1]
    a["spec"]["predictors"] = [p for p in a["spec"]["predictors"] if p["name"] in keep]
    a["report"]["predictors_before"] = a["report"]["predictors_after"] = keep
    a["report"]["feature_sources"] = {n: n for n in keep}


def test_a_revision_that_would_leave_an_invalid_specification_ends_the_study_in_abort_naming_the_leak(good, reg):
    a = copy.deepcopy(good)
    _three_predictors(a)
    assert validate_spec(a["spec"], reg) == []
    FAILURES["leakage_auc"](a)  # xgboost AUC 0.97: the check would drop X1SES, leaving 2 of 3 predictors
    rv = review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2)
    validate(rv, "review_report")
    assert rv["verdict"] == "ABORT" and rv["revision_actions"] == [] and rv["rerun_from"] is None
    reason = rv["abort_reason"]
    assert "xgboost 0.970" in reason and "drop_predictor X1SES" in reason
    assert f"{MIN_PREDICTORS - 1} predictors; a specification needs {MIN_PREDICTORS}" in reason
    # the same leak in a study with a predictor to spare is revised: the drop is asked for
    b = copy.deepcopy(good)
    FAILURES["leakage_auc"](b)
    revised = review(b["spec"], b["report"], b["results"], reg, round_=0, max_revisions=2)
    assert revised["verdict"] == "REVISE" and [x["value"] for x in revised["revision_actions"]] == ["X1SES"]


def test_validate_refuses_an_action_that_would_leave_an_invalid_specification(good, reg):
    a = copy.deepcopy(good)
    _three_predictors(a)
    kept, why = act.validate({"action": "drop_predictor", "value": "X1SES"}, reg=reg, spec=a["spec"])
    assert kept is None and "would leave an invalid specification" in why and "needs 3" in why
    assert act.spec_problems_after(good["spec"], [act.action("drop_predictor", "X1SES")], reg) == []
    assert act.validate({"action": "drop_predictor", "value": "X1SES"}, reg=reg, spec=good["spec"])[1] is None


def test_forced_revision_only_in_round_0(good, reg):
    forced = review(good["spec"], good["report"], good["results"], reg, round_=0, max_revisions=2,
                    force_revise="engineer")
    assert forced["verdict"] == "REVISE" and forced["rerun_from"] == "engineer" and forced["forced"]
    later = review(good["spec"], good["report"], good["results"], reg, round_=1, max_revisions=2,
                   force_revise="engineer")
    assert later["verdict"] == "PASS" and not later["forced"]


# ------------------------------------------------------------------------------------------ the model Critic
class ScriptedCritic:
    """A stand-in for LLMClient: complete_json returns canned answers (checked like the real client would)."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = []

    def complete_json(self, system, messages, *, tag, schema=None, check=None):
        self.calls.append({"system": system, "messages": messages, "tag": tag})
        answer = self.answers.pop(0)
        if schema is not None:
            jsonschema.validate(answer, schema)
        assert not (check(answer) if check else [])
        return answer, SimpleNamespace(text=json.dumps(answer), cache_hit=False)


def model_answer(verdict="PASS", score=9.0, issues=(), instructions=None):
    return {"overall_score": score, "dimension_scores": {d: score for d in DIMENSIONS}, "issues": list(issues),
            "revision_instructions": instructions or {}, "verdict": verdict}


def model_issue(id_, severity, stage, category="substantive_validity"):
    return {"id": id_, "severity": severity, "category": category, "description": f"the model found {id_}",
            "recommendation": f"address {id_}", "target_stage": stage}


def test_prompt_file_has_the_lenses_and_the_placeholders_the_critic_fills(prompts):
    system = prompts["system"]
    assert system.index("Methodologist") < system.index("Skeptic") < system.index("Synthesizer")
    assert placeholders(system) == {"dimensions", "code_items", "model_items", "dataset_title", "dataset_rules"}
    assert placeholders(prompts["user"]) == {"round", "max_revisions", "spec", "data_report", "results",
                                             "code_findings", "figures", "lessons"}


def test_model_pass_is_overruled_by_a_code_critical_and_issues_are_merged(good, reg, prompts):
    a = copy.deepcopy(good)
    a["results"]["test_n"] = 999
    code = review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2)
    assert [i["id"] for i in code["issues"]] == ["an_test_rows_only"]
    answer = model_answer("PASS", 9.0, [model_issue("an_test_rows_only", "minor", "analyze", "analysis"),
                                        model_issue("sv_causal_language", "major", "write"),
                                        model_issue("dp_school_overlap", "critical", "engineer"),
                                        model_issue("pf_new_concern", "minor", "formulate", "nonsense")],
                          {"write": ["Say 'predicts', not 'drives'."]})
    client = ScriptedCritic(answer)
    rv = review_with_model(client, prompts, a["spec"], a["report"], a["results"], None, code)
    validate(rv, "review_report")
    ids = [i["id"] for i in rv["issues"]]
    assert ids == ["an_test_rows_only", "sv_causal_language", "pf_new_concern"]
    kept = {i["id"]: i for i in rv["issues"]}
    assert kept["an_test_rows_only"]["severity"] == "critical" and kept["an_test_rows_only"]["source"] == "code"
    assert kept["pf_new_concern"]["category"] == "problem_formulation"  # unknown category: by the stage
    assert kept["sv_causal_language"]["source"] == "model"
    assert rv["model_verdict"] == "PASS" and rv["verdict"] == "REVISE" and rv["rerun_from"] == "formulate"
    notes = "\n".join(rv["notes"])
    assert "model verdict PASS overruled by the rubric verdict REVISE" in notes and "an_test_rows_only" in notes
    assert "model issue an_test_rows_only dropped" in notes and "model issue dp_school_overlap dropped" in notes
    assert SCORE_RULE in notes
    scores, rubric_overall = dimension_scores(rv["issues"])
    assert rv["overall_score"] == min(9.0, rubric_overall) and rv["rubric_overall_score"] == rubric_overall
    assert rv["dimension_scores"] == scores and rv["model_overall_score"] == 9.0
    assert "Say 'predicts', not 'drives'." in rv["revision_instructions"]["write"]
    call = client.calls[0]
    assert call["tag"] == "critique" and "sv_causal_language" in call["system"] and "pf_answerable" in call["system"]
    user = call["messages"][0]["content"]
    assert isinstance(user, str) and a["spec"]["research_question"] in user
    assert "an_test_rows_only: FAILED (critical)" in user and "auc_95ci" in user


def test_model_score_lowers_the_overall_and_the_verdict(good, reg, prompts):
    code = review(good["spec"], good["report"], good["results"], reg, round_=0, max_revisions=2)
    rv = review_with_model(ScriptedCritic(model_answer("PASS", 6.0,
                                                       [model_issue("an_model_selection", "minor", "analyze")])),
                           prompts, good["spec"], good["report"], good["results"], None, code)
    assert rv["overall_score"] == 6.0 and rv["verdict"] == "REVISE" and rv["rerun_from"] == "analyze"
    assert any("overall score 6 under 7" in n for n in rv["notes"])


def test_model_abort_needs_an_unfixable_item(good, reg, prompts):
    code = review(good["spec"], good["report"], good["results"], reg, round_=0, max_revisions=2)
    plain = review_with_model(ScriptedCritic(model_answer("ABORT", 8.0,
                                                          [model_issue("pf_question_clarity", "major", "formulate")])),
                              prompts, good["spec"], good["report"], good["results"], None, code)
    assert plain["verdict"] == "PASS" and any("ABORT not honoured" in n for n in plain["notes"])
    leak = model_issue("sv_confirmed_leakage", "critical", "formulate")
    aborted = review_with_model(ScriptedCritic(model_answer("ABORT", 3.0, [leak])), prompts, good["spec"],
                                good["report"], good["results"], None, code)
    validate(aborted, "review_report")
    assert aborted["verdict"] == "ABORT" and aborted["abort_reason"] == leak["description"]
    assert aborted["issues"][0]["unfixable"] and not any("ABORT" in n for n in aborted["notes"])


def test_write_only_revision_reruns_nothing_and_is_unverified(good, reg, prompts):
    code = review(good["spec"], good["report"], good["results"], reg, round_=0, max_revisions=2)
    rv = review_with_model(ScriptedCritic(model_answer("REVISE", 8.0,
                                                       [model_issue("sv_causal_language", "critical", "write")])),
                           prompts, good["spec"], good["report"], good["results"], None, code)
    validate(rv, "review_report")
    assert rv["rubric_verdict"] == "REVISE" and rv["verdict"] == "UNVERIFIED" and rv["unverified"]
    assert rv["rerun_from"] is None and rv["revision_instructions"]["write"]
    assert any("no stage can be re-run" in n for n in rv["notes"])


def test_last_round_model_pass_with_a_critical_is_unverified(good, reg, prompts):
    a = copy.deepcopy(good)
    a["results"]["test_n"] = 999
    code = review(a["spec"], a["report"], a["results"], reg, round_=2, max_revisions=2)
    rv = review_with_model(ScriptedCritic(model_answer("PASS", 9.5)), prompts, a["spec"], a["report"],
                           a["results"], None, code)
    assert rv["verdict"] == "UNVERIFIED" and rv["unverified"] and rv["rerun_from"] is None


def test_figures_are_attached_as_png_images_only(good, reg, prompts, tmp_path):
    (tmp_path / "roc.png").write_bytes(PNG)
    (tmp_path / "roc.pdf").write_bytes(b"%PDF-1.4")
    (tmp_path / "fairness.png").write_bytes(PNG)
    (tmp_path / "shap_summary.pdf").write_bytes(b"%PDF-1.4")
    paths = {"roc": tmp_path / "roc.pdf", "shap_summary": tmp_path / "shap_summary.pdf",
             "fairness": tmp_path / "fairness.png"}
    blocks, attached, skipped = figure_blocks(paths)
    assert attached == ["roc", "fairness"] and len(skipped) == 1 and "shap_summary" in skipped[0]
    images = [b for b in blocks if b["type"] == "image"]
    assert images[0]["source"]["media_type"] == "image/png" and images[0]["source"]["type"] == "base64"
    code = review(good["spec"], good["report"], good["results"], reg, round_=0, max_revisions=2)
    client = ScriptedCritic(model_answer(), model_answer())
    rv = review_with_model(client, prompts, good["spec"], good["report"], good["results"], paths, code, images=True)
    content = client.calls[0]["messages"][0]["content"]
    assert content[0]["type"] == "text" and [b["type"] for b in content[1:]] == ["text", "image", "text", "image"]
    assert rv["figures_attached"] == ["roc", "fairness"] and any("shap_summary" in n for n in rv["notes"])
    review_with_model(client, prompts, good["spec"], good["report"], good["results"], paths, code)
    assert isinstance(client.calls[1]["messages"][0]["content"], str)  # images off by default


def test_key_figure_paths_resolve_against_the_round(good):
    paths = key_figure_paths(good["results"], "output/branch_1/round_0")
    assert set(paths) == {"roc", "shap_summary", "fairness"} <= set(KEY_FIGURES)
    assert paths["roc"] == Path("output/branch_1/round_0/figures/roc.pdf")


def test_model_schema_refuses_an_unknown_target_stage():
    bad = model_answer(issues=[model_issue("x", "major", "publish")])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, MODEL_REVIEW_SCHEMA)


def _anthropic_critic(server, tmp_path):
    """A real Anthropic client of the Critic, talking to the fake server."""
    from edm_ars.llm import AgentSettings, LLMClient

    settings = AgentSettings(agent="critique", backend="anthropic", model="claude-test", temperature=0.0,
                             max_tokens=2000, timeout_s=5.0, max_retries=0, base_url=server.url)
    return LLMClient(settings, run_round=0, cache_dir=tmp_path / "cache", ledger_path=tmp_path / "l.jsonl",
                     transcript_dir=None)


def test_real_client_sends_image_blocks_to_the_anthropic_api(good, reg, prompts, tmp_path, monkeypatch):
    """End to end through LLMClient and the fake Anthropic server: image blocks reach the request."""
    from fakes.llm_servers import FakeAnthropic


    for var in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-critic-0000")
    (tmp_path / "roc.png").write_bytes(PNG)
    code = review(good["spec"], good["report"], good["results"], reg, round_=0, max_revisions=2)
    reply = "<thinking>methodologist, skeptic, synthesizer</thinking>\n" + json.dumps(model_answer())
    with FakeAnthropic([reply]) as server:
        client = _anthropic_critic(server, tmp_path)
        rv = review_with_model(client, prompts, good["spec"], good["report"], good["results"],
                               {"roc": tmp_path / "roc.pdf"}, code, images=True)
    sent = server.requests[0]["messages"][0]["content"]
    assert [b["type"] for b in sent] == ["text", "text", "image"]
    assert rv["backend"] == "anthropic" and rv["verdict"] == "PASS" and rv["model_verdict"] == "PASS"
    validate(rv, "review_report")


def test_the_model_critic_sees_the_png_renderings_of_the_key_figures(good, reg, prompts, tmp_path, monkeypatch):
    """Key figures drawn by the Analyst's code (PDF + PNG in the round's figure folders) reach the fake Anthropic
    server as image blocks holding the PNG files' bytes, in KEY_FIGURES order; a PDF-only figure is named in the
    notes, the others are not."""
    import base64

    import numpy as np
    from fakes.llm_servers import FakeAnthropic

    from edm_ars.analysis import figures
    from edm_ars.analysis.explain_figures import summary_figure
    from edm_ars.analysis.fairness_figures import fairness_figure

    for var in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-critic-0000")
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 2, 400).astype(float), rng.uniform(size=400)
    X = __import__("pandas").DataFrame(rng.normal(size=(400, 3)), columns=["a", "b", "c"])
    round_dir = tmp_path / "output" / "branch_1" / "round_0"
    a = copy.deepcopy(good)
    drawn = {"roc": figures.roc_figure(y, {"m": p}, {"m": "Model"}, {"m": 0.5}, round_dir / "figures/evaluate/roc.pdf"),
             "shap_summary": summary_figure(X.to_numpy(), X, {c: c for c in X.columns}, None,
                                            round_dir / "figures/explain/shap_summary.pdf"),
             "fairness": fairness_figure({"primary_metric": "auc", "overall": {"auc": 0.7}, "attributes": {
                 "X1SEX": {"label": "Sex", "kind": "attribute", "groups": [
                     {"group": g, "reliable": True, "metric": m, "ci": [m - 0.05, m + 0.05]}
                     for g, m in (("Female", 0.72), ("Male", 0.68))]}}}, round_dir / "figures/fairness/fairness.pdf")}
    folders = {"roc": "evaluate", "shap_summary": "explain", "fairness": "fairness"}
    for f in a["results"]["figures"]:
        if f["kind"] in drawn:
            f.update(path=f"figures/{folders[f['kind']]}/{f['kind']}.pdf", drawn=drawn[f["kind"]],
                     png=f"figures/{folders[f['kind']]}/{f['kind']}.png")
    a["results"]["figures"].append({"path": "figures/evaluate/observed_predicted.pdf", "kind": "observed_predicted",
                                    "caption": "Observed against predicted."})  # a PDF without its PNG
    (round_dir / "figures/evaluate/observed_predicted.pdf").write_bytes(b"%PDF-1.4")
    paths = key_figure_paths(a["results"], round_dir)
    code = review(a["spec"], a["report"], a["results"], reg, round_=0, max_revisions=2)
    reply = "<thinking>methodologist, skeptic, synthesizer</thinking>\n" + json.dumps(model_answer())
    with FakeAnthropic([reply]) as server:
        client = _anthropic_critic(server, tmp_path)
        rv = review_with_model(client, prompts, a["spec"], a["report"], a["results"], paths, code, images=True)
    sent = server.requests[0]["messages"][0]["content"]
    images = [b for b in sent if b["type"] == "image"]
    assert rv["figures_attached"] == ["roc", "shap_summary", "fairness"] and len(images) == 3
    for kind, block in zip(rv["figures_attached"], images, strict=True):
        png = round_dir / f"figures/{folders[kind]}/{kind}.png"
        assert block["source"] == {"type": "base64", "media_type": "image/png",
                                   "data": base64.b64encode(png.read_bytes()).decode("ascii")}
    assert [n for n in rv["notes"] if n.startswith("figure not attached")] == [
        "figure not attached: observed_predicted: no PNG rendering of observed_predicted.pdf"]
    assert "(attached as an image)" in sent[0]["text"]


def test_images_are_not_sent_to_other_backends(good, reg, prompts, tmp_path):
    (tmp_path / "roc.png").write_bytes(PNG)
    code = review(good["spec"], good["report"], good["results"], reg, round_=0, max_revisions=2)
    client = ScriptedCritic(model_answer())
    client.settings = SimpleNamespace(backend="openai_compatible")
    rv = review_with_model(client, prompts, good["spec"], good["report"], good["results"],
                           {"roc": tmp_path / "roc.png"}, code, images=True)
    assert isinstance(client.calls[0]["messages"][0]["content"], str) and rv["figures_attached"] == []
    assert any("only with the anthropic backend" in n for n in rv["notes"])


def test_stages_order():
    assert STAGES == ["formulate", "engineer", "analyze"]


def test_a_fairness_audit_without_calibration_or_with_r2_is_caught(good, reg):
    """Binary: an audit whose groups lack calibration, at no stated rule, fails naming the keys; continuous: an
    audit comparing R2 across groups without an error scale fails too, one in RMSE/bias SD units passes."""
    def strip(a):
        a["results"]["fairness"].pop("decision_rule")
        for g in a["results"]["fairness"]["attributes"]["X1SEX"]["groups"]:
            g.pop("calibration_slope")
    f = CHECKS["fairness_audit"](artifacts(good, reg, strip), {})
    assert not f.passed and "decision_rule" in f.message and "X1SEX" in f.message and "citl" in f.message

    def r2(a):
        a["results"]["task"] = "regression"
        a["results"]["fairness"] = {"primary_metric": "r2", "attributes": {"X1SEX": {"groups": [
            {"group": "Female", "n": 500, "reliable": True, "metric": 0.4, "r2": 0.4}]}}}
    f = CHECKS["fairness_audit"](artifacts(good, reg, r2), {})
    assert not f.passed and "R2" in f.message and "error_scale" in f.message

    def sd(a):
        a["results"]["task"] = "regression"
        a["results"]["fairness"] = {"primary_metric": "rmse", "error_scale": {"kind": "training_outcome_sd", "sd": 2.0},
                                    "attributes": {"X1SEX": {"groups": [
                                        {"group": "Female", "n": 500, "reliable": True, "metric": 0.6, "rmse": 0.6,
                                         "mean_error": 0.1}]}}}
    assert CHECKS["fairness_audit"](artifacts(good, reg, sd), {}).passed


def test_a_dropped_or_incomplete_supplementary_analysis_is_an_issue(good, reg, rubric):
    results = json.loads(json.dumps(good["results"]))
    results["supplementary"]["analyses"]["drop_top_predictor"]["reports"].append("score_with_top")
    results["supplementary"]["analyses"]["gap"] = {"status": "dropped", "reports": ["gap"],
                                                   "reason": "attempt 3 of 3: memory: over the limit"}
    checks, issues = rubric_checks(good["spec"], good["report"], results, reg, rubric=rubric, claims=good["claims"],
                                   manifest=good["manifest"], dgp=good["dgp"])
    issue = next(i for i in issues if i["id"] == "an_supplementary")
    assert issue["severity"] == "minor" and issue["target_stage"] == "analyze"
    assert "gap was dropped (attempt 3 of 3: memory" in issue["description"]
    assert "drop_top_predictor: its purpose announced score_with_top" in issue["description"]


def test_no_subgroup_audit_is_asked_of_a_study_without_protected_attributes(good, reg):
    """A data set that declares no protected attribute has nothing to audit and no revision can add one: the
    subgroup check does not apply (no issue, no revision round), while a declared but missing audit still fails."""
    def without(a):
        a["spec"]["subgroups"] = []
        a["results"]["fairness"] = {}
    skipped = CHECKS["subgroup_results"](artifacts(good, reg, without), {})
    assert skipped.passed is None and "declares no protected attribute" in skipped.message
    missing = CHECKS["subgroup_results"](artifacts(good, reg, lambda a: a["results"].update(fairness={})), {})
    assert missing.passed is False


def test_a_cap_no_revision_can_lift_ends_the_loop_at_once():
    """Too few test rows (a capping issue that targets the Writer) beside a minor issue an analysis re-run would
    meet again: no revision round, the paper is written flagged UNVERIFIED; without the cap the minor issue alone
    does not stop a PASS, and a capping issue an analysis stage can fix still asks for a round."""
    small = dict(issue("an_test_n_min", "major", "write"), caps_verdict=True)
    minor = issue("an_phase_errors", "minor", "analyze")
    out = compute_verdict([small, minor], 9.0, round_=0, max_revisions=2)
    assert out["verdict"] == "UNVERIFIED" and out["unverified"] and out["rubric_verdict"] == "REVISE"
    assert any("no revision can lift" in n for n in out["notes"])
    leak = dict(issue("sv_leakage", "major", "analyze"), caps_verdict=True)
    assert compute_verdict([leak, minor], 9.0, round_=0, max_revisions=2)["verdict"] == "REVISE"


def test_every_json_answer_can_be_asked_for_as_structured_output():
    from edm_ars.formulate.branches_model import DRAFTS_SCHEMA
    from edm_ars.formulate.model import MODEL_SPEC_SCHEMA
    from edm_ars.llm.backends import _json_schema_for_api, expressible
    from edm_ars.review.claims import MODEL_CLAIMS_SCHEMA

    for schema in (MODEL_REVIEW_SCHEMA, MODEL_SPEC_SCHEMA, DRAFTS_SCHEMA, MODEL_CLAIMS_SCHEMA):
        assert expressible(schema)
    # what the service would enforce for the Critic holds a full review (every dimension, an instruction for
    # every stage, an action) and no dimension or stage the rubric does not know
    sent = jsonschema.Draft202012Validator(_json_schema_for_api(MODEL_REVIEW_SCHEMA))
    full = model_answer("REVISE", 6.0, [model_issue("m1", "major", "analyze")],
                        {stage: ["redo it"] for stage in (*STAGES, "write")})
    full["revision_actions"] = [{"action": "add_model", "value": "mlp", "reason": "a nonlinear check", "issue": "m1"}]
    assert not list(sent.iter_errors(full))
    assert list(sent.iter_errors({**full, "dimension_scores": {"vibes": 5}}))
    assert list(sent.iter_errors({**full, "revision_instructions": {"elsewhere": ["x"]}}))
    # what the client validates stays as open as before: an unknown dimension is named by the Critic's own check
    assert not list(jsonschema.Draft202012Validator(MODEL_REVIEW_SCHEMA).iter_errors({**full, "dimension_scores":
                                                                                        {"vibes": 5}}))


def test_published_findings_must_be_reported_and_the_contribution_stated_against_them():
    from edm_ars.data.registry import load_registry

    reg = load_registry(ROOT / "registry" / "hsb_math.yaml")
    ids = [f["id"] for f in reg.dataset["findings"] if "MathAch" in (f.get("outcomes") or ["MathAch"])]
    spec = {"outcome": {"name": "MathAch"}, "expected_contribution": "A reproducible benchmark of six model families."}
    check = CHECKS["prior_findings"]
    table = {"findings": [{"id": i, "status": "agrees"} for i in ids], "counts": {"agrees": len(ids)}}
    assert check(Artifacts(spec, {}, {"replication": table}, reg=reg), {}).passed is True
    # a finding left out of the table
    partial = {"findings": table["findings"][1:]}
    found = check(Artifacts(spec, {}, {"replication": partial}, reg=reg), {})
    assert found.passed is False and found.detail == {"missing": ids[:1]}
    assert check(Artifacts(spec, {}, {}, reg=reg), {}).passed is False  # no table at all
    # a contribution claiming to be first on data with tested published findings
    first = dict(spec, expected_contribution="The first study to predict mathematics achievement in these schools.")
    found = check(Artifacts(first, {}, {"replication": table}, reg=reg), {})
    assert found.passed is False and found.severity == "minor" and "'The first study'" in found.message
    # "first" as a grade or a wave is no claim to be first
    grades = dict(spec, expected_contribution="Predicting third-grade scores from first-grade and first follow-up data.")
    assert check(Artifacts(grades, {}, {"replication": table}, reg=reg), {}).passed is True
    # another outcome, or a registry without findings: nothing published, nothing left out
    other = dict(spec, outcome={"name": "SES"})
    assert check(Artifacts(other, {}, {}, reg=reg), {}).passed is True
    assert check(Artifacts(spec, {}, {}, reg=load_registry(ROOT / "registry" / "hsls09")), {}).passed is True
    assert check(Artifacts(spec, {}, {}), {}).passed is None
