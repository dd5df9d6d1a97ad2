"""Rule causal_estimate of the causal study (rules/causal.smk): edm_ars.jobs.causal.analysis.estimate."""

from edm_ars.jobs.causal.analysis import estimate
from edm_ars.jobs.rule_io import run

run(snakemake, estimate)  # noqa: F821
