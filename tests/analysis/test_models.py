import numpy as np
import pandas as pd
import pytest

from edm_ars.analysis.evaluation import (
    above_floor,
    best_interpretable,
    evaluate_models,
    flags_for,
    select_best,
    thresholds_for,
)
from edm_ars.analysis.models import BINARY, FAMILIES, fit_stacking, predict, tune
from edm_ars.core.conventions import LEAKAGE_AUC, LEAKAGE_R2, QUALITY_FLOOR


def make_data(n=1600, task=BINARY, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 6)), columns=[f"x{i}" for i in range(6)])
    lin = 1.2 * X["x0"] - 0.8 * X["x1"] + 0.4 * X["x2"] * X["x3"]
    groups = rng.integers(0, 80, n)
    if task == BINARY:
        y = (lin + rng.logistic(size=n) > 0).astype(float)
    else:
        y = lin + rng.normal(size=n)
    return X, y.to_numpy(), groups


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.parametrize("task", [BINARY, "regression"])
def test_every_family_tunes_with_grouped_cv_and_keeps_oof(name, task):
    X, y, groups = make_data(task=task)
    fit = tune(name, task, X, y, groups, seed=1, n_folds=3, n_candidates=3)
    assert not np.isnan(fit["oof"]).any() and len(fit["oof"]) == len(y)
    assert fit["cv_score"] > (0.7 if task == BINARY else 0.3)
    assert fit["n_fold_fits"] <= 3 * 3
    pred = predict(fit["model"], task, X)
    assert pred.shape == (len(y),)
    if FAMILIES[name].early_stopping:
        assert 0 < fit["best_params"]["n_estimators"] < 2000


def test_racing_spends_fewer_fits_than_a_full_search():
    X, y, groups = make_data()
    fit = tune("logistic", BINARY, X, y, groups, seed=1, n_folds=5, n_candidates=8)
    assert fit["n_fold_fits"] == 8 * 2 + 3 * 3  # all on 2 folds, the best third on the remaining 3
    assert sum(t["survived"] for t in fit["trials"]) == 3


def test_tuning_is_deterministic():
    X, y, groups = make_data()
    a = tune("xgboost", BINARY, X, y, groups, seed=3, n_folds=3, n_candidates=2)
    b = tune("xgboost", BINARY, X, y, groups, seed=3, n_folds=3, n_candidates=2)
    assert a["best_params"] == b["best_params"] and np.allclose(a["oof"], b["oof"])


def test_stacking_uses_oof_predictions_without_refitting():
    X, y, groups = make_data()
    fits = {n: tune(n, BINARY, X, y, groups, seed=1, n_folds=3, n_candidates=2) for n in ("logistic", "xgboost")}
    stack = fit_stacking(BINARY, {n: f["oof"] for n, f in fits.items()}, y, groups, seed=1, n_folds=3)
    model = stack["model"]
    assert model.base_names == ["logistic", "xgboost"] and not hasattr(model, "base_models")
    pred = model.predict_from_base({n: predict(f["model"], BINARY, X) for n, f in fits.items()})
    assert ((pred > 0) & (pred < 1)).all()
    with pytest.raises(Exception, match="two base models"):
        fit_stacking(BINARY, {"logistic": fits["logistic"]["oof"]}, y, groups, seed=1)


def summary(metric, low, high):
    return {"metrics": {"auc": metric}, "ci": {"auc": [low, high]}}


def test_selection_prefers_the_simplest_among_overlapping_intervals():
    models = {"xgboost": summary(0.84, 0.82, 0.86), "logistic": summary(0.835, 0.815, 0.855),
              "mlp": summary(0.80, 0.78, 0.81)}
    best, rule, evidence = select_best(models, "auc")
    assert best == "logistic" and "simplest" in rule
    assert evidence["top_single"] == "xgboost"
    models["logistic"] = summary(0.78, 0.76, 0.80)
    assert select_best(models, "auc")[0] == "xgboost"


def test_stacking_only_when_clearly_better():
    y = np.tile([0.0, 1.0], 300)
    rng = np.random.default_rng(0)
    base = y * 0.3 + rng.random(600) * 0.7
    preds = {"logistic": base, "stacking": base + 0.001 * rng.random(600)}
    models, dist = evaluate_models(BINARY, y, preds, n_resamples=200, seed=1)
    assert select_best(models, "auc", dist)[0] == "logistic"
    preds["stacking"] = y * 0.9 + rng.random(600) * 0.1  # much better
    models, dist = evaluate_models(BINARY, y, preds, n_resamples=200, seed=1)
    best, _, evidence = select_best(models, "auc", dist)
    assert best == "stacking" and evidence["stacking_minus_selected"]["ci"][0] > 0
    assert best_interpretable(models, "auc", best) == "logistic"


def test_quality_floor_and_flags():
    models = {"logistic": summary(0.58, 0.55, 0.61), "xgboost": summary(0.97, 0.96, 0.98)}
    assert above_floor(models, "auc") == ["xgboost"]
    flags = flags_for(BINARY, {k: {"metrics": {**v["metrics"], "auc": v["metrics"]["auc"]}} for k, v in models.items()})
    assert any(f.startswith("possible_leakage: xgboost") for f in flags)
    assert any(f.startswith("below_quality_floor: logistic") for f in flags)


def test_the_evaluation_records_the_thresholds_it_applies():
    """evaluation.json (and results.json) carry the values flags_for and above_floor applied."""
    binary = thresholds_for(BINARY)
    assert binary == {"quality_floor": QUALITY_FLOOR["auc"], "leakage_auc": LEAKAGE_AUC, "leakage_r2": None}
    models = {"logistic": summary(binary["quality_floor"] - 0.01, 0.5, 0.6),
              "xgboost": summary(binary["leakage_auc"] + 0.01, 0.9, 0.99)}
    assert above_floor(models, "auc") == ["xgboost"]
    assert {f.split(":")[0] for f in flags_for(BINARY, models)} == {"possible_leakage", "below_quality_floor"}
    assert f"> {binary['leakage_auc']}" in next(f for f in flags_for(BINARY, models) if "leakage" in f)
    assert thresholds_for("regression") == {"quality_floor": QUALITY_FLOOR["r2"], "leakage_auc": None,
                                            "leakage_r2": LEAKAGE_R2}


def test_a_regression_above_the_r2_ceiling_is_flagged_as_possible_leakage():
    """R2 above the recorded ceiling (default LEAKAGE_R2, config analysis.leakage_r2) flags possible leakage, as an
    AUC above leakage_auc does for a binary outcome; the configured ceiling is the one applied and recorded."""
    def reg_summary(r2):
        return {"metrics": {"r2": r2, "rmse": 1.0}, "ci": {"r2": [r2 - 0.01, r2 + 0.01]}}

    models = {"elastic_net": reg_summary(0.999), "random_forest": reg_summary(0.40)}
    flags = flags_for("regression", models)
    assert flags == [f"possible_leakage: elastic_net R2 0.999 > {LEAKAGE_R2:g}"]
    lenient = {"leakage_r2": 0.9995, "leakage_auc": 0.99}
    assert not [f for f in flags_for("regression", models, lenient) if f.startswith("possible_leakage")]
    assert thresholds_for("regression", lenient)["leakage_r2"] == 0.9995
    assert thresholds_for(BINARY, lenient) == {"quality_floor": QUALITY_FLOOR["auc"], "leakage_auc": 0.99,
                                               "leakage_r2": None}


def test_cluster_bootstrap_draws_whole_clusters():
    from edm_ars.analysis.metrics import cluster_bootstrap_counts

    groups = np.array([5, 5, 5, 2, 9, 9])
    counts = cluster_bootstrap_counts(groups, 200, seed=3)
    assert counts.shape == (200, 6)
    # rows of one cluster always count alike, and each resample draws as many clusters as there are
    assert (counts[:, 0] == counts[:, 1]).all() and (counts[:, 4] == counts[:, 5]).all()
    per_cluster = counts[:, [0, 3, 4]]
    assert (per_cluster.sum(axis=1) == 3).all()
    assert (cluster_bootstrap_counts(groups, 200, seed=3) == counts).all()


def test_a_fit_written_before_the_stage_layout_still_loads(tmp_path, monkeypatch):
    """A run made before the package was laid out by stage goes on with its fits: their pickles name the old
    modules (edm_ars.baselines, edm_ars.models), and load_fitted finds the classes in the new ones."""
    import pickle
    import sys

    import joblib

    from edm_ars.analysis.baselines import ConstantModel
    from edm_ars.analysis.models import load_fitted

    old = pickle.dumps({"base_rate": ConstantModel(0.25)}, protocol=2)  # protocol 2 names the class as text
    assert b"cedm_ars.analysis.baselines\nConstantModel\n" in old
    path = tmp_path / "baselines.joblib"
    path.write_bytes(old.replace(b"cedm_ars.analysis.baselines\n", b"cedm_ars.baselines\n"))
    monkeypatch.delitem(sys.modules, "edm_ars.baselines", raising=False)
    with pytest.raises(ModuleNotFoundError):
        joblib.load(path)
    fitted = load_fitted(str(path))
    assert isinstance(fitted["base_rate"], ConstantModel) and fitted["base_rate"].value == 0.25
