"""Rule supplementary: one supplementary analysis run in the sandbox, with self-repair; its record."""

from edm_ars.jobs.rule_io import run
from edm_ars.jobs.supplementary import supplementary

run(snakemake, supplementary)  # noqa: F821
