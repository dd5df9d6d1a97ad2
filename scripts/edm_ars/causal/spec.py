"""The causal study's research specification and its gate.

The question comes from the registry (`task: causal`, data/registry_causal.py). The specification states the
treatment and its comparison, the design, the estimand, the covariates with their waves and the time-order
checks, and the identification argument: offline a rule writes it from the design; with a model, the model
writes the motivation and the argument and the gate checks that they name the treatment and carry no number.
The gate refuses a covariate measured after the treatment, an outcome measured before it, a treatment with no
comparison group, and columns the data do not hold.
"""

from __future__ import annotations

import re
from typing import Any

from edm_ars.core.errors import EdmArsError, SpecError
from edm_ars.data.registry import Registry, value_labels, wave_of
from edm_ars.data.registry_causal import causal_question_problems, outcome_record, question_task, time_order
from edm_ars.formulate.spec import choose_question

#: what the model writes for a causal study; the rest of the specification comes from the registry
FRAMING_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "required": ["motivation", "identification"],
    "properties": {"motivation": {"type": "string", "minLength": 80},
                   "identification": {"type": "string", "minLength": 80}},
}


def find_question(reg: Registry, question_id: str) -> dict[str, Any]:
    for q in reg.questions:
        if q.get("id") == question_id:
            return q
    raise EdmArsError(f"question {question_id!r} is not in the registry (questions: "
                      f"{[q.get('id') for q in reg.questions]})")


def study_question(reg: Registry, question_id: str | None, prompt: str | None) -> dict[str, Any]:
    """The registry question a run studies: the one named by `question=`, else the one the prompt matches, else
    the default one."""
    return find_question(reg, question_id) if question_id else choose_question(reg, prompt or None)


def study_task(reg: Registry, question_id: str | None, prompt: str | None) -> str:
    """prediction or causal: the task of the question a run studies (decided when the workflow is planned)."""
    return question_task(study_question(reg, question_id, prompt))


def _plural(phrase: str) -> str:
    if phrase.endswith(("ss", "sh", "ch", "x")):
        return phrase + "es"
    return phrase if phrase.endswith(("s", "ing")) else phrase + "s"


def treatment_record(reg: Registry, q: dict[str, Any]) -> dict[str, Any]:
    t = q["treatment"]
    var = t["variable"]
    rec = reg.variable(var) or {}
    labels = value_labels(reg, var)
    treated, control = str(t["treated"]), str(t["control"])
    # the data may hold either the code or its label: the comparison is stated by label
    codes = {str(k): str(v) for k, v in (rec.get("values") or {}).items()} if isinstance(rec.get("values"), dict) \
        else {}
    t_label = labels.get(treated) or codes.get(treated) or treated
    c_label = labels.get(control) or codes.get(control) or control
    phrase = str(t.get("phrase") or t_label).strip()
    control_phrase = str(t.get("control_phrase") or c_label).strip()
    others = [str(k) for k in codes if str(k) not in (treated, control) and codes[k] not in (treated, control)]
    low = phrase[0].lower() + phrase[1:] if phrase[:2] != phrase[:2].upper() else phrase
    bare = re.sub(r"^(?:a|an|the)\s+", "", low)
    return {"variable": var, "label": rec.get("label", var), "wave": wave_of(reg, var), "treated": treated,
            "control": control, "treated_label": t_label, "control_label": c_label,
            "phrase": low, "control_phrase": control_phrase[0].lower() + control_phrase[1:],
            "other_levels": others, "phrases": sorted({bare.lower(), _plural(bare).lower()}
                                                      | {str(p).lower() for p in t.get("phrases") or []})}


def estimand(design: dict[str, Any], treatment: dict[str, Any], outcome: dict[str, Any]) -> dict[str, Any]:
    if design["kind"] == "randomized":
        return {"name": "ATE", "statement": (
            f"the average effect of assignment to {treatment['phrase']} rather than {treatment['control_phrase']} on "
            f"{outcome['label'][0].lower() + outcome['label'][1:]}, among the analysed students (an "
            "intention-to-treat contrast of the arms as assigned)")}
    return {"name": "ATE", "statement": (
        f"the average effect of {treatment['phrase']} rather than {treatment['control_phrase']} on "
        f"{outcome['label'][0].lower() + outcome['label'][1:]}, over the analysed students")}


def offline_framing(spec: dict[str, Any], dataset: dict[str, Any]) -> dict[str, str]:
    """The motivation and the identification argument, written by rule from the design."""
    t, d, o = spec["treatment"], spec["design"], spec["outcome"]
    names = ", ".join(c["label"][0].lower() + c["label"][1:] for c in spec["covariates"]) or "no covariates"
    units = dataset.get("units", "students")
    if d["kind"] == "randomized":
        blocks = (f" Assignment was made within blocks ({d['blocks']}), so the arms are compared within blocks."
                  if d.get("blocks") else "")
        ident = (f"{' '.join(str(d['statement']).split())} Because assignment to {t['phrase']} or "
                 f"{t['control_phrase']} was random, it is independent of the {units}' potential outcomes, and the "
                 f"difference in mean outcomes between the arms identifies the effect of assignment.{blocks} The "
                 "identification needs two further conditions that the design does not guarantee: that the "
                 "outcome is missing for reasons unrelated to the arm (examined in the attrition analysis), and "
                 f"that the treatment is the same for every {dataset.get('unit', 'student')} in an arm "
                 "(consistency). Covariates measured before assignment "
                 f"({names}) serve to check balance and to sharpen the estimate, not to identify it.")
        motive = (f"{dataset.get('long', dataset.get('short', 'The data'))} come from "
                  f"{dataset.get('design') or 'a study'} in which {t['phrase']} were assigned at random, which "
                  f"makes them one of the few sources in which the effect of {t['phrase']} on "
                  f"{o['label'][0].lower() + o['label'][1:]} can be estimated without assumptions about who "
                  "chose the treatment.")
    else:
        unit = dataset.get("unit", "student")
        ident = (f"{' '.join(str(d['statement']).split())} The treatment was not assigned at random, so the "
                 f"comparison identifies the effect of {t['phrase']} only under three assumptions. Conditional "
                 f"exchangeability: given {names}, whether a {unit} had the treatment ({t['phrase']}) is unrelated "
                 f"to the outcomes the {unit} would have had with and without it. Positivity: every {unit} had a "
                 "probability between zero and one of having it, given the covariates (examined in the overlap "
                 "analysis). Consistency and no interference: the treatment is the same for everyone who had it, "
                 f"and one {unit}'s treatment does not change another's outcome. The first assumption cannot be "
                 "tested from the data; the sensitivity analysis states how strong an unmeasured confounder would "
                 "have to be to change the conclusion.")
        motive = (f"Whether {t['phrase']} changes {o['label'][0].lower() + o['label'][1:]} is a question schools "
                  "ask when they decide what to offer, and observational data are often the only data at hand, "
                  "so the estimate must come with its assumptions and a statement of how much they matter.")
    return {"motivation": motive, "identification": ident}


def framing_problems(framing: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """What is wrong with a model's framing: it must name the treatment and hold no digit (every number of the
    paper comes from an artifact)."""
    problems = []
    for key in ("motivation", "identification"):
        text = str(framing.get(key) or "")
        if re.search(r"\d", text):
            problems.append(f"{key}: contains a number; numbers come from the artifacts, write none")
        if not any(p in text.lower() for p in spec["treatment"]["phrases"]):
            problems.append(f"{key}: does not name the treatment ({spec['treatment']['phrases'][0]})")
    if spec["design"]["kind"] == "observational" and "exchangeab" not in str(framing.get("identification")).lower():
        problems.append("identification: an observational design must state conditional exchangeability")
    return problems


def causal_spec(reg: Registry, q: dict[str, Any], *, round_: int) -> dict[str, Any]:
    """The research specification of a causal question (the framing is added by the job)."""
    if question_task(q) != "causal":
        raise SpecError([f"question {q.get('id')}: task {question_task(q)!r}, not a causal question"])
    problems = causal_question_problems(reg, q)
    if problems:
        raise SpecError(problems)
    out = outcome_record(reg, q)
    assert out is not None  # causal_question_problems refused an unknown outcome
    treatment = treatment_record(reg, q)
    design = {k: q["design"].get(k) for k in ("kind", "unit", "blocks", "cluster")}
    design["statement"] = " ".join(str(q["design"]["statement"]).split())
    covariates = []
    for name, why in (q.get("covariates") or {}).items():
        rec = reg.variable(name) or {}
        covariates.append({"name": name, "label": rec.get("label", name), "type": rec.get("type"),
                           "wave": wave_of(reg, name), "rationale": " ".join(str(why or "").split())})
    subgroups = [{"name": a, "label": (reg.variable(a) or {}).get("label", a)} for a in q.get("subgroups") or []]
    spec = {
        "task": "causal", "dataset": reg.name, "question_id": q["id"],
        "research_question": " ".join(str(q["question"]).split()),
        "population": " ".join(str(q.get("population") or "").split()),
        "outcome": out, "treatment": treatment, "design": design,
        "estimand": estimand(design, treatment, out),
        "covariates": covariates, "measured_before_treatment": list(q.get("measured_before_treatment") or []),
        "subgroups": subgroups, "time_order": time_order(reg, q),
        "published_estimates": [dict(p) for p in q.get("published_estimates") or []],
        "limitations": reg.limitations_for("causal"),
        "round": int(round_),
    }
    return spec


def spec_gate(spec: dict[str, Any], data_columns: set[str] | None) -> list[str]:
    """What stops a causal specification: a failed time-order check, a treatment with no comparison group, or a
    column the data do not hold (the treatment, the outcome or its parts, a covariate, the blocks, the cluster)."""
    problems = [f"time order: {c['detail']}" for c in spec["time_order"] if not c["ok"]]
    t = spec["treatment"]
    if t["treated"] == t["control"]:
        problems.append(f"treatment {t['variable']}: treated and control are the same value: no comparison group")
    if data_columns is not None:
        needed = [t["variable"], *(spec["outcome"]["sum_of"] or [spec["outcome"]["name"]]),
                  *(c["name"] for c in spec["covariates"]), *(s["name"] for s in spec["subgroups"]),
                  *(spec["design"][k] for k in ("blocks", "cluster") if spec["design"].get(k))]
        for col in dict.fromkeys(needed):
            if col not in data_columns:
                problems.append(f"column {col} is not in the data")
    return problems


def edited_spec_problems(spec: dict[str, Any], reg: Registry) -> list[str]:
    """What stops a causal specification the researcher edited at the formulate gate: its time order checked again
    from the registry's waves for the covariates, treatment and outcome it now names."""
    q = {"treatment": {"variable": spec["treatment"]["variable"]},
         "covariates": {c["name"]: c.get("rationale", "") for c in spec.get("covariates") or []},
         "measured_before_treatment": spec.get("measured_before_treatment") or [],
         "outcome": spec["outcome"]["name"],
         "derived_outcome": ({"name": spec["outcome"]["name"], "label": spec["outcome"].get("label"),
                              "sum_of": spec["outcome"]["sum_of"]} if spec["outcome"].get("sum_of") else None),
         "outcome_after_treatment": any(c["check"] == "outcome" and c["ok"] for c in spec.get("time_order") or [])}
    unknown = [c for c in q["covariates"] if c not in reg.tier1]
    problems = [f"covariate {c} is not a variable of the registry" for c in unknown]
    if problems:
        return problems
    return [f"time order: {c['detail']}" for c in time_order(reg, q) if not c["ok"]] + spec_gate(
        {**spec, "time_order": []}, None)
