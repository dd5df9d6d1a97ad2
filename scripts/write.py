"""Rule write (Writer): the paper's LaTeX from the fixed template, numbers from artifacts; then the
integrity check (`edm-ars verify-paper`): numbers reconciled with the artifacts, citations, lint."""

from edm_ars.jobs.writer import write
from edm_ars.rule_io import run

run(snakemake, write)  # noqa: F821
