"""Claims consistent with each other and with the evidence: a check of a written paper (run by the Writer and by
`edm-ars verify-paper`).

On paper.tex, with results.json as the evidence (and outline.json, where the Writer records the comparisons and
promises it writes), four things are checked:

1. **Comparative claims.** Every sentence with a comparative cue ("better than", "outperforms", "improves on",
   "could not be distinguished", "does not settle whether", "similar to", "differed by", ...) names the models it
   compares (two at least: "the best single model" alone does not name one) and says what the comparison
   evidence of those two models shows. The evidence (evidence.comparison_evidence) is read from results.json:
   the paired comparisons of the selected model with every other model and baseline (``paired_comparisons``:
   bootstrap difference, interval, Holm-adjusted p), then ``selection_evidence.stacking_minus_selected``, and -
   only for results without paired comparisons - whether two models' intervals of the primary metric overlap.
   "Clearly better than B" needs a paired interval that excludes zero in A's favour and a Holm-adjusted p below
   ``comparison_alpha``; "could not be distinguished" needs evidence that does not; a comparison of two models
   that no paired comparison covers has no evidence and fails.
   A comparison against chance, a floor or a threshold is not a comparison of models and is left alone.
2. **Contradictions.** No two claims about the same two models disagree (A better than B against "does not settle
   whether A predicts better than B", or B better than A).
3. **Promises.** Every "Section N discusses X" / "Section~\\ref{sec:...} discusses X" holds X in that section, X being
   the terms the sentence names in \\texttt{...} (a data check's name); every promise the Writer recorded
   (outline.json ``promises``: target label and topic words) is kept by the section it names.
4. **References.** Every \\ref / \\autoref / \\cref names a \\label the paper defines, and every literal "Section N",
   "Table N", "Figure N" exists.

The Writer also records each comparison it writes (outline.json ``comparisons``: the models, what the sentence
asserts, the evidence it rests on); each record must match the evidence and appear in the text.

This module holds the checks, their report, what the Writer records while writing, and the Critic's check of the
results debate's claims (:func:`claim_problems`). The comparison evidence is read by review/evidence.py (where a kind
of evidence is added), the claims of a sentence by review/claim_reading.py, and the paper's sections, labels and
sentences by review/paper_doc.py."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from edm_ars.core.text import is_number
from edm_ars.review.claim_reading import ASSERTIONS, Claim, _words, model_aliases, plain, read_claim
from edm_ars.review.evidence import (
    BETTER,
    HIGHER_IS_BETTER,
    INDISTINCT,
    WORSE,
    compared_models,
    comparison_evidence,
    evidence_for,
)
from edm_ars.review.paper_doc import _FLOAT, Doc, Section, parse, sentences


# ---- the report ----------------------------------------------------------------------------------------------
@dataclass
class Finding:
    line: int
    section: str
    sentence: str
    reason: str

    def __str__(self) -> str:
        text = re.sub(r"\s+", " ", self.sentence)
        text = text if len(text) <= 260 else text[:257] + "..."
        where = f"line {self.line} [{self.section}]" if self.line else f"[{self.section}]"
        return f"{where}: {self.reason}" + (f": \"{text}\"" if text else "")


@dataclass
class ConsistencyReport:
    paper: str
    findings: list[Finding] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def failures(self) -> list[str]:
        name = self.paper.rsplit("/", 1)[-1]
        return [f"{name}: consistency: {f}" for f in self.findings]

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "findings": [str(f) for f in self.findings],
                "claims": [{"line": c.line, "section": c.section, "assertion": c.assertion, "models": c.models}
                           for c in self.claims]}


def _name(m: str, results: dict[str, Any]) -> str:
    rec = compared_models(results).get(m) or {}
    return f"{m} ({rec['label']})" if rec.get("label") and rec["label"].lower() != m else m


def _left_open(claims_doc: dict[str, Any] | None, x: str, y: str) -> str | None:
    """The id of an inconclusive claim of claims.json comparing x and y whose evidence lens (the skeptic) supports it:
    the debate left the comparison open for a reason other than the evidence (a design objection), so the paper
    may call it open although the evidence decides it."""
    for c in (claims_doc or {}).get("claims") or []:
        rec = c.get("compares")
        if (c.get("status") == "inconclusive" and isinstance(rec, dict) and {rec.get("a"), rec.get("b")} == {x, y}
                and ((c.get("lenses") or {}).get("skeptic") or {}).get("status") == "supported"):
            return str(c.get("id"))
    return None


def _point(results: dict[str, Any], model: str) -> float:
    """A model's primary metric oriented so that higher is better (-inf when it has none)."""
    primary = results.get("primary_metric", "")
    v = ((compared_models(results).get(model) or {}).get("metrics") or {}).get(primary)
    if not is_number(v):
        return float("-inf")
    return float(v) if HIGHER_IS_BETTER.get(primary, True) else -float(v)


def check_claims(doc: Doc, results: dict[str, Any], report: ConsistencyReport,
                 claims_doc: dict[str, Any] | None = None) -> None:
    aliases = model_aliases(results)
    evidence = comparison_evidence(results)
    for pos, sent in sentences(doc):
        for assertion, models, paired, generic, clause in read_claim(sent, aliases):
            claim = Claim(doc.line(pos), doc.where(pos), sent, assertion, models, paired, generic)
            # a long sentence (a list of statements) is quoted by the clause that makes the claim
            where = (claim.line, claim.section, sent if len(plain(sent)) <= 240 else f"... {clause} ...")
            if len(models) < 2:
                named = f"names only {_name(models[0], results)}" if models else "names no model"
                also = f" (\"{generic[0]}\" does not say which)" if generic else ""
                report.findings.append(Finding(*where, f"a comparative claim ({assertion}) {named}{also}: a "
                                               "comparison names both models it compares"))
                continue
            report.claims.append(claim)
            for x, y in claim.pairs():
                ev = evidence_for(evidence, x, y, "paired" if paired else None)
                if ev is None:
                    what = "paired comparison" if paired else "comparison"
                    report.findings.append(Finding(*where, f"no {what} of {x} and {y} in results.json supports this "
                                                   f"claim ({assertion})"))
                elif assertion == "at_least" and _point(results, x) < _point(results, y):
                    report.findings.append(Finding(*where, f"the claim says {x} matched or exceeded {y}, but its "
                                                   f"{results.get('primary_metric')} is lower "
                                                   f"({_point(results, x):.4f} against {_point(results, y):.4f})"))
                elif ev.verdict not in ASSERTIONS[assertion] and not (
                        assertion == "open" and _left_open(claims_doc, x, y)):
                    report.findings.append(Finding(*where, f"the claim says {x} is {_say(assertion)} {y}, but the "
                                                   f"evidence ({ev.source}) shows {x} {_say_ev(ev.verdict)} {y}: "
                                                   f"{ev.detail}"))
    _contradictions(report)


def _say(assertion: str) -> str:
    return {"better": "better than", "worse": "worse than", "indistinct": "not distinguishable from",
            "not_better": "not better than", "at_least": "at least as good as",
            "difference": "compared with", "open": "not settled against"}[assertion]


def _say_ev(verdict: str) -> str:
    return {BETTER: "clearly better than", WORSE: "clearly worse than",
            INDISTINCT: "not distinguishable from"}[verdict]


#: what each assertion says of the pair (x, y): a set of possible orders ('>', '=', '<')
#: ('?': not settled, which contradicts a settled order only)
ORDERS = {"better": {">"}, "worse": {"<"}, "indistinct": {"="}, "not_better": {"=", "<"}, "at_least": {">", "="},
          "difference": {">", "=", "<"}, "open": {"?"}}
_REVERSE = {">": "<", "<": ">", "=": "=", "?": "?"}


def _conflict(a: set[str], b: set[str]) -> bool:
    """Two claims on the same ordered pair disagree: no order both allow, or one leaves open what the other settles
    as better or worse."""
    if "?" in a or "?" in b:
        other = b if "?" in a else a
        return "?" not in other and other <= {">", "<"}
    return not (a & b)


def _contradictions(report: ConsistencyReport) -> None:
    said: dict[tuple[str, str], list[tuple[set[str], Claim]]] = {}
    for c in report.claims:
        for x, y in c.pairs():
            orders = ORDERS[c.assertion]
            key = (x, y) if x <= y else (y, x)
            if key != (x, y):
                orders = {_REVERSE[o] for o in orders}
            for earlier_orders, earlier in said.get(key, []):
                if _conflict(orders, earlier_orders):
                    before = re.sub(r"\s+", " ", earlier.sentence)
                    before = before if len(before) <= 160 else before[:157] + "..."
                    report.findings.append(Finding(
                        c.line, c.section, c.sentence,
                        f"contradicts line {earlier.line} [{earlier.section}] on {key[0]} and {key[1]} "
                        f"(\"{before}\")"))
            said.setdefault(key, []).append((orders, c))


# ---- promises and references ----------------------------------------------------------------------------
_SECTION_REF = re.compile(r"(?:Sections?|\\S)[~\s]*(?:\\ref\{([^}]+)\}|(\d+(?:\.\d+)*))")
_PROMISE_VERB = re.compile(r"\b(?:discuss(?:es|ed)?|describes?|reports?|explains?|covers?|returns? to|addresses|"
                           r"treats?|considers?)\b", re.I)


def _keyword_in(keyword: str, section_text: str) -> bool:
    return _words(keyword) in _words(plain(section_text))


def check_references(doc: Doc, report: ConsistencyReport) -> None:
    tex = doc.tex
    for m in re.finditer(r"\\(?:ref|autoref|cref|Cref|eqref|pageref)\{([^}]*)\}", tex):
        if m.start() < doc.body_start:
            continue
        for label in m.group(1).split(","):
            if label.strip() and label.strip() not in doc.labels:
                report.findings.append(Finding(doc.line(m.start()), doc.where(m.start()), _around(tex, m.start()),
                                               f"\\ref{{{label.strip()}}} names a label the paper does not define"))
    numbered = {s.number for s in doc.sections if s.number}
    n_tables = len(re.findall(r"\\begin\{table\*?\}", tex))
    n_figures = len(re.findall(r"\\begin\{figure\*?\}", tex))
    body = _FLOAT.sub(lambda m: " " * len(m.group(0)), tex)
    for m in re.finditer(r"\b(Sections?|Tables?|Figures?|Fig\.)[~\s]+(\d+(?:\.\d+)*)\b", body):
        if m.start() < doc.body_start:
            continue
        kind, num = m.group(1).lower(), m.group(2)
        bad = ((kind.startswith("section") and num not in numbered)
               or (kind.startswith("table") and not 1 <= int(num.split(".")[0]) <= n_tables)
               or (kind.startswith(("figure", "fig")) and not 1 <= int(num.split(".")[0]) <= n_figures))
        if bad:
            report.findings.append(Finding(doc.line(m.start()), doc.where(m.start()), _around(tex, m.start()),
                                           f"{m.group(1)} {num} does not exist in the paper"))


def _around(tex: str, pos: int) -> str:
    start = max(tex.rfind("\n", 0, pos), tex.rfind(". ", 0, pos) + 1)
    end = min(x for x in (tex.find(". ", pos), tex.find("\n", pos), len(tex)) if x >= 0)
    return tex[start:end + 1].strip()


def _target(doc: Doc, label: str | None, number: str | None) -> Section | None:
    if label:
        return doc.section_of(label)
    return next((s for s in doc.sections if s.number == number), None)


def check_promises(doc: Doc, report: ConsistencyReport, recorded: list[dict[str, Any]] | None = None) -> None:
    """A sentence that says another section discusses something it names (\\texttt terms) is kept by that section;
    so is every promise the Writer recorded."""
    for pos, sent in sentences(doc):
        refs = list(_SECTION_REF.finditer(sent))
        if not refs or not _PROMISE_VERB.search(sent):
            continue
        topics = [plain(t) for t in re.findall(r"\\texttt\{((?:[^{}]|\{[^{}]*\})*)\}", sent)]
        for r in refs:
            if not re.search(rf"{re.escape(r.group(0))}[^.;]{{0,40}}{_PROMISE_VERB.pattern}", sent, re.I):
                continue
            target = _target(doc, r.group(1), r.group(2))
            if target is None:
                continue  # a missing label or number is reported by check_references
            missing = [t for t in topics if not _keyword_in(t, doc.text_of(target))]
            if missing:
                report.findings.append(Finding(doc.line(pos), doc.where(pos), sent,
                                               f"promises that Section {target.number} ({target.title}) discusses "
                                               f"{', '.join(missing)}, which that section never mentions"))
    for p in recorded or []:
        target = doc.section_of(str(p.get("target")))
        origin = str(p.get("from") or "?")
        if target is None:
            report.findings.append(Finding(0, origin, str(p.get("text") or ""), f"outline.json promises a "
                                           f"section {p.get('target')!r} the paper does not have"))
            continue
        words = [str(w) for w in p.get("topics") or []]
        missing = [w for w in words if not _keyword_in(w, doc.text_of(target))]
        if missing:
            report.findings.append(Finding(0, origin, str(p.get("text") or p.get("phrase") or ""),
                                           f"outline.json records a promise that Section {target.number} "
                                           f"({target.title}) discusses {', '.join(missing)}; it does not"))


def check_recorded_comparisons(doc: Doc, results: dict[str, Any], recorded: list[dict[str, Any]],
                               report: ConsistencyReport, claims_doc: dict[str, Any] | None = None) -> None:
    """Each comparison the Writer recorded matches the evidence and is in the text (a claim on the same models)."""
    evidence = comparison_evidence(results)
    models = compared_models(results)
    for i, rec in enumerate(recorded):
        where = f"outline.json:comparisons.{i}"
        a, b, assertion = rec.get("a"), rec.get("b"), rec.get("assertion")
        text = str(rec.get("phrase") or "")
        if a not in models or b not in models or assertion not in ASSERTIONS:
            report.findings.append(Finding(0, where, text, f"a recorded comparison needs two models of results.json "
                                           f"and an assertion ({', '.join(ASSERTIONS)}); got {a!r}, {b!r}, "
                                           f"{assertion!r}"))
            continue
        ev = evidence_for(evidence, a, b, rec.get("kind"))
        if ev is None:
            report.findings.append(Finding(0, where, text, f"no {rec.get('kind') or ''} comparison of {a} and {b} "
                                           "in results.json".replace("  ", " ")))
        elif ev.verdict not in ASSERTIONS[assertion] and not (assertion == "open" and _left_open(claims_doc, a, b)):
            report.findings.append(Finding(0, where, text, f"records that {a} is {_say(assertion)} {b}, but the "
                                           f"evidence ({ev.source}) shows {a} {_say_ev(ev.verdict)} {b}"))
        in_text = any({a, b} <= set(c.models) for c in report.claims)
        if not in_text:
            report.findings.append(Finding(0, where, text, f"the recorded comparison of {a} and {b} is not in the "
                                           "paper's text (no sentence names both with a comparative cue)"))


def check_consistency(tex: str, results: dict[str, Any], outline: dict[str, Any] | None = None,
                      paper: str = "paper.tex", claims: dict[str, Any] | None = None) -> ConsistencyReport:
    """Every check of this module on a paper's LaTeX source, against results.json (and outline.json)."""
    doc = parse(tex)
    report = ConsistencyReport(paper=paper)
    check_references(doc, report)
    check_claims(doc, results, report, claims)
    check_promises(doc, report, (outline or {}).get("promises"))
    if (outline or {}).get("comparisons"):
        check_recorded_comparisons(doc, results, outline["comparisons"], report, claims)
    return report


# ---- what the Writer records while writing ------------------------------------------------------------------
def record_comparison(outline: dict[str, Any] | None, a: str, b: str, assertion: str, phrase: str,
                      kind: str | None = None) -> None:
    """Record a comparison the Writer writes (outline.json ``comparisons``): a against b, what the sentence asserts
    (one of ASSERTIONS), the phrase it comes from, and the kind of evidence it rests on (paired, intervals)."""
    if outline is None:
        return
    rec = {"a": a, "b": b, "assertion": assertion, "phrase": phrase}
    if kind:
        rec["kind"] = kind
    if rec not in outline.setdefault("comparisons", []):
        outline["comparisons"].append(rec)


def record_promise(outline: dict[str, Any] | None, origin: str, target: str, topics: list[str], phrase: str) -> None:
    """Record that the section `origin` says the section labelled `target` discusses `topics` (outline.json
    ``promises``): each topic word must then appear in that section."""
    if outline is None:
        return
    rec = {"from": origin, "target": target, "topics": list(topics), "phrase": phrase}
    if rec not in outline.setdefault("promises", []):
        outline["promises"].append(rec)


def check_paper(tex_path: Any, artifacts: dict[str, Any]) -> ConsistencyReport:
    """The check on a written paper: paper.tex, results.json among `artifacts` (as verify-paper loads them), and
    outline.json beside the paper when the Writer left one."""
    import json
    from pathlib import Path

    tex_path = Path(tex_path)
    results = artifacts.get("results.json")
    report = ConsistencyReport(paper=str(tex_path))
    if not isinstance(results, dict):
        report.findings.append(Finding(0, "artifacts", "", "no results.json among the artifacts: the comparison "
                                       "evidence the claims rest on is missing"))
        return report
    outline_path = tex_path.parent / "outline.json"
    outline = json.loads(outline_path.read_text(encoding="utf-8")) if outline_path.exists() else None
    claims = artifacts.get("claims.json") if isinstance(artifacts.get("claims.json"), dict) else None
    return check_consistency(tex_path.read_text(encoding="utf-8"), results, outline, paper=str(tex_path),
                             claims=claims)


# ---- the results debate's claims (the Critic's check) -----------------------------------------------------
def _claim_comparisons(claim: dict[str, Any], aliases: dict[str, str]) -> list[tuple[str, str, str]]:
    """(a, b, assertion) of a claim: its structured `compares` record(s), else read from its statement."""
    recs = claim.get("compares")
    recs = [recs] if isinstance(recs, dict) else list(recs or [])
    out = [(r["a"], r["b"], r.get("assertion", "better")) for r in recs
           if isinstance(r, dict) and r.get("a") and r.get("b")]
    if out:
        return out
    for assertion, models, _, _, _ in read_claim(str(claim.get("statement") or ""), aliases):
        out += [(models[0], m, assertion) for m in models[1:]]
    return out


def claim_problems(claims_doc: dict[str, Any], results: dict[str, Any]) -> list[str]:
    """What is inconsistent in the results debate's claims (claims.json): a supported comparison the evidence of
    results.json does not support, one that names a single model, and two claims that judge the same comparison
    differently (one supported, the other not; or A better than B and B better than A both supported)."""
    aliases = model_aliases(results)
    evidence = comparison_evidence(results)
    problems: list[str] = []
    judged: dict[tuple[str, str], list[tuple[str, str, set[str]]]] = {}  # (a, b) -> [(claim id, status, orders)]
    for claim in claims_doc.get("claims") or []:
        cid, status = str(claim.get("id")), str(claim.get("status"))
        statement = str(claim.get("statement") or "")
        comps = _claim_comparisons(claim, aliases)
        if not comps and status == "supported":
            for _assertion, models, *_ in read_claim(statement, aliases):
                if len(models) < 2:
                    problems.append(f"claim {cid} ({status}) compares without naming both models: {statement!r}")
        for a, b, assertion in comps:
            if assertion not in ASSERTIONS:
                continue
            if status == "supported":
                ev = evidence_for(evidence, a, b)
                if ev is None:
                    problems.append(f"claim {cid} (supported) compares {a} and {b}, which results.json never compares")
                elif ev.verdict not in ASSERTIONS[assertion]:
                    problems.append(f"claim {cid} (supported) says {a} is {_say(assertion)} {b}, but {ev.source} "
                                    f"shows {a} {_say_ev(ev.verdict)} {b} ({ev.detail})")
            key = (a, b) if a <= b else (b, a)
            orders = ORDERS[assertion] if key == (a, b) else {_REVERSE[o] for o in ORDERS[assertion]}
            for other_id, other_status, other_orders in judged.get(key, []):
                if status == "supported" and other_status == "supported" and not (orders & other_orders):
                    problems.append(f"claims {other_id} and {cid} are both supported but contradict each other on "
                                    f"{key[0]} and {key[1]}")
                elif orders == other_orders and {status, other_status} != {status} and "supported" in (
                        status, other_status):
                    problems.append(f"claims {other_id} ({other_status}) and {cid} ({status}) judge the same "
                                    f"comparison of {key[0]} and {key[1]} differently")
            judged.setdefault(key, []).append((cid, status, orders))
    return problems
