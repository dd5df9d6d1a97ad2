"""Rule split_run: one more grouped split; every single model family refitted with its tuned configuration."""

from edm_ars.jobs.analysis.robustness import split_run
from edm_ars.jobs.rule_io import run

run(snakemake, split_run)  # noqa: F821
