"""Leakage for both tasks: a feature column near-identical to the outcome in the training rows fails the
DataEngineer's data check no_outcome_proxy (naming the column and r), a held-out R2 above the recorded ceiling flags
possible leakage, the Critic cannot PASS either, and the paper states why."""

import copy

import numpy as np
import pandas as pd
import pytest
import test_writer as tw
from test_adapters import small_frame, small_registry, write_registry
from test_critic import good  # noqa: F401  (fixture: artifacts that pass every code check; reg: conftest)

from edm_ars.analysis.evaluation import flags_for, thresholds_for
from edm_ars.data.checks import outcome_proxies
from edm_ars.data.engineer import prepare
from edm_ars.data.protocol import Protocol
from edm_ars.formulate.spec import offline_spec
from edm_ars.review.checks import CHECKS
from edm_ars.review.critic import review
from edm_ars.writer.verify import verify_paper

# ---- the DataEngineer's data check ------------------------------------------------------------------


def test_a_near_copy_of_a_continuous_outcome_fails_the_data_check_naming_it_and_r(tmp_path):
    """A centred copy of the outcome planted as a predictor (Chem97's gcsecnt is gcsescore minus its mean): the
    data check no_outcome_proxy fails on the training rows, naming the column and r; without it the check passes."""
    frame = small_frame()
    rng = np.random.default_rng(1)
    frame["centred_final"] = (frame["final_score"] - frame["final_score"].mean()
                              + rng.normal(0, 0.5, len(frame))).round(3)
    doc = small_registry()
    doc["variables"].append({"name": "centred_final", "role": "predictor", "type": "continuous", "wave": "fall"})
    doc["questions"][0]["predictors"]["centred_final"] = "a planted copy of the outcome"
    registry = write_registry(tmp_path, doc)
    spec = offline_spec(registry, prompt=None, question_id=None, round_=0)
    assert "centred_final" in [p["name"] for p in spec["predictors"]]
    report = prepare(frame, spec, registry, None, Protocol(seed=3, min_analytic_n=100)).report
    check = next(c for c in report["checks"] if c["name"] == "no_outcome_proxy")
    assert check["passed"] is False and not report["validation_passed"]
    assert check["detail"]["threshold"] == 0.98 == report["thresholds"]["leakage_corr"]
    [proxy] = check["detail"]["proxies"]
    assert proxy["column"] == "centred_final" and 0.99 < proxy["r"] < 0.9995
    # the other predictors (prior_score r ~ 0.85 with the outcome) are not proxies; a laxer threshold is recorded
    lax = prepare(frame, spec, registry, None, Protocol(seed=3, min_analytic_n=100, leakage_corr=0.9995)).report
    lax_check = next(c for c in lax["checks"] if c["name"] == "no_outcome_proxy")
    assert lax_check["passed"] and lax["thresholds"]["leakage_corr"] == 0.9995
    clean = prepare(small_frame(), offline_spec(write_registry(tmp_path, small_registry(), "clean.yaml"),
                                                prompt=None, question_id=None, round_=0),
                    write_registry(tmp_path, small_registry(), "clean2.yaml"), None,
                    Protocol(seed=3, min_analytic_n=100)).report
    assert next(c for c in clean["checks"] if c["name"] == "no_outcome_proxy")["passed"]


def test_a_predictor_separating_a_binary_outcome_is_a_proxy():
    """For a binary outcome a column that separates the classes perfectly (every value of one class below every
    value of the other) is a proxy even when its correlation is far from 1, e.g. the score a pass/fail outcome was
    derived from; an ordinary predictor is not, and a one-hot copy of the outcome has r = 1."""
    rng = np.random.default_rng(0)
    score = rng.normal(50, 10, 2000)
    y = pd.Series((score > 60).astype(float))
    X = pd.DataFrame({"score": score, "prior": score + rng.normal(0, 15, 2000), "copy": y.to_numpy(),
                      "constant": 1.0})
    found = {p["column"]: p for p in outcome_proxies(X, y, "binary_classification", 0.98)}
    assert set(found) == {"score", "copy"}
    assert found["score"]["separates_classes"] and abs(found["score"]["r"]) < 0.98
    assert found["copy"]["r"] == 1.0
    # regression: only the correlation counts; strongest first
    yr = pd.Series(score)
    hits = outcome_proxies(X.assign(neg=-score + 0.001 * rng.normal(size=2000)), yr, "regression", 0.98)
    assert [h["column"] for h in hits][:2] in (["score", "neg"], ["neg", "score"]) and hits[1]["r"] < -0.99


# ---- the Critic ---------------------------------------------------------------------------------------


def _regression(a: dict, r2: float) -> dict:
    """The passing artifacts recast as a regression study whose models reach held-out R2 `r2`."""
    res = a["results"]
    res.update(task="regression", primary_metric="r2")
    for m in res["models"].values():
        m["metrics"] = {"r2": r2, "rmse": 0.1}
        m["ci"] = {"r2": [r2 - 0.01, min(1.0, r2 + 0.01)]}
    res["thresholds"] = thresholds_for("regression")
    res["flags"] = flags_for("regression", res["models"])
    for f in res["figures"]:
        if f["kind"] in ("roc", "calibration"):
            f["kind"] = {"roc": "observed_predicted", "calibration": "residuals"}[f["kind"]]
    return a


def _verdict(a: dict, registry) -> dict:
    return review(a["spec"], a["report"], a["results"], registry, round_=0, max_revisions=2,
                  claims=a.get("claims"), manifest=a.get("manifest"), dgp=a.get("dgp"))


def test_a_regression_above_the_r2_ceiling_cannot_pass(good, reg):  # noqa: F811
    base = _verdict(_regression(copy.deepcopy(good), 0.60), reg)
    assert base["verdict"] == "PASS", base["issues"]
    high = _regression(copy.deepcopy(good), 0.999)
    assert any(f.startswith("possible_leakage: logistic R2 0.999") for f in high["results"]["flags"])
    found = CHECKS["leakage_auc"](_artifacts(high, reg), {})
    assert found.passed is False and "Held-out R2 above the leakage threshold 0.95" in found.message
    assert found.detail["leakage_r2"] == 0.95 and found.detail["r2_models"]["logistic"] == 0.999
    verdict = _verdict(high, reg)
    assert verdict["verdict"] != "PASS" and "sv_no_leakage_flag" in [i["id"] for i in verdict["issues"]]
    # the recorded ceiling decides: a results.json that records a laxer one passes at the same R2
    lax = _regression(copy.deepcopy(good), 0.999)
    lax["results"]["thresholds"]["leakage_r2"] = 0.9995
    lax["results"]["flags"] = flags_for("regression", lax["results"]["models"], {"leakage_r2": 0.9995})
    assert _verdict(lax, reg)["verdict"] == "PASS"


def _artifacts(a: dict, registry):
    from edm_ars.review.checks import Artifacts

    return Artifacts(spec=a["spec"], report=a["report"], results=a["results"], reg=registry, claims=a.get("claims"),
                     manifest=a.get("manifest"), dgp=a.get("dgp"))


def test_a_failed_proxy_check_caps_the_verdict_and_names_the_predictor(good, reg):  # noqa: F811
    """The data check alone (a modest held-out AUC, as when the proxy is diluted in the test rows) already stops a
    PASS; the issue names the column, its predictor and r, and the revision drops that predictor."""
    a = copy.deepcopy(good)
    suspect = a["spec"]["predictors"][1]["name"]
    a["report"]["checks"].append({"name": "no_outcome_proxy", "passed": False, "detail": {
        "threshold": 0.98, "proxies": [{"column": suspect, "r": 0.9931, "separates_classes": True}]}})
    found = CHECKS["leakage_auc"](_artifacts(a, reg), {})
    assert found.passed is False
    assert f"({suspect} r = 0.993, separating the two classes)" in found.message
    assert "above |r| = 0.98 or separate its two classes" in found.message
    assert found.actions and found.actions[0]["action"] == "drop_predictor" and found.actions[0]["value"] == suspect
    verdict = _verdict(a, reg)
    assert verdict["verdict"] != "PASS"
    ids = [i["id"] for i in verdict["issues"]]
    assert "sv_no_leakage_flag" in ids and "dp_data_checks" not in ids  # one issue, not two
    with_no_round_left = review(a["spec"], a["report"], a["results"], reg, round_=2, max_revisions=2,
                                claims=a.get("claims"), manifest=a.get("manifest"), dgp=a.get("dgp"))
    assert with_no_round_left["verdict"] != "PASS" or with_no_round_left["unverified"]


# ---- the paper --------------------------------------------------------------------------------------


def test_the_paper_states_the_r2_flag_and_the_proxy(tmp_path):
    """A regression paper whose models pass the R2 ceiling and whose data check found a proxy: the Results say
    the R2 was above the recorded threshold, the Limitations name the predictor with its r and the threshold, and
    every number reconciles with the artifacts (verify-paper)."""
    res = tw.results(False)
    res["models"]["elastic_net"]["metrics"]["r2"] = 0.9991
    res["models"]["elastic_net"]["ci"]["r2"] = [0.9987, 0.9994]
    res["selection_evidence"]["overlapping_top"] = ["elastic_net"]  # no other interval overlaps it now
    res["flags"] = ["possible_leakage: elastic_net R2 0.999 > 0.95"] + res["flags"]
    rep = _report(False)
    rep["checks"].append({"name": "no_outcome_proxy", "passed": False,
                          "detail": {"threshold": 0.98, "proxies": [{"column": "X1TXMTSCOR", "r": 0.9934}]}})
    rep["thresholds"] = {"leakage_corr": 0.98}
    _, out = tw._build(tmp_path, binary=False, passed=False, results=res, data_report=rep)
    tex = (out / "paper.tex").read_text()
    numbers = (out / "numbers.tex").read_text()
    assert r"the \Rsq{} of" in tex and "was above" in tex
    assert "% results.json:thresholds.leakage_r2" in numbers
    assert r"(\texttt{X1TXMTSCOR}, $r = \ProxyR{}$)" in tex and "tracked the outcome almost exactly" in tex
    assert r"\newcommand{\ProxyR}{0.993} % data_report.json:checks.3.detail.proxies.0.r" in numbers
    assert "% data_report.json:checks.3.detail.threshold" in numbers
    # the Discussion does not call the estimate a fair guide
    assert "fair guide" not in tex and "this estimate is not a guide to" in tex
    arts = tw._artifacts_by_name({"spec": tw.spec(False), "literature": tw.literature(), "data_report": rep,
                                  "results": res, "review": tw.review(False)})
    report = verify_paper(out / "paper.tex", artifacts=arts)
    assert report.ok, report.summary()


def _report(binary: bool) -> dict:
    """test_writer's data report with the split fields the schema requires since the cluster counts were added."""
    rep = tw.data_report(binary)
    rep["split"].setdefault("clustered", True)
    rep["split"].setdefault("train_clusters", 730)
    rep["split"].setdefault("test_clusters", 182)
    return rep


@pytest.mark.parametrize("binary", [True, False])
def test_no_proxy_no_sentence(tmp_path, binary):
    _, out = tw._build(tmp_path, binary=binary, passed=True, data_report=_report(binary))
    tex = (out / "paper.tex").read_text()
    assert "tracked the outcome almost exactly" not in tex and "this estimate is not a guide" not in tex


def test_a_paper_written_after_the_proxy_was_dropped_says_so(tmp_path, reg):  # noqa: F811
    """The revision applies the Critic's drop_predictor action and records it (research_spec.json
    dropped_on_revision); the paper of the later round says that an earlier round was flagged and what was
    removed, so the clean estimates are not read as the study as first posed."""
    from edm_ars.review import actions as act

    spec = tw.spec(False)
    action = act.action("drop_predictor", "X1TXMTSCOR", reason="feature column correlated with the outcome",
                        issue="sv_no_leakage_flag")
    revised = act.apply_to_spec(spec, [action], reg)
    assert "X1TXMTSCOR" not in [p["name"] for p in revised["predictors"]]
    assert revised["dropped_on_revision"] == [{"name": "X1TXMTSCOR", "label": "X1 Mathematics standardized theta score",
                                               "issue": "sv_no_leakage_flag",
                                               "reason": "feature column correlated with the outcome"}]
    _, out = tw._build(tmp_path, binary=False, passed=True, spec=revised, data_report=_report(False))
    tex = (out / "paper.tex").read_text()
    assert "A review of an earlier round of this study flagged possible leakage" in tex
    assert (r"\emph{mathematics standardized theta score} (\texttt{X1TXMTSCOR}) was removed from the predictors as "
            "a suspected proxy") in tex
    # a predictor dropped for another reason is not called a proxy
    other = act.apply_to_spec(spec, [act.action("drop_predictor", "X1TXMTSCOR", reason="redundant",
                                                issue="pf_parsimony")], reg)
    _, out2 = tw._build(tmp_path, binary=False, passed=True, name="other", spec=other, data_report=_report(False))
    assert "flagged possible leakage" not in (out2 / "paper.tex").read_text()
