"""The debate on the results: which claims the paper may make, each with its evidence.

Before the Critic reads a round, three lenses weigh every candidate claim the results could support:
the optimist (does the point estimate say so?), the skeptic (does the uncertainty allow it: interval,
paired difference, stability across perturbations, reliable group sizes?) and the methodologist (is the
design fit to support it: quality floor, leakage signal, failed phases?). A synthesizer then gives each
claim the most conservative of the three judgments: ``supported`` (the paper may state it),
``inconclusive`` (the paper may only say that the evidence does not settle it) or ``unsupported`` (the
paper does not make it). Every claim carries its evidence as (artifact, key, value) read from the
artifacts by code.

Offline, the lenses are the rules below. With a model, the three lenses and the synthesizer are
prompted (config/prompts/debate.yaml); the model may only make a code claim *more* conservative, and a
claim it adds is kept only with evidence that resolves in the artifacts (values are read by code, never
taken from the model)."""

from __future__ import annotations

from typing import Any

from edm_ars.core.conventions import STACKING, applied_threshold
from edm_ars.core.text import is_number

STATUSES = ("supported", "inconclusive", "unsupported")  # most to least permissive
ROLES = ("optimist", "skeptic", "methodologist")
CHANCE = {"auc": 0.5, "r2": 0.0}


def lookup(doc: Any, key: str) -> Any:
    """The value at a dotted key ('models.logistic.ci.auc', list items by index); KeyError if absent."""
    cur = doc
    for part in key.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise KeyError(key)
    return cur


def conservative(*statuses: str) -> str:
    return max(statuses, key=STATUSES.index)


def _ci(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and len(v) == 2 and all(is_number(x) for x in v)


class _Builder:
    """Collects claims; each lens is (status, reason); evidence values are read from the artifacts."""

    def __init__(self, artifacts: dict[str, Any]):
        self.artifacts = artifacts
        self.claims: list[dict[str, Any]] = []

    def ev(self, artifact: str, key: str) -> dict[str, Any]:
        return {"artifact": artifact, "key": key, "value": lookup(self.artifacts[artifact], key)}

    def add(self, id_: str, statement: str, lenses: dict[str, tuple[str, str]], evidence: list[dict[str, Any]],
            **extra: Any) -> None:
        status = conservative(*(s for s, _ in lenses.values()))
        deciding = [f"{role}: {why}" for role, (s, why) in lenses.items() if s == status]
        self.claims.append({"id": id_, "statement": statement, "status": status, "reason": "; ".join(deciding),
                            "lenses": {role: {"status": s, "reason": why} for role, (s, why) in lenses.items()},
                            "evidence": evidence, "source": "code", **extra})


def _design(results: dict[str, Any], phase: str | None = None) -> tuple[str, str]:
    """The methodologist's standing objections: a leakage signal, a failed phase."""
    flags = [f for f in results.get("flags") or [] if f.startswith("possible_leakage")]
    if flags:
        return "inconclusive", "held-out performance suggests leakage (" + flags[0] + ")"
    errors = [e for e in results.get("errors") or [] if phase is None or e.get("phase") == phase]
    if errors:
        return "inconclusive", f"the {errors[0].get('phase', 'analysis')} phase recorded errors"
    return "supported", "leakage-safe design (split before encoding, by cluster where the data have one; no leakage signal)"


def code_claims(results: dict[str, Any], report: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The candidate claims the round's results bear on, each judged by the three lenses in code."""
    b = _Builder({"results.json": results, "data_report.json": report or {}})
    primary = results["primary_metric"]
    metric = primary.upper() if primary == "auc" else "R$^2$" if primary == "r2" else primary
    best = results["best_model"]
    models = results.get("models") or {}
    rec = models.get(best) or {}
    value, ci = (rec.get("metrics") or {}).get(primary), (rec.get("ci") or {}).get(primary)
    base = f"models.{best}"
    if is_number(value) and _ci(ci):
        # the thresholds the analysis applied, as results.json records them (an error if it does not)
        chance, floor = CHANCE.get(primary), applied_threshold(results, "quality_floor", file="results.json")
        leak = applied_threshold(results, "leakage_auc", file="results.json")
        evidence = [b.ev("results.json", f"{base}.metrics.{primary}"), b.ev("results.json", f"{base}.ci.{primary}")]
        high = primary == "auc" and leak is not None and value > leak
        if chance is not None:
            b.add("predicts_above_chance", f"The selected model ({best}) predicts the outcome better than chance "
                  f"on held-out students ({metric} above {chance:g}).",
                  {"optimist": ("supported" if value > chance else "unsupported", f"point estimate {value:.3f}"),
                   "skeptic": ("supported" if ci[0] > chance else "inconclusive",
                               f"95% interval [{ci[0]:.3f}, {ci[1]:.3f}] " + ("excludes" if ci[0] > chance
                                                                              else "includes") + f" {chance:g}"),
                   "methodologist": ("inconclusive", f"AUC above the leakage threshold {leak:g} on educational "
                                     "data suggests leakage") if high
                   else _design(results, "evaluate")},
                  evidence + ([b.ev("results.json", "thresholds.leakage_auc")] if high else []))
        if floor is not None:
            b.add("meets_quality_floor", f"The selected model reaches the quality floor for interpretation "
                  f"({metric} of at least {floor:g}).",
                  {"optimist": ("supported" if value >= floor else "unsupported", f"point estimate {value:.3f}"),
                   "skeptic": ("supported" if ci[0] >= floor else "inconclusive",
                               f"lower interval bound {ci[0]:.3f} against the floor {floor:g}"),
                   "methodologist": _design(results, "evaluate")},
                  evidence + [b.ev("results.json", "thresholds.quality_floor")])
        from edm_ars.review.evidence import comparison_evidence, evidence_for

        compared = comparison_evidence(results)
        for other, orec in models.items():
            oval, oci = (orec.get("metrics") or {}).get(primary), (orec.get("ci") or {}).get(primary)
            if other in (best, STACKING) or not (is_number(oval) and _ci(oci)):
                continue
            # the strongest comparison of the two (a paired difference when there is one, else the intervals),
            # so that this claim and the selection's own comparison never disagree
            ev = evidence_for(compared, best, other)
            if ev is not None and ev.kind == "paired":
                skeptic = ("supported" if ev.verdict == "better" else "inconclusive", ev.detail)
                extra = [b.ev("results.json", key) for key in _evidence_keys(ev)]
            else:
                disjoint = ci[0] > oci[1]
                skeptic = ("supported" if disjoint else "inconclusive",
                           "95% intervals " + ("do not overlap" if disjoint else "overlap"))
                extra = [b.ev("results.json", f"models.{other}.ci.{primary}")]
            b.add(f"outperforms_{other}", f"The selected model ({best}) predicts better than {other}.",
                  {"optimist": ("supported" if value > oval else "unsupported",
                                f"{metric} {value:.3f} vs {oval:.3f}"),
                   "skeptic": skeptic,
                   "methodologist": ("supported", "same held-out students for both models")},
                  evidence + [b.ev("results.json", f"models.{other}.metrics.{primary}")] + extra, model=other,
                  compares={"a": best, "b": other, "assertion": "better",
                            "evidence": ev.source if ev else None})
    gain = (results.get("selection_evidence") or {}).get("stacking_minus_selected")
    if isinstance(gain, dict) and is_number(gain.get("mean")) and _ci(gain.get("ci")):
        from edm_ars.review.evidence import comparison_evidence, evidence_for, stacking_base

        lo, hi = gain["ci"]
        base = stacking_base(results) or best
        skeptic = ("supported" if lo > 0 else "unsupported" if hi < 0 else "inconclusive",
                   f"95% interval of the paired difference [{lo:+.4f}, {hi:+.4f}]")
        held = [b.ev("results.json", "selection_evidence.stacking_minus_selected.mean"),
                b.ev("results.json", "selection_evidence.stacking_minus_selected.ci")]
        # the selected model's comparisons are Holm-adjusted (results.json paired_comparisons): the claim is held to
        # the adjusted verdict, as every sentence of the paper is
        ev = evidence_for(comparison_evidence(results), STACKING, base, "paired")
        if ev is not None and ev.source.startswith("results.json:paired_comparisons"):
            skeptic = ({"better": "supported", "worse": "unsupported"}.get(ev.verdict, "inconclusive"), ev.detail)
            held += [b.ev("results.json", key) for key in _evidence_keys(ev)]
        b.add("stacking_improves", f"Stacking the individual models improves on {base}, the single model the "
              "selection rule chose.",
              {"optimist": ("supported" if gain["mean"] > 0 else "unsupported", f"mean paired difference "
                            f"{gain['mean']:+.4f}"),
               "skeptic": skeptic,
               "methodologist": ("supported", "out-of-fold stacking; no base model refitted")},
              held,
              model=base, compares={"a": STACKING, "b": base, "assertion": "better",
                                    "evidence": "results.json:selection_evidence.stacking_minus_selected"})
    _feature_claims(b, results)
    _fairness_claims(b, results)
    return b.claims


def _evidence_keys(ev: Any) -> list[str]:
    """The results.json keys an Evidence record names (its source lists them as results.json:KEY)."""
    return [part.strip().removeprefix("results.json:") for part in ev.source.split(",")]


def _feature_claims(b: _Builder, results: dict[str, Any]) -> None:
    top = results.get("top_features") or []
    st = results.get("stability") or {}
    runs = [r for r in st.get("runs") or [] if r.get("top5")]
    interpretable = results.get("interpreted_model") is not None
    design = (_design(results, "explain") if interpretable else
              ("unsupported", "no model reached the quality floor: nothing is interpreted"))
    if top:
        lead = top[0]["feature"]
        firsts = sum(1 for r in runs if r["top5"][0] == lead)
        b.add("strongest_predictor", f"{lead} is the strongest predictor in the interpreted model.",
              {"optimist": ("supported", f"ranked first by {results.get('shap', {}).get('method', 'SHAP')}"),
               "skeptic": (("supported" if firsts == len(runs) else "inconclusive",
                            f"ranked first in {firsts} of {len(runs)} perturbed analyses") if runs
                           else ("inconclusive", "no stability analysis to check the ranking against")),
               "methodologist": design},
              [b.ev("results.json", "top_features.0.feature")]
              + ([b.ev("results.json", "stability.reference_top")] if runs else []), feature=lead)
    if st.get("unstable") is not None and runs:
        overlap = (st.get("top5_overlap") or {}).get("mean")
        b.add("ranking_robust", "The ranking of the most predictive features is robust to perturbations of the "
              "analysis (imputation, training sample, seed).",
              {"optimist": ("supported", "the same features lead in the original analysis"),
               "skeptic": ("unsupported" if st["unstable"] else "supported",
                           f"mean top-5 overlap {overlap:.2f} ({st.get('rule', '')})" if is_number(overlap)
                           else "top-5 overlap not computed"),
               "methodologist": design},
              [b.ev("results.json", "stability.unstable")]
              + ([b.ev("results.json", "stability.top5_overlap.mean")] if is_number(overlap) else []))


def _fairness_claims(b: _Builder, results: dict[str, Any]) -> None:
    fa = results.get("fairness") or {}
    primary = fa.get("primary_metric") or results["primary_metric"]
    threshold = fa.get("gap_threshold", 0.05)
    for attr, rec in (fa.get("attributes") or {}).items():
        g = (rec.get("gaps") or {}).get(primary)
        if rec.get("kind") == "intersection" or not isinstance(g, dict) or not is_number(g.get("gap")):
            continue
        groups = {x["group"]: x for x in rec.get("groups") or [] if isinstance(x, dict)}
        ends = [groups.get(g.get("min_group")), groups.get(g.get("max_group"))]
        reliable = all(e is not None and e.get("reliable") for e in ends)
        gci = g.get("ci")
        key = f"fairness.attributes.{attr}.gaps.{primary}"
        b.add(f"subgroup_gap_{attr}", f"The selected model's {primary.upper()} differs between groups of "
              f"{rec.get('label') or attr}.",
              {"optimist": ("supported" if g["gap"] > threshold else "unsupported",
                            f"largest gap {g['gap']:.3f} against the threshold {threshold:g}"),
               "skeptic": ("supported" if _ci(gci) and gci[0] > 0 and reliable else "inconclusive",
                           ("95% interval of the gap " + (f"[{gci[0]:.3f}, {gci[1]:.3f}]" if _ci(gci) else
                                                          "not available"))
                           + ("" if reliable else "; a compared group has fewer than "
                              f"{fa.get('min_group', 50)} test students")),
               "methodologist": ("supported", "held-out students, per-group bootstrap intervals")},
              [b.ev("results.json", f"{key}.gap")] + ([b.ev("results.json", f"{key}.ci")] if _ci(gci) else []),
              attribute=attr)


def status_counts(claims: list[dict[str, Any]]) -> dict[str, int]:
    return {s: sum(1 for c in claims if c["status"] == s) for s in STATUSES}


def document(claims: list[dict[str, Any]], *, round_: int, backend: str, notes: list[str] | None = None,
             debate: list[str] | None = None) -> dict[str, Any]:
    return {"round": round_, "backend": backend, "roles": [*ROLES, "synthesizer"],
            "rule": "each claim takes the most conservative judgment of the optimist, the skeptic and the "
                    "methodologist; the Writer states supported claims only and inconclusive ones as such",
            "counts": status_counts(claims), "claims": claims, "debate": list(debate or []),
            "notes": list(notes or [])}


# ---- with a model ----------------------------------------------------------------------------
MODEL_CLAIMS_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["claims"],
    "properties": {
        "claims": {"type": "array", "items": {
            "type": "object", "required": ["id", "status", "reason"],
            "properties": {"id": {"type": "string"}, "status": {"enum": list(STATUSES)},
                           "reason": {"type": "string"}}}},
        "new_claims": {"type": "array", "items": {
            "type": "object", "required": ["id", "statement", "status", "evidence"],
            "properties": {"id": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
                           "statement": {"type": "string", "minLength": 10},
                           "status": {"enum": list(STATUSES)}, "reason": {"type": "string"},
                           "evidence": {"type": "array", "items": {
                               "type": "object", "required": ["artifact", "key"],
                               "properties": {"artifact": {"type": "string"}, "key": {"type": "string"}}}}}}},
    },
}


def merge_model_judgments(claims: list[dict[str, Any]], answer: dict[str, Any], artifacts: dict[str, Any]
                          ) -> tuple[list[dict[str, Any]], list[str]]:
    """Apply the synthesizer's judgments: a code claim can only become more conservative; a new claim is
    kept when every evidence key resolves in the named artifact (its values are read here), and is marked
    unsupported otherwise. Returns (claims, notes)."""
    out = [dict(c) for c in claims]
    by_id = {c["id"]: c for c in out}
    notes = []
    for j in answer.get("claims") or []:
        c = by_id.get(j["id"])
        if c is None:
            notes.append(f"model judged unknown claim {j['id']!r}: ignored")
            continue
        c["lenses"] = dict(c["lenses"], model={"status": j["status"], "reason": j.get("reason", "")})
        final = conservative(c["status"], j["status"])
        if final != c["status"]:
            notes.append(f"{c['id']}: {c['status']} -> {final} (model: {j.get('reason', '')})")
            c["status"], c["reason"] = final, f"model synthesizer: {j.get('reason', '')}"
        elif STATUSES.index(j["status"]) < STATUSES.index(c["status"]):
            notes.append(f"{c['id']}: the model's {j['status']} not honoured; the evidence gives {c['status']}")
    for j in answer.get("new_claims") or []:
        if j["id"] in by_id:
            notes.append(f"new claim {j['id']!r} repeats an existing id: ignored")
            continue
        evidence, missing = [], []
        for e in j.get("evidence") or []:
            try:
                evidence.append({"artifact": e["artifact"], "key": e["key"],
                                 "value": lookup(artifacts[e["artifact"]], e["key"])})
            except KeyError:
                missing.append(f"{e.get('artifact')}:{e.get('key')}")
        status, reason = j["status"], j.get("reason", "")
        if missing or not evidence:
            status = "unsupported"
            reason = "evidence not found in the artifacts: " + (", ".join(missing) or "none given")
        claim = {"id": j["id"], "statement": j["statement"], "status": status, "reason": reason,
                 "lenses": {"model": {"status": j["status"], "reason": j.get("reason", "")}},
                 "evidence": evidence, "source": "model"}
        out.append(claim)
        by_id[claim["id"]] = claim
    return out, notes


def debate_with_model(client: Any, prompts: dict[str, Any], claims: list[dict[str, Any]],
                      results_summary: dict[str, Any], artifacts: dict[str, Any], *, lessons: str = ""
                      ) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Three lenses in prose, then the synthesizer's JSON; returns (claims, notes, debate transcript)."""
    import json

    from edm_ars.llm.prompts import fill, shared_prefix_contents

    listing = json.dumps([{k: c[k] for k in ("id", "statement", "status", "reason", "evidence")}
                          for c in claims], indent=1, default=str)
    summary = json.dumps(results_summary, indent=1, default=str)
    turns = [fill(prompts["debate_user"], role=role, role_brief=prompts["roles"][role], results=summary,
                  claims=listing, lessons=lessons) for role in ROLES]
    # the results and claims every turn (and the synthesizer) begins with: written to the prompt cache once
    contents = shared_prefix_contents([*turns, fill(prompts["synthesize_user"], results=summary, claims=listing,
                                                    debate="")])
    debate = []
    for role, content in zip(ROLES, contents, strict=False):
        answer = client.complete(prompts["system"], [{"role": "user", "content": content}], tag=f"debate-{role}")
        debate.append(f"[{role}] {answer.text.strip()}")
    user = fill(prompts["synthesize_user"], results=summary, claims=listing, debate="\n\n".join(debate))
    shared = contents[-1][0] if isinstance(contents[-1], list) else None
    content = ([shared, {"type": "text", "text": user[len(shared["text"]):]}]
               if shared and user.startswith(shared["text"]) else user)
    answer, _ = client.complete_json(prompts["system"], [{"role": "user", "content": content}], tag="synthesize",
                                     schema=MODEL_CLAIMS_SCHEMA)
    merged, notes = merge_model_judgments(claims, answer, artifacts)
    return merged, notes, debate
