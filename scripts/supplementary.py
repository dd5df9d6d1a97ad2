"""Rule supplementary: one supplementary analysis run in the sandbox, with self-repair; its record."""

from edm_ars.jobs.supplementary import supplementary
from edm_ars.rule_io import run

run(snakemake, supplementary)  # noqa: F821
