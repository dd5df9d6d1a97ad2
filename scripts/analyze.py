"""Rule analyze: assemble results.json from the analysis phases (evaluate, explain, fairness, stability)."""

from edm_ars.jobs.analysis.analyze import analyze
from edm_ars.jobs.rule_io import run

run(snakemake, analyze)  # noqa: F821
