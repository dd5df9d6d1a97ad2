"""Cluster levels and repeated identifiers found from the data (issue 33): a column identifying people whose values
repeat stops the run unless declared (dataset.repeated or the grouping); a registry declares more than one cluster
level (pupils in primary AND secondary schools, dataset.grouping.also) and which one the split keeps together
(dataset.grouping.split_by), and no cluster of a kept level is on both sides of the split."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from edm_ars.core.errors import DataError
from edm_ars.data.datasets.adapters import data_problems, identifies_people
from edm_ars.data.engineer import prepare
from edm_ars.data.protocol import Protocol
from edm_ars.data.registry import Registry
from edm_ars.data.registry_validation import validate_registry
from edm_ars.data.split import connected_groups

ROOT = Path(__file__).resolve().parents[2]
PROTO = Protocol(min_analytic_n=100)


def cross_frame(n_pupils=3000, n_primary=150, n_secondary=24, cross=0.03, seed=0):
    """Pupils cross-classified by primary and secondary school: each primary school sends its pupils to one
    secondary school, a share `cross` of them to another one (which links the two secondary schools)."""
    rng = np.random.default_rng(seed)
    feeds = rng.integers(0, n_secondary, n_primary)
    primary = rng.integers(0, n_primary, n_pupils)
    secondary = np.where(rng.random(n_pupils) < cross, rng.integers(0, n_secondary, n_pupils), feeds[primary])
    effect_p, effect_s = rng.normal(0, 0.5, n_primary), rng.normal(0, 0.5, n_secondary)
    x1, x2 = rng.normal(size=n_pupils), rng.normal(size=n_pupils)
    score = x1 + 0.5 * x2 + effect_p[primary] + effect_s[secondary] + rng.normal(0, 0.5, n_pupils)
    return pd.DataFrame({"pupil": np.arange(n_pupils), "primary": primary, "second": secondary, "x1": x1, "x2": x2,
                         "x3": rng.normal(size=n_pupils), "sex": rng.choice(["F", "M"], n_pupils), "score": score,
                         "passed": np.where(score > 0, "Yes", "No")})


def registry(also=True, split_by=None):
    grouping = {"unit": "secondary school", "columns": ["second"], "reconstructed": False}
    if also:
        grouping["also"] = [{"unit": "primary school", "columns": ["primary"]}]
    if split_by is not None:
        grouping["split_by"] = split_by
    dataset = {"name": "cross_test", "title": "Pupils in primary and secondary schools", "id_column": "pupil",
               "grouping": grouping, "questions": []}
    variables = [
        {"name": "score", "role": "outcome", "type": "continuous"},
        {"name": "passed", "role": "outcome", "type": "binary"},
        {"name": "x1", "role": "predictor", "type": "continuous"},
        {"name": "x2", "role": "predictor", "type": "continuous"},
        {"name": "x3", "role": "predictor", "type": "continuous"},
        {"name": "sex", "role": "protected", "type": "binary"},
        {"name": "pupil", "role": "identifier", "type": "categorical"},
        {"name": "primary", "role": "identifier", "type": "categorical"},
        {"name": "second", "role": "identifier", "type": "categorical"},
    ]
    questions = [{"id": "score", "default": True, "outcome": "score", "subgroups": ["sex"],
                  "predictors": {"x1": "", "x2": "", "x3": ""}}]
    return Registry(dataset=dataset, tier1={v["name"]: v for v in variables}, tier3={}, pitfalls=[],
                    questions=questions, tier2={}, root=ROOT)


def spec(task):
    outcome = "score" if task == "regression" else "passed"
    return {"outcome": {"name": outcome}, "task": task, "subgroups": ["sex"],
            "predictors": [{"name": n, "rationale": "test"} for n in ("x1", "x2")]}


def sides(raw, prep, column):
    """The values of `column` among the training and the test rows of a prepared split, the rows found by x2 (a
    draw unique to each row, neither imputed nor scaled)."""
    by_x2 = dict(zip(raw["x2"].round(9), raw[column], strict=True))
    return {by_x2[v] for v in prep.train_X["x2"].round(9)}, {by_x2[v] for v in prep.test_X["x2"].round(9)}


# ---- a repeating identifier ----------------------------------------------------------------------------------------


def test_identifier_names():
    assert all(identifies_people(n) for n in ("STU_ID", "childid", "childId", "pupil", "id", "rownames", "Subject"))
    assert not any(identifies_people(n) for n in ("SCH_ID", "STRAT_ID", "schoolid3", "primary", "PSU", "kidney"))


def test_a_repeating_pupil_column_stops_the_run_naming_the_ways_out():
    raw = cross_frame(600, 40, 12).sort_values("second", kind="stable").reset_index(drop=True)
    raw["pupil"] = np.arange(len(raw)) // 3  # three rows per pupil, in their school: long format nobody declared
    reg = registry()
    reg.dataset["id_column"] = "rownames"
    raw["rownames"] = np.arange(len(raw))
    problems = data_problems(raw, reg)
    msg = [p for p in problems if p.startswith("column pupil identifies people")]
    assert msg, problems
    assert "3.00 rows per value on average (200 values, 600 rows)" in msg[0]
    assert "repeated: {unit: child, id: pupil, time: YEAR_COLUMN}" in msg[0] and "grouping: {unit: school" in msg[0]
    # declared as the unit of repeated records: no problem
    reg.dataset["repeated"] = {"unit": "pupil", "id": "pupil"}
    assert not any("column pupil" in p for p in data_problems(raw, reg))
    # a pupil number restarting in every secondary school (unique within it) is no repeated identifier
    numbered = cross_frame(600, 40, 12)
    numbered["pupil"] = numbered.groupby("second").cumcount()
    numbered["rownames"] = np.arange(len(numbered))
    reg = registry()
    reg.dataset["id_column"] = "rownames"
    assert not any("column pupil" in p for p in data_problems(numbered, reg))


def test_a_non_unique_id_column_says_what_to_do():
    raw = cross_frame(600, 40, 12)
    raw["pupil"] = raw["pupil"] // 2
    problems = [p for p in data_problems(raw, registry()) if "are not unique" in p]
    assert len(problems) == 1, problems
    assert "identifier column(s) ['pupil'] are not unique (e.g. [" in problems[0]
    assert "2.00 rows per value on average" in problems[0]
    assert "repeated: {unit: child, id: pupil" in problems[0] and "set id_column to the columns" in problems[0]


# ---- cluster levels ----------------------------------------------------------------------------------------------


def test_levels_are_read_and_validated():
    reg = registry(split_by="secondary school")
    assert reg.cluster_levels == [
        {"unit": "secondary school", "columns": ["second"], "reconstructed": False},
        {"unit": "primary school", "columns": ["primary"], "reconstructed": False}]
    assert validate_registry(reg) == []
    assert registry(also=False).cluster_levels == [reg.cluster_levels[0]]
    assert "also" not in registry(also=False).grouping  # a registry with one level reads as before
    reg.dataset["grouping"]["split_by"] = "nursery"
    assert any("dataset.grouping.split_by is 'nursery'" in e for e in validate_registry(reg))
    reg.dataset["grouping"]["split_by"] = "all"
    reg.dataset["grouping"]["also"] = [{"unit": "primary school"}]
    assert any("dataset.grouping.also[0].columns must list" in e for e in validate_registry(reg))
    reg.dataset["grouping"]["also"] = [{"unit": "primary school", "columns": ["score"]}]
    assert any("also[0] column score is an outcome" in e for e in validate_registry(reg))
    reg.dataset["grouping"]["also"] = "primary"
    assert any("dataset.grouping.also must be a non-empty list" in e for e in validate_registry(reg))
    raw = cross_frame(300, 20, 10).drop(columns=["primary"])
    assert any("grouping column primary (dataset.grouping.also[0].columns, the primary school level)" in p
               for p in data_problems(raw, registry()))


def test_groups_join_the_levels_a_row_links():
    primary = np.array([1, 1, 2, 3, 3, 4])
    second = np.array([10, 10, 10, 11, 12, 12])
    assert connected_groups([second, primary]).tolist() == [0, 0, 0, 1, 1, 1]  # 3 links 11 and 12
    assert connected_groups([second]).tolist() == [0, 0, 0, 1, 2, 2]


@pytest.mark.parametrize("task", ["regression", "binary_classification"])
def test_no_school_of_a_kept_level_on_both_sides(task):
    raw = cross_frame(n_secondary=60, cross=0.002, n_primary=300)
    for seed in (1, 2, 3, 4):
        prep = prepare(raw, spec(task), registry(), None, Protocol(min_analytic_n=100, seed=seed), describe=False)
        split = prep.report["split"]
        assert split["split_by"] == "all"
        for column in ("second", "primary"):
            train, test = sides(raw, prep, column)
            assert not train & test, (seed, column)
        levels = {lv["unit"]: lv for lv in split["cluster_levels"]}
        assert levels["primary school"]["on_both_sides"] == 0 and levels["secondary school"]["on_both_sides"] == 0
        assert levels["primary school"]["n_clusters"] == raw["primary"].nunique()
    # the data tempt: a split kept by secondary school alone puts primary schools on both sides
    prep = prepare(raw, spec(task), registry(also=False), None, Protocol(min_analytic_n=100, seed=1), describe=False)
    train, test = sides(raw, prep, "primary")
    assert train & test and "cluster_levels" not in prep.report["split"]


def test_too_few_joined_groups_stop_the_run_and_split_by_keeps_one_level():
    raw = cross_frame(cross=0.2)  # every secondary school linked to the others: one group
    with pytest.raises(DataError, match=r"join into 1 group\(s\).*set dataset.grouping.split_by to the unit of one "
                                        r"level \(secondary school or primary school"):
        prepare(raw, spec("regression"), registry(), None, PROTO, describe=False)
    for seed in (1, 2, 3):
        for task in ("regression", "binary_classification"):
            prep = prepare(raw, spec(task), registry(split_by="secondary school"), None,
                           Protocol(min_analytic_n=100, seed=seed), describe=False)
            train, test = sides(raw, prep, "second")
            assert not train & test, (seed, task)
            levels = {lv["unit"]: lv for lv in prep.report["split"]["cluster_levels"]}
            assert levels["secondary school"]["kept_together"] and not levels["primary school"]["kept_together"]
            # the primary schools are not kept together: counted, as the paper states them
            p_train, p_test = sides(raw, prep, "primary")
            assert levels["primary school"]["on_both_sides"] == len(p_train & p_test) > 0


def test_the_default_study_data_raise_no_identifier_problem(reg, layout):
    from edm_ars.data.datasets.synthetic import generate

    raw, _ = generate(reg, layout, n_students=2000, n_schools=60, seed=7)
    assert data_problems(raw, reg) == []
    assert len(reg.cluster_levels) == 1 and "also" not in reg.grouping
