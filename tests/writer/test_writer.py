"""Tests of the Writer stage (scripts/edm_ars/writer)."""

from __future__ import annotations

import copy
import functools
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from edm_ars.data.registry import load_registry
from edm_ars.writer import (
    LatexError,
    build_paper,
    cited_keys,
    compile_pdf,
    escape_latex,
    fill_slot,
    macro_name,
    raw_numbers,
    slot_content,
)
from edm_ars.writer.integrity import document_placeholders
from edm_ars.writer.latex import latex_errors, undefined_refs
from edm_ars.writer.macros import (
    MacroTable,
    fmt_ci,
    fmt_count,
    fmt_metric,
    fmt_pct,
    template_macros,
    text_with_macros,
)
from edm_ars.writer.verify import verify_paper

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "config" / "paper_template.tex"
PHRASES = ROOT / "config" / "prompts" / "phrases.yaml"
HSLS_PROSE = load_registry(ROOT / "registry" / "hsls09").prose
SECTION_SLOTS = ["ABSTRACT", "INTRODUCTION", "RELATED_WORK", "METHODS", "RESULTS", "DISCUSSION",
                 "LIMITATIONS", "APPENDIX"]
SPECIAL_LABEL = "X1 Parents' income & R_D spending: top 5% $ #1"


# ---- fixtures -------------------------------------------------------------------------------------
def _bib(key: str, kind: str, fields: dict[str, str]) -> str:
    body = ",\n".join(f"  {k} = {{{v}}}" for k, v in fields.items())
    return f"@{kind}{{{key},\n{body}\n}}"


def _paper(key, title, authors, year, venue, topics, kind="article", status="VERIFIED", bibkey=None):
    fields = {"author": " and ".join(authors), "title": title, "year": str(year)}
    fields["journal" if kind == "article" else "booktitle"] = venue
    return {"key": key, "title": title, "authors": authors, "year": year, "venue": venue, "doi": None,
            "url": None, "topics": topics, "status": status,
            "bibtex": _bib(bibkey or key, kind, fields)}


def literature() -> dict:
    return {
        "source": "curated",
        "retrieval_failed": True,
        "retrieval_note": "Semantic Scholar unreachable (offline backend); curated bibliography used.",
        "papers": [
            _paper("baker2009state", "The State of Educational Data Mining in 2009: A Review and Future "
                   "Visions", ["Ryan S. J. d. Baker", "Kalina Yacef"], 2009,
                   "Journal of Educational Data Mining", ["edm"]),
            _paper("romero2010edm", "Educational Data Mining: A Review of the State of the Art",
                   ["Crist{\\'o}bal Romero", "Sebasti{\\'a}n Ventura"], 2010,
                   "IEEE Transactions on Systems, Man, and Cybernetics, Part C", ["edm"]),
            _paper("ingels2011hsls", "High School Longitudinal Study of 2009 (HSLS:09) Base-Year Data File "
                   "Documentation", ["Steven J. Ingels", "Daniel J. Pratt"], 2011, "NCES 2011-328",
                   ["hsls09"]),
            _paper("chen2016xgboost", "XGBoost: A Scalable Tree Boosting System",
                   ["Tianqi Chen", "Carlos Guestrin"], 2016, "Proceedings of KDD", ["xgboost"],
                   kind="inproceedings"),
            _paper("breiman2001random", "Random Forests", ["Leo Breiman"], 2001, "Machine Learning",
                   ["random_forest"]),
            _paper("zou2005regularization", "Regularization and Variable Selection via the Elastic Net",
                   ["Hui Zou", "Trevor Hastie"], 2005, "Journal of the Royal Statistical Society B",
                   ["elastic_net"]),
            _paper("lundberg2017unified", "A Unified Approach to Interpreting Model Predictions",
                   ["Scott M. Lundberg", "Su-In Lee"], 2017, "Advances in NeurIPS", ["shap"],
                   kind="inproceedings", bibkey="lundberg_wrong_key"),
            _paper("kaufman2012leakage", "Leakage in Data Mining: Formulation, Detection, and Avoidance",
                   ["Shachar Kaufman", "Saharon Rosset", "Claudia Perlich"], 2012, "ACM TKDD",
                   ["leakage"]),
            _paper("kizilcec2022fairness", "Algorithmic Fairness in Education",
                   ["Ren{\\'e} F. Kizilcec", "Hansol Lee"], 2022, "The Ethics of Artificial "
                   "Intelligence in Education", ["fairness"], kind="inproceedings"),
            _paper("efron1994bootstrap", "An Introduction to the Bootstrap",
                   ["Bradley Efron", "Robert J. Tibshirani"], 1994, "Chapman and Hall", ["bootstrap"]),
            _paper("fake2023made", "A Paper That Does Not Exist", ["Nobody"], 2023, "Nowhere", ["edm"],
                   status="HALLUCINATED"),
        ],
    }


def data_report(binary: bool) -> dict:
    miss = {"X1SES": 0.0, "X1TXMTSCOR": 3.1, "X1PARINC": 18.4, "X2STUEDEXPCT": 12.7}
    rep = {
        "original_n": 23503,
        "analytic_n": 17012 if binary else 18600,
        "retention": 0.7238 if binary else 0.7914,
        "train_n": 13602 if binary else 14880,
        "test_n": 3410 if binary else 3720,
        "outcome": "X4EVRATNDCLG" if binary else "X2TXMTSCOR",
        "task": "binary_classification" if binary else "regression",
        "class_balance": {"0": 5103, "1": 11909} if binary else None,
        "outcome_summary": None if binary else {"mean": 50.11, "sd": 9.87, "min": 22.24, "max": 84.91},
        "missingness": {k: {"pct_missing": v, "method": "median (train)"} for k, v in miss.items()},
        "predictors_before": list(miss) + ["X1SEX"],
        "predictors_after": ["X1SES", "X1TXMTSCOR", "X1PARINC", "X2STUEDEXPCT_2", "X2STUEDEXPCT_3",
                             "X1SEX_2"],
        "feature_sources": {"X1SES": "X1SES", "X1TXMTSCOR": "X1TXMTSCOR", "X1PARINC": "X1PARINC",
                            "X2STUEDEXPCT_2": "X2STUEDEXPCT", "X2STUEDEXPCT_3": "X2STUEDEXPCT",
                            "X1SEX_2": "X1SEX"},
        "split": {"method": "group_shuffle_split", "seed": 20240917, "test_fraction": 0.2,
                  "group_overlap": 0, "clustered": True, "train_clusters": 730, "test_clusters": 182,
                  "school_reconstruction": {"status": "reconstructed", "n_clusters": 912}},
        "checks": [{"name": "temporal_order", "passed": True, "detail": "all predictors precede outcome"},
                   {"name": "group_disjoint", "passed": True, "detail": None},
                   {"name": "no_sentinels_left", "passed": binary, "detail": "2 values of -9 remained"}],
        "validation_passed": binary,
        "warnings": ["X1PARINC has 18.4% missing values; imputed with the training median."],
        "sentinel_recoding": {"n_values_recoded": 48213, "n_variables": 5, "codes": [-9, -8, -7]},
        "imputation_protocol": "Numeric predictors were imputed with training-set medians and "
                               "categorical predictors with a separate missing category, fitted on "
                               "the 80% training split only.",
        "protected": ["X1SEX", "X1RACE"],
    }
    return rep


def spec(binary: bool) -> dict:
    preds = [
        {"name": "X1SES", "label": "X1 Socio-economic status composite", "wave": "base_year",
         "rationale": "Family socio-economic status is the most consistent predictor of college access."},
        {"name": "X1TXMTSCOR", "label": "X1 Mathematics standardized theta score", "wave": "base_year",
         "rationale": "Ninth-grade mathematics achievement signals academic preparation."},
        {"name": "X1PARINC", "label": SPECIAL_LABEL, "wave": "base_year",
         "rationale": "Family income shapes the resources available for schooling."},
        {"name": "X1SEX", "label": "X1 Student's sex", "wave": "base_year",
         "rationale": "Included to describe differences between groups of students."},
    ]
    if binary:
        preds.append({"name": "X2STUEDEXPCT", "label": "X2 How far in school 9th grader thinks he/she "
                      "will get", "wave": "first_follow_up",
                      "rationale": "Expectations in 11th grade are closer to the enrollment decision."})
        outcome = {"name": "X4EVRATNDCLG", "label": "X4 Ever attended college as of Feb 2016",
                   "wave": "update_panel", "type": "binary", "positive_label": "attended college"}
        rq = ("How accurately can postsecondary attendance by February 2016 be predicted from "
              "students' 9th-grade background and 11th-grade expectations, and is the prediction "
              "equally accurate across sex and race/ethnicity?")
    else:
        preds.append({"name": "X2STUEDEXPCT", "label": "X2 Educational expectations",
                      "wave": "first_follow_up",
                      "rationale": "Expectations relate to effort in mathematics."})
        outcome = {"name": "X2TXMTSCOR", "label": "X2 Mathematics standardized theta score",
                   "wave": "first_follow_up", "type": "continuous", "positive_label": None}
        rq = ("How accurately can 11th-grade mathematics achievement be predicted from 9th-grade "
              "achievement, attitudes and family background, and which early indicators matter most?")
    return {
        "dataset": "hsls09", "question_id": "college_attendance" if binary else "math_achievement",
        "research_question": rq, "outcome": outcome,
        "task": "binary_classification" if binary else "regression", "predictors": preds,
        "population": "Fall 2009 ninth-graders in the HSLS:09 public-use file with a valid outcome.",
        "subgroups": ["X1SEX", "X1RACE"],
        "expected_contribution": "A reproducible estimate of how well early records predict the outcome.",
        "limitations": ["Public-use data suppress school identifiers.",
                        "Predictors are self-reported and may contain 5-10% measurement error."],
        "novelty_score": 2.5, "prompt": None, "backend": "offline", "round": 0,
    }


def _model(label, metrics, ci, params, cv, search=None):
    model = {"metrics": metrics, "ci": ci, "best_params": params, "cv_score": cv}
    if label:
        model["label"] = label
    if search:
        model["search"] = search
    return model


def _search(n: int, kept: int, early: bool = False) -> str:
    return (f"random search of {n} candidates raced over folds: all on 2 folds, the best {kept} on all 5"
            + ("; early stopping on each validation fold" if early else ""))


def _gaps(groups: list[dict], metrics: list[str], threshold: float) -> dict:
    """Gaps (max - min over reliable groups) as the fairness audit records them."""
    gaps = {}
    for metric in metrics:
        vals = [(g["group"], g[metric]) for g in groups if g["reliable"] and g.get(metric) is not None]
        if len(vals) < 2:
            gaps[metric] = None
            continue
        lo, hi = min(vals, key=lambda t: t[1]), max(vals, key=lambda t: t[1])
        gap = hi[1] - lo[1]
        gaps[metric] = {"gap": gap, "ci": [gap / 2, gap * 1.5], "min_group": lo[0], "min_value": lo[1],
                        "max_group": hi[0], "max_value": hi[1], "n_groups": len(vals),
                        "flagged": gap > threshold}
    if "tpr" in metrics:
        cands = [(m, gaps[m]) for m in ("tpr", "fpr") if gaps.get(m)]
        src, g = max(cands, key=lambda t: t[1]["gap"])
        gaps["equalized_odds"] = {**g, "source": src}
    return gaps


def _group(name: str, n: int, primary: str, value: float | None, binary: bool, min_group: int = 50, **extra):
    rec = {"group": name, "n": n, "reliable": n >= min_group and value is not None,
           "reason": None if n >= min_group else f"{n} test students (< {min_group})",
           "metric": value, "ci": None if value is None else [value - 0.03, min(1.0, value + 0.03)],
           primary: value}
    rec.update(extra)
    return rec


def _fairness(binary: bool, best: str) -> dict:
    primary = "auc" if binary else "rmse"
    if binary:
        def g(name, n, auc, tpr, fpr, base):
            return _group(name, n, "auc", auc, True, tpr=tpr, fpr=fpr, flag_rate=tpr * (1 - base) + fpr * base,
                          base_rate=base, at_risk_rate=1 - base, citl=round(0.74 - base, 3) / 4,
                          calibration_slope=round(0.7 + auc / 4, 3))
        sex = [g("Female", 1702, 0.829, 0.88, 0.46, 0.74), g("Male", 1706, 0.816, 0.87, 0.49, 0.70)]
        race = [g("Asian, non-Hispanic", 251, 0.851, 0.93, 0.50, 0.79),
                g("Black/African-American, non-Hispanic", 433, 0.741, 0.80, 0.52, 0.62),
                g("Native Hawaiian/Pacific Islander & other_#1", 15, 0.990, 1.0, 0.25, 0.73),
                g("White, non-Hispanic", 1854, 0.835, 0.91, 0.55, 0.79)]
        inter = [g("Black/African-American, non-Hispanic x Female", 205, 0.731, 0.82, 0.54, 0.61),
                 g("White, non-Hispanic x Male", 888, 0.846, 0.93, 0.58, 0.77),
                 g("Asian, non-Hispanic x Female", 129, 0.880, 0.94, 0.48, 0.79)]
        metrics = ["auc", "citl", "tpr", "fpr", "flag_rate"]
        overall = {"auc": 0.8231, "tpr": 0.8733, "fpr": 0.48, "flag_rate": 0.28, "base_rate": 0.72, "citl": 0.004,
                   "calibration_slope": 0.98, "at_risk_rate": 0.28}
    else:
        def g(name, n, r2, rmse, me):
            return _group(name, n, "rmse", rmse, False, mae=rmse * 0.8, mean_error=me,
                          cis={"mean_error": [me - 0.04, me + 0.04]})
        sex = [g("Female", 1850, 0.631, 0.602, 0.021), g("Male", 1868, 0.615, 0.618, -0.018)]
        race = [g("Asian, non-Hispanic", 262, 0.655, 0.571, 0.035),
                g("Black/African-American, non-Hispanic", 451, 0.522, 0.688, -0.142),
                g("Native Hawaiian/Pacific Islander & other_#1", 14, 0.702, 0.55, 0.01),
                g("White, non-Hispanic", 1920, 0.640, 0.594, 0.052)]
        inter = [g("Black/African-American, non-Hispanic x Female", 220, 0.515, 0.70, -0.15),
                 g("White, non-Hispanic x Male", 950, 0.644, 0.59, 0.05)]
        metrics = ["rmse", "mean_error"]
        overall = {"rmse": 0.61, "mae": 0.49, "mean_error": 0.0}
    attrs = {}
    for name, label, kind, groups in (("X1SEX", "X1 Student's sex", "attribute", sex),
                                      ("X1RACE", "X1 Student's race/ethnicity-composite", "attribute", race),
                                      ("X1RACE x X1SEX", "X1 Student's race/ethnicity-composite x X1 Student's sex",
                                       "intersection", inter)):
        attrs[name] = {"label": label, "kind": kind, "n_missing": 3, "n_groups": len(groups),
                       "n_reliable": sum(x["reliable"] for x in groups), "groups": groups,
                       "gaps": _gaps(groups, metrics, 0.05), "flags": []}
    flags = [f"{a}: {m.upper()} gap {gp['gap']:.3f} between '{gp['min_group']}' ({gp['min_value']:.3f}) and "
             f"'{gp['max_group']}' ({gp['max_value']:.3f})"
             for a, r in attrs.items() for m, gp in r["gaps"].items() if gp and gp["flagged"]]
    return {"task": "binary_classification" if binary else "regression", "primary_metric": primary,
            "decision_rule": {"at_risk_class": 0, "at_risk_declared": True, "at_risk_source": "registry",
                              "share": 0.28, "share_source": "at_risk_share", "n_flagged": 955,
                              "cutoff_probability": 0.61} if binary else None,
            "bootstrap": "cluster", "n_clusters": 182,
            "min_group": 50, "gap_threshold": 0.05, "n_resamples": 1000, "seed": 42,
            "n": 3410 if binary else 3720, "overall": overall, "attributes": attrs, "flags": flags, "skipped": {},
            "model": best, "error_scale": None if binary else {"kind": "training_outcome_sd", "sd": 0.87}}


def _stability(metric: str, model: str, ref: float, unstable: bool = False) -> dict:
    kinds = [("impute_simple", "impute"), ("bootstrap_1", "bootstrap"), ("bootstrap_2", "bootstrap"),
             ("seed_1", "seed")]
    top = ["X1TXMTSCOR", "X1PARINC", "X2STUEDEXPCT", "X1SES", "X1SEX"]
    runs = [{"perturbation": p, "kind": k, metric: ref - 0.002 * i, "top5_overlap": 0.4 if unstable else 1.0 - 0.2 * (i == 0),
             "top10_overlap": 0.9, "rank_correlation": 0.9 - 0.1 * i, "top5": top} for i, (p, k) in enumerate(kinds)]
    top5 = [r["top5_overlap"] for r in runs]
    vals = [r[metric] for r in runs]
    rho = [r["rank_correlation"] for r in runs]

    def spread(v):
        mean = sum(v) / len(v)
        return {"mean": mean, "sd": (sum((x - mean) ** 2 for x in v) / (len(v) - 1)) ** 0.5, "min": min(v),
                "max": max(v)}
    return {"model": model, "errors": [], "metric": metric, "reference_metric": ref, "reference_top": top,
            "n_perturbations": len(runs), "metric_spread": spread(vals), "top5_overlap": spread(top5),
            "top10_overlap": spread([0.9] * len(runs)), "rank_correlation": spread(rho), "unstable": unstable,
            "rule": "a conclusion is flagged unstable when the mean top-5 overlap with the original model's SHAP "
                    "ranking falls under 0.6", "thresholds": {"unstable_top5": 0.6}, "runs": runs}


def _shap(models: list[str], top: list[dict], exclude: tuple[str, ...] = ()) -> dict:
    expl = {"logistic": "LinearExplainer", "elastic_net": "LinearExplainer", "random_forest": "TreeExplainer",
            "xgboost": "TreeExplainer", "mlp": "KernelExplainer"}
    by = {}
    for i, m in enumerate(x for x in models if x not in ("stacking", *exclude)):
        feats = [dict(f) for f in top]
        if i % 2 and len(feats) >= 4:  # another family ranks the third and fourth feature the other way round
            feats[2], feats[3] = feats[3], feats[2]
        by[m] = {"explainer": expl.get(m, "KernelExplainer"), "n_explained": 100 if m == "mlp" else 1000,
                 "top_features": feats}
    return {"by_model": by, "skipped": {"stacking": "SHAP is not computed for stacking (a model of models)"}}


def results(binary: bool) -> dict:
    if binary:
        models = {
            "logistic": _model("Logistic regression (L2)",
                               {"auc": 0.8102, "accuracy": 0.7598, "precision": 0.7988, "recall": 0.8705,
                                "f1": 0.8331, "balanced_accuracy": 0.6850, "brier": 0.1601},
                               {"auc": [0.8062, 0.8142]}, {"C": 0.1}, 0.8081, _search(8, 3)),
            "elastic_net": _model("Elastic net", {"auc": 0.8110, "balanced_accuracy": 0.6861, "brier": 0.1598},
                                  {"auc": [0.8070, 0.8150]}, {"C": 0.03, "l1_ratio": 0.9}, 0.8090, _search(8, 3)),
            "random_forest": _model("Random forest", {"auc": 0.8124, "accuracy": 0.7650, "precision": 0.8001,
                                                      "recall": 0.8801, "f1": 0.8382,
                                                      "balanced_accuracy": 0.6894, "brier": 0.1583},
                                    {"auc": [0.8084, 0.8164]}, {"min_samples_leaf": 20}, 0.8120, _search(6, 2)),
            "xgboost": _model("XGBoost", {"auc": 0.8231, "accuracy": 0.7712, "precision": 0.8104,
                                          "recall": 0.8733, "f1": 0.8407, "balanced_accuracy": 0.7011,
                                          "brier": 0.1552},
                              {"auc": [0.8191, 0.8271], "balanced_accuracy": [0.6852, 0.7170]},
                              {"max_depth": 4, "learning_rate": 0.05, "n_estimators": 400},
                              0.8187, _search(8, 3, early=True)),
            "mlp": _model("Multilayer perceptron", {"auc": 0.8150, "balanced_accuracy": 0.6900, "brier": 0.1570},
                          {"auc": [0.8110, 0.8190]}, {"hidden_layer_sizes": [64], "alpha": 0.001}, 0.8100,
                          _search(4, 2)),
            "stacking": _model("Stacking", {"auc": 0.8225, "balanced_accuracy": 0.7000, "brier": 0.1555},
                               {"auc": [0.8185, 0.8265]},
                               {"meta_learner": "logistic regression on logit base predictions",
                                "base_models": ["elastic_net", "logistic", "mlp", "random_forest", "xgboost"]},
                               0.8190, "meta-learner fitted on the base models' out-of-fold predictions "
                                       "(no base model refitted)"),
        }
        top = [
            {"feature": "X1TXMTSCOR", "label": "X1 Mathematics standardized theta score",
             "mean_abs_shap": 0.412, "direction": "positive", "columns": ["X1TXMTSCOR"]},
            {"feature": "X1PARINC", "label": SPECIAL_LABEL, "mean_abs_shap": 0.305, "direction": "positive",
             "columns": ["X1PARINC"]},
            {"feature": "X2STUEDEXPCT_3", "mean_abs_shap": 0.221, "direction": "negative",
             "columns": ["X2STUEDEXPCT_3"]},
            {"feature": "X1SES", "label": "X1 Socio-economic status composite", "mean_abs_shap": 0.118,
             "direction": "positive", "columns": ["X1SES"]},
            {"feature": "X1SEX", "label": "X1 Student's sex", "mean_abs_shap": 0.05, "direction": "mixed",
             "columns": ["X1SEX_1", "X1SEX_2"]},
        ]
        figures = [
            {"path": "figures/roc.pdf", "kind": "roc",
             "caption": "ROC curves on the test set (n = 3,410); the diagonal marks chance (AUC 0.5)."},
            {"path": "figures/shap_importance.png", "kind": "importance",
             "caption": "Mean absolute SHAP values of the 10 most predictive features & their direction."},
            {"path": "figures/calibration.pdf", "kind": "calibration", "caption": "Missing on disk."},
        ]
        primary, best, interpreted = "auc", "xgboost", "xgboost"
        evidence = {"top_single": "xgboost", "overlapping_top": ["xgboost"],
                    "stacking_minus_selected": {"mean": -0.0006, "ci": [-0.0021, 0.0009]}}
        fair = _fairness(True, best)
        flags = [f"fairness: {f}" for f in fair["flags"]] + ["class_imbalance: 70% positive"]
        errors = []
    else:
        models = {
            "logistic": _model("Ridge regression", {"rmse": 6.330, "mae": 5.090, "r2": 0.5800},
                               {"r2": [0.5580, 0.6000], "rmse": [6.19, 6.47]}, {"alpha": 10.0}, 0.5770,
                               _search(8, 3)),
            "elastic_net": _model(None, {"rmse": 6.012, "mae": 4.781, "r2": 0.6234},
                                  {"r2": [0.6011, 0.6452], "rmse": [5.87, 6.15]},
                                  {"alpha": 0.0031, "l1_ratio": 0.5}, 0.6188, _search(8, 3)),
            "random_forest": _model(None, {"rmse": 6.104, "mae": 4.853, "r2": 0.6118},
                                    {"r2": [0.5890, 0.6339]}, {"max_features": "sqrt"}, 0.6090, _search(6, 2)),
            "xgboost": _model(None, {"rmse": 6.071, "mae": 4.822, "r2": 0.6160},
                              {"r2": [0.5931, 0.6380]}, {}, None, _search(8, 3, early=True)),
            "mlp": _model(None, {"rmse": 9.620, "mae": 7.700, "r2": 0.0300}, {"r2": [0.0100, 0.0500]},
                          {"alpha": 0.1}, 0.0250, _search(4, 2)),
            "stacking": _model("Stacking", {"rmse": 6.020, "mae": 4.785, "r2": 0.6222}, {"r2": [0.6000, 0.6440]},
                               {"meta_learner": "ridge regression on base predictions",
                                "base_models": ["elastic_net", "logistic", "mlp", "random_forest", "xgboost"]},
                               0.6190, "meta-learner fitted on the base models' out-of-fold predictions "
                                       "(no base model refitted)"),
        }
        top = [{"feature": "X1TXMTSCOR", "label": "X1 Mathematics standardized theta score",
                "mean_abs_shap": 5.21, "direction": "positive", "columns": ["X1TXMTSCOR"]},
               {"feature": "X1SES", "label": "X1 Socio-economic status composite", "mean_abs_shap": 1.33,
                "direction": "positive", "columns": ["X1SES"]}]
        figures = [{"path": "figures/roc.pdf", "kind": "predicted_vs_actual",
                    "caption": "Predicted against observed 11th-grade scores for the elastic net."}]
        primary, best, interpreted = "r2", "elastic_net", "elastic_net"
        evidence = {"top_single": "elastic_net", "overlapping_top": ["elastic_net", "random_forest", "xgboost"],
                    "stacking_minus_selected": {"mean": -0.0012, "ci": [-0.0040, 0.0016]}}
        fair = _fairness(False, best)
        flags = ["below_quality_floor: mlp R2 0.030 < 0.05 (not interpreted)"] + [
            f"fairness: {f}" for f in fair["flags"]]
        errors = [{"phase": "explain", "what": "mlp", "type": "TimeoutError",
                   "message": "KernelExplainer stopped after 120 s (27 of 100 rows explained)"}]
    return {"task": "binary_classification" if binary else "regression", "primary_metric": primary,
            "best_model": best,
            "selection_rule": f"highest held-out {primary.upper()}; among models whose 95% intervals overlap the "
                              "top model's, the simplest family is preferred (logistic/ridge < elastic net < "
                              "random forest < XGBoost < MLP); stacking only when the 95% interval of its paired "
                              "bootstrap difference to that model lies above zero",
            "selection_evidence": evidence, "interpreted_model": interpreted,
            "n_bootstrap": 1000, "test_n": 3410 if binary else 3720, "models": models,
            "top_features": top, "shap": _shap(list(models), top, () if binary else ("mlp",)), "fairness": fair,
            "stability": _stability(primary, interpreted, models[best]["metrics"][primary]),
            "figures": figures, "tables": [], "flags": flags, "errors": errors,
            "thresholds": {"quality_floor": 0.6 if binary else 0.05, "leakage_auc": 0.95 if binary else None,
                           "leakage_r2": None if binary else 0.95}}


def review(passed: bool) -> dict:
    return {
        "round": 0, "verdict": "PASS" if passed else "REVISE", "model_verdict": None,
        "overall_score": 7.5 if passed else 5.5,
        "dimension_scores": {"problem_formulation": 8.0, "data_preparation": 6.5, "analysis": 7.0,
                             "substantive_validity": 6.0},
        "issues": [] if passed else [
            {"id": "R1", "severity": "major", "target_stage": "engineer",
             "description": "2 sentinel values (-9) remained after recoding in X1PARINC & X1SES_2.",
             "recommendation": "Recode all negative reserve codes before the split."},
            {"id": "R2", "severity": "minor", "target_stage": "write",
             "description": "Subgroup performance (sex, race) is not reported.", "recommendation": None},
        ],
        "revision_instructions": {}, "rerun_from": None if passed else "engineer", "abort_reason": None,
        "unverified": not passed, "backend": "offline",
    }


needs_latex = pytest.mark.skipif(shutil.which("latexmk") is None or shutil.which("pdftotext") is None,
                                 reason="latexmk/pdftotext not installed")


REGISTRY_LABELS = {"X1RACE": "X1 Student's race/ethnicity-composite", "X1SEX": "X1 Student's sex",
                   "X2STUEDEXPCT": "X2 How far in school 11th grader thinks he/she will get"}


def _make_figures(folder: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = folder / "figures"
    figs.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(3.3, 2.6))
    ax.plot([0, 0.1, 0.3, 1], [0, 0.5, 0.8, 1], label="XGBoost")
    ax.plot([0, 1], [0, 1], "k--", lw=0.8)
    ax.set_xlabel("False positive rate")
    ax.set_ylabel("True positive rate")
    ax.legend()
    fig.tight_layout()
    fig.savefig(figs / "roc.pdf")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(3.3, 2.2))
    ax.barh(["Math score", "Income", "Expectations"], [0.41, 0.31, 0.22])
    fig.tight_layout()
    fig.savefig(figs / "shap_importance.png", dpi=100)
    plt.close(fig)
    return figs


def _build(tmp_path: Path, binary: bool, passed: bool, name: str = "paper", **changes) -> tuple[dict, Path]:
    round_dir = tmp_path / f"round_{name}"
    figs = _make_figures(round_dir)
    arts = {"spec": spec(binary), "literature": literature(), "data_report": data_report(binary),
            "results": results(binary), "review": review(passed)}
    arts.update(changes)
    out = tmp_path / name
    summary = build_paper(arts["spec"], arts["literature"], arts["data_report"], arts["results"],
                          arts["review"], figures_dir=figs, template=TEMPLATE, out_dir=out, phrases=PHRASES,
                          registry_labels=REGISTRY_LABELS, claims=arts.get("claims"),
                          dataset=arts.get("dataset", HSLS_PROSE))
    return summary, out


# The fixture papers are built once per module and only read by the tests (a test that changes a paper builds its
# own with _build).
@pytest.fixture(scope="module")
def binary_paper(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("binary"), binary=True, passed=False, name="binary")


@pytest.fixture(scope="module")
def regression_paper(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("regression"), binary=False, passed=True, name="regression")


@pytest.fixture(scope="module", params=["binary", "regression"])
def any_paper(request, binary_paper, regression_paper):
    return binary_paper if request.param == "binary" else regression_paper


def _bib_keys(path: Path) -> list[str]:
    return re.findall(r"@\w+\{([^,\s]+),", path.read_text())


# ---- unit tests ---------------------------------------------------------------------------------
def test_formats_and_macro_names():
    assert fmt_count(23503) == "23{,}503"
    assert fmt_metric(0.82312) == "0.823"
    assert fmt_metric(-0.0123) == "$-$0.012"
    # tiny values: a positive one as a bound, a negative one to its first significant digit ("-<0.001" would read
    # as a bound below -0.001)
    assert fmt_metric(0.0003) == "$<$0.001"
    assert fmt_metric(-0.00031) == "$-$0.0003"
    assert fmt_pct(72.38) == r"72.4\%"
    assert fmt_ci(0.80081, 0.8449) == r"95\% CI [0.801, 0.845]"
    assert macro_name("logistic_regression", "auc") == "LogisticRegressionAUC"
    assert macro_name("Miss", "X1SES") == "MissXOneSES"
    assert macro_name("xgboost", "f1") == "XgboostFOne"
    assert re.fullmatch(r"[A-Za-z]+", macro_name("model-2", "r2", "CI"))


def test_macro_table_dedupes_and_suffixes():
    m = MacroTable()
    a = m.metric("BestAUC", 0.8, "results.json:a")
    assert m.metric("BestAUC", 0.8, "results.json:a") == a
    b = m.metric("BestAUC", 0.7, "results.json:b")
    assert a == r"\BestAUC{}" and b == r"\BestAUCA{}"
    tex = m.to_tex()
    assert r"\newcommand{\BestAUC}{0.800} % results.json:a" in tex
    text = text_with_macros("Top 5% of 23,503 students in HSLS:09 (X1SES, 9th grade), 2016.", m, "src")
    assert "HSLS:09" in text and "X1SES" in text and "9th" in text and r"\%" in text
    assert not raw_numbers(text)
    values = {d["value"] for d in json.loads(m.to_json())["macros"] if d.get("quoted")}
    assert {"5", "23{,}503", "2016"} <= values


def test_fill_slot_is_idempotent():
    tex = "a\n%%PLACEHOLDER:UNVERIFIED%%\nb\n"
    once = fill_slot(tex, "UNVERIFIED", "WARN")
    twice = fill_slot(once, "UNVERIFIED", "WARN")
    assert once == twice and twice.count("WARN") == 1
    cleared = fill_slot(twice, "UNVERIFIED", "")
    assert "WARN" not in cleared and "%%BEGIN:UNVERIFIED%%" in cleared
    with pytest.raises(Exception, match="NOPE"):
        fill_slot(tex, "NOPE", "x")


def test_template_has_all_slots():
    text = TEMPLATE.read_text()
    for name in ["TITLE", "AUTHORS", "ABSTRACT", "KEYWORDS", "MACROS", "UNVERIFIED", "INTRODUCTION",
                 "RELATED_WORK", "METHODS", "RESULTS", "DISCUSSION", "LIMITATIONS", "APPENDIX"]:
        assert re.search(rf"^%%PLACEHOLDER:{name}%%$", text, re.M), name
    assert r"\documentclass[sigconf" in text and "printacmref=false" in text


def test_undefined_and_error_parsing():
    log = ("LaTeX Warning: Citation `foo2020' on page 1 undefined on input line 12.\n"
           "LaTeX Warning: Reference `fig:roc' on page 2 undefined on input line 40.\n"
           "! Undefined control sequence.\nl.42 \\BestAUCX\n")
    assert undefined_refs(log) == ["Citation `foo2020' undefined", "Reference `fig:roc' undefined"]
    assert latex_errors(log) == ["! Undefined control sequence.\nl.42 \\BestAUCX"]


# ---- build_paper ---------------------------------------------------------------------------------
def test_build_writes_files(binary_paper):
    summary, out = binary_paper
    for name in ("paper.tex", "references.bib", "numbers.tex", "numbers.json"):
        assert (out / name).is_file(), name
    assert (out / "figures" / "roc.pdf").is_file()
    assert (out / "figures" / "shap_importance.png").is_file()
    assert summary["figures"] == 2 and summary["missing_figures"] == ["figures/calibration.pdf"]
    assert summary["macros"] == len(json.loads((out / "numbers.json").read_text())["macros"])
    assert set(summary["sections"]) >= {"abstract", "introduction", "methods", "results", "discussion",
                                        "limitations"}
    assert summary["tables"] >= 2
    tex = (out / "paper.tex").read_text()
    assert not re.search(r"^%%PLACEHOLDER", tex, re.M)
    assert r"\input{numbers.tex}" in tex
    for fig in ("fig:roc", "fig:importance"):
        assert f"\\label{{{fig}}}" in tex and f"\\ref{{{fig}}}" in tex
    assert r"\includegraphics[width=\columnwidth]{figures/roc.pdf}" in tex


def test_numbers_come_through_macros(any_paper):
    summary, out = any_paper
    tex = (out / "paper.tex").read_text()
    assert summary["raw_numbers"] == {}
    for name in SECTION_SLOTS + ["TITLE"]:
        assert raw_numbers(slot_content(tex, name)) == [], name
    results_text = slot_content(tex, "RESULTS")
    assert not re.search(r"\d\.\d", _strip_cmds(results_text))
    assert not re.search(r"\d\.\d", _strip_cmds(slot_content(tex, "ABSTRACT")))
    # every capitalised macro used is defined in numbers.tex (or is one of the template's label macros, \Rsq)
    defined = set(re.findall(r"\\newcommand\{\\([A-Za-z]+)\}", (out / "numbers.tex").read_text()))
    used = set(re.findall(r"\\([A-Z][A-Za-z]*)\{\}", tex))
    assert used - defined <= template_macros(TEMPLATE.read_text()), used - defined
    records = json.loads((out / "numbers.json").read_text())["macros"]
    assert all(re.fullmatch(r"\\[A-Za-z]+", r["macro"]) and r["source"] for r in records)


def _strip_cmds(tex: str) -> str:
    return re.sub(r"\\(label|ref|cite[tp]?|includegraphics|begin|end)(\[[^]]*\])?\{[^}]*\}", "", tex)


def test_macro_values_match_artifacts(binary_paper):
    _, out = binary_paper
    recs = {r["macro"]: r for r in json.loads((out / "numbers.json").read_text())["macros"]}
    assert recs[r"\BestAUC"]["value"] == "0.823"
    assert recs[r"\BestAUC"]["source"] == "results.json:models.xgboost.metrics.auc"
    assert recs[r"\BestAUCCI"]["value"] == r"95\% CI [0.819, 0.827]"
    assert recs[r"\StackingMinusSelectedCI"]["source"] == "results.json:selection_evidence.stacking_minus_selected.ci"
    assert recs[r"\StackingMinusSelected"]["raw"] == pytest.approx(-0.0006)
    assert recs[r"\OriginalN"]["value"] == "23{,}503"
    assert recs[r"\RetentionPct"]["value"] == r"72.4\%"
    assert recs[r"\XgboostAUC"]["raw"] == pytest.approx(0.8231)
    tex = (out / "numbers.tex").read_text()
    assert r"\newcommand{\BestAUC}{0.823} % results.json:models.xgboost.metrics.auc" in tex
    results_text = slot_content((out / "paper.tex").read_text(), "RESULTS")
    assert r"\BestAUC{}" in results_text or r"\XgboostAUC{}" in results_text
    assert r"\begin{tabular}" in results_text and r"\toprule" in results_text
    assert r"\fitcolumn" in results_text


def test_citations_resolve(any_paper):
    summary, out = any_paper
    tex = (out / "paper.tex").read_text()
    keys = cited_keys(tex)
    bib = _bib_keys(out / "references.bib")
    assert len(keys) >= 5
    assert set(keys) == set(bib) and len(bib) == len(set(bib))
    assert set(summary["cited_keys"]) == set(keys)
    assert "fake2023made" not in bib
    assert "lundberg2017unified" in bib and "lundberg_wrong_key" not in (out / "references.bib").read_text()
    assert r"\citep{" in tex and r"\citet{" in tex


def test_special_characters_escaped(binary_paper):
    _, out = binary_paper
    tex = (out / "paper.tex").read_text()
    assert r"Parents' income \& R\_D spending: top \TextNum" in tex
    assert r"\% \$ \#" in tex
    assert SPECIAL_LABEL[3:] not in tex


def test_unverified_block(tmp_path):
    _, out = _build(tmp_path, binary=True, passed=False)
    tex = (out / "paper.tex").read_text()
    assert tex.count(r"\unverifiedbox{\textbf{Unverified draft.}") == 1
    assert r"\label{app:review}" in tex and "Recode all negative reserve codes" in tex
    block = slot_content(tex, "UNVERIFIED")
    assert block.strip() and tex.index(block) < tex.index(r"\section{Introduction}")
    # building again into the same folder, or re-filling the written paper, does not duplicate it
    _build(tmp_path, binary=True, passed=False)
    tex2 = (out / "paper.tex").read_text()
    assert tex2 == tex
    again = fill_slot(tex2, "UNVERIFIED", block)
    assert again.count(r"\unverifiedbox{\textbf") == 1
    # a PASS review: no block, no review appendix
    _, out_pass = _build(tmp_path, binary=True, passed=True, name="pass")
    tex_pass = (out_pass / "paper.tex").read_text()
    assert r"\unverifiedbox{\textbf" not in tex_pass and "app:review" not in tex_pass
    # PASS but unverified (e.g. offline review) still warns
    rv = review(True)
    rv["unverified"] = True
    _, out_u = _build(tmp_path, binary=True, passed=True, name="pass_unverified", review=rv)
    assert (out_u / "paper.tex").read_text().count(r"\unverifiedbox{\textbf") == 1


def _artifacts_by_name(arts: dict) -> dict:
    """The writer's inputs under the names sources.json gives them (what verify-paper reads)."""
    names = {"spec": "research_spec.json", "literature": "literature_context.json", "data_report": "data_report.json",
             "results": "results.json", "review": "review_report.json"}
    return {names[k]: v for k, v in arts.items() if k in names}


@pytest.mark.parametrize("change", [
    {"verdict": "PASS", "rubric_verdict": "REVISE", "unverified": True},  # the Critic's REVISE with no round left
    {"verdict": "PASS", "rubric_verdict": "REVISE", "unverified": False},  # the rubric's REVISE alone
    {"verdict": "REVISE", "unverified": False},
])
def test_every_unverified_review_puts_the_block_in_and_verify_paper_holds_it_to_that(tmp_path, change):
    rv = review(True) | change
    _, out = _build(tmp_path, binary=True, passed=True, review=rv)
    tex = (out / "paper.tex").read_text()
    block = slot_content(tex, "UNVERIFIED")
    assert block.count(r"\unverifiedbox{\textbf{Unverified draft.}") == 1 and "review: ." not in block
    arts = _artifacts_by_name({"spec": spec(True), "literature": literature(), "data_report": data_report(True),
                               "results": results(True), "review": rv})
    assert verify_paper(out / "paper.tex", artifacts=arts).ok
    (out / "paper.tex").write_text(fill_slot(tex, "UNVERIFIED", ""))
    report = verify_paper(out / "paper.tex", artifacts=arts)
    assert any("leaves the paper unverified" in f and "no UNVERIFIED block" in f for f in report.failures)


def test_prose_rules(any_paper):
    summary, out = any_paper
    tex = (out / "paper.tex").read_text()
    for section in ("ABSTRACT", "RESULTS", "DISCUSSION"):
        low = slot_content(tex, section).lower()
        for phrase in (" causes ", "caused by", "leads to", "led to", "effect of", "impact of"):
            assert phrase not in low, (section, phrase)
    assert "subjects" not in tex.lower()
    methods = slot_content(tex, "METHODS")
    assert "generated automatically by EDM-ARS" in methods and "offline backend" in methods
    assert "students" in methods
    for word in ("sentinel", "reserve", "school clusters", "before any encoding", "bootstrap"):
        assert word in methods or word in methods.replace("\n", " "), word
    limitations = slot_content(tex, "LIMITATIONS")
    assert "curated bibliography" in limitations
    assert "Public-use data suppress school identifiers." in limitations
    assert 150 <= summary["sections"]["abstract"] <= 250, summary["sections"]["abstract"]
    assert summary["sections"]["introduction"] >= 300
    assert summary["sections"]["methods"] >= 400


def test_conditioned_on_results(binary_paper, regression_paper):
    tex_b = (binary_paper[1] / "paper.tex").read_text()
    tex_r = (regression_paper[1] / "paper.tex").read_text()
    assert "tree ensemble XGBoost improved on" in slot_content(tex_b, "DISCUSSION")
    assert "largely additive" in slot_content(tex_r, "DISCUSSION")
    res_b, res_r = slot_content(tex_b, "RESULTS"), slot_content(tex_r, "RESULTS")
    assert "SHAP" in res_b and r"\Rsq{}" in res_r
    # the selection is explained with the overlap rule and the stacking evidence
    assert "no other single model's 95\\% interval overlapped that of XGBoost" in res_b
    assert "Stacking was not clearly better" in res_b and r"\StackingMinusSelectedCI{}" in res_b
    assert "The simplest of them, elastic-net regression, was selected" in res_r
    # flags are narrated, not dumped; errors get one sentence in the limitations
    assert "Analysis flag:" not in tex_b and "Analysis flag:" not in tex_r
    assert "fell below the quality floor" in res_r and r"\QualityFloor{}" in res_r
    lim_b, lim_r = slot_content(tex_b, "LIMITATIONS"), slot_content(tex_r, "LIMITATIONS")
    assert "\\emph{class imbalance}" in lim_b
    assert r"\NAnalysisErrors{} analysis step reported problems: explain mlp (TimeoutError:" in lim_r
    assert "reported problems" not in lim_b
    # every model family and its tuning in the methods
    methods = slot_content(tex_b, "METHODS")
    for phrase in ("multilayer perceptron", "stacked ensemble", "out-of-fold predictions", "early stopping",
                   "grouped by reconstructed school", "stratified by the outcome", "quality floor",
                   "LinearExplainer", "TreeExplainer", "KernelExplainer", "equalized-odds difference",
                   "Subgroup Fairness Audit", "Stability Analysis"):
        assert phrase in methods, phrase
    for key in ("zou2005regularization", "breiman2001random", "chen2016xgboost", "lundberg2017unified"):
        assert key in methods, key


def test_without_fairness_audit(tmp_path):
    res = results(True)
    res["fairness"] = None
    res["flags"] = [f for f in res["flags"] if not f.startswith("fairness")]
    _, out = _build(tmp_path, binary=True, passed=False, results=res)
    tex = (out / "paper.tex").read_text()
    assert "did not report performance separately" in slot_content(tex, "DISCUSSION")
    assert "Subgroup Fairness" not in tex and "tab:fairness" not in tex


def test_without_verified_papers(tmp_path):
    lit = {"source": "semantic_scholar", "retrieval_failed": False, "retrieval_note": "ok", "papers": []}
    summary, out = _build(tmp_path, binary=False, passed=True, literature=lit)
    tex = (out / "paper.tex").read_text()
    assert cited_keys(tex) == [] and summary["cited_keys"] == []
    assert r"\bibliography{" not in tex and (out / "references.bib").read_text() == ""


def test_unknown_dataset_and_sparse_artifacts(tmp_path):
    sp = spec(False)
    sp["dataset"] = "els2002"
    for p in sp["predictors"]:
        p["wave"] = None
    res = results(False)
    res["top_features"], res["figures"] = [], []
    for m in res["models"].values():
        m["ci"], m["best_params"], m["cv_score"] = {}, {}, None
    rep = data_report(False)
    rep["outcome_summary"] = None
    rep["split"]["school_reconstruction"] = {"status": "unavailable", "n_clusters": None}
    summary, out = _build(tmp_path, binary=False, passed=True, spec=sp, results=res, data_report=rep, dataset={})
    tex = (out / "paper.tex").read_text()
    assert summary["raw_numbers"] == {} and summary["figures"] == 0
    assert "may therefore appear in both" in tex and "the ELS2002 data" in tex
    assert "from the ," not in tex and "No feature attributions" in tex


def test_best_model_without_primary_metric(tmp_path):
    res = results(True)
    del res["models"]["xgboost"]["metrics"]["auc"]
    with pytest.raises(Exception, match="no 'auc' metric"):
        _build(tmp_path, binary=True, passed=True, results=res)


@pytest.mark.workflow
@needs_latex
def test_compile_without_references(tmp_path):
    lit = {"source": "semantic_scholar", "retrieval_failed": False, "retrieval_note": "ok", "papers": []}
    _, out = _build(tmp_path, binary=True, passed=True, literature=lit)
    assert compile_pdf(out / "paper.tex", out / "latexmk.log").is_file()


def test_bad_best_model_is_reported(tmp_path):
    res = results(True)
    res["best_model"] = "svm"
    with pytest.raises(Exception, match="svm"):
        _build(tmp_path, binary=True, passed=True, results=res)


# ---- compiling ----------------------------------------------------------------------------------


@pytest.mark.workflow
@needs_latex
@pytest.mark.parametrize("binary", [True, False])
def test_compile_pdf(tmp_path, binary):
    _, out = _build(tmp_path, binary=binary, passed=not binary)
    pdf = compile_pdf(out / "paper.tex", out / "latexmk.log")
    pages = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    assert re.search(r"Pages:\s+[3-9]\b", pages) or not shutil.which("pdfinfo"), pages
    assert pdf.is_file()
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    flat = re.sub(r"\s+", " ", text)
    for name in ("INTRODUCTION", "RELATED WORK", "METHODS", "RESULTS", "DISCUSSION", "LIMITATIONS",
                 "REFERENCES"):
        assert name in flat.upper(), name
    assert "??" not in text
    assert "0.823" in flat if binary else "0.623" in flat
    assert ("UNVERIFIED DRAFT" in flat.upper()) == binary


@needs_latex
def test_compile_error_reports_latex_lines(tmp_path):
    tex = tmp_path / "broken.tex"
    tex.write_text("\\documentclass{article}\n\\begin{document}\nok\n\\undefinedmacro\n\\end{document}\n")
    with pytest.raises(LatexError) as info:
        compile_pdf(tex, tmp_path / "broken.log")
    msg = str(info.value)
    assert "! Undefined control sequence." in msg and "l.4" in msg


@needs_latex
def test_compile_reports_undefined_references(tmp_path):
    tex = tmp_path / "refs.tex"
    tex.write_text("\\documentclass{article}\n\\begin{document}\nSee \\ref{fig:nope}.\n\\end{document}\n")
    with pytest.raises(LatexError, match="fig:nope"):
        compile_pdf(tex, tmp_path / "refs.log")


@needs_latex
def test_compile_fails_on_a_box_wider_than_the_limit(tmp_path):
    tex = tmp_path / "wide.tex"
    tex.write_text("\\documentclass{article}\n\\begin{document}\nok\n\n\\noindent\\rule{1.5\\textwidth}{1pt}\n"
                   "\\end{document}\n")
    with pytest.raises(LatexError, match=r"overfull box [\d.]+pt too wide in paragraph at lines 5--6"):
        compile_pdf(tex, tmp_path / "wide.log", max_overfull_pt=10)
    assert compile_pdf(tex, tmp_path / "wide.log").is_file()  # no limit: builds


def test_inputs_are_not_mutated(tmp_path):
    arts = {"spec": spec(True), "results": results(True)}
    before = copy.deepcopy(arts)
    _build(tmp_path, binary=True, passed=False, **arts)
    assert arts == before


# ---- the Analyst battery: fairness, stability, flags ---------------------------------------------------
def _macro_for(out: Path, source: str) -> str:
    for rec in json.loads((out / "numbers.json").read_text())["macros"]:
        if rec["source"] == source:
            return rec["macro"] + "{}"
    raise AssertionError(f"no macro with source {source}")


def _float_block(tex: str, label: str) -> str:
    for block in re.findall(r"\\begin\{(?:table|figure)\*?\}.*?\\end\{(?:table|figure)\*?\}", tex, re.S):
        if f"\\label{{{label}}}" in block:
            return block
    raise AssertionError(f"no float labelled {label}")


def _subsection(results_tex: str, title: str) -> str:
    """The running text of a Results subsection (floats removed)."""
    m = re.search(rf"\\subsection\{{{re.escape(title)}\}}(.*?)(?=\\subsection\{{|\Z)", results_tex, re.S)
    assert m, title
    return re.sub(r"\\begin\{(table|figure)\}.*?\\end\{\1\}", " ", m.group(1), flags=re.S)


def _escaped_prefix(name: str) -> str:
    """The escaped text of a label up to its first digit (digits become quoted-number macros)."""
    return escape_latex(re.split(r"\d", name)[0])


@pytest.mark.parametrize("binary", [True, False])
def test_one_flagged_gap_is_not_called_all_of_them(tmp_path, binary):
    """The count of flagged gaps names the attribute; "all of them" only when several gaps were flagged."""
    res = results(binary)
    for attr, rec in res["fairness"]["attributes"].items():
        if rec["kind"] != "attribute" or attr != "X1RACE":
            for gap in (rec["gaps"] or {}).values():
                if gap:
                    gap["flagged"] = False

    def summary(name):
        _, out = _build(tmp_path / name, binary=binary, passed=True, results=res)
        return " ".join(_subsection(slot_content((out / "paper.tex").read_text(), "RESULTS"), "Subgroup Fairness")
                        .split())

    flagged = [g for g in res["fairness"]["attributes"]["X1RACE"]["gaps"].values() if g and g["flagged"]]
    assert len(flagged) > 1 and "all of them for \\emph{" in summary("several")
    for gap in flagged[1:]:
        gap["flagged"] = False
    text = summary("one")
    assert "all of them" not in text and "exceeded the threshold" in text and ", for \\emph{" in text, text


@pytest.mark.parametrize("binary", [True, False])
def test_fairness_table_and_summary(tmp_path, binary):
    res = results(binary)
    _, out = _build(tmp_path, binary=binary, passed=True, results=res)
    tex = (out / "paper.tex").read_text()
    results_tex = slot_content(tex, "RESULTS")
    table = _float_block(results_tex, "tab:fairness")
    rows = [line for line in table.splitlines() if line.rstrip().endswith("\\\\")]
    summary = _subsection(results_tex, "Subgroup Fairness")
    fa = res["fairness"]
    primary = fa["primary_metric"]
    for attr, rec in fa["attributes"].items():
        if rec["kind"] == "intersection":  # intersections are summarised in one sentence, not tabulated
            assert not any(" x " in line or "texttimes" in line for line in rows)
            assert "intersection" in summary
            continue
        for i, g in enumerate(rec["groups"]):
            prefix = _escaped_prefix(g["group"])
            row = next((line for line in rows if line.startswith(prefix)), None)
            assert row is not None, (attr, g["group"])
            n_macro = _macro_for(out, f"results.json:fairness.attributes.{attr}.groups.{i}.n")
            assert n_macro in row
            assert ("\\textsuperscript{\\dag}" in row) == (not g["reliable"]), row
            if g["reliable"]:
                assert _macro_for(out, f"results.json:fairness.attributes.{attr}.groups.{i}.{primary}") in row
        # the summary names the reliable group with the lowest primary metric
        lowest = min((g for g in rec["groups"] if g["reliable"]), key=lambda g: g[primary])
        assert rec["gaps"][primary]["min_group"] == lowest["group"]
        assert f"lowest for the group \\emph{{{escape_latex(lowest['group'])}}}" in summary
    assert "\\dag" in table and "Unreliable group" in table
    if binary:
        assert "TPR" in table and "FPR" in table and "equalized-odds difference" in summary
        assert "CITL" in table and "Slope" in table and r"\FairFlagShare{}" in table
        assert "Calibration in the large ranged" in summary and "calibration slopes ranged" in summary
    else:
        assert "& ME & " in table and "standard deviations" in table and "R2" not in table
        assert "Rsq" not in _subsection(results_tex, "Subgroup Fairness")
    flagged = sum(1 for a, r in fa["attributes"].items() if r["kind"] == "attribute"
                  for g in r["gaps"].values() if g and g["flagged"])
    recs = {r["macro"]: r for r in json.loads((out / "numbers.json").read_text())["macros"]}
    assert recs[r"\FairNFlaggedGaps"]["raw"] == flagged and r"\FairNFlaggedGaps{}" in summary
    assert r"\FairGapThreshold{}" in summary


@pytest.mark.parametrize("unstable", [False, True])
def test_stability_paragraph(tmp_path, unstable):
    res = results(True)
    res["stability"] = _stability("auc", "xgboost", 0.8231, unstable=unstable)
    if unstable:
        res["flags"].append("unstable: mean top-5 SHAP overlap 0.40 across 4 perturbations is under 0.6")
    # more than ten predictors: the top-five and top-ten overlaps are findings (with fewer they hold by construction,
    # tests/writer/test_design_facts.py)
    rep = data_report(True)
    rep["predictors_before"] = rep["predictors_before"] + [f"X1EXTRA{chr(65 + i)}" for i in range(7)]
    _, out = _build(tmp_path, binary=True, passed=True, results=res, data_report=rep)
    tex = (out / "paper.tex").read_text()
    section = _subsection(slot_content(tex, "RESULTS"), "Stability")
    for macro in ("StabAUCMean", "StabAUCSd", "StabAUCMin", "StabAUCMax", "StabTopFiveMean", "StabTopTenMean",
                  "StabRankCorrMean", "StabNPerturbations", "StabThreshold"):
        assert f"\\{macro}{{}}" in section, macro
    recs = {r["macro"]: r for r in json.loads((out / "numbers.json").read_text())["macros"]}
    assert recs[r"\StabAUCMean"]["source"] == "results.json:stability.metric_spread.mean"
    assert recs[r"\StabAUCMean"]["raw"] == pytest.approx(res["stability"]["metric_spread"]["mean"])
    assert recs[r"\StabNPerturbations"]["raw"] == 4
    assert ("unstable" in section.lower()) == unstable
    assert "bootstrap resamples of the training set" in section
    assert "unstable: mean top-5" not in tex


def test_no_raw_flags_and_no_causal_language(any_paper):
    _, out = any_paper
    tex = (out / "paper.tex").read_text()
    flags = results(True)["flags"] + results(False)["flags"]
    assert any(f.startswith("fairness: X1RACE:") for f in flags)
    for flag in flags:
        assert flag not in tex and escape_latex(flag) not in tex, flag
    assert "fairness: X1RACE:" not in tex and "fairness: X1RACE" not in tex
    assert "possible\\_leakage" not in tex and "below\\_quality\\_floor" not in tex
    low = slot_content(tex, "RESULTS").lower()
    for phrase in ("causes", "leads to", "led to", "effect of", "caused by", "impact of"):
        assert phrase not in low, phrase
    assert "presents an additional view" not in tex


# ---- the real artifacts of a workflow run --------------------------------------------------------------
FIXTURE_DIR = ROOT / "tests" / "fixtures" / "writer"
REAL_LABELS = {"X1RACE": "X1 Student's race/ethnicity-composite", "X1SEX": "X1 Student's sex",
               "X1SESQ5": "X1 Quintile coding of X1SES composite"}


def real_artifacts() -> dict:
    names = {"spec": "research_spec", "literature": "literature_context", "data_report": "data_report",
             "results": "results", "review": "review_report"}
    return {k: json.loads((FIXTURE_DIR / f"{v}.json").read_text()) for k, v in names.items()}


@functools.cache
def _tiny_pdf(title: str) -> bytes:
    """A small PDF figure with a title (drawn once per title and test session)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f, ax = plt.subplots(figsize=(3.3, 2.0))
    ax.plot([0, 1], [0, 1])
    ax.set_title(title)
    buf = io.BytesIO()
    f.savefig(buf, format="pdf")
    plt.close(f)
    return buf.getvalue()


def _real_figures(round_dir: Path, res: dict) -> Path:
    """A tiny PDF at every path listed in results.json (paths are relative to the round folder)."""
    for fig in res["figures"]:
        path = round_dir / fig["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_tiny_pdf(fig["kind"]))
    return round_dir / "figures"


def regression_variant(arts: dict) -> dict:
    """The real binary run recast as a regression run (metrics, fairness groups and stability in R2 terms)."""
    a = copy.deepcopy(arts)
    sp, rep, res = a["spec"], a["data_report"], a["results"]
    sp["task"] = rep["task"] = res["task"] = "regression"
    sp["outcome"] = {"name": "X3TGPATOT", "label": "X3 Overall GPA computed", "wave": "second_follow_up",
                     "type": "continuous", "positive_label": None}
    rep["outcome"] = "X3TGPATOT"
    rep["class_balance"] = None
    rep["outcome_summary"] = {"mean": 2.71, "sd": 0.88, "min": 0.0, "max": 4.0}
    res["primary_metric"] = "r2"
    res["selection_rule"] = res["selection_rule"].replace("AUC", "R2")

    def r2_of(auc: float) -> float:
        return round((auc - 0.5) * 1.6, 4)

    for name, m in res["models"].items():
        auc, (lo, hi) = m["metrics"]["auc"], m["ci"]["auc"]
        r2 = r2_of(auc) if name != "mlp" else 0.031
        rmse = round(0.88 * (1 - r2) ** 0.5, 4)
        m["metrics"] = {"rmse": rmse, "mae": round(rmse * 0.8, 4), "r2": r2}
        m["ci"] = {"r2": [r2_of(lo), r2_of(hi)] if name != "mlp" else [0.01, 0.05],
                   "rmse": [rmse - 0.01, rmse + 0.01], "mae": [rmse * 0.8 - 0.01, rmse * 0.8 + 0.01]}
        if isinstance(m.get("cv_score"), float):
            m["cv_score"] = r2_of(m["cv_score"])
        if name == "logistic":
            m["label"] = "Ridge regression"
            m["best_params"] = {"alpha": 10.0}
    res["shap"]["by_model"].pop("mlp", None)
    # the selection evidence follows the recast intervals (the models whose intervals overlap the top single one's)
    ev = res["selection_evidence"]
    top = ev["top_single"]
    lo, hi = res["models"][top]["ci"]["r2"]
    ev["overlapping_top"] = [m for m in ev["overlapping_top"]
                             if res["models"][m]["ci"]["r2"][0] <= hi and lo <= res["models"][m]["ci"]["r2"][1]]
    res["flags"] = ["below_quality_floor: mlp R2 0.031 < 0.05 (not interpreted)"]
    res["thresholds"] = {"quality_floor": 0.05, "leakage_auc": None, "leakage_r2": 0.95}
    fa = res["fairness"]
    fa.update(task="regression", primary_metric="rmse", error_scale={"kind": "training_outcome_sd", "sd": 0.88},
              decision_rule=None)
    fa.pop("threshold", None)
    fa["overall"] = {"rmse": 0.85, "mae": 0.68, "mean_error": 0.0}
    for attr, rec in fa["attributes"].items():
        for i, g in enumerate(rec["groups"]):
            base = g.get("auc")
            r2 = None if base is None else r2_of(base)
            me = round(0.05 * ((i % 3) - 1) + 0.01 * i, 4)
            for k in ("auc", "tpr", "fpr", "selection_rate", "flag_rate", "base_rate", "at_risk_rate", "n_positive",
                      "citl", "calibration_slope"):
                g.pop(k, None)
            rmse = None if r2 is None else round((1 - r2) ** 0.5, 4)
            g.update(metric=rmse, ci=None if rmse is None else [round(rmse - 0.04, 4), round(rmse + 0.04, 4)],
                     rmse=rmse, mae=None if r2 is None else round(0.8 * (1 - r2) ** 0.5, 4), mean_error=me)
        rec["gaps"] = _gaps(rec["groups"], ["rmse", "mean_error"], fa["gap_threshold"])
        rec["flags"] = [f"{attr}: {k} gap {g['gap']:.3f}" for k, g in rec["gaps"].items() if g and g["flagged"]]
        res["flags"] += [f"fairness: {f}" for f in rec["flags"]]
    fa["flags"] = [f[len("fairness: "):] for f in res["flags"] if f.startswith("fairness: ")]
    st = res["stability"]
    st["metric"] = "r2"
    st["reference_metric"] = r2_of(st["reference_metric"])
    for run in st["runs"]:
        run["r2"] = r2_of(run.pop("auc"))
    vals = [run["r2"] for run in st["runs"]]
    mean = sum(vals) / len(vals)
    st["metric_spread"] = {"mean": mean, "sd": (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5,
                           "min": min(vals), "max": max(vals)}
    res["figures"] = [
        {"path": "figures/evaluate/observed_predicted.pdf", "kind": "observed_predicted",
         "caption": "Observed against predicted values of the selected model on the held-out test students."},
        {"path": "figures/evaluate/residuals.pdf", "kind": "residuals",
         "caption": "Residuals of the selected model on the held-out test students."},
    ] + [f for f in res["figures"] if f["kind"] not in ("roc", "calibration")]
    for f in res["figures"]:
        f["caption"] = f["caption"].replace("Held-out AUC", "Held-out R2")
    return a


def build_fixture_paper(tmp_path: Path, arts: dict, **kw) -> tuple[dict, Path]:
    """The paper of (possibly changed) fixture artifacts in tmp_path/paper, with the fixture's figures, template,
    phrases, labels and HSLS:09 prose; returns build_paper's summary and the paper folder."""
    figs = _real_figures(tmp_path / "round_0", arts["results"])
    out = tmp_path / "paper"
    summary = build_paper(arts["spec"], arts["literature"], arts["data_report"], arts["results"], arts["review"],
                          figures_dir=figs, template=TEMPLATE, out_dir=out, phrases=PHRASES, registry_labels=REAL_LABELS,
                          dataset=HSLS_PROSE, **kw)
    return summary, out


def _build_real(tmp_path: Path, regression: bool) -> tuple[dict, Path, dict]:
    arts = real_artifacts()
    if regression:
        arts = regression_variant(arts)
    summary, out = build_fixture_paper(tmp_path, arts, authors="EDM-ARS (automated research system)")
    return summary, out, arts


@pytest.mark.parametrize("regression", [False, True])
def test_real_fixture_builds(tmp_path, regression):
    summary, out, arts = _build_real(tmp_path, regression)
    res = arts["results"]
    tex = (out / "paper.tex").read_text()
    assert summary["raw_numbers"] == {} and summary["missing_figures"] == []
    assert summary["figures"] == len(res["figures"])
    results_tex = slot_content(tex, "RESULTS")
    for title in ("Model Comparison", "Interpretation", "Subgroup Fairness", "Stability"):
        assert f"\\subsection{{{title}}}" in results_tex, title
    order = [results_tex.index(f"\\subsection{{{t}}}") for t in ("Model Comparison", "Interpretation",
                                                                 "Subgroup Fairness", "Stability")]
    assert order == sorted(order)
    # every figure is placed and discussed in the Results text
    for fig in re.findall(r"\\label\{(fig:[^}]+)\}", results_tex):
        assert f"\\ref{{{fig}}}" in re.sub(r"\\begin\{figure\}.*?\\end\{figure\}", "", results_tex, flags=re.S)
    assert "presents an additional view" not in tex
    interp = _subsection(results_tex, "Interpretation")
    assert "LinearExplainer" in interp and "not explained" in interp
    assert r"\ShapCommonTopFive{}" in interp and "GPA for all academic courses" in interp
    assert "predicted" in interp
    for flag in res["flags"]:
        assert flag not in tex and escape_latex(flag) not in tex
    low = results_tex.lower()
    for phrase in ("causes", "leads to", "effect of", "caused by"):
        assert phrase not in low
    table = _float_block(results_tex, "tab:fairness")
    assert "Amer. Indian/Alaska Native, non-Hispanic\\textsuperscript{\\dag}" in table
    assert "X1RACE x X1SEX" not in table
    if regression:
        assert "fell below the quality floor" in results_tex and "& ME & " in table
    else:
        assert "Black/African-American, non-Hispanic" in _subsection(results_tex, "Subgroup Fairness")


@pytest.mark.parametrize("regression", [False, True])
def test_real_fixture_passes_verify_paper(tmp_path, regression):
    """The default paper trips none of the integrity checks: every number reconciles (percentages included), every
    citation is in references.bib, no placeholder, and the review's verdict is respected."""
    _, out, arts = _build_real(tmp_path, regression)
    report = verify_paper(out / "paper.tex", artifacts=_artifacts_by_name(arts))
    assert report.ok and not report.warnings, report.summary()
    assert document_placeholders((out / "paper.tex").read_text()) == []
    percentages = [n for n in report.numbers if n.percent]
    assert any(n.status == "matched" for n in percentages)
    assert {n.how for n in percentages if n.status == "exempt"} <= {"confidence level"}


@pytest.mark.workflow
@needs_latex
@pytest.mark.parametrize("regression", [False, True])
def test_real_fixture_compiles(tmp_path, regression):
    _, out, _ = _build_real(tmp_path, regression)
    pdf = compile_pdf(out / "paper.tex", out / "latexmk.log")
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    flat = re.sub(r"\s+", " ", text).lower()
    assert "subgroup fairness" in flat and "stability" in flat
    assert "??" not in text
    if shutil.which("pdfinfo"):
        pages = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
        # 5 to 10 pages: the argument's contribution paragraph and Discussion opening (issue 36) took the fixture's
        # binary paper from 9 pages to 10
        assert re.search(r"Pages:\s+(?:[5-9]|10)\b", pages), pages
    log = (out / "paper.log").read_text(encoding="latin-1")
    assert "Overfull \\hbox" not in log


# ---- claims: the Writer states supported claims, inconclusive ones as such ----------------------------
def _claims_with(results_: dict, statuses: dict[str, str]) -> dict:
    from edm_ars.review.claims import code_claims, document

    claims = code_claims(results_)
    for c in claims:
        for prefix, status in statuses.items():
            if c["id"].startswith(prefix):
                c["status"] = status
    return document(claims, round_=0, backend="offline")


def test_writer_states_only_supported_claims(tmp_path):
    res = results(True)
    supported = _claims_with(res, {})
    assert {c["status"] for c in supported["claims"] if c["id"] == "predicts_above_chance"} == {"supported"}
    _, out = _build(tmp_path, binary=True, passed=True, name="supported", claims=supported)
    tex = (out / "paper.tex").read_text()
    assert "is thus predictive" in slot_content(tex, "ABSTRACT")

    doubtful = _claims_with(res, {"predicts_above_chance": "inconclusive", "subgroup_gap_": "inconclusive",
                                  "outperforms_": "inconclusive"})
    _, out = _build(tmp_path, binary=True, passed=True, name="doubtful", claims=doubtful)
    tex = (out / "paper.tex").read_text()
    abstract, discussion = slot_content(tex, "ABSTRACT"), slot_content(tex, "DISCUSSION")
    assert "is thus predictive" not in abstract and "is not settled by these data" in abstract
    # the intervals of the two models do not overlap, so the paper says the debate left the comparison open
    assert "improved on" not in discussion and "left open whether XGBoost predicts better than" in discussion
    assert "the evidence on them is inconclusive" in discussion
    # a gap above the threshold that the evidence does not settle is never "no gap above the threshold"
    assert "found no gap above the flagging threshold," not in discussion

    refuted = _claims_with(res, {"predicts_above_chance": "unsupported", "subgroup_gap_": "unsupported"})
    _, out = _build(tmp_path, binary=True, passed=True, name="refuted", claims=refuted)
    abstract = slot_content((out / "paper.tex").read_text(), "ABSTRACT")
    assert "is thus predictive" not in abstract and "not settled" not in abstract
    assert "differed by up to" not in abstract


def test_a_flagged_gap_whose_interval_covers_zero_is_not_asserted(tmp_path):
    """The results debate judges the primary metric's gap; when it does not support a gap and every flagged gap of
    the attribute (another metric's, flagged on its point estimate) has an interval that covers zero, the Discussion
    calls the evidence inconclusive instead of saying that the model does not predict equally well; a flagged gap
    whose interval excludes zero is still stated."""
    res = copy.deepcopy(results(True))
    gaps = res["fairness"]["attributes"]["X1RACE"]["gaps"]
    flagged = [g for g in gaps.values() if isinstance(g, dict) and g.get("flagged")]
    assert flagged
    for g in flagged:
        g["ci"] = [-0.05, g["gap"] + 0.1]
    refuted = _claims_with(res, {"subgroup_gap_": "unsupported"})
    _, out = _build(tmp_path, binary=True, passed=True, name="covers", results=res, claims=refuted)
    discussion = " ".join(slot_content((out / "paper.tex").read_text(), "DISCUSSION").split())
    assert "does not predict equally well" not in discussion and "the evidence on them is inconclusive" in discussion
    flagged[0]["ci"] = [0.01, flagged[0]["gap"] + 0.1]
    _, out = _build(tmp_path, binary=True, passed=True, name="excludes", results=res, claims=refuted)
    discussion = " ".join(slot_content((out / "paper.tex").read_text(), "DISCUSSION").split())
    assert "does not predict equally well" in discussion


# ---- other data sets: the registry's prose, never HSLS:09 wording ---------------------------------------------


def _other_dataset_paper(tmp_path: Path, registry: str, name: str) -> tuple[str, dict]:
    prose = load_registry(ROOT / "registry" / registry).prose
    sp = spec(False)
    sp.update(dataset=name, population="Students in the data with a recorded outcome.",
              research_question="How accurately can the later score be predicted from earlier records?",
              limitations=["Predictive associations only."], expected_contribution="")
    sp["outcome"].update(label="Later score", wave=prose["wave_order"][-1] if prose["wave_order"] else None)
    for p in sp["predictors"]:
        p["wave"] = prose["wave_order"][0] if prose["wave_order"] else None
    if not prose["wave_order"]:
        sp["temporal_order_note"] = "The data have no wave structure, so precedence could not be checked."
    rep = data_report(False)
    rep["split"]["school_reconstruction"] = {"status": "success", "n_clusters": 75, "columns": ["schoolid3"]}
    rep["sentinel_recoding"] = {"n_values_recoded": 0, "by_variable": {}, "codes": [], "labels": []}
    rep["warnings"] = []
    summary, out = _build(tmp_path, binary=False, passed=True, name=name, spec=sp, data_report=rep, dataset=prose)
    return (out / "paper.tex").read_text(), summary


@pytest.mark.parametrize("registry, name", [("star.yaml", "star"), ("hsb_math.yaml", "hsb_math")])
def test_other_data_sets_are_described_from_their_registry(tmp_path, registry, name):
    tex, summary = _other_dataset_paper(tmp_path, registry, name)
    body = re.sub(r"\\cite[a-z]*\{[^}]*\}", "", tex).lower()  # wording, not the keys of cited works
    prose = load_registry(ROOT / "registry" / registry).prose
    assert summary["raw_numbers"] == {}
    assert escape_latex(prose["short"]) in tex and "identified by \\texttt{" in tex
    for word in ("hsls", "nces", "public-use", "ninth", "reconstructed", "nationally representative",
                 "survey wave"):
        assert not re.search(rf"\b{word}\b", body), word
    if name == "hsb_math":  # one cross-section: the paper says so and states what the gate could not check
        assert "the same cross-section as the outcome" in tex and "precedence could not be checked" in tex
    else:
        assert "kindergarten year" in tex and "cross-section" not in tex


# ---- label macros are not number macros ---------------------------------------------------------------
def test_the_template_label_macros_are_read_from_the_template():
    assert template_macros(TEMPLATE.read_text()) == {"Rsq"}  # \unverifiedbox, \fitcolumn take an argument
    planted = ("\\providecommand{\\Rsq}{\\ensuremath{R^{2}}}\n\\newcommand\\Auc{AUC}\n"
               "\\DeclareRobustCommand*{\\Brier}{Brier}\n\\newcommand{\\Box}[1]{#1}\n"
               "% \\newcommand{\\Commented}{x}\n\\renewcommand\\footnotetextcopyrightpermission[1]{}\n")
    assert template_macros(planted) == {"Rsq", "Auc", "Brier"}


def test_a_model_discussion_may_use_the_template_label_macros_but_no_unknown_macro(tmp_path):
    """A model-written Discussion of a continuous study uses \\Rsq{} (the template's notation, no number): it is
    accepted; an undefined \\Name{} is still rejected as an unknown number macro."""
    from edm_ars.writer.model_prose import check

    seen = {}

    def rewriter(ctx, drafts):
        draft = drafts["DISCUSSION"]
        seen["rsq"] = check(ctx, "DISCUSSION", draft + "\n\nThe \\Rsq{} of the selected model is \\BestRSquared{}.")
        seen["unknown"] = check(ctx, "DISCUSSION", draft + "\n\nIts score was \\ReviewScoreX{} on \\Rsq{}.")
        seen["notation"] = ctx.notation
        return {}, []

    arts = {"spec": spec(False), "literature": literature(), "data_report": data_report(False),
            "results": results(False), "review": review(True)}
    build_paper(arts["spec"], arts["literature"], arts["data_report"], arts["results"], arts["review"],
                figures_dir=_make_figures(tmp_path / "round"), template=TEMPLATE, out_dir=tmp_path / "paper",
                phrases=PHRASES, registry_labels=REGISTRY_LABELS, dataset=HSLS_PROSE, rewriter=rewriter)
    assert seen["notation"] == {"Rsq"}
    text, note = seen["rsq"]
    assert text is not None and "\\Rsq{}" in text, note
    assert seen["unknown"] == (None, "unknown number macro(s): ReviewScoreX")


# ---- the review's score is never quoted; the automation is disclosed once ------------------------------
_SCORE_WORDS = re.compile(r"out of (?:ten|10)\b|overall score\b|(?:review|critic)(?:'s)? score\b|score of \d|"
                          r"dimension scores?", re.I)


def review_score_quotes(out: Path, review_: dict) -> list[str]:
    """Where the paper in `out` quotes the automated review's scores: a macro printing one of them (its source in
    numbers.json), a sentence that speaks of a score out of ten, or a sentence printing the overall score or a
    dimension score next to the word "score"."""
    tex = (out / "paper.tex").read_text()
    found = [f"macro {m['macro']} ({m['source']})" for m in json.loads((out / "numbers.json").read_text())["macros"]
             if re.match(r"review_report\.json:(?:overall_score|dimension_scores)", m["source"])]
    macros = {m["macro"].lstrip("\\"): m["value"] for m in json.loads((out / "numbers.json").read_text())["macros"]}
    body = re.sub(r"\\([A-Za-z]+)\{\}", lambda m: macros.get(m.group(1), m.group(0)), tex.split("\\begin{document}")[1])
    scores = [review_.get("overall_score")] + list((review_.get("dimension_scores") or {}).values())
    printed = {f"{float(s):.1f}" for s in scores if isinstance(s, (int, float))}
    for sentence in re.split(r"(?<=[.!?])\s+", body):
        if _SCORE_WORDS.search(sentence) or ("score" in sentence.lower() and any(
                re.search(rf"(?<![\d.]){re.escape(p)}(?!\d)", sentence) for p in printed)):
            found.append(" ".join(sentence.split())[:160])
    return found


@pytest.mark.parametrize("kind", ["binary_unverified", "regression_passed", "real", "real_regression"])
def test_no_paper_quotes_the_review_score_and_the_automation_is_disclosed_once(tmp_path, kind):
    if kind.startswith("real"):
        _, out, arts = _build_real(tmp_path, kind == "real_regression")
        rv = arts["review"]
    else:
        binary = kind.startswith("binary")
        _, out = _build(tmp_path, binary=binary, passed=not binary)
        rv = review(not binary)
    assert review_score_quotes(out, rv) == []
    tex = (out / "paper.tex").read_text()
    body = tex.split("\\begin{document}")[1]
    assert len(re.findall(r"generated automatically", body)) == 1
    assert "generated automatically by EDM-ARS" in slot_content(tex, "METHODS")
    assert "offline backend" in slot_content(tex, "METHODS")
    if kind == "binary_unverified":  # the warning box stays, and the appendix lists the review's issues
        assert "\\unverifiedbox{\\textbf{Unverified draft.}" in slot_content(tex, "UNVERIFIED")
        assert "R1" in slot_content(tex, "APPENDIX") and "sentinel values" in slot_content(tex, "APPENDIX")
    else:
        assert "passed the automated review" in slot_content(tex, "DISCUSSION")


def test_a_quoted_review_score_is_found(tmp_path):
    """The helper above catches the score however it is printed: planted in the discussion as a sentence, or as a
    number macro of the review's score."""
    _, out = _build(tmp_path, binary=True, passed=False, name="binary")
    tex = (out / "paper.tex").read_text()
    rv = review(False)
    for planted in ("An automated review passed it with an overall score of 9.9 out of ten.",
                    "The Critic gave the study 5.5 on its score card."):
        (out / "paper.tex").write_text(fill_slot(tex, "DISCUSSION", slot_content(tex, "DISCUSSION") + "\n" + planted))
        assert review_score_quotes(out, rv), planted
    numbers = json.loads((out / "numbers.json").read_text())
    numbers["macros"].append({"macro": "\\ReviewScore", "value": "5.5", "raw": 5.5,
                              "source": "review_report.json:overall_score"})
    (out / "numbers.json").write_text(json.dumps(numbers))
    (out / "paper.tex").write_text(tex)
    assert review_score_quotes(out, rv) == ["macro \\ReviewScore (review_report.json:overall_score)"]


def appendix_page_problems(pdf: Path) -> list[str]:
    """Why the appendix of `pdf` does not start on a fresh page: its first heading ("A" then the title in
    capitals, in pdftotext's reading order) must open a page (only the running header before it), on a page
    after the references, and no numbered body section may follow it."""
    pages = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout.split("\f")
    heading = re.compile(r"^A\s*\n\s*\n?[A-Z][A-Z ]{3,}$", re.M)
    at = next((i for i, p in enumerate(pages) if heading.search(p)), None)
    if at is None:
        return ["no appendix heading"]
    problems = []
    lines = [line.strip() for line in pages[at][: heading.search(pages[at]).start()].splitlines() if line.strip()]
    if len(lines) > 1:  # the running header (the title or the authors) is the one line allowed above it
        problems.append(f"page {at + 1} holds text before the appendix: {lines[:3]}")
    ref = next((i for i, p in enumerate(pages) if re.search(r"^REFERENCES$", p, re.M)), None)
    if ref is None or ref >= at:
        problems.append(f"the references (page {ref and ref + 1}) do not come before the appendix (page {at + 1})")
    after = [pages[at][heading.search(pages[at]).end():], *pages[at + 1:]]
    if any(re.search(r"^\d\s*\n\s*\n?[A-Z]{4,}", p, re.M) for p in after):
        problems.append("a numbered body section follows the appendix")
    return problems


@pytest.mark.workflow
@needs_latex
def test_the_appendix_starts_on_a_fresh_page(tmp_path):
    """The unverified binary fixture has both appendices (hyperparameters, review issues) and body floats."""
    _, out = _build(tmp_path, binary=True, passed=False)
    assert appendix_page_problems(compile_pdf(out / "paper.tex", out / "latexmk.log")) == []
    # the check finds an appendix that runs on after the references (the template without its \clearpage)
    tex = (out / "paper.tex").read_text()
    (out / "paper.tex").write_text(tex.replace("\\clearpage\n\\appendix", "\\appendix"))
    assert appendix_page_problems(compile_pdf(out / "paper.tex", out / "latexmk.log"))


def test_fairness_methods_state_the_decision_rule_and_a_derived_attribute(tmp_path):
    """The methods say which rule the error rates come from (k, the at-risk class, where k comes from, how many
    students it flags) and that an attribute banded from a predictor is seen by the model; the results repeat it."""
    res = results(True)
    res["fairness"]["attributes"]["X1SEX"]["derived_from"] = {"predictor": "X1SES", "source": "detected",
                                                             "concordance": 0.999, "label": None}
    _, out = _build(tmp_path, binary=True, passed=True, results=res)
    tex = (out / "paper.tex").read_text()
    methods = slot_content(tex, "METHODS")
    assert r"flag the \FairFlagShare{} of test students" in methods and "students without the outcome" in methods
    assert "their share among the training students" in methods and r"\FairNFlagged{} students" in methods
    assert r"\FairNClusters{} clusters of the test set" in methods
    assert r"banded version of a predictor" in methods and r"\texttt{X1SES}" in methods
    fair = _subsection(slot_content(tex, "RESULTS"), "Subgroup Fairness")
    assert r"derived from the predictor \texttt{X1SES}" in fair
    recs = {r["macro"]: r for r in json.loads((out / "numbers.json").read_text())["macros"]}
    assert recs[r"\FairFlagShare"]["raw"] == pytest.approx(28.0)
    assert recs[r"\FairFlagShare"]["source"] == "100 * results.json:fairness.decision_rule.share"


def test_an_undeclared_at_risk_class_is_stated_as_the_default_rule(tmp_path):
    res = results(True)
    res["fairness"]["decision_rule"].update(at_risk_class=1, at_risk_declared=False, at_risk_source=None, share=0.2,
                                            share_source="default")
    _, out = _build(tmp_path, binary=True, passed=True, results=res)
    methods = slot_content((out / "paper.tex").read_text(), "METHODS")
    assert "most likely among students with the outcome (" in methods
    assert "a default share, since the registry declares neither outcome class" in methods
    assert "of at least" in methods and "of at most" not in methods


def test_a_two_level_predictor_is_named_by_its_value_label(tmp_path):
    """A two-level categorical among the top features is described by the level its column encodes, with the
    registry's value label for that level rather than the code in the column name."""
    arts = real_artifacts()
    top = arts["results"]["top_features"]
    top[4] = {"feature": "X1CONTROL", "label": "School control", "mean_abs_shap": top[4]["mean_abs_shap"],
              "direction": "positive", "columns": ["X1CONTROL__Sngl_2"]}
    figs = _real_figures(tmp_path / "round_0", arts["results"])

    def results_text(values):
        out = tmp_path / f"paper{len(values)}"
        build_paper(arts["spec"], arts["literature"], arts["data_report"], arts["results"], arts["review"],
                    figures_dir=figs, template=TEMPLATE, out_dir=out, phrases=PHRASES, registry_labels=REAL_LABELS,
                    dataset=HSLS_PROSE, registry_values=values)
        return slot_content((out / "paper.tex").read_text(), "RESULTS")

    assert "being \\emph{Single-sex school}" in results_text({"X1CONTROL": {"Sngl-2": "Single-sex school",
                                                                             "Mxd": "Mixed school"}})
    assert "being \\emph{Sngl 2}" in results_text({})
