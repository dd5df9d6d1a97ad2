"""Rule stability_run: refit the interpreted model family under one perturbation; score and rank features."""

from edm_ars.jobs.analysis.robustness import stability_run
from edm_ars.jobs.rule_io import run

run(snakemake, stability_run)  # noqa: F821
