"""Rule explain (Analyst, interpretation phase): SHAP for every interpretable model above the floor.

TreeExplainer for tree ensembles, LinearExplainer for linear models, a bounded model-agnostic
explainer for the MLP; never stacking. A timeout, an explainer that cannot take the model, or the
memory is recorded with its reason and the other models are still explained; a bug stops the rule."""

from edm_ars.jobs.analysis.explain import explain
from edm_ars.jobs.rule_io import run

run(snakemake, explain)  # noqa: F821
