"""Rule dataset: read the raw data file, check the registry and the data against each other (every
inconsistency named), and write the manifest."""

from edm_ars.jobs.data import dataset
from edm_ars.jobs.rule_io import run

run(snakemake, dataset)  # noqa: F821
