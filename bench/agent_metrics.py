"""Benchmark: the research-agent metrics (edm_ars.run.agent_metrics) of K runs of the small configuration.

Each seed 1..K runs the whole workflow (the default target: paper, costs, lessons, findings) with
tests/workflow_config.yaml and `--config seed=<k> branches=<N>` in its own empty directory, one after another;
then the metrics of each run are printed, and side by side with their mean and SD.

    python bench/agent_metrics.py --seeds K [--branches N] [--cores 2] [--keep DIR]

--keep DIR keeps the runs in DIR/seed_<k> (else they are made in a temporary folder and removed). The last line
is `agent_metrics seeds=<K> branches=<N> ok=<runs that finished> wall_s=<mean per run> utility_<metric>=<mean>
(one per primary metric among the selected studies) diversity=<mean> recovered=<mean share of planted predictors
recovered>`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from edm_ars.run.agent_metrics import aggregate, collect  # noqa: E402
from edm_ars.run.metrics_text import render, render_many  # noqa: E402

TEST_CONFIG = ROOT / "tests" / "workflow_config.yaml"


def run_seed(workdir: Path, seed: int, branches: int, cores: int) -> tuple[int, float]:
    """Snakemake on the repository's workflow in workdir; (return code, wall seconds)."""
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(workdir),
           "--cores", str(cores), "--configfile", str(TEST_CONFIG), "--config", f"seed={seed}",
           f"branches={branches}"]
    start = time.monotonic()
    with open(workdir / "bench.log", "w") as log:
        done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    return done.returncode, time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, required=True, help="runs with seeds 1..K")
    parser.add_argument("--branches", type=int, default=2, help="candidate studies per run (default 2)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--keep", help="keep the runs in DIR/seed_<k>")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="edm-ars-metrics-"))
    runs, labels, walls, ok = [], [], [], 0
    try:
        for seed in range(1, args.seeds + 1):
            workdir = base / f"seed_{seed}"
            if workdir.exists() and any(workdir.iterdir()):
                sys.exit(f"{workdir} is not empty: give --keep a new folder")
            rc, wall = run_seed(workdir, seed, args.branches, args.cores)
            ok += int(rc == 0)
            walls.append(wall)
            status = "ok" if rc == 0 else f"FAILED rc={rc} (see {workdir / 'bench.log'})"
            print(f"seed {seed}: {wall:.1f} s, {status}", flush=True)
            runs.append(collect(workdir))
            labels.append(f"seed{seed}")
        for label, m in zip(labels, runs, strict=True):
            print(f"\n== {label}")
            print(render(m))
        print()
        print(render_many(runs, labels))
        agg = aggregate(runs)

        def mean(key: str) -> str:
            value = agg.get(key, {}).get("mean")
            return "n/a" if value is None else f"{value:.4g}"

        utility = " ".join(f"{k.replace('.', '_')}={mean(k)}" for k in agg if k.startswith("utility."))
        print(f"agent_metrics seeds={args.seeds} branches={args.branches} ok={ok} "
              f"wall_s={sum(walls) / len(walls):.1f} {utility} diversity={mean('diversity')} "
              f"recovered={mean('validity.share_recovered')}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0 if ok == args.seeds else 1


if __name__ == "__main__":
    sys.exit(main())
