"""Validity against known truth: on the synthetic data the analysis recovers the planted structure."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from edm_ars.analysis.evaluation import evaluate_models, flags_for, select_best
from edm_ars.analysis.explain import shap_values, top_features
from edm_ars.analysis.fairness import audit, disparity_flagged
from edm_ars.analysis.models import BINARY, predict, tune
from edm_ars.data.datasets.synthetic import generate
from edm_ars.data.engineer import prepare
from edm_ars.data.layout import load_layout
from edm_ars.data.protocol import Protocol
from edm_ars.data.registry import load_registry
from edm_ars.formulate.spec import offline_spec, validate_spec

ROOT = Path(__file__).resolve().parents[2]
# the whole analysis on a generated data set of full size
pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def world():
    reg = load_registry(ROOT / "registry" / "hsls09")
    layout = load_layout(ROOT / "registry" / "hsls09" / "Layout_STUDENT.txt")
    frame, dgp = generate(reg, layout, seed=42)
    spec = offline_spec(reg, prompt=None, question_id="college_attendance", round_=0)
    return reg, layout, frame, dgp, spec


@pytest.fixture(scope="module")
def fitted(world):
    reg, layout, frame, dgp, spec = world
    data = prepare(frame, spec, reg, layout, Protocol(seed=42))
    groups = data.train_groups.to_numpy()
    preds, fits = {}, {}
    for name in ("logistic", "xgboost"):
        fits[name] = tune(name, BINARY, data.train_X, data.train_y, groups, seed=42, n_folds=3, n_candidates=3)
        preds[name] = predict(fits[name]["model"], BINARY, data.test_X)
    models, dist = evaluate_models(BINARY, data.test_y.to_numpy(), preds, n_resamples=300, seed=42)
    best, _, _ = select_best(models, "auc", dist)
    return data, fits, preds, models, best


def test_top_shap_features_recover_the_true_strongest_effects(world, fitted):
    _, _, _, dgp, spec = world
    data, fits, _, _, best = fitted
    truth = sorted(dgp["outcomes"][spec["outcome"]["name"]]["effects"], key=lambda e: e["rank"])
    strongest = {e["variable"] for e in truth[:5]}
    values, rows, _ = shap_values(fits[best]["model"], best, BINARY, data.train_X.sample(200, random_state=0),
                                  data.test_X, max_samples=1500, seed=42)
    top5 = {t["feature"] for t in top_features(values, rows, data.report["feature_sources"], k=5)}
    assert len(top5 & strongest) >= 4, (best, top5, strongest)


def test_planted_disparity_is_flagged(world, fitted):
    _, _, _, dgp, _ = world
    data, _, preds, _, best = fitted
    attribute, group = dgp["disparity"]["attribute"], dgp["disparity"]["group"]
    result = audit(BINARY, data.test_y.to_numpy(), preds[best], data.test_protected, [attribute], n_resamples=200,
                   seed=42)
    assert disparity_flagged(result, attribute, group), result["flags"]


def test_leakage_trap_is_stopped_or_trips_the_flag(world):
    reg, layout, frame, dgp, spec = world
    trap = dgp["leakage_trap"]["variable"]
    leaky = copy.deepcopy(spec)
    leaky["predictors"].append({"name": trap, "rationale": "forced in to test the leakage flag"})
    violations = validate_spec(leaky, reg)
    assert any(trap in v and "same wave" in v for v in violations)
    # forced past the gate, it trips the AUC > 0.95 flag
    data = prepare(frame, leaky, reg, layout, Protocol(seed=42))
    fit = tune("logistic", BINARY, data.train_X, data.train_y, data.train_groups.to_numpy(), seed=42, n_folds=3,
               n_candidates=2)
    pred = predict(fit["model"], BINARY, data.test_X)
    models, _ = evaluate_models(BINARY, data.test_y.to_numpy(), {"logistic": pred}, n_resamples=100, seed=42)
    assert models["logistic"]["metrics"]["auc"] > 0.95
    assert any(f.startswith("possible_leakage") for f in flags_for(BINARY, models))


def test_honest_models_stay_below_the_leakage_flag(fitted):
    _, _, _, models, _ = fitted
    assert all(0.6 < m["metrics"]["auc"] < 0.95 for m in models.values())
    assert not np.isnan([m["metrics"]["brier"] for m in models.values()]).any()
