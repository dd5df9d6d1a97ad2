"""Offline prose: deterministic section templates conditioned on the run's artifacts.

Every number goes through the MacroTable (never a literal), all artifact text is escaped, and
findings are described as associations ("associated with", "predictive of"), never as effects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .integrity import unverified_reasons
from .latex import escape_latex
from .macros import (
    LOWER_IS_BETTER,
    METRIC_LABEL,
    MacroTable,
    fmt_plain,
    macro_name,
    spell_digits,
    text_with_macros,
)

# ---- static knowledge --------------------------------------------------------------------------
MODEL_NAMES = {
    "logistic_regression": "penalised logistic regression",
    "logistic": "penalised logistic regression",
    "elastic_net": "elastic-net regression",
    "linear_regression": "ordinary least squares regression",
    "ridge": "ridge regression",
    "lasso": "lasso regression",
    "random_forest": "random forest",
    "extra_trees": "extremely randomised trees",
    "xgboost": "XGBoost",
    "gradient_boosting": "gradient-boosted trees",
    "lightgbm": "LightGBM",
    "decision_tree": "decision tree",
    "mlp": "multilayer perceptron",
    "stacking": "stacked ensemble",
    "dummy": "majority-class baseline",
}

_TREE = ("forest", "xgb", "boost", "tree", "lgbm", "lightgbm", "catboost", "gbm")
_LINEAR = ("logistic", "linear", "elastic", "lasso", "ridge", "ols", "glm", "logit")

NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def model_family(name: str) -> str:
    low = name.lower()
    if "stack" in low or "ensemble" in low:
        return "stacking"
    if any(t in low for t in _TREE):
        return "tree"
    if any(t in low for t in _LINEAR):
        return "linear"
    return "other"


def join_list(items: list[str], conj: str = "and") -> str:
    items = [i for i in items if i]
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} {conj} {items[1]}"
    return ", ".join(items[:-1]) + f", {conj} {items[-1]}"


def clean_label(label: str) -> str:
    """A codebook label without its wave prefix: 'X1 Student's sex' -> 'Student's sex'."""
    label = re.sub(r"\s+", " ", str(label)).strip()
    return re.sub(r"^[A-Z][0-9]\s+", "", label) or label


def lc_first(text: str) -> str:
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text


def _cap_first(text: str) -> str:
    return text[0].upper() + text[1:] if text else text


def number_word(n: int) -> str:
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


# ---- citations ---------------------------------------------------------------------------------
_BIB_HEAD = re.compile(r"^\s*@\s*([A-Za-z]+)\s*\{\s*([^,\s]+)\s*,", re.S)


@dataclass
class Citations:
    """The citable (VERIFIED, well-formed) papers, by topic, and the keys cited so far."""

    papers: list[dict[str, Any]]
    used: list[str] = field(default_factory=list)

    @classmethod
    def from_literature(cls, literature: dict[str, Any]) -> Citations:
        ok, seen = [], set()
        for p in literature.get("papers", []) or []:
            key = p.get("key")
            if p.get("status") != "VERIFIED" or not key or key in seen:
                continue
            if not _BIB_HEAD.match(p.get("bibtex") or ""):
                continue
            seen.add(key)
            ok.append(p)
        return cls(ok)

    @property
    def keys_all(self) -> list[str]:
        return [p["key"] for p in self.papers]

    def keys(self, *topics: str, limit: int | None = None) -> list[str]:
        out = [p["key"] for p in self.papers if set(p.get("topics") or []) & set(topics)]
        return out[:limit] if limit else out

    def _use(self, keys: list[str]) -> None:
        for k in keys:
            if k not in self.used:
                self.used.append(k)

    def citep(self, *topics: str, limit: int | None = 3, keys: list[str] | None = None) -> str:
        """' \\citep{a,b}' for papers on the topics ('' when there are none)."""
        keys = keys if keys is not None else self.keys(*topics, limit=limit)
        if not keys:
            return ""
        self._use(keys)
        return "~\\citep{" + ",".join(keys) + "}"

    def present(self, *keys: str) -> list[str]:
        """The given keys that are citable in this run, in the given order."""
        have = set(self.keys_all)
        return [k for k in keys if k in have]

    def cite_keys(self, *keys: str, topics: tuple[str, ...] = (), limit: int = 2) -> str:
        """' \\citep{...}' for the named keys that are citable, else for papers on `topics`."""
        found = self.present(*keys)
        if not found and topics:
            found = self.keys(*topics, limit=limit)
        return self.citep(keys=found) if found else ""

    def citet(self, key: str) -> str:
        self._use([key])
        return "\\citet{" + key + "}"

    def unused(self) -> list[str]:
        return [k for k in self.keys_all if k not in self.used]

    def bibtex(self, key: str) -> str:
        for p in self.papers:
            if p["key"] == key:
                entry = p["bibtex"].strip()
                m = _BIB_HEAD.match(entry)
                if m and m.group(2) != key:  # the entry's own key must be the cited key
                    entry = entry[:m.start(2)] + key + entry[m.end(2):]
                return entry
        raise KeyError(key)


# ---- context -------------------------------------------------------------------------------------
@dataclass
class Figure:
    label: str
    kind: str
    file: str  # path relative to the paper folder, e.g. figures/roc.pdf
    caption: str  # LaTeX


@dataclass
class Ctx:
    spec: dict[str, Any]
    lit: dict[str, Any]
    data: dict[str, Any]
    results: dict[str, Any]
    review: dict[str, Any]
    m: MacroTable
    cites: Citations
    registry_labels: dict[str, str]
    figures: list[Figure] = field(default_factory=list)
    n: dict[str, str] = field(default_factory=dict)  # named number uses, e.g. n["TestN"]
    fig_refs: dict[str, str] = field(default_factory=dict)  # figure label -> Results subsection citing it
    claims: dict[str, str] = field(default_factory=dict)  # claim id -> supported | inconclusive | unsupported
    claims_doc: dict[str, Any] = field(default_factory=dict)  # claims.json
    outline: dict[str, Any] = field(default_factory=dict)  # writer.outline.choose
    registry_groups: dict[str, str] = field(default_factory=dict)  # variable -> registry group
    dataset: dict[str, Any] = field(default_factory=dict)  # the registry's prose (names, design, unit, waves)

    def claim(self, id_: str) -> str:
        """The results debate's status of a claim ('unsupported' when the debate did not make it): the
        paper states supported claims, states inconclusive ones as such, and omits the rest."""
        return self.claims.get(id_, "unsupported")

    # -- basic facts ---------------------------------------------------------------------
    @property
    def binary(self) -> bool:
        return self.results.get("task", self.spec.get("task")) == "binary_classification"

    @property
    def ds(self) -> dict[str, Any]:
        """What the registry says about the data set, escaped for LaTeX (a neutral description without it)."""
        if not self.dataset:
            name = escape_latex(str(self.spec.get("dataset") or "study").upper())
            return {"short": name, "long": f"{name} data", "agency": "", "about": "", "source": "",
                    "design": "", "unit": "student", "units": "students", "used_for": "", "waves": {},
                    "wave_order": [], "grouping": None}
        d = self.dataset

        def esc(value: Any) -> str:
            return escape_latex(" ".join(str(value or "").split()))

        return {**{k: esc(d.get(k)) for k in ("short", "long", "agency", "about", "source", "design", "used_for")},
                "unit": esc(d.get("unit") or "student"), "units": esc(d.get("units") or "students"),
                "waves": {k: esc(v) for k, v in (d.get("waves") or {}).items()},
                "wave_order": list(d.get("wave_order") or []), "grouping": d.get("grouping")}

    @property
    def survey(self) -> bool:
        """Survey wording (waves of a survey, nonresponse, weights) only for data the registry calls a survey."""
        return "survey" in self.ds["design"].lower()

    @property
    def has_waves(self) -> bool:
        """False for one cross-section (a registry without waves); unknown data are taken to have them."""
        return bool(self.ds["wave_order"]) or not self.dataset

    @property
    def units(self) -> str:
        return self.ds["units"]

    @property
    def grouping(self) -> dict[str, Any]:
        """{unit, columns, reconstructed}: the registry's, else the data report's, else reconstructed schools."""
        g = self.ds.get("grouping") or self.data["split"].get("grouping")
        if g:
            return {"unit": escape_latex(str(g.get("unit") or "school")), "columns": list(g.get("columns") or []),
                    "reconstructed": bool(g.get("reconstructed"))}
        # artifacts from before registries described clusters: schools reconstructed from a fingerprint
        columns = self.data["split"]["school_reconstruction"].get("columns") or ["school fingerprint"]
        return {"unit": "school", "columns": list(columns), "reconstructed": True}

    @property
    def cluster(self) -> str:
        return self.grouping["unit"]

    @property
    def split_by(self) -> str:
        """'by reconstructed school clusters ', 'by school ' or '' (how the split kept clusters together)."""
        if not self.school_split_ok:
            return ""
        return (f"by reconstructed {self.cluster} clusters " if self.grouping["reconstructed"]
                else f"by {self.cluster} ")

    @property
    def short(self) -> str:
        return self.ds["short"]

    @property
    def full_name(self) -> str:
        """The long name with the short one in parentheses, or the short name alone."""
        long, short = self.ds["long"], self.ds["short"]
        return long if not long or long.startswith(short) else f"{long} ({short})"

    @property
    def dataset_topic(self) -> str:
        """The curated-bibliography topic of the data set ('' when the bibliography has none)."""
        if self.dataset:
            return str(self.dataset.get("topic") or "")
        return str(self.spec.get("dataset") or "").lower()

    @property
    def waves_text(self) -> str:
        if not self.has_waves:
            return "the same cross-section as the outcome"
        waves = join_list([self.wave(w) for w in self.predictor_waves])
        return f"the {waves}" if waves else "waves that precede the outcome"

    @property
    def offline(self) -> bool:
        return str(self.spec.get("backend", "offline")).lower() == "offline"

    @property
    def primary(self) -> str:
        return self.results.get("primary_metric") or ("auc" if self.binary else "r2")

    @property
    def best(self) -> str:
        return self.results["best_model"]

    @property
    def interpreted(self) -> str | None:
        """The model whose SHAP values are reported (never stacking)."""
        if "interpreted_model" in self.results:
            name = self.results.get("interpreted_model")
            return name if name in self.results["models"] else None
        return None if model_family(self.best) == "stacking" else self.best

    @property
    def fairness(self) -> dict[str, Any]:
        fa = self.results.get("fairness")
        return fa if isinstance(fa, dict) and isinstance(fa.get("attributes"), dict) else {}

    @property
    def stability(self) -> dict[str, Any]:
        st = self.results.get("stability")
        return st if isinstance(st, dict) else {}

    @property
    def shap_by_model(self) -> dict[str, dict[str, Any]]:
        by = (self.results.get("shap") or {}).get("by_model") or {}
        return {k: v for k, v in by.items() if isinstance(v, dict)}

    @property
    def unverified(self) -> bool:
        return bool(unverified_reasons(self.review))

    def t(self, text: Any, source: str) -> str:
        """Artifact free text, escaped, with its numbers turned into macros."""
        return text_with_macros(text, self.m, source)

    def wave(self, key: Any) -> str:
        if not key:
            return "single cross-section of the data" if not self.has_waves else "an unrecorded wave"
        return self.ds["waves"].get(str(key)) or escape_latex(str(key).replace("_", " ")) + " wave"

    def var_label(self, name: str) -> str:
        """Raw (unescaped) label of a source variable."""
        for p in self.spec.get("predictors", []):
            if p.get("name") == name and p.get("label"):
                return clean_label(p["label"])
        if self.spec.get("outcome", {}).get("name") == name and self.spec["outcome"].get("label"):
            return clean_label(self.spec["outcome"]["label"])
        if name in self.registry_labels:
            return clean_label(self.registry_labels[name])
        return name

    def label_tex(self, name: str, source: str) -> str:
        return self.t(self.var_label(name), source)

    @property
    def outcome_label(self) -> str:
        o = self.spec["outcome"]
        return self.t(clean_label(o.get("label") or self.var_label(o["name"])),
                      "research_spec.json:outcome.label")

    @property
    def positive(self) -> str:
        pos = self.spec["outcome"].get("positive_label")
        return self.t(pos, "research_spec.json:outcome.positive_label") if pos else "the positive class"

    def model_label(self, name: str) -> str:
        info = self.results["models"].get(name, {})
        if info.get("label"):
            return self.t(info["label"], f"results.json:models.{name}.label")
        low = name.lower()
        if low in MODEL_NAMES:
            text = MODEL_NAMES[low]
            if low == "elastic_net" and self.binary:
                text = "elastic-net logistic regression"
            return text[0].upper() + text[1:]
        return escape_latex(name.replace("_", " ").capitalize())

    def model_phrase(self, name: str) -> str:
        """The model's name in running text (lower-case first letter unless an acronym)."""
        return lc_first(self.model_label(name))

    def better(self, a: float, b: float, metric: str) -> bool:
        return a < b if metric in LOWER_IS_BETTER else a > b

    def ranked_models(self) -> list[str]:
        metric = self.primary
        models = self.results["models"]

        def key(name: str) -> float:
            v = models[name]["metrics"].get(metric)
            if v is None:
                return float("inf")
            return v if metric in LOWER_IS_BETTER else -v

        return sorted(models, key=lambda n: (n != self.best, key(n)))

    def metric_value(self, model: str, metric: str) -> float | None:
        return self.results["models"].get(model, {}).get("metrics", {}).get(metric)

    def mac(self, model: str, metric: str) -> str | None:
        return self.n.get(f"{model}|{metric}")

    def ci(self, model: str, metric: str) -> str | None:
        return self.n.get(f"{model}|{metric}|ci")

    @property
    def predictor_waves(self) -> list[str]:
        keys = [p.get("wave") for p in self.spec.get("predictors", []) if p.get("wave")]
        order = self.ds.get("wave_order") or []
        uniq = list(dict.fromkeys(keys))
        return sorted(uniq, key=lambda w: order.index(w) if w in order else len(order))

    @property
    def top_features(self) -> list[dict[str, Any]]:
        return [f for f in self.results.get("top_features") or [] if f.get("feature")]

    @property
    def importance_key(self) -> str:
        for f in self.top_features:
            if "mean_abs_shap" in f:
                return "mean_abs_shap"
        return "importance"

    def feature_label(self, i: int) -> str:
        f = self.top_features[i]
        src = f"results.json:top_features.{i}.label"
        if f.get("label"):
            return self.t(clean_label(f["label"]), src)
        source_var = (self.data.get("feature_sources") or {}).get(f["feature"], f["feature"])
        label = self.var_label(source_var)
        if source_var != f["feature"] and label != source_var:
            level = f["feature"][len(source_var):].lstrip("_=")
            label = f"{label} = {level}" if level else label
        return self.t(label, src)

    @property
    def fairness_reported(self) -> bool:
        if self.results.get("fairness") or self.results.get("subgroups"):
            return True
        kinds = {str(f.get("kind", "")).lower() for f in self.results.get("figures", [])}
        kinds |= {str(t.get("kind", "")).lower() for t in self.results.get("tables", []) or []
                  if isinstance(t, dict)}
        return bool(kinds & {"fairness", "subgroup", "subgroups", "fairness_gap"})

    @property
    def school_split_ok(self) -> bool:
        """True when the split kept every cluster (school) on one side."""
        status = str(self.data["split"]["school_reconstruction"].get("status", "")).lower()
        return status in {"ok", "reconstructed", "success", "succeeded", "done", "complete", "passed"}


# ---- numbers -------------------------------------------------------------------------------------
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
    # missingness of predictors
    miss = d.get("missingness") or {}
    for p in ctx.spec.get("predictors", []):
        rec = miss.get(p["name"])
        if rec is not None:
            n[f"miss:{p['name']}"] = m.pct(macro_name("Miss", p["name"]), rec["pct_missing"],
                                           f"data_report.json:missingness.{p['name']}.pct_missing")
    preds = [v for v in d["predictors_before"] if v in miss]
    if preds:
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
    for name, info in r["models"].items():
        for metric, value in (info.get("metrics") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                n[f"{name}|{metric}"] = m.metric(macro_name(name, metric), value,
                                                 f"results.json:models.{name}.metrics.{metric}")
        for metric, bounds in (info.get("ci") or {}).items():
            if isinstance(bounds, (list, tuple)) and len(bounds) == 2 and None not in bounds:
                src = f"results.json:models.{name}.ci.{metric}"
                n[f"{name}|{metric}|ci"] = m.ci(macro_name(name, metric, "CI"), bounds[0], bounds[1], src)
                n[f"{name}|{metric}|lo"] = m.metric(macro_name(name, metric, "Low"), bounds[0], src + ".0")
                n[f"{name}|{metric}|hi"] = m.metric(macro_name(name, metric, "High"), bounds[1], src + ".1")
        if isinstance(info.get("cv_score"), (int, float)):
            n[f"{name}|cv"] = m.metric(macro_name(name, "CV"), info["cv_score"],
                                       f"results.json:models.{name}.cv_score")
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
    rv = ctx.review
    if isinstance(rv.get("overall_score"), (int, float)):
        n["ReviewScore"] = m.add("ReviewScore", f"{float(rv['overall_score']):.1f}",
                                 float(rv["overall_score"]), "review_report.json:overall_score")
    n["NIssues"] = m.count("NReviewIssues", len(rv.get("issues") or []),
                           "len(review_report.json:issues)", derived=True)
    excluded = [p for p in ctx.lit.get("papers", []) or [] if p.get("status") != "VERIFIED"]
    n["NExcludedRefs"] = m.count("NExcludedReferences", len(excluded),
                                 "count(literature_context.json:papers[status!=VERIFIED])", derived=True)


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


def _cis_overlap(ctx: Ctx, a: str, b: str) -> bool | None:
    ca = (ctx.results["models"][a].get("ci") or {}).get(ctx.primary)
    cb = (ctx.results["models"][b].get("ci") or {}).get(ctx.primary)
    if not ca or not cb:
        return None
    return not (ca[0] > cb[1] or cb[0] > ca[1])


# ---- small shared phrases -----------------------------------------------------------------------
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


def strength(ctx: Ctx) -> str:
    v = ctx.metric_value(ctx.best, ctx.primary)
    if v is None:
        return "uncertain"
    if ctx.primary in ("auc", "roc_auc"):
        if v >= 0.95:
            return "very high"
        if v >= 0.8:
            return "strong"
        if v >= 0.7:
            return "acceptable"
        if v >= 0.6:
            return "modest"
        return "weak"
    if ctx.primary == "r2":
        if v >= 0.9:
            return "very high"
        if v >= 0.5:
            return "substantial"
        if v >= 0.3:
            return "moderate"
        if v >= 0.1:
            return "modest"
        return "weak"
    return "measurable"


def suspiciously_high(ctx: Ctx) -> bool:
    return strength(ctx) == "very high"


def model_list(ctx: Ctx) -> str:
    return join_list([ctx.model_phrase(x) for x in ctx.results["models"]])


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


def _narrative():  # the module that writes the outline-driven paragraphs imports this one
    from . import narrative  # noqa: PLC0415

    return narrative


def automation_note(ctx: Ctx) -> str:
    backend = escape_latex(ctx.spec.get("backend", "offline"))
    if ctx.offline:
        return ("This study was generated automatically by EDM-ARS, an automated research system "
                "for educational data mining, using its offline backend: the research "
                "specification, the analysis and this text were produced by deterministic code and "
                "templates conditioned on the run's artifacts, without a language model.")
    return (f"This study was generated automatically by EDM-ARS, an automated research system for "
            f"educational data mining, using the {backend} backend; the analysis code is "
            "deterministic, and every number in the text is generated from the run's artifacts.")


# ---- sections -------------------------------------------------------------------------------------
_SMALL_WORDS = {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to", "vs"}


def title_case(text: str) -> str:
    """Capitalise the words of a (LaTeX) label for a title, leaving control sequences alone."""
    words = text.split(" ")
    out = []
    for i, w in enumerate(words):
        if w and w[0].isalpha() and w[0].islower() and (i == 0 or w not in _SMALL_WORDS):
            w = w[0].upper() + w[1:]
        out.append(w)
    return " ".join(out)


def title(ctx: Ctx) -> str:
    return _narrative().title(ctx, title_case(ctx.outcome_label))


def authors(ctx: Ctx, name: str | None = None) -> str:
    """The author line: the configured name, else the system's own."""
    who = escape_latex(name) if name else "EDM-ARS"
    return (f"\\author{{{who}}}\n"
            "\\affiliation{%\n  \\institution{Automated Educational Data Mining Research System}\n"
            "  \\country{}}\n"
            f"\\renewcommand{{\\shortauthors}}{{{who}}}")


def keywords(ctx: Ctx) -> str:
    words = ["educational data mining", ctx.short, "student outcome prediction"]
    fams = {model_family(x) for x in ctx.results["models"]}
    if "tree" in fams:
        words.append("tree ensembles")
    if "linear" in fams:
        words.append("penalised regression")
    if ctx.top_features and ctx.importance_key == "mean_abs_shap":
        words.append("SHAP")
    if ctx.fairness:
        words.append("algorithmic fairness")
    if ctx.stability.get("runs"):
        words.append("stability")
    words += ["data leakage", "automated research"]
    return ", ".join(words)


def _information(ctx: Ctx) -> str:
    """What the predictors are, in the abstract's words."""
    return ("information available before the outcome is measured" if ctx.has_waves
            else "information on students' background and context")


def abstract(ctx: Ctx) -> str:
    n = ctx.n
    best = ctx.model_phrase(ctx.best)
    parts: list[tuple[int, str]] = []  # (priority: lower is kept first, sentence)
    if ctx.binary:
        parts.append((1, "Predicting which students will reach key educational milestones is a central "
                         "task of educational data mining, yet many published models are difficult "
                         "to reproduce, report no uncertainty, and are vulnerable to data leakage."))
    else:
        parts.append((1, ("Anticipating students' later achievement from earlier records" if ctx.has_waves
                          else "Predicting students' achievement from their background and context")
                         + " is a central task of educational data mining, yet many published models are difficult "
                         "to reproduce, report no uncertainty, and are vulnerable to data leakage."))
    parts.append((3, "We ask: " + ctx.t(ctx.spec["research_question"].rstrip(),
                                         "research_spec.json:research_question")
                  + ("" if ctx.spec["research_question"].rstrip().endswith("?") else ".")))
    parts.append((0, f"Using the {ctx.full_name}, we analysed {n['AnalyticN']} {ctx.units} "
                     f"and {n['NPredictors']} predictors from {ctx.waves_text}, "
                     + ("recoded missing-data reserve codes, " if has_reserve_codes(ctx) else "")
                     + "split the data into training and test sets "
                     + ctx.split_by
                     + f"before any encoding or imputation, and compared {n['NModels']} models "
                     f"({model_list(ctx) if len(ctx.results['models']) <= 4 else _families_phrase(ctx)})."))
    res = (f"On a held-out test set of {n['TestN']} students, the selected model, {best}, reached "
           f"{primary_stmt(ctx)}")
    others = [x for x in ctx.results["models"] if x != ctx.best and ctx.mac(x, ctx.primary)]
    if others:
        vals = sorted(others, key=lambda x: ctx.metric_value(x, ctx.primary))
        lo, hi = ctx.mac(vals[0], ctx.primary), ctx.mac(vals[-1], ctx.primary)
        res += (f"; the other models reached {metric_name(ctx)} = {lo}" if lo == hi else
                f"; the other models reached {metric_name(ctx)} between {lo} and {hi}")
    parts.append((0, res + "."))
    if ctx.top_features:
        feats = feature_names(ctx, 3)
        lead = ("The features with the largest mean absolute SHAP values were "
                if ctx.importance_key == "mean_abs_shap" else "The most important features were ")
        parts.append((1, lead + join_list(feats) + "."))
    fair = _abstract_fairness(ctx)
    if fair:
        parts.append((2, fair))
    st = ctx.stability
    if st.get("runs") and st.get("unstable") is not None:
        from .analyses import _nperturb  # noqa: PLC0415

        k = _nperturb(ctx)
        robust = ctx.claim("ranking_robust")
        lead = f"Across {k} perturbations of the training data, the ranking of the top features "
        if st.get("unstable"):
            parts.append((3, lead + "changed substantially, so it should not be read as a robust finding."))
        elif robust == "supported":
            parts.append((3, lead + "was stable."))
        elif robust == "inconclusive":
            parts.append((3, f"Whether the ranking of the top features is robust across {k} perturbations of the "
                             "training data is not settled by these analyses."))
    s = strength(ctx)
    if suspiciously_high(ctx):
        parts.append((0, f"Performance this high is unusual for {'survey-based' if ctx.survey else 'educational'} "
                         "prediction and calls for "
                         "scrutiny of possible leakage before the result is relied on."))
    elif ctx.claim("predicts_above_chance") == "supported":
        what = "discrimination" if ctx.binary else "explanatory accuracy"
        parts.append((2, f"{_cap_first(_information(ctx))} is thus predictive of "
                         f"{lc_first(ctx.outcome_label) if ctx.binary or not ctx.has_waves else 'later achievement'} "
                         "with "
                         f"{s} {what}, although predictive associations do not identify causes."))
    elif ctx.claim("predicts_above_chance") == "inconclusive":
        parts.append((2, f"Whether {_information(ctx)} predicts "
                         f"{lc_first(ctx.outcome_label) if ctx.binary or not ctx.has_waves else 'later achievement'} "
                         "better than "
                         "chance is not settled by these data: the interval of the selected model's "
                         f"{metric_name(ctx)} includes the chance level."))
    disclosure = ("This study was generated automatically by the EDM-ARS pipeline with its "
                  f"{'offline (template-based)' if ctx.offline else escape_latex(ctx.spec['backend'])} "
                  "backend")
    if ctx.unverified:
        disclosure += "; it did not pass automated review and should be read as an unverified draft."
    else:
        disclosure += "."
    parts.append((0, disclosure))

    def words(ps: list[tuple[int, str]]) -> int:
        return word_count(" ".join(p for _, p in ps))

    # Drop sentences one at a time, least important (then latest) first, until the abstract fits.
    kept = list(parts)
    for item in sorted(parts, key=lambda p: (-p[0], -parts.index(p))):
        if words(kept) <= 250 or item[0] == 0:
            break
        kept.remove(item)
    return " ".join(p for _, p in kept)


def _families_phrase(ctx: Ctx) -> str:
    """'from penalised regression to tree ensembles, a neural network and a stacked ensemble'."""
    fams = {model_family(x) for x in ctx.results["models"]}
    extra = (["a neural network"] if "mlp" in ctx.results["models"] else []) + (
        ["a stacked ensemble"] if "stacking" in fams else [])
    head = ("from penalised regression to tree ensembles" if {"linear", "tree"} <= fams
            else "of several families")
    return head + (", " + join_list(extra) if extra else "")


def _abstract_fairness(ctx: Ctx) -> str:
    """One sentence on the largest primary-metric gap among the audited single attributes."""
    fa = ctx.fairness
    primary = fa.get("primary_metric") or ctx.primary
    best = None
    for attr, rec in fa.get("attributes", {}).items():
        g = (rec.get("gaps") or {}).get(primary)
        if rec.get("kind") == "intersection" or not isinstance(g, dict) or not isinstance(g.get("gap"), (int, float)):
            continue
        if best is None or g["gap"] > best[1]["gap"]:
            best = (attr, g)
    if best is None:
        return ""
    attr, g = best
    mac = ctx.m.metric(macro_name("FairGap", attr, primary), g["gap"],
                       f"results.json:fairness.attributes.{attr}.gaps.{primary}.gap")
    label = fa["attributes"][attr].get("label") or attr
    label = ctx.t(lc_first(clean_label(label)), f"results.json:fairness.attributes.{attr}.label")
    status = ctx.claim(f"subgroup_gap_{attr}")
    if status == "unsupported":
        return (f"A subgroup audit found no gap in the selected model's {metric_name(ctx, primary)} between "
                "groups of students above the flagging threshold.")
    text = (f"A subgroup audit found that the selected model's {metric_name(ctx, primary)} differed by up to "
            f"{mac} between groups of {label}")
    if status == "inconclusive":
        return text + ("; the audit could not distinguish this gap from sampling variation or small groups, so "
                       "it is inconclusive, and it describes predictive performance, not the groups.")
    return text + "; this is a difference in predictive performance, not a causal finding about the groups."


def introduction(ctx: Ctx) -> str:
    c, n, spec = ctx.cites, ctx.n, ctx.spec
    o = spec["outcome"]
    paras = []
    if ctx.binary:
        paras.append(
            "Predicting student outcomes is one of the central tasks of educational data mining "
            f"(EDM){c.citep('edm', limit=3)}. Early-warning models that estimate whether a student "
            "will reach a milestone, such as enrolling in postsecondary education or completing a "
            "credential, can help schools direct advising and support to the students who need it "
            "before the relevant decisions are made. Such models are only useful, however, if their "
            "accuracy is estimated honestly, if their uncertainty is reported, and if the variables "
            "they rely on would actually be available at the time a prediction is needed.")
    else:
        paras.append(
            "Predicting student outcomes is one of the central tasks of educational data mining "
            f"(EDM){c.citep('edm', limit=3)}. "
            + ("Models that anticipate later achievement from earlier records can help educators identify "
               "students who may need additional support, and they show which early indicators carry "
               "information about later performance." if ctx.has_waves else
               "Models that relate achievement to students' background and context show how much of the "
               "variation in achievement that information accounts for, and which indicators carry it.")
            + " Such models are only useful, however, if their accuracy is estimated honestly, if their "
            "uncertainty is reported, and if the variables they rely on precede the outcome in time.")
    paras.append(data_pitfalls(ctx))
    paras += [_narrative().motivation(ctx), _narrative().gap(ctx)]
    rq = ctx.t(spec["research_question"].strip(), "research_spec.json:research_question")
    pop = ctx.t(spec.get("population", "").strip().rstrip("."), "research_spec.json:population")
    text = (f"This paper addresses the following research question: \\emph{{{rq}}} The outcome is "
            f"{outcome_sentence_np(ctx)}, recorded in the {ctx.wave(o.get('wave'))}")
    if ctx.binary and o.get("positive_label"):
        text += f", with the positive class defined as \\emph{{{ctx.positive}}}"
    text += "."
    if pop:
        text += f" The population is defined as follows: {pop}."
    text += (f" We use {n['NPredictors']} predictors drawn from {ctx.waves_text}, "
             "each chosen with a substantive rationale, and compare models that range from "
             f"penalised linear models{c.citep('elastic_net', limit=2)} to tree ensembles"
             f"{c.citep('random_forest', 'xgboost', limit=3)}"
             + (", a neural network" if "mlp" in ctx.results["models"] else "")
             + (" and a stacked ensemble" if any(model_family(x) == "stacking" for x in ctx.results["models"])
                else "") + ".")
    paras.append(text)
    items = [
        f"A leakage-aware prediction pipeline for {ctx.short} that "
        + ("recodes reserve codes, " if has_reserve_codes(ctx) else "")
        + f"splits the data {ctx.split_by}before any encoding, and fits every preprocessing step on the "
        "training set only.",
        f"A comparison of {n['NModels']} models on a held-out test set of {n['TestN']} students, "
        "with bootstrap confidence intervals for every metric.",
    ]
    if ctx.top_features:
        if ctx.importance_key == "mean_abs_shap":
            how = "SHAP values" + c.citep("shap", limit=2)
        else:
            how = "feature importance scores"
        items.append(f"An interpretation of the selected model with {how}, "
                     "reported as predictive associations rather than causal effects"
                     + (", with a check of whether the most predictive features agree across model families"
                        if len(ctx.shap_by_model) > 1 else "") + ".")
    else:
        items.append("A transparent account of the analytic choices and limitations of the study, "
                     "so that the result can be reproduced and scrutinised.")
    if ctx.fairness or ctx.stability.get("runs"):
        what = []
        if ctx.fairness:
            what.append("a subgroup audit of the selected model's predictive performance across protected "
                        "groups of students")
        if ctx.stability.get("runs"):
            what.append("a stability analysis that asks whether the performance and the most predictive features "
                        "survive perturbations of the imputation, the training sample and the random seed")
        items.append(_cap_first(join_list(what)) + ".")
    paras.append("The contributions of this paper are:\n\\begin{itemize}\n"
                 + "\n".join(f"  \\item {i}" for i in items) + "\n\\end{itemize}")
    ec = (spec.get("expected_contribution") or "").strip()
    tail = ""
    if ec:
        tail = (f"In the words of the study specification, the expected contribution is as follows: "
                f"{ctx.t(ec, 'research_spec.json:expected_contribution')}"
                + ("" if ec.endswith(".") else ".") + " ")
    tail += (f"{automation_note(ctx)} Section~\\ref{{sec:related}} reviews related work, "
             "Section~\\ref{sec:methods} describes the data and methods, Section~\\ref{sec:results} "
             "reports the results, and Sections~\\ref{sec:discussion} and~\\ref{sec:limitations} "
             "discuss their implications and limitations.")
    paras.append(tail)
    return "\n\n".join(paras)


def has_reserve_codes(ctx: Ctx) -> bool:
    """True when the registry lists numeric reserve codes or text labels that mean 'missing'."""
    sr = ctx.data.get("sentinel_recoding") or {}
    return bool(sr.get("codes") or sr.get("labels")) if sr else True


def data_pitfalls(ctx: Ctx) -> str:
    """The introduction's paragraph on the data set and the pitfalls of modelling it."""
    c, ds, units, unit = ctx.cites, ctx.ds, ctx.units, ctx.cluster
    about = f", {ds['about']}," if ds.get("about") else ""
    cite = c.citep(ctx.dataset_topic, limit=3) if ctx.dataset_topic else ""
    if ctx.survey and ctx.has_waves:
        text = (f"Large longitudinal surveys such as the {ctx.full_name}{about} are an attractive basis for such "
                f"models{cite}. They follow the same {units} across several waves and record achievement, "
                f"attitudes, family background and {unit} context.")
    else:
        text = (f"Data sets such as the {ctx.full_name}{about} are an attractive basis for such models{cite}: they "
                f"record {units}' achievement together with their background and {unit} context.")
    pitfalls = []
    if has_reserve_codes(ctx):
        pitfalls.append("missing responses are stored as negative reserve codes that look like valid numbers")
    pitfalls.append("some variables are measured after the outcome they would be used to predict" if ctx.has_waves
                    else "without a recorded order of measurement, some variables may not precede the outcome "
                         "they would be used to predict")
    g = ctx.grouping
    if g["columns"] and g["reconstructed"]:
        pitfalls.append(f"{units} are nested within {unit}s whose identifiers are suppressed in public-use files")
    elif g["columns"]:
        pitfalls.append(f"{units} are nested within {unit}s, so a random split lets a model recognise {unit}s it "
                        "has already seen")
    pitfalls.append("item nonresponse is substantial" if ctx.survey else f"values are missing for some {units}")
    listed = "; ".join(pitfalls[:-1]) + "; and " + pitfalls[-1] if len(pitfalls) > 1 else pitfalls[0]
    return (text + " They also pose well-known pitfalls for predictive modelling: " + listed
            + f"{c.citep('missing_data', 'leakage', limit=3)}. Analyses that ignore these issues can report "
            f"optimistic accuracy that would not carry over to new {units}"
            + (f" or {unit}s." if g["columns"] else "."))


def related_work(ctx: Ctx) -> str:
    c = ctx.cites
    if not c.papers:
        return ("No verified references were available for this run, so this section does not "
                "cite prior work. The study builds on the general literature on student outcome "
                "prediction in educational data mining, on tree ensembles and penalised regression "
                "for tabular data, and on methods for handling missing data and preventing leakage; "
                "readers should consult that literature directly.")
    paras = []
    edm, hsls = c.keys("edm"), c.keys(ctx.dataset_topic)
    if edm or hsls:
        text = "\\paragraph{Outcome prediction in EDM}"
        if edm:
            text += (" Predicting academic outcomes from administrative, survey and log data has a "
                     f"long history in educational data mining{c.citep(keys=edm)}, with applications "
                     "ranging from course performance to persistence and postsecondary enrolment.")
            if len(edm) >= 2:
                text += (f" For example, {c.citet(edm[0])} and {c.citet(edm[1])} illustrate how such "
                         "models are built and evaluated.")
        if hsls:
            used_for = ctx.ds.get("used_for") or "in earlier studies"
            text += f" The {ctx.short} data have been used {used_for}{c.citep(keys=hsls)}."
        text += (" Much of this work relies on a single model and on preprocessing choices that are "
                 "rarely reported in enough detail to reproduce; our pipeline makes each choice "
                 "explicit and records it with the results.")
        paras.append(text)
    algo = []
    en, rf, xg, st = (c.keys("elastic_net"), c.keys("random_forest"), c.keys("xgboost"),
                      c.keys("stacking"))
    if en:
        algo.append("Penalised linear models such as the elastic net, which combines lasso and ridge "
                    "penalties, remain strong and interpretable baselines for tabular data"
                    f"{c.citep(keys=en)}.")
    if rf or xg:
        s = "Tree ensembles capture nonlinearities and interactions without manual feature engineering"
        if rf and xg:
            s += (f": random forests average many decorrelated trees{c.citep(keys=rf)}, while "
                  f"gradient boosting, as implemented in XGBoost{c.citep(keys=xg)}, fits trees "
                  "sequentially to the errors of the current ensemble.")
        elif rf:
            s += f", as in random forests{c.citep(keys=rf)}."
        else:
            s += f", as in gradient boosting with XGBoost{c.citep(keys=xg)}."
        algo.append(s)
    if st:
        algo.append("Stacked generalisation combines the predictions of several learners"
                    f"{c.citep(keys=st)}.")
    if algo:
        algo.append("Comparing these families on the same split shows whether the added flexibility "
                    "of ensembles is worth their loss of transparency.")
        paras.append("\\paragraph{Learning algorithms for tabular data} " + " ".join(algo))
    shap = c.keys("shap")
    if shap:
        paras.append(
            "\\paragraph{Model interpretation} SHAP values attribute each prediction to the input "
            f"features using Shapley values from cooperative game theory{c.citep(keys=shap)}. "
            "Averaged over students, their magnitudes rank features by how strongly they are "
            "associated with the predictions. Because attributions describe the fitted model rather "
            "than the process that generated the data, they support statements about which "
            "variables are predictive, not about what causes the outcome.")
    fair = c.keys("fairness")
    if fair:
        groups = [ctx.label_tex(g, "research_spec.json:subgroups") for g in ctx.spec.get("subgroups", [])]
        text = ("\\paragraph{Fairness} Predictive models in education can be less accurate or "
                "differently calibrated for some groups of students than for others"
                f"{c.citep(keys=fair)}, which motivates reporting performance separately for groups")
        text += f" such as {join_list([lc_first(g) for g in groups])}." if groups else "."
        paras.append(text)
    md, lk, bs = c.keys("missing_data"), c.keys("leakage"), c.keys("bootstrap")
    safe = []
    if md:
        safe.append(f"Missing data are pervasive in {'large surveys' if ctx.survey else 'educational data'}, "
                    "and how they are handled can bias "
                    f"both estimates and predictions{c.citep(keys=md)}.")
    if lk:
        safe.append("Leakage, where information unavailable at prediction time enters training, is a "
                    "common source of over-optimistic results in applied machine learning"
                    f"{c.citep(keys=lk)}.")
    if bs:
        safe.append("The bootstrap provides confidence intervals for performance metrics without "
                    f"distributional assumptions{c.citep(keys=bs)}.")
    if safe:
        paras.append("\\paragraph{Methodological safeguards} " + " ".join(safe))
    paras += _narrative().related_extra(ctx)
    rest = c.unused()
    if rest:
        cited = [c.citet(k) for k in rest]
        verb = "includes" if len(cited) == 1 else "include"
        paras.append(f"Further work relevant to this study {verb} {join_list(cited)}.")
    if ctx.lit.get("source") == "curated" or ctx.lit.get("retrieval_failed"):
        paras.append("The references in this section were drawn from a curated bibliography that "
                     "ships with EDM-ARS rather than from a systematic literature search, so recent "
                     "or closely related studies may be missing.")
    return "\n\n".join(paras)


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
        return (f" {_cap_first(units)} attending the same {unit} share {unit}-level characteristics, so a "
                f"{row}-level random split would let a model recognise {unit}s it has already seen. The "
                f"public-use file suppresses {unit} identifiers; EDM-ARS therefore reconstructed approximate "
                f"{unit} clusters from a fingerprint of {unit}-level variables"
                + (f" ({n['NClusters']} clusters)" if "NClusters" in n else "")
                + f" and assigned whole clusters to the training or the test set ({method}; {share}). The "
                f"number of clusters present in both sets was {n['GroupOverlap']}.")
    if ctx.school_split_ok:
        cols = ", ".join(f"\\texttt{{{escape_latex(c)}}}" for c in g["columns"])
        return (f" {_cap_first(units)} attending the same {unit} share {unit}-level characteristics, so a "
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
    return (f" {_cap_first(unit)} clusters could not be {how} (status: \\emph{{{status}}}), so the data were split "
            f"at the {row} level ({method}; {share}); {units} from the same {unit} may therefore appear in both the "
            "training and the test set.")


def methods(ctx: Ctx) -> str:
    from . import analyses  # noqa: PLC0415 (analyses builds on this module)

    c, n, d, spec = ctx.cites, ctx.n, ctx.data, ctx.spec
    o = spec["outcome"]
    out = []
    # data
    agency = f", collected by {ctx.ds['agency']}" if ctx.ds.get("agency") else ""
    source = ctx.ds.get("source") or f"the {ctx.full_name}"
    text = (f"\\subsection{{Data and {_cap_first(ctx.units)}}}\nWe used {source}{agency}. ")
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
        text += " " + _sentence(ctx.t(note, "research_spec.json:temporal_order_note"))
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
    out.append(analyses.methods_models(ctx))
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
    text += analyses.methods_interpretation(ctx)
    out.append(text)
    for extra in (analyses.methods_fairness(ctx), analyses.methods_stability(ctx)):
        if extra:
            out.append(extra)
    out.append("\\subsection{Automated Generation}\n" + automation_note(ctx)
               + " Every number in this paper is a macro generated from the run's artifacts, so "
               "that it can be traced to its source. The findings describe the students in the "
               f"{ctx.short} analytic sample and were not checked by a human analyst. "
               + _narrative().methods_review(ctx))
    return "\n\n".join(out)


def results_table(ctx: Ctx) -> str:
    metric = ctx.primary
    if ctx.binary:
        extras = ["balanced_accuracy", "f1", "brier", "accuracy", "precision", "recall"]
    else:
        extras = ["rmse", "mae"]
    present = {k for v in ctx.results["models"].values() for k in (v.get("metrics") or {})}
    extras = [e for e in extras if e in present and e != metric][:3]
    has_ci = any(ctx.ci(x, metric) for x in ctx.results["models"])
    head = (["Model", metric_name(ctx)] + (["95\\% CI"] if has_ci else [])
            + [metric_name(ctx, e) for e in extras])
    rows = []
    sign = -1 if metric in LOWER_IS_BETTER else 1

    def order(name: str) -> float:
        v = ctx.metric_value(name, metric)
        return float("inf") if v is None else -sign * v

    for name in sorted(ctx.results["models"], key=order):
        cells = [ctx.model_label(name), ctx.mac(name, metric) or "--"]
        if has_ci:
            lo, hi = ctx.n.get(f"{name}|{metric}|lo"), ctx.n.get(f"{name}|{metric}|hi")
            cells.append(f"[{lo}, {hi}]" if lo and hi else "--")
        cells += [ctx.mac(name, e) or "--" for e in extras]
        if name == ctx.best:
            cells = [f"\\textbf{{{x}}}" for x in cells]
        rows.append(" & ".join(cells) + " \\\\")
    lower = [metric_name(ctx, e) for e in [metric] + extras if e in LOWER_IS_BETTER]
    higher = [metric_name(ctx, e) for e in [metric] + extras if e not in LOWER_IS_BETTER]
    if lower and higher:
        direction = f"Lower is better for {join_list(lower)}; higher is better for {join_list(higher)}."
    else:
        direction = "Lower is better for every metric." if lower else "Higher is better for every metric."
    caption = (f"Test-set performance of all models ({ctx.n['TestN']} students), sorted by "
               f"{metric_name(ctx)}; the selected model is in bold.")
    if has_ci and "NBootstrap" in ctx.n:
        caption += f" Intervals come from {ctx.n['NBootstrap']} bootstrap resamples of the test set."
    caption += " " + direction
    cols = "l" + "c" * (len(head) - 1)
    return ("\\begin{table}[tbp]\n\\caption{" + caption + "}\n\\label{tab:results}\n\\small\n"
            "\\setlength{\\tabcolsep}{4pt}\n\\fitcolumn{%\n\\begin{tabular}{" + cols + "}\n\\toprule\n" + " & ".join(head)
            + " \\\\\n\\midrule\n" + "\n".join(rows) + "\n\\bottomrule\n\\end{tabular}}\n\\end{table}")


def discussion(ctx: Ctx) -> str:
    n, c, best = ctx.n, ctx.cites, ctx.best
    blocks: dict[str, list[str]] = {}

    def add(key: str, text: str) -> None:
        if text:
            blocks.setdefault(key, []).append(text)

    latest = ctx.wave(ctx.predictor_waves[-1]) if ctx.predictor_waves else "the predictor waves"
    s = strength(ctx)
    what = "discrimination" if ctx.binary else "accuracy"
    info = f"information available by the {latest}" if ctx.has_waves else _information(ctx)
    lead = (f"{_cap_first(info)} was predictive of {outcome_sentence_np(ctx)} with "
            f"{s} {what}: the selected model" if ctx.claim("predicts_above_chance") == "supported" else
            f"Whether {info} predicts {outcome_sentence_np(ctx)} better than "
            "chance is not settled by these data: the selected model")
    unit, units = ctx.cluster, ctx.units
    add("performance",
        f"{lead}, {ctx.model_phrase(best)}, reached {primary_stmt(ctx)} on "
        f"{units} whose "
        + ((f"{unit} clusters " if ctx.grouping["reconstructed"] else f"{unit}s ") if ctx.school_split_ok
           else "records ")
        + "were not seen during training. Because the split, encoding and imputation were arranged "
        f"to prevent leakage, this estimate should be a fair guide to performance on similar {units} "
        + (f"in new {unit}s." if ctx.school_split_ok
           else f"drawn from the same {unit}s." if ctx.grouping["columns"] else "from the same population."))
    fam = model_family(best)
    if "contrast" in n and fam == "tree" and ctx.claim(f"outperforms_{n['contrast']}") != "supported":
        other = n["contrast"]
        add("models",
            f"{_cap_first(ctx.model_phrase(best))} and {ctx.model_phrase(other)} differed by "
            f"{n['MarginContrast']}, but their 95\\% intervals overlap, so these data do not establish that "
            "either predicts better than the other. Where transparency matters, as in advising or early-warning "
            "settings, the simpler model is then the natural default.")
    elif "contrast" in n:
        raw = float(n["MarginContrast:raw"])
        other = n["contrast"]
        if fam == "tree" and raw < 0.02:
            add("models",
                f"The tree ensemble improved on {ctx.model_phrase(other)} by only {n['MarginContrast']}. "
                "Most of the predictive signal is therefore captured by largely additive "
                "relationships, and where transparency matters, as in advising or early-warning "
                "settings, the simpler linear model may be preferable at little cost in accuracy.")
        elif fam == "tree":
            add("models",
                f"The tree ensemble improved on {ctx.model_phrase(other)} by {n['MarginContrast']}, "
                "which suggests that nonlinear relationships or interactions among the predictors "
                "carry information that a linear model misses. This gain comes at a cost in "
                "transparency, which SHAP attributions only partly offset.")
        elif fam == "linear":
            add("models",
                f"That {ctx.model_phrase(best)} matched or exceeded the tree-based "
                f"{ctx.model_phrase(other)} (difference {n['MarginContrast']}) indicates that the "
                "predictors relate to the outcome in largely additive ways. A transparent linear "
                "model is then a reasonable default, since its coefficients can be inspected directly.")
    ev = (ctx.results.get("selection_evidence") or {}).get("stacking_minus_selected") or {}
    ci = ev.get("ci") if isinstance(ev, dict) else None
    if (model_family(best) != "stacking" and isinstance(ci, list) and len(ci) == 2
            and all(isinstance(x, (int, float)) for x in ci) and ci[0] <= 0 <= ci[1]):
        add("models", "Stacking all models did not improve on the selected model either, which suggests that the "
                     "model families capture largely the same predictive signal in these data.")
    if ctx.top_features:
        feats = feature_names(ctx, 3)
        add("features",
            f"The features most predictive of the outcome, {join_list(feats)}, are consistent with "
            "the view that prior achievement, expectations and family background jointly shape "
            "students' educational trajectories"
            f"{c.citep(ctx.dataset_topic, 'edm', limit=2)}. These patterns "
            "should be read as predictive associations: a feature can rank highly because it is "
            "correlated with unmeasured factors, and the analysis does not show that changing it "
            "would change the outcome.")
    if ctx.binary:
        text = ("For practical use, a decision threshold would need to be chosen to reflect the "
                "relative costs of overlooking a student who needs support and of a false alarm")
        if ctx.mac(best, "brier"):
            text += (", and calibration would need checking (the Brier score of the selected model was "
                     f"{ctx.mac(best, 'brier')})")
        add("practice", text + ".")
    subgroups = ctx.spec.get("subgroups") or []
    if subgroups and not ctx.fairness_reported:
        labels = [lc_first(ctx.label_tex(g, "research_spec.json:subgroups")) for g in subgroups]
        add("fairness",
            f"The study specification names {join_list(labels)} as groups of interest, but this run "
            "did not report performance separately for these groups. Before any use in practice, "
            "accuracy and calibration should be compared across them"
            f"{c.citep('fairness', limit=2)}, since a model that is accurate on average can still "
            "serve some groups of students poorly.")
    elif ctx.fairness:
        add("fairness", _discussion_fairness(ctx))
    elif ctx.fairness_reported:
        fig = next((f for f in ctx.figures if f.kind in ("fairness", "subgroup", "subgroups")), None)
        ref = f" (Figure~\\ref{{{fig.label}}})" if fig else ""
        add("fairness", f"Performance was also reported for groups of students{ref}; differences between "
                     f"groups deserve attention before any use in practice{c.citep('fairness', limit=2)}.")
    st = ctx.stability
    if st.get("runs") and st.get("unstable") is not None:
        if not st.get("unstable") and ctx.claim("ranking_robust") != "supported":
            add("stability", "The stability analysis (Section~\\ref{sec:stability}) did not settle whether the ranking "
                         "of the most predictive features is robust, so the interpretation above is tentative.")
        elif st.get("unstable"):
            add("stability", "The stability analysis (Section~\\ref{sec:stability}) showed that the ranking of the "
                         "most predictive features changed under reasonable perturbations of the analysis, so "
                         "the interpretation above should be treated as tentative; the predictive performance "
                         "itself is a firmer result than the attribution of it to particular features.")
        else:
            add("stability", "The stability analysis (Section~\\ref{sec:stability}) supports these conclusions: "
                         "neither the predictive performance nor the set of most predictive features depended "
                         "on the imputation method, the particular training sample or the random seed.")
    rv = ctx.review
    verdict = escape_latex(rv.get("verdict", ""))
    score = n.get("ReviewScore")
    if ctx.unverified:
        add("review",
            f"The automated review of this study returned the verdict \\textsc{{{verdict.lower()}}}"
            + (f" with an overall score of {score} out of ten" if score else "")
            + (" and is marked as unverified" if rv.get("unverified") else "")
            + "; its issues are listed in Appendix~\\ref{app:review}, and the findings should be "
            "treated as provisional until they are addressed.")
    elif score:
        add("review", f"An automated review of the study passed it with an overall score of {score} "
                     "out of ten.")
    nar = _narrative()
    add("meaning", nar.meaning(ctx))
    add("practice", nar.practice(ctx))
    add("limits", nar.limits(ctx))
    add("future", nar.future(ctx))
    order = (ctx.outline or {}).get("discussion") or list(blocks)
    return "\n\n".join(t for key in [*order, *[k for k in blocks if k not in order]] for t in blocks.get(key, []))


def _discussion_fairness(ctx: Ctx) -> str:
    fa, c = ctx.fairness, ctx.cites
    flagged = [a for a, r in fa["attributes"].items() if r.get("kind") != "intersection"
               and any(isinstance(g, dict) and g.get("flagged") for g in (r.get("gaps") or {}).values())]
    unsettled = [a for a in flagged if ctx.claim(f"subgroup_gap_{a}") == "inconclusive"]
    flagged = [a for a in flagged if a not in unsettled]
    def names(attrs: list[str]) -> list[str]:
        return [f"\\emph{{{lc_first(ctx.t(clean_label(fa['attributes'][a].get('label') or a), f'results.json:fairness.attributes.{a}.label'))}}}"
                for a in attrs]

    labels = names(flagged)
    extra = (f" For {join_list(names(unsettled))}, the gaps exceeded the threshold but could not be distinguished "
             "from sampling variation or rest on small groups, so the evidence on them is inconclusive."
             if unsettled else "")
    if flagged:
        text = ("The subgroup audit (Section~\\ref{sec:fairness}) showed that the model does not predict "
                f"equally well for all students: gaps above the flagging threshold appeared for {join_list(labels)}. "
                "Such gaps describe where the model's predictions are less accurate or its errors more frequent; "
                "they do not show that group membership influences the outcome. If the model were used to "
                "allocate support, its errors would fall unevenly across these groups, so "
                "group-specific thresholds, recalibration or additional predictors would need to be considered"
                f"{c.citep('fairness', limit=2)}.")
    else:
        text = ("The subgroup audit (Section~\\ref{sec:fairness}) found no gap above the flagging threshold, "
                "although small groups could not be assessed reliably and the audit should be repeated before "
                f"any use in practice{c.citep('fairness', limit=2)}.")
    return text + extra


def limitations(ctx: Ctx) -> str:
    n = ctx.n
    items = ["The analysis is predictive and observational. Associations between predictors and "
             "the outcome should not be interpreted as causal."]
    for i, text in enumerate(ctx.spec.get("limitations") or []):
        if re.search(r"\bcausal\b", text, re.I):
            continue  # the first item already says it
        items.append(_sentence(ctx.t(text.strip(), f"research_spec.json:limitations.{i}")))
    for i, text in enumerate(ctx.data.get("warnings") or []):
        items.append("Data preparation warning: "
                     + _sentence(ctx.t(text.strip(), f"data_report.json:warnings.{i}")))
    from . import analyses  # noqa: PLC0415

    for extra in (analyses.errors_sentence(ctx), analyses.other_flags_sentence(ctx)):
        if extra:
            items.append(extra)
    unreliable = [g for r in ctx.fairness.get("attributes", {}).values() if r.get("kind") != "intersection"
                  for g in r.get("groups") or [] if not g.get("reliable", True)]
    if unreliable:
        items.append("Some groups of students were too small for a reliable subgroup estimate, so the audit "
                     "cannot show whether the model serves them as well as larger groups.")
    g, unit = ctx.grouping, ctx.cluster
    if ctx.school_split_ok and g["reconstructed"]:
        items.append(f"{_cap_first(unit)} clusters were reconstructed from {unit}-level characteristics rather than "
                     f"from {unit} identifiers, so some {unit}s may have been merged or split; the "
                     f"separation of training and test {unit}s is therefore approximate.")
    elif not ctx.school_split_ok:
        items.append(f"{_cap_first(ctx.units)} from the same {unit} may appear in both the training and the test set, "
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


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def hyperparameter_table(ctx: Ctx) -> str:
    rows = []
    for name, info in ctx.results["models"].items():
        params = info.get("best_params") or {}
        if not params:
            continue
        for k, (p, v) in enumerate(sorted(params.items())):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                val = ctx.m.add(macro_name(name, "Param", p), fmt_plain(v), v,
                                f"results.json:models.{name}.best_params.{p}")
            elif isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
                val = ", ".join(ctx.model_label(x) if x in ctx.results["models"] else escape_latex(x) for x in v)
            elif isinstance(v, (list, tuple)):
                val = "(" + ", ".join(ctx.t(str(x), f"results.json:models.{name}.best_params.{p}") for x in v) + ")"
            else:
                val = ctx.t(str(v), f"results.json:models.{name}.best_params.{p}")
            pname = escape_latex(p.split("__")[-1])
            rows.append(f"{ctx.model_label(name) if k == 0 else ''} & \\texttt{{{pname}}} & {val} \\\\")
        rows.append("\\addlinespace")
    if not rows:
        return ""
    if rows[-1] == "\\addlinespace":
        rows.pop()
    cv = []
    for name in ctx.results["models"]:
        if f"{name}|cv" in ctx.n:
            cv.append(f"{ctx.model_phrase(name)} {ctx.n[f'{name}|cv']}")
    text = ("\\section{Tuned Hyperparameters}\\label{app:hyperparameters}\n"
            "Table~\\ref{tab:hyperparameters} lists the hyperparameters selected by cross-validation "
            "on the training set.")
    if cv:
        text += f" The mean cross-validated {metric_name(ctx)} was {join_list(cv)}."
    return (text + "\n\n\\begin{table}[tbp]\n\\caption{Hyperparameters selected on the training set.}\n"
            "\\label{tab:hyperparameters}\n\\small\n"
            "\\begin{tabularx}{\\columnwidth}{@{}ll"
            ">{\\raggedleft\\arraybackslash}X@{}}\n\\toprule\n"
            "Model & Parameter & Value \\\\\n\\midrule\n" + "\n".join(rows)
            + "\n\\bottomrule\n\\end{tabularx}\n\\end{table}")


def review_appendix(ctx: Ctx) -> str:
    rv = ctx.review
    verdict = escape_latex(rv.get("verdict", ""))
    text = ("\\section{Automated Review Issues}\\label{app:review}\n"
            f"The automated review (round "
            f"{ctx.m.count('ReviewRound', rv.get('round', 0), 'review_report.json:round')}, "
            f"{escape_latex(rv.get('backend', ''))} backend) returned the verdict \\textbf{{{verdict}}}")
    if "ReviewScore" in ctx.n:
        text += f" with an overall score of {ctx.n['ReviewScore']} out of ten"
    text += "."
    dims = rv.get("dimension_scores") or {}
    if dims:
        parts = []
        for k, v in dims.items():
            if isinstance(v, (int, float)):
                mac = ctx.m.add(macro_name("ReviewDim", k), f"{float(v):.1f}", float(v),
                                f"review_report.json:dimension_scores.{k}")
                parts.append(f"{escape_latex(k.replace('_', ' '))} {mac}")
        text += " Dimension scores: " + "; ".join(parts) + "."
    issues = rv.get("issues") or []
    if not issues:
        return text + " The review listed no issues."
    lines = []
    for i, iss in enumerate(issues):
        src = f"review_report.json:issues.{i}"
        line = (f"\\textbf{{{escape_latex(iss.get('id', ''))}}} "
                f"({escape_latex(iss.get('severity', ''))}; stage: "
                f"{escape_latex(iss.get('target_stage', ''))}): "
                + _sentence(ctx.t(iss.get("description", ""), src + ".description")))
        if iss.get("recommendation"):
            line += (" \\emph{Recommendation:} "
                     + _sentence(ctx.t(iss["recommendation"], src + ".recommendation")))
        lines.append("  \\item " + line)
    return text + "\n\\begin{itemize}\n" + "\n".join(lines) + "\n\\end{itemize}"


def unverified_block(ctx: Ctx) -> str:
    rv = ctx.review
    verdict = escape_latex(rv.get("verdict", ""))
    why = []
    if rv.get("verdict") != "PASS":
        why.append(f"the automated review returned \\textbf{{{verdict}}}")
    if rv.get("unverified"):
        why.append("the review itself is marked as unverified")
    rubric = rv.get("rubric_verdict")
    if rubric not in (None, "PASS", rv.get("verdict")):
        why.append(f"the review's rubric returned \\textbf{{{escape_latex(rubric)}}}")
    return ("\\unverifiedbox{\\textbf{Unverified draft.} This paper was generated automatically by "
            f"EDM-ARS and has not passed review: {join_list(why)}. Its findings are provisional; the "
            "reviewer's issues are listed in Appendix~\\ref{app:review}.}")


# ---- word counts ---------------------------------------------------------------------------------
def word_count(tex: str) -> int:
    """Approximate words of running text: floats, comments, labels and citations are dropped;
    a macro use (\\BestAUC{}) or a reference counts as one word."""
    text = re.sub(r"\\begin\{(table|figure)\}.*?\\end\{\1\}", " ", tex, flags=re.S)
    text = re.sub(r"(?<!\\)%.*$", " ", text, flags=re.M)
    text = re.sub(r"\\(?:label|cite[tp]?|begin|end)\{[^}]*\}", " ", text)
    text = re.sub(r"\\ref\{[^}]*\}", " X ", text)
    text = re.sub(r"\\[A-Za-z]+\{\}", " X ", text)
    text = re.sub(r"\\[A-Za-z]+", " ", text)
    text = re.sub(r"[{}\[\]~]", " ", text)
    return len([w for w in text.split() if re.search(r"[A-Za-z0-9]", w)])
