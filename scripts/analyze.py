"""Rule analyze: assemble results.json from the analysis phases (evaluate, explain, fairness, stability)."""

from edm_ars.artifacts import read_json, write_json
from edm_ars.conventions import applied_threshold
from edm_ars.rule_io import log, run


def main(smk):
    ev = read_json(smk.input.evaluation)
    ex = read_json(smk.input.explain)
    fa = read_json(smk.input.fairness)
    st = read_json(smk.input.stability)
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
        "models": ev["models"],
        "top_features": ex["top_features"],
        "shap": {"by_model": {m: {"explainer": v.get("explainer"), "n_explained": v.get("n_explained"),
                                  "top_features": v["top_features"]} for m, v in ex["by_model"].items()},
                 "skipped": ex["skipped"]},
        "fairness": audit,
        "stability": st,
        "figures": ev["figures"] + ex["figures"] + fa["figures"],
        "tables": ev["tables"] + fa["tables"],
        "flags": flags,
        "thresholds": {k: applied_threshold(ev, k, file=smk.input.evaluation) for k in ("quality_floor", "leakage_auc")},
        "errors": ev["errors"] + ex["errors"] + fa["errors"] + st.get("errors", []),
    }
    log.info("results: best %s, %d flags, %d errors", results["best_model"], len(flags), len(results["errors"]))
    write_json(smk.output.results, results, "results")


run(snakemake, main)  # noqa: F821
