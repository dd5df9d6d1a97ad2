"""Benchmark: the wall time of a run with N candidate studies (branches=N) against a run with one, on this machine.

Both runs go from an empty directory to `output/paper.pdf` with the same configuration (the shipped default, or
`--config FILE`), one after the other (one study first), each with its own findings store so the drafts do not
depend on earlier runs. The N-branch run is one Snakemake invocation: the shared jobs (data, registry, drafting,
selection, the paper) run once and the branches' jobs share the cores.

    python bench/branches.py [--branches 4] [--cores 2] [--config FILE]

Prints each run's wall time and jobs, and the last line
`branch_ratio=<N-branch wall / one-study wall> one_s=<s> branches_s=<s> branches=<N>`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(workdir: Path, branches: int, cores: int, config: Path | None) -> tuple[float, Counter]:
    workdir.mkdir(parents=True)
    cmd = [sys.executable, "-m", "snakemake", "output/paper.pdf", "--snakefile", str(ROOT / "Snakefile"),
           "--directory", str(workdir), "--cores", str(cores)]
    store = workdir / "store.yaml"  # this run's own findings store
    store.write_text(f"findings:\n  store: {workdir / 'findings.jsonl'}\n")
    cmd += ["--configfile", *([str(config)] if config else []), str(store), "--config", f"branches={branches}"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"branches={branches} failed in {workdir}:\n{done.stderr[-4000:]}")
    jobs = Counter(line.split()[-1].rstrip(":") for line in done.stderr.splitlines()
                   if line.startswith(("rule ", "localrule ", "checkpoint ", "localcheckpoint ")))
    return wall, jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--branches", type=int, default=4)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--config", type=Path, help="an extra config file (default: the shipped configuration)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="edm-ars-bench-branches-") as tmp:
        one, one_jobs = run(Path(tmp) / "one", 1, args.cores, args.config)
        print(f"one study:   {one:7.1f} s, {sum(one_jobs.values())} jobs", flush=True)
        many, many_jobs = run(Path(tmp) / "many", args.branches, args.cores, args.config)
        print(f"{args.branches} branches: {many:7.1f} s, {sum(many_jobs.values())} jobs")
        shared = [r for r in sorted(many_jobs) if many_jobs[r] == one_jobs.get(r, 0)]
        print("jobs run once for all branches: " + ", ".join(shared))
    print(f"branch_ratio={many / one:.2f} one_s={one:.1f} branches_s={many:.1f} branches={args.branches}")


if __name__ == "__main__":
    main()
