"""Analysis phases record the conditions of the data they meet and go on; a bug stops them with its traceback."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

from edm_ars.analysis.explain_phase import explain_models
from edm_ars.analysis.models import BINARY, tune
from edm_ars.analysis.stability import refit
from edm_ars.core.errors import AnalysisLimitation, SingleClass
from edm_ars.core.phases import recorded

SHAP = {"background": 50, "max_samples": 40, "other_samples": 40, "kernel_samples": 5, "timeout_s": 60,
        "stability_samples": 40}


def students(n=300, seed=0, one_class=False):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=["a", "b", "c", "d"])
    y = np.zeros(n) if one_class else (X["a"] - X["b"] + rng.logistic(size=n) > 0).astype(float).to_numpy()
    return X, y, rng.integers(0, 30, n)


def evaluation(models, interpreted):
    return {"task": BINARY, "interpreted_model": interpreted, "above_floor": list(models),
            "models": {m: {"label": m} for m in models}}


def explain(models, tmp_path, **cfg):
    X, _, _ = students()
    files = {name: f"{name}.joblib" for name in models}
    fitted = {f"{name}.joblib": model for name, model in models.items()}
    return explain_models(evaluation(models, interpreted=next(iter(models))), files, fitted.__getitem__, X, X,
                          {c: c for c in X.columns}, {}, SHAP | cfg, 0, tmp_path / "figures")


class Broken:
    """A model with a bug: predicting raises TypeError."""

    def predict_proba(self, X):
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")


# ---- (a) a bug stops the phase ----------------------------------------------------------------------------------


def test_a_bug_in_an_explanation_stops_the_explain_phase(tmp_path):
    with pytest.raises(TypeError, match="unsupported operand"):
        explain({"mlp": Broken()}, tmp_path)


def test_a_bug_in_a_stability_refit_stops_it():
    def data():
        raise TypeError("'NoneType' object is not subscriptable")

    out = {"perturbation": "bootstrap_1", "kind": "bootstrap", "metric": None, "top_features": [], "errors": []}
    with pytest.raises(TypeError, match="not subscriptable"):
        refit(out, "logistic", BINARY, {}, data, np.zeros(3), seed=0, shap=SHAP)
    assert out["errors"] == []


def test_a_bug_in_tuning_stops_the_fit_phase():
    """A wrong argument (here a seed that is not a number) reaches scikit-learn as a ValueError: not recorded."""
    X, y, groups = students()
    errors = []
    with pytest.raises(ValueError), recorded(errors, "fit", "logistic"):
        tune("logistic", BINARY, X, y, groups, seed="zero", n_folds=3)
    assert errors == []


@pytest.mark.parametrize("bug", [TypeError("t"), ValueError("v"), KeyError("k"), AttributeError("a"),
                                 ImportError("no module named shap"), RuntimeError("r"), FileNotFoundError("f")])
def test_recorded_lets_everything_else_through(bug):
    errors = []
    with pytest.raises(type(bug)), recorded(errors, "fairness"):
        raise bug
    assert errors == []


# ---- (b) a condition of the data is recorded, and the phase goes on ---------------------------------------------


def test_an_explainer_that_cannot_take_a_model_is_recorded_and_the_others_are_explained(tmp_path):
    X, y, _ = students()
    # a linear pipeline whose preprocessing adds columns: its SHAP values cannot be mapped back to the inputs
    poly = make_pipeline(PolynomialFeatures(2), LogisticRegression(max_iter=500)).fit(X, y)
    forest = RandomForestClassifier(n_estimators=10, max_depth=3, random_state=0).fit(X, y)
    doc = explain({"logistic": poly, "random_forest": forest}, tmp_path)
    assert [(e["phase"], e["what"], e["type"]) for e in doc["errors"]] == [("explain", "logistic", "ExplainSkipped")]
    assert "changes the number of columns" in doc["skipped"]["logistic"]
    assert doc["by_model"]["random_forest"]["explainer"] == "TreeExplainer"
    assert doc["top_features"] == []  # the interpreted model (logistic) has none


def test_an_explanation_past_its_time_limit_is_recorded_as_a_shap_timeout(tmp_path):
    X, y, _ = students()
    doc = explain({"mlp": LogisticRegression().fit(X, y)}, tmp_path, timeout_s=0)
    [error] = doc["errors"]
    assert error["phase"] == "explain" and error["what"] == "mlp" and error["type"] == "SHAPTimeout"
    assert error["message"].startswith("timeout after") and doc["skipped"]["mlp"] == error["message"]


def test_too_few_schools_for_the_folds_is_recorded_by_the_fit_phase():
    X, y, _ = students()
    errors = []
    with recorded(errors, "fit", "logistic"):
        tune("logistic", BINARY, X, y, np.arange(len(y)) % 2, seed=0, n_folds=3)
    assert errors == [{"phase": "fit", "what": "logistic", "type": "TooFewGroups",
                       "message": "3-fold cross-validation grouped by school needs 3 schools; the training rows "
                                  "have 2"}]


def test_training_rows_of_one_class_are_recorded_by_the_fit_phase():
    X, y, groups = students(one_class=True)
    with pytest.raises(SingleClass, match="one outcome class"):
        tune("random_forest", BINARY, X, y, groups, seed=0, n_folds=3)
    errors = []
    with recorded(errors, "fit", "logistic"):
        tune("logistic", BINARY, X, y, groups, seed=0, n_folds=3)
    assert [e["type"] for e in errors] == ["SingleClass"]


def test_a_perturbed_sample_of_one_class_is_recorded_and_leaves_no_metric():
    X, y, _ = students(one_class=True)
    out = {"perturbation": "bootstrap_1", "kind": "bootstrap", "metric": None, "top_features": [], "errors": []}
    refit(out, "logistic", BINARY, {}, lambda: (X, y, X, {}), np.r_[0.0, 1.0, 0.0], seed=0, shap=SHAP)
    assert out["metric"] is None and out["top_features"] == []
    assert [(e["phase"], e["what"], e["type"]) for e in out["errors"]] == [("stability", "bootstrap_1", "SingleClass")]


def test_memory_and_the_conditions_of_the_data_are_what_is_recorded():
    errors = []
    with recorded(errors, "fit", "random_forest"):
        raise MemoryError()
    with recorded(errors, "evaluate", "stacking"):
        raise AnalysisLimitation("stacking needs predictions of ['mlp'], which failed")
    assert [(e["phase"], e["what"], e["type"], e["message"]) for e in errors] == [
        ("fit", "random_forest", "MemoryError", "out of memory"),
        ("evaluate", "stacking", "AnalysisLimitation", "stacking needs predictions of ['mlp'], which failed")]
