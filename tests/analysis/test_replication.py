"""edm_ars.analysis.replication and the replication job: each status reached from made-up training rows and a
hand-made multilevel.json, the cluster bootstrap, and replication.json as the job writes it."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml

from edm_ars.analysis.replication import assess_finding, mean_difference, replication_table, slope

ROOT = Path(__file__).resolve().parents[2]


class Inputs(SimpleNamespace):
    """A rule's named inputs as the job reads them (attributes and keys())."""

    def keys(self):
        return vars(self).keys()


def finding(test, **extra):
    return {"id": "f", "claim": "A claim as the source states it.", "cite": "raudenbush2002hierarchical",
            "where": "Table 1", "test": test, **extra}


def rows(n=400, effect=1.0, seed=0):
    """Training rows: a continuous x, a three-level categorical g (one-hot), a binary s (one column), y."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    g = rng.choice(["a", "b", "c"], size=n)
    s = rng.choice(["Catholic", "Public"], size=n)
    y = effect * x + effect * (g == "a") - effect * (s == "Public") + rng.normal(size=n)
    frame = pd.DataFrame({"x": x, "g__a": (g == "a") * 1.0, "g__b": (g == "b") * 1.0, "g__c": (g == "c") * 1.0,
                          "s__Public": (s == "Public") * 1.0})
    sources = {"x": "x", "g__a": "g", "g__b": "g", "g__c": "g", "s__Public": "s"}
    return frame, y, sources


def run(test, frame, y, sources, multilevel=None, groups=None, outcome="y", **extra):
    return assess_finding(finding(test, **extra), outcome=outcome, train_x=frame, train_y=y, groups=groups,
                        sources=sources, multilevel=multilevel, n_bootstrap=300, seed=7)


def test_group_difference_agrees_and_differs():
    frame, y, sources = rows()
    up = run({"kind": "group_difference", "variable": "g", "higher": "a", "lower": "b"}, frame, y, sources)
    assert up["status"] == "agrees" and up["estimate"] > 0.5 and up["ci"][0] > 0
    assert f"{up['estimate']:.3f}" in up["reason"] and "wholly above zero" in up["reason"]
    assert up["published"] == {"variable": "g", "higher": "a", "lower": "b"}
    down = run({"kind": "group_difference", "variable": "g", "higher": "b", "lower": "a"}, frame, y, sources)
    assert down["status"] == "differs" and down["ci"][1] < 0 and down["estimate"] == pytest.approx(-up["estimate"])


def test_a_binary_variable_is_one_column():
    frame, y, sources = rows()
    res = run({"kind": "group_difference", "variable": "s", "higher": "Catholic", "lower": "Public"},
              frame, y, sources)
    public = frame["s__Public"].to_numpy() == 1
    assert res["status"] == "agrees"
    assert res["estimate"] == pytest.approx(round(y[~public].mean() - y[public].mean(), 4))


def test_an_interval_including_zero_cannot_test():
    frame, y, sources = rows(effect=0.0, seed=3)
    res = run({"kind": "group_difference", "variable": "g", "higher": "a", "lower": "b"}, frame, y, sources)
    assert res["status"] == "cannot_test" and res["ci"][0] < 0 < res["ci"][1]
    assert "includes zero" in res["reason"]


def test_association_by_published_direction():
    frame, y, sources = rows()
    pos = run({"kind": "association", "variable": "x", "direction": "positive"}, frame, y, sources)
    assert pos["status"] == "agrees" and pos["estimate"] == pytest.approx(np.polyfit(frame["x"], y, 1)[0], abs=1e-3)
    neg = run({"kind": "association", "variable": "x", "direction": "negative"}, frame, y, sources)
    assert neg["status"] == "differs" and "other side of zero" in neg["reason"]
    flat = run({"kind": "association", "variable": "x", "direction": "negative"}, *rows(effect=0.0, seed=3))
    assert flat["status"] == "cannot_test"


@pytest.mark.parametrize("test, words", [
    ({"kind": "association", "variable": "z", "direction": "positive"}, "not among this study's predictors"),
    ({"kind": "group_difference", "variable": "z", "higher": "a", "lower": "b"}, "not among this study's predictors"),
    ({"kind": "group_difference", "variable": "g", "higher": "a", "lower": "d"}, "no column for g = 'd'"),
    ({"kind": "none", "reason": "An interaction this design does not estimate."}, "interaction"),
])
def test_what_cannot_be_read_cannot_test(test, words):
    res = run(test, *rows())
    assert res["status"] == "cannot_test" and words in res["reason"] and res["estimate"] is None


def test_a_dropped_predictor_cannot_test():
    frame, y, sources = rows()
    res = assess_finding(finding({"kind": "association", "variable": "x", "direction": "positive"}), outcome="y",
                         train_x=frame.drop(columns="x"), train_y=y, groups=None,
                         sources={k: v for k, v in sources.items() if v != "x"}, multilevel=None, n_bootstrap=50,
                         seed=1, dropped=["x"])
    assert res["status"] == "cannot_test" and "dropped from this study's predictors" in res["reason"]


def test_a_finding_about_another_outcome_cannot_test():
    res = run({"kind": "association", "variable": "x", "direction": "positive"}, *rows(), outcomes=["normexam"],
              outcome="above_mean_exam")
    assert res["status"] == "cannot_test" and "normexam" in res["reason"] and "above_mean_exam" in res["reason"]


def test_a_small_group_cannot_test():
    frame, y, sources = rows(n=60)
    res = run({"kind": "group_difference", "variable": "g", "higher": "a", "lower": "b"}, frame, y, sources)
    assert res["status"] == "cannot_test" and "fewer than 20" in res["reason"]


def multilevel(icc=0.2, ci=(0.15, 0.25), skipped=None):
    return {"estimator": "linear mixed model (random intercept), REML, statsmodels MixedLM", "skipped": skipped,
            "outcome_scale": "observed",
            "levels": [] if skipped else [{"unit": "school", "column": "School",
                                           "null_model": {"icc": icc, "icc_ci": list(ci)}}]}


@pytest.mark.parametrize("doc, status, words", [
    (multilevel(0.20, (0.15, 0.25)), "agrees", "overlaps"),
    (multilevel(0.10, (0.06, 0.12)), "agrees", "overlaps"),  # the interval touches the band 0.12 to 0.24
    (multilevel(0.05, (0.03, 0.08)), "differs", "wholly below"),
    (multilevel(0.40, (0.33, 0.45)), "differs", "wholly above"),
    (multilevel(skipped="one cluster"), "cannot_test", "one cluster"),
    (None, "cannot_test", "no multilevel analysis"),
])
def test_between_cluster_share(doc, status, words):
    test = {"kind": "between_cluster_share", "value": 0.18, "tolerance": 0.06}
    res = run(test, *rows(), multilevel=doc)
    assert res["status"] == status and words in res["reason"]
    if status != "cannot_test":
        assert res["estimate"] == doc["levels"][0]["null_model"]["icc"] and "0.120 to 0.240" in res["reason"]


def test_the_share_is_that_of_the_registrys_leading_level():
    test = {"kind": "between_cluster_share", "value": 0.18, "tolerance": 0.05}
    doc = multilevel(0.40, (0.35, 0.45))
    doc["levels"][0]["unit"] = "primary school"
    doc["not_estimated"] = [{"unit": "school", "reason": "one school in the training rows"}]
    res = assess_finding(finding(test), outcome="y", train_x=None, train_y=np.zeros(3), groups=None, sources={},
                         multilevel=doc, n_bootstrap=10, seed=1, cluster_unit="school")
    assert res["status"] == "cannot_test" and "school: one school in the training rows" in res["reason"]
    doc["levels"].append({"unit": "school", "null_model": {"icc": 0.2, "icc_ci": [0.16, 0.24]}})
    res = assess_finding(finding(test), outcome="y", train_x=None, train_y=np.zeros(3), groups=None, sources={},
                         multilevel=doc, n_bootstrap=10, seed=1, cluster_unit="school")
    assert res["status"] == "agrees" and res["estimate"] == 0.2


def test_the_cluster_bootstrap_is_wider_for_a_cluster_level_variable():
    rng = np.random.default_rng(1)
    school = np.repeat(np.arange(12), 50)
    catholic = np.isin(school, np.arange(6))
    y = rng.normal(size=12)[school] * 3 + rng.normal(size=school.size)
    by_rows = mean_difference(y, catholic, ~catholic, None, 400, 5)
    by_school = mean_difference(y, catholic, ~catholic, school, 400, 5)
    assert by_rows[0] == pytest.approx(by_school[0])
    assert by_school[1][1] - by_school[1][0] > 2 * (by_rows[1][1] - by_rows[1][0])
    assert mean_difference(y, catholic, ~catholic, school, 400, 5) == by_school  # seeded: the same interval
    assert slope(y, school.astype(float), None, 50, 1)[0] == pytest.approx(np.polyfit(school, y, 1)[0])


def test_the_table_counts_and_a_data_set_without_findings():
    frame, y, sources = rows()
    kw = dict(outcome="y", train_x=frame, train_y=y, groups=None, sources=sources, multilevel=None,
              n_bootstrap=200, seed=1)
    table = replication_table([finding({"kind": "association", "variable": "x", "direction": "positive"}),
                               finding({"kind": "none", "reason": "A null claim this design cannot check."})], **kw)
    assert table["source"] == "registry" and table["counts"] == {"agrees": 1, "differs": 0, "cannot_test": 1}
    assert replication_table([], **kw) == {"source": "none", "findings": [],
                                           "counts": {"agrees": 0, "differs": 0, "cannot_test": 0}}


def test_the_job_writes_replication_json(tmp_path):
    """The rule's job on the shipped HSB registry with made-up training rows and a hand-made multilevel.json."""
    from edm_ars.core.artifacts import read_json, validate
    from edm_ars.core.frames import write_frame
    from edm_ars.jobs.analysis.replication import replication

    rng = np.random.default_rng(2)
    school = np.repeat(np.arange(30), 20)
    public = np.isin(school, np.arange(15))
    meanses = rng.normal(size=30)[school]
    y = 12 + 3 * meanses - 5 * public + rng.normal(size=30)[school] + rng.normal(scale=5, size=school.size)
    files = {"train_X": tmp_path / "train_X.parquet", "train_y": tmp_path / "train_y.parquet",
             "train_groups": tmp_path / "train_groups.parquet", "report": tmp_path / "data_report.json",
             "multilevel": tmp_path / "multilevel.json"}
    write_frame(files["train_X"], pd.DataFrame({"MEANSES": meanses, "Sector__Public": public * 1.0}))
    write_frame(files["train_y"], pd.DataFrame({"MathAch": y}))
    write_frame(files["train_groups"], pd.DataFrame({"School": school.astype(str)}))
    files["report"].write_text(json.dumps({"outcome": "MathAch", "split": {"grouped": True},
                                           "feature_sources": {"MEANSES": "MEANSES", "Sector__Public": "Sector"}}))
    files["multilevel"].write_text(json.dumps(multilevel(0.5, (0.4, 0.6))))
    out = tmp_path / "replication.json"
    smk = SimpleNamespace(input=Inputs(**{k: str(v) for k, v in files.items()},
                                       registry=str(ROOT / "registry" / "hsb_math.yaml")),
                          output=SimpleNamespace(replication=str(out)), params=SimpleNamespace(seed=42, n_bootstrap=200))
    replication(smk)
    doc = read_json(out)
    validate(doc, "replication")
    status = {r["id"]: r["status"] for r in doc["findings"]}
    assert status == {"between_school_share": "differs", "school_mean_ses_positive": "agrees",
                      "catholic_advantage": "agrees"}
    assert doc["resampled"] == "clusters" and doc["counts"] == {"agrees": 2, "differs": 1, "cannot_test": 0}
    registry = yaml.safe_load((ROOT / "registry" / "hsb_math.yaml").read_text())
    assert [r["cite"] for r in doc["findings"]] == [f["cite"] for f in registry["dataset"]["findings"]]
