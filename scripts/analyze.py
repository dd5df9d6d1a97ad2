"""Rule analyze: results.json from the analysis phases (evaluate, explain, fairness, stability, multilevel, replication)."""

from edm_ars.jobs.analysis.analyze import analyze
from edm_ars.jobs.rule_io import run

run(snakemake, analyze)  # noqa: F821
