"""Tests of the planted, confounded treatment of the synthetic HSLS:09 generator (S1MTUTOR -> X2TXMSCR,
edm_ars.data.datasets.synthetic_treatment)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

from edm_ars.data.datasets import synthetic
from edm_ars.data.datasets.synthetic import generate

ROOT = Path(__file__).resolve().parents[2]
NEW = ("S1MTUTOR", "X2TXMSCR")
SMALL = {"n_students": 1500, "n_schools": 60}


@pytest.fixture(scope="module")
def generated(reg, layout):
    return generate(reg, layout, n_students=6000, n_schools=240, seed=11)


def _observed(df: pd.DataFrame) -> pd.Series:
    return df["S1MTUTOR"].isin(["Yes", "No"]) & (df["X2TXMSCR"] >= 0)


def test_other_columns_unchanged(reg, layout, monkeypatch):
    """Every column but the two new ones, and the row order, are what the generator makes without the treatment."""
    with_treatment, dgp = generate(reg, layout, seed=5, **SMALL)
    monkeypatch.setattr(synthetic, "PLANT_TREATMENT", False)
    before = dataclasses.replace(reg, tier1={k: v for k, v in reg.tier1.items() if k not in NEW})
    without, dgp0 = generate(before, layout, seed=5, **SMALL)
    assert set(with_treatment.columns) - set(without.columns) == set(NEW)
    pd.testing.assert_frame_equal(with_treatment.drop(columns=list(NEW)), without)
    assert dgp0["treatments"] == {} and set(dgp["treatments"]) == {"S1MTUTOR"}
    assert {k: v for k, v in dgp.items() if k != "treatments"} == {k: v for k, v in dgp0.items() if k != "treatments"}
    # the new columns sit at their place in the layout, like every other column
    cols = list(with_treatment.columns)
    assert cols.index("X2TXMSCR") < cols.index("X2TXMTSCOR") < cols.index("S1MTUTOR")


def test_registry_without_the_new_variables_is_refused_only_when_planting(reg, layout, monkeypatch):
    before = dataclasses.replace(reg, tier1={k: v for k, v in reg.tier1.items() if k not in NEW})
    generate(before, layout, **SMALL)  # planting adds columns the registry need not list
    monkeypatch.setattr(synthetic, "PLANT_TREATMENT", False)
    with pytest.raises(RuntimeError, match="S1MTUTOR"):
        generate(reg, layout, **SMALL)


def test_dgp_entry(generated):
    df, dgp = generated
    jsonschema.validate(dgp, json.loads((ROOT / "scripts/edm_ars/schemas/dgp.json").read_text()))
    t = dgp["treatments"]["S1MTUTOR"]
    assert t["outcome"] == "X2TXMSCR" and t["treated_value"] == "Yes" and t["control_value"] == "No"
    assert t["effect"] == {"base": 2.5, "group": {"attribute": "X1SEX", "group": "Female", "extra": 3.0}}
    assert t["group_effects"] == {"Male": 2.5, "Female": 5.5}
    assert set(t["confounders"]) == {"X1SES", "X1RACE", "X1LOCALE", "X1SEX"}
    assert t["propensity"]["coefficients"]["X1SES"] > 0
    female = (df["X1SEX"] == "Female").mean()  # 0.03% of students have no recorded sex
    assert t["ate"] == pytest.approx(2.5 + 3.0 * female, abs=0.01)
    obs = _observed(df)
    assert t["ate_observed"] == pytest.approx(2.5 + 3.0 * (df.loc[obs, "X1SEX"] == "Female").mean(), abs=0.01)
    assert t["n_observed"] == int(obs.sum())
    assert 0.02 < t["propensity"]["min"] and t["propensity"]["max"] < 0.92


def test_uptake_missingness_and_scale(generated):
    df, dgp = generated
    s, y = df["S1MTUTOR"], df["X2TXMSCR"]
    assert set(s.unique()) == {"Yes", "No", "Unit non-response", "Missing"}
    assert 0.25 <= (s[s.isin(["Yes", "No"])] == "Yes").mean() <= 0.31
    # S1MTUTOR: -8 exactly for base-year non-participants (as the other S1 items), -9 for 2% at random
    bynp = df["X1SES"] == -8
    assert ((s == "Unit non-response") == bynp).all()
    assert (s == "Missing").mean() == pytest.approx(0.02, abs=0.001)
    # X2TXMSCR: missing (-8) exactly where X2TXMTSCOR is, else on the number-right scale
    assert ((y == -8) == (df["X2TXMTSCOR"] == -8)).all() and set(y[y < 0].unique()) == {-8.0}
    valid = y[y >= 0]
    assert valid.between(0, 118).all() and 35 < valid.mean() < 55 and (valid.round(4) == valid).all()
    # the number-right score follows the theta score (1.4 points per point) with a little noise besides the effect
    both = (y >= 0) & (s == "No")
    slope = np.polyfit(df.loc[both, "X2TXMTSCOR"], y[both], 1)[0]
    assert slope == pytest.approx(1.4, abs=0.02)


def test_confounded_naive_is_biased_adjusted_recovers(generated):
    """SES raises uptake and the outcome: the naive difference overstates the planted effect, while adjusting for the
    recorded confounders (linear in X1SES, indicators of the others) recovers it."""
    df, dgp = generated
    t = dgp["treatments"]["S1MTUTOR"]
    d = df[_observed(df)]
    treated = (d["S1MTUTOR"] == "Yes").astype(float)
    y = d["X2TXMSCR"].to_numpy()
    naive = y[treated == 1].mean() - y[treated == 0].mean()
    assert naive > t["ate_observed"] + 2.5
    X = pd.concat([treated.rename("t"), d["X1SES"],
                   pd.get_dummies(d[["X1RACE", "X1LOCALE", "X1SEX"]].astype(str), drop_first=True, dtype=float)],
                  axis=1)
    X.insert(0, "const", 1.0)
    beta, *_ = np.linalg.lstsq(X.to_numpy(dtype=float), y, rcond=None)
    assert beta[1] == pytest.approx(t["ate_observed"], abs=0.6)
    assert (d.loc[treated == 1, "X1SES"].mean() - d.loc[treated == 0, "X1SES"].mean()) > 0.3
