"""Rule write (Writer): the paper's LaTeX from the fixed template, numbers from artifacts; then the
integrity check (`edm-ars verify-paper`): numbers reconciled with the artifacts, citations, lint."""

from edm_ars.jobs.rule_io import run
from edm_ars.jobs.writer import write

run(snakemake, write)  # noqa: F821
