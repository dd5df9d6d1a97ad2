"""The Writer stage: an ACM sigconf paper built from a round's artifacts.

`build_paper` fills config/paper_template.tex with deterministic (offline) prose in which every
number is a macro from numbers.tex; `compile_pdf` runs latexmk and reports LaTeX errors and
unresolved citations or references.
"""

from edm_ars.core.texescape import escape_latex
from edm_ars.writer.latex import LatexError, compile_pdf
from edm_ars.writer.macros import MacroTable, macro_name
from edm_ars.writer.paper import SLOTS, build_paper, cited_keys, fill_slot, raw_numbers, slot_content

__all__ = ["SLOTS", "LatexError", "MacroTable", "build_paper", "cited_keys", "compile_pdf",
           "escape_latex", "fill_slot", "macro_name", "raw_numbers", "slot_content"]
