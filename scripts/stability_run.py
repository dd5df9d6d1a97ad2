"""Rule stability_run: refit the interpreted model family under one perturbation; score and rank features."""

import pandas as pd

from edm_ars.artifacts import read_json, write_json
from edm_ars.errors import NoInterpretedModel
from edm_ars.phases import error_record, recorded
from edm_ars.reuse import earlier_record, same_inputs
from edm_ars.rule_io import layout_of, log, registry_of, run


def perturbed_data(smk, kind, arg, seed):
    """Training and test features under the perturbation (same split, same test students)."""
    from edm_ars.datasets.adapters import read_raw
    from edm_ars.engineer import Protocol, needed_columns, prepare
    from edm_ars.stability import bootstrap_rows

    X, y = pd.read_csv(smk.input.train_X), pd.read_csv(smk.input.train_y).iloc[:, 0].to_numpy(dtype=float)
    Xt = pd.read_csv(smk.input.test_X)
    sources = read_json(smk.input.report, "data_report")["feature_sources"]
    if kind == "bootstrap":
        rows = bootstrap_rows(len(y), int(arg), seed)
        return X.iloc[rows].reset_index(drop=True), y[rows], Xt, sources
    if kind == "impute":
        if arg != "simple":
            raise ValueError(f"unknown imputation perturbation '{arg}' (known: simple)")
        reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
        spec = read_json(smk.input.spec, "research_spec")
        p = smk.params.protocol
        # every variable imputed by median/mode (missing category above the threshold stays off)
        proto = Protocol(test_fraction=p["test_fraction"], seed=seed, simple_below=101.0, warn_above=101.0,
                         min_analytic_n=p["min_analytic_n"], min_retention=p["min_retention"],
                         max_categories=p["max_categories"])
        manifest = read_json(smk.input.manifest)
        cols = needed_columns(spec, reg)
        raw = read_raw(smk.input.raw, usecols=[c for c in cols if c in set(manifest["columns"])])
        prep = prepare(raw, spec, reg, layout_of(smk), proto)
        if len(prep.test_y) != len(Xt):
            raise ValueError("the alternative imputation changed the test rows")
        return prep.train_X, prep.train_y.to_numpy(dtype=float), prep.test_X, prep.report["feature_sources"]
    if kind == "seed":
        return X, y, Xt, sources
    raise ValueError(f"unknown perturbation '{kind}'")


def main(smk):
    evaluation = read_json(smk.input.evaluation)
    task, name = evaluation["task"], evaluation["interpreted_model"]
    pert = smk.wildcards.perturbation
    kind, _, arg = pert.partition("_")
    out = {"perturbation": pert, "kind": kind, "family": name, "metric": None, "top_features": [], "errors": []}
    if name is None:
        out["errors"].append(error_record(
            "stability", NoInterpretedModel("no model passed the quality floor; nothing to perturb"), pert))
        write_json(smk.output.run, out)
        return
    inputs = {"model": smk.input[f"{name}_meta"], "family": name}
    kept = earlier_record(smk)
    if same_inputs(kept, inputs):
        log.info("%s: kept from the previous round (same fit of %s, same data)", pert, name)
        write_json(smk.output.run, kept)
        return
    write_json(smk.output.run, refit(smk, out | {"inputs": inputs}, task, name, kind, arg))


def refit(smk, out, task, name, kind, arg):
    """The refit under the perturbation, its held-out metric and its top features (the model libraries are
    imported here: a run kept from the previous round needs none of them)."""
    import numpy as np

    from edm_ars.explain import shap_values, top_features
    from edm_ars.metrics import PRIMARY
    from edm_ars.models import fit, predict, score

    seed = smk.params.seed
    params = read_json(smk.input[f"{name}_meta"])["best_params"]
    yt = pd.read_csv(smk.input.test_y).iloc[:, 0].to_numpy(dtype=float)
    fitted = None
    with recorded(out["errors"], "stability", out["perturbation"]):
        X, y, Xt, sources = perturbed_data(smk, kind, arg, seed)
        fit_seed = seed + 1000 * int(arg) if kind == "seed" else seed
        model = fit(name, task, fit_seed, params, X, y)
        out["metric"] = score(task, yt, predict(model, task, Xt))
        fitted = model
    if fitted is not None:
        # a failed or timed-out explanation keeps the refit's metric
        with recorded(out["errors"], "stability", f"{out['perturbation']} SHAP"):
            cfg = smk.params.shap
            values, rows, info = shap_values(fitted, name, task, X.sample(min(len(X), 500), random_state=seed), Xt,
                                             max_samples=cfg["stability_samples"],
                                             kernel_samples=cfg["kernel_samples"], timeout_s=cfg["timeout_s"],
                                             seed=seed)
            out["top_features"] = top_features(values, rows, sources, k=10)
            out["explainer"] = info.get("explainer")
        log.info("%s: %s %s %.4f; top 5 %s", out["perturbation"], name, PRIMARY[task], out["metric"],
                 [f["feature"] for f in out["top_features"][:5]])
    out["metric"] = None if out["metric"] is None or np.isnan(out["metric"]) else out["metric"]
    return out


run(snakemake, main)  # noqa: F821
