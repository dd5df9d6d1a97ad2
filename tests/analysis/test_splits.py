"""Repeated grouped splits (edm_ars.analysis.splits): seeds, grouping, refits and the summary the paper reports."""

import numpy as np
import pytest
from test_engineer import make_raw, spec_for  # noqa: F401  (reg, layout: conftest)

from edm_ars.analysis.splits import extra_splits, refit_models, split_facts, split_seed, spread, summarize
from edm_ars.data.engineer import prepare
from edm_ars.data.protocol import Protocol


def test_split_seeds_are_deterministic_distinct_and_split_zero_is_the_main_one():
    seeds = [split_seed(42, k) for k in range(6)]
    assert seeds[0] == 42 and seeds == [split_seed(42, k) for k in range(6)]
    assert len(set(seeds)) == 6
    assert split_seed(7, 1) != split_seed(42, 1)  # derived from the run's seed
    with pytest.raises(ValueError):
        split_seed(42, -1)


def test_split_jobs_are_the_splits_beyond_the_main_one():
    assert extra_splits(5) == [1, 2, 3, 4]
    assert extra_splits(2) == [1]
    assert extra_splits(1) == [] and extra_splits(0) == []


@pytest.fixture(scope="module")
def prepared(reg, layout):  # noqa: F811
    raw = make_raw(n=2000, n_schools=80, seed=3)
    return {k: prepare(raw, spec_for(), reg, layout, Protocol(seed=split_seed(42, k))) for k in range(3)}


def test_every_split_is_grouped_and_the_splits_differ(prepared):
    tests = []
    for k, prep in prepared.items():
        facts = split_facts(prep.report)
        assert facts["clustered"] and facts["seed"] == split_seed(42, k)
        assert set(prep.train_groups) .isdisjoint(set(prep.test_groups)), f"split {k} has a cluster on both sides"
        assert facts["group_overlap"] == 0 and facts["test_clusters"] == len(set(prep.test_groups))
        assert facts["train_n"] + facts["test_n"] == prep.report["analytic_n"]
        tests.append(frozenset(prep.test_groups))
    assert len(set(tests)) == len(tests), "two splits drew the same test clusters"


def test_a_split_refits_each_family_with_its_tuned_configuration(prepared):
    prep = prepared[1]
    fitted = {"logistic": {"best_params": {"C": 0.1}, "features": list(prep.train_X.columns)},
              "xgboost": {"best_params": {"n_estimators": 30, "max_depth": 2}, "features": []}}
    errors = []
    out = refit_models("binary_classification", fitted, prep, 42, errors, "split 1")
    assert not errors and set(out) == {"logistic", "xgboost"}
    assert all(0.5 < out[m]["metric"] <= 1 for m in out)
    again = refit_models("binary_classification", fitted, prep, 42, [], "split 1")
    assert {m: v["metric"] for m, v in again.items()} == {m: v["metric"] for m, v in out.items()}


def test_a_split_whose_training_rows_hold_one_class_is_recorded(prepared):
    prep = prepared[2]
    one = type(prep)(**{**prep.__dict__, "train_y": prep.train_y * 0})
    errors = []
    out = refit_models("binary_classification", {"logistic": {"best_params": {}, "features": []}}, one, 42,
                       errors, "split 2")
    assert out["logistic"]["metric"] is None
    assert errors[0]["type"] == "SingleClass" and errors[0]["phase"] == "splits"
    # a test side with one class has no AUC: recorded, not a crash
    no_auc = type(prep)(**{**prep.__dict__, "test_y": prep.test_y * 0})
    errors = []
    out = refit_models("binary_classification", {"logistic": {"best_params": {}, "features": []}}, no_auc,
                       42, errors, "split 2")
    assert out["logistic"]["metric"] is None and "test rows of split 2 hold one outcome class" in errors[0]["message"]


def _evaluation(best="logistic", ci=(0.80, 0.84), models=None):
    models = models or {"logistic": 0.82, "xgboost": 0.81, "stacking": 0.83}
    return {"primary_metric": "auc", "best_model": best,
            "selection_evidence": {"top_single": "logistic", "overlapping_top": ["logistic", "xgboost"]},
            "models": {m: {"metrics": {"auc": v}, "ci": {"auc": list(ci)}} for m, v in models.items()}}


REPORT = {"train_n": 800, "test_n": 200, "split": {"seed": 42, "train_clusters": 60, "test_clusters": 15,
                                                   "clustered": True, "group_overlap": 0, "method": "grouped"}}


def _run(k, logistic, xgboost, test_clusters):
    return {"split": k, "facts": {"seed": split_seed(42, k), "train_n": 801, "test_n": 199, "train_clusters": 61,
                                  "test_clusters": test_clusters, "clustered": True, "group_overlap": 0,
                                  "method": "grouped"},
            "models": {"logistic": {"metric": logistic}, "xgboost": {"metric": xgboost}}, "errors": []}


def test_the_summary_matches_the_per_split_values():
    runs = [_run(2, 0.78, 0.80, 17), _run(1, 0.85, 0.84, 14)]
    doc = summarize(_evaluation(), REPORT, runs, 3)
    assert doc["n_splits"] == 3 and doc["n_repeated"] == 2 and doc["seeds"] == [42, 1051, 2060]
    assert [s["split"] for s in doc["splits"]] == [0, 1, 2]
    assert doc["test_clusters"] == {"min": 14, "max": 17}
    lg = doc["models"]["logistic"]
    assert lg["values"] == [0.82, 0.85, 0.78]
    assert lg["mean"] == pytest.approx(np.mean(lg["values"])) and lg["sd"] == pytest.approx(np.std(lg["values"],
                                                                                                     ddof=1))
    assert (lg["min"], lg["max"], lg["n"]) == (0.78, 0.85, 3)
    assert lg["best_on"] == 2 and doc["models"]["xgboost"]["best_on"] == 1
    # stacking is scored on the main split only and says so
    assert "stacking" not in doc["models"] and doc["not_refitted"] == ["stacking"]
    ref = doc["reference"]
    assert ref["model"] == "logistic" and ref["selected"]
    assert ref["ci_half_width"] == pytest.approx(0.02) and ref["spread_larger"] == (lg["sd"] > 0.02)


def test_the_spread_is_set_beside_the_interval_half_width_either_way():
    narrow = summarize(_evaluation(ci=(0.815, 0.825)), REPORT, [_run(1, 0.85, 0.84, 14), _run(2, 0.78, 0.8, 15)], 3)
    assert narrow["reference"]["spread_larger"] and narrow["reference"]["sd_over_half_width"] > 1
    wide = summarize(_evaluation(ci=(0.70, 0.94)), REPORT, [_run(1, 0.85, 0.84, 14), _run(2, 0.78, 0.8, 15)], 3)
    assert not wide["reference"]["spread_larger"]


def test_when_stacking_is_selected_the_spread_is_that_of_the_single_model_it_was_compared_with():
    doc = summarize(_evaluation(best="stacking"), REPORT, [_run(1, 0.85, 0.84, 14)], 2)
    assert doc["reference"]["model"] == "logistic" and not doc["reference"]["selected"]


def test_a_model_that_failed_on_a_split_is_left_out_of_its_spread():
    doc = summarize(_evaluation(), REPORT, [_run(1, None, 0.84, 14), _run(2, 0.80, 0.8, 15)], 3)
    assert doc["models"]["logistic"]["values"] == [0.82, None, 0.80] and doc["models"]["logistic"]["n"] == 2
    assert spread([]) is None and spread([0.5]) == {"n": 1, "mean": 0.5, "sd": 0.0, "min": 0.5, "max": 0.5}


def test_the_summary_validates_against_its_schema():
    from edm_ars.core.artifacts import validate

    validate(summarize(_evaluation(), REPORT, [_run(1, 0.85, 0.84, 14)], 2), "splits")


# ---- the paper ------------------------------------------------------------------------------------------------


def _with_splits(res: dict, values: dict[str, list[float]], clusters=(14, 17)) -> dict:
    """results.json with a `splits` record built by summarize from per-split values (split 0: the main split)."""
    primary, models = res["primary_metric"], res["models"]
    evaluation = {"primary_metric": primary, "best_model": res["best_model"], "models": models,
                  "selection_evidence": res.get("selection_evidence") or {}}
    k = len(next(iter(values.values())))
    runs = [{"split": j, "facts": {"seed": split_seed(42, j), "train_n": 16000, "test_n": 4000 + j,
                                   "train_clusters": 700, "test_clusters": clusters[j % 2], "clustered": True,
                                   "group_overlap": 0, "method": "grouped"},
             "models": {m: {"metric": v[j]} for m, v in values.items()}, "errors": []} for j in range(1, k)]
    main = {m: {**rec, "metrics": {**rec["metrics"], primary: values[m][0]}} if m in values else rec
            for m, rec in models.items()}
    report = {"train_n": 16000, "test_n": 4000, "split": {"seed": 42, "train_clusters": 700, "test_clusters": 15,
                                                          "clustered": True, "group_overlap": 0, "method": "g"}}
    from edm_ars.jobs.analysis.analyze import _split_spread

    doc = summarize(evaluation | {"models": main}, report, runs, k)
    return res | {"models": main, "splits": _split_spread(doc)}


def _report(binary: bool) -> dict:
    """The writer tests' data report with the cluster counts of its split (which the schema requires)."""
    from test_writer import data_report

    rep = data_report(binary)
    rep["split"] = {"clustered": True, "train_clusters": 700, "test_clusters": 15} | rep["split"]
    return rep


def _paper(tmp_path, binary, values, name):
    from test_writer import _artifacts_by_name, _build, literature, results, review, spec

    from edm_ars.writer.verify import verify_paper

    res = _with_splits(results(binary), values)
    _, out = _build(tmp_path, binary=binary, passed=True, name=name, results=res, data_report=_report(binary))
    arts = _artifacts_by_name({"spec": spec(binary), "literature": literature(), "data_report": _report(binary),
                               "results": res, "review": review(True)})
    report = verify_paper(out / "paper.tex", artifacts=arts)
    return res, (out / "paper.tex").read_text(), report


def test_the_paper_reports_the_spread_beside_the_single_split_interval(tmp_path):
    from test_writer import results, slot_content

    main = results(True)["models"]
    # a spread far larger than the main split's narrow intervals
    values = {m: [main[m]["metrics"]["auc"], 0.70, 0.78, 0.74, 0.80] for m in main if m != "stacking"}
    res, tex, report = _paper(tmp_path, True, values, "wide")
    assert report.ok and report.counts["unmatched"] == 0, report.failures + report.warnings
    ref = res["splits"]["reference"]
    assert ref["model"] == res["best_model"] and ref["spread_larger"]
    methods, results_, discussion, limitations = (slot_content(tex, s) for s in
                                                  ("METHODS", "RESULTS", "DISCUSSION", "LIMITATIONS"))
    assert r"\NSplits{} train/test splits" in methods and "not tuned again" in methods
    assert "grouped by school" in methods and "evaluated on the main split only" in methods
    assert r"Mean (SD), \NSplits{} splits" in results_
    assert r"\XgboostAUCSplitMean{} (\XgboostAUCSplitSd{})" in results_ and "& -- \\\\" in results_  # stacking
    assert r"\SplitTestClustersMin{} to \SplitTestClustersMax{} test schools" in results_
    assert "larger than the half-width" in results_ and "larger than the half-width" in discussion
    assert "spread leaves out the variability of tuning" in " ".join(limitations.split())
    assert "single train/test split" not in limitations


def test_a_spread_within_the_interval_is_stated_as_such_for_a_regression(tmp_path):
    from test_writer import results, slot_content

    main = results(False)["models"]
    primary = results(False)["primary_metric"]
    values = {m: [main[m]["metrics"][primary]] * 3 for m in main if m != "stacking"}
    res, tex, report = _paper(tmp_path, False, values, "narrow")
    assert report.ok and report.counts["unmatched"] == 0, report.failures + report.warnings
    assert not res["splits"]["reference"]["spread_larger"] and res["splits"]["models"][res["best_model"]]["sd"] == 0
    assert "smaller than the half-width" in slot_content(tex, "RESULTS")
    assert "does not hinge on the particular split" in slot_content(tex, "DISCUSSION")


def test_without_repeated_splits_the_paper_states_the_single_split(tmp_path):
    from test_writer import _build, slot_content

    _, out = _build(tmp_path, binary=True, passed=True, name="single", data_report=_report(True))
    tex = (out / "paper.tex").read_text()
    assert "single train/test split" in slot_content(tex, "LIMITATIONS")
    assert "NSplits" not in tex and "Mean (SD)" not in tex


# ---- the workflow ----------------------------------------------------------------------------------------------


@pytest.mark.workflow
@pytest.mark.parametrize("repeated, jobs", [(None, 2), (1, 0), (4, 3)])
def test_the_split_jobs_follow_the_configuration_and_one_split_disables_them(tmp_path, repeated, jobs):
    """A dry run of round 0's results: one split_run job per split beyond the main one (the test configuration
    has 3 splits) and the splits summary, or neither of them and a results job without the splits when 1."""
    from workflow import snakemake

    overrides = f"analysis:\n  repeated_splits: {repeated}\n" if repeated else None
    done = snakemake(tmp_path, "output/branch_1/round_0/results.json", "-n", "--quiet", "rules", overrides=overrides)
    assert done.returncode == 0, done.stderr[-3000:]
    counts = dict(line.split()[:2] for line in done.stdout.splitlines() if len(line.split()) == 2)
    assert int(counts.get("split_run", 0)) == jobs
    assert ("splits" in counts) == (jobs > 0) and counts["analyze"] == "1"


def test_a_selected_stacking_is_set_beside_the_model_it_was_compared_with():
    """Stacking selected over the simplest model tied with the top one (xgboost tied with the top mlp): the spread
    is that of xgboost, the model the rule compared stacking with, not the top single model (mlp)."""
    evaluation = _evaluation(best="stacking", models={"xgboost": 0.81, "mlp": 0.82, "stacking": 0.83})
    evaluation["selection_evidence"] = {"top_single": "mlp", "overlapping_top": ["xgboost", "mlp"]}
    runs = [{**_run(1, 0.8, 0.8, 14), "models": {"xgboost": {"metric": 0.80}, "mlp": {"metric": 0.79}}},
            {**_run(2, 0.8, 0.8, 15), "models": {"xgboost": {"metric": 0.83}, "mlp": {"metric": 0.84}}}]
    ref = summarize(evaluation, REPORT, runs, 3)["reference"]
    assert ref["model"] == "xgboost" and not ref["selected"]
