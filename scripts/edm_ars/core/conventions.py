"""Names and thresholds the stages share, in one place (standard library only, so that any stage can
import them without the modelling stack).

The Analyst applies the thresholds and records the values it applied in its artifacts, under
:data:`THRESHOLDS` (see :func:`applied_threshold`); the results debate and the Critic judge by the
recorded values and the Writer states them, so that no later stage assumes a value of its own."""

from __future__ import annotations

from typing import Any

from edm_ars.core.errors import SchemaError

# prediction tasks, as the registry and the data report name them
BINARY = "binary_classification"
REGRESSION = "regression"

# model families, simplest first (the order in which the Critic adds a missing one and the Analyst breaks ties)
MODEL_ORDER = ("logistic", "elastic_net", "random_forest", "xgboost", "mlp")
RANDOM_FOREST = "random_forest"  # its trees' rows are set by the large-data policy above its threshold
STACKING = "stacking"  # a model of the others' out-of-fold predictions: never fitted by fit_model, never explained
LINEAR_FAMILIES = frozenset({"logistic", "elastic_net"})
FLEXIBLE_FAMILIES = frozenset({"random_forest", "xgboost", "mlp", STACKING})

# metrics where smaller is better (errors)
LOWER_IS_BETTER = frozenset({"rmse", "mae", "brier", "log_loss"})
# a model under the floor of its task's primary metric is not interpreted (no SHAP, no stability runs)
QUALITY_FLOOR = {"auc": 0.60, "r2": 0.05}
# a held-out AUC above this on educational data suggests leakage
LEAKAGE_AUC = 0.95
# a held-out R2 above this on educational data suggests leakage (config analysis.leakage_r2)
LEAKAGE_R2 = 0.95
# a predictor column correlated above this (absolute Pearson r) with the outcome in the training rows is a suspected
# proxy of the outcome: a failed data check of the DataEngineer (config engineer.leakage_corr)
LEAKAGE_CORR = 0.98
# the interpreted model's ranking is unstable when the mean top-5 SHAP overlap across perturbations is under this
UNSTABLE_TOP5 = 0.6

#: The key of the record of the thresholds an artifact's judgements applied, named after the constants above:
#: evaluation.json and results.json: {"quality_floor": floor of the primary metric, "leakage_auc": the AUC
#: ceiling (null: not applied, a regression task), "leakage_r2": the R2 ceiling (null: not applied, a binary
#: task)}; data_report.json: {"leakage_corr": the |r| ceiling of a predictor column with the outcome in the
#: training rows}; stability.json and results.json stability:
#: {"unstable_top5": the mean top-5 overlap under which the ranking is unstable}.
THRESHOLDS = "thresholds"


def applied_threshold(artifact: dict[str, Any], name: str, *, file: str, at: str = "") -> float | None:
    """The threshold `name` an artifact (or its part at `at`) records under :data:`THRESHOLDS`; None when it
    is recorded as not applied. A missing record is an error naming the file and the key: readers never
    fall back to a value of their own."""
    part: Any = artifact
    for step in (at.split(".") if at else []):
        part = part.get(step) if isinstance(part, dict) else None
    record = part.get(THRESHOLDS) if isinstance(part, dict) else None
    key = ".".join(x for x in (at, THRESHOLDS, name) if x)
    if not isinstance(record, dict) or name not in record:
        raise SchemaError(f"{file}: no {key} recorded (the threshold the analysis applied); re-run the analysis "
                          "stage that writes it")
    value = record[name]
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise SchemaError(f"{file}: {key} must be a number or null, not {value!r}")
    return None if value is None else float(value)


def level_slug(level: object) -> str:
    """The name part of a category's one-hot column (`<variable>__<slug>`): letters and digits, other characters as
    single underscores, at most 40 characters. The Writer maps a column back to the registry's value label by it."""
    keep = "".join(ch if ch.isalnum() else "_" for ch in str(level))
    return "_".join(p for p in keep.split("_") if p)[:40] or "level"
