"""Rule findings: the run's studies into output/findings.json and the findings store."""

from edm_ars.jobs.branches import findings
from edm_ars.jobs.rule_io import run

run(snakemake, findings)  # noqa: F821
