"""The split follows the data's structure (issue 33): repeated records of a unit (dataset.repeated, long format)
stay on one side of every split (the train/test split, the repeated splits, the tuning folds), nested in their
cluster when there is one (a unit that changed clusters merges them); few clusters stop the run with one line."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from edm_ars.analysis.evaluation import resample_counts, split_grouped
from edm_ars.analysis.models import cv_folds
from edm_ars.analysis.splits import split_seed
from edm_ars.core.errors import DataError
from edm_ars.data.checks import data_checks
from edm_ars.data.engineer import prepare, protocol
from edm_ars.data.protocol import Protocol
from edm_ars.data.registry import Registry, load_registry
from edm_ars.data.registry_validation import validate_registry
from edm_ars.data.split import split_groups

ROOT = Path(__file__).resolve().parents[2]


def long_frame(n_children=400, n_schools=40, seed=0, movers=0.03):
    """Yearly records of children (2-6 each) in schools; a share of the children change school once."""
    rng = np.random.default_rng(seed)
    rows = []
    for child in range(n_children):
        school = int(rng.integers(0, n_schools))
        ability = rng.normal()
        n_years = int(rng.integers(2, 7))
        move_at = int(rng.integers(1, n_years)) if rng.random() < movers else None
        for k in range(n_years):
            if move_at is not None and k == move_at:
                school = int((school + 1 + rng.integers(0, n_schools - 1)) % n_schools)
            x1 = ability + rng.normal(0, 0.5)
            x2 = rng.normal()
            x3 = rng.choice(["a", "b", "c"])
            score = 2 * ability + 0.5 * x2 + 0.3 * k + rng.normal(0, 0.5)
            rows.append({"childid": f"c{child:04d}", "year": 2000 + k, "school": school, "x1": x1, "x2": x2,
                         "x3": x3, "sex": rng.choice(["F", "M"]), "score": score,
                         "passed": "Yes" if score > 0.3 else "No"})
    # shuffled rows: a file need not hold a child's years together
    return pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)


def registry(cluster=True, repeated=True):
    dataset = {"name": "long_test", "title": "Yearly records of children", "id_column": ["childid", "year"],
               "questions": []}
    dataset["grouping"] = ({"unit": "school", "columns": ["school"], "reconstructed": False} if cluster
                           else {"unit": "school", "columns": [], "reconstructed": False})
    if repeated:
        dataset["repeated"] = {"unit": "child", "units": "children", "id": "childid", "time": "year"}
    variables = [
        {"name": "score", "role": "outcome", "type": "continuous"},
        {"name": "passed", "role": "outcome", "type": "binary"},
        {"name": "x1", "role": "predictor", "type": "continuous"},
        {"name": "x2", "role": "predictor", "type": "continuous"},
        {"name": "x3", "role": "predictor", "type": "categorical"},
        {"name": "sex", "role": "protected", "type": "binary"},
        {"name": "childid", "role": "identifier", "type": "categorical"},
        {"name": "year", "role": "design", "type": "continuous"},
        {"name": "school", "role": "identifier", "type": "categorical"},
    ]
    questions = [{"id": "score", "default": True, "outcome": "score", "subgroups": ["sex"],
                  "predictors": {"x1": "", "x2": "", "x3": ""}}]
    return Registry(dataset=dataset, tier1={v["name"]: v for v in variables}, tier3={}, pitfalls=[],
                    questions=questions, tier2={}, root=ROOT)


def spec(task):
    outcome = "score" if task == "regression" else "passed"
    return {"outcome": {"name": outcome}, "task": task, "subgroups": ["sex"],
            "predictors": [{"name": n, "rationale": "test"} for n in ("x1", "x2", "x3")]}


PROTO = Protocol(min_analytic_n=100)


def children(raw, X):
    """The child of every row of a prepared feature frame, found by its value of x2 (a draw unique to each row,
    neither imputed nor scaled)."""
    by_x2 = dict(zip(raw["x2"].round(9), raw["childid"], strict=True))
    return [by_x2[v] for v in X["x2"].round(9)]


# ---- the registry ------------------------------------------------------------------------------------------------


def test_repeated_is_read_with_its_defaults():
    reg = registry()
    assert reg.repeated == {"unit": "child", "units": "children", "id": "childid", "time": "year"}
    reg.dataset["repeated"] = {"unit": "pupil", "id": "pid"}
    assert reg.repeated == {"unit": "pupil", "units": "pupils", "id": "pid", "time": None}
    assert registry(repeated=False).repeated is None
    assert load_registry(ROOT / "registry" / "hsls09").repeated is None


def test_repeated_is_validated_naming_the_key():
    reg = registry()
    assert validate_registry(reg) == []
    reg.dataset["repeated"] = {"unit": "child", "time": "year"}
    assert any("dataset.repeated.id must name the column" in e for e in validate_registry(reg))
    reg.dataset["repeated"] = {"unit": "child", "id": "childid", "time": "x1"}  # x1 is a predictor
    errors = validate_registry(reg)
    assert any("dataset.repeated.time column x1 is a predictor" in e for e in errors), errors
    reg.dataset["repeated"] = {"unit": "child", "id": "childid", "clock": "year"}
    assert any("unknown key(s) ['clock']" in e for e in validate_registry(reg))
    reg.dataset["repeated"] = ["childid"]
    assert any("dataset.repeated must be a mapping" in e for e in validate_registry(reg))


def test_a_repeated_column_absent_from_the_data_is_named():
    from edm_ars.data.datasets.adapters import data_problems

    raw = long_frame(60, 10).drop(columns=["year"])
    assert any("column year (dataset.repeated.time) is not in the data" in p for p in data_problems(raw, registry()))
    with pytest.raises(DataError, match=r"column childid \(dataset.repeated.id"):
        prepare(long_frame(60, 10).drop(columns=["childid"]), spec("regression"), registry(), None, PROTO)


def test_a_record_without_its_unit_stops_the_run():
    raw = long_frame(60, 10)
    raw.loc[3, "childid"] = None
    with pytest.raises(DataError, match=r"childid \(dataset.repeated.id\): 1 analytic rows have no child"):
        prepare(raw, spec("regression"), registry(), None, PROTO)


# ---- the groups --------------------------------------------------------------------------------------------------


def test_groups_are_the_components_of_clusters_and_units():
    clusters = np.array([1, 1, 2, 2, 3, 3, 4])
    units = np.array(["a", "b", "b", "c", "d", "d", "e"])  # b is in schools 1 and 2: they merge
    g = split_groups(clusters, units)
    assert g.tolist() == [0, 0, 0, 0, 1, 1, 2]
    assert split_groups(None, units).tolist() == [0, 1, 1, 2, 3, 3, 4]
    assert split_groups(clusters, None) is not None and split_groups(clusters, None).tolist() == clusters.tolist()


@pytest.mark.parametrize("cluster", [True, False])
@pytest.mark.parametrize("task", ["regression", "binary_classification"])
def test_no_child_on_both_sides_of_any_split(cluster, task):
    """The data built to tempt it: children with 2-6 shuffled yearly rows, some changing school; for several seeds
    (the main split's and the repeated splits' seeds), no child is on both sides of the train/test split nor of any
    tuning fold, and with schools no school is on both sides either."""
    raw = long_frame(seed=3)
    reg = registry(cluster=cluster)
    for k in range(4):
        seed = split_seed(42, k)
        prep = prepare(raw, spec(task), reg, None, Protocol(min_analytic_n=100, seed=seed), describe=False)
        split = prep.report["split"]
        rep = split["repeated"]
        assert rep["units_on_both_sides"] == 0
        assert split["grouped"] and split["grouped_by"] == ("cluster_and_unit" if cluster else "unit")
        assert split["clustered"] is cluster
        check = next(c for c in prep.report["checks"] if c["name"] == "no_unit_on_both_sides")
        assert check["passed"] and check["detail"] == 0
        # the rows behind each side, by the test groups: every group's rows are on one side only
        train_g, test_g = set(prep.train_groups), set(prep.test_groups)
        assert not train_g & test_g
        # the children on each side, recovered from the rows themselves
        train_c, test_c = children(raw, prep.train_X), children(raw, prep.test_X)
        assert not set(train_c) & set(test_c)
        assert len(set(train_c)) == rep["train_units"] and len(set(test_c)) == rep["test_units"]
        if cluster:  # nor any school
            school = dict(zip(raw["x2"].round(9), raw["school"], strict=True))
            assert not ({school[v] for v in prep.train_X["x2"].round(9)}
                        & {school[v] for v in prep.test_X["x2"].round(9)})
        assert rep["train_records"] + rep["test_records"] == len(raw)
        assert rep["train_units"] + rep["test_units"] == raw["childid"].nunique()
        # the tuning folds group by the same groups
        for tr, va in cv_folds(task, prep.train_y.to_numpy(), prep.train_groups.to_numpy(), 5, seed):
            assert not set(prep.train_groups.iloc[tr]) & set(prep.train_groups.iloc[va])
        # the bootstrap resamples the groups whole
        counts, how = resample_counts(len(prep.test_y), 20, seed, prep.test_groups.to_numpy(), split_grouped(split))
        assert how["interval_method"] == "cluster_bootstrap" and how["test_clusters"] == len(test_g)
        for row in counts:
            per_group = pd.Series(row).groupby(prep.test_groups.to_numpy()).nunique()
            assert (per_group == 1).all()  # a group's rows are drawn together, never some of them


def test_children_who_join_every_school_stop_the_run():
    """Children who change school join schools into one group: when the groups left are fewer than the floor, the
    run stops, naming the children who moved, the groups and what to do (a split cannot keep them whole)."""
    raw = long_frame(seed=3, movers=0.3)
    with pytest.raises(DataError) as err:
        prepare(raw, spec("regression"), registry(), None, PROTO, describe=False)
    msg = str(err.value)
    assert "children (childid) have records in more than one school" in msg
    assert "the 40 school clusters into 1 group(s)" in msg and "engineer.min_clusters = 10" in msg
    assert "remove dataset.grouping" in msg
    # without the schools, the children alone are the groups
    prep = prepare(raw, spec("regression"), registry(cluster=False), None, PROTO, describe=False)
    assert prep.report["split"]["grouped_by"] == "unit" and prep.report["split"]["repeated"]["units_on_both_sides"] == 0


def test_children_on_both_sides_are_what_an_ungrouped_split_gives():
    """The same data without dataset.repeated: a row-level split puts most children on both sides (the check that
    the data tempt it), and the DataEngineer reports no unit counts then."""
    raw = long_frame(seed=3)
    reg = registry(cluster=False, repeated=False)
    prep = prepare(raw, spec("regression"), reg, None, PROTO, describe=False)
    assert prep.report["split"]["repeated"] is None and not prep.report["split"]["grouped"]
    assert all(c["name"] != "no_unit_on_both_sides" for c in prep.report["checks"])
    both = set(children(raw, prep.train_X)) & set(children(raw, prep.test_X))
    assert len(both) > 50


def test_the_check_fails_on_a_unit_on_both_sides():
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0]})
    y = pd.Series([1.0, 2.0, 3.0, 4.0])
    checks = data_checks(X, X, y, y, "regression", "y", 1, 4, 1.0, 0, Protocol(), False, units_on_both_sides=2)
    check = next(c for c in checks if c["name"] == "no_unit_on_both_sides")
    assert not check["passed"] and check["detail"] == 2
    assert all(c["name"] != "no_unit_on_both_sides"
               for c in data_checks(X, X, y, y, "regression", "y", 1, 4, 1.0, 0, Protocol(), False))


# ---- few clusters ------------------------------------------------------------------------------------------------


def school_frame(n_schools, n=1500, seed=0):
    rng = np.random.default_rng(seed)
    school = rng.integers(0, n_schools, n)
    x1 = rng.normal(size=n) + 0.2 * school
    score = x1 + rng.normal(size=n)
    return pd.DataFrame({"childid": [f"c{i}" for i in range(n)], "year": 2000, "school": school, "x1": x1,
                         "x2": rng.normal(size=n), "x3": rng.choice(["a", "b"], n), "sex": rng.choice(["F", "M"], n),
                         "score": score, "passed": np.where(score > 0, "Yes", "No")})


@pytest.mark.parametrize("task", ["regression", "binary_classification"])
def test_nineteen_schools_give_a_grouped_split(task):
    raw = school_frame(19)
    prep = prepare(raw, spec(task), registry(repeated=False), None, protocol(
        {"test_fraction": 0.2, "simple_below": 5.0, "warn_above": 20.0, "min_analytic_n": 100, "min_retention": 0.6,
         "max_categories": 100, "imputation": "by_missingness"}, 42), describe=False)
    split = prep.report["split"]
    assert split["clustered"] and split["grouped_by"] == "cluster" and split["group_overlap"] == 0
    assert split["train_clusters"] + split["test_clusters"] == 19 and split["test_clusters"] >= 2
    assert "grouped by school" in split["method"]
    assert not set(prep.train_groups) & set(prep.test_groups)


def test_four_schools_stop_the_run_with_the_fix():
    raw = school_frame(4)
    with pytest.raises(DataError) as err:
        prepare(raw, spec("regression"), registry(repeated=False), None, PROTO, describe=False)
    msg = str(err.value)
    assert "\n" not in msg
    assert "4 school clusters (school)" in msg and "engineer.min_clusters = 10" in msg
    assert "at least 7 are needed" in msg and "remove dataset.grouping" in msg
    # 8 schools could carry a grouped study: the line gives the --configfile setting that lowers the floor
    with pytest.raises(DataError) as err:
        prepare(school_frame(8), spec("regression"), registry(repeated=False), None, PROTO, describe=False)
    msg = str(err.value)
    assert "\n" not in msg and "8 school clusters" in msg
    assert "--configfile" in msg and "`engineer: {min_clusters: 8}`" in msg and "remove dataset.grouping" in msg
    # the floor is the config's: lowered to 4, the split is grouped by the 4 schools
    cfg = {"test_fraction": 0.2, "simple_below": 5.0, "warn_above": 20.0, "min_analytic_n": 100,
           "min_retention": 0.6, "max_categories": 100, "imputation": "by_missingness", "min_clusters": 4}
    prep = prepare(raw, spec("regression"), registry(repeated=False), None, protocol(cfg, 42), describe=False)
    assert prep.report["split"]["clustered"] and prep.report["split"]["test_clusters"] >= 1
    assert "degenerate" not in str(prep.report)


# ---- the default study -------------------------------------------------------------------------------------------

#: sha256 (first 16 hex digits) of [test outcome values, test cluster ids] of the split of a small generated HSLS:09
#: data set (4,000 students, 120 schools, generator seed 7), computed with the code before repeated records and the
#: cluster floor setting (git 109eb81): the default study's split must not change
HEAD_SPLITS = {("binary_classification", 42): "89988400d99dfb92", ("binary_classification", 1051): "19d60e8a45d7fed1",
               ("regression", 42): "c239c3a1c95ebe27", ("regression", 1051): "0db766944daa5bce"}


def test_the_default_study_split_is_unchanged(reg, layout):
    import hashlib
    import json

    from edm_ars.data.datasets.synthetic import generate

    raw, _ = generate(reg, layout, n_students=4000, n_schools=120, seed=7)
    for (task, seed), digest in HEAD_SPLITS.items():
        outcome = "X4EVRATNDCLG" if task == "binary_classification" else "X2TXMTSCOR"
        spec_ = {"outcome": {"name": outcome}, "task": task, "subgroups": ["X1SEX"],
                 "predictors": [{"name": n} for n in ("X1SES", "X1TXMTSCOR", "X1SEX", "X1STUEDEXPCT")]}
        prep = prepare(raw, spec_, reg, layout, Protocol(seed=seed), describe=False)
        text = json.dumps([prep.test_y.round(6).tolist(), prep.test_groups.tolist()])
        assert hashlib.sha256(text.encode()).hexdigest()[:16] == digest, (task, seed)
        split = prep.report["split"]
        assert split["grouped_by"] == "cluster" and split["repeated"] is None
        assert all(c["name"] != "no_unit_on_both_sides" for c in prep.report["checks"])
