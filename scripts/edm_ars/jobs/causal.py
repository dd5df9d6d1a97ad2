"""The causal study's jobs (rules/causal.smk): specification, analytic frame, estimation, review, recovery, paper.

Each job reads the artifacts its rule declares and writes the outputs it names; the stage code is in
edm_ars.causal. The revision loop is the prediction study's: a review's `rerun_from` names formulate, engineer
(the analytic frame) or analyze (the estimation), and its revision actions reach the stage they target.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text, read_json, write_json
from edm_ars.core.errors import SpecError
from edm_ars.jobs.rule_io import earlier_reviews, log, registry_of

#: the artifacts a causal paper is written from (verify-paper finds them through sources.json) -> input names
ARTIFACTS = {"research_spec.json": "spec", "literature_context.json": "literature", "data_report.json": "report",
             "results.json": "results", "review_report.json": "review"}
OPTIONAL_ARTIFACTS = {"provenance.json": "provenance", "recovery.json": "recovery"}


def _start_agent_outputs(smk: Any) -> None:
    Path(smk.output.transcripts).mkdir(parents=True, exist_ok=True)
    atomic_write_text(smk.output.ledger, "")


def formulate(smk: Any) -> None:
    """The causal research specification (edm_ars.causal.spec), its gate, the framing (offline by rule, with a
    model written by the model and checked), and the literature context."""
    from edm_ars.causal.spec import (
        FRAMING_SCHEMA,
        causal_spec,
        framing_problems,
        offline_framing,
        spec_gate,
        study_question,
    )
    from edm_ars.formulate.spec import CORE_TOPICS, curated_literature, literature_topics

    reg = registry_of(smk)
    _start_agent_outputs(smk)
    q = study_question(reg, smk.params.question or None, smk.params.prompt or None)
    spec = causal_spec(reg, q, round_=int(smk.wildcards.round))
    columns = set(read_json(smk.input.manifest).get("columns", [])) or None
    problems = spec_gate(spec, columns)
    if problems:
        raise SpecError(problems)
    notes = [n for rev in earlier_reviews(smk)[-1:] for n in rev["revision_instructions"].get("formulate", [])]
    if notes:
        spec["revision_notes"] = notes
    bib, topics = smk.input.bibliography
    keys = list(dict.fromkeys(p["cite"] for p in spec["published_estimates"]))
    # the question's and the data set's topics and the causal methods' (not the prediction study's core methods)
    wanted = [t for t in literature_topics(reg, spec["question_id"]) if t not in CORE_TOPICS] + ["causal"]
    backend = smk.params.llm["backend"]
    if backend == "offline":
        spec |= offline_framing(spec, reg.prose)
        spec["framing_source"] = "rule"
        literature = curated_literature(bib, topics, wanted, keys=keys)
    else:
        from edm_ars.jobs.agents import _model_literature, with_works
        from edm_ars.llm import load_prompt
        from edm_ars.llm.rule_client import client_for_job

        prompts = load_prompt(smk.input.prompts)
        client = client_for_job(smk)
        context = _framing_context(spec, reg)
        framing, _ = client.complete_json(prompts["system"].format(**context),
                                          [{"role": "user", "content": prompts["user"].format(**context)}],
                                          tag="framing", schema=FRAMING_SCHEMA,
                                          check=lambda value: framing_problems(value, spec))
        spec |= {k: " ".join(str(framing[k]).split()) for k in ("motivation", "identification")}
        spec["framing_source"] = "model"
        literature = _model_literature(smk, spec, lambda note: curated_literature(bib, topics, wanted, note=note,
                                                                                  keys=keys),
                                       reg.dataset.get("literature"))
        literature = with_works(literature, curated_literature(bib, topics, ["causal"], keys=keys))
    spec["literature_keys"] = [p["key"] for p in literature["papers"]]
    t = spec["treatment"]
    log.info("causal question %s: %s (%s) vs %s on %s, %s design, %d covariates; literature: %s, %d works",
             spec["question_id"], t["variable"], t["treated"], t["control"], spec["outcome"]["name"],
             spec["design"]["kind"], len(spec["covariates"]), literature["source"], len(literature["papers"]))
    write_json(smk.output.spec, spec)
    write_json(smk.output.literature, literature, "literature_context")


def _framing_context(spec: dict[str, Any], reg: Any) -> dict[str, str]:
    t, d = spec["treatment"], spec["design"]
    return {
        "dataset_title": str(reg.dataset.get("title", reg.name)),
        "question": spec["research_question"], "treatment": t["phrase"], "control": t["control_phrase"],
        "outcome": spec["outcome"]["label"], "design": d["kind"], "statement": d["statement"],
        "estimand": spec["estimand"]["statement"],
        "covariates": "\n".join(f"- {c['label']} ({c['wave']}): {c['rationale']}" for c in spec["covariates"])
        or "- (none)",
        "time_order": "\n".join(f"- {c['detail']}" for c in spec["time_order"]),
    }


def frame(smk: Any) -> None:
    """The analytic frame and its data report (edm_ars.causal.frame)."""
    from edm_ars.causal.frame import analytic_frame
    from edm_ars.core.frames import write_frame
    from edm_ars.data.raw import read_raw

    reg = registry_of(smk)
    spec = read_json(smk.input.spec)
    columns = read_json(smk.input.manifest)["columns"]
    id_column = reg.dataset.get("id_column")
    needed = [spec["treatment"]["variable"], *(spec["outcome"]["sum_of"] or [spec["outcome"]["name"]]),
              *(c["name"] for c in spec["covariates"]), *(g["name"] for g in spec["subgroups"]),
              *(spec["design"][k] for k in ("blocks", "cluster") if spec["design"].get(k)),
              *([id_column] if id_column in columns else [])]
    raw = read_raw(smk.input.raw, usecols=list(dict.fromkeys(needed)))
    data, report = analytic_frame(raw, spec, reg, id_column)
    log.info("analytic frame: %d treated, %d comparison, %s left out (another value), %d without the treatment; "
             "outcome missing for %s; %d features", report["n_treated"], report["n_control"],
             report["excluded_levels"] or "none", report["n_missing_treatment"], report["outcome_missing"],
             len(report["features"]))
    write_frame(smk.output.frame, data)
    write_json(smk.output.report, report)


def estimate(smk: Any) -> None:
    """The estimators chosen by the design (edm_ars.causal.estimate), the figures, results.json."""
    from edm_ars.causal.estimate import estimate as run_estimate
    from edm_ars.causal.figures import causal_figures
    from edm_ars.causal.review import trimming_threshold
    from edm_ars.core.frames import read_frame

    spec = read_json(smk.input.spec)
    data = read_frame(smk.input.frame)
    settings = dict(smk.params.settings)
    reviews = earlier_reviews(smk)
    threshold = trimming_threshold(reviews, settings["trimming_threshold"])
    if threshold != settings["trimming_threshold"]:
        log.info("revision: trimming threshold %s -> %s", settings["trimming_threshold"], threshold)
        settings["trimming_threshold"] = threshold
    results, propensity = run_estimate(data, spec["design"], settings, int(smk.params.seed), return_propensity=True)
    if reviews:
        results["revision_actions_applied"] = [f"trimming threshold {threshold}"] if threshold != \
            smk.params.settings["trimming_threshold"] else []
    p = results["primary"]
    log.info("%s: %s = %.4g [%.4g, %.4g]; naive %.4g", results["design"], p["estimator"], p["estimate"],
             p["ci_low"], p["ci_high"], results["naive"]["estimate"])
    Path(smk.output.figures).mkdir(parents=True, exist_ok=True)
    results["figures"] = causal_figures(data, results, Path(smk.output.figures), propensity=propensity)
    write_json(smk.output.results, results)


def critique(smk: Any) -> None:
    """The Critic's causal checklist (edm_ars.causal.review); the verdict is computed in code."""
    from edm_ars.causal.review import review_causal

    _start_agent_outputs(smk)
    result = review_causal(read_json(smk.input.spec), read_json(smk.input.report), read_json(smk.input.results),
                           round=int(smk.wildcards.round), max_revisions=int(smk.params.max_revisions),
                           force_revise=smk.params.force_revise or None,
                           force_rounds=int(smk.params.force_revise_rounds))
    log.info("round %s verdict %s; rerun from %s", result["round"], result["verdict"], result.get("rerun_from"))
    for item in result.get("checklist", []):
        log.info("  [%s] %s: %s", "ok" if item["passed"] else item["severity"], item["id"], item["detail"])
    write_json(smk.output.review, result, "review_report")


def recovery(smk: Any) -> None:
    """The planted effect of the generated data against the estimate (edm_ars.causal.recovery)."""
    from edm_ars.causal.recovery import causal_recovery

    rec = causal_recovery(read_json(smk.input.dgp, "dgp"), read_json(smk.input.spec), read_json(smk.input.results))
    log.info("planted %s, estimated %s [%s, %s]: covered %s; naive %s covered %s", rec["planted_ate"],
             rec["estimate"], rec["ci_low"], rec["ci_high"], rec["covered"], rec["naive"], rec["naive_covered"])
    write_json(smk.output.recovery, rec)


def write(smk: Any) -> None:
    """The causal paper (edm_ars.causal.paper), then `edm-ars verify-paper`."""
    from edm_ars.causal.paper import build_causal_paper
    from edm_ars.core.errors import EdmArsError
    from edm_ars.writer.verify import verify_paper

    review = read_json(smk.input.review, "review_report")
    if review["verdict"] == "ABORT":
        raise EdmArsError(f"the Critic aborted the study in round {review['round']}: {review.get('abort_reason')}; "
                          "no paper is written")
    reg = registry_of(smk)
    out = Path(smk.output.tex).parent
    Path(smk.output.transcripts).mkdir(parents=True, exist_ok=True)
    atomic_write_text(smk.output.ledger, "")
    summary = build_causal_paper(
        read_json(smk.input.spec), read_json(smk.input.literature, "literature_context"),
        read_json(smk.input.report), read_json(smk.input.results), review,
        figures_dir=Path(smk.input.figures), template=Path(smk.input.template), out_dir=out,
        authors=smk.params.authors, dataset=reg.prose,
        provenance_record=_optional(smk, "provenance"), recovery=_optional(smk, "recovery"),
        bib_source=Path(smk.input.bibliography), phrases=Path(smk.input.phrases))
    log.info("causal paper written: %s", summary)
    given = {**ARTIFACTS, **{n: k for n, k in OPTIONAL_ARTIFACTS.items() if k in smk.input.keys()}}
    write_json(smk.output.sources, {name: os.path.relpath(smk.input[key], out) for name, key in given.items()})
    report = verify_paper(smk.output.tex)
    write_json(smk.output.verification, report.to_json())
    log.info("%s", report.summary())
    if not report.ok:
        raise EdmArsError("the paper does not reconcile with the artifacts:\n" + report.summary())


def _optional(smk: Any, key: str) -> dict[str, Any] | None:
    return read_json(smk.input[key]) if key in smk.input.keys() else None
