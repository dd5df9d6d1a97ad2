"""Rule gate: passes only when the researcher approved exactly the artifacts it shows."""

from edm_ars.jobs.data import gate
from edm_ars.jobs.rule_io import run

run(snakemake, gate)  # noqa: F821
