"""Analysis phases record the conditions of the data they meet and go on; a bug stops them with its traceback."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from edm_ars.errors import AnalysisLimitation, SingleClass
from edm_ars.models import BINARY, tune
from edm_ars.phases import recorded


def students(n=300, seed=0, one_class=False):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=["a", "b", "c", "d"])
    y = np.zeros(n) if one_class else (X["a"] - X["b"] + rng.logistic(size=n) > 0).astype(float).to_numpy()
    return X, y, rng.integers(0, 30, n)


# ---- (a) a bug stops the phase ----------------------------------------------------------------------------------


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


def test_memory_and_the_conditions_of_the_data_are_what_is_recorded():
    errors = []
    with recorded(errors, "fit", "random_forest"):
        raise MemoryError()
    with recorded(errors, "evaluate", "stacking"):
        raise AnalysisLimitation("stacking needs predictions of ['mlp'], which failed")
    assert [(e["phase"], e["what"], e["type"], e["message"]) for e in errors] == [
        ("fit", "random_forest", "MemoryError", "out of memory"),
        ("evaluate", "stacking", "AnalysisLimitation", "stacking needs predictions of ['mlp'], which failed")]
