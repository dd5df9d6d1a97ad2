"""Rule splits: the primary metric over the main split and the repeated ones, with its spread per model."""

from edm_ars.jobs.analysis.robustness import splits
from edm_ars.jobs.rule_io import run

run(snakemake, splits)  # noqa: F821
