"""Rule engineer (DataEngineer): leakage-safe preparation of the analytic data."""

from edm_ars.jobs.data import engineer
from edm_ars.jobs.rule_io import run

run(snakemake, engineer)  # noqa: F821
