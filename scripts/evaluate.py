"""Rule evaluate (Analyst, evaluation phase): held-out metrics with intervals, selection, figures."""

from pathlib import Path

import joblib
import pandas as pd

from edm_ars import figures
from edm_ars.analysis import above_floor, best_interpretable, evaluate_models, flags_for, primary_metric, select_best
from edm_ars.artifacts import read_json, write_csv, write_json
from edm_ars.errors import DataError, MissingPredictions
from edm_ars.models import STACKING, predict
from edm_ars.phases import recorded
from edm_ars.rule_io import log, run


def predictions_of(smk, task, X):
    """Test predictions of every fitted model; stacking combines the base models' predictions."""
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


def main(smk):
    report = read_json(smk.input.report, "data_report")
    task = report["task"]
    X = pd.read_csv(smk.input.test_X)
    y = pd.read_csv(smk.input.test_y).iloc[:, 0].to_numpy(dtype=float)
    preds, meta, errors = predictions_of(smk, task, X)
    if not preds:
        raise DataError(f"no model could be evaluated: {[e['message'] for e in errors]}")
    primary = primary_metric(task)
    models, dist = evaluate_models(task, y, preds, n_resamples=smk.params.n_bootstrap, seed=smk.params.seed)
    for name, m in models.items():
        info = meta[name]
        m.update(label=info["label"], best_params=info["best_params"], cv_score=info["cv_score"],
                 fit_seconds=info["fit_seconds"], fit_cpu_seconds=info["fit_cpu_seconds"], search=info["search"])
        log.info("%s: %s %.4f [%.4f, %.4f]", name, primary, m["metrics"][primary], *m["ci"][primary])
    best, rule, evidence = select_best(models, primary, dist)
    interpreted = best_interpretable(models, primary, best)

    fig_dir = Path(smk.output.figures)
    labels = {n: models[n]["label"] for n in models}
    figs = []
    if task == "binary_classification":
        figures.roc_figure(y, preds, labels, {n: models[n]["metrics"]["auc"] for n in models}, fig_dir / "roc.pdf")
        figs.append({"path": "figures/evaluate/roc.pdf", "kind": "roc",
                     "caption": "ROC curves of all models on the held-out test students."})
        figures.calibration_figure(y, preds[best], labels[best], fig_dir / "calibration.pdf")
        figs.append({"path": "figures/evaluate/calibration.pdf", "kind": "calibration",
                     "caption": f"Calibration of the selected model ({labels[best]}) by decile of predicted "
                                "probability on the held-out test students."})
    else:
        figures.observed_predicted_figure(y, preds[best], labels[best], fig_dir / "observed_predicted.pdf")
        figs.append({"path": "figures/evaluate/observed_predicted.pdf", "kind": "observed_predicted",
                     "caption": f"Observed against predicted values of the selected model ({labels[best]}) on the "
                                "held-out test students."})
        figures.residual_figure(y, preds[best], labels[best], fig_dir / "residuals.pdf")
        figs.append({"path": "figures/evaluate/residuals.pdf", "kind": "residuals",
                     "caption": f"Residuals of the selected model ({labels[best]}) on the held-out test students."})
    rows = [{"model": n, "label": models[n]["label"], **models[n]["metrics"],
             **{f"{k}_low": v[0] for k, v in models[n]["ci"].items()},
             **{f"{k}_high": v[1] for k, v in models[n]["ci"].items()}} for n in models]
    write_csv(smk.output.metrics_table, pd.DataFrame(rows))
    write_csv(smk.output.predictions, pd.DataFrame(preds))
    evaluation = {
        "task": task, "primary_metric": primary, "best_model": best, "selection_rule": rule,
        "selection_evidence": evidence, "interpreted_model": interpreted, "above_floor": above_floor(models, primary),
        "n_bootstrap": smk.params.n_bootstrap, "test_n": int(len(y)), "models": models, "figures": figs,
        "tables": [{"path": "tables/metrics.csv", "kind": "metrics"}], "flags": flags_for(task, models),
        "errors": errors,
    }
    log.info("selected %s (interpreted: %s); evidence %s", best, interpreted, evidence)
    write_json(smk.output.evaluation, evaluation)


run(snakemake, main)  # noqa: F821
