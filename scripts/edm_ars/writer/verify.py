"""`edm-ars verify-paper`: reconcile every number printed in a paper with the run's artifacts.

Each number of the document body is found in the LaTeX source after the number macros of numbers.tex
are expanded (scientific notation too: 1.2e-3, 1.2 \\times 10^{-3}, 1.2\\cdot10^{-3}, $1.2\\times 10^{-3}$, a bare
10^{-3}, read as the printed mantissa times the power of ten), and classified:

- **exempt**: years (1900-2100) and small integers (|n| <= 100) printed without decimals, and confidence levels
  ("95\\% CI"); any other integer percentage ("84 per cent") is a share of something and is reconciled;
- **matched**: a number printed through a macro agrees, at its printed precision, with the value at the
  macro's recorded source (a JSON path in an artifact or a derivation of such paths, ``len(...)``,
  ``count(...[filter])``, ``|a - b|``, a ratio ``a / b``, ``100 * a``: every form the Writer emits is evaluated
  by writer/sources.py, and a computed macro whose source cannot be evaluated is unmatched; or the artifact
  text a number was quoted from); a literal number agrees with some value of
  the artifacts: a leaf, a list length, or a sum or difference of sibling values (values of one object,
  or the same key across the objects of one list or mapping). A percentage (84.4\\%, 84.4~\\%, 84.4 percent,
  84 per cent, \\SI{84.4}{\\percent}) also matches a value 100 times smaller at the same printed precision
  ("84.4\\%" matches 0.8443, "84.9\\%" does not). "-1.90" and "-1.905" both match -1.904982835; "-1.92" does not;
- **unmatched** otherwise. In strict places (the abstract, the results, every table float and every tabular,
  tabular*, tabularx, tabulary or longtable environment wherever it is) an unmatched number fails the paper;
  elsewhere it warns. An interval "[a, b]" whose two ends are both unmatched fails wherever it is; with one end
  unmatched it warns.

Then the text: every key of every citation command (integrity.CITE_NAME) must be in references.bib; placeholder
text anywhere in the body fails (integrity.document_placeholders); a review that leaves the paper unverified
(integrity.unverified_reasons; review_report.json is among the artifacts sources.json lists) requires the
UNVERIFIED block; and the lint (empty sections and causal verbs fail, lengths warn; when research_spec.json is a
causal study's, a sentence that names its treatment by one of treatment.phrases may use causal verbs).

The artifacts are found through sources.json next to the paper (written by the Writer) or given as
NAME=PATH pairs. Findings name their line in the .tex file.

This module holds the command's report, the loading of the artifacts and the checks of the text; the numbers are
read by writer/printed_numbers.py and reconciled by writer/reconcile.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from edm_ars.core.errors import EdmArsError
from edm_ars.writer.integrity import (
    PLACEHOLDER_KEY,
    UNVERIFIED_BLOCK,
    WORD_TARGETS,
    citations,
    cited_keys,
    document_placeholders,
    lint,
    strip_comments,
    unverified_reasons,
)
from edm_ars.writer.printed_numbers import Number, _strip_comment, read_macros, scan
from edm_ars.writer.reconcile import reconcile, value_pool


class VerifyError(EdmArsError):
    """The paper or its artifacts could not be read."""


@dataclass
class Report:
    paper: str
    numbers: list[Number] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lint: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        by = {s: sum(1 for n in self.numbers if n.status == s) for s in ("matched", "exempt", "unmatched")}
        return {"numbers": len(self.numbers), "checked": by["matched"] + by["unmatched"], **by,
                "failures": len(self.failures), "warnings": len(self.warnings)}

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return {"paper": self.paper, "ok": self.ok, "counts": self.counts, "failures": self.failures,
                "warnings": self.warnings, "lint": self.lint, "numbers": [asdict(n) for n in self.numbers]}

    def summary(self) -> str:
        c = self.counts
        head = (f"{self.paper}: {c['numbers']} numbers: {c['checked']} checked, {c['matched']} matched, "
                f"{c['exempt']} exempt, {c['unmatched']} unmatched ({c['failures']} failing, "
                f"{c['warnings']} warnings)")
        lines = [head] + [f"  FAIL {f}" for f in self.failures] + [f"  warn {w}" for w in self.warnings]
        return "\n".join(lines)


# ---- artifacts -------------------------------------------------------------------------------------
def load_artifacts(paper: Path, given: dict[str, str] | None = None) -> dict[str, Any]:
    """NAME -> parsed JSON: from sources.json next to the paper (paths relative to it), then `given`."""
    paths: dict[str, Path] = {}
    sources = paper.parent / "sources.json"
    if sources.exists():
        for name, rel in json.loads(sources.read_text()).items():
            paths[name] = (paper.parent / rel).resolve()
    for name, path in (given or {}).items():
        paths[name] = Path(path)
    if not paths:
        raise VerifyError(f"{paper}: no artifacts to verify against (no {sources.name} next to the paper and "
                          "none given with --artifact NAME=PATH)")
    out = {}
    for name, path in paths.items():
        try:
            out[name] = json.loads(Path(path).read_text())
        except FileNotFoundError as exc:
            raise VerifyError(f"artifact {name} not found: {path}") from exc
        except json.JSONDecodeError as exc:
            raise VerifyError(f"artifact {name} ({path}) is not valid JSON: {exc}") from exc
    return out


def verify_paper(tex_path: str | Path, artifacts: dict[str, Any] | None = None,
                 given: dict[str, str] | None = None) -> Report:
    """Reconcile the numbers of `tex_path` (with numbers.tex / numbers.json beside it) with the artifacts."""
    tex_path = Path(tex_path)
    if not tex_path.exists():
        raise VerifyError(f"paper not found: {tex_path}")
    if artifacts is None:
        artifacts = load_artifacts(tex_path, given)
    numbers_tex, numbers_json = tex_path.parent / "numbers.tex", tex_path.parent / "numbers.json"
    macros = read_macros(numbers_tex, numbers_json) if numbers_tex.exists() or numbers_json.exists() else {}
    pool = value_pool(artifacts)
    report = Report(paper=str(tex_path))
    report.numbers = scan(tex_path, macros)
    for n in report.numbers:
        reconcile(n, artifacts, macros, pool)
    by_interval: dict[int, list[Number]] = {}
    for n in report.numbers:
        if n.interval is not None:
            by_interval.setdefault(n.interval, []).append(n)
    for n in report.numbers:
        if n.status != "unmatched":
            continue
        where = f"{tex_path.name}:{n.line}: [{n.section}] {n.text}: {n.how}"
        if n.interval is not None:
            pair = by_interval[n.interval]
            both = all(p.status == "unmatched" for p in pair)
            if both and n is pair[0]:
                report.failures.append(where + " (both ends of the interval are unmatched)")
            elif not both:
                report.warnings.append(where + " (one end of an interval)")
        elif n.strict:
            report.failures.append(where)
        else:
            report.warnings.append(where)
    _check_text(tex_path, report, artifacts)
    from edm_ars.review.consistency import check_paper  # claims consistent with each other and with the evidence

    report.failures += check_paper(tex_path, artifacts).failures()
    return report


#: lint findings that fail the paper (placeholders are found in the whole document, see _check_placeholders)
LINT_FAILS = {"empty_section", "causal"}


MIN_RELATED_CITATIONS = 5


def _body(tex: str) -> str:
    """The document body: the lines before \\begin{document} are blanked (not printed), so line numbers stay."""
    lines = tex.splitlines()
    start = next((i for i, line in enumerate(lines) if "\\begin{document}" in _strip_comment(line)), 0)
    return "\n".join("" if i < start else line for i, line in enumerate(lines))


def _check_citations(tex_path: Path, body: str, report: Report) -> None:
    """Every key of every citation command (integrity.CITE_NAME) is in references.bib and is no placeholder."""
    bib = tex_path.parent / "references.bib"
    known = set(re.findall(r"@\w+\s*\{\s*([^,\s]+)\s*,", bib.read_text(encoding="utf-8"))) if bib.exists() else set()
    for c in citations(body):
        where = f"{tex_path.name}:{c.line}: \\{c.command}"
        if not c.key or PLACEHOLDER_KEY.match(c.key):
            report.failures.append(f"{where}: placeholder citation key {c.key!r}")
        elif c.key not in known:
            report.failures.append(f"{where} key {c.key!r} is not in {bib.name}")


def _check_placeholders(tex_path: Path, tex: str, report: Report) -> None:
    for line, kind, text in document_placeholders(tex):
        report.failures.append(f"{tex_path.name}:{line}: placeholder {kind} {text!r}")


def _check_unverified(tex_path: Path, tex: str, report: Report, artifacts: dict[str, Any]) -> None:
    """A review that leaves the paper unverified (integrity.unverified_reasons) requires the UNVERIFIED block."""
    review = artifacts.get("review_report.json")
    if not isinstance(review, dict):
        report.warnings.append(f"{tex_path.name}: no review_report.json among the artifacts: whether the paper "
                               "must carry the UNVERIFIED block was not checked")
        return
    reasons = unverified_reasons(review)
    if not reasons or UNVERIFIED_BLOCK.search(strip_comments(_body(tex))):
        return
    lines = tex.splitlines()
    line = next((i for i, text in enumerate(lines, start=1) if re.search(r"%%(?:BEGIN|PLACEHOLDER):UNVERIFIED%%", text)),
                next((i for i, text in enumerate(lines, start=1) if "\\maketitle" in text), 1))
    report.failures.append(f"{tex_path.name}:{line}: the review (review_report.json, round {review.get('round')}) "
                           f"leaves the paper unverified ({'; '.join(reasons)}) but the paper has no UNVERIFIED "
                           "block (\\unverifiedbox{...})")


#: words that say the rows themselves were generated ("This study was generated automatically" says nothing about
#: the data, so `generated` counts only next to data, rows, records, students or stand-in)
GENERATED_DATA = re.compile(
    r"\b(?:synthetic|simulated|stand-in)\b"
    r"|\bgenerated\s+(?:these\s+|the\s+)?(?:data|rows|records|students|stand-in)\b"
    r"|\b(?:data|rows|records)\s+(?:were|are|was|is)\s+(?:\w+\s+)?generated\b", re.I)


def _slot_line(tex: str, name: str) -> int:
    return next((i for i, text in enumerate(tex.splitlines(), start=1) if f"%%BEGIN:{name}%%" in text), 1)


def _check_generated_disclosure(tex_path: Path, tex: str, report: Report, artifacts: dict[str, Any]) -> None:
    """A paper whose rows were generated (provenance.json among the artifacts: data.kind generated) says so in its
    abstract and in the data section of its Methods (the first subsection whose title names the data, else the
    first). Without provenance.json the check does not apply (older runs record no provenance)."""
    from edm_ars.writer.paper import slot_content

    prov = artifacts.get("provenance.json")
    if not isinstance(prov, dict) or (prov.get("data") or {}).get("kind") != "generated":
        return
    why = ("the data are generated (provenance.json: data.kind generated) but {where} does not say so "
           "(no 'synthetic', 'simulated', 'stand-in' or 'generated' data, rows or records)")
    abstract = strip_comments(slot_content(tex, "ABSTRACT"))
    if not GENERATED_DATA.search(" ".join(abstract.split())):
        report.failures.append(f"{tex_path.name}:{_slot_line(tex, 'ABSTRACT')}: " + why.format(where="the abstract"))
    methods = strip_comments(slot_content(tex, "METHODS"))
    parts = re.split(r"\\subsection\*?\{", methods)[1:]
    data = next((p for p in parts if re.match(r"[^}]*\bdata\b", p, re.I)), parts[0] if parts else methods)
    if not GENERATED_DATA.search(" ".join(data.split())):
        title = data.split("}", 1)[0] if parts else "Methods"
        report.failures.append(f"{tex_path.name}:{_slot_line(tex, 'METHODS')}: "
                               + why.format(where=f"the data section ({title})"))


def _check_text(tex_path: Path, report: Report, artifacts: dict[str, Any]) -> None:
    """Citations (every key in references.bib, no placeholder), placeholders anywhere in the body, the UNVERIFIED
    block the review calls for, and the lint (empty sections and causal verbs fail; lengths warn)."""
    from edm_ars.writer.paper import slot_content

    tex = tex_path.read_text(encoding="utf-8")
    body = _body(tex)
    _check_citations(tex_path, body, report)
    _check_placeholders(tex_path, tex, report)
    _check_unverified(tex_path, tex, report, artifacts)
    _check_generated_disclosure(tex_path, tex, report, artifacts)
    lines = {}
    for i, line in enumerate(tex.splitlines(), start=1):
        if m := re.match(r"^\s*%%BEGIN:([A-Z_]+)%%", line):
            lines[m.group(1)] = i
    sections = {name: slot_content(tex, name) for name in WORD_TARGETS if name in lines}
    papers = [p for p in (artifacts.get("literature_context.json") or {}).get("papers", [])
              if p.get("status") != "HALLUCINATED"]
    if "RELATED_WORK" in sections and len(papers) >= MIN_RELATED_CITATIONS:
        cited = cited_keys(sections["RELATED_WORK"])
        if len(cited) < MIN_RELATED_CITATIONS:
            report.failures.append(f"{tex_path.name}:{lines['RELATED_WORK']}: related work cites {len(cited)} "
                                   f"reference(s); at least {MIN_RELATED_CITATIONS} are required when the "
                                   f"literature holds {len(papers)}")
    spec = artifacts.get("research_spec.json")
    treatment = (spec.get("treatment") or {}) if isinstance(spec, dict) and spec.get("task") == "causal" else {}
    # a causal study's sentence that names its treatment may use causal verbs (the estimand); no other may
    findings = lint(sections, lines=lines, treatment_phrases=treatment.get("phrases") or None)
    report.lint = [str(f) for f in findings]
    for f in findings:
        if f.kind == "placeholder":
            continue  # reported by _check_placeholders, which reads the whole body
        (report.failures if f.kind in LINT_FAILS else report.warnings).append(f"{tex_path.name}: lint {f}")
