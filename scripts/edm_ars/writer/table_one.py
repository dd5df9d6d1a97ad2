"""Table 1 (the analytic sample before imputation), the sample flow, and the sentences on missing values that
point at them: the structurally missing predictors (Methods) and the one summary sentence of the Limitations.

Every number is a macro whose source is a path into the engineer's sample.json (or data_report.json), so
`verify-paper` reconciles the tables with the artifacts.
"""

from __future__ import annotations

from typing import Any

from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import clean_label, join_list, lc_first
from edm_ars.data.sample import OTHER_LEVELS
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import macro_name


def _decimals(value: float) -> int:
    """Decimals of a mean or SD in Table 1: two for small magnitudes, one for scores in the hundreds."""
    return 2 if abs(value) < 100 else 1


def fmt_fixed(value: float, digits: int) -> str:
    """A mean, SD or correlation at a fixed number of decimals, rounded as printed (a mean of -0.0004 is 0.00, never
    '<0.01' as a metric is); a negative value gets a math minus."""
    text = f"{float(value):.{digits}f}"
    if float(text) == 0:
        text = text.lstrip("-")
    return "$-$" + text[1:] if text.startswith("-") else text


def _num(ctx: Ctx, name: str, value: Any, source: str, digits: int) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "--"
    return ctx.m.add(name, fmt_fixed(value, digits), float(value), source)


def _pct(ctx: Ctx, name: str, value: Any, source: str) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "--"
    return ctx.m.pct(name, value, source)


def _mean_sd(ctx: Ctx, stem: str, rec: dict[str, Any], src: str) -> str:
    if not isinstance(rec.get("mean"), (int, float)):
        return "--"
    d = _decimals(rec["mean"])
    mean = _num(ctx, macro_name(stem, "Mean"), rec["mean"], f"{src}.mean", d)
    sd = _num(ctx, macro_name(stem, "SD"), rec.get("sd"), f"{src}.sd", d)
    return f"{mean} ({sd})"


def _label(ctx: Ctx, rec: dict[str, Any], src: str) -> str:
    name = rec["name"]
    text = clean_label(rec.get("label") or name)
    return ctx.t(text, f"{src}.label") + f" (\\texttt{{{escape_latex(name)}}})" if text != name \
        else f"\\texttt{{{escape_latex(name)}}}"


def _level_label(ctx: Ctx, level: dict[str, Any], src: str) -> str:
    if level.get("value") == OTHER_LEVELS:
        return ctx.ph("common.sample_other_levels")
    return ctx.t(" ".join(str(level.get("label", level.get("value"))).split()), f"{src}.label")


def _rows(ctx: Ctx, key: str, width: int, audited: bool) -> list[str]:
    """The rows of one panel of Table 1: sample.json:{key} (predictors or audited)."""
    binary = ctx.binary
    rows = []
    for i, rec in enumerate(ctx.sample.get(key) or []):
        src = f"sample.json:{key}.{i}"
        stem = macro_name("Sample", "Audit" if audited else "", rec["name"])
        miss = _pct(ctx, macro_name(stem, "Missing"), rec.get("pct_missing"), f"{src}.pct_missing")
        label = _label(ctx, rec, src)
        if rec["kind"] == "continuous":
            cells = [_mean_sd(ctx, stem, rec, src)]
            if binary:
                for c, by in enumerate(rec.get("by_class") or []):
                    cells.append(_mean_sd(ctx, macro_name(stem, "Class", str(c)), by, f"{src}.by_class.{c}"))
                cells.append("")
            else:
                cells.append("$r$ = " + _num(ctx, macro_name(stem, "Corr"), rec.get("corr"), f"{src}.corr", 2)
                             if isinstance(rec.get("corr"), (int, float)) else "--")
            rows.append(" & ".join([label] + cells + [miss]) + " \\\\")
            continue
        rows.append(label + " & " * (width - 1) + miss + " \\\\")
        for j, lv in enumerate(rec.get("levels") or []):
            lsrc = f"{src}.levels.{j}"
            lstem = macro_name(stem, "Level", str(j + 1))
            share = _pct(ctx, macro_name(lstem, "Pct"), lv.get("pct"), f"{lsrc}.pct")
            if audited:
                share = ctx.m.count(macro_name(lstem, "N"), lv["n"], f"{lsrc}.n") + f" ({share})"
            cells = [share]
            if binary:
                for c, p in enumerate(lv.get("by_class_pct") or []):
                    cells.append(_pct(ctx, macro_name(lstem, "Class", str(c), "Pct"), p, f"{lsrc}.by_class_pct.{c}"))
                cells.append(_pct(ctx, macro_name(lstem, "Rate"), lv.get("rate"), f"{lsrc}.rate"))
            else:
                om = lv.get("outcome_mean")
                if isinstance(om, (int, float)):
                    d = _decimals(om)
                    sd = _num(ctx, macro_name(lstem, "OutcomeSD"), lv.get("outcome_sd"), f"{lsrc}.outcome_sd", d)
                    cells.append(_num(ctx, macro_name(lstem, "OutcomeMean"), om, f"{lsrc}.outcome_mean", d)
                                 + f" ({sd})")
                else:
                    cells.append("--")
            rows.append("\\quad " + _level_label(ctx, lv, lsrc) + " & " + " & ".join(cells) + " & \\\\")
    return rows


def sample_table(ctx: Ctx) -> str:
    """Table 1: the analytic sample before imputation (a full-width float; empty without sample.json)."""
    s = ctx.sample
    if not s or not s.get("predictors"):
        return ""
    binary = ctx.binary
    n = ctx.m.count("SampleN", s["n"], "sample.json:n")
    if binary:
        classes = s.get("classes") or []
        heads = [ctx.ph("common.sample_col_all")]
        for i, (c, name) in enumerate(zip(classes, (ctx.ph("common.sample_col_negative"), ctx.ph("common.sample_col_positive")),
                                          strict=False)):
            k = ctx.m.count(macro_name("SampleClass", str(c["value"]), "N"), c["n"], f"sample.json:classes.{i}.n")
            heads.append(name + f" ($n$ = {k})")
        heads.append(ctx.ph("common.sample_col_rate"))
        audited = (" " + ctx.ph("common.sample_caption_audited_binary", units=ctx.units)) if s.get("audited") else ""
        caption = ctx.ph("common.sample_table_caption_binary", n=n, units=ctx.units, audited=audited)
    else:
        heads = [ctx.ph("common.sample_col_all"), ctx.ph("common.sample_col_outcome")]
        audited = (" " + ctx.ph("common.sample_caption_audited", units=ctx.units)) if s.get("audited") else ""
        caption = ctx.ph("common.sample_table_caption_regression", n=n, units=ctx.units, outcome=ctx.outcome_phrase,
                         audited=audited)
    if any(rec.get("kind") == "continuous" for rec in s.get("audited") or []):
        caption += " " + ctx.ph("common.sample_table_caption_scale")
    heads.append(ctx.ph("common.sample_col_missing"))
    width = len(heads) + 1
    body = [f"\\multicolumn{{{width}}}{{@{{}}l}}{{\\emph{{{ctx.ph('common.sample_panel_predictors')}}}}} \\\\"]
    body += _rows(ctx, "predictors", width, audited=False)
    if s.get("audited"):
        body.append("\\midrule")
        body.append(f"\\multicolumn{{{width}}}{{@{{}}l}}{{\\emph{{{ctx.ph('common.sample_panel_audited')}}}}} \\\\")
        body += _rows(ctx, "audited", width, audited=True)
    spec = "@{}X" + "r" * (width - 1) + "@{}"
    return ("\\begin{table*}[tbp]\n\\caption{" + caption + "}\n\\label{tab:sample}\n\\footnotesize\n"
            "\\setlength{\\tabcolsep}{4pt}\n\\renewcommand{\\arraystretch}{0.9}\n"
            f"\\begin{{tabularx}}{{\\textwidth}}{{{spec}}}\n\\toprule\n"
            + " & ".join([ctx.ph("common.sample_col_variable")] + heads) + " \\\\\n\\midrule\n"
            + "\n".join(body) + "\n\\bottomrule\n\\end{tabularx}\n\\end{table*}")


def flow_table(ctx: Ctx) -> str:
    """The sample flow: from the data file to the training and test sets, complete cases, and the test rows the
    subgroup audit leaves out (a column-wide float; empty without sample.json)."""
    f = ctx.sample.get("flow") if ctx.sample else None
    if not f:
        return ""
    m = ctx.m

    def count(name: str, key: str) -> str:
        v = f.get(key)
        return m.count(macro_name("Flow", name), v, f"sample.json:flow.{key}") if isinstance(v, int) else "--"

    rows = [(ctx.ph("common.sample_flow_raw"), count("RawN", "raw_n"), ""),
            (ctx.ph("common.sample_flow_outcome_missing"), count("OutcomeMissingN", "outcome_missing_n"), ""),
            (ctx.ph("common.sample_flow_analytic"), count("AnalyticN", "analytic_n"), ""),
            (ctx.ph("common.sample_flow_train"), count("TrainN", "train_n"),
             count("TrainClusters", "train_clusters") if f.get("clustered") else "--"),
            (ctx.ph("common.sample_flow_test"), count("TestN", "test_n"),
             count("TestClusters", "test_clusters") if f.get("clustered") else "--"),
            (ctx.ph("common.sample_flow_complete"), count("CompleteN", "complete_case_n"), ""),
            (ctx.ph("common.sample_flow_complete_train"), count("CompleteTrainN", "complete_case_train_n"), ""),
            (ctx.ph("common.sample_flow_complete_test"), count("CompleteTestN", "complete_case_test_n"), "")]
    for i, rec in enumerate(f.get("test_missing_protected") or []):
        attr = lc_first(ctx.label_tex(rec["name"], "registry label"))
        k = m.count(macro_name("Flow", "Test", "Missing", rec["name"]), rec["n"],
                    f"sample.json:flow.test_missing_protected.{i}.n")
        rows.append((ctx.ph("common.sample_flow_test_missing", attribute=attr), k, ""))
    clusters = ctx.ph("common.sample_col_clusters", units=ctx.cluster).capitalize() if f.get("clustered") else ""
    spec = "@{}Xrr@{}" if clusters else "@{}Xr@{}"
    lines = [" & ".join([a, b] + ([c or ""] if clusters else [])) + " \\\\" for a, b, c in rows]
    head = " & ".join([ctx.ph("common.sample_col_step"), ctx.units.capitalize()] + ([clusters] if clusters else []))
    return ("\\begin{table}[tbp]\n\\caption{" + (ctx.ph("common.sample_flow_caption", units=ctx.units) if ctx.sample.get("audited")
                                 else ctx.ph("common.sample_flow_caption_no_audit", units=ctx.units)) + "}\n"
            "\\label{tab:flow}\n\\small\n"
            f"\\begin{{tabularx}}{{\\columnwidth}}{{{spec}}}\n\\toprule\n{head} \\\\\n\\midrule\n"
            + "\n".join(lines) + "\n\\bottomrule\n\\end{tabularx}\n\\end{table}")


def data_sentence(ctx: Ctx) -> str:
    """The Data subsection's pointer to the flow and to Table 1 ('' without sample.json)."""
    if not ctx.sample or not ctx.sample.get("predictors"):
        return ""
    return ctx.ph("common.sample_data_pointer")


def structural_sentence(ctx: Ctx) -> str:
    """Methods: which predictors were taken to be missing by design and what they received instead of silent
    imputation ('' when none was)."""
    d = ctx.data
    miss, thresholds = d.get("missingness") or {}, d.get("missing_thresholds") or {}
    preds = [v for v in d.get("predictors_before") or [] if (miss.get(v) or {}).get("structural")]
    if not preds or not isinstance(thresholds.get("structural_above"), (int, float)):
        return ""
    pct = ctx.m.pct("StructuralAbovePct", thresholds["structural_above"],
                    "data_report.json:missing_thresholds.structural_above")
    names = join_list([f"\\texttt{{{escape_latex(v)}}}" for v in preds])
    with_indicator = [v for v in preds if miss[v].get("indicator")]
    what = (ctx.ph("common.sample_structural_indicator", variables=join_list(
        [f"\\texttt{{{escape_latex(v)}}}" for v in with_indicator])) if with_indicator else "")
    if len(preds) == 1 and not with_indicator:
        what = ctx.ph("common.sample_structural_category_one")
    elif len(with_indicator) < len(preds):
        what = (what + " " if what else "") + ctx.ph("common.sample_structural_category")
    if len(preds) > 1:
        k = ctx.m.count("NStructural", len(preds), "count(data_report.json:missingness[predictors, structural])",
                        derived=True)
        head = ctx.ph("common.sample_structural_many", k=k, variables=names, pct=pct, units=ctx.units)
    else:
        head = ctx.ph("common.sample_structural_one", variables=names, pct=pct, units=ctx.units)
    return head + " " + what


def duplicated_sentence(ctx: Ctx) -> str:
    """Methods: the encoded columns removed as copies of an earlier one on the training rows ('' when none)."""
    copies = ctx.data.get("duplicated_columns") or {}
    if not copies:
        return ""
    k = ctx.m.count("NDuplicatedColumns", len(copies), "len(data_report.json:duplicated_columns)", derived=True)
    cols = join_list([f"\\texttt{{{escape_latex(c)}}}" for c in copies])
    if len(copies) > 1:
        return ctx.ph("common.sample_duplicated_many", k=k, columns=cols)
    return ctx.ph("common.sample_duplicated_one", k=k, columns=cols)


def missing_limitation(ctx: Ctx) -> str:
    """Limitations: one sentence on the predictors flagged for missing values, pointing at the missing-share column
    of Table 1 (or of the predictor table without sample.json); '' when none is flagged."""
    d = ctx.data
    miss, thresholds = d.get("missingness") or {}, d.get("missing_thresholds") or {}
    preds = [v for v in d.get("predictors_before") or [] if (miss.get(v) or {}).get("flagged")]
    if not preds or not isinstance(thresholds.get("warn_above"), (int, float)):
        return ""
    pct = ctx.m.pct("WarnAbovePct", thresholds["warn_above"], "data_report.json:missing_thresholds.warn_above")
    k = ctx.m.count("NFlaggedMissing", len(preds), "count(data_report.json:missingness[predictors, flagged])",
                    derived=True)
    n = ctx.n["NPredictors"]
    table = "tab:sample" if ctx.sample and ctx.sample.get("predictors") else "tab:predictors"
    if len(preds) > 1:
        return ctx.ph("common.sample_limitation_many", k=k, n=n, pct=pct, units=ctx.units, table=table)
    return ctx.ph("common.sample_limitation_one", k=k, n=n, pct=pct, units=ctx.units, table=table)
