"""Rule costs: every LLM call of the run in one ledger, and the calls, attempts, retries, repairs, failures
and cost per agent and in total (edm_ars.ledger)."""

import json

from edm_ars.artifacts import atomic_write_text, write_json
from edm_ars.ledger import read_ledgers, summarize
from edm_ars.rule_io import log, run


def main(smk):
    calls = read_ledgers(smk.input.ledgers)
    atomic_write_text(smk.output.calls, "".join(json.dumps(c) + "\n" for c in calls))
    summary = summarize(calls)
    t = summary["total"]
    log.info("%d LLM calls (%d cached; %d attempts, %d retries, %d repairs, %d failed attempts), cost %s USD",
             t["calls"], t["cache_hits"], t["attempts"], t["retries"], t["repairs"], t["failures"], t["cost_usd"])
    write_json(smk.output.costs, summary)


run(snakemake, main)  # noqa: F821
