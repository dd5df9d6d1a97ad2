"""Rule causal_write of the causal study (rules/causal.smk): edm_ars.jobs.causal.writer.write."""

from edm_ars.jobs.causal.writer import write
from edm_ars.jobs.rule_io import run

run(snakemake, write)  # noqa: F821
