"""Analyst: model families and their tuning, baselines, held-out metrics with intervals, explanations (SHAP),
the subgroup fairness audit, stability under perturbation, repeated grouped splits, the large-data policy, figures
and their sanity checks, and the recovery check on generated data."""
