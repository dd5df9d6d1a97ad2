"""Phrases more than one section uses: metrics, the selected model, figures, the quality floor, stability."""

from __future__ import annotations

from edm_ars.core.conventions import STACKING
from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import clean_label, is_number, join_list, model_family
from edm_ars.data.registry import EARLY, PRIOR, common_timing, timing_class
from edm_ars.writer.context import Ctx, Figure
from edm_ars.writer.macros import METRIC_LABEL, macro_name
from edm_ars.writer.phrases import plural

# the level of every interval the paper reports (macros.MacroTable.ci), for a phrase's {level} slot
CI_LEVEL = "95\\%"


def metric_name(ctx: Ctx, metric: str | None = None) -> str:
    metric = metric or ctx.primary
    return METRIC_LABEL.get(metric, escape_latex(metric.upper()))


def primary_stmt(ctx: Ctx, model: str | None = None) -> str:
    """'AUC = \\XgboostAUC{}, \\XgboostAUCCI{}' for a model (the best by default)."""
    model = model or ctx.best
    val = ctx.mac(model, ctx.primary)
    ci = ctx.ci(model, ctx.primary)
    text = f"{metric_name(ctx)} = {val}"
    return f"{text}, {ci}" if ci else text


# how strong a primary metric is, in words: the first cutoff the value reaches, else "weak"; "very high" is
# suspicious (for AUC, the leakage ceiling)
VERY_HIGH = "very high"
STRENGTH = {
    "auc": ((0.8, "strong"), (0.7, "acceptable"), (0.6, "modest")),  # 'very high': the recorded leakage ceiling
    "r2": ((0.9, VERY_HIGH), (0.5, "substantial"), (0.3, "moderate"), (0.1, "modest")),
}
STRENGTH["roc_auc"] = STRENGTH["auc"]


def strength(ctx: Ctx) -> str:
    v = ctx.metric_value(ctx.best, ctx.primary)
    if v is None:
        return "uncertain"
    if ctx.primary not in STRENGTH:
        return "measurable"
    ceiling = ctx.results["thresholds"].get("leakage_auc") if ctx.primary in ("auc", "roc_auc") else None
    if is_number(ceiling) and v >= ceiling:
        return VERY_HIGH
    return next((word for cutoff, word in STRENGTH[ctx.primary] if v >= cutoff), "weak")


def suspiciously_high(ctx: Ctx) -> bool:
    return strength(ctx) == VERY_HIGH


def outcome_sentence_np(ctx: Ctx) -> str:
    o = ctx.spec["outcome"]
    return f"\\emph{{{ctx.outcome_label}}} (\\texttt{{{escape_latex(o['name'])}}})"


def feature_names(ctx: Ctx, k: int = 3, with_values: bool = False) -> list[str]:
    out = []
    for i in range(min(k, len(ctx.top_features))):
        text = f"\\emph{{{ctx.feature_label(i)}}}"
        if with_values and f"feat|{i}" in ctx.n:
            text += f" ({ctx.n[f'feat|{i}']})"
        out.append(text)
    return out


def automation_note(ctx: Ctx) -> str:
    backend = escape_latex(ctx.spec.get("backend", "offline"))
    if ctx.offline:
        return ctx.ph("common.automation_offline", short=data_name(ctx))
    return ctx.ph("common.automation_model", backend=backend, short=data_name(ctx))


def information(ctx: Ctx) -> str:
    """What the predictors are, in the abstract's words."""
    return ctx.ph("common.information_before_outcome") if ctx.has_waves else ctx.ph("common.information_background")


def timing(ctx: Ctx, variables: list[str] | None = None) -> str | None:
    """The timing word that is true of every named predictor (default: all of the study's), by the registry's one
    rule (registry.timing_class on the waves the specification records): 'early' (first wave, or at least two
    waves before the outcome), 'prior' (some earlier wave), or None (one cross-section, a predictor of unknown
    wave, or one that is not a predictor of the study): the paper then uses no timing word for them."""
    waves = {p.get("name"): p.get("wave") for p in ctx.spec.get("predictors", [])}
    names = list(waves) if variables is None else list(variables)
    order = list(ctx.ds.get("wave_order") or [])
    outcome_wave = (ctx.spec.get("outcome") or {}).get("wave")
    return common_timing([timing_class(order, waves.get(n), outcome_wave) for n in names])


def feature_timing(ctx: Ctx, k: int = 5) -> str | None:
    """The timing word true of the source variables of the top k features."""
    sources = ctx.data.get("feature_sources") or {}
    names = [sources.get(f["feature"], f["feature"]) for f in ctx.top_features[:k]]
    return timing(ctx, list(dict.fromkeys(names))) if names else None


def timing_adjective(ctx: Ctx, variables: list[str] | None = None) -> str:
    """'early ', 'earlier ' or '' (with its space) before a noun that stands for the predictors."""
    word = timing(ctx, variables)
    return ctx.ph("common.timing_early") + " " if word == EARLY else (
        ctx.ph("common.timing_prior") + " " if word == PRIOR else "")


def has_reserve_codes(ctx: Ctx) -> bool:
    """True when the registry lists numeric reserve codes or text labels that mean 'missing'."""
    sr = ctx.data.get("sentinel_recoding") or {}
    return bool(sr.get("codes") or sr.get("labels")) if sr else True


PERTURBATION_KIND = {
    "impute": ("alternative imputation of the missing values", "alternative imputations of the missing values"),
    "bootstrap": ("bootstrap resample of the training set", "bootstrap resamples of the training set"),
    "seed": ("refit with a different random seed", "refits with different random seeds"),
}


def nothing_missing(ctx: Ctx) -> bool:
    """True when the data report records no missing value of any predictor, in the analytic sample or its training
    rows (data_report.json missingness; False when it records none): sentences about imputing missing values, or
    about results that survive a change of imputation, are then left out."""
    miss = ctx.data.get("missingness")
    if not isinstance(miss, dict) or not miss:
        return False
    return all(isinstance(v, dict) and all(v.get(k) in (0, 0.0, None) for k in ("pct_missing", "pct_missing_train"))
               for v in miss.values())


def floor_macro(ctx: Ctx) -> str | None:
    """The quality floor of the primary metric that the analysis applied (results.json:thresholds)."""
    if "QualityFloor" not in ctx.n:
        v = ctx.results["thresholds"].get("quality_floor")
        if not is_number(v):
            return None
        ctx.n["QualityFloor"] = ctx.m.add("QualityFloor", f"{v:.2f}", v, "results.json:thresholds.quality_floor")
    return ctx.n["QualityFloor"]


def fig_of(ctx: Ctx, *kinds: str) -> Figure | None:
    for f in ctx.figures:
        if f.kind in kinds:
            return f
    return None


def fig_ref(ctx: Ctx, fig: Figure, section: str) -> str:
    """'Figure~\\ref{...}', recording the Results subsection that discusses the figure."""
    ctx.fig_refs.setdefault(fig.label, section)
    return ctx.ph("common.figure_ref", label=fig.label)


def figure_env(fig: Figure) -> str:
    return ("\\begin{figure}[tbp]\n\\centering\n"
            f"\\includegraphics[width=\\columnwidth]{{{fig.file}}}\n"
            f"\\caption{{{fig.caption}}}\n\\label{{{fig.label}}}\n"
            f"\\Description{{{fig.caption}}}\n\\end{{figure}}")


def model_np(ctx: Ctx, name: str) -> str:
    """A model in running text: 'logistic regression (L2)', 'XGBoost', 'the stacked ensemble'."""
    return ctx.ph("common.stacked_ensemble") if model_family(name) == STACKING else ctx.model_phrase(name)


def model_the(ctx: Ctx, name: str) -> str:
    """A model with its article where English needs one: 'the multilayer perceptron', 'XGBoost'."""
    text = model_np(ctx, name)
    if text.startswith("the ") or text[:1].isupper():
        return text
    return "the " + text


def perturbation_words(ctx: Ctx, kind: str) -> tuple[str, str]:
    """(singular, plural) of a kind of stability perturbation; an imputation of data without a missing value says
    that it changed no value (never "alternative imputation of the missing values" when none were missing)."""
    if kind == "impute" and nothing_missing(ctx):
        return ctx.ph("common.perturbation_impute_complete_one"), ctx.ph("common.perturbation_impute_complete_many")
    if kind == "bootstrap" and bootstrap_groups(ctx):
        groups, rows = bootstrap_groups(ctx), ctx.units
        return (ctx.ph("common.perturbation_bootstrap_groups_one", groups=groups, rows=rows),
                ctx.ph("common.perturbation_bootstrap_groups_many", groups=groups, rows=rows))
    if kind in PERTURBATION_KIND:
        return PERTURBATION_KIND[kind]
    return (ctx.ph("common.perturbation_other_one", kind=escape_latex(kind)),
            ctx.ph("common.perturbation_other_many", kind=escape_latex(kind)))


def bootstrap_groups(ctx: Ctx) -> str | None:
    """The registry's noun (plural) of what the stability bootstrap drew whole (results.json:stability.runs
    resampled.by = groups: the split's groups, edm_ars.analysis.stability.resamples_groups): 'children' (the units
    of repeated records), 'schools' (the clusters), 'groups of schools' (clusters joined by units who moved, or
    several levels); None when it drew rows."""
    runs = ctx.stability.get("runs") or []
    if not any((r.get("resampled") or {}).get("by") == "groups" for r in runs if r.get("kind") == "bootstrap"):
        return None
    kind = ctx.split_groups_kind
    if kind == "unit" and ctx.repeated:
        return ctx.repeated["units"]
    if kind == "levels":
        return ctx.ph("common.groups_of", clusters=join_list([plural(lv["unit"]) for lv in ctx.kept_levels]))
    if kind == "joined":
        return ctx.ph("common.groups_of", clusters=plural(ctx.cluster))
    return plural(ctx.cluster)


def perturbation_kinds(ctx: Ctx) -> str:
    runs = ctx.stability.get("runs") or []
    counts: dict[str, int] = {}
    for r in runs:
        counts[str(r.get("kind") or "other")] = counts.get(str(r.get("kind") or "other"), 0) + 1
    parts = []
    for kind, k in counts.items():
        one, many = perturbation_words(ctx, kind)
        mac = ctx.m.count(macro_name("StabN", kind), k, f"count(results.json:stability.runs[kind={kind}])",
                          derived=True)
        parts.append(f"{mac} {one if k == 1 else many}")
    return join_list(parts)


def n_perturbations(ctx: Ctx) -> str:
    st = ctx.stability
    k = st.get("n_perturbations")
    if is_number(k):
        return ctx.m.count("StabNPerturbations", k, "results.json:stability.n_perturbations")
    return ctx.m.count("StabNPerturbations", len(st.get("runs") or []), "len(results.json:stability.runs)",
                       derived=True)


def stability_threshold(ctx: Ctx) -> str | None:
    """The mean top-five overlap under which the stability analysis called the ranking unstable, as recorded
    with it (results.json:stability.thresholds.unstable_top5), as a percentage."""
    v = (ctx.stability.get("thresholds") or {}).get("unstable_top5")
    if not is_number(v):
        return None
    return ctx.m.pct("StabThreshold", 100 * v, "100 * results.json:stability.thresholds.unstable_top5", derived=True)


def stability_rule(ctx: Ctx) -> str:
    """The rule in positive form (so that 'unstable' appears only when the verdict is unstable)."""
    thr = stability_threshold(ctx)
    if thr:
        return ctx.ph("common.stability_rule_threshold", threshold=thr)
    if ctx.stability.get("unstable"):
        return ctx.ph("common.stability_rule_stated",
                      rule=ctx.t(str(ctx.stability.get("rule") or ""), "results.json:stability.rule"))
    return ""


def attr_label(ctx: Ctx, attr: str) -> str:
    rec = ctx.fairness.get("attributes", {}).get(attr, {})
    label = rec.get("label") or attr
    if rec.get("kind") == "intersection" and " x " in str(label):
        parts = [clean_label(p) for p in str(label).split(" x ")]
        return " \\texttimes{} ".join(ctx.t(p, f"results.json:fairness.attributes.{attr}.label") for p in parts)
    if label == attr:
        return ctx.label_tex(attr, f"results.json:fairness.attributes.{attr}.label")
    return ctx.t(clean_label(label), f"results.json:fairness.attributes.{attr}.label")


#: group names of a yes/no indicator (an attribute whose label names one group, not a characteristic)
INDICATOR_VALUES = frozenset({"0", "1", "yes", "no", "true", "false", "y", "n"})


def is_indicator(ctx: Ctx, attr: str) -> bool:
    """True when the audited attribute is a yes/no indicator (label `black`, groups 0/1 or `black`/`not black`):
    its label names one group, so "groups of <label>" would splice a group's name in as an attribute."""
    rec = ctx.fairness.get("attributes", {}).get(attr) or {}
    label = clean_label(str(rec.get("label") or ctx.var_label(attr))).strip().lower()
    names = {str(g.get("group") if g.get("group") is not None else g.get("name") or "").strip().lower()
             for g in rec.get("groups") or []}
    if len(names) == 2 and (names <= INDICATOR_VALUES or label in names):
        return True
    values = {str(v).strip().lower() for v in (ctx.registry_values.get(attr) or {}).values()}
    return len(values) == 2 and label in values


def attribute_noun(ctx: Ctx, attr: str, label: str) -> str:
    """The attribute's (escaped) label where a sentence says "groups of ...": the label itself, or for a yes/no
    indicator "the indicator <label>" (never "between groups of black")."""
    return ctx.ph("common.indicator_attribute", label=label) if is_indicator(ctx, attr) else label


# -- the data set's own words (registry prose): why prediction matters and what the data record ------------
def _prose_text(value: object) -> str:
    return escape_latex(" ".join(str(value or "").split()))


def use_prose(ctx: Ctx) -> dict[str, str]:
    """Why a prediction from these data matters: {purpose, actors, decision_time}, each '' when the registry
    does not say it. The study's question (registry questions[].purpose, ...) overrides the data set's prose."""
    d = ctx.dataset or {}
    q = (d.get("question_prose") or {}).get(str(ctx.spec.get("question_id") or ""), {})
    return {k: _prose_text(q.get(k) or d.get(k)) for k in ("purpose", "actors", "decision_time")}


def measures(ctx: Ctx) -> str:
    """What the data record for each unit, in the registry's words ('' when it does not say)."""
    return _prose_text((ctx.dataset or {}).get("measures"))


def collected_for(ctx: Ctx) -> str:
    """Why the data were collected, in the registry's words ('' when it does not say)."""
    return _prose_text((ctx.dataset or {}).get("collected_for"))


def predictor_groups(ctx: Ctx) -> list[str]:
    """The registry groups of the study's predictors, in the order the specification lists them."""
    out: list[str] = []
    for p in ctx.spec.get("predictors") or []:
        g = ctx.registry_groups.get(p.get("name") if isinstance(p, dict) else p)
        if g and g not in out:
            out.append(g)
    return out


def group_phrases(ctx: Ctx, groups: list[str]) -> list[str]:
    """What each registry group means for the units (the registry's group_phrases), where it says."""
    phrases = (ctx.dataset or {}).get("group_phrases") or {}
    return [_prose_text(phrases[g]) for g in groups if phrases.get(g)]


def data_name(ctx: Ctx, *, studied: bool = True) -> str:
    """The data set's short name as a noun for 'the ...': 'Project STAR data', 'London exam data'; the rows this
    study analysed, when generated, are named as such ('generated HSLS:09-like data'), while `studied=False` names
    the data set itself (what other studies used)."""
    return ctx.data_noun(studied=studied)


def flagged_phrase(ctx: Ctx) -> str:
    """Who the audit's rule flags: "most at risk" when the study declares the class a school would act on (config or
    registry `at_risk`); with neither declared, the rule flags the likeliest positive class, which may be a good
    outcome (a degree), so only "predicted most likely to have the outcome"."""
    rule = ctx.fairness.get("decision_rule") or {}
    undeclared = "at_risk_source" in rule and not rule["at_risk_source"]
    return ctx.ph("methods.flagged_likely") if undeclared else ctx.ph("methods.flagged_at_risk")


def at_risk_phrase(ctx: Ctx, full: bool = False) -> str:
    """The students a school would act on under the audit's rule: those with or without the outcome (`full`: with
    the outcome named, for its first mention)."""
    rule = ctx.fairness.get("decision_rule") or {}
    without = rule.get("at_risk_class") == 0
    if full and without:
        return ctx.ph("methods.at_risk_without", outcome=ctx.outcome_phrase)
    if full:
        return ctx.ph("methods.at_risk_with", outcome=ctx.outcome_phrase)
    return ctx.ph("methods.at_risk_without_short") if without else ctx.ph("methods.at_risk_with_short")
