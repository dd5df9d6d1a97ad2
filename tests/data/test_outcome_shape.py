"""A continuous outcome's shape in the training rows (edm_ars.data.outcome_shape): range, discreteness, floor and
ceiling shares, recorded in the data report by prepare."""

import json

import numpy as np
import pytest
from test_engineer import make_raw

from edm_ars.core.artifacts import validate
from edm_ars.core.errors import DataError
from edm_ars.data.engineer import prepare
from edm_ars.data.outcome_shape import is_bounded, outcome_shape
from edm_ars.data.protocol import Protocol


def bounded_score(n, seed=0):
    """A 1-10 attainment score with about a fifth of the pupils at the ceiling."""
    rng = np.random.default_rng(seed)
    return np.clip(np.round(rng.normal(7.5, 2.2, n)), 1, 10)


def test_a_bounded_discrete_score_records_its_range_and_the_shares_at_its_bounds():
    y = np.array([1, 2, 5, 10, 10, 10, 7, 10, 3, 1], dtype=float)
    shape = outcome_shape(y, "score")
    assert (shape["low"], shape["high"], shape["n_train"], shape["n_distinct"]) == (1.0, 10.0, 10, 6)
    assert shape["integer_valued"] and shape["discrete"]
    assert (shape["n_at_floor"], shape["n_at_ceiling"]) == (2, 4)
    assert (shape["share_at_floor"], shape["share_at_ceiling"]) == (0.2, 0.4)
    assert shape["floor_effect"] and shape["ceiling_effect"] and is_bounded(shape)


def test_a_continuous_score_is_neither_discrete_nor_bounded():
    y = np.random.default_rng(1).normal(50, 10, 2000)
    shape = outcome_shape(y, "score")
    assert not shape["integer_valued"] and not shape["discrete"]
    assert shape["n_at_ceiling"] == 1 and not shape["ceiling_effect"] and not shape["floor_effect"]
    assert not is_bounded(shape) and not is_bounded(None)


def test_many_integer_values_are_not_discrete_and_no_finite_value_is_an_error():
    assert not outcome_shape(np.arange(200.0), "count")["discrete"]
    with pytest.raises(DataError, match="outcome score: the training rows hold no finite outcome value"):
        outcome_shape(np.array([np.nan, np.nan]), "score")


def test_prepare_records_the_training_rows_shape_of_a_regression_outcome(reg, layout):
    raw = make_raw()
    raw["X1TXMTSCOR"] = bounded_score(len(raw))
    spec = {"outcome": {"name": "X1TXMTSCOR", "label": "score", "type": "continuous"}, "task": "regression",
            "predictors": [{"name": n, "rationale": "test"} for n in ("X1SES", "X1STUEDEXPCT", "X1SEX")],
            "subgroups": ["X1SEX"]}
    out = prepare(raw, spec, reg, layout, Protocol(seed=42))
    shape = out.report["outcome_shape"]
    y = out.train_y.to_numpy()
    assert shape["n_train"] == len(y) == out.report["train_n"]
    assert (shape["low"], shape["high"]) == (y.min(), y.max()) == (1.0, 10.0)
    assert shape["share_at_ceiling"] == round(float(np.mean(y == 10)), 4) > 0.15 and shape["ceiling_effect"]
    assert shape["discrete"] and shape["n_distinct"] == len(np.unique(y))
    validate(json.loads(json.dumps(out.report, default=float)), "data_report")
    binary = prepare(make_raw(), {**spec, "outcome": {"name": "X4EVRATNDCLG", "label": "attended", "type": "binary"},
                                  "task": "binary_classification",
                                  "predictors": spec["predictors"] + [{"name": "X1TXMTSCOR", "rationale": "t"}]},
                     reg, layout, Protocol(seed=42))
    assert binary.report["outcome_shape"] is None
