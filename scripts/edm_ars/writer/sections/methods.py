"""Methods: data, outcome and predictors, preprocessing and split, models and tuning, evaluation, fairness audit, stability."""

from __future__ import annotations

import re

from ...conventions import STACKING
from ...texescape import escape_latex
from .. import narrative
from ..common import (
    attr_label,
    automation_note,
    floor_macro,
    has_reserve_codes,
    metric_name,
    model_np,
    model_the,
    n_perturbations,
    outcome_sentence_np,
    perturbation_kinds,
    stability_rule,
)
from ..context import Ctx
from ..macros import macro_name
from ..text import cap_first, clean_label, isnum, join_list, lc_first, model_family, sentence


def predictor_table(ctx: Ctx) -> str:
    rows = []
    for i, p in enumerate(ctx.spec.get("predictors", [])):
        name = p["name"]
        label = ctx.t(clean_label(p.get("label") or ctx.var_label(name)),
                      f"research_spec.json:predictors.{i}.label")
        wave = escape_latex(str(p.get("wave") or "").replace("_", " ")) or "--"
        miss = ctx.n.get(f"miss:{name}", "--")
        rows.append(f"\\texttt{{{escape_latex(name)}}} & {label} & {wave} & {miss} \\\\")
    return ("\\begin{table}[tbp]\n\\caption{Predictors, the wave in which each was measured, and "
            "its share of missing values in the analytic sample.}\n\\label{tab:predictors}\n"
            "\\small\n\\begin{tabularx}{\\columnwidth}{@{}lYZr@{}}\n\\toprule\n"
            "Variable & Label & Wave & Missing \\\\\n\\midrule\n" + "\n".join(rows)
            + "\n\\bottomrule\n\\end{tabularx}\n\\end{table}")


_KFOLD = re.compile(r"^\s*Stratified(Group)?KFold\(n_splits=(\d+)\)\s*fold\s*\d+", re.I)


def split_method(ctx: Ctx) -> str:
    """How the test set was drawn, in words ('one fold of a stratified, school-grouped 5-fold partition')."""
    method = str(ctx.data["split"].get("method", "") or "")
    m = _KFOLD.match(method)
    if m:
        k = ctx.m.count("SplitFolds", int(m.group(2)), "data_report.json:split.method (n_splits)")
        grouped = f", {ctx.cluster}-grouped" if m.group(1) and ctx.school_split_ok else (
            ", grouped" if m.group(1) else "")
        return f"the test set is one fold of a stratified{grouped} {k}-fold partition"
    return ctx.t(method.replace("_", " "), "data_report.json:split.method")


def split_sentences(ctx: Ctx, method: str) -> str:
    """How clusters (schools) were kept on one side of the split: reconstructed from a fingerprint, given by an
    identifier column, absent from the data, or not formed."""
    n, g, unit, units = ctx.n, ctx.grouping, ctx.cluster, ctx.units
    share = f"test share {n['TestFractionPct']}; seed {n['SplitSeed']}"
    row = units[:-1] if units.endswith("s") else units
    if ctx.school_split_ok and g["reconstructed"]:
        return (f" {cap_first(units)} attending the same {unit} share {unit}-level characteristics, so a "
                f"{row}-level random split would let a model recognise {unit}s it has already seen. The "
                f"public-use file suppresses {unit} identifiers; EDM-ARS therefore reconstructed approximate "
                f"{unit} clusters from a fingerprint of {unit}-level variables"
                + (f" ({n['NClusters']} clusters)" if "NClusters" in n else "")
                + f" and assigned whole clusters to the training or the test set ({method}; {share}). The "
                f"number of clusters present in both sets was {n['GroupOverlap']}.")
    if ctx.school_split_ok:
        cols = ", ".join(f"\\texttt{{{escape_latex(c)}}}" for c in g["columns"])
        return (f" {cap_first(units)} attending the same {unit} share {unit}-level characteristics, so a "
                f"{row}-level random split would let a model recognise {unit}s it has already seen. We therefore "
                f"assigned whole {unit}s, identified by {cols}"
                + (f" ({n['NClusters']} {unit}s)" if "NClusters" in n else "")
                + f", to the training or the test set ({method}; {share}). The number of {unit}s present in both "
                f"sets was {n['GroupOverlap']}.")
    if not g["columns"]:
        return (f" The data identify no {unit} or other cluster of {units}, so the data were split at the {row} "
                f"level ({method}; {share}).")
    status = escape_latex(str(ctx.data["split"]["school_reconstruction"].get("status", "unavailable")))
    how = "reconstructed from the public-use file" if g["reconstructed"] else "formed from the data"
    return (f" {cap_first(unit)} clusters could not be {how} (status: \\emph{{{status}}}), so the data were split "
            f"at the {row} level ({method}; {share}); {units} from the same {unit} may therefore appear in both the "
            "training and the test set.")


def write(ctx: Ctx) -> str:

    c, n, d, spec = ctx.cites, ctx.n, ctx.data, ctx.spec
    o = spec["outcome"]
    out = []
    # data
    agency = f", collected by {ctx.ds['agency']}" if ctx.ds.get("agency") else ""
    source = ctx.ds.get("source") or f"the {ctx.full_name}"
    text = (f"\\subsection{{Data and {cap_first(ctx.units)}}}\nWe used {source}{agency}. ")
    pop = (spec.get("population") or "").strip().rstrip(".")
    if pop:
        text += f"The study population consists of {lc_first(ctx.t(pop, 'research_spec.json:population'))}. "
    text += (f"Of the {n['OriginalN']} {ctx.units} in the file, {n['AnalyticN']} ({n['RetentionPct']}) "
             "had a valid value of the outcome and formed the analytic sample.")
    if ctx.binary and "NPositive" in n:
        text += (f" Of these {ctx.units}, {n['NPositive']}"
                 + (f" ({n['PositivePct']})" if "PositivePct" in n else "")
                 + " belonged to the positive class"
                 + (f" (\\emph{{{ctx.positive}}})." if spec["outcome"].get("positive_label") else "."))
    elif not ctx.binary and "OutcomeMean" in n:
        text += f" The outcome had a mean of {n['OutcomeMean']}"
        if "OutcomeSD" in n:
            text += f" (SD {n['OutcomeSD']}"
            if "OutcomeMin" in n and "OutcomeMax" in n:
                text += f"; range {n['OutcomeMin']} to {n['OutcomeMax']}"
            text += ")"
        text += "."
    out.append(text)
    # outcome & predictors
    text = (f"\\subsection{{Outcome and Predictors}}\nThe outcome was {outcome_sentence_np(ctx)}, "
            f"recorded in the {ctx.wave(o.get('wave'))}; the task was "
            + ("binary classification." if ctx.binary else "regression.")
            + f" We used the {n['NPredictors']} predictors listed in Table~\\ref{{tab:predictors}}, "
            + ("all measured in waves that precede the outcome" if ctx.has_waves
               else "taken from the same cross-section as the outcome")
            + f", which yielded {n['NFeatures']} model features after one-hot encoding of categorical variables.")
    note = (spec.get("temporal_order_note") or "").strip()
    if note:
        text += " " + sentence(ctx.t(note, "research_spec.json:temporal_order_note"))
    preds = spec.get("predictors", [])
    if preds:
        first = preds[0]
        text += (" Each predictor entered the study with a stated rationale; for example, "
                 f"\\texttt{{{escape_latex(first['name'])}}} was included because "
                 + lc_first(ctx.t(first["rationale"].strip().rstrip("."),
                                  "research_spec.json:predictors.0.rationale")) + ".")
    protected = d.get("protected") or []
    if protected:
        used = [p for p in protected if p in d["predictors_before"]]
        labels = [f"\\emph{{{lc_first(ctx.label_tex(p, 'registry label'))}}}" for p in protected]
        if used and len(used) == len(protected):
            text += (f" The protected attributes {join_list(labels)} were used as predictors and "
                     "are flagged as such in the artifacts.")
        elif used:
            text += (f" Of the protected attributes ({join_list(labels)}), only "
                     f"{join_list([lc_first(ctx.label_tex(p, 'registry label')) for p in used])} "
                     "entered the models as predictors.")
        else:
            text += (f" The protected attributes {join_list(labels)} were not used as predictors "
                     "and were reserved for checking performance across groups of students.")
    out.append(text + "\n\n" + predictor_table(ctx))
    # preprocessing
    sr_n = n.get("sentinel:n_values_recoded")
    sr_v = n.get("sentinel:n_variables") or n.get("sentinel:n_variables_recoded")
    if has_reserve_codes(ctx):
        text = ("\\subsection{Preprocessing and Data Splitting}\n"
                f"{ctx.short} stores item nonresponse, legitimate skips and similar conditions as "
                "negative reserve (sentinel) codes. Because treating these codes as numbers would distort every "
                "numeric predictor, we recoded them to missing before any other step")
        if sr_n:
            text += f" ({sr_n} values" + (f" in {sr_v} variables" if sr_v else "") + " were recoded)"
        text += "."
    else:
        text = ("\\subsection{Preprocessing and Data Splitting}\n"
                "The data record missing values as empty cells, so no reserve codes had to be recoded "
                "before the other steps.")
    method = split_method(ctx)
    text += split_sentences(ctx, method)
    text += (f" The split produced {n['TrainN']} training and {n['TestN']} test {ctx.units}, and it was "
             "made before any encoding, scaling or imputation, so that every preprocessing step was "
             "fitted on the training set only and then applied unchanged to the test set.")
    imp = (d.get("imputation_protocol") or "").strip()
    if imp:
        text += " " + ctx.t(imp, "data_report.json:imputation_protocol") + ("" if imp.endswith(".") else ".")
    if "MaxMissingPct" in n:
        worst = n["MaxMissingVar"]
        text += (f" Missing values occurred in {n['NVarsMissing']} of the {n['NPredictors']} "
                 f"predictors, with the highest rate ({n['MaxMissingPct']}) for "
                 f"\\texttt{{{escape_latex(worst)}}}{c.citep('missing_data', limit=1)}.")
    text += (f" Before modelling, the pipeline ran {n['NChecks']} automated validation checks, such "
             "as the temporal ordering of predictors and outcome and the separation of training and "
             f"test students, of which {n['NChecksPassed']} passed.")
    failed = [ch["name"] for ch in d.get("checks", []) if not ch.get("passed")]
    if failed:
        text += ((" The checks that failed were " if len(failed) > 1 else " The check that failed was ")
                 + join_list([f"\\texttt{{{escape_latex(x)}}}" for x in failed])
                 + "; Section~\\ref{sec:limitations} discusses their consequences.")
    out.append(text)
    # models
    out.append(methods_models(ctx))
    # evaluation
    if ctx.binary:
        text = ("\\subsection{Evaluation}\nThe primary metric was the area under the ROC curve "
                f"(AUC){c.cite_keys('fawcett2006introduction', topics=('roc',), limit=1)}, which measures how well a model ranks students of the two classes regardless "
                "of a decision threshold. We also report balanced accuracy and F1 at the default "
                "threshold, and the Brier score as a measure of probabilistic accuracy.")
    else:
        text = ("\\subsection{Evaluation}\nThe primary metric was the coefficient of determination "
                "(\\Rsq{}) on the test set; we also report the root mean squared error (RMSE) and the "
                "mean absolute error (MAE) in the units of the outcome.")
    if "NBootstrap" in n:
        text += (f" Confidence intervals (95\\%) were obtained from {n['NBootstrap']} bootstrap "
                 f"resamples of the test set{c.citep('bootstrap', limit=1)}.")
    text += methods_interpretation(ctx)
    out.append(text)
    for extra in (methods_fairness(ctx), methods_stability(ctx)):
        if extra:
            out.append(extra)
    out.append("\\subsection{Automated Generation}\n" + automation_note(ctx)
               + " Every number in this paper is a macro generated from the run's artifacts, so "
               "that it can be traced to its source. The findings describe the students in the "
               f"{ctx.short} analytic sample and were not checked by a human analyst. "
               + narrative.methods_review(ctx))
    return "\n\n".join(out)


FAMILY_CITES = {"logistic": ("hastie2009elements", "linear"),
                "elastic_net": ("zou2005regularization", "elastic_net"),
                "random_forest": ("breiman2001random", "random_forest"),
                "xgboost": ("chen2016xgboost", "xgboost"),
                "stacking": ("wolpert1992stacked", "stacking")}


_SEARCH = re.compile(r"random search of (\d+) candidates raced over folds: all on (\d+) folds?, "
                     r"the best (\d+) on all (\d+)")


def _range_macros(ctx: Ctx, name: str, values: dict[str, int], what: str) -> str:
    """'\\A{}' when all models share a value, else '\\A{} to \\B{}' (min and max with their sources)."""
    lo_m = min(values, key=lambda k: values[k])
    hi_m = max(values, key=lambda k: values[k])
    lo = ctx.m.count(macro_name("Search", name, "Min" if values[lo_m] != values[hi_m] else ""), values[lo_m],
                     f"results.json:models.{lo_m}.search ({what})")
    if values[lo_m] == values[hi_m]:
        return lo
    hi = ctx.m.count(macro_name("Search", name, "Max"), values[hi_m],
                     f"results.json:models.{hi_m}.search ({what})")
    return f"{lo} to {hi}"


def tuning_text(ctx: Ctx) -> str:
    models = ctx.results["models"]
    singles = [m for m in models if model_family(m) != STACKING]
    if not any((models[m].get("search") or models[m].get("cv_score") is not None) for m in singles):
        return "The test set was not used for any modelling decision."
    folds = "cross-validation folds of the training set"
    how = []
    if ctx.school_split_ok:
        how.append(f"grouped by {'reconstructed ' if ctx.grouping['reconstructed'] else ''}{ctx.cluster}")
    if ctx.binary:
        how.append("stratified by the outcome")
    if how:
        folds += ", " + join_list(how) + ","
    parsed = {m: _SEARCH.search(str(models[m].get("search") or "")) for m in singles}
    if singles and all(parsed.values()):
        cand = _range_macros(ctx, "Candidates", {m: int(p.group(1)) for m, p in parsed.items() if p},
                              "candidates")
        first = _range_macros(ctx, "RaceFolds", {m: int(p.group(2)) for m, p in parsed.items() if p},
                              "first folds")
        kept = _range_macros(ctx, "Survivors", {m: int(p.group(3)) for m, p in parsed.items() if p},
                              "candidates kept")
        allf = _range_macros(ctx, "Folds", {m: int(p.group(4)) for m, p in parsed.items() if p},
                              "all folds")
        text = (f"Hyperparameters were tuned by a budgeted random search raced over {folds.rstrip(',')}"
                + (f", so that no {ctx.cluster} contributed to both sides of a fold" if ctx.school_split_ok else "")
                + f": {cand} candidate settings per family were scored on "
                f"the first {first} folds, only the best {kept} were scored on all {allf}, and the candidate with "
                "the best mean score was refitted on the whole training set.")
    else:
        groups: dict[str, list[str]] = {}
        for m in singles:
            s = re.sub(r";\s*early stopping.*$", "", str(models[m].get("search") or "").strip()).rstrip(".")
            if s:
                groups.setdefault(s, []).append(m)
        text = f"Hyperparameters were tuned on {folds.rstrip(',')}"
        if groups:
            src = "results.json:models.{}.search"
            parts = [f"{ctx.t(s, src.format(ms[0]))} for {join_list([model_np(ctx, x) for x in ms])}"
                     for s, ms in list(groups.items())[:3]]
            text += " (" + "; ".join(parts) + ")"
        text += "."
    stops = [m for m in singles if "early stopping" in str(models[m].get("search") or "")]
    if "mlp" in models and "mlp" not in stops:
        stops.append("mlp")
    if stops:
        text += (f" {cap_first(join_list([model_the(ctx, m) for m in stops]))} used early stopping"
                 + (" (on each validation fold for boosting, on an internal validation split for the network)"
                    if "xgboost" in stops and "mlp" in stops else "") + ".")
    return text


def methods_models(ctx: Ctx) -> str:
    c, n = ctx.cites, ctx.n
    models = ctx.results["models"]
    names = []
    for m in models:
        key, topic = FAMILY_CITES.get(m, ("", ""))
        cite = c.cite_keys(key, topics=(topic,), limit=1) if key else ""
        names.append(model_np(ctx, m).replace("the stacked ensemble", "a stacked ensemble") + cite)
    software = c.cite_keys("pedregosa2011scikit", topics=("software",), limit=1)
    text = (f"\\subsection{{Models and Tuning}}\\label{{sec:models}}\nWe compared {n['NModels']} models: "
            f"{join_list(names)}" + (f", implemented with scikit-learn{software}"
                                  + (" and the XGBoost library" if "xgboost" in ctx.results["models"] else "")
                                  if software else "")
            + f". {tuning_text(ctx)}")
    stack = next((m for m in models if model_family(m) == STACKING), None)
    if stack:
        params = models[stack].get("best_params") or {}
        base = [b for b in params.get("base_models") or [] if isinstance(b, str)]
        meta = str(params.get("meta_learner") or "").strip()
        text += " The stacked ensemble combines the base models through a meta-learner"
        if meta:
            text += f" ({ctx.t(meta, f'results.json:models.{stack}.best_params.meta_learner')})"
        text += " fitted on the out-of-fold predictions"
        if base:
            k = ctx.m.count("NStackBase", len(base), f"len(results.json:models.{stack}.best_params.base_models)",
                            derived=True)
            text += f" of the {k} base models"
        text += (" from this search, so no base model was refitted and the meta-learner never saw a prediction "
                 "made for a student its base model had been trained on.")
    text += (" The test set was not used for any modelling decision; the selected hyperparameters are listed in "
             "Appendix~\\ref{app:hyperparameters}.")
    rule = str(ctx.results.get("selection_rule") or "").strip().rstrip(".")
    if rule:
        text += (" The model reported as \\emph{selected} was chosen by the following rule: "
                 f"{ctx.t(rule, 'results.json:selection_rule')}. Preferring the simplest of several "
                 "statistically indistinguishable models favours transparency at no measurable cost in accuracy.")
    return text


def methods_interpretation(ctx: Ctx) -> str:
    """Sentences for the Evaluation subsection: quality floor and SHAP explainers per family."""
    c = ctx.cites
    by = ctx.shap_by_model
    floor = floor_macro(ctx)
    what = metric_name(ctx)
    text = ""
    if floor:
        text += (f" Only single models whose test-set {what} reached at least {floor} (the quality floor) "
                 "were interpreted.")
    if not (by or ctx.top_features):
        return text
    cite = c.cite_keys("lundberg2017unified", "lundberg2020local", topics=("shap",))
    if not by:
        return text + (f" We interpreted the selected model with SHAP values{cite}, ranking features by their "
                       "mean absolute SHAP value." if ctx.importance_key == "mean_abs_shap" else
                       " We interpreted the selected model by ranking features by their importance scores.")
    groups: dict[str, list[str]] = {}
    for m, info in by.items():
        groups.setdefault(str(info.get("explainer") or "an explainer"), []).append(m)
    parts = []
    for expl, ms in groups.items():
        who = join_list([model_the(ctx, m) for m in ms])
        sizes = {by[m].get("n_explained") for m in ms if isnum(by[m].get("n_explained"))}
        part = f"\\textsc{{{escape_latex(expl)}}} for {who}"
        if expl == "KernelExplainer" and len(sizes) == 1:
            k = ctx.m.count(macro_name("NExplained", ms[0]), sizes.pop(),
                            f"results.json:shap.by_model.{ms[0]}.n_explained")
            part += f" (model-agnostic and costly, so run on a capped sample of {k} test students)"
        parts.append(part)
    interp = ctx.interpreted
    text += (f" We computed SHAP values{cite} for every model above the floor, using {join_list(parts, 'and')}. "
             "Features were ranked by their mean absolute SHAP value, with the values of the one-hot columns of a "
             "categorical variable summed back to the variable; a variable's direction is the sign of the rank "
             "correlation between its values and its SHAP values, and \\emph{mixed} when its columns disagree.")
    if any(model_family(m) == STACKING for m in ctx.results["models"]):
        text += " The stacked ensemble was not explained, because its inputs are the other models' predictions."
    if interp:
        text += (f" The paper reports the attributions of {model_np(ctx, interp)} and uses the other models' "
                 "rankings to check whether the most predictive features agree across model families.")
    return text


def methods_fairness(ctx: Ctx) -> str:
    fa = ctx.fairness
    if not fa:
        return ""
    c, m = ctx.cites, ctx.m
    attrs = fa["attributes"]
    singles = [a for a, r in attrs.items() if r.get("kind") != "intersection"]
    inters = [a for a, r in attrs.items() if r.get("kind") == "intersection"]
    labels = [f"\\emph{{{lc_first(attr_label(ctx, a))}}}" for a in singles]
    model = fa.get("model") or ctx.best
    text = (f"\\subsection{{Subgroup Fairness Audit}}\\label{{sec:fairness-method}}\nWe audited the held-out "
            f"predictions of the selected model ({model_np(ctx, model)}) across groups of students defined by "
            f"{join_list(labels) or 'the protected attributes'}")
    if inters:
        text += (" and by the intersection"
                 + ("s " if len(inters) > 1 else " ")
                 + join_list([f"\\emph{{{lc_first(attr_label(ctx, a))}}}" for a in inters]))
    text += (". Group membership was taken from a snapshot of the protected attributes made before encoding, "
             "with their original category labels, rather than from the model's one-hot features. ")
    nres = fa.get("n_resamples")
    boot = (f" ({m.count('FairNResamples', nres, 'results.json:fairness.n_resamples')} resamples within the group)"
            if isnum(nres) else "")
    if ctx.binary:
        thr = fa.get("threshold")
        thr_t = (f" at a threshold of {m.add('FairThreshold', f'{float(thr):.2f}', thr, 'results.json:fairness.threshold')}"
                 if isnum(thr) else "")
        text += (f"For each group we computed the AUC with a 95\\% bootstrap interval{boot} and{thr_t} the "
                 "true-positive rate (TPR), the false-positive rate (FPR) and the selection rate.")
    else:
        text += (f"For each group we computed \\Rsq{{}} with a 95\\% bootstrap interval{boot}, the RMSE, the MAE "
                 "and the mean error (predicted minus observed); errors were expressed in standard deviations of "
                 "the outcome, so that the gap threshold has the same meaning on any outcome scale.")
    mg, gt = fa.get("min_group"), fa.get("gap_threshold")
    if isnum(mg):
        text += (f" Groups with fewer than {m.count('FairMinGroup', mg, 'results.json:fairness.min_group')} test "
                 "students, or whose primary metric was undefined, were reported but marked as unreliable and left "
                 "out of the gaps.")
    text += (" For each attribute, the gap in a metric is the difference between the highest and the lowest "
             "reliable group, with a bootstrap interval")
    if isnum(gt):
        text += (f"; gaps larger than {m.add('FairGapThreshold', f'{float(gt):.2f}', gt, 'results.json:fairness.gap_threshold')}"
                 " were flagged")
    text += "."
    if ctx.binary:
        text += (" The equalized-odds difference is the larger of the TPR and FPR gaps"
                 f"{c.cite_keys('hardt2016equality', topics=('fairness',), limit=1)}: it is zero only when the "
                 "model's error rates are the same in every group.")
    return text


def methods_stability(ctx: Ctx) -> str:
    st = ctx.stability
    if not st or not st.get("runs"):
        return ""
    c = ctx.cites
    kinds = perturbation_kinds(ctx)
    model = st.get("model") or ctx.interpreted or ctx.best
    text = ("\\subsection{Stability Analysis}\\label{sec:stability-method}\nA conclusion that changes under "
            "reasonable perturbations of the data or the analysis should not be relied on"
            f"{c.cite_keys('yu2020veridical', topics=('stability',), limit=1)}. We therefore refitted "
            f"{model_np(ctx, model)} with its tuned hyperparameters under {n_perturbations(ctx)} perturbations"
            + (f" ({kinds})" if kinds else "")
            + ", scored each refit on the same test students and ranked its features by mean absolute SHAP value. "
            f"We report the spread of the test-set {metric_name(ctx, st.get('metric') or ctx.primary)} across "
            "refits, the share of the original top-five and top-ten features that each refit recovered, and the "
            "Spearman rank correlation between each refit's ranking and the original one.")
    rule = stability_rule(ctx)
    if rule:
        text += " " + rule
    return text
