"""The context the causal paper's sections write from (causal/sections.py): the artifacts, the number macros
(registered by causal/paper.py) and the citations."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from edm_ars.core.errors import EdmArsError
from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import clean_label, lc_first
from edm_ars.writer.context import Citations
from edm_ars.writer.integrity import unverified_reasons
from edm_ars.writer.macros import MacroTable, fmt_metric, text_with_macros


@dataclass
class CausalCtx:
    """What the causal sections write from: the artifacts, the macros (``n``: named uses of them) and citations."""

    spec: dict[str, Any]
    lit: dict[str, Any]
    data: dict[str, Any]
    results: dict[str, Any]
    review: dict[str, Any]
    m: MacroTable
    cites: Citations
    dataset: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    recovery: dict[str, Any] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)  # the registry's published findings
    figures: dict[str, str] = field(default_factory=dict)  # balance/overlap -> figures/<file>
    n: dict[str, str] = field(default_factory=dict)
    digits: int = 2  # decimals of the effect estimates (3 on a proportion's scale)

    def t(self, text: Any, source: str) -> str:
        """Artifact free text, escaped, with its numbers turned into quoted macros."""
        return text_with_macros(" ".join(str(text or "").split()), self.m, source)

    # -- the study's facts -----------------------------------------------------------------------------------
    @property
    def randomized(self) -> bool:
        return self.design == "randomized"

    @property
    def design(self) -> str:
        return str(self.results.get("design") or self.spec["design"]["kind"])

    @property
    def generated(self) -> bool:
        return (self.provenance.get("data") or {}).get("kind") == "generated"

    @property
    def unverified(self) -> bool:
        return bool(unverified_reasons(self.review))

    @property
    def treatment(self) -> dict[str, Any]:
        return self.spec["treatment"]

    @property
    def phrase(self) -> str:
        """The treatment as the paper names it: treatment.phrase ('a small class', 'math tutoring'), else its first
        phrase (the lint lets a causal sentence pass only when it names one of treatment.phrases)."""
        phrases = self.treatment.get("phrases") or []
        if not phrases:
            raise EdmArsError("research_spec.json: treatment.phrases is empty: the causal paper names the treatment "
                              "by one of its phrases")
        return escape_latex(str(self.treatment.get("phrase") or phrases[0]))

    @property
    def control_phrase(self) -> str:
        """The comparison as the paper names it (treatment.control_phrase: 'a regular class', 'no math tutoring'),
        else the control arm's label in lower case."""
        tr = self.treatment
        if tr.get("control_phrase"):
            return escape_latex(str(tr["control_phrase"]))
        return lc_first(self.arm("control"))

    def arm_units(self, which: str, *, those: bool = False) -> str:
        """The members of an arm in words: 'students assigned to a small class' (randomized), 'students with math
        tutoring' (observational); `those`: 'those assigned to a regular class'."""
        phrase = self.phrase if which == "treated" else self.control_phrase
        who = "those" if those else self.ds["units"]
        return f"{who} assigned to {phrase}" if self.randomized else f"{who} with {phrase}"

    @property
    def the_outcome(self) -> str:
        """The outcome in running text: 'the total of the kindergarten reading and mathematics scaled scores'."""
        text = lc_first(self.outcome)
        return text if re.match(r"(the|a|an)\s", text, re.I) else "the " + text

    @property
    def phrases(self) -> list[str]:
        """The treatment's phrases (a plural when there is one: 'small classes')."""
        return [escape_latex(str(p)) for p in self.treatment.get("phrases") or []]

    def arm(self, which: str) -> str:
        """'small class' / 'regular class': the arm's label (treated_label, control_label), else its value."""
        tr = self.treatment
        label = tr.get(f"{which}_label") or tr.get(which)
        return self.t(label, f"research_spec.json:treatment.{which}_label" if tr.get(f"{which}_label")
                      else f"research_spec.json:treatment.{which}")

    @property
    def outcome(self) -> str:
        o = self.spec["outcome"]
        return self.t(clean_label(o.get("label") or o["name"]), "research_spec.json:outcome.label")

    @property
    def ds(self) -> dict[str, str]:
        d = self.dataset or {}
        out = {k: escape_latex(" ".join(str(d.get(k) or "").split()))
               for k in ("short", "long", "agency", "about", "source", "design", "unit", "units")}
        out["short"] = out["short"] or escape_latex(str(self.spec.get("dataset") or "the data set"))
        out["unit"] = out["unit"] or "student"
        out["units"] = out["units"] or "students"
        return out

    def covariate_label(self, name: str) -> str:
        for c in self.spec.get("covariates") or []:
            if c.get("name") == name and c.get("label"):
                return clean_label(str(c["label"]))
        for c in self.data.get("covariates") or []:
            if c.get("name") == name and c.get("label"):
                return clean_label(str(c["label"]))
        return name

    def feature_label(self, feature: str, covariate: str | None = None) -> str:
        """A frame column's readable name (escaped), as the love plot names it (causal.figures.feature_label):
        x__gender=Female -> 'Gender: Female', x__ethnicity__missing -> 'Ethnicity: missing'."""
        from edm_ars.causal.labels import feature_label

        name = feature[3:] if feature.startswith("x__") else feature
        var = name.removesuffix("__missing").partition("=")[0]
        cov = covariate or var
        return escape_latex(feature_label(feature, cov, {cov: self.covariate_label(cov)}))

    def interval(self, key: str) -> str:
        """'95\\% CI [lo, hi]' of the estimate registered under `key` (naive, primary, adjusted, ...)."""
        return f"{self.level} CI [{self.n[key + '|lo']}, {self.n[key + '|hi']}]"

    @property
    def level(self) -> str:
        return self.n["level"]

    def estimator(self, key: str) -> str:
        """The estimator of results.json:<key> as it names it ('difference in means with block fixed effects')."""
        rec = self.results.get(key) or {}
        return self.t(rec.get("estimator") or key, f"results.json:{key}.estimator")

    def fmt(self, value: float) -> str:
        """An effect-sized number at the paper's precision."""
        return fmt_metric(value, self.digits)
