"""The interpretation phase: SHAP for every model of the evaluation above the quality floor (never stacking), kept
from the previous round when the same fit was explained on the same rows, and the SHAP figures of the interpreted
model (:func:`explain_models`: the document explain.json holds). The values and rankings come from
edm_ars.analysis.explain, the figures from edm_ars.analysis.explain_figures."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from edm_ars.analysis.explain import shap_values, top_features
from edm_ars.analysis.explain_figures import importance_figure, summary_figure
from edm_ars.analysis.figures import png_path
from edm_ars.core.conventions import STACKING

log = logging.getLogger("edm_ars")


def explain_models(evaluation: dict[str, Any], model_files: dict[str, str], load: Callable[[str], Any],
                   X_train: pd.DataFrame, X_test: pd.DataFrame, feature_sources: dict[str, str],
                   labels: dict[str, str], cfg: dict[str, Any], seed: int, fig_dir: Path, *,
                   earlier: dict[str, Any] | None = None, earlier_figures: Path | None = None) -> dict[str, Any]:
    """SHAP for every model of the evaluation above the quality floor (never stacking), the figures of the
    interpreted one in fig_dir; the document explain.json holds.

    model_files: each model's file (recorded as the input its explanation came from); load(file) the fitted model.
    cfg: the config's analysis.shap (background, max_samples for the interpreted model, other_samples for the
    others, kernel_samples, timeout_s). A model explained from the same file on as many rows in the `earlier`
    document (the previous round's) is kept from it, with its figures copied from earlier_figures if it is the
    interpreted model. A model stopped by a condition of the data (a timeout, a failed explainer: ExplainSkipped)
    or by the memory is recorded in "errors" and "skipped", and the others are still explained; anything else
    raises."""
    import shutil

    from edm_ars.core.phases import recorded
    from edm_ars.core.reuse import same_inputs

    background = X_train.sample(min(len(X_train), cfg["background"]), random_state=seed)
    fig_dir = Path(fig_dir)
    fig_dir.mkdir(parents=True, exist_ok=True)
    by_model: dict[str, Any] = {}
    errors: list[dict[str, Any]] = []
    figs: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    earlier = earlier or {"by_model": {}}
    interpreted = evaluation["interpreted_model"]
    task = evaluation["task"]
    for name in evaluation["models"]:
        if name == STACKING:
            skipped[name] = "SHAP is not computed for stacking (a model of models)"
            continue
        if name not in evaluation["above_floor"]:
            skipped[name] = "below the quality floor"
            continue
        cap = cfg["max_samples"] if name == interpreted else cfg["other_samples"]
        inputs = {"model": model_files[name], "max_samples": cap}
        kept = earlier["by_model"].get(name)
        if same_inputs(kept, inputs) and (name != interpreted or earlier.get("interpreted_model") == name):
            # the same fit explained on the same rows in the previous round (and its figures, if interpreted)
            by_model[name] = kept
            if name == interpreted:
                for fig in earlier["figures"]:  # the PDF and its PNG rendering
                    for name in (Path(fig["path"]).name, png_path(Path(fig["path"])).name):
                        if name == Path(fig["path"]).name or (Path(earlier_figures) / name).is_file():
                            shutil.copyfile(Path(earlier_figures) / name, fig_dir / name)
                figs += earlier["figures"]
            log.info("%s: kept from the previous round (same fit, same rows)", name)
            continue
        with recorded(errors, "explain", name):
            model = load(model_files[name])
            values, rows, info = shap_values(model, name, task, background, X_test, max_samples=cap,
                                             kernel_samples=cfg["kernel_samples"], timeout_s=cfg["timeout_s"],
                                             seed=seed)
            top = top_features(values, rows, feature_sources, labels, k=10)
            by_model[name] = {"top_features": top, **info, "inputs": inputs}
            log.info("%s: %s on %d rows; top %s", name, info.get("explainer"), info.get("n_explained", 0),
                     [t["feature"] for t in top[:5]])
            if name == interpreted:
                summary = summary_figure(values, rows, feature_sources, labels, fig_dir / "shap_summary.pdf")
                importance = importance_figure(top, fig_dir / "shap_importance.pdf")
                label = evaluation["models"][name]["label"]
                # the figures show the top ten sources, or every one when there are fewer
                shown = "the ten most important predictors" if len(top) >= 10 else f"all {len(top)} predictors"
                figs += [{"path": "figures/explain/shap_summary.pdf", "kind": "shap_summary",
                          "png": "figures/explain/shap_summary.png", "drawn": summary,
                          "caption": f"SHAP values of the {label} model for {shown} "
                                     "(one point per test student; colour: the predictor's value)."},
                         {"path": "figures/explain/shap_importance.pdf", "kind": "shap_importance",
                          "png": "figures/explain/shap_importance.png", "drawn": importance,
                          "caption": f"Mean absolute SHAP value of {shown} ({label})."}]
        if errors and errors[-1].get("what") == name:
            skipped[name] = errors[-1]["message"]
    return {
        "interpreted_model": interpreted,
        "top_features": by_model.get(interpreted, {}).get("top_features", []),
        "by_model": by_model, "skipped": skipped, "figures": figs, "errors": errors,
    }
