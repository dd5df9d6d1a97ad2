"""Benchmark: the wall time of a revision round against the round it revises, in the same directory.

Round 0 is the whole first run (`snakemake output/paper.pdf` from an empty directory: data, the
specification, the preparation, the analysis, the results debate, the review, the paper). The revision
is the same command with `force_revise=analyze` on the finished run: the review of round 0 is redone,
asks for a new round from the analysis stage, and round 1 runs with one model family more (the
configured families less one, which the forced revision adds back), then its review and the paper.
A revision round reuses the fits it shares with the round it revises (by path), and the explanations,
stability refits and fairness audit of those fits (kept by their recorded inputs).

    python bench/revision.py [--cores 2] [--config FILE] [--keep DIR]

Each phase prints its wall time and the jobs it ran (from Snakemake's own benchmark files); the last
line is `revision_ratio=<revision / round 0> round0_s=<s> revision_s=<s>`. The goal is a ratio of at
most 0.5. `--config` adds a config file (e.g. tests/workflow_config.yaml for a quick run).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from edm_ars.core.conventions import MODEL_ORDER  # noqa: E402


def snakemake(workdir: Path, cores: int, configs: list[Path], *config: str) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "snakemake", "output/paper.pdf", "--snakefile", str(ROOT / "Snakefile"),
           "--directory", str(workdir), "--cores", str(cores), "--configfile", *map(str, configs)]
    if config:
        cmd += ["--config", *config]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"snakemake failed ({' '.join(cmd)}):\n{done.stderr[-4000:]}")
    return seconds, done.stderr


def jobs(log: str) -> list[str]:
    """The jobs a run started: rule name and wildcards, in order."""
    out, rule = [], None
    for line in log.splitlines():
        line = line.strip()
        if line.endswith(":") and line.split(" ")[0] in ("rule", "localrule", "checkpoint", "localcheckpoint"):
            rule = line.split(" ")[1][:-1]
            out.append(rule)
        elif rule and line.startswith("wildcards:"):
            out[-1] = f"{rule}[{line.removeprefix('wildcards: ')}]"
            rule = None
    return out


def job_seconds(workdir: Path, round_: int) -> dict[str, float]:
    """Seconds per job of one round, from the benchmark files Snakemake wrote."""
    times = {}
    for tsv in sorted((workdir / "benchmarks").rglob("*.tsv")):
        rel = tsv.relative_to(workdir / "benchmarks").with_suffix("")
        if f"round_{round_}" not in rel.parts and rel.name != f"round_{round_}":
            continue
        rows = tsv.read_text().splitlines()
        times[str(rel)] = float(rows[-1].split("\t")[0])
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--config", type=Path, action="append", default=[],
                    help="extra config file(s), after config/config.yaml")
    ap.add_argument("--keep", type=Path, help="run in this (empty) directory and keep it")
    args = ap.parse_args()

    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    for extra in args.config:
        base |= yaml.safe_load(extra.read_text()) or {}
    families = base["analysis"]["models"]
    # the forced revision adds the first family (in the Critic's order) that round 0 does not fit
    missing = [m for m in MODEL_ORDER if m not in families]
    dropped = missing[0] if missing else "elastic_net"

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="edm-ars-revision-"))
    workdir.mkdir(parents=True, exist_ok=True)
    fewer = workdir / "bench_models.yaml"
    fewer.write_text(yaml.safe_dump({"analysis": base["analysis"] | {
        "models": [m for m in families if m != dropped]}}))
    configs = [ROOT / "config" / "config.yaml", *[c.resolve() for c in args.config], fewer]

    print(f"workdir {workdir}; round 0 fits {[m for m in families if m != dropped]}; the revision adds {dropped}")
    t0, log0 = snakemake(workdir, args.cores, configs)
    print(f"round 0   {t0:7.1f} s  {len(jobs(log0))} jobs")
    t1, log1 = snakemake(workdir, args.cores, configs, "force_revise=analyze")
    print(f"revision  {t1:7.1f} s  {len(jobs(log1))} jobs: {', '.join(jobs(log1))}")
    kept = [line.split("INFO [edm_ars] ")[-1] for line in log1.splitlines() if "kept from the previous round" in line]
    for line in kept:
        print(f"  kept: {line}")
    r0, r1 = job_seconds(workdir, 0), job_seconds(workdir, 1)
    print(f"{'job (benchmark file)':44s} {'round 0 s':>10s} {'round 1 s':>10s}")
    for name in sorted({k.replace("round_0", "round_*") for k in r0} | {k.replace("round_1", "round_*") for k in r1}):
        a, b = r0.get(name.replace("round_*", "round_0")), r1.get(name.replace("round_*", "round_1"))
        print(f"{name:44s} {'' if a is None else f'{a:10.2f}':>10s} {'' if b is None else f'{b:10.2f}':>10s}")
    print(f"revision_ratio={t1 / t0:.2f} round0_s={t0:.1f} revision_s={t1:.1f}")


if __name__ == "__main__":
    main()
