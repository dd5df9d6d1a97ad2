"""Names and thresholds the stages share, in one place (standard library only, so that any stage can
import them without the modelling stack): the Analyst applies them, the results debate and the Critic
judge by them, the Writer states them."""

from __future__ import annotations

# prediction tasks, as the registry and the data report name them
BINARY = "binary_classification"
REGRESSION = "regression"

# model families, simplest first (the order in which the Critic adds a missing one and the Analyst breaks ties)
MODEL_ORDER = ("logistic", "elastic_net", "random_forest", "xgboost", "mlp")
STACKING = "stacking"  # a model of the others' out-of-fold predictions: never fitted by fit_model, never explained
LINEAR_FAMILIES = frozenset({"logistic", "elastic_net"})
FLEXIBLE_FAMILIES = frozenset({"random_forest", "xgboost", "mlp", STACKING})

# a model under the floor of its task's primary metric is not interpreted (no SHAP, no stability runs)
QUALITY_FLOOR = {"auc": 0.60, "r2": 0.05}
# a held-out AUC above this on educational data suggests leakage
LEAKAGE_AUC = 0.95
# the interpreted model's ranking is unstable when the mean top-5 SHAP overlap across perturbations is under this
UNSTABLE_TOP5 = 0.6
