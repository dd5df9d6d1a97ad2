"""A regression's predictions are kept within the observed range of its training outcome: every family's, the
baselines' and stacking's, on test rows, in the out-of-fold predictions and in the evaluation record (issue 33: a 1-10
score with many pupils at the ceiling was modelled as unbounded, with predictions above 10)."""

import numpy as np
import pandas as pd
import pytest

from edm_ars.analysis.baselines import fit_baselines
from edm_ars.analysis.baselines import predict as baseline_predict
from edm_ars.analysis.models import (
    BINARY,
    FAMILIES,
    fit,
    fit_stacking,
    outcome_range,
    predict,
    score,
    tune,
    within_range,
)
from edm_ars.core.errors import FitDiverged
from edm_ars.jobs.analysis.evaluate import _kept_in_range

REGRESSION = "regression"


def bounded_data(n=900, seed=0):
    """A 1-10 score, linear in x0 and x1, with about a fifth of the pupils at the ceiling; and test rows far out on
    x0, where an unbounded linear model predicts above 10 and below 1."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=[f"x{i}" for i in range(4)])
    y = np.clip(np.round(7.5 + 2.0 * X["x0"] + 0.8 * X["x1"] + rng.normal(0, 1, n)), 1, 10).to_numpy()
    Xt = pd.DataFrame(rng.normal(size=(200, 4)), columns=X.columns)
    Xt["x0"] = np.where(np.arange(200) % 2, 4.0, -4.0)
    return X, y, rng.integers(0, 60, n), Xt


def test_the_generated_score_has_a_ceiling_effect():
    _, y, _, _ = bounded_data()
    assert y.min() == 1 and y.max() == 10 and 0.15 < np.mean(y == 10) < 0.35


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_keeps_its_predictions_and_oof_within_the_training_range(name):
    X, y, groups, Xt = bounded_data()
    tuned = tune(name, REGRESSION, X, y, groups, seed=1, n_folds=3, n_candidates=2)
    assert outcome_range(tuned["model"]) == (1.0, 10.0)
    pred = predict(tuned["model"], REGRESSION, Xt)
    assert pred.min() >= 1 and pred.max() <= 10
    assert tuned["oof"].min() >= 1 and tuned["oof"].max() <= 10
    raw = predict(tuned["model"], REGRESSION, Xt, clip=False)
    clipped, n = within_range(raw, outcome_range(tuned["model"]))
    assert np.array_equal(clipped, pred) and n == int(np.sum((raw < 1) | (raw > 10)))
    if name in ("logistic", "elastic_net"):  # a linear model extrapolates: the clipping is not vacuous
        assert n > 0 and raw.max() > 10 and raw.min() < 1


def test_baselines_and_stacking_are_kept_within_the_range_too():
    X, y, groups, Xt = bounded_data()
    models, _ = fit_baselines(REGRESSION, X, y, {c: c for c in X.columns})
    for name, model in models.items():
        pred = baseline_predict(model, REGRESSION, Xt)
        assert pred.min() >= 1 and pred.max() <= 10, name
    assert baseline_predict(models["baseline_core"], REGRESSION, Xt, clip=False).max() > 10
    fits = {n: tune(n, REGRESSION, X, y, groups, seed=1, n_folds=3, n_candidates=2) for n in ("logistic", "random_forest")}
    stack = fit_stacking(REGRESSION, {n: f["oof"] for n, f in fits.items()}, y, groups, seed=1, n_folds=3)["model"]
    base = {n: predict(f["model"], REGRESSION, Xt) for n, f in fits.items()}
    pred = stack.predict_from_base(base)
    assert outcome_range(stack) == (1.0, 10.0) and pred.min() >= 1 and pred.max() <= 10


def test_the_evaluation_records_how_many_test_predictions_were_clipped():
    X, y, _, Xt = bounded_data()
    model = fit("logistic", REGRESSION, 1, {}, X, y)
    raw = predict(model, REGRESSION, Xt, clip=False)
    record: dict = {}
    pred = _kept_in_range(model, raw, record)
    assert record["prediction_range"] == {"low": 1.0, "high": 10.0,
                                          "n_clipped": int(np.sum((raw < 1) | (raw > 10)))}
    assert record["prediction_range"]["n_clipped"] > 0 and pred.min() == 1 and pred.max() == 10


def test_a_diverged_fit_is_still_reported_and_a_binary_model_is_not_touched():
    clipped, n = within_range(np.array([0.0, 12.0, np.inf, np.nan]), (1.0, 10.0))
    assert n == 2 and clipped[:2].tolist() == [1.0, 10.0] and np.isinf(clipped[2]) and np.isnan(clipped[3])
    with pytest.raises(FitDiverged):
        score(REGRESSION, np.ones(4), clipped)
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    yb = (X["a"] + rng.normal(size=300) > 0).astype(float).to_numpy()
    model = fit("logistic", BINARY, 1, {}, X, yb)
    assert outcome_range(model) is None
    assert np.array_equal(predict(model, BINARY, X), model.predict_proba(X)[:, 1])
    record: dict = {}
    _kept_in_range(model, predict(model, BINARY, X), record)
    assert record == {}
