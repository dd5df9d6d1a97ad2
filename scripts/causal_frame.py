"""Rule causal_frame of the causal study (rules/causal.smk): edm_ars.jobs.causal.data.frame."""

from edm_ars.jobs.causal.data import frame
from edm_ars.jobs.rule_io import run

run(snakemake, frame)  # noqa: F821
