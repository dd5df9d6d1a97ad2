"""The large-data policy (edm_ars.analysis.large_data): the tuning subsample of schools (deterministic in the seed,
stratified, of the size asked for, whole schools), tuning there and refitting on all training rows, out-of-fold
predictions for every training row, the random forest's rows per tree, and the paper's statement of it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from edm_ars.analysis import large_data, models
from edm_ars.core.conventions import BINARY, REGRESSION
from edm_ars.core.errors import EdmArsError


def schools(n_schools=300, seed=0, binary=True):
    """Training rows of n_schools schools of 5 to 60 students whose outcome rate differs by school."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 61, n_schools)
    groups = np.repeat(np.arange(1000, 1000 + n_schools), sizes)
    rate = np.repeat(rng.uniform(0.1, 0.9, n_schools), sizes)
    x1 = rng.normal(size=len(groups))
    x2 = rng.normal(size=len(groups))
    if binary:
        y = (rng.uniform(size=len(groups)) < np.clip(rate + 0.1 * x1, 0, 1)).astype(float)
    else:
        y = 10 * rate + x1 + rng.normal(size=len(groups))
    X = pd.DataFrame({"x1": x1, "x2": x2, "x3": x1 * x2})
    return X, y, groups


# ---- the subsample -------------------------------------------------------------------------------------------


def test_the_same_seed_draws_the_same_schools_and_another_seed_others():
    _, y, groups = schools()
    a, fa = large_data.tuning_subsample(y, groups, target_rows=3000, n_strata=5, seed=42)
    b, fb = large_data.tuning_subsample(y, groups, target_rows=3000, n_strata=5, seed=42)
    c, _ = large_data.tuning_subsample(y, groups, target_rows=3000, n_strata=5, seed=43)
    assert np.array_equal(a, b) and fa == fb
    assert set(groups[a]) != set(groups[c])


def test_the_subsample_is_whole_schools_of_the_size_asked_for():
    _, y, groups = schools()
    target = 3000
    mask, facts = large_data.tuning_subsample(y, groups, target_rows=target, n_strata=5, seed=7)
    per_school = pd.Series(mask).groupby(groups).agg(["all", "any"])
    assert (per_school["all"] == per_school["any"]).all()  # a school is wholly in or wholly out
    assert facts["tune_rows"] == mask.sum() and facts["tune_clusters"] == len(set(groups[mask]))
    largest = pd.Series(groups).value_counts().max()
    # each stratum stops at the first school that reaches its share: over by less than one school per stratum
    assert target <= mask.sum() < target + facts["strata"] * largest
    assert facts["train_rows"] == len(y) and facts["train_clusters"] == len(set(groups))


def test_every_stratum_of_the_outcome_rate_gives_its_share():
    _, y, groups = schools(n_schools=500)
    target = 4000
    mask, facts = large_data.tuning_subsample(y, groups, target_rows=target, n_strata=5, seed=1)
    strata = large_data.cluster_strata(y, groups, 5)
    assert facts["strata"] == 5 and strata["stratum"].nunique() == 5
    # the bands are ordered by the school's outcome rate
    bands = strata.groupby("stratum")["mean"].agg(["min", "max"])
    assert (bands["max"].to_numpy()[:-1] <= bands["min"].to_numpy()[1:]).all()
    largest = pd.Series(groups).value_counts().max()
    picked = set(groups[mask])
    for rec in facts["by_stratum"]:
        members = strata.index[strata["stratum"] == rec["stratum"]]
        drawn = strata.loc[[s for s in members if s in picked], "rows"].sum()
        share = target * rec["rows"] / len(y)
        assert drawn == rec["tune_rows"] and share <= drawn < share + largest
        assert 0 < rec["tune_clusters"] < rec["clusters"]
    # a subsample at random, not the first schools of each band: the rates in it span every band
    assert strata.loc[sorted(picked), "stratum"].nunique() == 5


def test_students_without_schools_are_drawn_within_outcome_strata():
    """An unclustered study: every student is their own group; a binary outcome's ties make two strata."""
    rng = np.random.default_rng(3)
    y = (rng.uniform(size=5000) < 0.3).astype(float)
    groups = np.arange(5000)
    mask, facts = large_data.tuning_subsample(y, groups, target_rows=1000, n_strata=5, seed=42)
    assert facts["strata"] == 2 and 1000 <= mask.sum() <= 1002  # each stratum rounds its share up
    assert abs(y[mask].mean() - y.mean()) < 0.002  # stratified by the outcome: its rate kept


def test_the_policy_applies_above_the_threshold_only_and_sizes_the_subsample_like_the_threshold():
    policy = large_data.policy_of({"rows": 200_000})
    assert not large_data.applies(policy, 200_000) and large_data.applies(policy, 200_001)
    assert not large_data.applies(policy, None)
    # null tune_rows: the training rows a data set at the threshold would give (80% in training here)
    assert large_data.tuning_target(policy, 1_000_000, 800_000) == 160_000
    assert large_data.tuning_target(large_data.policy_of({"rows": 10, "tune_rows": 5000}), 100, 80) == 5000
    # a tree draws what a tree drew in tuning: half of a fold's training rows (4/5 of the subsample at 5 folds)
    assert large_data.forest_max_samples(policy, 160_000, 5) == (64_000, "tuning")
    assert large_data.forest_max_samples(large_data.policy_of({"rows": 1, "rf_max_samples": 9}), 100, 5) == \
        (9, "config")


@pytest.mark.parametrize("bad", [{"rows": 0}, {"rows": 10, "tune_rows": 0}, {"rows": 10, "rf_max_samples": 2.5},
                                 {"rows": 10, "strata": 0}])
def test_a_bad_setting_is_named(bad):
    with pytest.raises(EdmArsError, match="analysis.large_data"):
        large_data.policy_of(bad)


# ---- tuning on the subsample, refitting on all rows ----------------------------------------------------------


@pytest.fixture(scope="module")
def data():
    return schools(n_schools=240, seed=5)


def test_below_the_threshold_tuning_is_unchanged(data):
    X, y, groups = data
    policy = large_data.policy_of({"rows": len(y)})
    got = large_data.tune("logistic", BINARY, X, y, groups, seed=42, n_folds=3, policy=policy, data_rows=len(y))
    ref = models.tune("logistic", BINARY, X, y, groups, seed=42, n_folds=3)
    assert "large_data" not in got and got["best_params"] == ref["best_params"]
    assert np.allclose(got["oof"], ref["oof"]) and np.allclose(got["model"][-1].coef_, ref["model"][-1].coef_)


def test_above_it_tuned_on_the_subsample_and_refitted_on_all_training_rows(data):
    X, y, groups = data
    policy = large_data.policy_of({"rows": 1000, "tune_rows": 2000})
    got = large_data.tune("logistic", BINARY, X, y, groups, seed=42, n_folds=3, policy=policy, data_rows=len(y))
    facts = got["large_data"]
    mask, drawn = large_data.tuning_subsample(y, groups, target_rows=2000, n_strata=5, seed=42)
    assert facts["subsampled"] and facts["tune_rows"] == drawn["tune_rows"] == mask.sum() < len(y)
    assert facts["refit_rows"] == len(y) and facts["threshold_rows"] == 1000 and facts["data_rows"] == len(y)
    # the search ran on the subsample: its result is that of models.tune on the subsample's rows
    sub = models.tune("logistic", BINARY, X[mask], y[mask], groups[mask], seed=42, n_folds=3)
    assert got["best_params"] == sub["best_params"] and got["cv_score"] == sub["cv_score"]
    # the model is the chosen configuration refitted on every training row
    full = models.fit("logistic", BINARY, 42, got["best_params"], X, y)
    assert np.allclose(got["model"][-1].coef_, full[-1].coef_)
    assert not np.allclose(got["model"][-1].coef_, sub["model"][-1].coef_)
    # every training row has a held-out prediction: the tuning folds' in the subsample, the subsample fit's outside
    oof = got["oof"]
    assert np.isfinite(oof).all()
    assert np.allclose(oof[mask], sub["oof"])
    assert np.allclose(oof[~mask], models.predict(sub["model"], BINARY, X[~mask]))
    assert facts["oof_from_subsample_fit"] == (~mask).sum()


@pytest.mark.slow
def test_the_random_forest_draws_a_fixed_number_of_rows_per_tree_above_the_threshold(data):
    X, y, groups = data
    policy = large_data.policy_of({"rows": 1000, "tune_rows": 2000})
    got = large_data.tune("random_forest", BINARY, X, y, groups, seed=42, n_folds=3, policy=policy,
                          data_rows=len(y))
    k = got["large_data"]["forest_max_samples"]
    assert k == int(0.5 * got["large_data"]["tune_rows"] * 2 / 3)
    assert got["best_params"]["max_samples"] == got["model"].max_samples == k
    assert got["model"].n_features_in_ == X.shape[1] and got["large_data"]["forest_max_samples_from"] == "tuning"
    # refitted later on fewer rows than that (a stability resample): each tree draws all of them, no error
    small = models.fit("random_forest", BINARY, 42, got["best_params"], X.iloc[:100], y[:100])
    assert small.max_samples is None


def test_a_regression_outcome_is_stratified_by_the_school_mean(data):
    X, y, groups = schools(n_schools=200, seed=8, binary=False)
    policy = large_data.policy_of({"rows": 1000, "tune_rows": 1500})
    got = large_data.tune("logistic", REGRESSION, X, y, groups, seed=1, n_folds=3, policy=policy, data_rows=9000)
    assert got["large_data"]["outcome_by"] == "mean" and np.isfinite(got["oof"]).all()


def test_training_rows_no_more_than_the_subsample_are_all_used(data):
    X, y, groups = data
    policy = large_data.policy_of({"rows": 1000, "tune_rows": 10 * len(y)})
    got = large_data.tune("logistic", BINARY, X, y, groups, seed=42, n_folds=3, policy=policy, data_rows=len(y))
    assert not got["large_data"]["subsampled"] and got["large_data"]["tune_rows"] == len(y)
    ref = models.tune("logistic", BINARY, X, y, groups, seed=42, n_folds=3)
    assert np.allclose(got["oof"], ref["oof"])


# ---- the paper -----------------------------------------------------------------------------------------------


def _facts(name: str) -> dict:
    facts = {"threshold_rows": 200000, "data_rows": 1000000, "seed": 42, "outcome_by": "rate",
             "target_tune_rows": 160000, "tune_rows": 160214, "tune_clusters": 6403, "train_rows": 801234,
             "train_clusters": 32000, "strata": 5, "strata_requested": 5, "by_stratum": [], "subsampled": True,
             "refit_rows": 801234, "oof_from_subsample_fit": 641020}
    if name == "random_forest":
        facts |= {"forest_max_samples": 64085, "forest_max_samples_from": "tuning"}
    return facts


def _paper(tmp_path, results):
    from test_splits import _report
    from test_writer import _artifacts_by_name, _build, literature, review, slot_content, spec

    from edm_ars.writer.verify import verify_paper

    _, out = _build(tmp_path, binary=True, passed=True, name="large", results=results, data_report=_report(True))
    arts = _artifacts_by_name({"spec": spec(True), "literature": literature(), "data_report": _report(True),
                               "results": results, "review": review(True)})
    tex = (out / "paper.tex").read_text()
    return " ".join(slot_content(tex, "METHODS").split()), tex, verify_paper(out / "paper.tex", artifacts=arts)


def test_the_methods_state_the_policy_from_the_artifacts_and_verify_paper_reconciles_it(tmp_path):
    from test_writer import results

    res = results(True)
    for name, rec in res["models"].items():
        if name != "stacking":
            rec["large_data"] = _facts(name)
    methods, tex, report = _paper(tmp_path, res)
    assert report.ok and report.counts["unmatched"] == 0, report.failures + report.warnings
    assert (r"Because the data held \LargeDataRows{} students, more than the large-data threshold of "
            r"\LargeDataThreshold{}, the hyperparameters were tuned on a subsample of \LargeDataTuneClusters{} of the "
            r"\LargeDataTrainClusters{} training schools (\LargeDataTuneRows{} of the \LargeDataTrainRows{} training "
            r"students)") in methods
    assert r"within \LargeDataStrata{} strata formed by ranking the schools by their outcome rate" in methods
    assert r"refitted on all \LargeDataTrainRows{} training students" in methods
    assert r"for the other \LargeDataOutsideRows{} training students" in methods  # stacking's inputs
    assert r"Each tree of the refitted random forest drew \LargeDataForestRows{} training students" in methods
    # a record without target_from (and one from the threshold rule): the threshold's reason
    assert "so that tuning cost about what it costs at the threshold" in methods
    numbers = (tmp_path / "large" / "numbers.tex").read_text()
    assert r"\newcommand{\LargeDataRows}{1{,}000{,}000} % results.json:models.logistic.large_data.data_rows" in numbers
    assert r"\newcommand{\LargeDataForestRows}{64{,}085} % results.json:models.random_forest" in numbers


def test_a_configured_subsample_size_is_given_as_the_reason(tmp_path):
    """tune_rows set (the default 50,000): the Methods say the size was set in advance, with that size as a macro,
    and do not claim that tuning cost what it costs at the threshold."""
    from test_writer import results

    res = results(True)
    for name, rec in res["models"].items():
        if name != "stacking":
            rec["large_data"] = _facts(name) | {"target_from": "config", "target_tune_rows": 50000}
    methods, _, report = _paper(tmp_path, res)
    assert report.ok and report.counts["unmatched"] == 0, report.failures + report.warnings
    assert (r"not on all of them, so that the cost of tuning does not grow with the data (the subsample's size is "
            r"set in advance at about \LargeDataTargetRows{} training students)") in methods
    assert "what it costs at the threshold" not in methods


def test_nothing_is_said_when_the_policy_did_not_apply(tmp_path):
    from test_writer import results

    methods, tex, report = _paper(tmp_path, results(True))
    assert report.ok
    assert "large-data" not in tex and "LargeData" not in tex and "subsample of" not in methods


# ---- the workflow ----------------------------------------------------------------------------------------------


@pytest.mark.workflow
def test_a_study_above_a_low_threshold_is_tuned_on_a_subsample_and_its_paper_says_so(tmp_path):
    """The small configuration (3,000 generated students) with the threshold at 2,000 rows: every family is tuned on
    the same subsample of schools and refitted on all training rows, stacking gets a prediction of every training
    row, the Methods state the policy and verify-paper reconciles it."""
    import json
    import os
    import subprocess
    import sys

    from workflow import ROOT, snakemake

    # the analysis keys of workflow.LEAN merged in (one YAML mapping holds one `analysis:` key)
    done = snakemake(tmp_path, "output/paper/paper.tex", overrides=(
        "analysis:\n  models: [logistic, random_forest, xgboost, stacking]\n  large_data:\n    rows: 2000\n"
        "    tune_rows: null\n  n_bootstrap: 100\n  repeated_splits: 1\n"
        "  stability: {imputation: [], bootstrap: 0, seeds: 0}\ncodegen:\n  n: 1\n"))
    assert done.returncode == 0, done.stderr[-5000:]
    models_dir = tmp_path / "output" / "branch_1" / "round_0" / "models"
    facts = {m: json.loads((models_dir / f"{m}.json").read_text())["large_data"]
             for m in ("logistic", "random_forest", "xgboost")}
    drawn = {(f["tune_rows"], f["tune_clusters"]) for f in facts.values()}
    assert len(drawn) == 1  # one subsample for every family
    rec = facts["logistic"]
    assert rec["data_rows"] == 3000 and rec["threshold_rows"] == 2000 and rec["subsampled"]
    assert rec["tune_rows"] < rec["train_rows"] == rec["refit_rows"]
    train_y = pd.read_parquet(tmp_path / "output" / "branch_1" / "round_0" / "data" / "train_y.parquet")
    assert rec["train_rows"] == len(train_y)
    for m in facts:
        oof = pd.read_parquet(models_dir / f"{m}.oof.parquet")["oof"]
        assert len(oof) == len(train_y) and oof.notna().all()
    assert "forest_max_samples" in facts["random_forest"]
    results = json.loads((tmp_path / "output" / "branch_1" / "round_0" / "results.json").read_text())
    assert results["models"]["random_forest"]["large_data"] == facts["random_forest"]
    tex = (tmp_path / "output" / "paper" / "paper.tex").read_text()
    assert r"more than the large-data threshold of \LargeDataThreshold{}" in tex
    assert r"Each tree of the refitted random forest drew \LargeDataForestRows{}" in tex
    check = subprocess.run([sys.executable, "-m", "edm_ars.cli", "verify-paper", "output/paper/paper.tex"],
                           cwd=tmp_path, capture_output=True, text=True,
                           env=os.environ | {"PYTHONPATH": str(ROOT / "scripts")})
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]
