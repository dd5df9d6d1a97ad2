"""Rule fit_model (Analyst, fit phase): tune one model family on training rows only."""

import joblib
import pandas as pd

from edm_ars.artifacts import read_json, write_json
from edm_ars.models import tune
from edm_ars.rule_io import log, run


def main(smk):
    report = read_json(smk.input.report, "data_report")
    X = pd.read_csv(smk.input.train_X)
    y = pd.read_csv(smk.input.train_y).iloc[:, 0]
    groups = pd.read_csv(smk.input.train_groups).iloc[:, 0].to_numpy()
    name = smk.wildcards.model
    fit = tune(name, report["task"], X, y, groups, seed=smk.params.seed, n_folds=smk.params.cv_folds)
    log.info("%s: best %s %.4f with %s (%d candidates, %.1f s)", name, fit["cv_metric"], fit["cv_score"],
             fit["best_params"], fit["n_candidates"], fit["fit_seconds"])
    joblib.dump(fit.pop("model"), smk.output.model)
    write_json(smk.output.meta, fit | {"features": list(X.columns)})


run(snakemake, main)  # noqa: F821
