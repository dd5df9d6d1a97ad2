"""Limitations."""

from __future__ import annotations

import re

from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import cap_first, clean_label, join_list, lc_first, sentence
from edm_ars.writer import multilevel, provenance, splits, supplementary, table_one
from edm_ars.writer.common import attribute_noun, data_name, suspiciously_high
from edm_ars.writer.context import Ctx
from edm_ars.writer.phrases import plural

_MISSING_NOTE = re.compile(r"\S+ is [\d.]+% missing in the training rows; imputed")
_OUTCOME_NOTE = re.compile(r"Outcome \S+ has structural missingness")  # engineer.prepare, a structural outcome
_OUTCOME_LIMITATION = re.compile(r"\boutcome\b.*\bmissing\b", re.I | re.S)


def write(ctx: Ctx) -> str:
    n = ctx.n
    items = [ctx.ph("limitations.predictive")]
    rows = provenance.limitation(ctx)  # what the rows are (generated, a package's copy, a local file)
    if rows:
        items.insert(0, rows)
    for i, text in enumerate(ctx.spec.get("limitations") or []):
        if re.search(r"\bcausal\b", text, re.I):
            continue  # the first item already says it
        items.append(sentence(ctx.t(text.strip(), f"research_spec.json:limitations.{i}")))
    missing = table_one.missing_limitation(ctx)  # one sentence; the shares are in Table 1's missing-share column
    if missing:
        items.append(missing)
    outcome_said = any(_OUTCOME_LIMITATION.search(t) for t in ctx.spec.get("limitations") or [])
    for i, text in enumerate(ctx.data.get("warnings") or []):
        if _MISSING_NOTE.match(text.strip()) and missing:
            continue  # an earlier engineer's note per variable, which the sentence above replaces
        if _OUTCOME_NOTE.match(text.strip()) and outcome_said:
            continue  # the specification's limitation (from the registry) already says the outcome is missing
        items.append(ctx.ph("limitations.data_warning",
                            warning=sentence(ctx.t(text.strip(), f"data_report.json:warnings.{i}"))))

    for extra in (failed_checks_sentence(ctx), leakage_sentence(ctx), errors_sentence(ctx), other_flags_sentence(ctx)):
        if extra:
            items.append(extra)
    unreliable = [g for r in ctx.fairness.get("attributes", {}).values() if r.get("kind") != "intersection"
                  for g in r.get("groups") or [] if not g.get("reliable", True)]
    if unreliable:
        labels = [attribute_noun(ctx, a, lc_first(ctx.label_tex(a, "research_spec.json:subgroups")))
                  for a in ctx.spec.get("subgroups") or []]
        items.append(ctx.ph("limitations.small_groups", groups=join_list(labels) if labels else ctx.units))
    g, unit = ctx.grouping, ctx.cluster
    if ctx.school_split_ok and g["reconstructed"]:
        items.append(cap_first(ctx.ph("limitations.clusters_reconstructed", unit=unit)))
    elif not ctx.school_split_ok and g["columns"]:  # no cluster columns: the registry declares the rows independent
        items.append(cap_first(ctx.ph("limitations.clusters_shared", units=ctx.units, unit=unit)))
    if level_not_kept_sentence(ctx):
        items.append(level_not_kept_sentence(ctx))
    if splits.limitation(ctx):  # the study was repeated over grouped splits
        items.append(splits.limitation(ctx))
    else:
        items.append(ctx.ph("limitations.single_split_stability", short=data_name(ctx)) if ctx.stability.get("runs")
                     else ctx.ph("limitations.single_split", short=data_name(ctx)))
    items += supplementary.limitations(ctx)  # unsandboxed or dropped supplementary analyses
    items += multilevel.limitations(ctx)  # variance components from few clusters
    subgroups = ctx.spec.get("subgroups") or []
    if subgroups and not ctx.fairness_reported:
        items.append(ctx.ph("limitations.subgroups_not_evaluated"))
    lit = ctx.lit
    if lit.get("retrieval_failed") or lit.get("source") == "curated":
        items.append(ctx.ph("limitations.curated_references_retrieval_failed") if lit.get("retrieval_failed")
                     else ctx.ph("limitations.curated_references"))
    if ctx.lit.get("papers") and n.get("NExcludedRefs") and any(
            p.get("status") != "VERIFIED" for p in ctx.lit.get("papers", [])):
        k = sum(1 for p in ctx.lit.get("papers", []) if p.get("status") != "VERIFIED")
        items.append(ctx.ph("limitations.excluded_reference", n=n["NExcludedRefs"]) if k == 1
                     else ctx.ph("limitations.excluded_references", n=n["NExcludedRefs"]))
    items.append(ctx.ph("limitations.not_reviewed"))
    return (ctx.ph("limitations.intro", short=data_name(ctx)) + "\n\\begin{itemize}\n"
            + "\n".join(f"  \\item {i}" for i in items) + "\n\\end{itemize}")


def level_not_kept_sentence(ctx: Ctx) -> str:
    """A cluster level the split did not keep together (registry dataset.grouping.split_by naming another level;
    data_report.json:split.cluster_levels): its units may be on both sides. Empty otherwise."""
    levels = ctx.data["split"].get("cluster_levels") or []
    others = [lv["unit"] for lv in levels if not lv["kept_together"]]
    if not ctx.school_split_ok or not others:
        return ""
    return cap_first(ctx.ph("limitations.level_not_kept", units=ctx.units, other=others[0],
                            kept=join_list([plural(lv["unit"]) for lv in levels if lv["kept_together"]]),
                            others=join_list([plural(u) for u in others])))


def failed_checks_sentence(ctx: Ctx) -> str:
    """The data checks that failed, by name: the Methods say this section discusses them."""
    failed = [str(ch["name"]) for ch in ctx.data.get("checks") or [] if not ch.get("passed")]
    if not failed:
        return ""
    checks = join_list([f"\\texttt{{{escape_latex(x)}}}" for x in failed])
    return (ctx.ph("limitations.failed_checks_many", checks=checks) if len(failed) > 1
            else ctx.ph("limitations.failed_checks_one", checks=checks))


def leakage_sentence(ctx: Ctx) -> str:
    """Possible leakage, when the Results flag it (and send the reader here), and the predictors the DataEngineer's
    data check no_outcome_proxy found near-identical to the outcome in the training rows."""
    flagged = any(str(f).startswith("possible_leakage") for f in ctx.results.get("flags") or [])
    text = ctx.ph("limitations.leakage") if flagged or suspiciously_high(ctx) else ""
    return " ".join(t for t in (text, proxy_sentence(ctx), dropped_proxy_sentence(ctx)) if t)


#: the Critic's item whose revision drops a suspected proxy of the outcome (config/rubric.yaml)
LEAKAGE_ITEM = "sv_no_leakage_flag"


def dropped_proxy_sentence(ctx: Ctx) -> str:
    """The predictors a review of an earlier round removed as suspected proxies of the outcome (research_spec.json
    dropped_on_revision, written when the revision applied the Critic's drop_predictor action)."""
    dropped = [d for d in ctx.spec.get("dropped_on_revision") or []
               if isinstance(d, dict) and d.get("issue") == LEAKAGE_ITEM and d.get("name")]
    labels = {str(d["name"]): str(d.get("label") or "") for d in dropped}
    if not labels:
        return ""

    def named_as(name: str) -> str:
        code = f"\\texttt{{{escape_latex(name)}}}"
        label = clean_label(labels[name]) or ctx.var_label(name)
        if label.strip().lower() == name.lower():  # no label beyond the column's name
            return code
        return f"\\emph{{{lc_first(ctx.t(label, 'research_spec.json:dropped_on_revision'))}}} ({code})"

    named = join_list([named_as(n) for n in labels])
    if len(labels) > 1:
        return ctx.ph("limitations.leakage_dropped_many", predictors=named)
    return ctx.ph("limitations.leakage_dropped_one", predictors=named)


def proxy_sentence(ctx: Ctx) -> str:
    """The feature columns of the failed data check no_outcome_proxy, each named with its correlation with the
    outcome in the training rows (macros from data_report.json), and the threshold applied."""
    checks = ctx.data.get("checks") or []
    at = next((i for i, c in enumerate(checks) if c.get("name") == "no_outcome_proxy" and not c.get("passed")), None)
    if at is None:
        return ""
    detail = checks[at].get("detail") or {}
    proxies = [p for p in detail.get("proxies") or [] if isinstance(p, dict) and isinstance(p.get("r"), (int, float))]
    threshold = detail.get("threshold")
    if not proxies or not isinstance(threshold, (int, float)):
        return ""
    sources = ctx.data.get("feature_sources") or {}
    base = f"data_report.json:checks.{at}.detail"
    named = []
    for j, p in enumerate(proxies[:3]):
        column = str(p.get("column"))
        source = sources.get(column, column)
        r = ctx.m.add("ProxyR", f"{p['r']:.3f}", p["r"], f"{base}.proxies.{j}.r")
        code = f"\\texttt{{{escape_latex(column)}}}"
        if ctx.var_label(source).strip().lower() == column.lower():  # no label beyond the column's name
            named.append(f"{code} ($r = {r}$)")
            continue
        label = lc_first(ctx.label_tex(source, ctx.label_source(source, "registry label")))
        named.append(f"\\emph{{{label}}} ({code}, $r = {r}$)")
    separation = (ctx.ph("limitations.leakage_proxy_separation")
                  if any(p.get("separates_classes") for p in proxies) else "")
    thr = ctx.m.add("ProxyThreshold", f"{threshold:.2f}", threshold, f"{base}.threshold")
    return ctx.ph("limitations.leakage_proxy", proxies=join_list(named), threshold=thr, separation=separation)


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
            desc = escape_latex(where) if where else ctx.ph("limitations.error_unknown_step")
            detail = (f"{escape_latex(typ)}: " if typ else "") + ctx.t(msg[:140].rstrip(".") + ("..." if len(msg) > 140 else ""), src + ".message")
            items.append(f"{desc} ({detail})" if msg or typ else desc)
        else:
            items.append(ctx.t(str(e)[:140], src))
    problems = "; ".join(items) + (" " + ctx.ph("limitations.errors_more") if len(errs) > 4 else "")
    warnings = all(isinstance(e, dict) and str(e.get("type") or "").endswith("Warning") for e in errs)
    if warnings:  # a fit that stopped at its iteration limit: its results exist
        return (ctx.ph("limitations.warnings_many", k=k, problems=problems) if len(errs) != 1
                else ctx.ph("limitations.warnings_one", k=k, problems=problems))
    return (ctx.ph("limitations.errors_many", k=k, problems=problems) if len(errs) != 1
            else ctx.ph("limitations.errors_one", k=k, problems=problems))


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
    return ctx.ph("limitations.other_flags", kinds=join_list([f"\\emph{{{k}}}" for k in kinds]))
