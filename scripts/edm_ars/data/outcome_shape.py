"""The shape of a continuous outcome in the training rows: its observed range, whether it is discrete and the share
of rows at its floor and at its ceiling (the data report's ``outcome_shape``).

A score such as a 1-10 attainment rating with many pupils at the top is not an unbounded continuous outcome: a
regression fitted to it can predict outside the range (the Analyst keeps predictions within it,
:func:`edm_ars.analysis.models.predict`), its residuals form stripes, and R2 and RMSE are bounded by the rows piled
at the bound. The paper says so when the outcome is discrete or has a floor or ceiling effect (:func:`is_bounded`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from edm_ars.core.errors import DataError

#: an integer-valued outcome with at most this many distinct values in the training rows is discrete
MAX_DISCRETE_VALUES = 20
#: a share of the training rows at the floor or at the ceiling from which the bound is a floor or ceiling effect
BOUND_EFFECT_SHARE = 0.05


def outcome_shape(train_y: pd.Series | np.ndarray, outcome: str) -> dict[str, Any]:
    """Range, discreteness and the shares at the bounds of a continuous outcome on its training rows.
    DataError naming the outcome when the training rows hold no finite value."""
    y = np.asarray(train_y, dtype=float)
    y = y[np.isfinite(y)]
    if y.size == 0:
        raise DataError(f"outcome {outcome}: the training rows hold no finite outcome value, so its range cannot be "
                        "recorded; check the outcome's column and its sentinel codes in the registry")
    low, high = float(y.min()), float(y.max())
    distinct = int(np.unique(y).size)
    integer = bool(np.all(np.isclose(y, np.round(y))))
    at_floor, at_ceiling = float(np.mean(y == low)), float(np.mean(y == high))
    shape = {
        "low": low, "high": high, "n_train": int(y.size), "n_distinct": distinct, "integer_valued": integer,
        "discrete": integer and distinct <= MAX_DISCRETE_VALUES,
        "n_at_floor": int(np.sum(y == low)), "n_at_ceiling": int(np.sum(y == high)),
        "share_at_floor": round(at_floor, 4), "share_at_ceiling": round(at_ceiling, 4),
        "floor_effect": low < high and at_floor >= BOUND_EFFECT_SHARE,
        "ceiling_effect": low < high and at_ceiling >= BOUND_EFFECT_SHARE,
        "max_discrete_values": MAX_DISCRETE_VALUES, "bound_effect_share": BOUND_EFFECT_SHARE,
    }
    return shape


def is_bounded(shape: dict[str, Any] | None) -> bool:
    """True when the outcome is discrete or piles up at its floor or ceiling: the paper states its range."""
    return bool(shape) and bool(shape.get("discrete") or shape.get("floor_effect") or shape.get("ceiling_effect"))
