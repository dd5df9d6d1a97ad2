"""The Analyst's jobs: the rules that run in envs/analysis.yaml, one module per phase: fit (fit_model, fit_stacking,
fit_baselines), evaluate, explain, fairness, robustness (stability_run, stability, split_run, splits) and analyze.
Nothing is imported here, so an entry script loads its own job's module only."""
