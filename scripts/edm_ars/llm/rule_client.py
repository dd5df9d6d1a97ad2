"""The client an agent's Snakemake job uses: settings from its params, its own ledger and transcripts,
and a budget that counts every ledger of the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edm_ars.llm.client import LLMClient, ledger_spent
from edm_ars.llm.settings import AgentSettings


def client_for_job(smk: Any) -> LLMClient:
    """Build from the job's params (llm, cache_dir, prices, budget_usd) and outputs (ledger, transcripts)."""
    s = smk.params.llm
    settings = AgentSettings(agent=s["agent"], backend=s["backend"], model=s["model"], temperature=s["temperature"],
                             max_tokens=s["max_tokens"], timeout_s=s["timeout_s"], max_retries=s["max_retries"],
                             base_url=s["base_url"], api_key_env=s["api_key_env"], effort=s.get("effort"),
                             prompt_caching=s.get("prompt_caching", True))
    ledger = Path(smk.output.ledger)
    def spent() -> float:
        """What the run's ledgers have spent: this job's folder of ledgers, output/ledger/ (drafting, papers) and
        output/branch_<b>/ledger/ (each candidate study), every file once."""
        roots = [ledger.parents[1], Path("output/ledger"), *Path("output").glob("branch_*/ledger")]
        found = {p.resolve() for root in roots for p in root.rglob("*.jsonl")}
        return sum(ledger_spent(p) for p in sorted(found))

    run_round = int(smk.wildcards.round) if hasattr(smk.wildcards, "round") else int(smk.params.round)
    return LLMClient(settings, run_round=run_round, cache_dir=Path(smk.params.cache_dir),
                     ledger_path=ledger, transcript_dir=Path(smk.output.transcripts), prices=smk.params.prices,
                     budget_usd=smk.params.budget_usd or None, spent_usd=spent)
