"""Rule fit_model (Analyst, fit phase): tune one model family on training rows only.

A recorded failure (a condition of the data such as one outcome class or too few schools, or the
memory) is written into the model's record instead of a model, so the other families and the later
phases go on; a bug stops the rule."""

import joblib
import numpy as np
import pandas as pd

from edm_ars.artifacts import read_json, write_csv, write_json
from edm_ars.models import label_of, tune
from edm_ars.phases import recorded
from edm_ars.rule_io import log, run


def main(smk):
    report = read_json(smk.input.report, "data_report")
    X = pd.read_csv(smk.input.train_X)
    y = pd.read_csv(smk.input.train_y).iloc[:, 0]
    groups = pd.read_csv(smk.input.train_groups).iloc[:, 0].to_numpy()
    name, task = smk.wildcards.model, report["task"]
    errors = []
    fit = None
    with recorded(errors, "fit", name):
        fit = tune(name, task, X, y, groups, seed=smk.params.seed, n_folds=smk.params.cv_folds)
    if fit is None:
        joblib.dump(None, smk.output.model)
        write_csv(smk.output.oof, pd.DataFrame({"oof": np.full(len(y), np.nan)}))
        write_json(smk.output.meta, {"family": name, "label": label_of(name, task), "failed": errors[0],
                                     "features": list(X.columns)})
        return
    log.info("%s: CV %s %.4f with %s (%s; %.1f CPU s)", name, fit["cv_metric"], fit["cv_score"], fit["best_params"],
             fit["search"], fit["fit_cpu_seconds"])
    joblib.dump(fit.pop("model"), smk.output.model)
    write_csv(smk.output.oof, pd.DataFrame({"oof": fit.pop("oof")}))
    write_json(smk.output.meta, fit | {"features": list(X.columns)})


run(snakemake, main)  # noqa: F821
