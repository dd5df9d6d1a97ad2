"""Baselines, paired comparisons with Holm-adjusted p-values, cluster-bootstrap intervals, model selection by paired
differences, and the consistency check that holds every comparative sentence to a paired comparison
(edm_ars.analysis.evaluation, edm_ars.analysis.baselines, edm_ars.review.consistency)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from edm_ars.analysis.baselines import CONSTANT, CORE, PRIOR, fit_baselines, predict
from edm_ars.analysis.evaluation import (
    bootstrap_p,
    evaluate_models,
    holm,
    paired_comparisons,
    resample_counts,
    select_best,
)
from edm_ars.review.consistency import check_consistency
from edm_ars.review.evidence import comparison_evidence, evidence_for

BINARY = "binary_classification"


def _data(n: int = 600, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"prior": rng.normal(size=n), "ses": rng.normal(size=n), "noise": rng.normal(size=n),
                      "sex_1": rng.integers(0, 2, n).astype(float)})
    logit = 1.5 * X["prior"] + 0.5 * X["ses"]
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(float)
    return X, y.to_numpy()


SOURCES = {"prior": "prior", "ses": "ses", "noise": "noise", "sex_1": "sex"}


# ---- baselines -------------------------------------------------------------------------------------------
def test_baselines_are_fitted_marked_and_the_constant_one_has_auc_one_half():
    X, y = _data()
    models, meta = fit_baselines(BINARY, X.iloc[:400], y[:400], SOURCES, prior=["prior"], k=2)
    assert set(models) == {CONSTANT, PRIOR, CORE}
    assert meta[CONSTANT]["kind"] == "constant" and meta[CONSTANT]["value"] == pytest.approx(y[:400].mean())
    assert meta[PRIOR]["predictors"] == ["prior"] and meta[PRIOR]["chosen_by"] == "registry"
    assert meta[CORE]["predictors"] == ["prior", "ses"]  # the two strongest training associations
    preds = {n: predict(m, BINARY, X.iloc[400:]) for n, m in models.items()}
    scored, _ = evaluate_models(BINARY, y[400:], preds, n_resamples=200, seed=1)
    assert scored[CONSTANT]["metrics"]["auc"] == 0.5
    assert scored[CONSTANT]["ci"]["auc"] == [0.5, 0.5]
    assert scored[PRIOR]["metrics"]["auc"] > 0.7


def test_without_a_declared_prior_measure_the_strongest_training_predictor_is_used():
    X, y = _data()
    _, meta = fit_baselines(BINARY, X, y, SOURCES, prior=["not_in_the_model"])
    assert meta[PRIOR]["predictors"] == ["prior"] and meta[PRIOR]["chosen_by"] == "training_association"
    _, meta = fit_baselines("regression", X, X["prior"].to_numpy() * 2 + X["noise"].to_numpy() * 0.1, SOURCES)
    assert meta[CONSTANT]["label"] == "Training-mean baseline"


def test_the_training_rows_alone_choose_the_baselines_predictors():
    """Planting the association in the test rows only changes nothing: the choice is made on training rows."""
    X, y = _data()
    train = X.iloc[:300].copy()
    _, meta = fit_baselines(BINARY, train, y[:300], SOURCES, k=1)
    assert meta[CORE]["predictors"] == ["prior"]


# ---- paired comparisons and Holm --------------------------------------------------------------------------
def test_holm_matches_a_hand_computation():
    p = [0.01, 0.04, 0.03, 0.20]
    # sorted: 0.01 (x4 = 0.04), 0.03 (x3 = 0.09), 0.04 (x2 = 0.08 -> monotone 0.09), 0.20 (x1 = 0.20)
    assert holm(p) == pytest.approx([0.04, 0.09, 0.09, 0.20])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def test_the_bootstrap_p_value_counts_both_sides():
    assert bootstrap_p(np.full(999, 0.1)) == pytest.approx(2 / 1000)
    assert bootstrap_p(np.r_[np.full(500, -1.0), np.full(500, 1.0)]) == 1.0


def _pair_predictions(n: int = 800, seed: int = 3) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    signal = rng.normal(size=n)
    y = (signal + rng.normal(size=n) > 0).astype(float)
    noise = rng.normal(size=n)
    return y, {"good": signal + 0.5 * noise, "twin": signal + 0.5 * noise + 1e-3 * rng.normal(size=n),
               "weak": signal + 3.0 * noise}


def test_paired_differences_use_the_same_resamples_and_separate_a_planted_pair():
    y, preds = _pair_predictions()
    scored, dist = evaluate_models(BINARY, y, preds, n_resamples=500, seed=7)
    recs = {r["b"]: r for r in paired_comparisons(dist, "good", "auc")}
    assert recs["weak"]["verdict"] == "better" and recs["weak"]["ci"][0] > 0 and recs["weak"]["p_holm"] < 0.05
    assert recs["twin"]["verdict"] == "indistinct" and recs["twin"]["ci"][0] <= 0 <= recs["twin"]["ci"][1]
    # the difference is the difference of the two models' metrics on each resample: same resamples
    assert recs["weak"]["mean"] == pytest.approx(float(np.mean(dist["good"] - dist["weak"])))
    # paired: the near-identical twin's difference interval is far narrower than either model's own interval
    width = scored["good"]["ci"]["auc"][1] - scored["good"]["ci"]["auc"][0]
    assert recs["twin"]["ci"][1] - recs["twin"]["ci"][0] < width / 10
    assert holm([r["p"] for r in recs.values()]) == pytest.approx([r["p_holm"] for r in recs.values()])


def test_the_holm_adjustment_can_turn_an_unadjusted_difference_into_indistinct():
    rng = np.random.default_rng(0)
    # one comparison just inside the 5% level, many others far from it: Holm multiplies its p by the family size
    dist = {"sel": np.zeros(999)}
    dist["close"] = -rng.normal(0.02, 0.01, 999)  # sel - close ~ N(0.02, 0.01): p around 0.05
    for i in range(5):
        dist[f"far{i}"] = rng.normal(0, 0.01, 999)
    recs = {r["b"]: r for r in paired_comparisons(dist, "sel", "auc")}
    assert recs["close"]["p"] < 0.05 <= recs["close"]["p_holm"]
    assert recs["close"]["verdict"] == "indistinct"


def test_selection_ties_come_from_paired_differences_not_overlapping_intervals():
    """Two models whose own intervals overlap but whose paired difference excludes zero are not tied."""
    y, preds = _pair_predictions()
    preds = {"xgboost": preds["good"], "logistic": preds["good"] + 0.7 * np.random.default_rng(1).normal(size=len(y))}
    scored, dist = evaluate_models(BINARY, y, preds, n_resamples=500, seed=7)
    ci_x, ci_l = scored["xgboost"]["ci"]["auc"], scored["logistic"]["ci"]["auc"]
    assert ci_x[0] <= ci_l[1] and ci_l[0] <= ci_x[1]  # the intervals overlap
    best, rule, ev = select_best(scored, "auc", dist)
    assert ev["tie_test"] == "paired" and ev["top_minus"]["logistic"]["ci"][0] > 0
    assert best == "xgboost" and ev["overlapping_top"] == ["xgboost"]
    assert "paired bootstrap difference" in rule
    # with the intervals (no distributions), the simpler logistic regression would have been tied and selected
    assert select_best(scored, "auc")[0] == "logistic"


# ---- cluster bootstrap -------------------------------------------------------------------------------------
def test_the_cluster_bootstrap_is_used_when_clustered_and_widens_intervals_for_shared_errors():
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(40), 25)
    y = rng.normal(size=len(groups))
    pred = y + np.repeat(rng.normal(0, 1.0, 40), 25) + rng.normal(0, 0.2, len(groups))  # errors shared per school
    counts, how = resample_counts(len(y), 400, 11, groups, clustered=True)
    assert how == {"interval_method": "cluster_bootstrap", "test_clusters": 40}
    clustered, _ = evaluate_models("regression", y, {"m": pred}, n_resamples=400, seed=11, counts=counts)
    rows, how_rows = resample_counts(len(y), 400, 11, groups, clustered=False)
    assert how_rows["interval_method"] == "bootstrap"
    plain, _ = evaluate_models("regression", y, {"m": pred}, n_resamples=400, seed=11, counts=rows)

    def width(r: dict) -> float:
        return r["m"]["ci"]["rmse"][1] - r["m"]["ci"]["rmse"][0]

    assert width(clustered) > 2 * width(plain)


# ---- the consistency check ---------------------------------------------------------------------------------
def _results() -> dict:
    models = {"logistic": {"label": "Logistic regression", "metrics": {"auc": 0.80}, "ci": {"auc": [0.77, 0.83]}},
              "xgboost": {"label": "XGBoost", "metrics": {"auc": 0.81}, "ci": {"auc": [0.78, 0.84]}},
              "random_forest": {"label": "Random forest", "metrics": {"auc": 0.70}, "ci": {"auc": [0.66, 0.74]}}}
    baselines = {"baseline_prior": {"label": "Prior-achievement baseline", "kind": "one_predictor",
                                    "predictors": ["X1TXMTSCOR"], "metrics": {"auc": 0.70}, "ci": {"auc": [0.66, 0.74]}}}
    pairs = [{"a": "logistic", "b": "xgboost", "metric": "auc", "mean": -0.01, "ci": [-0.02, 0.005], "p": 0.2,
              "p_holm": 0.2, "family": "selected", "verdict": "indistinct"},
             {"a": "logistic", "b": "random_forest", "metric": "auc", "mean": 0.10, "ci": [0.002, 0.2], "p": 0.03,
              "p_holm": 0.06, "family": "selected", "verdict": "indistinct"},
             {"a": "logistic", "b": "baseline_prior", "metric": "auc", "mean": 0.10, "ci": [0.07, 0.13], "p": 0.001,
              "p_holm": 0.003, "family": "selected", "verdict": "better"}]
    return {"task": BINARY, "primary_metric": "auc", "best_model": "logistic", "models": models,
            "baselines": baselines, "paired_comparisons": pairs, "comparison_alpha": 0.05,
            "selection_evidence": {"top_single": "xgboost", "overlapping_top": ["logistic", "xgboost"]}}


def _paper(text: str) -> str:
    return ("\\documentclass{acmart}\n\\begin{document}\n\\section{Results}\\label{sec:results}\n"
            f"{text}\n\\end{{document}}\n")


def _findings(text: str) -> list[str]:
    return [str(f) for f in check_consistency(_paper(text), _results()).findings]


def test_a_comparison_with_a_baseline_rests_on_its_paired_comparison():
    ev = comparison_evidence(_results())
    assert evidence_for(ev, "logistic", "baseline_prior").verdict == "better"
    ok = ("The selected model, logistic regression, was clearly better than the strongest baseline, "
          "prior-achievement baseline: the paired difference in AUC was N.")
    assert _findings(ok) == []


def test_a_comparative_sentence_without_a_paired_comparison_fails():
    # XGBoost and random forest have disjoint intervals, but no paired comparison: the claim has no evidence
    found = _findings("XGBoost predicts better than random forest.")
    assert found and "no comparison of xgboost and random_forest" in found[0]


def test_better_fails_when_the_holm_adjusted_comparison_does_not_distinguish():
    # unadjusted interval above zero, Holm-adjusted p 0.06: "better" contradicts the paired comparison
    found = _findings("Logistic regression was clearly better than random forest.")
    assert found and "not distinguishable" in found[0] and "Holm-adjusted p 0.0600" in found[0]
    assert _findings("Logistic regression could not be distinguished from random forest.") == []


# ---- the Writer ----------------------------------------------------------------------------------------------
def _with_comparisons(res: dict) -> dict:
    """The writer fixture's results with baselines, cluster-bootstrap resampling and the selected model's paired
    comparisons computed from bootstrap distributions planted around each model's metric (the tied models of
    the fixture stay indistinguishable from the top one; every baseline is clearly worse)."""
    import copy

    res = copy.deepcopy(res)
    primary = res["primary_metric"]
    rng = np.random.default_rng(0)
    common = rng.normal(0, 0.008, 1000)
    dist = {m: v["metrics"][primary] + common + rng.normal(0, 0.01, 1000) for m, v in res["models"].items()}
    binary = res["task"] == BINARY
    centres = {CONSTANT: 0.5 if binary else -0.001, PRIOR: 0.68 if binary else 0.30, CORE: 0.80 if binary else 0.45}
    labels = {CONSTANT: "Base-rate baseline" if binary else "Training-mean baseline",
              PRIOR: "Prior-achievement baseline", CORE: "Core logistic baseline" if binary else "Core linear baseline"}
    kinds = {CONSTANT: "constant", PRIOR: "one_predictor", CORE: "core_linear"}
    preds = {CONSTANT: [], PRIOR: ["X1TXMTSCOR"], CORE: ["X1TXMTSCOR", "X1SES"]}
    res["baselines"] = {}
    for b, c in centres.items():
        dist[b] = np.full(1000, c) if b == CONSTANT else c + common + rng.normal(0, 0.01, 1000)
        ci = [float(np.percentile(dist[b], 2.5)), float(np.percentile(dist[b], 97.5))]
        res["baselines"][b] = {"label": labels[b], "kind": kinds[b], "predictors": preds[b],
                               "chosen_by": "registry" if b == PRIOR else "training_association",
                               "metrics": {primary: c}, "ci": {primary: ci}}
    res["paired_comparisons"] = paired_comparisons(dist, res["best_model"], primary)
    res |= {"interval_method": "cluster_bootstrap", "test_clusters": 189, "comparison_alpha": 0.05}
    res["selection_evidence"]["tie_test"] = "paired"
    return res


@pytest.mark.parametrize("regression", [False, True])
def test_the_writer_reports_baselines_and_paired_comparisons_and_verify_paper_reconciles_them(tmp_path, regression):
    import test_writer

    from edm_ars.review.consistency import check_paper
    from edm_ars.writer.paper import slot_content
    from edm_ars.writer.verify import verify_paper

    arts = test_writer.real_artifacts()
    if regression:
        arts = test_writer.regression_variant(arts)
    arts["results"] = _with_comparisons(arts["results"])
    _, out = test_writer.build_fixture_paper(tmp_path, arts)
    tex = (out / "paper.tex").read_text()
    results_tex, methods = slot_content(tex, "RESULTS"), slot_content(tex, "METHODS")
    assert "\\emph{Baselines}" in results_tex and "\\label{tab:paired}" in results_tex
    assert "was clearly better than the strongest baseline, the core" in results_tex
    assert "Holm procedure" in methods and "\\TestClusters{}" in methods and "Three baselines" in methods
    by_name = test_writer._artifacts_by_name(arts)
    report = check_paper(out / "paper.tex", by_name)
    assert report.ok, "\n".join(report.failures())
    assert verify_paper(out / "paper.tex", artifacts=by_name).ok
    # the comparison with the strongest baseline, said the other way round, fails the check
    (out / "paper.tex").write_text(tex.replace("was clearly better than the strongest baseline",
                                               "could not be distinguished from the strongest baseline"))
    bad = check_paper(out / "paper.tex", by_name)
    assert any("not distinguishable from" in f and CORE in f for f in bad.failures()), bad.failures()
