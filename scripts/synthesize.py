"""Rule synthesize: the embedded hsls09_synthetic data set and its data-generating process."""

from edm_ars.jobs.data import synthesize
from edm_ars.jobs.rule_io import run

run(snakemake, synthesize)  # noqa: F821
