"""Rule costs: every LLM call of the run in one ledger, and the cost per agent and in total."""

import json

from edm_ars.artifacts import atomic_write_text, write_json
from edm_ars.rule_io import log, run


def summarize(calls):
    agents = {}
    for c in calls:
        a = agents.setdefault(c["agent"], {"calls": 0, "cache_hits": 0, "input_tokens": 0, "output_tokens": 0,
                                           "cost_usd": 0.0, "unpriced_calls": 0, "models": []})
        a["calls"] += 1
        a["cache_hits"] += int(bool(c.get("cache_hit")))
        a["input_tokens"] += int(c.get("input_tokens") or 0)
        a["output_tokens"] += int(c.get("output_tokens") or 0)
        if c.get("cost_usd") is None:
            a["unpriced_calls"] += 1
        else:
            a["cost_usd"] += float(c["cost_usd"])
        if c.get("model") and c["model"] not in a["models"]:
            a["models"].append(c["model"])
    for a in agents.values():
        # an agent whose calls include an unpriced model has no known total: null, never a partial sum
        a["cost_usd"] = None if a["unpriced_calls"] else round(a["cost_usd"], 6)
    known = [a["cost_usd"] for a in agents.values()]
    total = None if any(c is None for c in known) else round(sum(known), 6)
    return {"agents": agents, "total": {
        "calls": sum(a["calls"] for a in agents.values()),
        "cache_hits": sum(a["cache_hits"] for a in agents.values()),
        "input_tokens": sum(a["input_tokens"] for a in agents.values()),
        "output_tokens": sum(a["output_tokens"] for a in agents.values()),
        "cost_usd": total}}


def main(smk):
    calls = []
    for path in smk.input.ledgers:
        with open(path, encoding="utf-8") as fh:
            calls += [json.loads(line) for line in fh if line.strip()]
    atomic_write_text(smk.output.calls, "".join(json.dumps(c) + "\n" for c in calls))
    summary = summarize(calls)
    log.info("%d LLM calls (%d cached), cost %s USD", summary["total"]["calls"], summary["total"]["cache_hits"],
             summary["total"]["cost_usd"])
    write_json(smk.output.costs, summary)


run(snakemake, main)  # noqa: F821
