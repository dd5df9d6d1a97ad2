"""Rule fairness (Analyst, fairness phase): subgroup audit of the selected model on the test students.

Groups come from test_protected.csv (original labels snapshotted before encoding), never from
one-hot columns. For continuous outcomes errors are expressed in outcome standard deviations, so
the gap threshold means the same on any scale."""

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from edm_ars.artifacts import read_json, write_csv, write_json
from edm_ars.fairness import audit, fairness_figure
from edm_ars.phases import recorded
from edm_ars.reuse import earlier_record, same_inputs
from edm_ars.rule_io import log, registry_of, run


def main(smk):
    evaluation = read_json(smk.input.evaluation)
    spec = read_json(smk.input.spec, "research_spec")
    reg = registry_of(smk)
    task, best = evaluation["task"], evaluation["best_model"]
    y = pd.read_csv(smk.input.test_y).iloc[:, 0].to_numpy(dtype=float)
    pred = pd.read_csv(smk.input.predictions)[best].to_numpy(dtype=float)
    protected = pd.read_csv(smk.input.test_protected, dtype=str, keep_default_na=True)
    cfg = smk.params.fairness
    attributes = list(cfg.get("attributes") or spec["subgroups"])
    pairs = [tuple(p) for p in (cfg.get("intersections") or reg.protected_intersections)
             if all(a in protected.columns for a in p)]
    scale = 1.0
    if task == "regression":
        scale = float(np.std(y)) or 1.0
    labels = {name: rec.get("label", name) for name, rec in reg.tier1.items()}
    errors, result = [], None
    # the audit depends on the audited predictions, the groups and the specification's attributes
    inputs = {"model": best, "predictions": hashlib.sha256(pred.tobytes()).hexdigest(),
              "protected": smk.input.test_protected, "spec": smk.input.spec}
    kept = earlier_record(smk)
    if same_inputs(kept, inputs) and kept["audit"] is not None:
        log.info("audit of %s kept from the previous round (same predictions, same groups)", best)
        result = kept["audit"]
    with recorded(errors, "fairness"):
        result = result or audit(task, y / scale if task == "regression" else y, pred / scale if task == "regression" else pred,
                       protected, attributes, intersections=pairs, n_resamples=smk.params.n_bootstrap,
                       seed=smk.params.seed, min_group=cfg["min_group"], gap_threshold=cfg["gap_threshold"],
                       labels=labels)
    fig_dir = Path(smk.output.figures)
    fig_dir.mkdir(parents=True, exist_ok=True)
    figs, rows = [], []
    if result is not None:
        result["model"] = best
        result["error_scale"] = "outcome standard deviations" if task == "regression" else None
        fairness_figure(result, fig_dir / "fairness.pdf", attributes=[a for a in attributes if a in result["attributes"]])
        metric = result["primary_metric"].upper()
        figs.append({"path": "figures/fairness/fairness.pdf", "kind": "fairness",
                     "caption": f"Held-out {metric} of the selected model by student subgroup with 95% bootstrap "
                                "intervals; the dotted line marks the whole test set."})
        for attr, info in result["attributes"].items():
            for g in info["groups"]:
                rows.append({"attribute": attr, **{k: v for k, v in g.items() if not isinstance(v, (dict, list))}})
        for flag in result["flags"]:
            log.info("fairness flag: %s", flag)
    write_csv(smk.output.table, pd.DataFrame(rows))
    write_json(smk.output.fairness, {"audit": result, "figures": figs, "errors": errors, "inputs": inputs,
                                     "tables": [{"path": "tables/fairness.csv", "kind": "fairness"}]})


run(snakemake, main)  # noqa: F821
