"""Rule fit_model (Analyst, fit phase): tune one model family on training rows only.

A recorded failure (a condition of the data such as one outcome class or too few schools, or the
memory) is written into the model's record instead of a model, so the other families and the later
phases go on; a bug stops the rule."""

from edm_ars.jobs.analysis.fit import fit_model
from edm_ars.jobs.rule_io import run

run(snakemake, fit_model)  # noqa: F821
