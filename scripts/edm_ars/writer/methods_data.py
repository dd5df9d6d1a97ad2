"""The Methods' data and preparation subsections: the data and the analytic sample (with Table 1), the outcome and
the predictors (with the predictor table), and the preprocessing and the train/test split."""

from __future__ import annotations

import re

from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import cap_first, clean_label, join_list, lc_first, sentence
from edm_ars.review.consistency import record_promise
from edm_ars.writer import provenance, table_one
from edm_ars.writer.common import data_name, has_reserve_codes, nothing_missing, outcome_sentence_np
from edm_ars.writer.context import Ctx
from edm_ars.writer.phrases import plural


def wave_label(ctx: Ctx, key: object) -> str:
    """A wave as Table 1 prints it: the registry's label (`waves[].label`, else its prose), never its key."""
    if not key:
        return "--"
    labels = (ctx.dataset or {}).get("wave_labels") or {}
    text = labels.get(str(key)) or (ctx.dataset or {}).get("waves", {}).get(str(key))
    return escape_latex(" ".join(str(text).split())) if text else ctx.wave(key)


def predictor_table(ctx: Ctx) -> str:
    # with Table 1 (sample.json) the missing shares are there, in its missing-share column
    with_missing = not (ctx.sample and ctx.sample.get("predictors"))
    # a Wave column only when some predictor has a wave (a registry without waves would fill it with "--")
    with_wave = any(p.get("wave") for p in ctx.spec.get("predictors", []))
    rows = []
    for i, p in enumerate(ctx.spec.get("predictors", [])):
        name = p["name"]
        label = ctx.t(clean_label(p.get("label") or ctx.var_label(name)),
                      f"research_spec.json:predictors.{i}.label")
        wave = f" & {wave_label(ctx, p.get('wave'))}" if with_wave else ""
        miss = f" & {ctx.n.get(f'miss:{name}', '--')}" if with_missing else ""
        rows.append(f"\\texttt{{{escape_latex(name)}}} & {label}{wave}{miss} \\\\")
    no_wave = "" if with_wave else "_no_wave"
    caption = (ctx.ph(f"methods.predictor_table_caption{no_wave}") if with_missing
               else ctx.ph(f"common.sample_predictor_table_caption{no_wave}"))
    return (f"\\begin{{table}}[tbp]\n\\caption{{{caption}}}\n"
            "\\label{tab:predictors}\n"
            "\\small\n\\begin{tabularx}{\\columnwidth}{@{}lY" + ("Z" if with_wave else "") + ("r" if with_missing else "")
            + "@{}}\n\\toprule\n"
            "Variable & Label" + (" & Wave" if with_wave else "") + (" & Missing" if with_missing else "")
            + " \\\\\n\\midrule\n" + "\n".join(rows)
            + "\n\\bottomrule\n\\end{tabularx}\n\\end{table}")


_KFOLD = re.compile(r"^\s*Stratified(Group)?KFold\(n_splits=(\d+)\)\s*fold\s*\d+", re.I)


def split_method(ctx: Ctx) -> str:
    """How the test set was drawn, in words ('one fold of a stratified, school-grouped 5-fold partition')."""
    method = str(ctx.data["split"].get("method", "") or "")
    m = _KFOLD.match(method)
    if m:
        k = ctx.m.count("SplitFolds", int(m.group(2)), "data_report.json:split.method (n_splits)")
        if m.group(1) and ctx.school_split_ok:
            kind = ctx.ph("methods.kfold_cluster_grouped", cluster=ctx.cluster)
        else:
            kind = ctx.ph("methods.kfold_grouped") if m.group(1) else ctx.ph("methods.kfold_stratified")
        return ctx.ph("methods.split_kfold", kind=kind, k=k)
    return ctx.t(method.replace("_", " "), "data_report.json:split.method")


def repeated_sentences(ctx: Ctx, method: str, share: str) -> str:
    """How the split kept each unit's repeated records together (data_report.json:split.repeated): alone, or nested
    in its cluster (and, when units moved between clusters, the groups of clusters they joined)."""
    rep, split = ctx.repeated, ctx.data["split"]
    column = f"\\texttt{{{rep['id']}}}"
    units_n = ctx.m.count("TestUnits", rep["test_units"], "data_report.json:split.repeated.test_units")
    records = ctx.m.count("TestRecords", rep["test_records"], "data_report.json:split.repeated.test_records")
    if not ctx.school_split_ok:
        return ctx.ph("methods.split_repeated_only", unit=rep["unit"], units=rep["units"], column=column,
                      method=method, share=share, records=records, units_n=units_n)
    text = ctx.ph("methods.split_repeated_nested", unit=rep["unit"], units=rep["units"], column=column,
                  cluster=ctx.cluster, records=records, units_n=units_n)
    if ctx.split_groups_kind == "joined":
        groups = ctx.m.count("SplitGroups", split["n_groups"], "data_report.json:split.n_groups")
        text += " " + ctx.ph("methods.split_repeated_moved", units=rep["units"], cluster=ctx.cluster,
                             clusters=plural(ctx.cluster), groups=groups)
    return text


def levels_sentence(ctx: Ctx, method: str, share: str) -> str:
    """How a split of data with more than one cluster level (registry dataset.grouping.also;
    data_report.json:split.cluster_levels) kept them together: every level (the groups of clusters the rows link),
    or one level, the others counted on both sides."""
    split, units = ctx.data["split"], ctx.units
    levels = split["cluster_levels"]

    def level(k: int, lv: dict) -> str:
        cols = ", ".join(f"\\texttt{{{escape_latex(c)}}}" for c in lv["columns"])
        count = ctx.m.count(f"Level{chr(65 + k)}Clusters", lv["n_clusters"],
                            f"data_report.json:split.cluster_levels.{k}.n_clusters")
        return ctx.ph("methods.level_named", n=count, clusters=plural(lv["unit"]), columns=cols)

    named = join_list([level(k, lv) for k, lv in enumerate(levels)])
    kept = [lv for lv in levels if lv["kept_together"]]
    if len(kept) > 1:
        groups = ctx.m.count("SplitGroups", split["n_groups"], "data_report.json:split.n_groups")
        return ctx.ph("methods.split_levels_all", units=units, levels=named, groups=groups, method=method,
                      share=share, cluster=join_list([lv["unit"] for lv in kept], "or"))
    others = [(k, lv) for k, lv in enumerate(levels) if not lv["kept_together"]]
    both = join_list([ctx.ph("methods.level_both_sides", clusters=plural(lv["unit"]), units=units,
                             n=ctx.m.count(f"Level{chr(65 + k)}BothSides", lv["on_both_sides"],
                                           f"data_report.json:split.cluster_levels.{k}.on_both_sides"))
                      for k, lv in others])
    return ctx.ph("methods.split_levels_one", units=units, levels=named, kept=plural(kept[0]["unit"]),
                  method=method, share=share, both=both)


def split_sentences(ctx: Ctx, method: str) -> str:
    """How clusters (schools) were kept on one side of the split: reconstructed from a fingerprint, given by an
    identifier column, absent from the data, or not formed."""
    n, g, unit, units = ctx.n, ctx.grouping, ctx.cluster, ctx.units
    share = ctx.ph("methods.split_share", pct=n["TestFractionPct"], seed=n["SplitSeed"])
    row = units[:-1] if units.endswith("s") else units
    if ctx.school_split_ok:
        leak = cap_first(ctx.ph("methods.cluster_leak", units=units, unit=unit, row=row, short=data_name(ctx)))
        if g["reconstructed"]:
            count = (" " + ctx.ph("methods.n_clusters", n=n["NClusters"])) if "NClusters" in n else ""
            how = (ctx.ph("methods.split_reconstructed", unit=unit) + count + " "
                   + ctx.ph("methods.split_reconstructed_assigned", method=method, share=share,
                            overlap=n["GroupOverlap"]))
        elif ctx.data["split"].get("cluster_levels"):  # more than one cluster level (dataset.grouping.also)
            how = levels_sentence(ctx, method, share)
        else:
            cols = ", ".join(f"\\texttt{{{escape_latex(c)}}}" for c in g["columns"])
            count = (" " + ctx.ph("methods.n_units", n=n["NClusters"], unit=unit)) if "NClusters" in n else ""
            how = ctx.ph("methods.split_by_identifier", unit=unit, columns=cols, count=count, method=method,
                         share=share, overlap=n["GroupOverlap"])
        return f"{leak} {how}" + (" " + repeated_sentences(ctx, method, share) if ctx.repeated else "")
    if ctx.repeated:  # no cluster (none declared, or none in the data): the units of the repeated records are the groups
        return repeated_sentences(ctx, method, share)
    if not g["columns"]:
        return ctx.ph("methods.split_no_clusters", unit=unit, units=units, row=row, method=method, share=share)
    # the split's status is an internal code (`degenerate_few_clusters`): it chooses the sentence, never printed
    status = str(ctx.data["split"]["school_reconstruction"].get("status") or "")
    if status == "degenerate_few_clusters":
        if "NClusters" in n:
            return ctx.ph("methods.split_clusters_too_few", n=n["NClusters"], unit=unit, row=row, method=method,
                          share=share, units=units)
        return ctx.ph("methods.split_clusters_too_few_uncounted", unit=unit, row=row, method=method, share=share,
                      units=units)
    how = (ctx.ph("methods.clusters_not_reconstructed") if g["reconstructed"]
           else ctx.ph("methods.clusters_not_formed"))
    return cap_first(ctx.ph("methods.split_clusters_failed", unit=unit, how=how, row=row,
                            method=method, share=share, units=units))


def data_text(ctx: Ctx) -> str:
    n, spec = ctx.n, ctx.spec
    sents = provenance.data_sentences(ctx)  # what the rows are, who collected them, how they reached us
    if sents is None:  # no provenance record: the registry's source alone
        agency = (", " + ctx.ph("methods.collected_by", agency=ctx.ds["agency"])) if ctx.ds.get("agency") else ""
        source = ctx.ds.get("source") or ctx.full_name
        if not re.match(r"(the|a|an|these|this|our)\s", source, re.I):  # "We used {source}": the sentence's article
            source = "the " + source
        sents = [ctx.ph("methods.data_source", source=source, agency=agency)]
    pop = (spec.get("population") or "").strip().rstrip(".")
    if pop:
        pop = lc_first(ctx.t(pop, "research_spec.json:population"))
        sents.append(provenance.population(ctx, pop) or ctx.ph("methods.population", population=pop))
    sents.append(ctx.ph("methods.analytic_sample", original=n["OriginalN"], units=ctx.units, analytic=n["AnalyticN"],
                        pct=n["RetentionPct"]))
    if ctx.repeated and "AnalyticUnits" in n:  # long format: the records' units beside their count
        sents.append(ctx.ph("methods.analytic_units", records=ctx.units, n=n["AnalyticUnits"],
                            units=ctx.repeated["units"], column=f"\\texttt{{{ctx.repeated['id']}}}"))
    if ctx.binary and "NPositive" in n:
        sents.append(ctx.ph("methods.positive_class", units=ctx.units,
                            n=n["NPositive"] + (f" ({n['PositivePct']})" if "PositivePct" in n else ""))
                     + (f" (\\emph{{{ctx.positive}}})." if spec["outcome"].get("positive_label") else "."))
    elif not ctx.binary and "OutcomeMean" in n:
        if "OutcomeSD" not in n:
            sents.append(ctx.ph("methods.outcome_mean", mean=n["OutcomeMean"]))
        elif "OutcomeMin" in n and "OutcomeMax" in n:
            sents.append(ctx.ph("methods.outcome_mean_sd_range", mean=n["OutcomeMean"], sd=n["OutcomeSD"],
                                low=n["OutcomeMin"], high=n["OutcomeMax"]))
        else:
            sents.append(ctx.ph("methods.outcome_mean_sd", mean=n["OutcomeMean"], sd=n["OutcomeSD"]))
    sents += bounded_outcome_sentences(ctx)
    pointer = table_one.data_sentence(ctx)  # the sample flow and Table 1
    if pointer:
        sents.append(pointer)
    floats = "".join("\n\n" + t for t in (table_one.flow_table(ctx), table_one.sample_table(ctx)) if t)
    return (f"\\subsection{{{ctx.ph('methods.data_title', units=cap_first(ctx.people))}}}\n" + " ".join(sents) + floats)


def bounded_outcome_sentences(ctx: Ctx) -> list[str]:
    """A discrete or bounded continuous outcome (data_report.json:outcome_shape, edm_ars.data.outcome_shape): its
    range and shares at the bounds in the training rows, that every prediction was kept within the range (with the
    selected model's count of test predictions outside it), and what the rows at a bound mean for R2 and RMSE."""
    n, shape = ctx.n, ctx.data.get("outcome_shape") or {}
    if "ShapeLow" not in n:
        return []
    units, low, high = ctx.units, n["ShapeLow"], n["ShapeHigh"]
    sents = [ctx.ph("methods.outcome_discrete", n_values=n["ShapeValues"], low=low, high=high, units=units)
             if shape.get("discrete") else ctx.ph("methods.outcome_observed_range", low=low, high=high, units=units)]
    sents.append(ctx.ph("methods.outcome_at_bounds", ceiling=n["ShapeCeilingPct"], floor=n["ShapeFloorPct"],
                        low=low, high=high, units=units))
    kept = (ctx.results.get("models", {}).get(ctx.best) or {}).get("prediction_range")
    if kept and kept["n_clipped"]:
        clipped = ctx.m.count("BestNClipped", kept["n_clipped"],
                              f"results.json:models.{ctx.best}.prediction_range.n_clipped")
        sents.append(ctx.ph("methods.outcome_kept_in_range", low=low, high=high, clipped=clipped,
                            test_n=n["TestN"]))
    elif kept:  # "0 of the 690 test predictions were outside it" said as none
        sents.append(ctx.ph("methods.outcome_kept_in_range_none", low=low, high=high, test_n=n["TestN"]))
    if shape.get("ceiling_effect") or shape.get("floor_effect"):
        sents.append(ctx.ph("methods.outcome_bounds_metrics", units=units))
    return sents


def outcome_text(ctx: Ctx) -> str:
    n, d, spec = ctx.n, ctx.data, ctx.spec
    o = spec["outcome"]
    outcome, wave = outcome_sentence_np(ctx), ctx.wave(o.get("wave"))
    timing = (ctx.ph("methods.timing_waves") if ctx.has_waves else ctx.ph("methods.timing_repeated")
              if ctx.records_without_waves else ctx.ph("methods.timing_cross_section"))
    sents = [ctx.ph("methods.outcome_binary", outcome=outcome, wave=wave) if ctx.binary
             else ctx.ph("methods.outcome_regression", outcome=outcome, wave=wave),
             ctx.ph("methods.predictors_used", n=n["NPredictors"], timing=timing, features=n["NFeatures"])]
    note = (spec.get("temporal_order_note") or "").strip()
    if note:
        sents.append(sentence(ctx.t(note, "research_spec.json:temporal_order_note")))
    # the first predictor with a stated rationale (a registry may leave rationales ''): none, no sentence
    stated = [(i, p) for i, p in enumerate(spec.get("predictors", [])) if (p.get("rationale") or "").strip(" .")]
    if stated:
        i, first = stated[0]
        every = len(stated) == len(spec["predictors"])
        sents.append(ctx.ph(f"methods.predictor_rationale{'' if every else '_some'}", name=escape_latex(first["name"]),
                            rationale=lc_first(ctx.t(first["rationale"].strip().rstrip("."),
                                                     f"research_spec.json:predictors.{i}.rationale"))))
    protected = d.get("protected") or []
    if protected:
        used = [p for p in protected if p in d["predictors_before"]]
        labels = join_list([f"\\emph{{{lc_first(ctx.label_tex(p, 'registry label'))}}}" for p in protected])
        if used and len(used) == len(protected):
            sents.append(ctx.ph("methods.protected_all_used", attributes=labels))
        elif used:
            sents.append(ctx.ph("methods.protected_some_used", attributes=labels,
                                used=join_list([lc_first(ctx.label_tex(p, "registry label")) for p in used])))
        elif len(protected) > 1:
            sents.append(ctx.ph("methods.protected_unused", attributes=labels, units=ctx.people))
        else:
            sents.append(ctx.ph("methods.protected_unused_one", attributes=labels, units=ctx.people))
    return (f"\\subsection{{{ctx.ph('methods.outcome_title')}}}\n" + " ".join(sents) + "\n\n"
            + predictor_table(ctx))


def preprocessing_text(ctx: Ctx) -> str:
    c, n, d = ctx.cites, ctx.n, ctx.data
    sr_n = n.get("sentinel:n_values_recoded")
    sr_v = n.get("sentinel:n_variables") or n.get("sentinel:n_variables_recoded")
    if has_reserve_codes(ctx):
        recoded = ""
        if sr_n:
            recoded = " " + (ctx.ph("methods.recoded_values_variables", values=sr_n, variables=sr_v) if sr_v
                             else ctx.ph("methods.recoded_values", values=sr_n))
        sents = [ctx.ph("methods.reserve_codes", short=ctx.short) + recoded + "."]
    else:
        sents = [ctx.ph("methods.no_reserve_codes")]
    sents.append(split_sentences(ctx, split_method(ctx)))
    sents.append(ctx.ph("methods.split_before_preprocessing", train=n["TrainN"], test=n["TestN"], units=ctx.units))
    imp = (d.get("imputation_protocol") or "").strip()
    if imp and not nothing_missing(ctx):  # how missing values were imputed: nothing to say when none were missing
        sents.append(ctx.t(imp, "data_report.json:imputation_protocol") + ("" if imp.endswith(".") else "."))
    sents += [x for x in (table_one.structural_sentence(ctx), table_one.duplicated_sentence(ctx)) if x]
    if "MaxMissingPct" in n:
        sents.append(ctx.ph("methods.missing_values", k=n["NVarsMissing"], n=n["NPredictors"],
                            pct=n["MaxMissingPct"], variable=escape_latex(n["MaxMissingVar"]),
                            cite=c.citep("missing_data", limit=1)))
    elif any(v in (d.get("missingness") or {}) for v in d.get("predictors_before") or []):
        sents.append(ctx.ph("methods.no_missing_values"))
    # with no waves the temporal gate cannot order anything: it is not named as an example of what was checked
    sents.append(ctx.ph("methods.validation_checks", n=n["NChecks"], passed=n["NChecksPassed"]) if ctx.has_waves
                 else ctx.ph("methods.validation_checks_no_waves", n=n["NChecks"], passed=n["NChecksPassed"]))
    failed = [ch["name"] for ch in d.get("checks", []) if not ch.get("passed")]
    if failed:
        checks = join_list([f"\\texttt{{{escape_latex(x)}}}" for x in failed])
        sents.append(ctx.ph("methods.checks_failed_many", checks=checks) if len(failed) > 1
                     else ctx.ph("methods.checks_failed_one", checks=checks))
        # the Limitations name each failed check (limitations.failed_checks): a promise the consistency check holds
        record_promise(ctx.outline, "sec:methods", "sec:limitations", [str(x) for x in failed],
                       "methods.checks_failed_many" if len(failed) > 1 else "methods.checks_failed_one")
    return f"\\subsection{{{ctx.ph('methods.preprocessing_title')}}}\n" + " ".join(sents)
