"""Rule revisions: output/revisions.md from every round's artifacts."""

from edm_ars.jobs.data import revisions
from edm_ars.jobs.rule_io import run

run(snakemake, revisions)  # noqa: F821
