"""Structured revision actions: the Critic proposes them, each stage applies its own, and they accumulate
over rounds."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_critic import ScriptedCritic, good, model_answer, prompts  # noqa: F401  (fixtures; reg: conftest)

from edm_ars.data.impute import fit_imputer
from edm_ars.data.protocol import Protocol
from edm_ars.formulate.spec import offline_spec, validate_spec
from edm_ars.review import actions
from edm_ars.review.critic import review
from edm_ars.review.model_critic import review_with_model

ROOT = Path(__file__).resolve().parents[2]


def reviewed(*acts):
    return {"revision_actions": list(acts)}


def test_validation_names_what_is_wrong(reg):  # noqa: F811
    spec = offline_spec(reg, prompt=None, question_id="college_attendance", round_=0)
    ok, why = actions.validate({"action": "drop_predictor", "value": "X1SES", "reason": "proxy"}, reg=reg, spec=spec)
    assert why is None and ok["stage"] == "formulate"
    for raw, expected in [({"action": "rewrite_everything"}, "must be one of"),
                          ({"action": "drop_predictor", "value": "X9NOPE"}, "not a variable of the registry"),
                          ({"action": "drop_predictor", "value": "X1SEX"}, "not a predictor of the specification"),
                          ({"action": "change_imputation", "value": "mice"}, "by_missingness, simple, iterative"),
                          ({"action": "add_model", "value": "svm"}, "must be one of")]:
        assert actions.validate(raw, reg=reg, spec=spec)[0] is None
        assert expected in actions.validate(raw, reg=reg, spec=spec)[1]


def test_actions_accumulate_over_rounds():
    r0 = reviewed(actions.action("change_imputation", "simple"), actions.action("add_model", "mlp"))
    r1 = reviewed(actions.action("change_imputation", "iterative"), actions.action("add_model", "mlp"))
    assert actions.imputation([r0], "by_missingness") == "simple"
    assert actions.imputation([r0, r1], "by_missingness") == "iterative"  # the latest request wins
    assert actions.imputation([], "by_missingness") == "by_missingness"
    assert actions.added_models([r0, r1], ["logistic", "xgboost", "stacking"]) == \
        ["logistic", "xgboost", "mlp", "stacking"]  # once, before stacking (which is built from it)
    assert [a["action"] for a in actions.of_stage([r0, r1], "analyze")] == ["add_model"]


def test_spec_actions_are_applied_and_gated(reg):  # noqa: F811
    spec = offline_spec(reg, prompt=None, question_id="college_attendance", round_=1)
    requested = [actions.action("drop_predictor", "X1SES", reason="suspected proxy"),
                 actions.action("add_predictor", "X4EVRAPPCLG", reason="same wave as the outcome"),
                 actions.action("tighten_question")]
    out = actions.apply_to_spec(spec, requested, reg)
    names = {p["name"] for p in out["predictors"]}
    assert "X1SES" not in names and "X4EVRAPPCLG" not in names  # the same-wave variable is refused
    assert out["research_question"] != spec["research_question"]
    assert out["research_question"].startswith("Among ") and "X4EVRATNDCLG" in out["research_question"]
    applied = " | ".join(out["revision_actions_applied"])
    assert "dropped predictor X1SES" in applied and "add_predictor X4EVRAPPCLG: refused" in applied
    assert validate_spec(out, reg) == []
    assert {p["name"] for p in spec["predictors"]} >= {"X1SES"}  # the input is not modified


def test_critic_derives_actions_from_failed_checks(good, reg):  # noqa: F811
    few = copy.deepcopy(good)
    few["results"]["models"] = {m: r for m, r in few["results"]["models"].items() if m in ("logistic", "xgboost")}
    rv = review(few["spec"], few["report"], few["results"], reg, round_=0, max_revisions=2, min_models=4)
    count = next(i for i in rv["issues"] if i["id"] == "an_model_count")
    assert [(a["action"], a["value"]) for a in count["actions"]] == [("add_model", "elastic_net"),
                                                                    ("add_model", "random_forest")]
    assert rv["verdict"] == "PASS" and rv["revision_actions"] == []  # one major issue: no revision round
    rv = review(few["spec"], few["report"], few["results"], reg, round_=0, max_revisions=2, min_models=4,
                force_revise="analyze")
    assert rv["verdict"] == "REVISE" and rv["rerun_from"] == "analyze"
    assert [a["value"] for a in rv["revision_actions"]] == ["elastic_net", "random_forest"]  # no repeats
    leaky = copy.deepcopy(good)
    leaky["results"]["models"]["logistic"]["metrics"]["auc"] = 0.97
    rv = review(leaky["spec"], leaky["report"], leaky["results"], reg, round_=0, max_revisions=2)
    drop = [a for a in rv["revision_actions"] if a["action"] == "drop_predictor"]
    assert drop and drop[0]["value"] == "X1SES" and rv["rerun_from"] == "formulate"


@pytest.mark.parametrize("stage, expected", [("formulate", ("tighten_question", None)),
                                             ("engineer", ("change_imputation", "simple")),
                                             ("analyze", ("add_model", "mlp"))])
def test_a_forced_revision_changes_something_stated(good, reg, stage, expected):  # noqa: F811
    rv = review(good["spec"], good["report"], good["results"], reg, round_=0, max_revisions=2,
                force_revise=stage)
    assert [(a["action"], a["value"]) for a in rv["revision_actions"]] == [expected]
    assert rv["rerun_from"] == stage and rv["revision_actions"][0]["issue"] == "forced_revision"


def test_model_actions_are_validated(good, reg, prompts):  # noqa: F811
    code = review(good["spec"], good["report"], good["results"], reg, round_=0, max_revisions=2)
    answer = model_answer("REVISE", 8.0, issues=[{"id": f"an_more_{k}", "severity": "major", "category": "analysis",
                                                  "description": "only tree and linear models",
                                                  "recommendation": "add a neural network",
                                                  "target_stage": "analyze"} for k in range(3)])
    answer["revision_actions"] = [{"action": "add_model", "value": "mlp", "reason": "a nonlinear learner"},
                                  {"action": "add_model", "value": "svm", "reason": "?"}]
    out = review_with_model(ScriptedCritic(answer), prompts, good["spec"], good["report"], good["results"], None,
                            code, max_revisions=2, reg=reg)
    assert [(a["action"], a["value"], a["source"]) for a in out["revision_actions"]] == [("add_model", "mlp", "model")]
    assert any("svm" in n and "not kept" in n for n in out["notes"])


def test_model_actions_that_together_would_leave_an_invalid_specification_are_not_kept(good, reg, prompts):  # noqa: F811
    spec = copy.deepcopy(good["spec"])
    spec["predictors"] = spec["predictors"][:4]
    names = [p["name"] for p in spec["predictors"]]
    assert validate_spec(spec, reg) == []
    code = review(spec, good["report"], good["results"], reg, round_=0, max_revisions=2)
    answer = model_answer("REVISE", 8.0, issues=[{"id": "sv_proxy", "severity": "critical", "category": "analysis",
                                                  "description": "two proxies", "recommendation": "drop them",
                                                  "target_stage": "formulate"}])
    answer["revision_actions"] = [{"action": "drop_predictor", "value": names[0], "reason": "proxy"},
                                  {"action": "drop_predictor", "value": names[1], "reason": "proxy"}]
    out = review_with_model(ScriptedCritic(answer), prompts, spec, good["report"], good["results"], None,
                            code, max_revisions=2, reg=reg)
    assert [a["value"] for a in out["revision_actions"]] == [names[0]]  # the first alone leaves 3: kept
    assert any(names[1] in n and "would leave an invalid specification" in n and "2 predictors" in n
               for n in out["notes"])
    assert validate_spec(actions.apply_to_spec(spec, out["revision_actions"], reg), reg) == []


def test_imputation_strategies():
    rng = np.random.default_rng(0)
    train = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200), "c": rng.choice(["x", "y"], 200)})
    train.loc[:59, "a"] = np.nan  # 30% missing
    train.loc[:5, "b"] = np.nan  # 3% missing
    train.loc[:59, "c"] = np.nan
    kinds = {"a": "continuous", "b": "continuous", "c": "categorical"}
    by = {s: fit_imputer(train, kinds, Protocol(imputation=s))[0].methods for s in actions.IMPUTATIONS}
    assert by["by_missingness"]["a"].startswith("iterative") and by["by_missingness"]["b"] == "median"
    assert by["simple"]["a"].startswith("median") and by["simple"]["c"].startswith("mode")
    assert by["iterative"]["b"] == "iterative_imputer" and by["iterative"]["c"].startswith("missing_category")
