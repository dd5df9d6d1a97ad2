"""Rule select: rank the reviewed branches by the stated rule (output/selection.json)."""

from edm_ars.jobs.branches import select
from edm_ars.jobs.rule_io import run

run(snakemake, select)  # noqa: F821
