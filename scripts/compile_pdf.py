"""Rule compile_pdf: latexmk with BibTeX; the log is read for errors and undefined references."""

from edm_ars.jobs.rule_io import run
from edm_ars.jobs.writer import compile_pdf

run(snakemake, compile_pdf)  # noqa: F821
