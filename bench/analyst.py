"""Benchmark: the Analyst's budgeted tuning against the reference protocol, on the same split.

The reference is the exhaustive 5-fold GridSearchCV protocol of the original EDM-ARS system
(random forest 27 combinations, XGBoost 27, elastic net 16, MLP 12). Ours is the racing search of
edm_ars.analysis.models plus stacking built from out-of-fold predictions. Both run in this process, one
after the other, on the same training and test rows of the synthetic HSLS:09 data; CPU seconds are
process CPU time (all threads), AUC is on the held-out test students.

    python bench/analyst.py [--students 23503] [--seed 42] [--families random_forest,xgboost,...]

The last line is `speedup=<reference CPU / ours> auc_delta=<ours minus reference>`, where the AUC
compared is that of the model each protocol selects by its own cross-validation score.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from edm_ars.analysis.models import BINARY, fit_stacking, predict, tune  # noqa: E402
from edm_ars.data.datasets.synthetic import generate  # noqa: E402
from edm_ars.data.engineer import prepare  # noqa: E402
from edm_ars.data.layout import load_layout  # noqa: E402
from edm_ars.data.protocol import Protocol  # noqa: E402
from edm_ars.data.registry import load_registry  # noqa: E402
from edm_ars.formulate.spec import offline_spec  # noqa: E402

FAMILIES = ["random_forest", "xgboost", "elastic_net", "mlp"]


def reference_search(name: str, seed: int):
    """The original protocol's estimator and exhaustive grid for a family."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from xgboost import XGBClassifier

    if name == "random_forest":
        return RandomForestClassifier(random_state=seed, n_jobs=1), {
            "n_estimators": [100, 300, 500], "max_depth": [5, 10, None], "min_samples_leaf": [1, 5, 10]}
    if name == "xgboost":
        return XGBClassifier(random_state=seed, n_jobs=1, tree_method="hist", eval_metric="logloss"), {
            "learning_rate": [0.01, 0.05, 0.1], "n_estimators": [100, 300, 500], "max_depth": [3, 5, 7]}
    if name == "elastic_net":
        # alpha is the penalty strength, so C = 1 / alpha for scikit-learn's logistic regression
        pipe = Pipeline([("scale", StandardScaler()),
                         ("model", LogisticRegression(solver="saga", max_iter=1000, random_state=seed))])
        return pipe, {"model__C": [1 / a for a in (0.001, 0.01, 0.1, 1)], "model__l1_ratio": [0.1, 0.5, 0.7, 0.9]}
    if name == "mlp":
        pipe = Pipeline([("scale", StandardScaler()), ("model", MLPClassifier(random_state=seed, max_iter=200))])
        return pipe, {"model__hidden_layer_sizes": [(64,), (128,), (64, 32)],
                      "model__learning_rate_init": [0.001, 0.01], "model__alpha": [1e-4, 1e-3]}
    raise SystemExit(f"unknown family {name}")


def prepared_split(n_students: int, seed: int):
    reg = load_registry(ROOT / "registry" / "hsls09")
    frame, _ = generate(reg, load_layout(ROOT / "registry" / "hsls09" / "Layout_STUDENT.txt"),
                        n_students=n_students, n_schools=max(50, round(n_students / 24.9)), seed=seed)
    spec = offline_spec(reg, prompt=None, question_id="college_attendance", round_=0)
    return prepare(frame, spec, reg, load_layout(ROOT / "registry" / "hsls09" / "Layout_STUDENT.txt"),
                   Protocol(seed=seed))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=23503)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--families", default=",".join(FAMILIES))
    args = ap.parse_args()
    families = args.families.split(",")
    data = prepared_split(args.students, args.seed)
    X, y, groups = data.train_X, data.train_y.to_numpy(), data.train_groups.to_numpy()
    Xt, yt = data.test_X, data.test_y.to_numpy()
    print(f"data: {len(y)} training and {len(yt)} test students, {X.shape[1]} features", flush=True)
    warnings.simplefilter("ignore", ConvergenceWarning)

    from sklearn.model_selection import GridSearchCV

    rows = []
    for name in families:
        est, grid = reference_search(name, args.seed)
        cpu = time.process_time()
        search = GridSearchCV(est, grid, cv=5, scoring="roc_auc", n_jobs=1).fit(X, y)
        ref_cpu = time.process_time() - cpu
        ref_auc = roc_auc_score(yt, search.predict_proba(Xt)[:, 1])
        rows.append({"protocol": "reference", "model": name, "cpu_s": ref_cpu, "cv_auc": search.best_score_,
                     "test_auc": ref_auc})
        print(f"reference {name:14s} cpu {ref_cpu:8.1f} s  cv AUC {search.best_score_:.4f}  test AUC {ref_auc:.4f}",
              flush=True)

    oof, test_pred = {}, {}
    for name in families:
        cpu = time.process_time()
        fit = tune(name, BINARY, X, y, groups, seed=args.seed)
        ours_cpu = time.process_time() - cpu
        test_pred[name], oof[name] = predict(fit["model"], BINARY, Xt), fit["oof"]
        auc = roc_auc_score(yt, test_pred[name])
        rows.append({"protocol": "ours", "model": name, "cpu_s": ours_cpu, "cv_auc": fit["cv_score"],
                     "test_auc": auc})
        print(f"ours      {name:14s} cpu {ours_cpu:8.1f} s  cv AUC {fit['cv_score']:.4f}  test AUC {auc:.4f}",
              flush=True)
    if len(oof) >= 2:
        cpu = time.process_time()
        stack = fit_stacking(BINARY, oof, y, groups, seed=args.seed)
        st_cpu = time.process_time() - cpu
        auc = roc_auc_score(yt, stack["model"].predict_from_base(test_pred))
        rows.append({"protocol": "ours", "model": "stacking", "cpu_s": st_cpu, "cv_auc": stack["cv_score"],
                     "test_auc": auc})
        print(f"ours      {'stacking':14s} cpu {st_cpu:8.1f} s  cv AUC {stack['cv_score']:.4f}  test AUC {auc:.4f}",
              flush=True)

    table = pd.DataFrame(rows)
    totals = table.groupby("protocol")["cpu_s"].sum()
    best = table.loc[table.groupby("protocol")["cv_auc"].idxmax()].set_index("protocol")
    print()
    print(table.pivot(index="model", columns="protocol", values=["cpu_s", "test_auc"]).round(4).to_string())
    print(f"\ntotal CPU s: reference {totals['reference']:.1f}, ours {totals['ours']:.1f}")
    print(f"selected by CV: reference {best.loc['reference', 'model']} (test AUC "
          f"{best.loc['reference', 'test_auc']:.4f}), ours {best.loc['ours', 'model']} "
          f"(test AUC {best.loc['ours', 'test_auc']:.4f})")
    speedup = totals["reference"] / totals["ours"]
    delta = best.loc["ours", "test_auc"] - best.loc["reference", "test_auc"]
    print(f"speedup={speedup:.1f} auc_delta={delta:+.4f}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
