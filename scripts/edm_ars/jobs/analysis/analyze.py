"""The Analyst's last job (envs/analysis.yaml): analyze, results.json from the analysis phases."""

from __future__ import annotations

from typing import Any

from edm_ars.core.artifacts import read_json, write_json
from edm_ars.jobs.rule_io import log


def analyze(smk: Any) -> None:
    """results.json from the analysis phases (evaluate, explain, fairness, stability, repeated splits)."""
    from edm_ars.core.conventions import applied_threshold

    ev = read_json(smk.input.evaluation)
    ex = read_json(smk.input.explain)
    fa = read_json(smk.input.fairness)
    # stability under perturbation, except in a screening round (edm_ars.formulate.branches: a candidate study screened)
    st = read_json(smk.input.stability) if "stability" in smk.input.keys() else {}
    screening = smk.params.get("screening")
    # the repeated grouped splits, unless analysis.repeated_splits is 1
    sp = read_json(smk.input.splits, "splits") if "splits" in smk.input.keys() else None
    supplementary = None
    if "supplementary_plan" in smk.input.keys():  # codegen.n > 0: the round's supplementary analyses
        from edm_ars.codegen.supplementary import summary

        plan = read_json(smk.input.supplementary_plan, "supplementary_plan")
        files = smk.input.supplementary
        records = [rec for f in ([files] if isinstance(files, str) else files)
                   if (rec := read_json(f, "supplementary_record"))["status"] != "empty"]
        supplementary = summary(plan, records, plan["sandbox"])
    flags = list(ev["flags"])
    audit = fa.get("audit") or {}
    flags += [f"fairness: {f}" for f in audit.get("flags", []) if "unreliable" not in f]
    if st.get("unstable"):
        flags.append(f"unstable: mean top-5 SHAP overlap {st['top5_overlap']['mean']:.2f} across "
                     f"{st['n_perturbations']} perturbations is under "
                     f"{applied_threshold(st, 'unstable_top5', file=smk.input.stability):g}")
    results = {
        "task": ev["task"], "primary_metric": ev["primary_metric"], "best_model": ev["best_model"],
        "selection_rule": ev["selection_rule"], "selection_evidence": ev["selection_evidence"],
        "interpreted_model": ev["interpreted_model"], "n_bootstrap": ev["n_bootstrap"], "test_n": ev["test_n"],
        "interval_method": ev["interval_method"], "test_clusters": ev["test_clusters"],
        "models": ev["models"], "baselines": ev["baselines"], "paired_comparisons": ev["paired_comparisons"],
        "comparison_alpha": ev["comparison_alpha"],
        "top_features": ex["top_features"],
        "shap": {"by_model": {m: {"explainer": v.get("explainer"), "n_explained": v.get("n_explained"),
                                  "top_features": v["top_features"]} for m, v in ex["by_model"].items()},
                 "skipped": ex["skipped"]},
        "fairness": audit,
        # the school-level structure of every declared cluster level (rule multilevel, multilevel.json)
        **({"multilevel": read_json(smk.input.multilevel, "multilevel")}
           if "multilevel" in smk.input.keys() else {}),
        # the registry's published findings tested on the training rows (rule replication, replication.json)
        **({"replication": read_json(smk.input.replication, "replication")}
           if "replication" in smk.input.keys() else {}),
        **({"stability": st} if st else {}),
        **({"splits": _split_spread(sp)} if sp else {}),
        **({"supplementary": supplementary} if supplementary is not None else {}),
        **({"screening": screening} if screening else {}),
        "figures": ev["figures"] + ex["figures"] + fa["figures"],
        "tables": ev["tables"] + fa["tables"],
        "flags": flags,
        "thresholds": {k: applied_threshold(ev, k, file=smk.input.evaluation) for k in ("quality_floor", "leakage_auc", "leakage_r2")},
        "errors": ev["errors"] + ex["errors"] + fa["errors"] + st.get("errors", []) + (sp or {}).get("errors", []),
    }
    log.info("results: best %s, %d flags, %d errors", results["best_model"], len(flags), len(results["errors"]))
    write_json(smk.output.results, results, "results")


def _split_spread(doc: dict[str, Any]) -> dict[str, Any]:
    """What results.json carries of splits.json: the spread per model and the reference model's comparison with
    its single-split interval, the seeds and the students and clusters of every split (not the per-split metrics
    of every model twice: they are in `models.<m>.values`)."""
    keep = ("primary_metric", "n_splits", "n_repeated", "seeds", "clustered", "test_clusters", "test_n", "refitted",
            "not_refitted", "tuning", "models", "reference")
    return {k: doc[k] for k in keep} | {"splits": [{k: v for k, v in s.items() if k != "metrics"}
                                                   for s in doc["splits"]]}
