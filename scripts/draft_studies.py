"""Rule draft_studies: the run's candidate studies (output/branches.json)."""

from edm_ars.jobs.branches import draft_studies
from edm_ars.jobs.rule_io import run

run(snakemake, draft_studies)  # noqa: F821
