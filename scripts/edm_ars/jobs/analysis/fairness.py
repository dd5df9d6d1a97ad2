"""The Analyst's fairness job (envs/analysis.yaml): fairness, the subgroup audit of the selected model on the
test students with its figures and table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import read_json, write_csv, write_json
from edm_ars.jobs.rule_io import log


def _at_risk_class(cfg: dict[str, Any], reg: Any, spec: dict[str, Any]) -> tuple[int | None, str | None]:
    """The binary outcome's class a school would act on ("at risk"): config analysis.fairness.at_risk_class, else
    the registry question's `at_risk:`, else None (not declared); with where it came from."""
    from edm_ars.data.registry import find_question

    if cfg.get("at_risk_class") is not None:
        return int(cfg["at_risk_class"]), "config"
    try:
        q = find_question(reg, spec["question_id"])
    except Exception:  # noqa: BLE001 - a spec from a question the registry does not hold
        q = {}
    if q.get("outcome") == spec["outcome"]["name"] and q.get("at_risk") is not None:
        return int(q["at_risk"]), "registry"
    return None, None


def _derived_declared(reg: Any, attributes: list[str]) -> dict[str, dict[str, Any]]:
    """Attributes the registry declares as derived from a predictor (`derived_from:`)."""
    out = {}
    for a in attributes:
        src = (reg.variable(a) or {}).get("derived_from")
        if src:
            out[a] = {"predictor": str(src), "label": (reg.variable(str(src)) or {}).get("label")}
    return out


def fairness(smk: Any) -> None:
    """Subgroup audit of the selected model on the test students.

    Groups come from test_protected.parquet (original labels snapshotted before encoding), never from one-hot columns.
    Binary outcomes: calibration per group and error rates at the rule "flag the k% most at risk". Continuous
    outcomes: errors in units of the training outcome's standard deviation, so the gap threshold means the same on
    any scale. Intervals: a cluster bootstrap of the test schools when the split is clustered."""
    import hashlib

    import numpy as np
    import pandas as pd

    from edm_ars.analysis.evaluation import split_grouped
    from edm_ars.analysis.fairness import audit, decision_rule
    from edm_ars.analysis.fairness_figures import calibration_group_figure, fairness_figure, group_calibration_curves
    from edm_ars.core.frames import read_column, read_frame, read_labels
    from edm_ars.core.phases import recorded
    from edm_ars.core.reuse import earlier_record, same_inputs
    from edm_ars.data.registry import value_labels
    from edm_ars.jobs.rule_io import registry_of

    evaluation = read_json(smk.input.evaluation)
    spec = read_json(smk.input.spec, "research_spec")
    report = read_json(smk.input.report)
    reg = registry_of(smk)
    task, best = evaluation["task"], evaluation["best_model"]
    y = read_column(smk.input.test_y).to_numpy(dtype=float)
    train_y = read_column(smk.input.train_y).to_numpy(dtype=float)
    pred = read_frame(smk.input.predictions, columns=[best])[best].to_numpy(dtype=float)
    protected = read_labels(smk.input.test_protected)
    test_x = read_frame(smk.input.test_X)
    cfg = smk.params.fairness
    attributes = list(cfg.get("attributes") or spec["subgroups"])
    pairs = [tuple(p) for p in (cfg.get("intersections") or reg.protected_intersections)
             if all(a in protected.columns for a in p)]
    split = report.get("split") or {}
    clusters = None
    if split_grouped(split):  # clusters, or units with repeated records: resampled whole
        clusters = read_column(smk.input.test_groups).astype(str).to_numpy()
    rule = None
    scale = 1.0
    error_scale = None
    if task == "regression":
        scale = float(np.std(train_y, ddof=1)) or 1.0
        error_scale = {"kind": "training_outcome_sd", "sd": scale, "n_train": int(len(train_y))}
    else:
        cls, cls_source = _at_risk_class(cfg, reg, spec)
        rule = {**decision_rule(cls, cfg.get("flag_share"), train_y), "at_risk_source": cls_source}
    labels = {name: rec.get("label", name) for name, rec in reg.tier1.items()}
    values = {name: value_labels(reg, name) for name in reg.tier1 if value_labels(reg, name)}
    derived = _derived_declared(reg, attributes)
    numeric = test_x.select_dtypes("number")
    numeric = numeric[[c for c in numeric.columns if numeric[c].nunique() > 2]]  # no one-hot/binary columns
    errors: list[dict[str, Any]] = []
    result = None
    # the audit depends on the audited predictions, the groups, the rule and the clusters
    inputs = {"model": best, "predictions": hashlib.sha256(pred.tobytes()).hexdigest(),
              "protected": smk.input.test_protected, "spec": smk.input.spec, "values": values,
              "rule": rule, "error_scale": error_scale, "derived": derived,
              "clusters": None if clusters is None else hashlib.sha256("\n".join(clusters).encode()).hexdigest()}
    kept = earlier_record(smk)
    if same_inputs(kept, inputs) and kept["audit"] is not None:
        log.info("audit of %s kept from the previous round (same predictions, same groups)", best)
        result = kept["audit"]
    if not any(a in protected.columns for a in attributes):
        # a registry without protected attributes (or subgroups): nothing to audit, and nothing failed
        log.info("no protected attribute among the test rows' columns (subgroups: %s): no subgroup audit",
                 ", ".join(attributes) or "none")
    else:
        with recorded(errors, "fairness"):
            result = result or audit(task, y / scale, pred / scale, protected, attributes, intersections=pairs,
                                     rule=rule, n_resamples=smk.params.n_bootstrap, seed=smk.params.seed,
                                     min_group=cfg["min_group"], gap_threshold=cfg["gap_threshold"], labels=labels,
                                     values=values, clusters=clusters, derived=derived, predictors=numeric,
                                     error_scale=error_scale)
    fig_dir = Path(smk.output.figures)
    fig_dir.mkdir(parents=True, exist_ok=True)
    figs, rows = [], []
    if result is not None:
        result["model"] = best
        shown = [a for a in attributes if a in result["attributes"]]
        drawn = fairness_figure(result, fig_dir / "fairness.pdf", attributes=shown)
        boot = "cluster" if result.get("bootstrap") == "cluster" else ""
        if task == "regression":
            caption = (f"Held-out RMSE of the selected model by student subgroup, in standard deviations of the "
                       f"training outcome, with 95% {boot + ' ' if boot else ''}bootstrap intervals; the number of "
                       "test students beside each group; the dotted line marks the whole test set.")
        else:
            caption = (f"Held-out AUC of the selected model by student subgroup with 95% {boot + ' ' if boot else ''}"
                       "bootstrap intervals; the number of test students beside each group; the dotted line marks "
                       "the whole test set.")
        figs.append({"path": "figures/fairness/fairness.pdf", "kind": "fairness", "caption": caption,
                     "png": "figures/fairness/fairness.png", "drawn": drawn})
        if task == "binary_classification":
            curves = group_calibration_curves(y, pred, protected, result, values)
            drawn = calibration_group_figure(curves, result, fig_dir / "fairness_calibration.pdf")
            figs.append({"path": "figures/fairness/fairness_calibration.pdf", "kind": "fairness_calibration",
                         "caption": "Calibration of the selected model by student subgroup: the observed proportion "
                                    "of the positive outcome against the mean predicted probability in bins of the "
                                    "whole test set's predictions (bins with fewer than ten of a group's students "
                                    "left out); the legend gives each group's number of test students; the dotted "
                                    "diagonal marks perfect calibration.",
                         "png": "figures/fairness/fairness_calibration.png", "drawn": drawn})
        for attr, info in result["attributes"].items():
            for g in info["groups"]:
                rows.append({"attribute": attr, **{k: v for k, v in g.items() if not isinstance(v, (dict, list))}})
        for flag in result["flags"]:
            log.info("fairness flag: %s", flag)
    write_csv(smk.output.table, pd.DataFrame(rows))
    write_json(smk.output.fairness, {"audit": result, "figures": figs, "errors": errors, "inputs": inputs,
                                     "tables": [{"path": "tables/fairness.csv", "kind": "fairness"}]
                                     if result is not None else []},
               "fairness")
