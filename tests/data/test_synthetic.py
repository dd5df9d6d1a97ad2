"""Tests of the synthetic HSLS:09 generator (edm_ars.data.datasets.synthetic)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from edm_ars.data.datasets.synthetic import generate
from edm_ars.data.registry import find_question, is_excluded, is_temporally_valid

ROOT = Path(__file__).resolve().parents[2]
BLACK = "Black/African-American, non-Hispanic"


@pytest.fixture(scope="module")
def generated(reg, layout):
    return generate(reg, layout)


@pytest.fixture(scope="module")
def df(generated):
    return generated[0]


@pytest.fixture(scope="module")
def dgp(generated):
    return generated[1]


def _tier1(reg):
    return {n: v for n, v in reg.tier1.items() if not v.get("derived")}


def _is_missing(reg, s: pd.Series) -> pd.Series:
    if pd.api.types.is_numeric_dtype(s):
        return s.isin(reg.sentinel_codes)
    return s.isin(reg.sentinel_labels)


def _numeric(reg, layout, df, name) -> pd.Series:
    """A column as numbers: values for continuous variables, layout codes for categorical ones;
    reserve codes and missing labels become NaN."""
    s = df[name]
    if pd.api.types.is_numeric_dtype(s):
        return s.where(~s.isin(reg.sentinel_codes)).astype(float)
    inverse = {lab: code for code, lab in layout.codes(name).items() if lab not in reg.sentinel_labels}
    return s.map(inverse).astype(float)


# ---- shape, names, types ---------------------------------------------------------------------


def test_shape_and_columns(reg, layout, df):
    assert len(df) == 23503
    t1 = _tier1(reg)
    assert len(t1) == 118  # 116 from the codebook facts, and S1MTUTOR and X2TXMSCR (the planted treatment)
    assert set(t1) <= set(df.columns)
    assert "dropout_derived" not in df.columns
    assert all(c == "STU_ID" or c in layout.labels for c in df.columns)
    assert df["STU_ID"].is_unique and pd.api.types.is_integer_dtype(df["STU_ID"])
    assert df["STU_ID"].min() >= 10001

    tier2 = [c for c in df.columns if c != "STU_ID" and c not in reg.tier1 and not is_excluded(reg, c)]
    assert len(tier2) >= 24
    assert all(layout.substantive_codes(c) for c in tier2)
    for item in ("S1MPERSON1", "S1MTESTS", "S1MUSECLG", "S1MENJOYING", "S1MWASTE", "S1MBORING"):
        assert item in tier2

    for w in ("W1STUDENT", "W1PARENT", "W2W1STU", "W4W1STU", *(f"W1STUDENT{i:03d}" for i in range(1, 6))):
        assert w in df.columns and is_excluded(reg, w)
        assert pd.api.types.is_float_dtype(df[w]) and (df[w] > 0).all()
    flags = [c for c in df.columns if c.endswith("_IM")]
    assert {"X1SEX_IM", "X1RACE_IM", "X1PAR1EDU_IM", "X1STUEDEX_IM"} <= set(flags)
    assert all(is_excluded(reg, c) for c in flags)
    assert set(df["X1SEX_IM"].unique()) == {"Not Imputed", "Imputed"}
    assert "X5DUALFLG" in df.columns


def test_categoricals_are_text_labels(reg, layout, df):
    for name, rec in _tier1(reg).items():
        if rec["type"] == "continuous":
            continue
        s = df[name]
        assert pd.api.types.is_string_dtype(s), name
        allowed = set(layout.codes(name).values()) | set(reg.sentinel_labels)
        assert set(s.unique()) <= allowed, (name, set(s.unique()) - allowed)
    assert set(df["X1SEX"].unique()) <= {"Male", "Female", "Missing"}
    assert set(df["X4EVRATNDCLG"].unique()) == {"Yes", "No", "Unit non-response"}
    assert "Complete a Bachelor's degree" in set(df["X1STUEDEXPCT"])
    assert (df["X1ASIAN"] == "Data suppressed").all()
    assert (df["X3TCREDAP"] == "Data suppressed").all()


def test_continuous_are_numeric_with_reserve_codes(reg, df):
    for name, rec in _tier1(reg).items():
        if rec["type"] != "continuous":
            continue
        s = df[name]
        assert pd.api.types.is_float_dtype(s), name
        miss = s.isin(reg.sentinel_codes)
        lo, hi = rec["range"]
        valid = s[~miss]
        assert valid.between(lo, hi).all(), name
        assert (s[s < lo].isin(reg.sentinel_codes)).all(), name
    assert {-7.0, -8.0} <= set(df["X4HS2PSMOS"][df["X4HS2PSMOS"] < 0].unique()) <= {-7.0, -8.0, -9.0}
    ses = df["X1SES"][df["X1SES"] > -5]
    assert abs(ses.mean()) < 0.2 and 0.6 < ses.std() < 0.9
    gpa = df["X3TGPAACAD"][df["X3TGPAACAD"] >= 0]
    assert 2.5 < gpa.mean() < 3.1


# ---- missingness -----------------------------------------------------------------------------


def test_missing_rates_match_registry(reg, df):
    for name, rec in _tier1(reg).items():
        rate = 100 * _is_missing(reg, df[name]).mean()
        assert abs(rate - rec["pct_missing"]) <= 1.5, (name, rate, rec["pct_missing"])


def test_shared_nonresponse_and_skips(reg, df):
    u = df["X4EVRATNDCLG"] == "Unit non-response"
    assert 0.25 < u.mean() < 0.275
    for name in (n for n in _tier1(reg) if n.startswith("X4")):
        s = df[name]
        if s.eq("Data suppressed").all():
            continue
        expected = -8 if pd.api.types.is_numeric_dtype(s) else "Unit non-response"
        assert (s[u] == expected).all(), name
    # 2016 non-respondents are non-respondents of the postsecondary records as well
    assert (df.loc[u, "X5STEMCRED"] == "Nonrespondent").all()
    assert (df.loc[u, "X5STEM1ATT"] == -8).all()

    # one set of parent-questionnaire non-respondents
    pnr = df["X1PARRESP"] == "Unit non-response"
    assert 0.27 < pnr.mean() < 0.30
    for name in ("X1PAREDU", "X1MOMEDU", "X1DADEDU", "X1FAMINCOME", "X1HHNUMBER", "X1POVERTY185",
                 "X1PAREDEXPCT", "X1PAR1EDU"):
        assert (df.loc[pnr, name] == "Unit non-response").all(), name
        assert (df.loc[~pnr, name] != "Unit non-response").all(), name

    # postsecondary variables are legitimate skips for respondents who never attended college
    never = df["X4EVRATNDCLG"] == "No"
    for name in ("X4PS1SECTOR", "X4REFLEVEL", "X4RFDGMJSTEM", "X4ATPRLVLA", "X5STEMCRED"):
        assert (df.loc[never, name] == "Item legitimate skip/NA").all(), name
    for name in ("X4HS2PSMOS", "X5STEM1ATT", "X5STEM1GPA"):
        assert (df.loc[never, name] == -7).all(), name
    attended = df["X4EVRATNDCLG"] == "Yes"
    assert (df.loc[attended, "X4PS1LEVEL"] != "Item legitimate skip/NA").all()


def test_school_fingerprint(reg, df):
    groups = df.groupby(reg.grouping["columns"], dropna=False).size()
    assert abs(len(groups) - 944) <= 0.02 * 944
    assert groups.min() >= 5 and groups.max() <= 60
    assert 0.2 < (df["X1SCHOOLCLI"] < -5).mean() < 0.23


# ---- determinism and the dgp ------------------------------------------------------------------


def test_deterministic(reg, layout):
    """The same seed gives the same rows and record, another seed other rows (with about a sixteenth of the default's
    students and schools: the same code paths)."""
    first, dgp1 = generate(reg, layout, n_students=1500, n_schools=60)
    again, dgp2 = generate(reg, layout, n_students=1500, n_schools=60)
    pd.testing.assert_frame_equal(first, again)
    assert json.dumps(dgp1, sort_keys=True) == json.dumps(dgp2, sort_keys=True)
    other, _ = generate(reg, layout, n_students=1500, n_schools=60, seed=43)
    assert not other.equals(first)


def test_small_sample(reg, layout):
    small, dgp = generate(reg, layout, n_students=1500, n_schools=60, seed=3)
    assert len(small) == 1500 and dgp["n_students"] == 1500
    assert len(small.groupby(reg.grouping["columns"], dropna=False)) >= 57


def test_dgp_schema_and_effects(reg, dgp):
    schema = json.loads((ROOT / "scripts/edm_ars/schemas/dgp.json").read_text())
    jsonschema.validate(dgp, schema)
    json.dumps(dgp)
    assert dgp["seed"] == 42 and dgp["n_students"] == 23503 and dgp["n_schools"] == 944
    for q in reg.questions:
        if q.get("task") == "causal":  # its planted effect: dgp["treatments"] (tests/data/test_synthetic_treatment.py)
            assert dgp["treatments"][q["treatment"]["variable"]]["outcome"] == q["outcome"]
            continue
        out = dgp["outcomes"][q["outcome"]]
        effects = out["effects"]
        assert [e["rank"] for e in effects] == list(range(1, len(effects) + 1))
        std = [abs(e["standardized_effect"]) for e in effects]
        assert min(std[:5]) >= 0.35 and max(std[5:], default=0) <= 0.1
        assert {e["variable"] for e in effects} <= set(q["predictors"])
        outcome = "X4HSCOMPSTAT" if q["outcome"] == "dropout_derived" else q["outcome"]
        assert all(is_temporally_valid(reg, e["variable"], outcome) for e in effects)
        assert out["link"] in ("identity", "logistic")
    assert dgp["disparity"]["attribute"] == "X1RACE" and dgp["disparity"]["group"] == BLACK
    assert dgp["leakage_trap"]["variable"] == "X4EVRAPPCLG"


def test_base_rates(df):
    resp = df["X4EVRATNDCLG"] != "Unit non-response"
    assert 0.70 <= (df.loc[resp, "X4EVRATNDCLG"] == "Yes").mean() <= 0.76
    assert 0.05 <= (df.loc[resp, "X4HSCOMPSTAT"] == "No HS credential").mean() <= 0.08
    major = df["X4RFDGMJSTEM"].isin(["Not STEM", "STEM (if first or second/double major is STEM)"])
    assert 0.25 <= (df.loc[major, "X4RFDGMJSTEM"] != "Not STEM").mean() <= 0.35
    assert 0.11 <= (df["X1RACE"] == BLACK).mean() <= 0.15


def _attendance_data(reg, layout, df):
    q = find_question(reg, "college_attendance")
    y = df["X4EVRATNDCLG"].map({"Yes": 1, "No": 0})
    X = pd.DataFrame({p: _numeric(reg, layout, df, p) for p in q["predictors"]})
    return X, y


def test_planted_effects_recoverable(reg, layout, df, dgp):
    X, y = _attendance_data(reg, layout, df)
    cc = y.notna() & X.notna().all(axis=1)
    assert cc.sum() > 3000
    Xs = (X[cc] - X[cc].mean()) / X[cc].std()
    model = LogisticRegression(C=1e4, max_iter=5000).fit(Xs, y[cc].astype(int))
    coef = pd.Series(np.abs(model.coef_[0]), index=X.columns).sort_values(ascending=False)
    true_top = [e["variable"] for e in dgp["outcomes"]["X4EVRATNDCLG"]["effects"][:5]]
    assert len(set(coef.index[:5]) & set(true_top)) >= 4


def test_planted_disparity(reg, layout, df):
    X, y = _attendance_data(reg, layout, df)
    ok = y.notna()
    X, y = X[ok], y[ok].astype(int)
    indicators = X.isna().astype(float).add_suffix("_missing")
    X = X.fillna(X.mean())
    X = pd.concat([(X - X.mean()) / X.std(), indicators], axis=1)
    train = np.random.default_rng(0).random(len(X)) < 0.5
    model = LogisticRegression(max_iter=5000).fit(X[train], y[train])
    p = model.predict_proba(X[~train])[:, 1]
    yt = y[~train].to_numpy()
    grp = (df.loc[X.index, "X1RACE"] == BLACK).to_numpy()[~train]
    auc_all = roc_auc_score(yt, p)
    gap = roc_auc_score(yt[~grp], p[~grp]) - roc_auc_score(yt[grp], p[grp])
    assert 0.75 <= auc_all <= 0.93
    assert gap >= 0.04


def test_leakage_trap(df):
    a, b = df["X4EVRATNDCLG"], df["X4EVRAPPCLG"]
    assert ((a == "Unit non-response") == (b == "Unit non-response")).all()
    both = a.isin(["Yes", "No"]) & b.isin(["Applied or registered", "Never applied or registered"])
    agree = ((a[both] == "Yes") == (b[both] == "Applied or registered")).mean()
    assert agree >= 0.95


def test_item_bank_consistent_with_composites(reg, layout, df):
    eff = _numeric(reg, layout, df, "X1MTHEFF")
    tests = _numeric(reg, layout, df, "S1MTESTS")  # 1 = Strongly agree
    interest = _numeric(reg, layout, df, "X1MTHINT")
    waste = _numeric(reg, layout, df, "S1MWASTE")  # reverse-coded item
    assert eff.corr(tests) < -0.4
    assert interest.corr(waste) > 0.4
