"""Rule registry_tier2: generate Tier 2 from the data and the codebook layout."""

from edm_ars.jobs.data import registry_tier2
from edm_ars.jobs.rule_io import run

run(snakemake, registry_tier2)  # noqa: F821
