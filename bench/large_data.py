"""Benchmark: each stage's seconds and peak memory on the generated data at growing sizes, and how they grow.

Runs the generated study (`hsls09_synthetic`) from an empty directory once per size, with
`synthetic.n_students` = the size and `synthetic.n_schools` = size / 25 (1,000,000 students in 40,000 schools,
the issue's large case; the shipped default is 23,503 in 944), one size after the other, smallest first:

    python bench/large_data.py [--sizes 25000,100000,250000,1000000] [--target output/paper.pdf] [--cores 2]
                               [--config FILE] [--snakefile PATH] [--lock FILE] [--keep DIR] [--cpu]
    python bench/large_data.py --tabulate DIR [--cpu]

`--target` is any target of the workflow (the DataEngineer alone:
`output/branch_1/round_0/data/data_report.json`; the generator alone: `output/data/raw.parquet`). `--lock FILE`
holds FILE's lock (flock) through each run above 100,000 students, so that big runs on a shared machine take
turns. `--snakefile` runs another checkout's workflow (e.g. an earlier commit's tree, for a before/after table).
`--keep DIR` leaves the runs' directories under DIR (by default they are removed). `--cpu` uses the jobs' CPU
seconds instead of their wall seconds, for a machine that others load too. CPU seconds and peak memory are the
larger of each job's own (the `job resources:` line it logs last, from the kernel's accounting) and Snakemake's
benchmark file (which samples a job every 30 s after its first 15 s, but sees the sandbox's processes).
`--tabulate DIR` prints the table of runs kept earlier (DIR/n<size>/, from `--keep`) without running anything.

From each run's Snakemake `benchmarks/` files (per job: s = wall seconds, max_rss = peak resident MB), a stage
is a rule: its seconds are summed over its jobs and its peak is the largest of its jobs. Prints per stage a row
with every size side by side (seconds, peak MB) and the growth exponent log(t2/t1)/log(n2/n1) between
consecutive sizes (1 = linear in the rows, 2 = quadratic; a stage under 1 s at the larger size is start-up cost,
its exponent shown in brackets and left out of the worst); then the whole run's wall time and the largest peak of
any job. The last line is `worst_exponent=<e> stage=<rule> between=<n1>,<n2> wall_s=<s per size>
peak_mb=<MB per size>`, the worst exponent between the two largest sizes.
"""

from __future__ import annotations

import argparse
import csv
import fcntl
import itertools
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from edm_ars.jobs.rule_io import logged_usage  # noqa: E402

STUDENTS_PER_SCHOOL = 25  # the 1,000,000 students in 40,000 schools
LOCK_ABOVE = 100_000  # runs above this many students hold --lock
NOISE_S = 1.0  # a stage under this many seconds is process start-up, not work on the rows
BRANCH = re.compile(r"^branch_\d+$")
WALL_FILE = "bench_wall_s.txt"  # a kept run's wall seconds, for --tabulate


def stage_of(tsv: Path, benchmarks: Path) -> str:
    """The rule a benchmark file belongs to: its first folder under benchmarks/ that is not a branch folder
    (benchmarks/branch_1/engineer/round_0.tsv -> engineer), or its name (benchmarks/synthesize.tsv)."""
    parts = [p for p in tsv.relative_to(benchmarks).parts if not BRANCH.match(p)]
    return parts[0] if len(parts) > 1 else Path(parts[0]).stem


def job_usage(log: Path) -> dict[str, float]:
    """{"cpu_time": CPU seconds, "max_rss": peak MB} from the `job resources:` line a job writes last to its log
    (edm_ars.jobs.rule_io.usage: the kernel's accounting of the job's process and its children); {} when absent."""
    found = logged_usage(log)
    return {"cpu_time": found["cpu_s"], "max_rss": found["peak_rss_mb"]} if found else {}


def _number(value: object) -> float:
    """A benchmark file's field as a number; 0 for "NA" or nothing."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0


def read_stages(workdir: Path, clock: str = "s") -> dict[str, dict[str, float]]:
    """{rule: {"s": seconds summed over its jobs, "mb": largest peak memory of its jobs, "jobs": n}}; the seconds
    are the benchmark files' `clock` column (s: wall seconds, cpu_time: CPU seconds). CPU seconds and peak memory
    are the larger of the job's own log line (logs/ mirrors benchmarks/) and the benchmark file: Snakemake samples
    a job every 30 s after its first 15, so it can miss the end of a long job and a short peak; the job's own
    accounting misses processes whose usage is not passed up to it (the sandbox's script, behind bubblewrap)."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: {"s": 0.0, "mb": 0.0, "jobs": 0})
    benchmarks = workdir / "benchmarks"
    for tsv in sorted(benchmarks.rglob("*.tsv")):
        with tsv.open(newline="") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        if not rows:
            continue
        row = dict(rows[-1])
        for key, value in job_usage((workdir / "logs" / tsv.relative_to(benchmarks)).with_suffix(".log")).items():
            row[key] = max(value, _number(row.get(key)))
        cur = out[stage_of(tsv, benchmarks)]
        try:
            cur["s"] += float(row[clock])
        except (KeyError, TypeError, ValueError):
            pass
        try:
            cur["mb"] = max(cur["mb"], float(row["max_rss"]))
        except (KeyError, TypeError, ValueError):
            pass  # "NA" when Snakemake could not measure the job (it ended too fast)
        cur["jobs"] += 1
    return dict(out)


def run(workdir: Path, size: int, args: argparse.Namespace) -> float:
    workdir.mkdir(parents=True)
    sizes = workdir / "size.yaml"
    sizes.write_text(f"synthetic:\n  n_students: {size}\n  n_schools: {max(1, round(size / STUDENTS_PER_SCHOOL))}\n"
                     f"lessons:\n  store: {workdir / 'lessons.jsonl'}\nfindings:\n  store: {workdir / 'findings.jsonl'}\n")
    cmd = [sys.executable, "-m", "snakemake", args.target, "--snakefile", str(args.snakefile),
           "--directory", str(workdir), "--cores", str(args.cores),
           "--configfile", *[str(c) for c in args.config], str(sizes)]
    with open(args.lock or os.devnull, "a") as lock:
        if args.lock and size > LOCK_ABOVE:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the wait for the lock is not part of the run's wall time
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
        wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{size} students: snakemake failed in {workdir}:\n{done.stderr[-4000:]}")
    (workdir / WALL_FILE).write_text(f"{wall:.2f}\n")
    return wall


def exponent(t1: float, t2: float, n1: int, n2: int) -> float | None:
    if t1 <= 0 or t2 <= 0:
        return None
    return math.log(t2 / t1) / math.log(n2 / n1)


def fmt_exp(e: float | None, noise: bool) -> str:
    if e is None:
        return ""
    return f"[{e:.2f}]" if noise else f"{e:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="25000,100000,250000,1000000", help="students per run, comma-separated")
    ap.add_argument("--target", default="output/paper.pdf")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--config", type=Path, action="append", default=[], help="extra config file(s)")
    ap.add_argument("--snakefile", type=Path, default=ROOT / "Snakefile")
    ap.add_argument("--lock", type=Path, help=f"a lock file held (flock) by each run above {LOCK_ABOVE:,} students")
    ap.add_argument("--keep", type=Path, help="leave the runs' directories under this folder")
    ap.add_argument("--cpu", action="store_true", help="the jobs' CPU seconds instead of their wall seconds")
    ap.add_argument("--tabulate", type=Path, help="print the table of the runs kept in this folder (n<size>/)")
    args = ap.parse_args()
    if args.tabulate:
        args.sizes = ",".join(sorted((p.name[1:] for p in args.tabulate.glob("n*") if (p / WALL_FILE).exists()),
                                     key=int))
    sizes = sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})
    if len(sizes) < 2:
        sys.exit("--sizes: give at least two sizes")
    args.config = [c.resolve() for c in args.config]
    args.snakefile = args.snakefile.resolve()

    walls: dict[int, float] = {}
    stages: dict[int, dict[str, dict[str, float]]] = {}
    if args.tabulate:
        scratch = args.tabulate
        for n in sizes:
            walls[n] = float((scratch / f"n{n}" / WALL_FILE).read_text())
            stages[n] = read_stages(scratch / f"n{n}", "cpu_time" if args.cpu else "s")
    else:
        scratch = Path(tempfile.mkdtemp(prefix="edm-ars-large-", dir=args.keep))
    try:
        for n in [] if args.tabulate else sizes:
            workdir = scratch / f"n{n}"
            walls[n] = run(workdir, n, args)
            stages[n] = read_stages(workdir, "cpu_time" if args.cpu else "s")
            peak = max((v["mb"] for v in stages[n].values()), default=0.0)
            print(f"{n:>9,d} students: {walls[n]:8.1f} s wall, largest job peak {peak:7.0f} MB", flush=True)
    finally:
        if args.keep is None and not args.tabulate:
            shutil.rmtree(scratch, ignore_errors=True)

    rules = sorted(set().union(*stages.values()), key=lambda r: -stages[sizes[-1]].get(r, {"s": 0.0})["s"])
    pairs = list(itertools.pairwise(sizes))
    head = f"{'stage (' + ('CPU s' if args.cpu else 's') + ', peak MB)':22s}" + "".join(f"{f'{n:,d}':>17s}" for n in sizes) + \
        "".join(f"{f'e {a // 1000}k-{b // 1000}k':>13s}" for a, b in pairs)
    print(head)
    worst: tuple[float, str] | None = None
    for rule in rules:
        cells = []
        for n in sizes:
            m = stages[n].get(rule)
            cells.append(f"{m['s']:9.1f} {m['mb']:6.0f}" if m else "")
        exps = []
        for a, b in pairs:
            ma, mb = stages[a].get(rule), stages[b].get(rule)
            if not (ma and mb):
                exps.append("")
                continue
            e = exponent(ma["s"], mb["s"], a, b)
            noise = mb["s"] < NOISE_S
            exps.append(fmt_exp(e, noise))
            if (a, b) == pairs[-1] and e is not None and not noise and (worst is None or e > worst[0]):
                worst = (e, rule)
        print(f"{rule:22s}" + "".join(f"{c:>17s}" for c in cells) + "".join(f"{x:>13s}" for x in exps))
    peaks = {n: max((v["mb"] for v in stages[n].values()), default=0.0) for n in sizes}
    print(f"{'whole run (wall s)':22s}" + "".join(f"{walls[n]:9.1f} {'':6s}" for n in sizes)
          + "".join(f"{fmt_exp(exponent(walls[a], walls[b], a, b), False):>13s}" for a, b in pairs))
    print(f"{'largest job peak (MB)':22s}" + "".join(f"{'':9s} {peaks[n]:6.0f}" for n in sizes))
    if args.keep is not None or args.tabulate:
        print(f"runs kept under {scratch}")
    a, b = pairs[-1]
    e, rule = worst if worst else (float("nan"), "none")
    print(f"worst_exponent={e:.2f} stage={rule} between={a},{b} "
          f"wall_s={','.join(f'{walls[n]:.1f}' for n in sizes)} peak_mb={','.join(f'{peaks[n]:.0f}' for n in sizes)}")


if __name__ == "__main__":
    main()
