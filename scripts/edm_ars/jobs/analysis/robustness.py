"""The Analyst's robustness jobs (envs/analysis.yaml): stability_run and stability (the interpreted model refitted
under perturbations, the spread of its metric and top features), split_run and splits (every single model refitted
on more grouped splits, the spread of the primary metric across them)."""

from __future__ import annotations

from typing import Any

from edm_ars.core.artifacts import read_json, write_json
from edm_ars.jobs.rule_io import log


def stability_run(smk: Any) -> None:
    """Refit the interpreted model family under one perturbation; score it and rank its features
    (edm_ars.analysis.stability.perturbed and refit). The alternative imputation is the DataEngineer's own preparation
    (edm_ars.data.engineer: its protocol, the columns it reads) with another strategy."""
    from edm_ars.core.errors import NoInterpretedModel
    from edm_ars.core.phases import error_record
    from edm_ars.core.reuse import earlier_record, same_inputs

    evaluation = read_json(smk.input.evaluation)
    task, name = evaluation["task"], evaluation["interpreted_model"]
    pert = smk.wildcards.perturbation
    kind, _, arg = pert.partition("_")
    out = {"perturbation": pert, "kind": kind, "family": name, "metric": None, "top_features": [], "errors": []}
    if name is None:
        out["errors"].append(error_record(
            "stability", NoInterpretedModel("no model passed the quality floor; nothing to perturb"), pert))
        write_json(smk.output.run, out)
        return
    inputs = {"model": smk.input[f"{name}_meta"], "family": name}
    kept = earlier_record(smk)
    if same_inputs(kept, inputs):
        log.info("%s: kept from the previous round (same fit of %s, same data)", pert, name)
        write_json(smk.output.run, kept)
        return
    # the model libraries are imported here: a run kept from the previous round needs none of them
    from edm_ars.analysis.stability import perturbed, refit, resamples_groups
    from edm_ars.core.frames import read_column, read_frame

    seed = smk.params.seed
    report = read_json(smk.input.report, "data_report")
    # a grouped split's bootstrap draws its training groups whole (a child's records, a school's students)
    groups = (read_column(smk.input.train_groups).to_numpy()
              if kind == "bootstrap" and resamples_groups(report.get("split") or {}) else None)
    if groups is not None:
        out["resampled"] = {"by": "groups", "n_groups": int(len(set(groups.tolist())))}

    def data() -> tuple[Any, ...]:
        X, y = read_frame(smk.input.train_X), read_column(smk.input.train_y).to_numpy(dtype=float)
        Xt = read_frame(smk.input.test_X)
        return perturbed(kind, arg, seed, X, y, Xt, report["feature_sources"],
                         lambda strategy: _reprepared(smk, seed, strategy), groups)

    params = read_json(smk.input[f"{name}_meta"])["best_params"]
    yt = read_column(smk.input.test_y).to_numpy(dtype=float)
    write_json(smk.output.run, refit(out | {"inputs": inputs}, name, task, params, data, yt, seed=seed,
                                     shap=smk.params.shap))


def _reprepared(smk: Any, seed: int, imputation: str) -> Any:
    """The DataEngineer's preparation of the run's data (same protocol, same columns, same split) with another
    imputation strategy."""
    from dataclasses import replace

    from edm_ars.data.engineer import prepare, protocol, read_needed
    from edm_ars.jobs.rule_io import layout_of, registry_of

    reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
    spec = read_json(smk.input.spec, "research_spec")
    raw = read_needed(smk.input.raw, spec, reg, read_json(smk.input.manifest)["columns"])
    return prepare(raw, spec, reg, layout_of(smk), replace(protocol(smk.params.protocol, seed), imputation=imputation),
                   describe=False)


def stability(smk: Any) -> None:
    """Spread of the metric and agreement of the top features across perturbations."""
    from edm_ars.analysis.stability import summarize

    evaluation = read_json(smk.input.evaluation)
    explained = read_json(smk.input.explain)
    name, primary = evaluation["interpreted_model"], evaluation["primary_metric"]
    runs = [read_json(p) for p in smk.input.runs]
    errors = [e for r in runs for e in r.get("errors", [])]
    reference = [f["feature"] for f in explained.get("top_features", [])]
    result = {"model": name, "errors": errors}
    if name and reference:
        result |= summarize(reference, evaluation["models"][name]["metrics"][primary],
                            [r for r in runs if r.get("metric") is not None], primary)
        log.info("stability of %s: %s spread %s; mean top-5 overlap %s; unstable %s", name, primary,
                 result["metric_spread"], result["top5_overlap"], result["unstable"])
    else:
        result |= {"unstable": None, "runs": [], "note": "no interpreted model or no SHAP ranking to compare"}
    write_json(smk.output.stability, result)


def split_run(smk: Any) -> None:
    """One more grouped split (edm_ars.analysis.splits): the DataEngineer's preparation of the raw data with the split seed
    of split k, every single model family refitted with the hyperparameters tuned on the main split and scored on
    the split's test rows. A family whose fit (models/<m>.json) and data are those an earlier round scored on this
    split is kept from that round's record."""
    from dataclasses import replace

    from edm_ars.analysis.splits import refit_models, split_facts, split_seed
    from edm_ars.core.reuse import earlier_record

    k = int(smk.wildcards.split)
    seed = split_seed(smk.params.seed, k)
    report = read_json(smk.input.report, "data_report")
    task = report["task"]
    fitted, failed = {}, []
    for name in smk.params.models:
        info = read_json(smk.input[f"{name}_meta"])
        if info.get("failed"):
            failed.append(name)
        else:
            fitted[name] = info
    inputs = {name: smk.input[f"{name}_meta"] for name in fitted}
    kept = earlier_record(smk) or {}
    if (kept.get("facts") or {}).get("seed") != seed:
        kept = {}
    out = {"split": k, "facts": kept.get("facts"), "models": {}, "inputs": inputs, "not_fitted": failed,
           "errors": []}
    for name in fitted:
        prev = (kept.get("models") or {}).get(name)
        if prev and prev.get("metric") is not None and (kept.get("inputs") or {}).get(name) == inputs[name]:
            out["models"][name] = prev
            log.info("split %d, %s: kept from the previous round (same fit, same data)", k, name)
    todo = {name: info for name, info in fitted.items() if name not in out["models"]}
    if todo or out["facts"] is None:
        from edm_ars.data.engineer import prepare, protocol, read_needed
        from edm_ars.jobs.rule_io import layout_of, registry_of

        reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
        spec = read_json(smk.input.spec, "research_spec")
        raw = read_needed(smk.input.raw, spec, reg, read_json(smk.input.manifest)["columns"])
        # the round's protocol (its imputation strategy as the data report records it), another split seed
        proto = replace(protocol(smk.params.protocol, smk.params.seed, report["imputation_strategy"]), seed=seed)
        prep = prepare(raw, spec, reg, layout_of(smk), proto, describe=False)
        out["facts"] = split_facts(prep.report)
        out["models"] |= refit_models(task, todo, prep, smk.params.seed, out["errors"], f"split {k}")
    out["models"] = {name: out["models"][name] for name in fitted}
    log.info("split %d (seed %d): %d test students in %d clusters; %s", k, seed, out["facts"]["test_n"],
             out["facts"]["test_clusters"], {m: v["metric"] for m, v in out["models"].items()})
    write_json(smk.output.run, out)


def splits(smk: Any) -> None:
    """splits.json: the primary metric of every single model on the main split and the repeated ones, with its
    mean, SD, min and max across splits (edm_ars.analysis.splits.summarize)."""
    from edm_ars.analysis.splits import summarize

    evaluation = read_json(smk.input.evaluation)
    report = read_json(smk.input.report, "data_report")
    runs = [read_json(p) for p in smk.input.runs]
    doc = summarize(evaluation, report, runs, smk.params.repeated)
    for m, rec in doc["models"].items():
        if rec.get("n"):
            log.info("%s: %s over %d splits mean %.4f, SD %.4f, range %.4f-%.4f", m, doc["primary_metric"],
                     rec["n"], rec["mean"], rec["sd"], rec["min"], rec["max"])
    write_json(smk.output.splits, doc, "splits")
