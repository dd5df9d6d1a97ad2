"""Rule fit_baselines: the baselines (base rate or mean, one prior-achievement predictor, a small core linear model)."""

from edm_ars.jobs.analysis.fit import fit_baselines
from edm_ars.jobs.rule_io import run

run(snakemake, fit_baselines)  # noqa: F821
