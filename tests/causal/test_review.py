"""The Critic's causal checklist: each item judged on small hand-made artifacts, and the verdict by rule."""

from __future__ import annotations

import copy

import pytest
import yaml

from edm_ars.causal.review import (
    DEFAULTS,
    ORDER,
    TRIMMING_ACTION,
    checklist,
    review_causal,
    settings,
    trimming_threshold,
)
from edm_ars.core.artifacts import validate
from edm_ars.core.errors import EdmArsError
from edm_ars.writer.integrity import unverified_reasons


def spec_of(kind: str) -> dict:
    observational = kind == "observational"
    return {
        "task": "causal", "question_id": "q", "research_question": "Does it raise scores?", "population": "students",
        "outcome": {"name": "score", "label": "Score", "type": "continuous", "wave": "w2", "sum_of": None},
        "treatment": {"variable": "prog", "label": "Program", "wave": "w1", "treated": 1, "control": 0,
                      "treated_label": "program", "control_label": "no program", "other_levels": [],
                      "phrases": ["the program"]},
        "design": {"kind": kind, "unit": "student", "blocks": None if observational else "school",
                   "cluster": None if observational else "school",
                   "statement": "" if observational else "Students were assigned at random within schools."},
        "estimand": {"name": "ATE", "statement": "The average effect of the program on the score."},
        "covariates": [{"name": "ses", "label": "SES", "type": "continuous", "wave": "w0", "rationale": "r"},
                       {"name": "lunch", "label": "Free lunch", "type": "binary", "wave": "w1", "rationale": "r"}],
        "measured_before_treatment": ["lunch"],
        "subgroups": [{"name": "sex", "label": "Sex"}],
        "identification": (
            "Conditional exchangeability given the listed covariates (no unmeasured confounding), positivity "
            "(every student could take either arm) and consistency with no interference between students."
            if observational else "The treatment was randomised within schools, so the arms are exchangeable."),
        "time_order": [
            {"check": "covariate ses", "ok": True, "detail": "ses (w0) is measured before the treatment (w1)"},
            {"check": "covariate lunch", "ok": True, "detail": "lunch is of the treatment's wave and declared"},
            {"check": "outcome", "ok": True, "detail": "the outcome (w2) is measured after the treatment (w1)"},
        ],
        "published_estimates": [], "literature_keys": [], "round": 0,
    }


def results_of(kind: str) -> dict:
    observational = kind == "observational"
    est = {"estimate": 5.0, "se": 1.0, "ci_low": 3.04, "ci_high": 6.96, "p_value": 0.0001}
    rows = [{"feature": "x__ses", "covariate": "ses", "mean_treated": 0.1, "mean_control": 0.05, "smd": 0.05,
             "smd_weighted": 0.01 if observational else None},
            {"feature": "x__lunch", "covariate": "lunch", "mean_treated": 0.4, "mean_control": 0.42, "smd": -0.04,
             "smd_weighted": -0.02 if observational else None}]
    return {
        "task": "causal", "design": kind, "estimand": "ATE", "alpha": 0.05,
        "n": {"analysed": 400, "treated": 200, "control": 200, "clusters": None, "blocks": None},
        "naive": {"estimator": "difference in means", **est},
        "primary": {"estimator": "AIPW" if observational else "OLS with block fixed effects",
                    "library": "doubleml 0.11.4" if observational else "statsmodels 0.15.0",
                    "standard_errors": "robust", **est},
        "adjusted": None if observational else {"estimator": "OLS with covariates", **est, "estimate": 5.2},
        "balance": {"threshold": 0.1, "rows": rows, "max_abs_smd": 0.05,
                    "max_abs_smd_weighted": 0.02 if observational else None, "n_above": 0,
                    "n_above_weighted": 0 if observational else None},
        "attrition": {"missing_treated": 10, "missing_control": 12, "rate_treated": 0.05, "rate_control": 0.06,
                      "difference": -0.01, "ci_low": -0.05, "ci_high": 0.03, "p_value": 0.6,
                      "stayers_max_abs_smd": 0.06},
        "overlap": {"propensity_min": 0.08, "propensity_max": 0.93, "share_below": 0.0, "share_above": 0.0,
                    "bounds": [0.05, 0.95], "trimming_threshold": 0.01, "n_trimmed": 0,
                    "propensity_quantiles": {"treated": [0.2, 0.4, 0.5, 0.6, 0.8],
                                             "control": [0.1, 0.3, 0.4, 0.5, 0.7]}} if observational else None,
        "sensitivity": {"kind": "omitted-variable bounds (DoubleML sensitivity_analysis)", "cf_y": 0.03,
                        "cf_d": 0.03, "rho": 1.0, "theta_lower": 4.1, "theta_upper": 5.9, "ci_lower": 2.9,
                        "ci_upper": 7.1, "rv": 0.21, "rva": 0.15} if observational else None,
        "heterogeneity": {"exploratory": True, "method": "group-wise AIPW", "groups": [
            {"attribute": "sex", "group": "female", "n": 200, "estimate": 5.5, "se": 1.4, "ci_low": 2.8,
             "ci_high": 8.2}], "skipped": []},
        "versions": {"python": "3.11"}, "learners": None, "seed": 1,
    }


REPORT = {"task": "causal", "n_rows": 422, "n_treated": 210, "n_control": 212}


def items(spec, results):
    return {i["id"]: i for i in checklist(spec, REPORT, results)}


@pytest.fixture(params=["randomized", "observational"])
def design(request):
    return request.param


# ------------------------------------------------------------------------------------------ a clean study passes
def test_every_item_passes_on_a_clean_study(design):
    got = items(spec_of(design), results_of(design))
    assert list(got) == list(ORDER)
    assert all(i["passed"] for i in got.values()), [i["detail"] for i in got.values() if not i["passed"]]
    rv = review_causal(spec_of(design), REPORT, results_of(design), round=0, max_revisions=2)
    validate(rv, "review_report")
    assert rv["verdict"] == "PASS" and rv["rubric_verdict"] == "PASS" and not rv["unverified"]
    assert rv["issues"] == [] and rv["rerun_from"] is None and rv["abort_reason"] is None
    assert rv["overall_score"] == 10.0 and [c["id"] for c in rv["checklist"]] == list(ORDER)
    assert unverified_reasons(rv) == []


def test_the_details_name_the_numbers():
    got = items(spec_of("observational"), results_of("observational"))
    assert "200 treated and 200 control" in got["comparison_group"]["detail"]
    assert "0.0% of the cross-fitted propensities" in got["overlap"]["detail"]
    assert "0.020" in got["balance"]["detail"] and "x__lunch" in got["balance"]["detail"]
    assert "-1.0 percentage points" in got["attrition"]["detail"] and "0.060" in got["attrition"]["detail"]
    assert "robustness value 0.210" in got["sensitivity"]["detail"]
    r = items(spec_of("randomized"), results_of("randomized"))
    assert r["overlap"]["detail"].startswith("assignment by design")
    assert "covariate-adjusted check reported" in r["sensitivity"]["detail"] and "5.200" in r["sensitivity"]["detail"]


# ------------------------------------------------------------------------------------------ each item fails
def test_comparison_group_fails_and_aborts(design):
    res = results_of(design)
    res["n"]["control"] = 12
    got = items(spec_of(design), res)["comparison_group"]
    assert not got["passed"] and got["severity"] == "critical" and "12 control" in got["detail"]
    rv = review_causal(spec_of(design), REPORT, res, round=0, max_revisions=2)
    validate(rv, "review_report")
    assert rv["verdict"] == "ABORT" and "12 control" in rv["abort_reason"] and rv["rerun_from"] is None
    assert rv["issues"][0]["unfixable"] is True


def test_identification_needs_a_statement_and_the_assumptions():
    spec = spec_of("randomized")
    spec["design"]["statement"] = " "
    assert not items(spec, results_of("randomized"))["identification"]["passed"]
    spec = spec_of("observational")
    spec["identification"] = "Conditional exchangeability given the covariates and positivity."
    got = items(spec, results_of("observational"))["identification"]
    assert not got["passed"] and got["severity"] == "major" and "consistency" in got["detail"]
    spec["identification"] = ""
    assert "identification is empty" in items(spec, results_of("observational"))["identification"]["detail"]
    spec = spec_of("observational")
    spec["design"]["kind"] = "quasi"
    with pytest.raises(EdmArsError, match="differs from the specification's design"):
        checklist(spec, REPORT, results_of("observational"))


def test_pre_treatment_fails_on_a_failed_time_order_check_and_aborts(design):
    spec = spec_of(design)
    spec["time_order"][0] = {"check": "covariate ses", "ok": False,
                             "detail": "ses (w3) is measured after the treatment prog (w1)"}
    got = items(spec, results_of(design))["pre_treatment"]
    assert not got["passed"] and got["severity"] == "critical" and "measured after the treatment" in got["detail"]
    rv = review_causal(spec, REPORT, results_of(design), round=0, max_revisions=2)
    assert rv["verdict"] == "ABORT" and "ses (w3)" in rv["abort_reason"]


def test_pre_treatment_fails_on_an_undeclared_covariate_of_the_treatment_wave_or_an_unchecked_one():
    spec = spec_of("randomized")
    spec["measured_before_treatment"] = []
    got = items(spec, results_of("randomized"))["pre_treatment"]
    assert not got["passed"] and "lunch is of the treatment's wave (w1)" in got["detail"]
    spec = spec_of("randomized")
    del spec["time_order"][1]
    assert "lunch has no time-order check" in items(spec, results_of("randomized"))["pre_treatment"]["detail"]
    spec["time_order"] = [{"check": "waves", "ok": True, "detail": "no waves"}]  # nothing to order by
    assert items(spec, results_of("randomized"))["pre_treatment"]["passed"]
    del spec["time_order"]
    with pytest.raises(EdmArsError, match="time_order"):
        checklist(spec, REPORT, results_of("randomized"))


def test_overlap_fails_and_asks_for_stricter_trimming():
    res = results_of("observational")
    res["overlap"].update(share_below=0.09, share_above=0.04)
    got = items(spec_of("observational"), res)["overlap"]
    assert not got["passed"] and got["severity"] == "major" and "13.0%" in got["detail"]
    rv = review_causal(spec_of("observational"), REPORT, res, round=0, max_revisions=2)
    validate(rv, "review_report")
    assert rv["verdict"] == "REVISE" and rv["rerun_from"] == "analyze"
    assert [(a["action"], a["stage"], a["value"]) for a in rv["revision_actions"]] == [
        (TRIMMING_ACTION, "analyze", 0.05)]
    assert any(t.startswith(f"Apply {TRIMMING_ACTION} 0.05") for t in rv["revision_instructions"]["analyze"])
    assert trimming_threshold([rv], 0.01) == 0.05 and trimming_threshold([], 0.01) == 0.01


def test_overlap_already_trimmed_is_a_limitation_and_passes():
    res = results_of("observational")
    res["overlap"].update(share_below=0.09, share_above=0.04, trimming_threshold=0.05, n_trimmed=52)
    rv = review_causal(spec_of("observational"), REPORT, res, round=1, max_revisions=2)
    validate(rv, "review_report")
    assert rv["verdict"] == "PASS" and rv["revision_actions"] == [] and rv["rerun_from"] is None
    assert [i["target_stage"] for i in rv["issues"]] == ["write"] and "already trimmed" in rv["limitations"][0]


def test_overlap_diagnostics_missing_in_an_observational_study_flags_the_paper():
    res = results_of("observational")
    res["overlap"] = None
    rv = review_causal(spec_of("observational"), REPORT, res, round=0, max_revisions=2)
    assert not rv["checklist"][3]["passed"] and rv["verdict"] == "UNVERIFIED" and rv["unverified"]


def test_balance_randomized_is_minor_and_observational_major():
    res = results_of("randomized")
    res["balance"].update(max_abs_smd=0.14, n_above=1)
    res["balance"]["rows"][1]["smd"] = -0.14
    got = items(spec_of("randomized"), res)["balance"]
    assert not got["passed"] and got["severity"] == "minor" and "0.140 (x__lunch)" in got["detail"]
    rv = review_causal(spec_of("randomized"), REPORT, res, round=0, max_revisions=2)
    assert rv["verdict"] == "PASS" and rv["issues"][0]["severity"] == "minor" and rv["limitations"]
    res = results_of("observational")
    res["balance"].update(max_abs_smd_weighted=0.17, n_above_weighted=1)
    got = items(spec_of("observational"), res)["balance"]
    assert not got["passed"] and got["severity"] == "major" and "0.170" in got["detail"]
    res["balance"]["max_abs_smd_weighted"] = None
    assert "no balance after weighting" in items(spec_of("observational"), res)["balance"]["detail"]
    res = results_of("randomized")
    res["balance"].update(rows=[], max_abs_smd=None, n_above=0)
    got = items(spec_of("randomized"), res)["balance"]
    assert got["passed"] and got["detail"] == "no covariate feature to compare between the arms"


def test_a_stricter_balance_threshold_counts_the_features_at_its_own_value(design):
    """The rubric's threshold may differ from the one the estimation counted at (results.json balance.threshold):
    the item's count of features above it is taken at the rubric's value, so the detail does not say "0 above
    0.01" beside a largest |SMD| of 0.05."""
    key = "smd" if design == "randomized" else "smd_weighted"
    res = results_of(design)
    values = [abs(v) for r in res["balance"]["rows"] if (v := r.get(key)) is not None]
    assert values and res["balance"]["n_above" if design == "randomized" else "n_above_weighted"] == 0
    got = checklist(spec_of(design), REPORT, res, dict(DEFAULTS, smd_threshold=0.01))
    balance = next(i for i in got if i["id"] == "balance")
    assert not balance["passed"]
    assert f"{sum(v > 0.01 for v in values)} of {len(res['balance']['rows'])} features above 0.01" in \
        balance["detail"], balance["detail"]


def test_attrition_fails_on_a_rate_gap_or_unlike_stayers_and_stays_a_limitation(design):
    res = results_of(design)
    res["attrition"].update(rate_treated=0.05, rate_control=0.12, difference=-0.07)
    got = items(spec_of(design), res)["attrition"]
    assert not got["passed"] and got["severity"] == "major" and "-7.0 percentage points" in got["detail"]
    rv = review_causal(spec_of(design), REPORT, res, round=0, max_revisions=2)
    validate(rv, "review_report")
    assert rv["verdict"] == "PASS" and rv["revision_actions"] == [] and rv["rerun_from"] is None
    assert rv["issues"][0]["id"] == "attrition" and rv["issues"][0]["target_stage"] == "write"
    assert "differential attrition" in rv["revision_instructions"]["write"][0]
    res = results_of(design)
    res["attrition"]["stayers_max_abs_smd"] = 0.13
    # randomised: the stayers must stay alike; observational: the arms differ by design, balance judges them weighted
    assert items(spec_of(design), res)["attrition"]["passed"] is (design == "observational")


def test_sensitivity_is_required_only_for_an_observational_design():
    res = results_of("observational")
    res["sensitivity"] = None
    got = items(spec_of("observational"), res)["sensitivity"]
    assert not got["passed"] and got["severity"] == "major" and "is null" in got["detail"]
    res["sensitivity"] = dict(results_of("observational")["sensitivity"], rv=None)
    assert not items(spec_of("observational"), res)["sensitivity"]["passed"]
    res = results_of("randomized")
    res["adjusted"] = None
    got = items(spec_of("randomized"), res)["sensitivity"]
    assert got["passed"] and got["detail"] == "not required for a randomised comparison"


def test_heterogeneity_must_be_labelled_exploratory(design):
    res = results_of(design)
    res["heterogeneity"]["exploratory"] = False
    got = items(spec_of(design), res)["heterogeneity_exploratory"]
    assert not got["passed"] and "not labelled exploratory" in got["detail"]
    rv = review_causal(spec_of(design), REPORT, res, round=0, max_revisions=2)
    assert rv["verdict"] == "UNVERIFIED" and rv["rubric_verdict"] == "REVISE" and rv["rerun_from"] is None
    assert unverified_reasons(rv)


# ------------------------------------------------------------------------------------------ verdicts
def bad_overlap():
    res = results_of("observational")
    res["overlap"].update(share_below=0.2, share_above=0.1)
    return res


def test_revise_at_the_cap_keeps_its_issues_and_flags_the_paper():
    rv = review_causal(spec_of("observational"), REPORT, bad_overlap(), round=2, max_revisions=2)
    validate(rv, "review_report")
    assert rv["verdict"] == "UNVERIFIED" and rv["rubric_verdict"] == "REVISE" and rv["unverified"] is True
    assert rv["rerun_from"] is None and rv["revision_actions"] == [] and rv["abort_reason"] is None
    assert [i["id"] for i in rv["issues"]] == ["overlap"] and rv["overall_score"] < 10
    assert any("no revision rounds left" in n for n in rv["notes"])
    assert "the review is marked unverified" in unverified_reasons(rv)


def test_status_states_the_causal_verdicts_as_the_paper_does():
    """`edm-ars status` reads the causal review's fields as the prediction study's: the rubric's REVISE at the
    cap, or a defect no re-run supplies, and the paper UNVERIFIED."""
    from edm_ars.run.status import verdict_words

    capped = review_causal(spec_of("observational"), REPORT, bad_overlap(), round=2, max_revisions=2)
    assert verdict_words(capped).startswith("rubric REVISE at the revision cap (2 of 2 revision rounds): the paper "
                                            "is written UNVERIFIED; score ")
    assert verdict_words(review_causal(spec_of("observational"), REPORT, bad_overlap(), round=0, max_revisions=2)
                         ).startswith("review REVISE (score ")
    res = results_of("randomized")
    res["heterogeneity"]["exploratory"] = False
    defect = review_causal(spec_of("randomized"), REPORT, res, round=0, max_revisions=2)
    assert verdict_words(defect).startswith("rubric REVISE that no revision can answer (heterogeneity_exploratory): "
                                            "the paper is written UNVERIFIED")
    assert verdict_words(review_causal(spec_of("randomized"), REPORT, results_of("randomized"), round=0,
                                       max_revisions=2)) == "review PASS (score 10.0, 0 issues)"


def test_no_revision_rounds_at_all_never_revises():
    rv = review_causal(spec_of("observational"), REPORT, bad_overlap(), round=0, max_revisions=0)
    assert rv["verdict"] == "UNVERIFIED"


def test_forced_revision_reruns_and_stops_at_the_cap(design):
    rv = review_causal(spec_of(design), REPORT, results_of(design), round=0, max_revisions=2, force_revise=True)
    validate(rv, "review_report")
    assert rv["verdict"] == "REVISE" and rv["forced"] and rv["rerun_from"] == "analyze"
    assert rv["issues"][-1]["id"] == "forced_revision"
    later = review_causal(spec_of(design), REPORT, results_of(design), round=1, max_revisions=2, force_revise=True)
    assert later["verdict"] == "PASS" and not later["forced"]
    capped = review_causal(spec_of(design), REPORT, results_of(design), round=0, max_revisions=0,
                           force_revise="engineer")
    assert capped["verdict"] == "PASS"
    with pytest.raises(EdmArsError, match="force_revise"):
        review_causal(spec_of(design), REPORT, results_of(design), round=0, max_revisions=2, force_revise="write")


def test_abort_wins_over_revise():
    res = bad_overlap()
    res["n"]["treated"] = 0
    rv = review_causal(spec_of("observational"), REPORT, res, round=0, max_revisions=2)
    validate(rv, "review_report")
    assert rv["verdict"] == "ABORT" and rv["revision_actions"] == [] and rv["rerun_from"] is None


# ------------------------------------------------------------------------------------------ the rubric
def test_rubric_thresholds_override_the_defaults(tmp_path):
    res = results_of("randomized")
    res["n"]["control"] = 40
    strict = review_causal(spec_of("randomized"), REPORT, res, round=0, max_revisions=2,
                           rubric={"min_arm_n": 50})
    assert strict["verdict"] == "ABORT" and strict["thresholds"]["min_arm_n"] == 50
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump({"causal": {"max_attrition_difference": 0.005},
                                    "scoring": {"penalties": {"major": 3.0}}}))
    rv = review_causal(spec_of("randomized"), REPORT, results_of("randomized"), round=0, max_revisions=2,
                       rubric=path)
    assert rv["issues"][0]["id"] == "attrition" and rv["dimension_scores"]["data_preparation"] == 7.0
    assert settings(None)["thresholds"] == DEFAULTS
    with pytest.raises(EdmArsError, match="unknown causal threshold.*min_n"):
        settings({"min_n": 3})
    with pytest.raises(EdmArsError, match="smd_threshold must be a non-negative number"):
        settings({"causal": {"smd_threshold": "0.1"}})


def test_the_shipped_rubric_states_the_causal_thresholds_and_the_shared_scoring():
    """config/rubric.yaml's `causal:` section, which the Critic's job reads, holds the defaults (so a run with the
    shipped rubric reviews as the code documents), and its scoring is the prediction rubric's."""
    from pathlib import Path

    shipped = settings(Path(__file__).resolve().parents[2] / "config" / "rubric.yaml")
    assert shipped["thresholds"] == DEFAULTS
    assert {k: shipped[k] for k in ("dimensions", "penalties", "start")} == {
        k: settings(None)[k] for k in ("dimensions", "penalties", "start")}


def test_bad_artifacts_are_named():
    res = results_of("randomized")
    del res["balance"]
    with pytest.raises(EdmArsError, match="results.json: missing key 'balance'"):
        checklist(spec_of("randomized"), REPORT, res)
    spec = copy.deepcopy(spec_of("randomized"))
    spec["task"] = "prediction"
    with pytest.raises(EdmArsError, match="task is 'prediction'"):
        checklist(spec, REPORT, results_of("randomized"))
    with pytest.raises(EdmArsError, match="round must be"):
        review_causal(spec_of("randomized"), REPORT, results_of("randomized"), round=-1, max_revisions=2)
