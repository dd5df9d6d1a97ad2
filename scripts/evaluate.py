"""Rule evaluate (Analyst, evaluation phase): held-out metrics with intervals, selection, figures."""

from edm_ars.jobs.analysis.evaluate import evaluate
from edm_ars.jobs.rule_io import run

run(snakemake, evaluate)  # noqa: F821
