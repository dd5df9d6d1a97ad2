"""The shared context every section writes from: the run's artifacts, its number macros and citations (the
macros themselves are defined by writer/numbers.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from edm_ars.core.conventions import LOWER_IS_BETTER, level_slug
from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import MODEL_NAMES, clean_label, join_list, lc_first, model_family
from edm_ars.formulate.bibliography import entry_head, with_key
from edm_ars.writer.integrity import unverified_reasons
from edm_ars.writer.macros import MacroTable, text_with_macros
from edm_ars.writer.phrases import Phrases


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
            if not entry_head(p.get("bibtex") or ""):
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
                return with_key(p["bibtex"].strip(), key)  # the entry's own key must be the cited key
        raise KeyError(key)


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
    ph: Phrases  # the fixed sentences (config/prompts/phrases.yaml)
    figures: list[Figure] = field(default_factory=list)
    n: dict[str, str] = field(default_factory=dict)  # named number uses, e.g. n["TestN"]
    fig_refs: dict[str, str] = field(default_factory=dict)  # figure label -> Results subsection citing it
    claims: dict[str, str] = field(default_factory=dict)  # claim id -> supported | inconclusive | unsupported
    claims_doc: dict[str, Any] = field(default_factory=dict)  # claims.json
    outline: dict[str, Any] = field(default_factory=dict)  # writer.outline.choose
    registry_groups: dict[str, str] = field(default_factory=dict)  # variable -> registry group
    dataset: dict[str, Any] = field(default_factory=dict)  # the registry's prose (names, design, unit, waves)
    notation: frozenset[str] = frozenset()  # the template's label macros (\Rsq): text, not numbers
    provenance: dict[str, Any] = field(default_factory=dict)  # output/paper/provenance.json (rule provenance)
    recovery: dict[str, Any] = field(default_factory=dict)  # output/paper/recovery.json (generated data only)
    sample: dict[str, Any] = field(default_factory=dict)  # the engineer's sample.json (Table 1, sample flow)
    registry_values: dict[str, dict[str, str]] = field(default_factory=dict)  # variable -> {code: value label}
    selection: dict[str, Any] = field(default_factory=dict)  # output/selection.json (the ranked branches)
    drafts: dict[str, Any] = field(default_factory=dict)  # output/branches.json (candidate studies, earlier ones)

    def __post_init__(self) -> None:
        if self.ph.facts is None:  # the phrases say the study's own facts in their `{study_...}` slots
            self.ph = self.ph.with_facts(self.study_fact)

    def study_fact(self, name: str) -> str | None:
        """A fact of this study for a phrase's `{study_<name>}` slot (Phrases.with_facts): `study_data` the data's
        name as a noun ('Project STAR data', 'generated HSLS:09-like data'), `study_short` its short name,
        `study_outcome` the outcome's label in running text; None for any other name."""
        facts = {"study_data": lambda: self.data_noun(), "study_short": lambda: self.short,
                 "study_outcome": lambda: self.outcome_phrase}
        return facts[name]() if name in facts else None

    def data_noun(self, studied: bool = True) -> str:
        """The data set's short name as a noun for 'the ...': 'Project STAR data', 'London exam data'; the rows this
        study analysed, when generated, are named as such ('generated HSLS:09-like data'), while `studied=False`
        names the data set itself (what other studies used)."""
        short = self.short
        if studied and self.generated:
            return self.ph("common.generated_data_name", short=short)
        return short if short.lower().endswith(("data", "data set", "dataset")) else short + " data"

    def level_label(self, variable: str, slug: str) -> str:
        """The readable name of a one-hot column's level (`<variable>__<slug>`): the registry's value label whose
        code gives that slug, else the slug with spaces."""
        for code, label in self.registry_values.get(variable, {}).items():
            if level_slug(code) == slug:
                return str(label)
        return slug.replace("_", " ")

    @property
    def generated(self) -> bool:
        """True when the rows were generated (provenance kind `generated`): the paper says so and reports the
        recovery of the planted structure instead of substantive findings."""
        return (self.provenance.get("data") or {}).get("kind") == "generated"

    def claim(self, id_: str) -> str:
        """The results debate's status of a claim ('unsupported' when the debate did not make it): the
        paper states supported claims, states inconclusive ones as such, and omits the rest. A robust ranking
        judged by the top five of at most five features holds by construction: no finding, so omitted."""
        if id_ == "ranking_robust" and self.all_in_top(5):
            return "unsupported"
        return self.claims.get(id_, "unsupported")

    @property
    def n_ranked(self) -> int | None:
        """How many variables the SHAP rankings rank: the predictors (the sources of the model features, one-hot
        columns summed per source), from data_report.json predictors_before; None when not recorded."""
        before = self.data.get("predictors_before")
        return len(before) if isinstance(before, list) and before else None

    def all_in_top(self, k: int) -> bool:
        """True when there are at most `k` predictors: every top-k set then holds all of them, so an agreement
        or overlap of top-k sets is true by construction and is not reported as a finding."""
        n = self.n_ranked
        return n is not None and n <= k

    # -- basic facts ---------------------------------------------------------------------
    @property
    def binary(self) -> bool:
        return self.results.get("task", self.spec.get("task")) == "binary_classification"

    @property
    def ds(self) -> dict[str, Any]:
        """What the registry says about the data set, escaped for LaTeX (a neutral description without it)."""
        if not self.dataset:
            name = escape_latex(str(self.spec.get("dataset") or self.ph("common.dataset_unnamed")).upper())
            return {"short": name, "long": self.ph("common.dataset_long", name=name), "agency": "", "about": "",
                    "source": "", "design": "", "unit": self.ph("common.unit"), "units": self.ph("common.units"),
                    "used_for": "", "waves": {}, "wave_order": [], "grouping": None}
        d = self.dataset

        def esc(value: Any) -> str:
            return escape_latex(" ".join(str(value or "").split()))

        rows = bool((self.data.get("split") or {}).get("repeated"))  # long format: a row is a record, not a unit
        return {**{k: esc(d.get(k)) for k in ("short", "long", "agency", "about", "source", "design", "used_for")},
                "unit": self.ph("common.record") if rows else esc(d.get("unit") or self.ph("common.unit")),
                "units": self.ph("common.records") if rows else esc(d.get("units") or self.ph("common.units")),
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
    def records_without_waves(self) -> bool:
        """Repeated records of each unit (registry dataset.repeated) in data whose registry declares no waves: not a
        cross-section, but nothing says which records precede the outcome."""
        return bool(self.repeated) and not self.has_waves

    def repeated_order(self) -> str:
        """'each child's records are ordered by \\texttt{year}' (or '... are not ordered' without a time column)."""
        rep = self.repeated or {}
        time = rep.get("time")
        if time:
            return self.ph("common.repeated_ordered", unit=rep["unit"], time=f"\\texttt{{{escape_latex(str(time))}}}")
        return self.ph("common.repeated_unordered", unit=rep["unit"])

    @property
    def units(self) -> str:
        """The noun of a row where the paper counts rows: the registry's unit, or 'records' for repeated records."""
        return self.ds["units"]

    @property
    def people(self) -> str:
        """The noun of whom the paper speaks where it does not count rows (a cohort of children, a child's outcome):
        the unit of the repeated records when the registry declares them, else the row noun."""
        return self.repeated["units"] if self.repeated else self.ds["units"]

    def units_of(self, which: str) -> str:
        """The row noun after a count of rows, with the number of units beside it when the rows are repeated records
        ('records of \\AnalyticUnits{} children'); `which` is 'Analytic', 'Train' or 'Test' (numbers.register_numbers)."""
        macro = self.n.get(f"{which}Units")
        if not self.repeated or not macro:
            return self.units
        return self.ph("common.records_of_units", records=self.units, n=macro, units=self.repeated["units"])

    @property
    def person(self) -> str:
        """The singular of :attr:`people`."""
        return self.repeated["unit"] if self.repeated else self.ds["unit"]

    @property
    def grouping(self) -> dict[str, Any]:
        """{unit, columns, reconstructed}: the registry's, else the data report's, else reconstructed schools."""
        g = self.ds.get("grouping") or self.data["split"].get("grouping")
        if g:
            return {"unit": escape_latex(str(g.get("unit") or self.ph("common.cluster"))),
                    "columns": list(g.get("columns") or []), "reconstructed": bool(g.get("reconstructed"))}
        # artifacts from before registries described clusters: schools reconstructed from a fingerprint
        columns = (self.data["split"]["school_reconstruction"].get("columns")
                   or [self.ph("common.cluster_fingerprint")])
        return {"unit": self.ph("common.cluster"), "columns": list(columns), "reconstructed": True}

    @property
    def cluster(self) -> str:
        """The cluster the split kept together: the grouping's unit, or the one level it kept of several
        (data_report.json:split.cluster_levels, registry dataset.grouping.split_by)."""
        kept = [lv["unit"] for lv in self.kept_levels]
        return kept[0] if len(kept) == 1 else self.grouping["unit"]

    @property
    def kept_levels(self) -> list[dict[str, Any]]:
        """The cluster levels the split kept together when the registry declares more than one (empty: one)."""
        return [lv for lv in (self.data.get("split") or {}).get("cluster_levels") or [] if lv.get("kept_together")]

    @property
    def repeated(self) -> dict[str, Any] | None:
        """The unit whose repeated records the split kept together (data_report.json:split.repeated, from the
        registry's dataset.repeated), its nouns and id column escaped; None when every row is its own unit."""
        r = (self.data.get("split") or {}).get("repeated")
        if not r:
            return None
        unit = str(r.get("unit") or "unit")
        return {**r, "unit": escape_latex(unit), "units": escape_latex(str(r.get("units") or f"{unit}s")),
                "id": escape_latex(str(r.get("id")))}

    @property
    def split_groups_kind(self) -> str:
        """What the split's groups (the draws of the cluster bootstrap) are: 'cluster' (the clusters), 'unit' (the
        units of repeated records, no cluster) or 'joined' (clusters joined by units who moved between them)."""
        split = self.data.get("split") or {}
        if split.get("grouped_by") == "unit":
            return "unit"
        if len(self.kept_levels) > 1:  # clusters of several levels joined by the rows they share
            return "levels"
        if (split.get("grouped_by") == "cluster_and_unit"
                and split.get("n_groups") != (split.get("school_reconstruction") or {}).get("n_clusters")):
            return "joined"
        return "cluster"

    @property
    def split_by(self) -> str:
        """'by reconstructed school clusters ', 'by school ', 'by child ' (repeated records without clusters: each
        child's records kept together) or '' (how the split kept clusters together)."""
        if self.data["split"].get("grouped_by") == "unit":
            return self.ph("common.split_by_cluster", cluster=self.person) + " "
        if not self.school_split_ok:
            return ""
        if self.grouping["reconstructed"]:
            return self.ph("common.split_by_reconstructed_clusters", cluster=self.cluster) + " "
        return self.ph("common.split_by_cluster", cluster=self.cluster) + " "

    @property
    def short(self) -> str:
        return self.ds["short"]

    @property
    def full_name(self) -> str:
        """The long name with the short one in parentheses unless the long one holds it, without a leading article
        (every sentence that names the data set adds its own: "Using the ...")."""
        long, short = re.sub(r"^(the|a|an)\s+", "", self.ds["long"], flags=re.I), self.ds["short"]
        return long if not long or short.lower() in long.lower() else f"{long} ({short})"

    @property
    def dataset_topic(self) -> str:
        """The curated-bibliography topic of the data set ('' when the bibliography has none)."""
        if self.dataset:
            return str(self.dataset.get("topic") or "")
        return str(self.spec.get("dataset") or "").lower()

    @property
    def waves_text(self) -> str:
        if self.records_without_waves:
            return self.ph("common.waves_repeated")
        if not self.has_waves:
            return self.ph("common.waves_cross_section")
        waves = join_list([self.wave_of_predictors(w) for w in self.predictor_waves])
        return self.ph("common.waves_listed", waves=waves) if waves else self.ph("common.waves_unlisted")

    def wave_of_predictors(self, key: str) -> str:
        """A wave where a sentence says "N predictors from the <wave>": its prose (the occasion, as
        registry/README.md documents it), unless the prose names a variable of the registry, when it would read
        as the list of the predictors ("measures at entry (primary school attended and verbal reasoning score)"
        with the school no predictor): then the wave's label ("the intake wave")."""
        prose = str((self.dataset.get("waves") or {}).get(str(key)) or "").lower()
        named = [lab for lab in self.registry_labels.values()
                 if len(clean_label(lab)) >= 4 and re.search(r"\b" + re.escape(clean_label(lab).lower()) + r"\b", prose)]
        if not named:
            return self.wave(key)
        label = (self.dataset.get("wave_labels") or {}).get(str(key)) or str(key).replace("_", " ")
        return self.ph("common.wave_named", name=escape_latex(" ".join(str(label).split())))

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
            if self.records_without_waves:
                return self.ph("common.wave_repeated", order=self.repeated_order())
            return self.ph("common.wave_cross_section") if not self.has_waves else self.ph("common.wave_unrecorded")
        return self.ds["waves"].get(str(key)) or self.ph("common.wave_named",
                                                          name=escape_latex(str(key).replace("_", " ")))

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

    def label_source(self, name: str, fallback: str) -> str:
        """Where var_label finds a predictor's label, as a source path (verify-paper reads the numbers a label quotes
        there: "family income above 25000 USD"); `fallback` when it is not a labelled predictor of the specification."""
        for i, p in enumerate(self.spec.get("predictors", [])):
            if p.get("name") == name and p.get("label"):
                return f"research_spec.json:predictors.{i}.label"
        return fallback

    @property
    def outcome_label(self) -> str:
        o = self.spec["outcome"]
        return self.t(clean_label(o.get("label") or self.var_label(o["name"])),
                      "research_spec.json:outcome.label")

    @property
    def outcome_phrase(self) -> str:
        """The outcome's label inside a sentence ('ever attended college ...'; an acronym keeps its case)."""
        return lc_first(self.outcome_label)

    @property
    def positive(self) -> str:
        pos = self.spec["outcome"].get("positive_label")
        return self.t(pos, "research_spec.json:outcome.positive_label") if pos else self.ph("common.positive_class")

    @property
    def baselines(self) -> dict[str, dict[str, Any]]:
        """The baselines (results.json baselines): fitted and evaluated like the models, never selected."""
        b = self.results.get("baselines")
        return {k: v for k, v in b.items() if isinstance(v, dict)} if isinstance(b, dict) else {}

    def model_label(self, name: str) -> str:
        if name in self.baselines and self.baselines[name].get("label"):
            return self.t(self.baselines[name]["label"], f"results.json:baselines.{name}.label")
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
        rec = self.results["models"].get(model) or self.baselines.get(model) or {}
        return rec.get("metrics", {}).get(metric)

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
