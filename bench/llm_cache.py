"""Benchmark: what prompt caching saves on a whole paper, with the fake Anthropic server playing the current
default models (llm.agents in config/config.yaml), in one run.

The same study runs twice from empty directories with `backend=anthropic` against tests/fakes/llm_servers.py's
FakeAnthropic (real HTTP on 127.0.0.1, a dummy key, the scripted agents of tests/workflow/test_workflow_llm.py,
fake Semantic Scholar and CrossRef servers): once with `llm.prompt_caching: true` (the default) and once with
`false`. Each run has its own fake server, so its prompt cache starts empty. The fake server counts tokens as
characters // 4 and caches a prefix of at least `--min-cache-tokens` tokens (an assumption standing in for a
model's minimum cacheable length).

    python bench/llm_cache.py [--min-cache-tokens 1024] [--cores 2] [--configfile FILE]

Prints, for each run side by side: model calls, requests, input, output, cache-write and cache-read tokens,
repairs, billed input-token dollars (input + cache writes + cache reads, priced from config llm.prices) and the
run's whole cost (costs.json), then the last line
`input_cost_ratio=<cached / uncached> saved=<1 - ratio> cached_usd=<...> uncached_usd=<...>`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "workflow")]

from fakes.llm_servers import FakeAnthropic  # noqa: E402
from fakes.scholar_servers import CROSSREF_WORKS, S2_PAPERS, FakeCrossRef, FakeSemanticScholar  # noqa: E402
from test_workflow_llm import agent, literature_overrides  # noqa: E402

from edm_ars.core.artifacts import read_yaml  # noqa: E402

KEY = "sk-ant-bench-not-a-real-key-0123456789"


def run_paper(workdir: Path, caching: bool, args: argparse.Namespace) -> tuple[list[dict], dict, int]:
    """One whole paper; (llm_calls.jsonl lines, costs.json, requests the fake server got)."""
    workdir.mkdir(parents=True)
    with FakeAnthropic(agent, min_cache_tokens=args.min_cache_tokens) as llm, \
            FakeSemanticScholar(S2_PAPERS) as s2, FakeCrossRef(CROSSREF_WORKS) as cr:
        overrides = workdir / "overrides.yaml"
        overrides.write_text(literature_overrides(s2, cr) + f"llm: {{prompt_caching: {str(caching).lower()}}}\n")
        cmd = [sys.executable, "-m", "snakemake", "output/paper.pdf", "output/costs.json", "--snakefile", str(ROOT / "Snakefile"),
               "--directory", str(workdir), "--cores", str(args.cores), "--configfile",
               *([str(args.configfile)] if args.configfile else []), str(overrides),
               "--config", "backend=anthropic", f"base_url={llm.url}"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_") and k.lower() not in
               ("http_proxy", "https_proxy", "all_proxy")}
        env |= {"ANTHROPIC_API_KEY": KEY, "NO_PROXY": "127.0.0.1,localhost",
                "EDM_ARS_LESSONS": str(workdir / "lessons.jsonl")}
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=env)
        if done.returncode:
            sys.exit(f"snakemake failed ({'caching' if caching else 'no caching'}):\n{done.stderr[-4000:]}")
        requests = llm.count
    out = workdir / "output"
    calls = [json.loads(line) for line in (out / "llm_calls.jsonl").read_text().splitlines() if line.strip()]
    return calls, json.loads((out / "costs.json").read_text()), requests


def input_dollars(calls: list[dict], prices: dict) -> float | None:
    """Billed input-token dollars: input tokens, cache writes and cache reads at the model's prices."""
    total = 0.0
    for c in calls:
        price = prices.get(c["model"]) or {}
        parts = [(c.get("input_tokens") or 0, price.get("input_per_mtok")),
                 (c.get("cache_creation_input_tokens") or 0, price.get("cache_write_per_mtok")),
                 (c.get("cache_read_input_tokens") or 0, price.get("cache_read_per_mtok"))]
        for tokens, rate in parts:
            if tokens and rate is None:
                return None  # an unpriced part: no figure rather than a partial one
            total += tokens * (rate or 0.0) / 1e6
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--min-cache-tokens", type=int, default=1024)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--configfile", type=Path, default=ROOT / "tests" / "workflow_config.yaml",
                        help="an extra config file (default: the tests' small study; models and prices stay "
                             "config/config.yaml's)")
    parser.add_argument("--keep", type=Path, help="run in this (new) directory and keep both runs")
    args = parser.parse_args()
    prices = read_yaml(ROOT / "config" / "config.yaml", "config", ValueError)["llm"]["prices"]
    rows = {}
    with tempfile.TemporaryDirectory(prefix="edm-ars-bench-") as tmp:
        for name, caching in (("cached", True), ("uncached", False)):
            calls, costs, requests = run_paper((args.keep or Path(tmp)) / name, caching, args)
            t = costs["total"]
            rows[name] = {"calls": t["calls"], "requests": requests, "input_tokens": t["input_tokens"],
                          "output_tokens": t["output_tokens"],
                          "cache_write_tokens": t.get("cache_creation_input_tokens", 0),
                          "cache_read_tokens": t.get("cache_read_input_tokens", 0), "repairs": t["repairs"],
                          "input_usd": input_dollars(calls, prices), "cost_usd": t["cost_usd"]}
    print(f"{'':20s} {'cached':>14s} {'uncached':>14s}")
    for key in rows["cached"]:
        a, b = rows["cached"][key], rows["uncached"][key]
        fmt = (lambda v: "null" if v is None else f"{v:.6f}") if key.endswith("usd") else str
        print(f"{key:20s} {fmt(a):>14s} {fmt(b):>14s}")
    a, b = rows["cached"]["input_usd"], rows["uncached"]["input_usd"]
    if a is None or not b:
        print("input_cost_ratio=null (a model without cache prices)")
        return
    print(f"input_cost_ratio={a / b:.3f} saved={1 - a / b:.3f} cached_usd={a:.6f} uncached_usd={b:.6f}")


if __name__ == "__main__":
    main()
