"""Rule fit_stacking: a meta-learner on the base models' out-of-fold predictions (no refitting)."""

from edm_ars.jobs.analysis.fit import fit_stacking
from edm_ars.jobs.rule_io import run

run(snakemake, fit_stacking)  # noqa: F821
