"""Vetted supplementary analysis: the selected model's held-out predictions across the range of the top predictor
(observed and predicted outcome by quintile of the predictor the SHAP ranking puts first).

Contract: reads only inputs/ (context.json, test_X.parquet, test_y.parquet, test_predictions.parquet), writes only
out/result.json and out/figures/profile.pdf. A profile of predictions shows how the model's output varies with one
predictor in the test rows, other predictors varying with it; it is not a partial-dependence or causal effect."""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

with open("inputs/context.json", encoding="utf-8") as fh:
    context = json.load(fh)
top = context["top_features"][0]
if len(top["columns"]) != 1:
    raise SystemExit(f"the top predictor {top['feature']} is not a single numeric column; no profile over its range")
column = top["columns"][0]
name = top["name"]
x = pd.read_parquet("inputs/test_X.parquet", columns=[column])[column].to_numpy(dtype=float)
y = pd.read_parquet("inputs/test_y.parquet").iloc[:, 0].to_numpy(dtype=float)
predicted = pd.read_parquet("inputs/test_predictions.parquet")[context["selected_model"]].to_numpy(dtype=float)
ranks = pd.Series(x).rank(method="first").to_numpy()
quintile = np.minimum((ranks - 1) * 5 // len(x), 4).astype(int)
observed_by = [float(y[quintile == q].mean()) for q in range(5)]
predicted_by = [float(predicted[quintile == q].mean()) for q in range(5)]
rho = float(spearmanr(x, predicted).statistic)

Path("out/figures").mkdir(exist_ok=True)
fig, ax = plt.subplots(figsize=(3.3, 2.4))
ax.plot(range(1, 6), observed_by, marker="o", label="observed")
ax.plot(range(1, 6), predicted_by, marker="s", label="predicted")
ax.set_xlabel(f"quintile of {column} (test rows)")
ax.set_ylabel("outcome rate" if context["task"] == "binary_classification" else "outcome mean")
ax.set_xticks(range(1, 6))
ax.legend(frameon=False, fontsize=7)
fig.tight_layout()
fig.savefig("out/figures/profile.pdf", metadata={"CreationDate": None})

kind = "rate" if context["task"] == "binary_classification" else "mean"
result = {
    "numbers": [
        {"name": "predicted_lowest_quintile", "value": predicted_by[0],
         "meaning": f"mean predicted outcome {kind} in the lowest quintile of the top predictor ({name})"},
        {"name": "predicted_highest_quintile", "value": predicted_by[4],
         "meaning": f"mean predicted outcome {kind} in the highest quintile of the top predictor ({name})"},
        {"name": "observed_lowest_quintile", "value": observed_by[0],
         "meaning": f"observed outcome {kind} in the lowest quintile of the top predictor ({name})"},
        {"name": "observed_highest_quintile", "value": observed_by[4],
         "meaning": f"observed outcome {kind} in the highest quintile of the top predictor ({name})"},
        {"name": "spearman_rho", "value": rho,
         "meaning": f"rank correlation of the top predictor ({name}) with the selected model's predictions"},
    ],
    "figures": [{"file": "figures/profile.pdf",
                 "caption": f"Observed and predicted outcome by quintile of the top predictor ({name}) in the test rows."}],
}
with open("out/result.json", "w", encoding="utf-8") as fh:
    json.dump(result, fh, indent=2)
