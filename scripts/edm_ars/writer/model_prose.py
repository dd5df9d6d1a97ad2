"""Prose by a language model (model backends): the introduction and the discussion are rewritten from the
deterministic drafts, following the outline, the supported claims and the EDM writing rules.

The model never writes the preamble, never prints a number (it may only use the number macros it is given)
and may only cite the verified keys it is given. Its text is checked in code before it replaces a draft:
unknown citation keys are removed (a placeholder rejects the text), an unknown macro, a literal number, a
causal verb in a finding or a section far from its word target rejects the text, and the draft is kept,
with the reason recorded."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from edm_ars.writer.integrity import WORD_TARGETS, CitationError, lint, plain_words, repair_citations
from edm_ars.writer.paper import raw_numbers

if TYPE_CHECKING:
    from edm_ars.writer.context import Ctx

REWRITTEN = ("INTRODUCTION", "DISCUSSION")
_FENCE = re.compile(r"^```(?:latex|tex)?\s*\n(.*?)\n```\s*$", re.S)
def _literal_numbers(text: str) -> list[str]:
    """Numbers typed into the text rather than printed by a macro; years and counts up to ten (which a
    writer might as well spell out) are allowed."""
    return [t for t in raw_numbers(text) if not (t.isdigit() and int(t) <= 10)]


def check(ctx: Ctx, section: str, text: str) -> tuple[str | None, str]:
    """(the accepted LaTeX, note) or (None, why it was rejected)."""
    m = _FENCE.match(text.strip())
    text = (m.group(1) if m else text).strip()
    if not text:
        return None, "empty answer"
    if re.search(r"\\(?:documentclass|begin\{document\}|usepackage|(?:sub)*section\*?\{)", text):
        return None, "the answer contains a preamble or a heading"
    try:
        text, removed = repair_citations(text, frozenset(ctx.cites.keys_all))
    except CitationError as exc:
        return None, str(exc)
    # \Name{} is a number macro of the table or a label macro the template defines (\Rsq{}); nothing else
    unknown = sorted({name for name in re.findall(r"\\([A-Za-z]+)\{\}", text)
                      if name not in ctx.m and name not in ctx.notation})
    if unknown:
        return None, "unknown number macro(s): " + ", ".join(unknown)
    literal = _literal_numbers(text)
    if literal:
        return None, "literal number(s) instead of macros: " + ", ".join(literal[:5])
    problems = [f for f in lint({section: text}) if f.kind in ("causal", "placeholder", "empty_section")]
    if problems:
        return None, "; ".join(str(p) for p in problems)
    inconsistent = _inconsistent_claims(ctx, text)
    if inconsistent:
        return None, "inconsistent comparative claim(s): " + "; ".join(inconsistent[:3])
    lo, hi = WORD_TARGETS[section]
    words = plain_words(text)
    if words < 0.5 * lo or words > 1.5 * hi:
        return None, f"{words} words, outside 50-150% of the target {lo}-{hi}"
    note = f"{section.lower()}: written by the model ({words} words)"
    if removed:
        note += "; unknown citation key(s) removed: " + ", ".join(removed)
    return text, note


def _inconsistent_claims(ctx: Ctx, text: str) -> list[str]:
    """The comparisons of a model-written section that name one model only, contradict each other or the evidence
    of results.json (writer.consistency, on this section alone; the whole paper is checked again by verify-paper)."""
    from edm_ars.review.consistency import ConsistencyReport, check_claims
    from edm_ars.review.paper_doc import parse

    report = ConsistencyReport(paper="model text")
    check_claims(parse("\\begin{document}\n" + text + "\n\\end{document}\n"), ctx.results, report, ctx.claims_doc)
    return [f"{f.reason}: {f.sentence[:120]!r}" for f in report.findings]


def _claims_text(ctx: Ctx) -> str:
    doc = ctx.claims_doc or {}
    lines = [f"- [{c['status']}] {c['id']}: {c['statement']}" for c in doc.get("claims", [])
             if c["status"] in ("supported", "inconclusive")]
    return "\n".join(lines) or "- (none)"


def _macros_text(ctx: Ctx) -> str:
    return "\n".join(f"\\{m.name}{{}} = {m.value}  ({m.source})" for m in ctx.m.macros if not m.quoted)


def _citations_text(ctx: Ctx) -> str:
    return "\n".join(f"{p['key']}: {p.get('title', '')} ({p.get('year', '')})" for p in ctx.cites.papers) or "(none)"


def rewrite(client: Any, prompts: dict[str, Any], ctx: Ctx, drafts: dict[str, str]
            ) -> tuple[dict[str, str], list[str]]:
    """Ask the model for each section of REWRITTEN; return (accepted sections, notes)."""
    from edm_ars.llm.prompts import fill, shared_prefix_contents

    accepted, notes = {}, []
    outline = ctx.outline or {}
    sections = [section for section in REWRITTEN if section in drafts]
    users = [fill(prompts["user"], section=section.replace("_", " ").lower(), low=WORD_TARGETS[section][0],
                  high=WORD_TARGETS[section][1], archetype=outline.get("archetype", ""), rule=outline.get("rule", ""),
                  question=ctx.spec.get("research_question", ""), claims=_claims_text(ctx),
                  macros=_macros_text(ctx), citations=_citations_text(ctx), draft=drafts[section])
             for section in sections]
    # the claims, macros and references every section shares: written to the prompt cache once
    for section, user in zip(sections, shared_prefix_contents(users), strict=True):
        answer = client.complete(prompts["system"], [{"role": "user", "content": user}], tag=section.lower())
        text, note = check(ctx, section, answer.text)
        if text is None:
            notes.append(f"{section.lower()}: the model's text was rejected ({note}); the template draft is kept")
        else:
            accepted[section] = text
            notes.append(note)
    return accepted, notes
