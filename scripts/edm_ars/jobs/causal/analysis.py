"""The causal study's estimation (envs/analysis.yaml): the estimators chosen by the design and the figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import read_json, write_json
from edm_ars.jobs.rule_io import earlier_reviews, log


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
    results["figures"] = causal_figures(data, results, Path(smk.output.figures), propensity=propensity,
                                        labels={c["name"]: c["label"] for c in spec["covariates"]})
    write_json(smk.output.results, results)
