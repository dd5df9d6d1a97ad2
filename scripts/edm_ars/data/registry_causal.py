"""The registry's causal questions (`task: causal`): the treatment, its comparison, the design and the time order
that decides which covariates are pre-treatment.

A causal question names a treatment variable with the value that is the treatment and the value it is compared
with, the design (randomised, with its randomisation unit, blocks and cluster column, or observational), the
covariates (each with why it is there) and the outcome (a variable, or a sum of variables declared under
`derived_outcome`). The time order comes from the registry's waves: a covariate measured after the treatment's
wave, an outcome measured before it, or a treatment with no comparison value is refused, naming the question and
the variable. Within the treatment's own wave the order is not known from the waves, so a covariate of that wave
must be listed in `measured_before_treatment` and an outcome of that wave needs `outcome_after_treatment: true`.
"""

from __future__ import annotations

from typing import Any

#: the task types of a research question (`task:`; older registries say `kind:`)
TASKS = ("prediction", "causal")
DESIGNS = ("randomized", "observational")
DESIGN_KEYS = {"kind", "unit", "blocks", "cluster", "statement"}
CAUSAL_KEYS = {"id", "task", "kind", "question", "outcome", "derived_outcome", "treatment", "design", "covariates",
               "measured_before_treatment", "outcome_after_treatment", "subgroups", "population", "keywords",
               "topics", "published_estimates", "default", "purpose", "actors", "decision_time"}
TREATMENT_KEYS = {"variable", "treated", "control", "phrase", "control_phrase", "phrases"}
PUBLISHED_KEYS = {"cite", "where", "estimate", "se", "outcome", "note", "estimator"}


def question_task(q: dict[str, Any]) -> str:
    """The task type of a registry question: `task:`, else the older `kind:`, else prediction."""
    return str(q.get("task") or q.get("kind") or "prediction")


def is_causal(q: dict[str, Any] | None) -> bool:
    return bool(q) and question_task(q) == "causal"


def _wave(reg: Any, name: str) -> str | None:
    from edm_ars.data.registry import wave_of

    return wave_of(reg, name)


def outcome_record(reg: Any, q: dict[str, Any]) -> dict[str, Any] | None:
    """The outcome of a causal question as a variable record (name, label, type, wave, sum_of), or None when it
    names nothing the registry knows. A derived outcome is continuous and takes the latest wave of its parts."""
    name = q.get("outcome")
    derived = q.get("derived_outcome") or None
    if isinstance(derived, dict) and derived.get("name") == name:
        parts = [str(p) for p in derived.get("sum_of") or []]
        waves = [_wave(reg, p) for p in parts]
        order = reg.wave_order
        wave = max((w for w in waves if w in order), key=lambda w: order[w], default=None)
        return {"name": name, "label": str(derived.get("label") or name), "type": "continuous", "wave": wave,
                "sum_of": parts}
    rec = reg.tier1.get(name) if name else None
    if rec is None:
        return None
    return {"name": name, "label": rec.get("label", name), "type": rec.get("type"), "wave": _wave(reg, name),
            "sum_of": None}


def time_order(reg: Any, q: dict[str, Any]) -> list[dict[str, Any]]:
    """The time-order checks of a causal question, each {"check", "ok", "detail"}: every covariate before the
    treatment (or of its wave and declared earlier), the outcome not before it (or of its wave and declared after)."""
    treat = (q.get("treatment") or {}).get("variable")
    order = reg.wave_order
    t_wave = _wave(reg, treat) if treat else None
    checks: list[dict[str, Any]] = []
    if not reg.has_waves or t_wave not in order:
        return [{"check": "waves", "ok": True,
                 "detail": "the registry has no waves: the time order is as the question states it"}]
    declared = set(q.get("measured_before_treatment") or [])
    for name in q.get("covariates") or {}:
        c_wave = _wave(reg, name)
        if c_wave not in order:
            checks.append({"check": f"covariate {name}", "ok": False, "detail": f"{name} has no wave"})
        elif order[c_wave] < order[t_wave]:
            checks.append({"check": f"covariate {name}", "ok": True,
                           "detail": f"{name} ({c_wave}) is measured before the treatment ({t_wave})"})
        elif order[c_wave] == order[t_wave]:
            ok = name in declared
            checks.append({"check": f"covariate {name}", "ok": ok,
                           "detail": (f"{name} is of the treatment's wave ({t_wave}) and is declared measured "
                                      "before it" if ok else
                                      f"{name} is of the treatment's wave ({t_wave}) and is not listed in "
                                      "measured_before_treatment: it may be measured after the treatment")})
        else:
            checks.append({"check": f"covariate {name}", "ok": False,
                           "detail": f"{name} ({c_wave}) is measured after the treatment {treat} ({t_wave}): "
                                     "adjusting for it would adjust for a consequence of the treatment"})
    out = outcome_record(reg, q)
    o_wave = out["wave"] if out else None
    if o_wave in order:
        if order[o_wave] > order[t_wave]:
            ok, detail = True, f"the outcome ({o_wave}) is measured after the treatment ({t_wave})"
        elif order[o_wave] == order[t_wave]:
            ok = bool(q.get("outcome_after_treatment"))
            detail = (f"the outcome is of the treatment's wave ({t_wave}) and is declared measured after it" if ok
                      else f"the outcome is of the treatment's wave ({t_wave}) and outcome_after_treatment is not "
                           "true: it may be measured before the treatment")
        else:
            ok, detail = False, (f"the outcome {out['name']} ({o_wave}) is measured before the treatment {treat} "
                                 f"({t_wave})")
        checks.append({"check": "outcome", "ok": ok, "detail": detail})
    return checks


def causal_question_problems(reg: Any, q: dict[str, Any]) -> list[str]:
    """Everything wrong with one causal question of a registry, each naming the question and the key."""
    qid = q.get("id", "?")
    errors = []
    unknown = sorted(set(q) - CAUSAL_KEYS)
    if unknown:
        errors.append(f"question {qid}: unknown key(s) {unknown} for a causal question (known: "
                      f"{sorted(CAUSAL_KEYS)})")
    if q.get("task") and q.get("kind") and q["task"] != q["kind"]:
        errors.append(f"question {qid}: task {q['task']!r} and kind {q['kind']!r} disagree (write task: only)")
    out = outcome_record(reg, q)
    derived = q.get("derived_outcome")
    if derived is not None:
        if not isinstance(derived, dict) or not derived.get("name") or not derived.get("sum_of"):
            errors.append(f"question {qid}: derived_outcome needs name, label and sum_of (a list of variables)")
        else:
            for part in derived["sum_of"]:
                rec = reg.tier1.get(part)
                if rec is None:
                    errors.append(f"question {qid}: derived_outcome.sum_of {part} is not a variable of the registry")
                elif rec.get("type") != "continuous":
                    errors.append(f"question {qid}: derived_outcome.sum_of {part} is {rec.get('type')}, not "
                                  "continuous")
    if out is None:
        errors.append(f"question {qid}: outcome {q.get('outcome')} is not a variable of the registry (or "
                      "derived_outcome.name)")
    elif out["type"] not in ("continuous", "binary"):
        errors.append(f"question {qid}: outcome {out['name']} has type {out['type']} (binary or continuous)")
    treat = q.get("treatment")
    if not isinstance(treat, dict) or not treat.get("variable"):
        errors.append(f"question {qid}: treatment must be a mapping with variable, treated and control")
        treat = {}
    unknown = sorted(set(treat) - TREATMENT_KEYS)
    if unknown:
        errors.append(f"question {qid}: treatment: unknown key(s) {unknown} (known: {sorted(TREATMENT_KEYS)})")
    var = treat.get("variable")
    trec = reg.tier1.get(var) if var else None
    if var and trec is None:
        errors.append(f"question {qid}: treatment variable {var} is not a variable of the registry")
    for key in ("treated", "control"):
        if treat and treat.get(key) is None:
            errors.append(f"question {qid}: treatment.{key} is missing: a treatment needs a comparison group "
                          "(the value compared with the treated value)")
    if treat.get("treated") is not None and str(treat.get("treated")) == str(treat.get("control")):
        errors.append(f"question {qid}: treatment.treated and treatment.control are the same value "
                      f"({treat['treated']!r}): there is no comparison group")
    values = (trec or {}).get("values")
    if isinstance(values, dict):
        known = {str(k) for k in values} | {str(v) for v in values.values()}
        for key in ("treated", "control"):
            if treat.get(key) is not None and str(treat[key]) not in known:
                errors.append(f"question {qid}: treatment.{key} {treat[key]!r} is not a value of {var} "
                              f"(values: {sorted(str(k) for k in values)})")
    design = q.get("design")
    if not isinstance(design, dict) or design.get("kind") not in DESIGNS:
        errors.append(f"question {qid}: design.kind must be one of {list(DESIGNS)}")
        design = design if isinstance(design, dict) else {}
    unknown = sorted(set(design) - DESIGN_KEYS)
    if unknown:
        errors.append(f"question {qid}: design: unknown key(s) {unknown} (known: {sorted(DESIGN_KEYS)})")
    if not str(design.get("statement") or "").strip():
        errors.append(f"question {qid}: design.statement is missing: say how the treatment was assigned")
    covariates = q.get("covariates") or {}
    if not isinstance(covariates, dict):
        errors.append(f"question {qid}: covariates must be a mapping of variable: why it is adjusted for")
        covariates = {}
    for name in covariates:
        if name not in reg.tier1:
            errors.append(f"question {qid}: covariate {name} is not a variable of the registry")
        elif name == var:
            errors.append(f"question {qid}: covariate {name} is the treatment")
    for name in q.get("measured_before_treatment") or []:
        if name not in covariates:
            errors.append(f"question {qid}: measured_before_treatment {name} is not one of its covariates")
    for attr in q.get("subgroups") or []:
        if attr not in reg.tier1:
            errors.append(f"question {qid}: subgroup attribute {attr} is not a variable of the registry")
    if trec is not None and out is not None:
        errors += [f"question {qid}: {c['detail']}" for c in time_order(reg, q) if not c["ok"]]
    for i, pub in enumerate(q.get("published_estimates") or []):
        if not isinstance(pub, dict) or not pub.get("cite") or not isinstance(pub.get("estimate"), (int, float)):
            errors.append(f"question {qid}: published_estimates[{i}] needs cite and a numeric estimate")
            continue
        extra = sorted(set(pub) - PUBLISHED_KEYS)
        if extra:
            errors.append(f"question {qid}: published_estimates[{i}]: unknown key(s) {extra} (known: "
                          f"{sorted(PUBLISHED_KEYS)})")
    return errors
