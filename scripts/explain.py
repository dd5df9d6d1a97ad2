"""Rule explain (Analyst, interpretation phase): SHAP for every interpretable model above the floor.

TreeExplainer for tree ensembles, LinearExplainer for linear models, a bounded model-agnostic
explainer for the MLP; never stacking. A timeout, an explainer that cannot take the model, or the
memory is recorded with its reason and the other models are still explained; a bug stops the rule."""

import shutil
from pathlib import Path

import joblib
import pandas as pd

from edm_ars.artifacts import read_json, write_json
from edm_ars.explain import importance_figure, shap_values, summary_figure, top_features
from edm_ars.models import STACKING
from edm_ars.phases import recorded
from edm_ars.reuse import earlier_record, same_inputs
from edm_ars.rule_io import log, registry_of, run


def main(smk):
    evaluation = read_json(smk.input.evaluation)
    report = read_json(smk.input.report, "data_report")
    labels = {name: rec.get("label", name) for name, rec in registry_of(smk).tier1.items()}
    X = pd.read_csv(smk.input.train_X)
    Xt = pd.read_csv(smk.input.test_X)
    task, cfg = evaluation["task"], smk.params.shap
    background = X.sample(min(len(X), cfg["background"]), random_state=smk.params.seed)
    fig_dir = Path(smk.output.figures)
    fig_dir.mkdir(parents=True, exist_ok=True)
    by_model, errors, figs, skipped = {}, [], [], {}
    earlier = earlier_record(smk) or {"by_model": {}}
    interpreted = evaluation["interpreted_model"]
    for name in evaluation["models"]:
        if name == STACKING:
            skipped[name] = "SHAP is not computed for stacking (a model of models)"
            continue
        if name not in evaluation["above_floor"]:
            skipped[name] = "below the quality floor"
            continue
        cap = cfg["max_samples"] if name == interpreted else cfg["other_samples"]
        inputs = {"model": smk.input[name], "max_samples": cap}
        kept = earlier["by_model"].get(name)
        if same_inputs(kept, inputs) and (name != interpreted or earlier.get("interpreted_model") == name):
            # the same fit explained on the same rows in the previous round (and its figures, if interpreted)
            by_model[name] = kept
            if name == interpreted:
                for fig in earlier["figures"]:
                    shutil.copyfile(Path(smk.input.earlier_figures) / Path(fig["path"]).name,
                                    fig_dir / Path(fig["path"]).name)
                figs += earlier["figures"]
            log.info("%s: kept from the previous round (same fit, same rows)", name)
            continue
        with recorded(errors, "explain", name):
            model = joblib.load(smk.input[name])
            values, rows, info = shap_values(model, name, task, background, Xt, max_samples=cap,
                                             kernel_samples=cfg["kernel_samples"], timeout_s=cfg["timeout_s"],
                                             seed=smk.params.seed)
            top = top_features(values, rows, report["feature_sources"], labels, k=10)
            by_model[name] = {"top_features": top, **info, "inputs": inputs}
            log.info("%s: %s on %d rows in %.1f s; top %s", name, info.get("explainer"), info.get("n_explained", 0),
                     info.get("seconds", 0), [t["feature"] for t in top[:5]])
            if name == interpreted:
                summary_figure(values, rows, report["feature_sources"], labels, fig_dir / "shap_summary.pdf")
                importance_figure(top, fig_dir / "shap_importance.pdf")
                label = evaluation["models"][name]["label"]
                figs += [{"path": "figures/explain/shap_summary.pdf", "kind": "shap_summary",
                          "caption": f"SHAP values of the {label} model for the ten most important predictors "
                                     "(one point per test student; colour: the predictor's value)."},
                         {"path": "figures/explain/shap_importance.pdf", "kind": "shap_importance",
                          "caption": f"Mean absolute SHAP value of the ten most important predictors ({label})."}]
        if errors and errors[-1].get("what") == name:
            skipped[name] = errors[-1]["message"]
    write_json(smk.output.explain, {
        "interpreted_model": interpreted,
        "top_features": by_model.get(interpreted, {}).get("top_features", []),
        "by_model": by_model, "skipped": skipped, "figures": figs, "errors": errors,
    })


run(snakemake, main)  # noqa: F821
