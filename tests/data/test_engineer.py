from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from edm_ars.core.errors import DataError
from edm_ars.data.engineer import build_outcome, prepare
from edm_ars.data.impute import MISSING_CATEGORY, fit_imputer
from edm_ars.data.protocol import Protocol
from edm_ars.data.raw import recode_sentinels
from edm_ars.data.split import reconstruct_schools

ROOT = Path(__file__).resolve().parents[2]
EXPECT = ["Complete a Bachelor's degree", "High school diploma or GED", "Complete a Master's degree"]


def make_raw(n=2000, n_schools=80, seed=0):
    rng = np.random.default_rng(seed)
    school = rng.integers(0, n_schools, n)
    ses = rng.normal(0, 0.8, n)
    math = 50 + 10 * rng.normal(size=n) + 3 * ses
    logit = 0.9 * ses + 0.05 * (math - 50) + rng.normal(0, 1, n)
    attend = np.where(logit > 0, "Yes", "No").astype(object)
    attend[rng.random(n) < 0.1] = "Unit non-response"
    ses_col = ses.round(4)
    ses_col[rng.random(n) < 0.12] = -8  # numeric reserve code for a continuous variable
    expect = rng.choice(EXPECT, n).astype(object)
    expect[rng.random(n) < 0.08] = "Unit non-response"
    sex = rng.choice(["Male", "Female"], n).astype(object)
    sex[rng.random(n) < 0.01] = "Missing"
    frame = pd.DataFrame({
        "STU_ID": np.arange(10001, 10001 + n),
        "X1SES": ses_col,
        "X1TXMTSCOR": math.round(3),
        "X1STUEDEXPCT": expect,
        "X1SEX": sex,
        "X1RACE": rng.choice(["White, non-Hispanic", "Black/African-American, non-Hispanic"], n),
        "X4EVRATNDCLG": attend,
        "X1SCHOOLCLI": (school * 0.01).round(2),
        "X1COUPERTEA": (school * 0.02).round(2),
        "X1COUPERCOU": 0.0, "X1COUPERPRI": 0.0,
        "X1CONTROL": np.where(school % 2, "Public", "Catholic or other private"),
        "X1LOCALE": "City", "X1REGION": "South",
        "W1STUDENT": rng.random(n) * 100,
    })
    return frame


def spec_for(names=("X1SES", "X1TXMTSCOR", "X1STUEDEXPCT", "X1SEX")):
    return {
        "outcome": {"name": "X4EVRATNDCLG", "label": "attended", "wave": "update_panel", "type": "binary"},
        "task": "binary_classification",
        "predictors": [{"name": n, "rationale": "test"} for n in names],
        "subgroups": ["X1SEX", "X1RACE"],
    }


def test_sentinels_become_nan_before_anything(reg):
    raw = make_raw()
    clean, counts = recode_sentinels(raw, reg)
    assert clean["X1SES"].isna().sum() == (raw["X1SES"] == -8).sum() > 0
    assert clean["X4EVRATNDCLG"].isna().sum() == (raw["X4EVRATNDCLG"] == "Unit non-response").sum()
    assert counts["X1STUEDEXPCT"] == (raw["X1STUEDEXPCT"] == "Unit non-response").sum()
    assert "W1STUDENT" not in counts and not clean["X1TXMTSCOR"].isna().any()


def test_outcome_mapping_is_explicit(reg, layout):
    frame = pd.DataFrame({"X4EVRATNDCLG": ["Yes", "No", None, "Yes"]})
    y = build_outcome(frame, reg, layout, "X4EVRATNDCLG", "binary_classification")
    assert y.tolist()[:2] == [1.0, 0.0] and np.isnan(y.iloc[2])
    with pytest.raises(DataError, match="X4EVRATNDCLG"):
        build_outcome(pd.DataFrame({"X4EVRATNDCLG": ["Yes", "Maybe"]}), reg, layout, "X4EVRATNDCLG",
                      "binary_classification")


def test_derived_outcome(reg, layout):
    frame = pd.DataFrame({"X4HSCOMPSTAT": ["Diploma", "No HS credential",
                                           "GED, other HS equivalency, or certificate of attendance", None]})
    y = build_outcome(frame, reg, layout, "dropout_derived", "binary_classification")
    assert y.tolist()[:3] == [0.0, 1.0, 0.0] and np.isnan(y.iloc[3])


def test_prepare_end_to_end_protocol(reg, layout):
    raw = make_raw()
    out = prepare(raw, spec_for(), reg, layout, Protocol(seed=42))
    rep = out.report
    n_valid = (raw["X4EVRATNDCLG"] != "Unit non-response").sum()
    # sentinel outcomes are dropped, never imputed
    assert rep["analytic_n"] == n_valid == len(out.train_y) + len(out.test_y)
    assert set(out.train_y.unique()) == {0.0, 1.0}
    # no missing values remain, the outcome never reaches the features, weights never selected
    assert not out.train_X.isna().any().any() and not out.test_X.isna().any().any()
    assert not any(c.startswith(("X4EVRATNDCLG", "W1")) for c in out.train_X.columns)
    # zero school overlap, about 20% test
    assert rep["split"]["group_overlap"] == 0
    # the test rows' clusters are written for the cluster bootstrap, none of them a training cluster
    assert len(out.test_groups) == rep["test_n"] and not set(out.test_groups) & set(out.train_groups)
    assert rep["split"]["clustered"] and rep["split"]["test_clusters"] == out.test_groups.nunique() > 1
    assert 0.15 < rep["test_n"] / rep["analytic_n"] < 0.25
    assert rep["validation_passed"], [c for c in rep["checks"] if not c["passed"]]
    # protected snapshot keeps the original labels, test rows only
    assert len(out.test_protected) == rep["test_n"]
    assert set(out.test_protected["X1SEX"].dropna()) <= {"Male", "Female"}
    # per-variable protocol
    assert rep["missingness"]["X1SES"]["method"] == "iterative_imputer"
    assert rep["missingness"]["X1STUEDEXPCT"]["method"] == "missing_category"
    assert rep["missingness"]["X1SEX"]["method"] == "mode"
    assert rep["missingness"]["X1TXMTSCOR"]["method"] == "none (complete)"


def test_split_happens_before_fitting_anything(reg, layout):
    raw = make_raw()
    out = prepare(raw, spec_for(), reg, layout, Protocol(seed=42))
    # rebuild which raw rows were in training: the imputer must reproduce training-only statistics
    clean, _ = recode_sentinels(raw, reg)
    valid = clean[clean["X4EVRATNDCLG"].notna()].reset_index(drop=True)
    groups, _ = reconstruct_schools(valid, reg.grouping["columns"])
    train_groups = set(out.train_groups)
    train_rows = valid[groups.isin(train_groups)]
    test_rows = valid[~groups.isin(train_groups)]
    assert len(train_rows) == out.report["train_n"] and len(test_rows) == out.report["test_n"]
    # a category seen only in test rows never becomes a column
    raw2 = raw.copy()
    ids = raw2.index[raw2["X4EVRATNDCLG"] != "Unit non-response"]
    test_ids = ids[~groups.isin(train_groups).to_numpy()]
    raw2.loc[test_ids[:5], "X1STUEDEXPCT"] = "Start a Master's degree"
    out2 = prepare(raw2, spec_for(), reg, layout, Protocol(seed=42))
    assert not any("Start_a_Master" in c for c in out2.train_X.columns)
    # extreme values in test rows do not move the training statistics (medians, imputations)
    raw3 = raw.copy()
    raw3.loc[test_ids, "X1TXMTSCOR"] = 1e6
    out3 = prepare(raw3, spec_for(), reg, layout, Protocol(seed=42))
    pd.testing.assert_frame_equal(out3.train_X, out.train_X)


def test_imputer_is_fitted_on_training_rows_only():
    train = pd.DataFrame({"a": [1.0, 2.0, 3.0] * 30 + [np.nan] * 2, "c": ["x", "y", "x"] * 30 + [None] * 2})
    imp, _ = fit_imputer(train, {"a": "continuous", "c": "categorical"}, Protocol())
    test = pd.DataFrame({"a": [np.nan, 100.0], "c": [None, "z"]})
    out = imp.transform(test)
    assert out["a"].tolist() == [2.0, 100.0] and out["c"].tolist() == ["x", "z"]
    assert imp.methods == {"a": "median", "c": "mode"}


def test_high_missingness_uses_iterative_and_missing_category():
    rng = np.random.default_rng(1)
    a = rng.normal(size=200)
    b = a + rng.normal(0, 0.1, 200)
    b[:60] = np.nan  # 30%
    c = np.array(["u", "v"] * 100, dtype=object)
    c[:30] = None
    train = pd.DataFrame({"a": a, "b": b, "c": c})
    imp, notes = fit_imputer(train, {"a": "continuous", "b": "continuous", "c": "categorical"}, Protocol())
    out = imp.transform(train)
    assert imp.methods["b"].startswith("iterative_imputer") and "flagged" in imp.methods["b"]
    assert any("b is 30.0%" in n for n in notes)
    assert np.corrcoef(out["a"][:60], out["b"][:60])[0, 1] > 0.9  # imputed from a, not a constant
    assert (out["c"] == MISSING_CATEGORY).sum() == 30


def test_too_few_cases_abort(reg, layout):
    raw = make_raw(n=900)
    with pytest.raises(DataError, match="fewer than the floor of 1000") as refused:
        prepare(raw, spec_for(), reg, layout, Protocol())
    message = str(refused.value)
    assert "engineer.min_analytic_n = 1000" in message and "critic.abort_below_n" in message
    n = int(message.split("only ")[1].split(" rows")[0])
    assert f"min_analytic_n: {n}\n" in message and f"abort_below_n: {n}\n" in message


def test_missing_column_is_named(reg, layout):
    raw = make_raw().drop(columns=["X1TXMTSCOR"])
    with pytest.raises(DataError, match="X1TXMTSCOR"):
        prepare(raw, spec_for(), reg, layout, Protocol())


def test_cardinality_guard(reg, layout):
    raw = make_raw()
    raw["X1STUEDEXPCT"] = [f"level {i}" for i in range(len(raw))]
    with pytest.raises(DataError, match="cardinality"):
        prepare(raw, spec_for(), reg, layout, Protocol())


def test_school_reconstruction_counts_clusters():
    frame = pd.DataFrame({"a": [1, 1, 2, 2, None, None], "b": ["x", "x", "x", "y", "y", "y"]})
    ids, info = reconstruct_schools(frame, ["a", "b"], min_clusters=2)
    assert info["n_clusters"] == 4 and info["status"] == "success"
    assert ids.iloc[0] == ids.iloc[1] and ids.iloc[4] == ids.iloc[5]


def test_a_column_identical_to_an_earlier_one_on_training_rows_is_found_and_named():
    import pandas as pd

    from edm_ars.data.impute import duplicated_columns

    frame = pd.DataFrame({"a__Missing": [1.0, 0.0, 1.0], "x": [0.5, 0.2, 0.1], "b__Missing": [1.0, 0.0, 1.0],
                          "c": [0.0, 1.0, 1.0]})
    assert duplicated_columns(frame) == {"b__Missing": "a__Missing"}
    assert duplicated_columns(frame[["x", "c"]]) == {}
