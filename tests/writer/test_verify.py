"""`edm-ars verify-paper`: numbers reconciled with the artifacts at their printed precision, citations
from retrieval only, and the lint."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edm_ars.writer.integrity import CitationError, lint, repair_citations
from edm_ars.writer.verify import verify_paper

ARTIFACTS = {
    "results.json": {
        "models": {"logistic": {"metrics": {"auc": 0.8443, "coef_x": -1.904982835}, "ci": {"auc": [0.8286, 0.8594]}},
                   "xgboost": {"metrics": {"auc": 0.8397, "coef_x": 0.2}, "ci": {"auc": [0.8241, 0.8551]}}},
        "fairness": {"groups": [{"group": "Female", "n": 1204}, {"group": "Male", "n": 1187}],
                     "selection_rate": 0.205},
        "test_n": 2391,
    },
}
PREAMBLE = "\\documentclass{acmart}\n\\input{numbers.tex}\n\\begin{document}\n"


def paper(tmp_path: Path, results: str, *, methods: str = "We used students.", abstract: str = "We study students. " * 30,
          macros: list[dict] | None = None, bib: str = "") -> Path:
    tex = (PREAMBLE + "\\begin{abstract}\n%%BEGIN:ABSTRACT%%\n" + abstract + "\n%%END:ABSTRACT%%\n\\end{abstract}\n"
           "\\section{Methods}\n%%BEGIN:METHODS%%\n" + methods + "\n%%END:METHODS%%\n"
           "\\section{Results}\n%%BEGIN:RESULTS%%\n" + results + "\n%%END:RESULTS%%\n\\end{document}\n")
    (tmp_path / "paper.tex").write_text(tex)
    macros = macros or []
    (tmp_path / "numbers.json").write_text(json.dumps({"macros": macros}))
    (tmp_path / "numbers.tex").write_text("\n".join(f"\\newcommand{{{m['macro']}}}{{{m['value']}}} % {m['source']}"
                                                    for m in macros) + "\n")
    (tmp_path / "references.bib").write_text(bib)
    return tmp_path / "paper.tex"


def numbers(tmp_path, text, **kw):
    report = verify_paper(paper(tmp_path, text, **kw), artifacts=ARTIFACTS)
    return report, {n.text: n.status for n in report.numbers}


@pytest.mark.parametrize("printed, status", [("-1.90", "matched"), ("-1.905", "matched"), ("-1.92", "unmatched"),
                                             ("0.844", "matched"), ("0.8443", "matched"), ("0.845", "unmatched")])
def test_a_number_matches_at_its_printed_precision(tmp_path, printed, status):
    report, found = numbers(tmp_path, f"The coefficient was {printed} in this model.")
    assert found[printed] == status
    assert report.ok == (status == "matched")  # Results is strict


def test_percentages_years_small_integers_and_sibling_sums(tmp_path):
    report, found = numbers(tmp_path, "Of the 2,391 test students (2009 to 2016 waves, top 5 features), "
                                      "20.5\\% were selected; 2{,}391 = 1{,}204 + 1{,}187 students.")
    assert found["20.5"] == "matched"  # 0.205 x 100
    assert found["2009"] == found["2016"] == found["5"] == "exempt"
    assert found["2,391"] == found["2{,}391"] == found["1{,}204"] == "matched"
    report, found = numbers(tmp_path, "Together 2,391 and a planted total of 2,392 students.")
    assert found["2,392"] == "unmatched" and not report.ok


def test_a_difference_of_siblings_matches(tmp_path):
    _, found = numbers(tmp_path, "Logistic regression exceeded XGBoost by 0.0046.")
    assert found["0.0046"] == "matched"  # 0.8443 - 0.8397 (the same metric of two models)


def test_a_number_next_to_a_metric_must_be_a_value_of_that_metric(tmp_path):
    report, _ = numbers(tmp_path, "The selection rate was 0.205, and the AUC reached 0.205 on one split.")
    assert [n.status for n in report.numbers] == ["matched", "unmatched"]  # a selection rate, not an AUC


def test_intervals(tmp_path):
    report, _ = numbers(tmp_path, "AUC = 0.844, 95\\% CI [0.829, 0.859].")
    assert report.ok and not [w for w in report.warnings if "interval" in w]
    report, _ = numbers(tmp_path, "AUC = 0.844, 95\\% CI [0.829, 0.871].")
    assert report.ok and any("one end of an interval" in w for w in report.warnings)
    report, _ = numbers(tmp_path, "AUC = 0.844.", methods="An interval [0.512, 0.634] nobody computed.")
    assert not report.ok and any("both ends" in f and "METHODS" in f for f in report.failures)


def test_a_planted_number_fails_only_in_strict_sections(tmp_path):
    report, _ = numbers(tmp_path, "AUC = 0.844.", methods="A stray 0.4321 in the methods.")
    assert report.ok and any("0.4321" in w for w in report.warnings)
    report, _ = numbers(tmp_path, "AUC = 0.844, and on a subsample 0.4321.")
    assert not report.ok
    assert any(f.startswith("paper.tex:15: [RESULTS] 0.4321") for f in report.failures), report.failures


def test_a_macro_is_checked_against_its_own_source(tmp_path):
    macros = [{"macro": "\\BestAUC", "value": "0.844", "source": "results.json:models.logistic.metrics.auc"},
              {"macro": "\\BadAUC", "value": "0.840", "source": "results.json:models.logistic.metrics.auc"},
              {"macro": "\\Margin", "value": "0.005", "raw": 0.0046, "derived": True,
               "source": "|results.json:models.logistic.metrics.auc - results.json:models.xgboost.metrics.auc|"}]
    report, found = numbers(tmp_path, "AUC = \\BestAUC{} and \\BadAUC{}, a margin of \\Margin{}.", macros=macros)
    assert found["0.844"] == "matched" and found["0.005"] == "matched"
    # 0.840 is some other artifact value (xgboost's AUC), but not the one the macro claims to print
    assert found["0.840"] == "unmatched" and any("\\BadAUC prints 0.840" in f for f in report.failures)


@pytest.mark.workflow  # runs the edm-ars command end to end
def test_cli_exit_codes(tmp_path):
    p = paper(tmp_path, "AUC = 0.844.")
    (tmp_path / "results.json").write_text(json.dumps(ARTIFACTS["results.json"]))
    (tmp_path / "sources.json").write_text(json.dumps({"results.json": "results.json"}))
    ok = subprocess.run(["edm-ars", "verify-paper", str(p)], capture_output=True, text=True)
    assert ok.returncode == 0 and "0 unmatched" in ok.stdout
    p.write_text(p.read_text().replace("AUC = 0.844.", "AUC = 0.844 and 0.777."))
    bad = subprocess.run(["edm-ars", "verify-paper", str(p), "--json", str(tmp_path / "v.json")],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "paper.tex:15: [RESULTS] 0.777" in bad.stdout
    assert json.loads((tmp_path / "v.json").read_text())["counts"]["unmatched"] == 1
    (tmp_path / "sources.json").unlink()
    none = subprocess.run(["edm-ars", "verify-paper", str(p)], capture_output=True, text=True)
    assert none.returncode == 2 and "no artifacts to verify against" in none.stderr


# ---- citations --------------------------------------------------------------------------------------
def test_an_unknown_key_is_stripped_and_the_sentence_still_reads():
    known = {"chen2016xgboost", "breiman2001random"}
    text, removed = repair_citations(
        "Gradient boosting is strong on tabular data~\\citep{chen2016xgboost,smith2023made}. Forests are robust "
        "\\citep{nobody2020}. \\citet{ghost2021} showed the same.", known)
    assert removed == ["smith2023made", "nobody2020", "ghost2021"]
    assert text == ("Gradient boosting is strong on tabular data~\\citep{chen2016xgboost}. Forests are robust. "
                    "Prior work showed the same.")


@pytest.mark.parametrize("bad", ["as shown before \\cite{TODO}.", "as shown before [Author, Year].",
                                 "as shown before [?].", "as shown before [Smith et al., 2020].",
                                 "as shown before \\citep{}."])
def test_a_placeholder_citation_fails(bad):
    with pytest.raises(CitationError, match="placeholder"):
        repair_citations(bad, {"chen2016xgboost"})


def test_verify_fails_on_a_citation_missing_from_the_bibliography(tmp_path):
    bib = "@article{chen2016xgboost,\n  title = {XGBoost},\n  year = {2016}\n}\n"
    report = verify_paper(paper(tmp_path, "AUC = 0.844~\\citep{chen2016xgboost,ghost2021}.", bib=bib),
                          artifacts=ARTIFACTS)
    assert not report.ok and any("'ghost2021' is not in references.bib" in f for f in report.failures)


def test_related_work_needs_five_citations_when_literature_exists(tmp_path):
    tex = paper(tmp_path, "AUC = 0.844.")
    text = tex.read_text().replace("\\section{Methods}", "\\section{Related Work}\n%%BEGIN:RELATED_WORK%%\n"
                                   "Boosting works~\\citep{chen2016xgboost}.\n%%END:RELATED_WORK%%\n\\section{Methods}")
    tex.write_text(text)
    (tmp_path / "references.bib").write_text("@article{chen2016xgboost,\n  title = {XGBoost}\n}\n")
    lit = {"papers": [{"key": f"k{i}", "status": "VERIFIED"} for i in range(6)]}
    report = verify_paper(tex, artifacts=ARTIFACTS | {"literature_context.json": lit})
    assert any("related work cites 1 reference(s); at least 5" in f for f in report.failures)
    assert verify_paper(tex, artifacts=ARTIFACTS).ok  # no literature: nothing to require


# ---- lint -------------------------------------------------------------------------------------------
def test_lint_reports_placeholders_empty_sections_lengths_and_causal_verbs():
    words = " ".join(["word"] * 700)
    findings = lint({"ABSTRACT": "TODO: write the abstract. " + " ".join(["w"] * 160),
                     "METHODS": "", "DISCUSSION": words,
                     "RESULTS": words + " Higher GPA causes college attendance. Expectations led to enrolment.",
                     "LIMITATIONS": "This analysis does not show that changing a predictor would change the outcome; "
                                    "predictive associations do not identify causes. " + " ".join(["w"] * 300)})
    kinds = {(f.kind, f.section) for f in findings}
    assert ("placeholder", "ABSTRACT") in kinds and ("empty_section", "METHODS") in kinds
    assert ("causal", "RESULTS") in kinds and len([f for f in findings if f.kind == "causal"]) == 2
    assert not any(f.section == "DISCUSSION" for f in findings)  # 700 words: within the target
    assert not any(f.section == "LIMITATIONS" for f in findings)  # negated and framing sentences pass
    assert any(f.kind == "length" and f.section == "ABSTRACT" for f in findings) is False
    assert [f.kind for f in lint({"LIMITATIONS": "The subjects were ninth-graders. " + " ".join(["w"] * 300)})] \
        == ["wording"]
    short = lint({"INTRODUCTION": " ".join(["w"] * 300)})
    assert [f.kind for f in short] == ["length"] and "300 words" in short[0].message


# ---- every citation command ----------------------------------------------------------------------------
BIB = "@article{chen2016xgboost,\n  title = {XGBoost},\n  year = {2016}\n}\n"


@pytest.mark.parametrize("cite", [
    "\\cite{ghost}", "\\citet{ghost}", "\\citep{ghost}", "\\citeauthor{ghost}", "\\citeyear{ghost}",
    "\\citealp{ghost}", "\\citeyearpar{ghost}", "\\citealt{ghost}", "\\citenum{ghost}", "\\Citet{ghost}",
    "\\Citep{ghost}", "\\Citealt{ghost}", "\\Citeauthor{ghost}", "\\parencite{ghost}", "\\textcite{ghost}",
    "\\autocite{ghost}", "\\Textcite{ghost}", "\\cite*{ghost}", "\\citet*{ghost}", "\\citep[see][p.~3]{ghost}",
    "\\citep [e.g.] { chen2016xgboost ,  ghost }", "\\autocite[p.~12]{chen2016xgboost,ghost}"])
def test_every_citation_command_is_checked_against_the_bibliography(tmp_path, cite):
    report = verify_paper(paper(tmp_path, f"AUC = 0.844~{cite}.", bib=BIB), artifacts=ARTIFACTS)
    bad = [f for f in report.failures if "'ghost' is not in references.bib" in f]
    assert len(bad) == 1 and bad[0].startswith("paper.tex:15: \\" + cite[1:].split("{")[0].split("[")[0].strip())
    known = cite.replace("ghost", "chen2016xgboost")
    assert verify_paper(paper(tmp_path, f"AUC = 0.844~{known}.", bib=BIB), artifacts=ARTIFACTS).ok


def test_citation_keys_across_lines_are_named_with_their_line(tmp_path):
    report = verify_paper(paper(tmp_path, "AUC = 0.844~\\citep{chen2016xgboost,\n  ghost}. % \\citep{commented}",
                                bib=BIB), artifacts=ARTIFACTS)
    assert [f for f in report.failures if "references.bib" in f] == \
        ["paper.tex:16: \\citep key 'ghost' is not in references.bib"]  # the comment is not printed: not read
    report = verify_paper(paper(tmp_path, "AUC = 0.844~\\citealp{TODO}.", bib=BIB), artifacts=ARTIFACTS)
    assert any("paper.tex:15: \\citealp: placeholder citation key 'TODO'" in f for f in report.failures)


@pytest.mark.parametrize("text, repaired", [
    ("\\Citet{ghost} showed it.", "Prior work showed it."),
    ("\\textcite{ghost} argued so.", "Prior work argued so."),
    ("\\citeauthor*{ghost} found it.", "Prior work found it."),
    ("Some agree \\citealt{ghost}.", "Some agree prior work."),
    ("As noted \\parencite{ghost}.", "As noted."),
    ("As noted~\\autocite[p.~2]{chen2016xgboost, ghost}.", "As noted~\\autocite[p.~2]{chen2016xgboost}."),
    ("As noted \\citep*[see][]{ ghost }.", "As noted."),
    ("Smith (\\citeyear{ghost}) and \\citeyearpar{ghost}.", "Smith and."),
    ("Ref.~\\citenum{ghost} agrees; \\cite*{chen2016xgboost,ghost} too.", "Ref. agrees; \\cite*{chen2016xgboost} too."),
])
def test_the_writer_repairs_every_citation_command(text, repaired):
    out, removed = repair_citations(text, {"chen2016xgboost"})
    assert out == repaired and set(removed) == {"ghost"}


@pytest.mark.parametrize("bad", ["\\citealp{TODO}", "\\textcite{}", "\\Citep[see]{?}", "\\parencite{citation_needed}",
                                 "[citation needed]", "[CITATION NEEDED]", "[REF]", "[citation]"])
def test_the_writer_rejects_a_placeholder_citation_in_any_form(bad):
    with pytest.raises(CitationError, match="placeholder"):
        repair_citations(f"as shown before {bad}.", {"chen2016xgboost"})


def test_cited_keys_reads_every_command():
    from edm_ars.writer import cited_keys

    tex = ("\\citealp{a, b} \\textcite{c} \\Citet*[p.~1]{a} \\parencite[see][]{d} \\citeyearpar{e} % \\citep{f}\n"
           "\\autocite{g}\\nocite{*}")
    assert cited_keys(tex) == ["a", "b", "c", "d", "e", "g"]  # what build_paper puts in references.bib


# ---- placeholders ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, kind", [
    ("Subgroups differ [CITATION NEEDED].", "citation"), ("As shown in [INSERT FIGURE 2].", "note"),
    ("The threshold is [TBD].", "note"), ("Prior work agrees [citation].", "citation"),
    ("Prior work agrees [REF].", "citation"), ("Prior work agrees [Author, Year].", "citation"),
    ("Prior work agrees [?].", "citation"), ("The result holds [to be confirmed].", "note"),
    ("The outcome {{outcome}} was predicted.", "slot"), ("The outcome <<outcome>> was predicted.", "slot"),
    ("The outcome \\textless{}\\textless{}outcome\\textgreater{}\\textgreater{} was predicted.", "slot"),
    ("The outcome $outcome_label$ was predicted.", "slot"), ("The outcome ${outcome} was predicted.", "slot"),
    ("The outcome \\$outcome was predicted.", "slot"), ("The outcome \\%(outcome)s was predicted.", "slot"),
    ("Write the {section} section.", "slot"), ("Write the \\{section\\} section.", "slot"),
    ("The AUC was {auc:.3f} overall.", "slot"),
    ("TODO: describe the sample.", "word"), ("The threshold is TBD.", "word"), ("Check XXX here.", "word"),
    ("FIXME the split.", "word"), ("A todo remains.", "word"), ("\\todo{describe the sample}", "word"),
    ("Lorem ipsum dolor sit amet.", "filler"), ("As Figure~?? shows.", "unresolved"),
])
def test_placeholder_text_fails_the_paper_anywhere(tmp_path, text, kind):
    report = verify_paper(paper(tmp_path, "AUC = 0.844.", methods=f"We used students. {text}"), artifacts=ARTIFACTS)
    assert not report.ok
    assert any(f.startswith(f"paper.tex:11: placeholder {kind} ") for f in report.failures), report.failures


def test_placeholders_outside_the_slots_and_unfilled_template_slots_fail(tmp_path):
    tex = paper(tmp_path, "AUC = 0.844.")
    source = tex.read_text()
    tex.write_text(source.replace("\\end{document}", "\\appendix\n\\section{Extra}\nSee the table [TBD].\n"
                                  "%%PLACEHOLDER:DISCUSSION%%\nThe model was %(model)s and more text.\n"
                                  "\\end{document}"))
    failures = verify_paper(tex, artifacts=ARTIFACTS).failures
    assert "paper.tex:19: placeholder note '[TBD]'" in failures
    assert "paper.tex:20: placeholder slot '%%PLACEHOLDER:DISCUSSION%%'" in failures  # the template's unfilled slot
    assert "paper.tex:21: placeholder slot '%(model)s'" in failures  # a comment now: the rest of the line is lost


@pytest.mark.parametrize("text", [
    "% TODO: tighten this paragraph (a comment is not printed, so it is not read)",
    "The mastodon, the autodoc tool, X1XXX, FIXMEs and TBDX are words of their own.",
    "An interval [0.512, 0.634] \\begin{figure}[t] x\\\\[2pt] \\item[Note] \\citep[p.~3]{chen2016xgboost}.",
    "Counts 23{,}503, \\emph{name}, \\begin {itemize} \\end {itemize}, $x_i$, $R^{2}$, $n$, \\$5 and top 5\\% \\#1.",
    "\\multicolumn{2}{c}{Model} and {\\small text} and \\% (a percent) and a question? Yes? Yes.",
])
def test_placeholder_checks_leave_ordinary_latex_alone(tmp_path, text):
    report = verify_paper(paper(tmp_path, "AUC = 0.844.", methods=f"We used students. {text}", bib=BIB),
                          artifacts=ARTIFACTS)
    assert not [f for f in report.failures if "placeholder" in f], report.failures


# ---- scientific notation, percentages, tables ---------------------------------------------------------
SMALL = ARTIFACTS | {"evaluation.json": {"p_value": 0.0012345, "tiny": 3.2e-7}}


@pytest.mark.parametrize("printed, status", [
    ("1.23e-3", "matched"), ("1.2e-3", "matched"), ("1.23E-03", "matched"), ("1.3e-3", "unmatched"),
    ("1.23 \\times 10^{-3}", "matched"), ("$1.23\\times 10^{-3}$", "matched"), ("1.23\\cdot10^{-3}", "matched"),
    ("$1.234 \\times 10^{$-$3}$", "matched"), ("1.2\\texttimes{} 10\\textsuperscript{-3}", "matched"),
    ("$1.24 \\times 10^{-3}$", "unmatched"), ("1.25\\cdot10^{-3}", "unmatched"), ("3.2e-7", "matched"),
    ("3.3e-7", "unmatched"), ("$3.2\\times 10^{-6}$", "unmatched"),
])
def test_scientific_notation_is_reconciled(tmp_path, printed, status):
    report = verify_paper(paper(tmp_path, f"The value was {printed} on the test set."), artifacts=SMALL)
    assert [(n.exponent < 0, n.status) for n in report.numbers] == [(True, status)], report.numbers
    assert report.ok == (status == "matched")  # Results is strict


def test_a_hexadecimal_hash_that_looks_like_scientific_notation_is_no_number(tmp_path):
    """A configuration hash such as 957773e28598 (digits, e, digits) is an identifier: read as 957773 x 10^28598 it
    overflowed a float and stopped the Writer."""
    report = verify_paper(paper(tmp_path, "The AUC was 0.844.", methods="Configuration 957773e28598 and 12e345."),
                          artifacts=SMALL)
    assert report.ok and [n.text for n in report.numbers] == ["0.844"], report.numbers


def test_a_macro_in_scientific_notation_is_checked_against_its_source(tmp_path):
    """fmt_plain prints small and large hyperparameters as \\ensuremath{m\\times 10^{e}}: read as m x 10^e."""
    macros = [{"macro": "\\Tiny", "value": "\\ensuremath{3.2\\times 10^{-7}}", "source": "evaluation.json:tiny"},
              {"macro": "\\Wrong", "value": "\\ensuremath{3.3\\times 10^{-7}}", "source": "evaluation.json:tiny"},
              {"macro": "\\TestN", "value": "\\ensuremath{2.391\\times 10^{3}}", "source": "results.json:test_n"}]
    report = verify_paper(paper(tmp_path, "Values \\Tiny{}, \\Wrong{} and \\TestN{}.", macros=macros), artifacts=SMALL)
    assert [(n.macro, n.status) for n in report.numbers] == [("Tiny", "matched"), ("Wrong", "unmatched"),
                                                            ("TestN", "matched")]
    assert any("\\Wrong prints 3.3\\times 10^{-7} but evaluation.json:tiny is 3.2e-07" in f for f in report.failures)


@pytest.mark.parametrize("printed, status", [
    ("84.4\\%", "matched"), ("84.43\\%", "matched"), ("84.4~\\%", "matched"), ("84.4\\,\\%", "matched"),
    ("84.4 percent", "matched"), ("84 per cent", "matched"), ("84\\%", "matched"),
    ("84.9\\%", "unmatched"), ("84.5\\%", "unmatched"), ("84.9 percent", "unmatched"), ("85 per cent", "unmatched"),
    ("87\\%", "unmatched"),
])
def test_a_percentage_is_reconciled_at_its_printed_precision(tmp_path, printed, status):
    report, found = numbers(tmp_path, f"The AUC was {printed} on the test set.")
    assert [n.status for n in report.numbers] == [status] and report.numbers[0].percent
    assert report.ok == (status == "matched")


def test_a_confidence_level_is_exempt(tmp_path):
    report, _ = numbers(tmp_path, "AUC = 0.844 (95\\% CI [0.829, 0.859]); confidence intervals (95\\%) were "
                                  "bootstrapped; 90\\% bootstrap intervals too.")
    assert report.ok and [n.how for n in report.numbers if n.percent] == ["confidence level"] * 3


@pytest.mark.parametrize("env", ["tabular", "tabular*", "tabularx", "longtable"])
def test_a_table_anywhere_is_checked_strictly(tmp_path, env):
    spec = {"tabular": "{lr}", "tabular*": "{\\columnwidth}{lr}", "tabularx": "{\\columnwidth}{lX}",
            "longtable": "{lr}"}[env]
    table = f"\\begin{{{env}}}{spec}\nModel & AUC \\\\\nA & 0.4321 \\\\\n\\end{{{env}}}"
    report, _ = numbers(tmp_path, "AUC = 0.844.", methods=f"We used students.\n{table}\nAfter it, 0.4321 again.")
    assert any(f.startswith("paper.tex:14: [METHODS] 0.4321") for f in report.failures), report.failures
    assert any(w.startswith("paper.tex:16: [METHODS] 0.4321") for w in report.warnings)  # outside: a warning


# ---- the review's verdict: the UNVERIFIED block ---------------------------------------------------------
BLOCK = "\\unverifiedbox{\\textbf{Unverified draft.} This paper has not passed review.}"
UNVERIFIED_REVIEWS = [
    {"round": 3, "verdict": "PASS", "rubric_verdict": "REVISE", "unverified": True},  # REVISE, no round left
    {"round": 3, "verdict": "PASS", "rubric_verdict": "REVISE", "unverified": False},
    {"round": 1, "verdict": "REVISE", "unverified": False},
]


def _with_unverified(tmp_path: Path, block: str) -> Path:
    tex = paper(tmp_path, "AUC = 0.844.")
    tex.write_text(tex.read_text().replace("\\section{Methods}", f"%%BEGIN:UNVERIFIED%%\n{block}\n%%END:UNVERIFIED%%\n"
                                                                 "\\section{Methods}"))
    return tex


@pytest.mark.parametrize("review", UNVERIFIED_REVIEWS)
def test_an_unverified_review_requires_the_block(tmp_path, review):
    artifacts = ARTIFACTS | {"review_report.json": review}
    report = verify_paper(_with_unverified(tmp_path, ""), artifacts=artifacts)
    assert not report.ok
    assert any(f.startswith("paper.tex:9: the review (review_report.json") and "no UNVERIFIED block" in f
               for f in report.failures), report.failures
    assert not verify_paper(_with_unverified(tmp_path, "% " + BLOCK), artifacts=artifacts).ok  # commented out
    assert verify_paper(_with_unverified(tmp_path, BLOCK), artifacts=artifacts).ok


def test_a_verified_review_needs_no_block_and_a_missing_review_is_said(tmp_path):
    review = {"round": 0, "verdict": "PASS", "rubric_verdict": "PASS", "unverified": False}
    report = verify_paper(_with_unverified(tmp_path, ""), artifacts=ARTIFACTS | {"review_report.json": review})
    assert report.ok and not [w for w in report.warnings if "review" in w]
    report = verify_paper(_with_unverified(tmp_path, ""), artifacts=ARTIFACTS)
    assert report.ok and any("no review_report.json among the artifacts" in w for w in report.warnings)


def _cli(*args: str) -> subprocess.CompletedProcess:
    """verify-paper of this worktree (the installed `edm-ars` may point at another checkout)."""
    root = Path(__file__).resolve().parents[2]
    return subprocess.run([sys.executable, "-m", "edm_ars.cli", "verify-paper", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root / "scripts")})


@pytest.mark.workflow  # runs the edm-ars command end to end
def test_cli_reads_the_review_listed_in_sources_json(tmp_path):
    p = _with_unverified(tmp_path, "")
    (tmp_path / "results.json").write_text(json.dumps(ARTIFACTS["results.json"]))
    (tmp_path / "review_report.json").write_text(json.dumps(UNVERIFIED_REVIEWS[0]))
    (tmp_path / "sources.json").write_text(json.dumps({"results.json": "results.json",
                                                       "review_report.json": "review_report.json"}))
    bad = _cli(str(p))
    assert bad.returncode == 1 and "paper.tex:9: the review (review_report.json, round 3)" in bad.stdout
    p.write_text(p.read_text().replace("%%BEGIN:UNVERIFIED%%\n", "%%BEGIN:UNVERIFIED%%\n" + BLOCK))
    ok = _cli(str(p))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    (tmp_path / "review_report.json").write_text("{not json")
    unreadable = _cli(str(p))
    assert unreadable.returncode == 2 and "review_report.json" in unreadable.stderr


# ---- macro sources: every form the Writer emits is evaluated (writer/sources.py) ----------------------------
SOURCE_ARTIFACTS = {
    "results.json": {
        "models": {"xgboost": {"metrics": {"auc": 0.8231, "rmse": 6.42},
                               "search": "random search of 20 candidates raced over folds: all on 2 folds, the best "
                                         "5 on all 5", "best_params": {"base_models": ["a", "b", "c"]}},
                   "logistic": {"metrics": {"auc": 0.8190}, "ci": {"auc": [0.8101, 0.8277]}}},
        "selection_evidence": {"overlapping_top": ["xgboost", "logistic", "elastic_net"]},
        "stability": {"thresholds": {"unstable_top5": 0.4}, "runs": [{"kind": "seed"}, {"kind": "seed"},
                                                                     {"kind": "subsample"}]},
        "fairness": {"attributes": {
            "X1SEX": {"kind": "attribute", "groups": [{"reliable": True}, {"reliable": True}],
                      "gaps": {"auc": {"gap": 0.02, "flagged": False}, "tpr": {"gap": 0.09, "flagged": True},
                               "fpr": None}},
            "X1RACE": {"kind": "attribute", "groups": [{"reliable": True}, {"reliable": False}, {"reliable": False}],
                       "gaps": {"auc": {"gap": 0.12, "flagged": True}}},
            "X1RACE x X1SEX": {"kind": "intersection", "groups": [{"reliable": False}, {"reliable": True}],
                               "gaps": {"auc": {"gap": 0.3, "flagged": True}}}}},
        "shap": {"by_model": {
            "xgboost": {"top_features": [{"feature": f} for f in ("a", "b", "c", "d", "e", "f")]},
            "logistic": {"top_features": [{"feature": f} for f in ("b", "a", "x", "e", "y")]},
            "elastic_net": {"top_features": [{"feature": f} for f in ("a", "e", "b", "z", "w")]},
            "stacking": {"top_features": []}}},
    },
    "data_report.json": {
        "original_n": 23503, "analytic_n": 17012, "class_balance": {"0.0": 5103, "1.0": 11909},
        "outcome_summary": {"sd": 9.87}, "predictors_before": ["X1SES", "X1PARINC", "X1SEX"],
        "missingness": {"X1SES": {"pct_missing": 0.0}, "X1PARINC": {"pct_missing": 18.4},
                        "X1SEX": {"pct_missing": 0.2}, "X9OTHER": {"pct_missing": 40.0}},
        "checks": [{"passed": True}, {"passed": False}, {"passed": True}],
        "split": {"method": "StratifiedGroupKFold(n_splits=5) fold 0",
                  "repeated": {"train_units": 1376, "test_units": 345, "units_on_both_sides": 2}},
    },
    "literature_context.json": {"papers": [{"status": "VERIFIED"}, {"status": "HALLUCINATED"}, {}]},
    "claims.json": {"claims": [{"status": "supported"}, {"status": "inconclusive"}, {"status": "supported"}]},
    "review_report.json": {"verdict": "PASS", "issues": [{}, {}]},
}


@pytest.mark.parametrize("source, value", [
    # path (a number; an interval; a key holding dots; a key holding spaces)
    ("results.json:models.xgboost.metrics.auc", 0.8231),
    ("results.json:models.logistic.ci.auc", [0.8101, 0.8277]),
    ("results.json:models.logistic.ci.auc.1", 0.8277),
    ("data_report.json:class_balance.1.0", 11909),
    ("results.json:fairness.attributes.X1RACE x X1SEX.gaps.auc.gap", 0.3),
    # length and difference
    ("len(data_report.json:predictors_before)", 3), ("len(results.json:fairness.attributes.X1RACE x X1SEX.groups)", 2),
    ("len(results.json:selection_evidence.overlapping_top) - 1", 2),
    # sums (the units of repeated records in the two sets, less those on both sides)
    ("data_report.json:split.repeated.train_units + data_report.json:split.repeated.test_units", 1721),
    ("data_report.json:split.repeated.train_units + data_report.json:split.repeated.test_units"
     " - data_report.json:split.repeated.units_on_both_sides", 1719),
    # absolute difference
    ("|results.json:models.xgboost.metrics.auc - results.json:models.logistic.metrics.auc|", 0.0041),
    # ratios: of two artifacts, of one artifact, a share of a total
    ("results.json:models.xgboost.metrics.rmse / data_report.json:outcome_summary.sd", 6.42 / 9.87),
    ("data_report.json:analytic_n / data_report.json:original_n", 17012 / 23503),
    ("data_report.json:class_balance.1.0 / sum(class_balance)", 11909 / 17012),
    # a percentage of a share
    ("100 * results.json:stability.thresholds.unstable_top5", 40.0),
    # counts through filters
    ("count(data_report.json:checks[passed])", 2),
    ("count(results.json:stability.runs[kind=seed])", 2),
    ("count(literature_context.json:papers[status!=VERIFIED])", 2),
    ("count(claims.json:claims[status=supported])", 2),
    ("count(data_report.json:missingness[predictors, pct_missing>0])", 2),
    ("count(results.json:fairness.attributes[kind=attribute].groups[reliable=false])", 2),
    ("count(results.json:fairness.attributes[kind=attribute].gaps[flagged])", 2),
    ("count(results.json:fairness.attributes[kind=attribute].gaps[not null])", 3),
    ("count(results.json:fairness.attributes.X1RACE x X1SEX.groups[reliable])", 1),
    ("len(review_report.json:issues)", 2),
    # top-five sets
    ("|top5(results.json:shap.by_model.xgboost.top_features) & top5(results.json:shap.by_model.logistic.top_features)|",
     3),
    ("count(features in top5 of every results.json:shap.by_model entry)", 3),
    # a number read from a text
    ("data_report.json:split.method (n_splits)", [5, 0]),
    ("results.json:models.xgboost.search (candidates)", [20, 2, 5, 5]),
    ("len(results.json:models.xgboost.best_params.base_models)", 3),
])
def test_every_source_form_the_writer_emits_is_evaluated(source, value):
    from edm_ars.writer.sources import source_values

    assert source_values(source, SOURCE_ARTIFACTS) == pytest.approx(value if isinstance(value, list) else [value])


@pytest.mark.parametrize("source, why", [
    ("results.json:models.ridge.metrics.auc", "absent"),
    ("evaluation.json:auc", "not among the paper's artifacts"),
    ("results.json:models.xgboost.metrics", "not a number"),
    ("median(results.json:models.xgboost.metrics.auc)", "not a source form"),
    ("data_report.json:analytic_n / data_report.json:nothing", "absent"),
    ("count(data_report.json:checks[passed ~ yes])", "unknown filter condition"),
])
def test_a_source_that_cannot_be_evaluated_says_why(source, why):
    from edm_ars.writer.sources import SourceError, source_values

    with pytest.raises(SourceError, match=why):
        source_values(source, SOURCE_ARTIFACTS)


RATIO = "results.json:models.xgboost.metrics.rmse / data_report.json:outcome_summary.sd"


@pytest.mark.parametrize("printed, status", [("0.65", "matched"), ("0.66", "unmatched"), ("0.64", "unmatched")])
def test_a_ratio_macro_is_checked_against_its_ratio(tmp_path, printed, status):
    """\\BestRMSEinSD (6.42 / 9.87 = 0.6505): the right value is matched, a wrong one fails the paper even when some
    other artifact value happens to round the same (0.66 is no value here; 0.64 is planted as one)."""
    arts = copy.deepcopy(SOURCE_ARTIFACTS)
    arts["results.json"]["models"]["logistic"]["metrics"]["brier"] = 0.6401
    macros = [{"macro": "\\BestRMSEinSD", "value": printed, "raw": 6.42 / 9.87, "derived": True, "source": RATIO}]
    report = verify_paper(paper(tmp_path, "The RMSE was \\BestRMSEinSD{} outcome SDs.", macros=macros), artifacts=arts)
    assert [(n.macro, n.status) for n in report.numbers] == [("BestRMSEinSD", status)]
    assert report.ok == (status == "matched")
    if status == "unmatched":
        assert any(f"\\BestRMSEinSD prints {printed} but {RATIO} is 0.650456" in f for f in report.failures), \
            report.failures


def test_a_macro_whose_source_cannot_be_evaluated_is_unmatched(tmp_path):
    """An unknown source form is not matched against any artifact value that happens to equal the printed one."""
    macros = [{"macro": "\\Odd", "value": "0.823", "source": "median(results.json:models.xgboost.metrics.auc)"}]
    report = verify_paper(paper(tmp_path, "The AUC was \\Odd{}.", macros=macros), artifacts=SOURCE_ARTIFACTS)
    assert [n.status for n in report.numbers] == ["unmatched"]
    assert any("\\Odd prints 0.823 but its source cannot be evaluated" in f and "not a source form" in f
               for f in report.failures), report.failures


@pytest.mark.parametrize("kind", ["binary", "regression", "real", "real_regression"])
def test_every_macro_of_the_writer_fixture_papers_evaluates_to_its_value(tmp_path, kind):
    """Every computed (not quoted) macro the Writer registers for its fixture papers has a source that evaluates to
    the value it records (a percentage macro: 100 times the value), so verify-paper checks it against its source."""
    import test_writer as tw

    from edm_ars.review.claims import code_claims, document
    from edm_ars.writer.sources import source_values

    if kind in ("binary", "regression"):
        binary = kind == "binary"
        arts = {"spec": tw.spec(binary), "literature": tw.literature(), "data_report": tw.data_report(binary),
                "results": tw.results(binary), "review": tw.review(not binary)}
        _, out = tw._build(tmp_path, binary=binary, passed=not binary)
    else:
        _, out, arts = tw._build_real(tmp_path, kind == "real_regression")
    artifacts = tw._artifacts_by_name(arts)
    artifacts["claims.json"] = document(code_claims(arts["results"], arts["data_report"]),
                                        round_=int(arts["review"].get("round", 0)), backend="offline")
    bad = []
    for m in json.loads((out / "numbers.json").read_text())["macros"]:
        if m.get("quoted"):
            continue
        values = source_values(m["source"], artifacts)
        raws = m["raw"] if isinstance(m["raw"], list) else [m["raw"]]
        scales = (1, 100) if m["value"].endswith("\\%") else (1,)  # a percentage of a share or of a percentage
        if not all(any(abs(float(r) - k * v) <= 1e-9 * max(1.0, abs(r)) for v in values for k in scales)
                   for r in raws):
            bad.append(f"{m['macro']} = {m['raw']} but {m['source']} is {values}")
    assert not bad, bad
    report = verify_paper(out / "paper.tex", artifacts=artifacts)
    assert not [n for n in report.numbers if n.macro and n.status == "unmatched"], report.summary()
