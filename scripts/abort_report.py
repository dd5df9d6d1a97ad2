"""Rule abort_report: the Critic aborted the study; say why, in a file and on the terminal."""

from edm_ars.jobs.writer import abort_report
from edm_ars.rule_io import run

run(snakemake, abort_report)  # noqa: F821
