"""edm_ars.core.texescape.escape_latex: the one escaping of text for LaTeX, for the paper and for BibTeX fields."""

from __future__ import annotations

import pytest

from edm_ars.core.texescape import escape_latex
from edm_ars.formulate.bibliography import parse_bibtex
from edm_ars.formulate.metadata import to_bibtex


def test_specials():
    assert escape_latex("R&D 50% $5 #1 a_b {x} ~ ^") == (
        r"R\&D 50\% \$5 \#1 a\_b \textbraceleft{}x\textbraceright{} \textasciitilde{} \textasciicircum{}")
    assert escape_latex(r"a\b <c> d|e") == r"a\textbackslash{}b \textless{}c\textgreater{} d\textbar{}e"
    assert escape_latex("Student's") == "Student's"  # apostrophes kept


@pytest.mark.parametrize("fold", [True, False])
def test_same_specials_and_table_for_the_paper_and_bibtex(fold):
    assert escape_latex("{R&D} 5% \u2014 a \u2265 b", fold_unicode=fold) == (
        r"\textbraceleft{}R\&D\textbraceright{} 5\% --- a \ensuremath{\geq} b")
    assert escape_latex("\u201cquoted\u201d \u2018x\u2019 \u2026 1\u00a0000 \u22122 x\u00b2 \u00b1 \u00d7 \u2192",
                        fold_unicode=fold) == (
        r"``quoted'' `x' \ldots{} 1~000 -2 x\textsuperscript{2} \ensuremath{\pm} \ensuremath{\times} "
        r"\ensuremath{\rightarrow}")


def test_unicode_beyond_latin1_folded_in_the_paper_kept_in_bibtex():
    assert escape_latex("Crist\u00f3bal Ga\u0161evi\u0107") == "Crist\u00f3bal Gasevic"  # Latin-1 kept
    assert escape_latex("\u0141ukasz \u03b2") == "ukasz "  # no ASCII decomposition: dropped
    assert escape_latex("Ga\u0161evi\u0107, \u0141ukasz", fold_unicode=False) == "Ga\u0161evi\u0107, \u0141ukasz"
    assert escape_latex("Crist\u00f3bal Ventura", fold_unicode=False) == "Crist\u00f3bal Ventura"


def test_newlines_tabs_none_and_other_types():
    assert escape_latex("a\nb\r\nc\td") == "a b  c d"
    assert escape_latex("a\nb", fold_unicode=False) == "a b"
    assert escape_latex(None) == "" and escape_latex(None, fold_unicode=False) == ""
    assert escape_latex(0.5) == "0.5" and escape_latex("") == ""


def test_bibtex_fields_stay_balanced():
    paper = {"paperId": "x", "title": "A {braced} \\ title <with> | pipes", "year": 2001,
             "authors": [{"name": "Dragan Ga\u0161evi\u0107"}], "venue": "Proc. of {X} & Y"}
    (entry,) = parse_bibtex(to_bibtex(paper, "gasevic2001braced"))
    assert entry.fields["title"] == (r"A \textbraceleft{}braced\textbraceright{} \textbackslash{} title "
                                     r"\textless{}with\textgreater{} \textbar{} pipes")
    assert entry.authors == ["Ga\u0161evi\u0107, Dragan"]
