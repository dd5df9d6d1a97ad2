"""Benchmark: the wall time of a whole study with this workflow against an earlier commit's, in one run.

Both workflows run the same study from an empty directory (`snakemake output/paper.pdf`) on the same
machine, alternating (reference, current, reference, current, ...) so that a drift of the machine's
load touches both alike. The reference workflow is the tree of a commit (`git archive`), so its
scripts and rules are that commit's; the installed packages are the same for both.

    python bench/study_cost.py --against COMMIT [--repeats 2] [--cores 2] [--config FILE] [--set KEY=VALUE ...]

Prints each run's wall time, the per-rule seconds of the last pair side by side (summed over a rule's
jobs, from Snakemake's own benchmark files; rules without a benchmark directive are not listed), and the
last line `cost_ratio=<current / reference, medians> reference_s=<s> current_s=<s>`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def export_tree(commit: str, into: Path) -> Path:
    """The workflow of `commit`, unpacked into `into` (a git archive: tracked files only)."""
    archive = into / "tree.tar"
    done = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), commit],
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"git archive {commit}: {done.stderr.strip()}")
    tree = into / f"workflow-{commit[:12]}"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    archive.unlink()
    return tree


def run_study(snakefile: Path, workdir: Path, cores: int, configs: list[Path], overrides: list[str]) -> float:
    workdir.mkdir(parents=True)
    cmd = [sys.executable, "-m", "snakemake", "output/paper.pdf", "--snakefile", str(snakefile),
           "--directory", str(workdir), "--cores", str(cores)]
    if configs:
        cmd += ["--configfile", *map(str, configs)]
    if overrides:
        cmd += ["--config", *overrides]
    # each run has its own lessons store, so one run's lessons never reach the other
    env = os.environ | {"EDM_ARS_LESSONS": str(workdir / "lessons.jsonl")}
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=env)
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"snakemake failed ({' '.join(cmd)}):\n{done.stderr[-4000:]}")
    return seconds


def rule_seconds(workdir: Path) -> dict[str, float]:
    """Seconds per rule (the first folder under benchmarks/), summed over its jobs."""
    out: dict[str, float] = defaultdict(float)
    for tsv in sorted((workdir / "benchmarks").rglob("*.tsv")):
        rel = tsv.relative_to(workdir / "benchmarks")
        rule = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        out[rule] += float(tsv.read_text().splitlines()[-1].split("\t")[0])
    return dict(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="the reference commit (e.g. the commit before a change)")
    ap.add_argument("--repeats", type=int, default=2, help="pairs of runs (the medians are compared)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--config", type=Path, action="append", default=[], help="extra config file(s)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="--config overrides")
    args = ap.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="edm-ars-cost-"))
    reference = export_tree(args.against, scratch)
    configs = [c.resolve() for c in args.config]
    times: dict[str, list[float]] = {"reference": [], "current": []}
    last: dict[str, Path] = {}
    for i in range(args.repeats):
        for name, snakefile in (("reference", reference / "Snakefile"), ("current", ROOT / "Snakefile")):
            workdir = scratch / f"{name}-{i}"
            seconds = run_study(snakefile, workdir, args.cores, configs, args.set)
            times[name].append(seconds)
            last[name] = workdir
            print(f"{name:9s} run {i + 1}: {seconds:7.1f} s", flush=True)
    ref_rules, cur_rules = rule_seconds(last["reference"]), rule_seconds(last["current"])
    print(f"{'rule (benchmarks/, last pair)':32s} {'reference s':>12s} {'current s':>10s}")
    for rule in sorted(set(ref_rules) | set(cur_rules)):
        a, b = ref_rules.get(rule), cur_rules.get(rule)
        print(f"{rule:32s} {'' if a is None else f'{a:12.2f}':>12s} {'' if b is None else f'{b:10.2f}':>10s}")
    ref, cur = statistics.median(times["reference"]), statistics.median(times["current"])
    print(f"workdirs under {scratch}")
    print(f"cost_ratio={cur / ref:.2f} reference_s={ref:.1f} current_s={cur:.1f}")


if __name__ == "__main__":
    main()
