"""Rule analyze (Analyst, evaluation phase): held-out metrics, intervals, selection, figures."""

from pathlib import Path

import joblib
import pandas as pd

from edm_ars import figures
from edm_ars.analysis import evaluate_models, flags_for, primary_metric, select_best
from edm_ars.artifacts import read_json, write_csv, write_json
from edm_ars.errors import DataError
from edm_ars.models import predict
from edm_ars.rule_io import log, run


def main(smk):
    report = read_json(smk.input.report, "data_report")
    task = report["task"]
    X = pd.read_csv(smk.input.test_X)
    y = pd.read_csv(smk.input.test_y).iloc[:, 0].to_numpy(dtype=float)
    predictions, meta, errors = {}, {}, []
    for name in smk.params.models:
        info = read_json(smk.input[f"{name}_meta"])
        if info["features"] != list(X.columns):
            raise DataError(f"model {name} was trained on other columns than {smk.input.test_X}")
        try:
            predictions[name] = predict(joblib.load(smk.input[name]), task, X)
            meta[name] = info
        except (ValueError, TypeError, MemoryError, RuntimeError) as exc:
            errors.append({"phase": "evaluate", "model": name, "type": type(exc).__name__, "message": str(exc)})
            log.error("evaluating %s failed: %s", name, exc)
    if not predictions:
        raise DataError("no model could be evaluated; see the errors in the log")
    primary = primary_metric(task)
    models = evaluate_models(task, y, predictions, n_resamples=smk.params.n_bootstrap, seed=smk.params.seed)
    for name, m in models.items():
        m.update(label=meta[name]["label"], best_params=meta[name]["best_params"],
                 cv_score=meta[name]["cv_score"], fit_seconds=meta[name]["fit_seconds"])
        log.info("%s: %s %.4f [%.4f, %.4f]", name, primary, m["metrics"][primary], *m["ci"][primary])
    best, rule = select_best(models, primary)

    fig_dir, table_dir = Path(smk.output.figures), Path(smk.output.tables)
    labels = {n: models[n]["label"] for n in models}
    figs = []
    if task == "binary_classification":
        figures.roc_figure(y, predictions, labels, {n: models[n]["metrics"]["auc"] for n in models},
                           fig_dir / "roc.pdf")
        figs.append({"path": "figures/roc.pdf", "kind": "roc",
                     "caption": "ROC curves of all models on the held-out test students."})
        figures.calibration_figure(y, predictions[best], labels[best], fig_dir / "calibration.pdf")
        figs.append({"path": "figures/calibration.pdf", "kind": "calibration",
                     "caption": f"Calibration of the selected model ({labels[best]}) by decile of predicted "
                                "probability on the held-out test students."})
    else:
        figures.observed_predicted_figure(y, predictions[best], labels[best], fig_dir / "observed_predicted.pdf")
        figs.append({"path": "figures/observed_predicted.pdf", "kind": "observed_predicted",
                     "caption": f"Observed against predicted values of the selected model ({labels[best]}) "
                                "on the held-out test students."})
        figures.residual_figure(y, predictions[best], labels[best], fig_dir / "residuals.pdf")
        figs.append({"path": "figures/residuals.pdf", "kind": "residuals",
                     "caption": f"Residuals of the selected model ({labels[best]}) on the held-out test students."})
    rows = [{"model": n, "label": models[n]["label"], **{k: v for k, v in models[n]["metrics"].items()},
             **{f"{k}_low": v[0] for k, v in models[n]["ci"].items()},
             **{f"{k}_high": v[1] for k, v in models[n]["ci"].items()}} for n in models]
    table_dir.mkdir(parents=True, exist_ok=True)
    write_csv(table_dir / "metrics.csv", pd.DataFrame(rows))
    results = {
        "task": task, "primary_metric": primary, "best_model": best, "selection_rule": rule,
        "n_bootstrap": smk.params.n_bootstrap, "test_n": int(len(y)), "models": models,
        "top_features": [], "figures": figs,
        "tables": [{"path": "tables/metrics.csv", "kind": "metrics"}],
        "flags": flags_for(task, models), "errors": errors,
    }
    log.info("best model: %s", best)
    write_json(smk.output.results, results, "results")


run(snakemake, main)  # noqa: F821
