"""Rule compile_pdf: latexmk with BibTeX; the log is read for errors and undefined references."""

import shutil
from pathlib import Path

from edm_ars.rule_io import log, run
from edm_ars.writer.latex import compile_pdf


def main(smk):
    pdf = compile_pdf(Path(smk.input.tex), Path(smk.log[0]).with_suffix(".latexmk.log"),
                      max_overfull_pt=smk.params.max_overfull_pt)
    tmp = Path(smk.output.pdf).with_suffix(".pdf.tmp")
    shutil.copyfile(pdf, tmp)
    tmp.replace(smk.output.pdf)
    log.info("built %s", smk.output.pdf)


run(snakemake, main)  # noqa: F821
