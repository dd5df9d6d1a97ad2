"""The comparison evidence of results.json: for two models, whether the first is better than, worse than or not
distinguishable from the second, and what artifact says so (read by the consistency check, the claims module and the
Writer).

The evidence (:func:`comparison_evidence`) is, strongest first: the paired comparisons of the selected model with
every other model and baseline (``paired_comparisons``: bootstrap difference, interval, Holm-adjusted p), then
``selection_evidence.stacking_minus_selected``, and - only for results without paired comparisons - whether two
models' intervals of the primary metric overlap.

To add a kind of comparison evidence (e.g. paired comparisons of every pair of models), add a reader to
:data:`EVIDENCE_READERS`: a function of results.json returning :class:`Evidence` records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edm_ars.core.conventions import MODEL_ORDER, STACKING
from edm_ars.core.text import is_number

HIGHER_IS_BETTER = {"auc": True, "r2": True, "balanced_accuracy": True, "accuracy": True, "f1": True,
                    "precision": True, "recall": True, "rmse": False, "mae": False, "brier": False}

# ---- the evidence ----------------------------------------------------------------------------------------
BETTER, WORSE, INDISTINCT = "better", "worse", "indistinct"
_FLIP = {BETTER: WORSE, WORSE: BETTER, INDISTINCT: INDISTINCT}


@dataclass(frozen=True)
class Evidence:
    """A comparison of models a and b on one metric: a is `verdict` (better, worse, indistinct) than b."""

    a: str
    b: str
    metric: str
    kind: str  # paired | intervals
    verdict: str
    source: str  # the artifact keys it was read from
    detail: str

    def oriented(self, x: str, y: str) -> Evidence:
        """The same evidence read as x against y."""
        if (x, y) == (self.a, self.b):
            return self
        return Evidence(y, x, self.metric, self.kind, _FLIP[self.verdict], self.source, self.detail)


def _ci(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and len(v) == 2 and all(is_number(x) for x in v)


def stacking_base(results: dict[str, Any]) -> str | None:
    """The single model stacking was compared with: the simplest of the models whose intervals overlap the top
    single model's (analysis.select_best), as selection_evidence records them."""
    ev = results.get("selection_evidence") or {}
    models = results.get("models") or {}
    tied = [m for m in ev.get("overlapping_top") or [] if m in models]
    if not tied:
        return ev.get("top_single") if ev.get("top_single") in models else None
    primary = results.get("primary_metric")
    sign = 1 if HIGHER_IS_BETTER.get(primary, True) else -1

    def key(m: str) -> tuple[int, float]:
        value = ((models[m].get("metrics") or {}).get(primary))
        rank = MODEL_ORDER.index(m) if m in MODEL_ORDER else 99
        return rank, -sign * value if is_number(value) else 0.0

    return min(tied, key=key)


def _paired_verdict(ci: list[float], higher: bool) -> str:
    if ci[0] > 0:
        return BETTER if higher else WORSE
    if ci[1] < 0:
        return WORSE if higher else BETTER
    return INDISTINCT


def _paired_stacking(results: dict[str, Any]) -> list[Evidence]:
    diff = (results.get("selection_evidence") or {}).get("stacking_minus_selected")
    base = stacking_base(results)
    if not (isinstance(diff, dict) and _ci(diff.get("ci")) and base and STACKING in (results.get("models") or {})):
        return []
    primary = results.get("primary_metric", "")
    lo, hi = diff["ci"]
    return [Evidence(STACKING, base, primary, "paired", _paired_verdict([lo, hi], HIGHER_IS_BETTER.get(primary, True)),
                     "results.json:selection_evidence.stacking_minus_selected",
                     f"paired bootstrap difference {STACKING} - {base}: 95% interval [{lo:+.4f}, {hi:+.4f}]")]


def compared_models(results: dict[str, Any]) -> dict[str, Any]:
    """Every model a comparison may name: the battery's models and the baselines (results.json baselines)."""
    base = results.get("baselines") if isinstance(results.get("baselines"), dict) else {}
    return {**base, **(results.get("models") or {})}


def _paired_list(results: dict[str, Any]) -> list[Evidence]:
    """Paired comparisons recorded as a list of {a, b, metric, mean, ci} (results.json paired_comparisons), with
    the bootstrap p-value and its Holm adjustment over the selected model's comparisons where recorded (p, p_holm):
    a difference whose Holm-adjusted p is not under the recorded level (comparison_alpha) is not distinguishable,
    whatever its unadjusted interval."""
    out = []
    models = compared_models(results)
    alpha = results.get("comparison_alpha") if is_number(results.get("comparison_alpha")) else 0.05
    for i, rec in enumerate(results.get("paired_comparisons") or []):
        if not (isinstance(rec, dict) and rec.get("a") in models and rec.get("b") in models and _ci(rec.get("ci"))):
            continue
        metric = rec.get("metric") or results.get("primary_metric", "")
        lo, hi = rec["ci"]
        verdict = _paired_verdict([lo, hi], HIGHER_IS_BETTER.get(metric, True))
        adjusted = is_number(rec.get("p_holm"))
        if adjusted and rec["p_holm"] >= alpha:
            verdict = INDISTINCT
        holm = f", Holm-adjusted p {rec['p_holm']:.4f}" if adjusted else ""
        out.append(Evidence(rec["a"], rec["b"], metric, "paired", verdict, f"results.json:paired_comparisons.{i}",
                            f"paired difference {rec['a']} - {rec['b']}: 95% interval [{lo:+.4f}, {hi:+.4f}]{holm}"))
    return out


def _intervals(results: dict[str, Any]) -> list[Evidence]:
    """Overlap of two models' intervals: evidence only for results without paired comparisons (artifacts from
    before every comparison of the selected model was paired); with them, a claim rests on a paired comparison."""
    if results.get("paired_comparisons"):
        return []
    primary = results.get("primary_metric", "")
    higher = HIGHER_IS_BETTER.get(primary, True)
    models = results.get("models") or {}
    have = [m for m in models if _ci((models[m].get("ci") or {}).get(primary))]
    out = []
    for i, a in enumerate(have):
        for b in have[i + 1:]:
            ca, cb = models[a]["ci"][primary], models[b]["ci"][primary]
            if ca[0] > cb[1]:
                verdict = BETTER if higher else WORSE
            elif cb[0] > ca[1]:
                verdict = WORSE if higher else BETTER
            else:
                verdict = INDISTINCT
            out.append(Evidence(a, b, primary, "intervals", verdict,
                                f"results.json:models.{a}.ci.{primary}, results.json:models.{b}.ci.{primary}",
                                f"95% intervals of {primary} [{ca[0]:.4f}, {ca[1]:.4f}] ({a}) and "
                                f"[{cb[0]:.4f}, {cb[1]:.4f}] ({b}) "
                                + ("overlap" if verdict == INDISTINCT else "do not overlap")))
    return out


#: readers of comparison evidence, strongest first (a pair's first record is the one a claim is held to)
EVIDENCE_READERS: list[Callable[[dict[str, Any]], list[Evidence]]] = [_paired_list, _paired_stacking, _intervals]


def comparison_evidence(results: dict[str, Any]) -> list[Evidence]:
    return [e for reader in EVIDENCE_READERS for e in reader(results)]


def evidence_for(evidence: list[Evidence], x: str, y: str, kind: str | None = None) -> Evidence | None:
    """The strongest evidence comparing x and y (of `kind` when given), read as x against y."""
    for e in evidence:
        if {e.a, e.b} == {x, y} and (kind is None or e.kind == kind):
            return e.oriented(x, y)
    return None
