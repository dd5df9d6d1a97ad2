"""The number macros every section may use, defined from the run's artifacts before any section is written
(:func:`register_numbers`): sample sizes, the split, missingness, the models' and baselines' metrics and intervals,
the paired comparisons, the best model's margins, the top features' importances and the review's counts, each with
the artifact path it comes from (numbers.tex, numbers.json)."""

from __future__ import annotations

from typing import Any

from edm_ars.core.text import model_family
from edm_ars.data.outcome_shape import is_bounded
from edm_ars.writer.context import Ctx
from edm_ars.writer.macros import fmt_ci, fmt_metric, fmt_p, macro_name, spell_digits


def register_numbers(ctx: Ctx) -> None:
    """Define the macros the templates use, in a stable order (data first, then results)."""
    m, d, r, n = ctx.m, ctx.data, ctx.results, ctx.n
    n["OriginalN"] = m.count("OriginalN", d["original_n"], "data_report.json:original_n")
    n["AnalyticN"] = m.count("AnalyticN", d["analytic_n"], "data_report.json:analytic_n")
    retention = d.get("retention")
    if retention is None and d["original_n"]:
        n["RetentionPct"] = m.pct("RetentionPct", 100 * d["analytic_n"] / d["original_n"],
                                  "data_report.json:analytic_n / data_report.json:original_n",
                                  derived=True)
    elif retention is not None:
        pct = retention * 100 if retention <= 1 else retention
        n["RetentionPct"] = m.pct("RetentionPct", pct, "data_report.json:retention")
    n["TrainN"] = m.count("TrainN", d["train_n"], "data_report.json:train_n")
    if r.get("test_n") is not None:
        n["TestN"] = m.count("TestN", r["test_n"], "results.json:test_n")
    else:
        n["TestN"] = m.count("TestN", d["test_n"], "data_report.json:test_n")
    rep = (d.get("split") or {}).get("repeated")
    if rep:  # long format: the rows are records of fewer units (registry dataset.repeated)
        src = "data_report.json:split.repeated"
        n["AnalyticUnits"] = m.count("AnalyticUnits", rep["train_units"] + rep["test_units"]
                                     - rep.get("units_on_both_sides", 0),
                                     f"{src}.train_units + {src}.test_units - {src}.units_on_both_sides", derived=True)
        n["TrainUnits"] = m.count("TrainUnits", rep["train_units"], f"{src}.train_units")
        n["TestUnits"] = m.count("TestUnits", rep["test_units"], f"{src}.test_units")
    n["NPredictors"] = m.count("NPredictors", len(d["predictors_before"]),
                               "len(data_report.json:predictors_before)", derived=True)
    n["NFeatures"] = m.count("NFeatures", len(d["predictors_after"]),
                             "len(data_report.json:predictors_after)", derived=True)
    split = d["split"]
    n["SplitSeed"] = m.add("SplitSeed", str(split["seed"]), split["seed"], "data_report.json:split.seed")
    tf = split["test_fraction"]
    n["TestFractionPct"] = m.pct("TestFractionPct", tf * 100 if tf <= 1 else tf,
                                 "data_report.json:split.test_fraction")
    n["GroupOverlap"] = m.count("GroupOverlap", split["group_overlap"],
                                "data_report.json:split.group_overlap")
    n_clusters = split["school_reconstruction"].get("n_clusters")
    if isinstance(n_clusters, (int, float)):
        n["NClusters"] = m.count("NClusters", n_clusters,
                                 "data_report.json:split.school_reconstruction.n_clusters")
    sr = d.get("sentinel_recoding") or {}
    for key in ("n_values_recoded", "n_variables", "n_variables_recoded"):
        if isinstance(sr.get(key), (int, float)) and not isinstance(sr.get(key), bool):
            n[f"sentinel:{key}"] = m.count(macro_name("Sentinel", key), sr[key],
                                           f"data_report.json:sentinel_recoding.{key}")
    checks = d.get("checks") or []
    n["NChecks"] = m.count("NChecks", len(checks), "len(data_report.json:checks)", derived=True)
    n["NChecksPassed"] = m.count("NChecksPassed", sum(1 for c in checks if c.get("passed")),
                                 "count(data_report.json:checks[passed])", derived=True)
    # class balance / outcome summary
    cb = d.get("class_balance") or {}
    if ctx.binary and cb:
        pos_key = "1" if "1" in cb else ("True" if "True" in cb else sorted(cb)[-1])
        total = sum(float(v) for v in cb.values())
        n["NPositive"] = m.count("NPositive", cb[pos_key], f"data_report.json:class_balance.{pos_key}")
        if total:
            ctx.n["positive_share"] = str(float(cb[pos_key]) / total)
            n["PositivePct"] = m.pct("PositivePct", 100 * float(cb[pos_key]) / total,
                                     f"data_report.json:class_balance.{pos_key} / sum(class_balance)",
                                     derived=True)
    osum = d.get("outcome_summary") or {}
    if not ctx.binary:
        for key, name in (("mean", "OutcomeMean"), ("sd", "OutcomeSD"), ("min", "OutcomeMin"),
                          ("max", "OutcomeMax")):
            if isinstance(osum.get(key), (int, float)):
                n[name] = m.add(name, _two(osum[key]), float(osum[key]),
                                f"data_report.json:outcome_summary.{key}")
    shape = d.get("outcome_shape") or {}
    if not ctx.binary and is_bounded(shape):  # a discrete or bounded score: its range and the shares at its bounds
        src = "data_report.json:outcome_shape"
        n["ShapeLow"] = m.add("OutcomeLow", _plain(shape["low"]), float(shape["low"]), f"{src}.low")
        n["ShapeHigh"] = m.add("OutcomeHigh", _plain(shape["high"]), float(shape["high"]), f"{src}.high")
        if shape.get("discrete"):
            n["ShapeValues"] = m.count("OutcomeNValues", shape["n_distinct"], f"{src}.n_distinct")
        n["ShapeFloorPct"] = m.pct("OutcomeFloorPct", 100 * shape["share_at_floor"], f"{src}.share_at_floor")
        n["ShapeCeilingPct"] = m.pct("OutcomeCeilingPct", 100 * shape["share_at_ceiling"], f"{src}.share_at_ceiling")
    # missingness of predictors
    miss = d.get("missingness") or {}
    for p in ctx.spec.get("predictors", []):
        rec = miss.get(p["name"])
        if rec is not None:
            n[f"miss:{p['name']}"] = m.pct(macro_name("Miss", p["name"]), rec["pct_missing"],
                                           f"data_report.json:missingness.{p['name']}.pct_missing")
    preds = [v for v in d["predictors_before"] if v in miss]
    if preds and any(miss[v]["pct_missing"] > 0 for v in preds):  # none missing: Methods says so in words
        worst = max(preds, key=lambda v: miss[v]["pct_missing"])
        n["MaxMissingVar"] = worst
        n["MaxMissingPct"] = m.pct("MaxMissingPct", miss[worst]["pct_missing"],
                                   f"data_report.json:missingness.{worst}.pct_missing")
        n["NVarsMissing"] = m.count("NVarsMissing", sum(1 for v in preds if miss[v]["pct_missing"] > 0),
                                    "count(data_report.json:missingness[predictors, pct_missing>0])",
                                    derived=True)
    # results
    n["NModels"] = m.count("NModels", len(r["models"]), "len(results.json:models)", derived=True)
    if r.get("n_bootstrap") is not None:
        n["NBootstrap"] = m.count("NBootstrap", r["n_bootstrap"], "results.json:n_bootstrap")
    def rated(section: str, name: str, info: dict[str, Any]) -> None:
        """A model's or a baseline's metrics and intervals (results.json:<section>.<name>)."""
        for metric, value in (info.get("metrics") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                n[f"{name}|{metric}"] = m.metric(macro_name(name, metric), value,
                                                 f"results.json:{section}.{name}.metrics.{metric}")
        for metric, bounds in (info.get("ci") or {}).items():
            if isinstance(bounds, (list, tuple)) and len(bounds) == 2 and None not in bounds:
                src = f"results.json:{section}.{name}.ci.{metric}"
                n[f"{name}|{metric}|ci"] = m.ci(macro_name(name, metric, "CI"), bounds[0], bounds[1], src)
                n[f"{name}|{metric}|lo"] = m.metric(macro_name(name, metric, "Low"), bounds[0], src + ".0")
                n[f"{name}|{metric}|hi"] = m.metric(macro_name(name, metric, "High"), bounds[1], src + ".1")

    for name, info in r["models"].items():
        rated("models", name, info)
        if isinstance(info.get("cv_score"), (int, float)):
            n[f"{name}|cv"] = m.metric(macro_name(name, "CV"), info["cv_score"],
                                       f"results.json:models.{name}.cv_score")
    for name, info in ctx.baselines.items():  # the same macros as the models', from results.json:baselines
        rated("baselines", name, info)
    if isinstance(r.get("test_clusters"), int) and not isinstance(r.get("test_clusters"), bool):
        n["TestClusters"] = m.count("TestClusters", r["test_clusters"], "results.json:test_clusters")
    if isinstance(r.get("comparison_alpha"), (int, float)):
        n["ComparisonAlpha"] = m.add("ComparisonAlpha", f"{r['comparison_alpha']:.2f}", float(r["comparison_alpha"]),
                                     "results.json:comparison_alpha")
    for i, c in enumerate(r.get("paired_comparisons") or []):
        if not isinstance(c, dict) or c.get("family", "selected") != "selected":
            continue
        src = f"results.json:paired_comparisons.{i}"
        key = f"pair|{c['b']}"
        n[key] = m.add(macro_name("Pair", c["b"], "Diff"), fmt_metric(c["mean"], 4), float(c["mean"]), src + ".mean")
        n[key + "|ci"] = m.add(macro_name("Pair", c["b"], "CI"), fmt_ci(c["ci"][0], c["ci"][1], 4),
                               [float(c["ci"][0]), float(c["ci"][1])], src + ".ci")
        n[key + "|lo"] = m.add(macro_name("Pair", c["b"], "Low"), fmt_metric(c["ci"][0], 4), float(c["ci"][0]),
                               src + ".ci.0")
        n[key + "|hi"] = m.add(macro_name("Pair", c["b"], "High"), fmt_metric(c["ci"][1], 4), float(c["ci"][1]),
                               src + ".ci.1")
        if isinstance(c.get("p_holm"), (int, float)):
            n[key + "|holm"] = m.add(macro_name("Pair", c["b"], "Holm"), fmt_p(c["p_holm"]), float(c["p_holm"]),
                                     src + ".p_holm")
    n_pairs = sum(1 for c in r.get("paired_comparisons") or []
                  if isinstance(c, dict) and c.get("family", "selected") == "selected")
    if n_pairs:
        n["NPairs"] = m.count("NPairedComparisons", n_pairs, "count(results.json:paired_comparisons[family=selected])",
                              derived=True)
    best = ctx.best
    for metric, value in (r["models"][best].get("metrics") or {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            n[f"best|{metric}"] = m.metric(macro_name("Best", metric), value,
                                           f"results.json:models.{best}.metrics.{metric}")
    ci = (r["models"][best].get("ci") or {}).get(ctx.primary)
    if ci and len(ci) == 2:
        n["best|ci"] = m.ci(macro_name("Best", ctx.primary, "CI"), ci[0], ci[1],
                            f"results.json:models.{best}.ci.{ctx.primary}")
    # margins: best vs runner-up and vs the best model of the other family
    ranked = [x for x in ctx.ranked_models() if ctx.metric_value(x, ctx.primary) is not None]
    bval = ctx.metric_value(best, ctx.primary)
    if bval is not None and len(ranked) > 1:
        runner = ranked[1]
        n["runner"] = runner
        n["MarginRunner"] = _margin(ctx, "MarginRunner", "MarginRunnerUp", best, runner)
        fam = model_family(best)
        other = [x for x in ranked[1:] if model_family(x) != fam and model_family(x) in ("linear", "tree")]
        if other:
            n["contrast"] = other[0]
            n["MarginContrast"] = _margin(ctx, "MarginContrast", "MarginContrast", best, other[0])
    # regression: RMSE relative to the outcome SD
    if not ctx.binary and isinstance(osum.get("sd"), (int, float)) and osum["sd"]:
        rmse = ctx.metric_value(best, "rmse")
        if rmse is not None:
            n["RMSEinSD"] = m.add("BestRMSEinSD", _two(rmse / osum["sd"]), rmse / osum["sd"],
                                  f"results.json:models.{best}.metrics.rmse / "
                                  "data_report.json:outcome_summary.sd", derived=True)
    # top features
    key = ctx.importance_key
    for i, f in enumerate(ctx.top_features[:10]):
        if isinstance(f.get(key), (int, float)):
            n[f"feat|{i}"] = m.metric(macro_name("Feature", spell_digits(str(i + 1)), "Importance"),
                                      f[key], f"results.json:top_features.{i}.{key}")
    # review
    rv = ctx.review  # the review's scores are not printed (the paper says whether it passed and lists its issues)
    n["NIssues"] = m.count("NReviewIssues", len(rv.get("issues") or []),
                           "len(review_report.json:issues)", derived=True)
    excluded = [p for p in ctx.lit.get("papers", []) or [] if p.get("status") != "VERIFIED"]
    n["NExcludedRefs"] = m.count("NExcludedReferences", len(excluded),
                                 "count(literature_context.json:papers[status!=VERIFIED])", derived=True)


def _plain(value: float) -> str:
    """A bound of the outcome as its values are written: 10 for an integer, else two decimals."""
    if not float(value).is_integer():
        return _two(value)
    return ("$-$" if value < 0 else "") + str(abs(int(value)))


def _two(value: float) -> str:
    text = f"{float(value):.2f}"
    return "$-$" + text[1:] if text.startswith("-") else text


def _margin(ctx: Ctx, key: str, name: str, a: str, b: str) -> str:
    metric = ctx.primary
    va, vb = ctx.metric_value(a, metric), ctx.metric_value(b, metric)
    diff = abs(va - vb)
    ctx.n[key + ":raw"] = str(diff)
    return ctx.m.metric(macro_name(name, metric), diff,
                        f"|results.json:models.{a}.metrics.{metric} - "
                        f"results.json:models.{b}.metrics.{metric}|",
                        derived=True)
