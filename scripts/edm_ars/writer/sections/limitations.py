"""Limitations."""

from __future__ import annotations

import re

from ...texescape import escape_latex
from ..context import Ctx
from ..text import cap_first, join_list, sentence


def write(ctx: Ctx) -> str:
    n = ctx.n
    items = [ctx.ph("limitations.predictive")]
    for i, text in enumerate(ctx.spec.get("limitations") or []):
        if re.search(r"\bcausal\b", text, re.I):
            continue  # the first item already says it
        items.append(sentence(ctx.t(text.strip(), f"research_spec.json:limitations.{i}")))
    for i, text in enumerate(ctx.data.get("warnings") or []):
        items.append("Data preparation warning: "
                     + sentence(ctx.t(text.strip(), f"data_report.json:warnings.{i}")))

    for extra in (errors_sentence(ctx), other_flags_sentence(ctx)):
        if extra:
            items.append(extra)
    unreliable = [g for r in ctx.fairness.get("attributes", {}).values() if r.get("kind") != "intersection"
                  for g in r.get("groups") or [] if not g.get("reliable", True)]
    if unreliable:
        items.append("Some groups of students were too small for a reliable subgroup estimate, so the audit "
                     "cannot show whether the model serves them as well as larger groups.")
    g, unit = ctx.grouping, ctx.cluster
    if ctx.school_split_ok and g["reconstructed"]:
        items.append(f"{cap_first(unit)} clusters were reconstructed from {unit}-level characteristics rather than "
                     f"from {unit} identifiers, so some {unit}s may have been merged or split; the "
                     f"separation of training and test {unit}s is therefore approximate.")
    elif not ctx.school_split_ok:
        items.append(f"{cap_first(ctx.units)} from the same {unit} may appear in both the training and the test set, "
                     "which can make the test performance optimistic.")
    items.append("Performance was estimated on a single train/test split; the confidence intervals "
                 "reflect sampling variability of the test set but not variability due to the split"
                 + (", which the stability analysis addresses only through perturbations of the training data."
                    if ctx.stability.get("runs") else "."))
    subgroups = ctx.spec.get("subgroups") or []
    if subgroups and not ctx.fairness_reported:
        items.append("Performance was not evaluated separately for the subgroups named in the study "
                     "specification.")
    lit = ctx.lit
    if lit.get("retrieval_failed") or lit.get("source") == "curated":
        text = ("The references come from a curated bibliography rather than a live literature search"
                + (" because retrieval failed" if lit.get("retrieval_failed") else "")
                + ", so the related work may be incomplete.")
        items.append(text)
    if ctx.lit.get("papers") and n.get("NExcludedRefs") and any(
            p.get("status") != "VERIFIED" for p in ctx.lit.get("papers", [])):
        k = sum(1 for p in ctx.lit.get("papers", []) if p.get("status") != "VERIFIED")
        items.append(f"{n['NExcludedRefs']} candidate "
                     + ("reference could not be verified and was" if k == 1
                        else "references could not be verified and were") + " not cited.")
    items.append("The study was generated automatically; its analytic choices and text were not "
                 "reviewed by a human expert.")
    return ("The findings should be read with the following limitations in mind.\n\\begin{itemize}\n"
            + "\n".join(f"  \\item {i}" for i in items) + "\n\\end{itemize}")


def errors_sentence(ctx: Ctx) -> str:
    errs = ctx.results.get("errors") or []
    if not errs:
        return ""
    k = ctx.m.count("NAnalysisErrors", len(errs), "len(results.json:errors)", derived=True)
    items = []
    for i, e in enumerate(errs[:4]):
        src = f"results.json:errors.{i}"
        if isinstance(e, dict):
            where = " ".join(str(e.get(x)) for x in ("phase", "what") if e.get(x))
            msg = str(e.get("message") or e.get("error") or "").strip()
            typ = str(e.get("type") or "").strip()
            desc = escape_latex(where) if where else "a step"
            detail = (f"{escape_latex(typ)}: " if typ else "") + ctx.t(msg[:140].rstrip(".") + ("..." if len(msg) > 140 else ""), src + ".message")
            items.append(f"{desc} ({detail})" if msg or typ else desc)
        else:
            items.append(ctx.t(str(e)[:140], src))
    more = " and others" if len(errs) > 4 else ""
    return (f"{k} analysis step{'s' if len(errs) != 1 else ''} reported problems: {'; '.join(items)}{more}; "
            "the affected results are missing or incomplete.")


def other_flags_sentence(ctx: Ctx) -> str:
    """Flags not narrated in the Results (by kind only, never the raw string)."""
    known = ("possible_leakage", "below_quality_floor", "fairness", "unstable")
    kinds = []
    for f in ctx.results.get("flags") or []:
        head = str(f).split(":", 1)[0].strip()
        if head in known or not head:
            continue
        kind = escape_latex(head.replace("_", " "))
        if re.search(r"\d", kind):
            continue
        if kind not in kinds:
            kinds.append(kind)
    if not kinds:
        return ""
    return ("The analysis stage also raised flags of the following kinds, which are recorded with the results: "
            + join_list([f"\\emph{{{k}}}" for k in kinds]) + ".")
