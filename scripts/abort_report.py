"""Rule abort_report: the Critic aborted the study; say why, in a file and on the terminal."""

from edm_ars.jobs.rule_io import run
from edm_ars.jobs.writer import abort_report

run(snakemake, abort_report)  # noqa: F821
