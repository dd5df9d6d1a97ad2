"""Rule causal_critique of the causal study (rules/causal.smk): edm_ars.jobs.causal.agents.critique."""

from edm_ars.jobs.causal.agents import critique
from edm_ars.jobs.rule_io import run

run(snakemake, critique)  # noqa: F821
