"""Rule fit_stacking: a meta-learner on the base models' out-of-fold predictions (no refitting)."""

import joblib
import pandas as pd

from edm_ars.artifacts import read_json, write_json
from edm_ars.errors import EdmArsError
from edm_ars.models import fit_stacking
from edm_ars.rule_io import log, run


def main(smk):
    report = read_json(smk.input.report, "data_report")
    y = pd.read_csv(smk.input.train_y).iloc[:, 0].to_numpy()
    groups = pd.read_csv(smk.input.train_groups).iloc[:, 0].to_numpy()
    oof, skipped = {}, []
    for name in smk.params.bases:
        meta = read_json(smk.input[f"{name}_meta"])
        if meta.get("failed"):
            skipped.append(name)
            continue
        oof[name] = pd.read_csv(smk.input[f"{name}_oof"])["oof"].to_numpy()
    if len(oof) < 2:
        raise EdmArsError(f"stacking needs two fitted base models; usable: {sorted(oof)}, failed: {skipped}")
    fit = fit_stacking(report["task"], oof, y, groups, seed=smk.params.seed, n_folds=smk.params.cv_folds)
    log.info("stacking over %s: CV %.4f, weights %s", sorted(oof), fit["cv_score"], fit["meta_weights"])
    joblib.dump(fit.pop("model"), smk.output.model)
    write_json(smk.output.meta, fit | {"skipped_bases": skipped})


run(snakemake, main)  # noqa: F821
