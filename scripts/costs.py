"""Rule costs: every LLM call of the run in one ledger, and the calls, attempts, retries, repairs, failures
and cost per agent and in total (edm_ars.core.ledger)."""

from edm_ars.jobs.data import costs
from edm_ars.jobs.rule_io import run

run(snakemake, costs)  # noqa: F821
