"""Rule causal_formulate of the causal study (rules/causal.smk): edm_ars.jobs.causal.agents.formulate."""

from edm_ars.jobs.causal.agents import formulate
from edm_ars.jobs.rule_io import run

run(snakemake, formulate)  # noqa: F821
