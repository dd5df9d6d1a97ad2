"""The paper on a discrete, bounded outcome (data_report.json:outcome_shape) states its range, the shares at its
bounds, that predictions were kept within it and what the rows at a bound mean for R2 and RMSE, every number a macro
from an artifact; a continuous outcome without a bound effect, and a binary outcome, get none of it."""

from __future__ import annotations

import copy
import json

import test_writer as tw

SHAPE = {"low": 1.0, "high": 10.0, "n_train": 14880, "n_distinct": 10, "integer_valued": True, "discrete": True,
         "n_at_floor": 149, "n_at_ceiling": 2827, "share_at_floor": 0.01, "share_at_ceiling": 0.19,
         "floor_effect": False, "ceiling_effect": True, "max_discrete_values": 20, "bound_effect_share": 0.05}


def _bounded(tmp_path, shape=SHAPE, clipped=37):
    rep = copy.deepcopy(tw.data_report(False)) | {"outcome_shape": shape}
    res = copy.deepcopy(tw.results(False))
    res["models"][res["best_model"]]["prediction_range"] = {"low": 1.0, "high": 10.0, "n_clipped": clipped}
    _, out = tw._build(tmp_path, binary=False, passed=True, name="bounded", data_report=rep, results=res)
    numbers = json.loads((out / "numbers.json").read_text())
    return (out / "paper.tex").read_text(), numbers, res["best_model"]


def _values(numbers):
    """numbers.json: macro name -> (printed value, source artifact path)."""
    return {r["macro"].lstrip("\\"): (r["value"], r["source"]) for r in numbers["macros"]}


def test_a_bounded_score_gets_its_range_bounds_clipping_and_metric_caveat(tmp_path):
    tex, numbers, best = _bounded(tmp_path)
    v = _values(numbers)
    assert v["OutcomeLow"] == ("1", "data_report.json:outcome_shape.low")
    assert v["OutcomeHigh"] == ("10", "data_report.json:outcome_shape.high")
    assert v["OutcomeCeilingPct"] == ("19.0\\%", "data_report.json:outcome_shape.share_at_ceiling")
    assert v["OutcomeFloorPct"] == ("1.0\\%", "data_report.json:outcome_shape.share_at_floor")
    assert v["BestNClipped"] == ("37", f"results.json:models.{best}.prediction_range.n_clipped")
    flat = " ".join(tex.split())
    assert ("the training students had \\OutcomeNValues{} integer values from \\OutcomeLow{} to \\OutcomeHigh{}"
            in flat)
    assert "\\OutcomeCeilingPct{} of the training students were at its ceiling of \\OutcomeHigh{}" in flat
    assert "\\BestNClipped{} of the selected model's \\TestN{} test predictions were outside it" in flat
    assert "\\Rsq{} and RMSE partly measure how well a model separates them" in flat


def test_a_continuous_outcome_and_a_binary_one_get_no_bound_sentences(tmp_path):
    shape = SHAPE | {"discrete": False, "integer_valued": False, "n_distinct": 9000, "share_at_ceiling": 0.0001,
                     "ceiling_effect": False}
    tex, numbers, _ = _bounded(tmp_path, shape=shape)
    assert "OutcomeLow" not in _values(numbers) and "kept within this observed range" not in tex
    for binary in (True, False):  # the fixtures' reports have no outcome_shape (a binary one has null)
        _, out = tw._build(tmp_path, binary=binary, passed=True, name=f"plain_{binary}")
        assert "kept within this observed range" not in (out / "paper.tex").read_text()


def test_a_continuous_score_with_a_ceiling_gets_its_range_without_the_stripes(tmp_path):
    shape = SHAPE | {"discrete": False, "integer_valued": False, "n_distinct": 4000}
    tex, numbers, _ = _bounded(tmp_path, shape=shape)
    flat = " ".join(tex.split())
    assert "The outcome ranged from \\OutcomeLow{} to \\OutcomeHigh{} in the training students." in flat
    assert "stripe" not in flat and "OutcomeNValues" not in _values(numbers)
    assert "\\OutcomeCeilingPct{} of the training students were at its ceiling" in flat


def test_no_clipped_prediction_is_said_as_none(tmp_path):
    tex, numbers, _ = _bounded(tmp_path, clipped=0)
    flat = " ".join(tex.split())
    assert "none of the selected model's \\TestN{} test predictions fell outside it" in flat
    assert "BestNClipped" not in _values(numbers)
