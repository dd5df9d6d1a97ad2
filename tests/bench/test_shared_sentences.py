"""bench/shared_sentences.py: the sentence splitting and the share of verbatim-shared sentences."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("shared_sentences", ROOT / "bench" / "shared_sentences.py")
shared = importlib.util.module_from_spec(_spec)
sys.modules["shared_sentences"] = shared
_spec.loader.exec_module(shared)

PAPER = r"""\documentclass{acmart}
\newcommand{\TestN}{1{,}234}
\title{Not counted: the preamble}
\begin{document}
\begin{abstract}
We analysed \TestN{} students from the \emph{Project STAR} data. The selected model reached AUC = 0.81.
\end{abstract}
\maketitle
\section{Introduction and Motivation of the Study}\label{sec:intro}
\paragraph{Early warning and outcome prediction} Predicting outcomes matters~\citep{baker2009}.
% a comment. With a full stop.
Models such as those of Smith et al. 2020 are common, e.g. random forests; they rank students.
\begin{itemize}
  \item A leakage-aware pipeline for the data
  \item A comparison of \NModels{} models on held-out students.
\end{itemize}
\begin{table}\caption{Performance of the models on the test set.}
\begin{tabular}{lr} Model & AUC \\ Random forest & 0.81 \\ \end{tabular}\end{table}
Is it fair? We ask whether $R^2 = 0.4$ holds for 12.5\% of students (Section~\ref{sec:results}).
\end{document}
"""


def test_body_drops_the_preamble_and_the_end():
    text = shared.plain_text(PAPER)
    assert "preamble" not in text and "documentclass" not in text


def test_sentences_split_and_normalise():
    got = shared.sentences(PAPER)
    assert got == [
        "We analysed students from the Project STAR data",
        "The selected model reached AUC =",
        "Models such as those of Smith et al. are common, e.g. random forests; they rank students",
        "A leakage-aware pipeline for the data",
        "A comparison of models on held-out students",
        "Performance of the models on the test set",
        "We ask whether holds for of students (Section)",
    ]


def test_comments_tables_math_citations_and_numbers_are_dropped():
    text = shared.plain_text(PAPER)
    for gone in ("comment", "Random forest &", "R^2", "baker2009", "sec:intro", "0.81", "1,234", "12.5"):
        assert gone not in text


def test_headings_are_not_sentences():
    text = " ".join(shared.sentences(PAPER, min_words=1))
    assert "Introduction" not in text and "Early warning" not in text


def test_short_sentences_are_not_counted():
    assert "Is it fair?" not in shared.sentences(PAPER)
    assert "Predicting outcomes matters" not in shared.sentences(PAPER)
    assert {"Is it fair?", "Predicting outcomes matters"} <= set(shared.sentences(PAPER, min_words=3))


def test_the_same_sentence_with_other_numbers_is_shared():
    a = r"\begin{document}The model reached an AUC of 0.81 on 1,200 students. It was stable.\end{document}"
    b = r"\begin{document}The model reached an AUC of \BestAUC{} on \TestN{} students. Nothing else holds here.\end{document}"
    r = shared.compare(a, b, min_words=2)
    assert r["common"] == ["The model reached an AUC of on students"]
    assert r["a_in_b"] == pytest.approx(0.5) and r["b_in_a"] == pytest.approx(0.5)


def test_share_is_directional_and_counts_repetitions():
    assert shared.share(["x y", "x y", "z"], ["x y"]) == pytest.approx(2 / 3)
    assert shared.share(["x y"], ["x y", "z", "w"]) == 1.0
    assert shared.share([], ["x"]) == 0.0


def test_main_prints_the_ratio_last(tmp_path, capsys):
    a, b = tmp_path / "a.tex", tmp_path / "b.tex"
    a.write_text(r"\begin{document}One sentence that both papers share. Only paper A says this thing.\end{document}")
    b.write_text(r"\begin{document}One sentence that both papers share.\end{document}")
    assert shared.main([str(a), str(b)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "shared=1.000 a_in_b=0.500 b_in_a=1.000"
    assert shared.main([str(a), str(tmp_path / "missing.tex")]) == 2
