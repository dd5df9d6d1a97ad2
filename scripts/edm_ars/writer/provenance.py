"""Provenance in the paper: what the rows are, stated where a reader needs it (shared by the sections).

The facts come from output/paper/provenance.json (rule `provenance`: the data manifest's provenance, the data set's
citation, the workflow's commit, the configuration's hash, package versions) and, for generated rows, from
output/paper/recovery.json (rule `recovery`: the analysis against the planted truth). The other sections call the
functions here: the abstract (`abstract_dataset`, `abstract_sentence`), the data section of Methods
(`data_sentences`), the Results and the Discussion (`results_recovery`, `discussion_blocks`), the Limitations
(`limitation`); sections/provenance.py writes the unnumbered "Data and code availability" statement.
"""

from __future__ import annotations

import re
from typing import Any

from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import clean_label, join_list, lc_first
from edm_ars.data.registry import DRAFT_MARKER  # init-registry's mark: such a statement is never printed
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import macro_name

#: how the availability statement names each package
PACKAGE_NAMES = {"python": "Python", "snakemake": "Snakemake", "pandas": "pandas", "pyarrow": "PyArrow",
                 "scikit-learn": "scikit-learn", "xgboost": "XGBoost", "shap": "SHAP"}


def data(ctx: Ctx) -> dict[str, Any]:
    return ctx.provenance.get("data") or {}


def kind(ctx: Ctx) -> str | None:
    """The provenance kind of the rows (None without a provenance record)."""
    return data(ctx).get("kind")


def add_citation(ctx: Ctx) -> None:
    """Make the data set's own citation (the curated bibliography's entry the provenance record carries) citable."""
    paper = ctx.provenance.get("citation")
    if isinstance(paper, dict) and paper.get("key") and paper["key"] not in ctx.cites.keys_all:
        ctx.cites.papers.append(paper)


def cite(ctx: Ctx) -> str:
    """'~\\citep{key}' for the data set's citation, '' when it has none."""
    key = data(ctx).get("citation")
    return ctx.cites.citep(keys=ctx.cites.present(key)) if key else ""


def quoted(ctx: Ctx, name: str, value: Any, path: str) -> str:
    """A value from provenance.json that holds digits (a version, a hash), printed through a quoted macro so that
    verify-paper finds it in the artifact."""
    text = str(value)
    return ctx.m.add(macro_name(name), escape_latex(text), text, f"provenance.json:{path}", quoted=True)


def _recovery_count(ctx: Ctx, name: str, value: int, path: str) -> str:
    return ctx.m.count(macro_name("Recovery", name), value, f"recovery.json:{path}")


def package(ctx: Ctx) -> tuple[str, str, str]:
    """(package, item, joined clause) of a package export, escaped."""
    pkg = data(ctx).get("package") or {}
    joined = pkg.get("joined") or []
    clause = (ctx.ph("provenance.joined", tables=join_list([f"\\texttt{{{escape_latex(t)}}}" for t in joined]))
              if joined else "")
    return (f"\\texttt{{{escape_latex(pkg.get('name') or '')}}}", f"\\texttt{{{escape_latex(pkg.get('item') or '')}}}",
            clause)


def source(ctx: Ctx) -> str:
    """The registry's source of the rows as a noun phrase with its article ('the public-use student file ...')."""
    text = ctx.ds.get("source") or ctx.full_name
    return text if re.match(r"(the|a|an|these|this|our)\s", text, re.I) else "the " + text


def _statement(ctx: Ctx) -> str:
    text = str(data(ctx).get("statement") or "").strip()
    if not text or text.startswith(DRAFT_MARKER):
        return ""
    return ctx.t(text if text.endswith(".") else text + ".", "provenance.json:data.statement")


# ---- the abstract ------------------------------------------------------------------------------------
def abstract_dataset(ctx: Ctx) -> str:
    """The data set as the abstract's data sentence names it ('the generated stand-in for the ...')."""
    if kind(ctx) == "generated":
        return ctx.ph("provenance.abstract_generated_name", dataset=ctx.full_name)
    return ctx.full_name


def abstract_sentence(ctx: Ctx) -> str:
    """One sentence on what the rows are ('' without a provenance record)."""
    k = kind(ctx)
    if k == "generated":
        return ctx.ph("provenance.abstract_generated", short=ctx.short)
    if k == "package_export" and data(ctx).get("package"):
        pkg, item, _ = package(ctx)
        return ctx.ph("provenance.abstract_package_export", package=pkg, item=item)
    if k in ("public_use_file", "restricted_use_file", "local_file"):
        return ctx.ph(f"provenance.abstract_{k}")
    return ""


# ---- Methods: the data section ---------------------------------------------------------------------------
def data_sentences(ctx: Ctx) -> list[str] | None:
    """What the rows are, who collected them and how they reached this study; None without a provenance record
    (the data section then keeps its plain source sentence)."""
    k = kind(ctx)
    if k is None:
        return None
    agency = ctx.ds.get("agency") or ""
    if k == "generated":
        sents = [ctx.ph("provenance.data_generated", long=ctx.full_name, cluster=ctx.cluster)]
        sents.append(ctx.ph("provenance.data_generated_not_collected", source=source(ctx), cite=cite(ctx),
                            agency=agency)
                     if agency else ctx.ph("provenance.data_generated_stand_in", source=source(ctx), cite=cite(ctx)))
        return sents
    collected = (", " + ctx.ph("methods.collected_by", agency=agency)) if agency else ""
    sents = [ctx.ph("methods.data_source", source=source(ctx), agency=collected)]
    statement = _statement(ctx)
    if statement:
        sents.append(statement)
    if k == "package_export" and data(ctx).get("package"):
        pkg, item, joined = package(ctx)
        sents.append(ctx.ph("provenance.data_package_export", package=pkg, item=item, joined=joined, cite=cite(ctx)))
    elif k == "package_export":
        sents.append(ctx.ph("provenance.data_package_export_unnamed", cite=cite(ctx)))
    else:
        sents.append(ctx.ph(f"provenance.data_{k}", cite=cite(ctx)))
    return sents


# ---- Limitations ------------------------------------------------------------------------------------------
def limitation(ctx: Ctx) -> str:
    """The limitation the provenance of the rows brings ('' when it brings none of its own)."""
    k = kind(ctx)
    if k == "generated":
        return ctx.ph("provenance.limitation_generated", short=ctx.short)
    if k == "package_export" and data(ctx).get("package"):
        pkg, _, _ = package(ctx)
        return ctx.ph("provenance.limitation_package_export", package=pkg)
    if k == "local_file":
        return ctx.ph("provenance.limitation_local_file")
    return ""


# ---- Results and Discussion: the recovery check (generated rows) ---------------------------------------------
def _names(ctx: Ctx, variables: list[str]) -> list[str]:
    return [f"\\emph{{{ctx.label_tex(v, 'registry label')}}}" for v in variables]


def results_recovery(ctx: Ctx) -> str:
    """The Results subsection that checks the analysis against the planted truth ('' unless the rows were
    generated and the recovery check was run)."""
    rec = ctx.recovery
    if not ctx.generated or not rec:
        return ""
    p, g = rec.get("predictors") or {}, rec.get("group") or {}
    paras = []
    threshold = p.get("strong_threshold")
    n_strong = _recovery_count(ctx, "NStrong", p.get("n_planted_strong", 0), "predictors.n_planted_strong")
    if isinstance(threshold, (int, float)):
        paras.append(ctx.ph("provenance.recovery_intro", n_strong=n_strong,
                            threshold=ctx.m.metric("RecoveryStrongThreshold", threshold,
                                                   "recovery.json:predictors.strong_threshold")))
    rows = p.get("planted_strong") or []
    in_set = [r["variable"] for r in rows if r.get("in_predictors")]
    outside = [r["variable"] for r in rows if not r.get("in_predictors")]
    if in_set:
        k = _recovery_count(ctx, "K", p["n_in_predictors"], "predictors.n_in_predictors")
        m = _recovery_count(ctx, "Recovered", p["n_recovered"], "predictors.n_recovered")
        found = p.get("found_top") or []
        model = ctx.model_phrase(rec.get("interpreted_model") or ctx.best)
        if p["n_recovered"] == p["n_in_predictors"]:  # the same set: name it once, and say whether in order
            ranks = [r.get("found_rank") for r in rows if r.get("in_predictors")]
            order = (ctx.ph("provenance.recovery_in_order") if ranks == list(range(1, len(ranks) + 1)) else "")
            text = ctx.ph("provenance.recovery_predictors_all", k=k, planted=join_list(_names(ctx, in_set)),
                          model=model, order=(", " + order) if order else "")
        else:
            text = ctx.ph("provenance.recovery_predictors", k=k, planted=join_list(_names(ctx, in_set)), m=m,
                          model=model, found=join_list(_names(ctx, found)))
        missed = [r["variable"] for r in rows if r.get("in_predictors") and not r.get("recovered")]
        if missed:
            text += " " + ctx.ph("provenance.recovery_missed", missed=join_list(_names(ctx, missed)))
        paras.append(text)
    else:
        paras.append(ctx.ph("provenance.recovery_none_in_set"))
    if outside:
        paras[-1] += " " + (ctx.ph("provenance.recovery_not_in_set_one", variable=_names(ctx, outside)[0])
                            if len(outside) == 1 else
                            ctx.ph("provenance.recovery_not_in_set", variables=join_list(_names(ctx, outside))))
    paras.append(_group_text(ctx, g))
    return (f"\\subsection{{{ctx.ph('provenance.recovery_title')}}}\\label{{sec:recovery}}\n"
            + "\n\n".join(t for t in paras if t))


def _group_text(ctx: Ctx, g: dict[str, Any]) -> str:
    attr = g.get("attribute")
    if not attr:
        return ""
    label = lc_first(ctx.t(clean_label(g.get("label") or ctx.var_label(attr)), "recovery.json:group.label"))
    if not g.get("planted"):
        return ctx.ph("provenance.recovery_group_none")
    group = ctx.t(g.get("group") or "", "recovery.json:group.group")
    if not g.get("audited"):
        return ctx.ph("provenance.recovery_group_not_audited", group=group, attribute=label)
    if g.get("recovered") is None:
        return ctx.ph("provenance.recovery_group_unreliable", group=group, attribute=label)
    metric = escape_latex(str(g.get("metric") or ctx.primary).upper().replace("R2", "R$^2$"))
    value = ctx.m.metric("RecoveryGroupMetric", g["group_metric"], "recovery.json:group.group_metric")
    overall = ctx.m.metric("RecoveryOverallMetric", g["overall_metric"], "recovery.json:group.overall_metric")
    n = _recovery_count(ctx, "NGroups", g["n_reliable_groups"], "group.n_reliable_groups")
    position = (ctx.ph("provenance.recovery_group_lowest", n=n) if g["recovered"] else
                ctx.ph("provenance.recovery_group_not_lowest", n=n,
                       position=_recovery_count(ctx, "GroupPosition", g["worst_position"], "group.worst_position")))
    return ctx.ph("provenance.recovery_group_planted", units=ctx.units, group=group, attribute=label,
                  metric=metric, value=value, overall=overall, position=position)


def abstract_recovery(ctx: Ctx) -> str:
    """The recovery check in one sentence for the abstract ('' unless the rows were generated and checked)."""
    p, g = (ctx.recovery.get("predictors") or {}), (ctx.recovery.get("group") or {})
    if not ctx.generated or not p.get("n_in_predictors"):
        return ""
    k = _recovery_count(ctx, "K", p["n_in_predictors"], "predictors.n_in_predictors")
    m = _recovery_count(ctx, "Recovered", p["n_recovered"], "predictors.n_recovered")
    group = {True: ctx.ph("provenance.abstract_group_recovered"),
             False: ctx.ph("provenance.abstract_group_missed")}.get(g.get("recovered") if g.get("planted") else None, "")
    return ctx.ph("provenance.abstract_recovery", m=m, k=k, group=(" " + group) if group else "")


def population(ctx: Ctx, population_text: str) -> str | None:
    """The population sentence for generated rows (whom they stand for); None for collected rows."""
    if not ctx.generated:
        return None
    return ctx.ph("provenance.population_generated", population=population_text)


def discussion_blocks(ctx: Ctx) -> dict[str, str]:
    """The Discussion's paragraphs for generated rows: the study as a check of the workflow against the planted
    truth, in place of substantive readings ({} unless the rows were generated)."""
    if not ctx.generated:
        return {}
    out = {"recovery": ctx.ph("provenance.discussion_recovery")}
    p, g = (ctx.recovery.get("predictors") or {}), (ctx.recovery.get("group") or {})
    if ctx.recovery and p.get("n_in_predictors"):
        k = _recovery_count(ctx, "K", p["n_in_predictors"], "predictors.n_in_predictors")
        m = _recovery_count(ctx, "Recovered", p["n_recovered"], "predictors.n_recovered")
        out["recovery"] += " " + (ctx.ph("provenance.discussion_predictors_all", m=m, k=k)
                                  if p["n_recovered"] == p["n_in_predictors"] else
                                  ctx.ph("provenance.discussion_predictors_some", m=m, k=k))
    if ctx.recovery and g.get("attribute"):
        if not g.get("planted"):
            out["recovery"] += " " + ctx.ph("provenance.discussion_group_none")
        elif g.get("recovered") is True:
            out["recovery"] += " " + ctx.ph("provenance.discussion_group_recovered")
        elif g.get("recovered") is False:
            out["recovery"] += " " + ctx.ph("provenance.discussion_group_missed")
    elif not ctx.recovery:
        out["recovery"] += " " + ctx.ph("provenance.discussion_no_truth")
    out["scope"] = ctx.ph("provenance.discussion_scope", units=ctx.units, short=ctx.short)
    return out
