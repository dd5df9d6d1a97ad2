"""Rule supplementary: one supplementary analysis run in the sandbox, with self-repair; its record."""

from edm_ars.jobs.supplementary import run_one
from edm_ars.rule_io import run

run(snakemake, run_one)  # noqa: F821
