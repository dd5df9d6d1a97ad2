"""The Analyst's jobs (envs/analysis.yaml): fit_model, fit_stacking, evaluate, explain, fairness, stability_run,
stability, split_run, splits, analyze."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import read_json, write_csv, write_json
from edm_ars.jobs.rule_io import log


def fit_model(smk: Any) -> None:
    """Tune one model family on training rows only. A recorded failure (a condition of the data, the memory) is
    written into the model's record instead of a model, so the other families and the later phases go on."""
    import joblib
    import numpy as np
    import pandas as pd

    from edm_ars.analysis import large_data
    from edm_ars.analysis.models import label_of
    from edm_ars.core.frames import read_column, read_frame, write_frame
    from edm_ars.core.phases import recorded

    report = read_json(smk.input.report, "data_report")
    X = read_frame(smk.input.train_X)
    y = read_column(smk.input.train_y)
    groups = read_column(smk.input.train_groups).to_numpy()
    name, task = smk.wildcards.model, report["task"]
    errors: list[dict[str, Any]] = []
    fit = None
    with recorded(errors, "fit", name):
        # above analysis.large_data.rows: tuned on a subsample of the schools, refitted on all training rows
        fit = large_data.tune(name, task, X, y, groups, seed=smk.params.seed, n_folds=smk.params.cv_folds,
                              policy=large_data.policy_of(smk.params.large_data), data_rows=report["original_n"])
    if fit is None:
        joblib.dump(None, smk.output.model)
        write_frame(smk.output.oof, pd.DataFrame({"oof": np.full(len(y), np.nan)}))
        write_json(smk.output.meta, {"family": name, "label": label_of(name, task), "failed": errors[0],
                                     "features": list(X.columns)})
        return
    log.info("%s: CV %s %.4f with %s (%s)", name, fit["cv_metric"], fit["cv_score"], fit["best_params"],
             fit["search"])
    joblib.dump(fit.pop("model"), smk.output.model)
    write_frame(smk.output.oof, pd.DataFrame({"oof": fit.pop("oof")}))
    write_json(smk.output.meta, fit | {"features": list(X.columns)})


def fit_stacking(smk: Any) -> None:
    """A meta-learner on the base models' out-of-fold predictions (no refitting)."""
    import joblib

    from edm_ars.analysis import models
    from edm_ars.core.errors import EdmArsError
    from edm_ars.core.frames import read_column, read_frame

    report = read_json(smk.input.report, "data_report")
    y = read_column(smk.input.train_y).to_numpy()
    groups = read_column(smk.input.train_groups).to_numpy()
    oof, skipped = {}, []
    for name in smk.params.bases:
        meta = read_json(smk.input[f"{name}_meta"])
        if meta.get("failed"):
            skipped.append(name)
            continue
        oof[name] = read_frame(smk.input[f"{name}_oof"], columns=["oof"])["oof"].to_numpy()
    if len(oof) < 2:
        raise EdmArsError(f"stacking needs two fitted base models; usable: {sorted(oof)}, failed: {skipped}")
    fit = models.fit_stacking(report["task"], oof, y, groups, seed=smk.params.seed, n_folds=smk.params.cv_folds)
    log.info("stacking over %s: CV %.4f, weights %s", sorted(oof), fit["cv_score"], fit["meta_weights"])
    joblib.dump(fit.pop("model"), smk.output.model)
    write_json(smk.output.meta, fit | {"skipped_bases": skipped})


def fit_baselines(smk: Any) -> None:
    """The baselines (edm_ars.analysis.baselines) on the training rows: base rate or mean, one prior-achievement predictor,
    a plain linear model on a small core set. Revision rounds reuse them like the other fits (rules/common.smk)."""
    import joblib

    from edm_ars.analysis.baselines import fit_baselines as fit
    from edm_ars.core.frames import read_column, read_frame
    from edm_ars.jobs.rule_io import registry_of

    report = read_json(smk.input.report, "data_report")
    reg = registry_of(smk)
    X = read_frame(smk.input.train_X)
    y = read_column(smk.input.train_y).to_numpy(dtype=float)
    labels = {name: str(rec.get("label") or name) for name, rec in reg.tier1.items()}
    prior = list(reg.dataset.get("prior_achievement") or [])
    models, meta = fit(report["task"], X, y, report["feature_sources"], prior=prior, k=smk.params.core_k,
                       labels=labels)
    for name, info in meta.items():
        log.info("%s: %s on %s (%s)", name, info["label"], info["predictors"] or "no predictor", info["chosen_by"])
    joblib.dump(models, smk.output.model)
    write_json(smk.output.meta, {"baselines": meta, "features": list(X.columns), "declared_prior": prior})


def _baseline_predictions(smk: Any, task: str, X: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Test predictions of the baselines (none when the rule gave no baselines input)."""
    if "baselines" not in smk.input.keys():
        return {}, {}
    import joblib

    from edm_ars.analysis.baselines import predict
    from edm_ars.core.errors import DataError

    info = read_json(smk.input.baselines_meta)
    if info["features"] != list(X.columns):
        raise DataError(f"the baselines were trained on other columns than {smk.input.test_X}")
    fitted = joblib.load(smk.input.baselines)
    return {n: predict(m, task, X) for n, m in fitted.items()}, info["baselines"]


def _test_predictions(smk: Any, task: str, X: Any) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """Test predictions of every fitted model; stacking combines the base models' predictions."""
    import joblib

    from edm_ars.analysis.models import predict
    from edm_ars.core.conventions import STACKING
    from edm_ars.core.errors import DataError, MissingPredictions
    from edm_ars.core.phases import recorded

    preds, meta, errors = {}, {}, []
    for name in smk.params.models:
        info = read_json(smk.input[f"{name}_meta"])
        if info.get("failed"):
            errors.append(info["failed"])
            continue
        if info.get("convergence_warnings"):
            errors.append({"phase": "fit", "what": name, "type": "ConvergenceWarning",
                           "message": f"{info['convergence_warnings']} cross-validation fits stopped at their "
                                      "iteration limit before converging"})
        if name != STACKING and info["features"] != list(X.columns):
            raise DataError(f"model {name} was trained on other columns than {smk.input.test_X}")
        with recorded(errors, "evaluate", name):
            model = joblib.load(smk.input[name])
            if name == STACKING:
                missing = [b for b in model.base_names if b not in preds]
                if missing:
                    raise MissingPredictions(f"stacking needs predictions of {missing}, which failed")
                preds[name] = model.predict_from_base({b: preds[b] for b in model.base_names})
            else:
                preds[name] = predict(model, task, X)
            meta[name] = info
    return preds, meta, errors


def evaluate(smk: Any) -> None:
    """Held-out metrics with intervals, selection, figures (the Analyst's evaluation phase)."""
    import pandas as pd

    from edm_ars.analysis import figures
    from edm_ars.analysis.evaluation import (
        ALPHA,
        above_floor,
        best_interpretable,
        evaluate_models,
        flags_for,
        paired_comparisons,
        primary_metric,
        resample_counts,
        select_best,
        thresholds_for,
    )
    from edm_ars.core.errors import DataError
    from edm_ars.core.frames import read_column, read_frame, write_frame

    report = read_json(smk.input.report, "data_report")
    task = report["task"]
    X = read_frame(smk.input.test_X)
    y = read_column(smk.input.test_y).to_numpy(dtype=float)
    groups = read_column(smk.input.test_groups).to_numpy()
    preds, meta, errors = _test_predictions(smk, task, X)
    if not preds:
        raise DataError(f"no model could be evaluated: {[e['message'] for e in errors]}")
    base_preds, base_meta = _baseline_predictions(smk, task, X)
    primary = primary_metric(task)
    counts, resampling = resample_counts(len(y), smk.params.n_bootstrap, smk.params.seed, groups,
                                         bool((report.get("split") or {}).get("clustered")))
    log.info("intervals: %s over %s test clusters", resampling["interval_method"], resampling["test_clusters"])
    scored, dist = evaluate_models(task, y, preds | base_preds, n_resamples=smk.params.n_bootstrap,
                                   seed=smk.params.seed, counts=counts)
    models = {n: scored[n] for n in preds}
    baselines = {n: scored[n] | base_meta[n] for n in base_preds}
    for name, m in models.items():
        info = meta[name]
        m.update(label=info["label"], best_params=info["best_params"], cv_score=info["cv_score"],
                 search=info["search"])
        if info.get("large_data"):  # tuned on a subsample of the schools (edm_ars.analysis.large_data): the paper says so
            m["large_data"] = info["large_data"]
        log.info("%s: %s %.4f [%.4f, %.4f]", name, primary, m["metrics"][primary], *m["ci"][primary])
    for name, m in baselines.items():
        log.info("%s (baseline): %s %.4f [%.4f, %.4f]", name, primary, m["metrics"][primary], *m["ci"][primary])
    best, rule, evidence = select_best(models, primary, {n: dist[n] for n in models})
    interpreted = best_interpretable(models, primary, best)
    top = evidence["top_single"]
    comparisons = paired_comparisons(dist, best, primary,
                                     extra=[(top, m) for m in evidence["overlapping_top"] if m != top])
    for c in comparisons:
        log.info("paired %s - %s: %+.4f [%+.4f, %+.4f], p %.4f, Holm p %s (%s)", c["a"], c["b"], c["mean"], *c["ci"],
                 c["p"], "--" if c["p_holm"] is None else f"{c['p_holm']:.4f}", c["verdict"])

    fig_dir = Path(smk.output.figures)
    labels = {n: models[n]["label"] for n in models}
    figs = []

    def figure(kind: str, drawn: dict[str, Any], caption: str) -> None:
        """A figure entry: the PDF (for the paper), its PNG rendering and what the drawn figure shows."""
        figs.append({"path": f"figures/evaluate/{kind}.pdf", "kind": kind, "caption": caption,
                     "png": f"figures/evaluate/{kind}.png", "drawn": drawn})

    if task == "binary_classification":
        figure("roc", figures.roc_figure(y, preds, labels, {n: models[n]["metrics"]["auc"] for n in models},
                                         fig_dir / "roc.pdf"),
               "ROC curves of all models on the held-out test students.")
        figure("calibration", figures.calibration_figure(y, preds[best], labels[best], fig_dir / "calibration.pdf"),
               f"Calibration of the selected model ({labels[best]}) by decile of predicted probability on the "
               "held-out test students.")
    else:
        figure("observed_predicted",
               figures.observed_predicted_figure(y, preds[best], labels[best], fig_dir / "observed_predicted.pdf"),
               f"Observed against predicted values of the selected model ({labels[best]}) on the held-out test "
               "students.")
        figure("residuals", figures.residual_figure(y, preds[best], labels[best], fig_dir / "residuals.pdf"),
               f"Residuals of the selected model ({labels[best]}) on the held-out test students.")
    rows = [{"model": n, "label": table[n]["label"], "baseline": n in baselines, **table[n]["metrics"],
             **{f"{k}_low": v[0] for k, v in table[n]["ci"].items()},
             **{f"{k}_high": v[1] for k, v in table[n]["ci"].items()}} for table in (models, baselines) for n in table]
    write_csv(smk.output.metrics_table, pd.DataFrame(rows))
    write_frame(smk.output.predictions, pd.DataFrame(preds))
    evaluation = {
        "task": task, "primary_metric": primary, "best_model": best, "selection_rule": rule,
        "selection_evidence": evidence, "interpreted_model": interpreted, "above_floor": above_floor(models, primary),
        "n_bootstrap": smk.params.n_bootstrap, "test_n": int(len(y)), **resampling, "models": models,
        "baselines": baselines, "paired_comparisons": comparisons, "comparison_alpha": ALPHA, "figures": figs,
        "tables": [{"path": "tables/metrics.csv", "kind": "metrics"}],
        "flags": flags_for(task, models, smk.params.leakage),
        "thresholds": thresholds_for(task, smk.params.leakage), "errors": errors,
    }
    log.info("selected %s (interpreted: %s); evidence %s", best, interpreted, evidence)
    write_json(smk.output.evaluation, evaluation)


def explain(smk: Any) -> None:
    """SHAP for every interpretable model above the floor (edm_ars.analysis.explain.explain_models)."""
    import joblib

    from edm_ars.analysis.explain import explain_models
    from edm_ars.core.frames import read_frame
    from edm_ars.core.reuse import earlier_record
    from edm_ars.jobs.rule_io import registry_of

    evaluation = read_json(smk.input.evaluation)
    report = read_json(smk.input.report, "data_report")
    labels = {name: rec.get("label", name) for name, rec in registry_of(smk).tier1.items()}
    files = {name: smk.input[name] for name in evaluation["models"] if name in smk.input.keys()}
    earlier = earlier_record(smk)
    doc = explain_models(evaluation, files, joblib.load, read_frame(smk.input.train_X),
                         read_frame(smk.input.test_X), report["feature_sources"], labels, smk.params.shap,
                         smk.params.seed, Path(smk.output.figures), earlier=earlier,
                         earlier_figures=Path(smk.input.earlier_figures) if earlier else None)
    write_json(smk.output.explain, doc)


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

    from edm_ars.analysis.fairness import (
        audit,
        calibration_group_figure,
        decision_rule,
        fairness_figure,
        group_calibration_curves,
    )
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
    if split.get("clustered"):
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
                                     "tables": [{"path": "tables/fairness.csv", "kind": "fairness"}]},
               "fairness")


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
    from edm_ars.analysis.stability import perturbed, refit
    from edm_ars.core.frames import read_column, read_frame

    seed = smk.params.seed

    def data() -> tuple[Any, ...]:
        X, y = read_frame(smk.input.train_X), read_column(smk.input.train_y).to_numpy(dtype=float)
        Xt = read_frame(smk.input.test_X)
        sources = read_json(smk.input.report, "data_report")["feature_sources"]
        return perturbed(kind, arg, seed, X, y, Xt, sources, lambda strategy: _reprepared(smk, seed, strategy))

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
