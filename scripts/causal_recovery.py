"""Rule causal_recovery of the causal study (rules/causal.smk): edm_ars.jobs.causal.writer.recovery."""

from edm_ars.jobs.causal.writer import recovery
from edm_ars.jobs.rule_io import run

run(snakemake, recovery)  # noqa: F821
