"""Rule stability: spread of the metric and agreement of the top features across perturbations."""

from edm_ars.artifacts import read_json, write_json
from edm_ars.rule_io import log, run
from edm_ars.stability import summarize


def main(smk):
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


run(snakemake, main)  # noqa: F821
