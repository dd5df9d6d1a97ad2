"""Measure what each rule's jobs use, for the SLURM profile's requests (profiles/slurm/resources.yaml).

    python bench/slurm_resources.py RUN_DIR [RUN_DIR ...] [--out profiles/slurm/resources.yaml] [--merge]

Each RUN_DIR is a finished run's working directory (`snakemake --directory RUN_DIR ...`). From it:
the data set's rows (output/data/dataset.json: n_rows) and Snakemake's benchmark files
(benchmarks/**/*.tsv: s = wall seconds, max_rss = peak resident memory in MB; the peak is the job's own from the
`job resources:` line of its log, logs/ mirroring benchmarks/, when that is larger). A file belongs to the rule
named by its first folder under benchmarks/ after a branch folder (benchmarks/branch_1/fit_model/round_0/xgboost.tsv,
benchmarks/fit_model/round_0/xgboost.tsv), or by its name when it sits directly in benchmarks/
(benchmarks/compile_pdf.tsv); only this workflow's rules that ask the cluster for resources count. The table is keyed by rule name,
never by path: per rule and data size the largest peak memory and the longest job of that run. Runs of
the same size are pooled (the largest of each). Request = measured x margin, scaled by rows: see
scripts/edm_ars/run/cluster.py, which reads the table. With --merge the table already at --out keeps its other sizes:
the runs add theirs (a size they measured replaces that size's entry of a rule they measured), so a large run that
stops after the fits adds a point for the rules it ran without dropping the smaller runs' measurements.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from edm_ars.jobs.rule_io import logged_usage  # noqa: E402

DEFAULT_OUT = ROOT / "profiles" / "slurm" / "resources.yaml"
RULE_RE = re.compile(r"^(?:rule|checkpoint)\s+([A-Za-z_][A-Za-z_0-9]*)\s*:", re.M)


ASKS_RE = re.compile(r'cluster_resources\("(\w+)"\)')


def rule_names(root: Path = ROOT) -> set[str]:
    """The names of the workflow's rules that ask the cluster for resources (`cluster_resources("<rule>")` in
    rules/*.smk): the only ones whose requests the table sets (the others run on the submitting host)."""
    names, asking = set(), set()
    for path in [root / "Snakefile", *sorted((root / "rules").glob("*.smk"))]:
        text = path.read_text()
        names.update(RULE_RE.findall(text))
        asking.update(ASKS_RE.findall(text))
    return names & asking


def rule_of(tsv: Path, benchmarks: Path, rules: set[str]) -> str | None:
    """The rule a benchmark file belongs to, or None."""
    parts = tsv.relative_to(benchmarks).parts
    if len(parts) > 2 and re.fullmatch(r"branch_\d+", parts[0]):  # benchmarks/branch_1/fit_model/round_0/x.tsv
        parts = parts[1:]
    name = parts[0] if len(parts) > 1 else Path(parts[0]).stem
    return name if name in rules else None


def read_benchmark(tsv: Path) -> list[dict[str, float]]:
    """The rows of one benchmark file (one per repeat): s and max_rss (MB), as floats."""
    out = []
    with tsv.open(newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            try:
                out.append({"s": float(row["s"]), "mem_mb": float(row["max_rss"])})
            except (KeyError, TypeError, ValueError):
                continue  # a job killed mid-write, or a field Snakemake could not measure ("NA")
    return out


def data_rows(run: Path) -> int:
    manifest = run / "output" / "data" / "dataset.json"
    return int(json.loads(manifest.read_text())["n_rows"])


def measure(run: Path, rules: set[str]) -> tuple[int, dict[str, dict]]:
    """(rows, {rule: {"mem_mb", "s", "jobs"}}) of one run."""
    rows = data_rows(run)
    benchmarks = run / "benchmarks"
    per_rule: dict[str, dict] = {}
    for tsv in sorted(benchmarks.glob("**/*.tsv")):
        rule = rule_of(tsv, benchmarks, rules)
        if rule is None:
            continue
        # the job's own peak (its log's last line: the kernel's accounting, children such as the sandbox included)
        # where it has one; Snakemake samples a job every 30 s after its first 15 s and can miss a short peak
        exact = logged_usage((run / "logs" / tsv.relative_to(benchmarks)).with_suffix(".log")).get("peak_rss_mb", 0.0)
        for m in read_benchmark(tsv):
            cur = per_rule.setdefault(rule, {"mem_mb": 0.0, "s": 0.0, "jobs": 0})
            cur["mem_mb"] = max(cur["mem_mb"], m["mem_mb"], exact)
            cur["s"] = max(cur["s"], m["s"])
        if rule in per_rule:
            per_rule[rule]["jobs"] += 1
    return rows, per_rule


def table(runs: list[Path], rules: set[str]) -> dict:
    points: dict[str, dict[int, dict]] = defaultdict(dict)
    for run in runs:
        rows, per_rule = measure(run, rules)
        for rule, m in per_rule.items():
            cur = points[rule].get(rows)
            if cur is None:
                points[rule][rows] = dict(m)
            else:
                cur["mem_mb"] = max(cur["mem_mb"], m["mem_mb"])
                cur["s"] = max(cur["s"], m["s"])
                cur["jobs"] = max(cur["jobs"], m["jobs"])
    return {
        "rules": {
            rule: {
                "measured": [
                    {"rows": rows, "mem_mb": round(m["mem_mb"], 1), "s": round(m["s"], 2), "jobs": m["jobs"]}
                    for rows, m in sorted(by_rows.items())
                ]
            }
            for rule, by_rows in sorted(points.items())
        }
    }


def merged(old: dict, new: dict) -> dict:
    """The table `old` with the sizes of `new` added (a size in both: `new`'s entry, for the rules `new` has)."""
    points = {rule: {p["rows"]: p for p in entry.get("measured", [])} for rule, entry in (old.get("rules") or {}).items()}
    for rule, entry in new["rules"].items():
        for p in entry["measured"]:
            points.setdefault(rule, {})[p["rows"]] = p
    return {"rules": {rule: {"measured": [by_rows[r] for r in sorted(by_rows)]}
                      for rule, by_rows in sorted(points.items())}}


HEADER = """\
# Measured use of each rule's jobs, for the SLURM profile's memory and run-time requests (rules/cluster.smk).
# Written by `python bench/slurm_resources.py RUN_DIR ...` on {today}; edit by rerunning it, not by hand.
# Per rule and data size (rows of output/data/dataset.json): the largest peak resident memory (mem_mb, MB)
# and the longest wall time (s, seconds) of its jobs in that run, and how many jobs were measured.
# A job asks for this, scaled to its data set's rows, times a margin (scripts/edm_ars/run/cluster.py:
# memory x1.5, at least 1000 MB; time x2, at least 10 minutes). Measured on a 2-core machine shared with
# other work: the times are noisy, hence the margin and the floor.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="working directories of finished runs")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--merge", action="store_true", help="keep the other sizes of the table already at --out")
    args = ap.parse_args(argv)
    rules = rule_names()
    data = table(args.runs, rules)
    if not data["rules"]:
        print("no benchmark files of this workflow's rules found", file=sys.stderr)
        return 1
    if args.merge and args.out.is_file():
        data = merged(yaml.safe_load(args.out.read_text()) or {}, data)
    text = HEADER.format(today=date.today().isoformat()) + yaml.safe_dump(data, sort_keys=False)
    args.out.write_text(text)
    for rule, entry in data["rules"].items():
        pts = ", ".join(f"{p['rows']} rows: {p['mem_mb']:.0f} MB {p['s']:.1f} s" for p in entry["measured"])
        print(f"{rule:16s} {pts}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
