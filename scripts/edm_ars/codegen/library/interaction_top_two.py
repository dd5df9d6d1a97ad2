"""Vetted supplementary analysis: does the association of the top predictor with the outcome differ with the
level of the second? (a product term between the two predictors the SHAP ranking puts first)

Contract: reads only inputs/ (context.json, train_X.parquet, train_y.parquet, test_X.parquet, test_y.parquet),
writes only out/result.json. On the training rows, an unpenalized logistic regression (binary outcome) or least
squares (continuous outcome) of the outcome on the two standardized predictors is compared with the same model plus
their product, by a likelihood-ratio test with one degree of freedom; both are scored on the test rows. A product
term describes how the two predictors' associations combine in these data; it is not a causal moderation effect."""

import json
import math

import numpy as np
import pandas as pd
from scipy.stats import chi2
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import r2_score, roc_auc_score

with open("inputs/context.json", encoding="utf-8") as fh:
    context = json.load(fh)
binary = context["task"] == "binary_classification"
single = [t for t in context["top_features"] if len(t["columns"]) == 1]
if len(single) < 2:
    raise SystemExit("fewer than two of the top predictors are single numeric columns; no product term to test")
first, second = single[0]["columns"][0], single[1]["columns"][0]
first_name, second_name = single[0]["name"], single[1]["name"]
train_X = pd.read_parquet("inputs/train_X.parquet", columns=[first, second])
test_X = pd.read_parquet("inputs/test_X.parquet", columns=[first, second])
train_y = pd.read_parquet("inputs/train_y.parquet").iloc[:, 0].to_numpy(dtype=float)
test_y = pd.read_parquet("inputs/test_y.parquet").iloc[:, 0].to_numpy(dtype=float)
mean, sd = train_X.mean(), train_X.std(ddof=0).replace(0, 1.0)


def design(frame, product):
    z = ((frame - mean) / sd).to_numpy(dtype=float)
    return np.column_stack([z, z[:, 0] * z[:, 1]]) if product else z


def fitted(product):
    """(training log-likelihood, held-out score, product coefficient or None)"""
    X, Xt = design(train_X, product), design(test_X, product)
    if binary:
        model = LogisticRegression(C=1e6, max_iter=5000).fit(X, train_y)
        p = np.clip(model.predict_proba(X)[:, 1], 1e-12, 1 - 1e-12)
        loglik = float(np.sum(train_y * np.log(p) + (1 - train_y) * np.log(1 - p)))
        score = float(roc_auc_score(test_y, model.predict_proba(Xt)[:, 1]))
        coef = np.ravel(model.coef_)
    else:
        model = LinearRegression().fit(X, train_y)
        resid = train_y - model.predict(X)
        sigma2 = float(np.mean(resid ** 2))
        loglik = -0.5 * len(train_y) * (math.log(2 * math.pi * sigma2) + 1)
        score = float(r2_score(test_y, model.predict(Xt)))
        coef = np.ravel(model.coef_)
    return loglik, score, (float(coef[2]) if product else None)


ll0, score0, _ = fitted(False)
ll1, score1, product = fitted(True)
statistic = max(0.0, 2 * (ll1 - ll0))
metric = "AUC" if binary else "R-squared"
scale = "log-odds" if binary else "outcome units"
result = {
    "numbers": [
        {"name": "product_coefficient", "value": product,
         "meaning": f"coefficient of the product of the two top predictors ({first_name}; {second_name}), "
                    f"in {scale}, both predictors standardized"},
        {"name": "lr_statistic", "value": statistic,
         "meaning": "likelihood-ratio statistic of the product term on the training rows (one degree of freedom)"},
        {"name": "lr_p_value", "value": float(chi2.sf(statistic, 1)),
         "meaning": "p-value of that likelihood-ratio test"},
        {"name": "score_gain", "value": score1 - score0,
         "meaning": f"held-out {metric} gained by adding the product term"},
    ],
}
with open("out/result.json", "w", encoding="utf-8") as fh:
    json.dump(result, fh, indent=2)
