from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from edm_ars.analysis.stability import (
    bootstrap_rows,
    overlap,
    perturbations,
    perturbed,
    rank_correlation,
    resamples_groups,
    summarize,
)
from edm_ars.core.conventions import UNSTABLE_TOP5


def test_perturbation_names():
    assert perturbations({"imputation": ["simple"], "bootstrap": 2, "seeds": 1}) == [
        "impute_simple", "bootstrap_1", "bootstrap_2", "seed_1"]
    assert perturbations({}) == []


def test_bootstrap_rows_are_seeded_and_differ_by_k():
    a, b = bootstrap_rows(100, 1, 42), bootstrap_rows(100, 2, 42)
    assert (a == bootstrap_rows(100, 1, 42)).all() and not (a == b).all()
    assert a.min() >= 0 and a.max() < 100


def test_overlap_and_rank_correlation():
    ref = list("abcdefghij")
    assert overlap(ref, list("abcdeklmno"), 5) == 1.0
    assert overlap(ref, list("abxyzklmno"), 5) == 0.4
    assert rank_correlation(ref, ref) == pytest.approx(1.0)
    assert rank_correlation(ref, ref[::-1]) < 0


def run(name, metric, feats):
    return {"perturbation": name, "kind": name.split("_")[0], "metric": metric,
            "top_features": [{"feature": f} for f in feats]}


def test_summary_flags_unstable_rankings():
    ref = list("abcdefghij")
    stable = summarize(ref, 0.8, [run("seed_1", 0.80, ref), run("bootstrap_1", 0.79, list("abcdfeghij"))], "auc")
    assert not stable["unstable"] and stable["top5_overlap"]["mean"] == pytest.approx(0.9)  # e left the top 5
    assert stable["metric_spread"]["min"] == 0.79 and stable["n_perturbations"] == 2
    shaky = summarize(ref, 0.8, [run("seed_1", 0.8, list("avwxyzbcde")), run("seed_2", 0.8, list("vwxyzabcde"))],
                      "auc")
    assert shaky["unstable"] and shaky["top5_overlap"]["mean"] < 0.6
    # the threshold applied is recorded with the verdict (the Critic and the Writer read it there)
    assert stable["thresholds"] == shaky["thresholds"] == {"unstable_top5": UNSTABLE_TOP5}


def test_bootstrap_rows_of_an_ungrouped_split_are_those_of_earlier_runs():
    """No groups: the same seeded draw as before group resampling existed (the default study's refits)."""
    assert bootstrap_rows(20, 1, 42).tolist() == [17, 19, 17, 2, 1, 5, 5, 14, 3, 1, 5, 19, 5, 11, 18, 14, 9, 19, 4, 15]
    assert bootstrap_rows(20, 1, 42, None).tolist() == bootstrap_rows(20, 1, 42).tolist()


def _children(n_children: int = 40, seed: int = 3) -> np.ndarray:
    """One id per training row: children with 1 to 6 yearly records each, their rows interleaved."""
    rng = np.random.default_rng(seed)
    ids = np.repeat([f"c{i}" for i in range(n_children)], rng.integers(1, 7, n_children))
    return ids[rng.permutation(len(ids))]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_a_grouped_bootstrap_draws_whole_groups(k):
    groups = _children()
    rows = bootstrap_rows(len(groups), k, 42, groups)
    assert (rows == bootstrap_rows(len(groups), k, 42, groups)).all()  # seeded
    counts = np.bincount(rows, minlength=len(groups))
    sizes = {g: int((groups == g).sum()) for g in set(groups)}
    draws = {}
    for g in sizes:
        c = set(counts[groups == g].tolist())
        assert len(c) == 1, f"group {g} split by the draw: counts {c}"  # every row of a group as often as the group
        draws[g] = c.pop()
    assert sum(draws.values()) == len(sizes)  # as many groups drawn as there are
    assert len(rows) == sum(draws[g] * sizes[g] for g in sizes)  # each drawn group with all its rows
    assert sum(d > 1 for d in draws.values()) > 0 and sum(d == 0 for d in draws.values()) > 0  # with replacement
    # each drawn group's rows lie together in the draw (in the order of the draws)
    runs = [groups[rows[0]]] + [groups[b] for a, b in zip(rows[:-1], rows[1:], strict=True) if groups[a] != groups[b]]
    assert len(runs) <= len(sizes)


def test_a_grouped_bootstrap_needs_one_group_per_row():
    with pytest.raises(ValueError, match="3 group ids for 4 training rows"):
        bootstrap_rows(4, 1, 42, np.array([1, 1, 2]))


def test_which_splits_resample_groups():
    assert not resamples_groups({"grouped": False, "grouped_by": None})
    # the HSLS:09 default: clusters reconstructed from school-level characteristics keep the row bootstrap
    assert not resamples_groups({"grouped": True, "grouped_by": "cluster", "grouping": {"reconstructed": True}})
    assert not resamples_groups({"clustered": True})  # an older report: reconstructed schools
    assert resamples_groups({"grouped": True, "grouped_by": "cluster", "grouping": {"reconstructed": False}})
    assert resamples_groups({"grouped": True, "grouped_by": "unit", "repeated": {"unit": "child"}})
    assert resamples_groups({"grouped": True, "grouped_by": "cluster_and_unit", "grouping": {"reconstructed": True}})


def test_perturbed_bootstrap_keeps_each_childs_records_together():
    groups = _children()
    X = pd.DataFrame({"child": groups, "x": np.arange(len(groups))})
    y = np.arange(len(groups), dtype=float)
    Xb, yb, Xt, _ = perturbed("bootstrap", "1", 42, X, y, X.iloc[:2], {}, lambda s: None, groups)
    assert (Xb["x"].to_numpy() == yb).all() and Xt is not None
    per_child = Xb.groupby("child")["x"].agg(["count", "nunique"])
    sizes = X.groupby("child")["x"].count()
    # a drawn child comes with all of its records, each as often as the child was drawn
    assert ((per_child["nunique"] == sizes[per_child.index]).all()
            and (per_child["count"] % per_child["nunique"] == 0).all())
    Xr, _, _, _ = perturbed("bootstrap", "1", 42, X, y, X.iloc[:2], {}, lambda s: None)
    assert Xr["x"].tolist() == bootstrap_rows(len(y), 1, 42).tolist()  # ungrouped: the row bootstrap


def test_the_summary_keeps_how_a_bootstrap_resampled():
    ref = list("abcdefghij")
    grouped = run("bootstrap_1", 0.79, ref) | {"resampled": {"by": "groups", "n_groups": 40}}
    out = summarize(ref, 0.8, [grouped, run("seed_1", 0.8, ref)], "auc")
    assert out["runs"][0]["resampled"] == {"by": "groups", "n_groups": 40}
    assert "resampled" not in out["runs"][1]


class _Inputs(dict):
    def __getattr__(self, key):
        return self[key]


def _stability_job(tmp_path, split: dict, perturbation: str = "bootstrap_1"):
    """The stability_run job (jobs/analysis/robustness.py) on a small long-format training set: yearly records of
    children whose outcome is the child's, as the engineer writes them; returns its run record."""
    from types import SimpleNamespace

    from edm_ars.core.artifacts import read_json, write_json
    from edm_ars.core.frames import write_frame
    from edm_ars.jobs.analysis.robustness import stability_run

    report = read_json(Path(__file__).resolve().parents[1] / "fixtures" / "writer" / "data_report.json")
    rng = np.random.default_rng(0)
    groups = _children(120)
    child = pd.Series(groups).str[1:].astype(int).to_numpy()
    X = pd.DataFrame({"x1": rng.normal(size=len(groups)) + child % 3, "x2": rng.normal(size=len(groups)),
                      "x3": rng.normal(size=len(groups))})
    y = (child % 3 > 0).astype(float)
    files = {"train_X": X, "train_y": pd.DataFrame({"y": y}), "train_groups": pd.DataFrame({"g": groups}),
             "test_X": X.iloc[:60], "test_y": pd.DataFrame({"y": y[:60]})}
    inputs = _Inputs()
    for name, frame in files.items():
        inputs[name] = str(tmp_path / f"{name}.parquet")
        write_frame(inputs[name], frame)
    for name, record in {"evaluation": {"task": "binary_classification", "interpreted_model": "logistic"},
                         "logistic_meta": {"best_params": {}},
                         "report": report | {"split": report["split"] | split, "feature_sources": {c: c for c in X.columns}}}.items():
        inputs[name] = str(tmp_path / f"{name}.json")
        write_json(inputs[name], record)
    out = tmp_path / "run.json"
    smk = SimpleNamespace(input=inputs, output=SimpleNamespace(run=str(out)),
                          wildcards=SimpleNamespace(perturbation=perturbation),
                          params=SimpleNamespace(seed=42, shap={"stability_samples": 50, "kernel_samples": 20,
                                                                "timeout_s": 60}))
    stability_run(smk)
    return read_json(out)


def test_the_stability_job_resamples_a_grouped_splits_children_whole(tmp_path):
    long = {"grouped": True, "grouped_by": "unit", "repeated": {
        "unit": "child", "units": "children", "id": "childid", "time": "year", "train_units": 120, "test_units": 30,
        "train_records": 420, "test_records": 105, "units_on_both_sides": 0}}
    run_ = _stability_job(tmp_path / "long", long)
    assert run_["resampled"] == {"by": "groups", "n_groups": 120}
    assert run_["metric"] is not None and run_["top_features"]
    rows = _stability_job(tmp_path / "rows", {"grouped": True, "grouped_by": "cluster",
                                              "grouping": {"reconstructed": True}})
    assert "resampled" not in rows and rows["metric"] is not None  # the default: rows, as before
    seed = _stability_job(tmp_path / "seed", long, "seed_1")
    assert "resampled" not in seed  # only a bootstrap resamples
