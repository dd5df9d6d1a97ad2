"""Rule causal_critique of the causal study (rules/causal.smk): edm_ars.jobs.causal.critique."""

from edm_ars.jobs.causal import critique
from edm_ars.jobs.rule_io import run

run(snakemake, critique)  # noqa: F821
