"""The Analyst's fitting jobs (envs/analysis.yaml): fit_model (one model family tuned on the training rows),
fit_stacking (a meta-learner on the base models' out-of-fold predictions) and fit_baselines."""

from __future__ import annotations

from typing import Any

from edm_ars.core.artifacts import read_json, write_json
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
    a plain linear model on a small core set. Revision rounds reuse them like the other fits (rules/analyze_inputs.smk)."""
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
