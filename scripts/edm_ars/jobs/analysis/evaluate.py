"""The Analyst's evaluation job (envs/analysis.yaml): evaluate, the held-out metrics of every fitted model and
baseline with their intervals, the selection of the best model and the evaluation figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import read_json, write_csv, write_json
from edm_ars.jobs.rule_io import log


def _kept_in_range(model: Any, raw: Any, record: dict[str, Any]) -> Any:
    """A regression's test predictions clipped to its training outcome's range; the record gets the range and how
    many test predictions were outside it (a binary model's probabilities are returned as they are)."""
    from edm_ars.analysis.models import outcome_range, within_range

    rng = outcome_range(model)
    if rng is None:
        return raw
    pred, n = within_range(raw, rng)
    record["prediction_range"] = {"low": rng[0], "high": rng[1], "n_clipped": n}
    return pred


def _baseline_predictions(smk: Any, task: str, X: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Test predictions of the baselines (none when the rule gave no baselines input), a regression's kept within
    the training outcome's range."""
    if "baselines" not in smk.input.keys():
        return {}, {}
    from edm_ars.analysis.baselines import predict
    from edm_ars.analysis.models import load_fitted
    from edm_ars.core.errors import DataError

    info = read_json(smk.input.baselines_meta)
    if info["features"] != list(X.columns):
        raise DataError(f"the baselines were trained on other columns than {smk.input.test_X}")
    fitted = load_fitted(smk.input.baselines)
    meta = {n: dict(info["baselines"][n]) for n in fitted}
    return {n: _kept_in_range(m, predict(m, task, X, clip=False), meta[n]) for n, m in fitted.items()}, meta


def _test_predictions(smk: Any, task: str, X: Any) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """Test predictions of every fitted model; stacking combines the base models' predictions."""
    from edm_ars.analysis.models import load_fitted, predict
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
            model = load_fitted(smk.input[name])
            if name == STACKING:
                missing = [b for b in model.base_names if b not in preds]
                if missing:
                    raise MissingPredictions(f"stacking needs predictions of {missing}, which failed")
                raw = model.predict_from_base({b: preds[b] for b in model.base_names}, clip=False)
            else:
                raw = predict(model, task, X, clip=False)
            preds[name] = _kept_in_range(model, raw, info)
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
        split_grouped,
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
                                         split_grouped(report.get("split") or {}))
    log.info("intervals: %s over %s test clusters", resampling["interval_method"], resampling["test_clusters"])
    scored, dist = evaluate_models(task, y, preds | base_preds, n_resamples=smk.params.n_bootstrap,
                                   seed=smk.params.seed, counts=counts)
    models = {n: scored[n] for n in preds}
    baselines = {n: scored[n] | base_meta[n] for n in base_preds}
    for name, m in models.items():
        info = meta[name]
        m.update(label=info["label"], best_params=info["best_params"], cv_score=info["cv_score"],
                 search=info["search"])
        if info.get("prediction_range"):  # a regression's predictions kept within the training outcome's range
            m["prediction_range"] = info["prediction_range"]
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
