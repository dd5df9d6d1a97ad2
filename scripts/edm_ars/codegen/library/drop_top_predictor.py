"""Vetted supplementary analysis: how much a plain model's held-out score depends on the top predictor.

Contract: reads only inputs/ (context.json, train_X.parquet, train_y.parquet, test_X.parquet, test_y.parquet),
writes only out/result.json. A plain, fixed model (standardized logistic regression for a binary outcome, ridge
regression for a continuous one) is fitted on the training rows twice, with every predictor and without the columns
of the predictor the SHAP ranking puts first, and both are scored on the test rows. The difference is a sensitivity
of the plain model's accuracy to one predictor, not a property of the selected model and not an effect of the
predictor."""

import json

import pandas as pd
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import r2_score, roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

with open("inputs/context.json", encoding="utf-8") as fh:
    context = json.load(fh)
binary = context["task"] == "binary_classification"
top = context["top_features"][0]
train_X = pd.read_parquet("inputs/train_X.parquet")
test_X = pd.read_parquet("inputs/test_X.parquet")
train_y = pd.read_parquet("inputs/train_y.parquet").iloc[:, 0].to_numpy(dtype=float)
test_y = pd.read_parquet("inputs/test_y.parquet").iloc[:, 0].to_numpy(dtype=float)
dropped = [c for c in top["columns"] if c in train_X.columns]
if not dropped:
    raise SystemExit(f"the top predictor's columns {top['columns']} are not in train_X.parquet")
kept = [c for c in train_X.columns if c not in dropped]
if not kept:
    raise SystemExit("the top predictor is the only predictor: nothing is left to fit without it")


def held_out_score(columns):
    if binary:
        model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
        model.fit(train_X[columns], train_y)
        return float(roc_auc_score(test_y, model.predict_proba(test_X[columns])[:, 1]))
    model = make_pipeline(StandardScaler(), Ridge(alpha=1.0))
    model.fit(train_X[columns], train_y)
    return float(r2_score(test_y, model.predict(test_X[columns])))


metric = "AUC" if binary else "R-squared"
with_top = held_out_score(list(train_X.columns))
without_top = held_out_score(kept)
result = {
    "numbers": [
        {"name": "score_with_top", "value": with_top,
         "meaning": f"held-out {metric} of the plain model fitted on every predictor"},
        {"name": "score_without_top", "value": without_top,
         "meaning": f"held-out {metric} of the same plain model fitted without the top predictor ({top['name']})"},
        {"name": "score_drop", "value": with_top - without_top,
         "meaning": f"held-out {metric} lost when the top predictor ({top['name']}) is left out of the plain model"},
    ],
}
with open("out/result.json", "w", encoding="utf-8") as fh:
    json.dump(result, fh, indent=2)
