"""The outline as the plan of the argument: leads, contribution and order of emphasis follow the artifacts, and
two studies with different findings get different leads and different contribution paragraphs."""

from __future__ import annotations

import copy
import json

import pytest
import test_writer as tw

from edm_ars.writer import slot_content
from edm_ars.writer.outline import choose

BASE = {"predicts_above_chance": "supported", "meets_quality_floor": "supported",
        "strongest_predictor": "supported", "ranking_robust": "supported"}
TOP = [{"feature": "prior_score", "mean_abs_shap": 0.9}, {"feature": "ses", "mean_abs_shap": 0.2}]


def _multilevel(improves: bool | None, skipped: str | None = None, few: bool = False) -> dict:
    """A multilevel.json as the contract of issue 36 (part A) describes it."""
    context = {"metric": "auc", "without": 0.81, "with": 0.83 if improves else 0.8105,
               "difference": 0.02 if improves else 0.0005, "ci": [0.01, 0.03] if improves else [-0.004, 0.005],
               "better": "higher", "improves": improves, "model": "logistic regression", "n_context_features": 4,
               "means_from": "training rows"}
    level = {"unit": "school", "column": "schid", "n_clusters": 12 if few else 40, "n_rows": 4000,
             "cluster_size": {"mean": 100.0, "min": 40, "max": 160},
             "null_model": {"between_var": 0.72, "within_var": 3.29, "icc": 0.18, "icc_ci": [0.12, 0.25],
                            "ci_method": "cluster bootstrap"},
             "predictor_model": {"between_var": 0.3, "within_var": 2.9, "n_predictors": 5},
             "explained": {"within": 0.12, "between": 0.58, "level1_r2": 0.2, "level2_r2": 0.5},
             "context": context if improves is not None else None, "few_clusters": few,
             "support": "The share describes these schools."}
    return {"estimator": "binomial mixed model (random intercept)", "library": "statsmodels 0.15.0",
            "outcome_scale": "latent", "skipped": skipped, "levels": [] if skipped else [level]}


def _replication(*statuses: str) -> dict:
    findings = [{"id": f"f{i}", "claim": "A claim.", "cite": f"author{i}2001", "where": "Table 2",
                 "kind": "association", "status": s} for i, s in enumerate(statuses)]
    return {"source": "registry", "findings": findings,
            "counts": {k: statuses.count(k) for k in ("agrees", "differs", "cannot_test")}}


def _ids(outline: dict) -> list[str]:
    return [lead["id"] for lead in outline["leads"]]


def test_without_multilevel_or_replication_they_lead_nowhere():
    out = choose(BASE, {"best_model": "logistic", "top_features": TOP}, prior=["ingels2011hsls"])
    assert _ids(out) == ["simple_model_suffices", "one_predictor_dominates"]
    assert out["contribution"] == {"adds": _ids(out), "against": ["ingels2011hsls"], "basis": "literature",
                                   "plan": [{"lead": i, "against": ["ingels2011hsls"]} for i in _ids(out)]}
    assert out["sections"][:2] == ["models", "features"] and "school_context" in out["sections"]
    # no prior work retrieved: the contribution names none
    assert choose(BASE, {"best_model": "logistic", "top_features": TOP})["contribution"]["against"] == []


@pytest.mark.parametrize("multilevel, lead", [
    (_multilevel(True), "school_context_matters"),
    (_multilevel(False), "school_context_does_not_matter"),
    (_multilevel(None, skipped="no cluster level declared"), None),
    (_multilevel(None), None),  # no context comparison: nothing to say about it
])
def test_school_context_leads_from_the_multilevel_analysis(multilevel, lead):
    out = choose(BASE, {"best_model": "xgboost", "top_features": TOP[:1], "multilevel": multilevel})
    assert _ids(out) == ([lead] if lead else [])
    if lead:
        rec = out["leads"][0]
        assert rec["unit"] == "school" and rec["source"] == "results.json:multilevel.levels.0.context.improves"
        assert out["sections"][0] == "school_context"


def test_published_findings_lead_and_are_what_the_contribution_is_stated_against():
    results = {"best_model": "xgboost", "top_features": TOP[:1],
               "replication": _replication("agrees", "differs", "cannot_test")}
    out = choose(BASE, results, prior=["word1989star"])
    assert _ids(out) == ["finding_differs", "finding_replicates"]
    differs, agrees = out["leads"]
    assert differs["findings"] == ["f1"] and differs["cites"] == ["author12001"]
    assert agrees["findings"] == ["f0"] and agrees["source"] == "results.json:replication.findings.0.status"
    # the tested findings' keys, not the general literature
    assert out["contribution"]["against"] == ["author02001", "author12001", "author22001"]
    assert out["contribution"]["basis"] == "replication"
    assert out["contribution"]["plan"][0] == {"lead": "finding_differs", "against": ["author12001"]}
    # only untestable findings: no lead, but the contribution is still stated against the tested sources
    only = choose(BASE, {**results, "replication": _replication("cannot_test")})
    assert _ids(only) == [] and only["contribution"]["against"] == ["author02001"]


def test_the_archetypes_own_lead_comes_first():
    claims = {**BASE, "subgroup_gap_race": "supported", "outperforms_logistic": "supported"}
    out = choose(claims, {"best_model": "xgboost", "top_features": TOP, "multilevel": _multilevel(True)})
    assert out["archetype"] == "fairness_audit"
    assert _ids(out) == ["group_served_worse", "school_context_matters", "flexible_model_gains",
                         "one_predictor_dominates"]
    limited = choose({**claims, "predicts_above_chance": "inconclusive"}, {"best_model": "logistic",
                                                                           "top_features": TOP})
    assert _ids(limited) == ["prediction_limited"]  # nothing else leads when the model does not predict


def test_a_close_second_predictor_means_no_predictor_dominates():
    even = [{"feature": "a", "mean_abs_shap": 0.5}, {"feature": "b", "mean_abs_shap": 0.4}]
    assert "one_predictor_dominates" not in _ids(choose(BASE, {"best_model": "logistic", "top_features": even}))
    unsupported = {**BASE, "strongest_predictor": "inconclusive"}
    assert "one_predictor_dominates" not in _ids(choose(unsupported, {"best_model": "logistic", "top_features": TOP}))


# ---- two made-up studies through the Writer ----------------------------------------------------------------
def _study(tmp_path, name: str, results: dict, claims: dict | None = None) -> tuple[dict, str, str]:
    _, out = tw._build(tmp_path, binary=True, passed=True, name=name, results=results, claims=claims)
    tex = (out / "paper.tex").read_text()
    outline = json.loads((out / "outline.json").read_text())
    intro, disc = slot_content(tex, "INTRODUCTION"), slot_content(tex, "DISCUSSION")
    para = next(p for p in intro.split("\n\n") if "leading result" in p)
    return outline, para, disc


def test_different_findings_read_differently(tmp_path):
    res_a = tw.results(True)
    res_a["multilevel"] = _multilevel(True)
    res_a["replication"] = _replication("differs")
    res_a["replication"]["findings"][0]["cite"] = "ingels2011hsls"
    res_b = copy.deepcopy(tw.results(True))
    res_b["best_model"] = res_b["interpreted_model"] = "logistic"
    res_b["multilevel"] = _multilevel(False, few=True)
    a, para_a, disc_a = _study(tmp_path, "a", res_a, tw._claims_with(res_a, {}))
    b, para_b, disc_b = _study(tmp_path, "b", res_b, tw._claims_with(res_b, {"subgroup_gap_": "inconclusive"}))
    assert a["archetype"] == "fairness_audit" and b["archetype"] == "policy_brief"
    assert [x["id"] for x in a["leads"]][:3] == ["group_served_worse", "finding_differs", "school_context_matters"]
    assert [x["id"] for x in b["leads"]][:2] == ["simple_model_suffices", "school_context_does_not_matter"]
    # the paragraph says what leads, in the study's words, against the named work
    assert "less accurately for some groups" in para_a and "race/ethnicity" in para_a
    assert "differ from published findings" in para_a and "\\citep{ingels2011hsls}" in para_a
    assert "school means of the predictors) adds to" in para_a and "predict of the outcome" in para_a
    assert "keeps a linear model" in para_b and "logistic regression" in para_b
    assert "is not shown to add" in para_b and "these few schools only" in para_b
    assert "less accurately" not in para_b and "published findings" not in para_b
    assert set(para_a.split(". ")).isdisjoint(para_b.split(". "))
    # the Discussion opens with the same leads
    assert disc_a.startswith("What leads in these results is that the model serves some students worse")
    assert disc_b.startswith("What leads in these results is that a simple model is enough")
    for text in (para_a, para_b, disc_a.split("\n\n")[0], disc_b.split("\n\n")[0]):
        assert not tw.raw_numbers(text), text  # no number but through a macro


# ---- the study's facts in the phrases ------------------------------------------------------------------------
def test_a_phrase_says_the_studys_facts_without_the_code_giving_them():
    from edm_ars.writer.phrases import PhraseError, Phrases

    ph = Phrases({"s.k": "The test set of the {study_data} held {n} {study_short} rows."}, "t.yaml")
    with pytest.raises(PhraseError, match="no study fact for slot.*study_data"):
        ph("s.k", n="5")
    said = ph.with_facts({"study_data": "Project STAR data", "study_short": "STAR"})
    assert said("s.k", n="5") == "The test set of the Project STAR data held 5 STAR rows."
    assert said.for_unit("pupil", "pupils")("s.k", n="5") == said("s.k", n="5")  # the facts survive a unit change
    with pytest.raises(PhraseError, match="study_<name>"):
        ph.with_facts({"data": "x"})


def test_two_data_sets_say_the_same_procedure_in_their_own_words(tmp_path):
    star = copy.deepcopy(tw.HSLS_PROSE)
    star.update({"short": "STAR", "long": "Project STAR"})
    _, out_a = tw._build(tmp_path, binary=True, passed=True, name="hsls")
    _, out_b = tw._build(tmp_path, binary=True, passed=True, name="star", dataset=star)
    a, b = ((o / "paper.tex").read_text() for o in (out_a, out_b))
    assert "test set of the HSLS:09 data was not used" in a and "test set of the STAR data was not used" in b
    assert "{study_" not in a + b


def test_a_school_context_lead_lifts_its_discussion_block(tmp_path):
    res = tw.results(True)
    res["multilevel"] = _multilevel(False)
    _, out = tw._build(tmp_path, binary=True, passed=True, name="ml", results=res)
    paras = slot_content((out / "paper.tex").read_text(), "DISCUSSION").split("\n\n")
    school = [i for i, p in enumerate(paras) if "\\MLSchool" in p]  # the school-level block quotes its macros
    review = [i for i, p in enumerate(paras) if "automated review" in p]
    assert school and review and school[0] < review[0]  # not left at the end, after the review
    assert school[0] <= 4
