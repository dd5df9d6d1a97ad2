"""The model-call ledgers (one JSON line per attempt, written by edm_ars.llm.client): reading them, and what
they add up to per agent: calls, attempts, retries, repairs, failures, tokens and cost. Standard library only:
the costs rule and the failure path of every rule (rule_io) use it without the model client's packages."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: Statuses of an attempt that got a complete answer (usable, or sent to the repair re-prompt).
ANSWERED = frozenset({"ok", "unusable"})


def read_ledgers(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The lines of the ledger files, in order."""
    lines: list[dict[str, Any]] = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            lines += [json.loads(line) for line in fh if line.strip()]
    return lines


def _count(agent: dict[str, Any], line: dict[str, Any]) -> None:
    status = line.get("status", "ok")  # ledgers written before statuses were recorded held answers only
    hit = bool(line.get("cache_hit"))
    agent["calls"] += int(status in ANSWERED)
    agent["cache_hits"] += int(hit)
    agent["attempts"] += int(not hit)
    agent["retries"] += int(bool(line.get("retry")))
    agent["repairs"] += int(bool(line.get("repair")) and not line.get("retry"))
    agent["failures"] += int(status != "ok")
    agent["statuses"][status] = agent["statuses"].get(status, 0) + 1
    agent["input_tokens"] += int(line.get("input_tokens") or 0)
    agent["output_tokens"] += int(line.get("output_tokens") or 0)
    agent["cache_creation_input_tokens"] += int(line.get("cache_creation_input_tokens") or 0)
    agent["cache_read_input_tokens"] += int(line.get("cache_read_input_tokens") or 0)
    if line.get("cost_usd") is None:
        agent["unpriced_calls"] += 1
    else:
        agent["cost_usd"] += float(line["cost_usd"])
    if line.get("model") and line["model"] not in agent["models"]:
        agent["models"].append(line["model"])


COUNTS = ("calls", "cache_hits", "attempts", "retries", "repairs", "failures", "input_tokens", "output_tokens",
          "cache_creation_input_tokens", "cache_read_input_tokens")


def summarize(lines: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Per agent and in total: calls (answers received, cached or not), cache_hits, attempts (requests made),
    retries (attempts that repeat a failed one), repairs (repair re-prompts), failures (attempts that did not
    end in a usable answer) with their statuses, tokens (prompt-cache writes and reads apart) and cost. Failed
    attempts that got an answer (cut off, refused, unusable) cost what they used. A cost is null when a model
    has no price, never a partial sum."""
    agents: dict[str, dict[str, Any]] = {}
    for line in lines:
        agent = agents.setdefault(line["agent"], {**dict.fromkeys(COUNTS, 0), "statuses": {}, "cost_usd": 0.0,
                                                  "unpriced_calls": 0, "models": []})
        _count(agent, line)
    for a in agents.values():
        a["cost_usd"] = None if a["unpriced_calls"] else round(a["cost_usd"], 6)
    known = [a["cost_usd"] for a in agents.values()]
    statuses: dict[str, int] = {}
    for a in agents.values():
        for status, n in a["statuses"].items():
            statuses[status] = statuses.get(status, 0) + n
    total = {name: sum(a[name] for a in agents.values()) for name in COUNTS}
    total.update(statuses=statuses, cost_usd=None if any(c is None for c in known) else round(sum(known), 6))
    return {"agents": agents, "total": total}


def keep_failed(ledger: str | Path, log: str | Path) -> tuple[Path, int] | None:
    """Append a failed job's ledger lines to `<log stem>.llm_calls.jsonl` next to its log.

    The ledger is a declared output, which Snakemake deletes when the job fails; logs are kept, so the attempts
    of a failed stage (with their statuses and cost) stay visible there, one failed run after another.
    Returns (that file, number of lines) or None when the job made no model call."""
    source = Path(ledger)
    if not source.is_file():
        return None
    text = source.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    target = Path(log).with_suffix(".llm_calls.jsonl")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return target, len(lines)
