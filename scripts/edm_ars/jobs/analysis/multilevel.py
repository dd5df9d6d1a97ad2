"""The Analyst's multilevel job (envs/analysis.yaml): multilevel.json, the school-level structure of the outcome for
every declared cluster level (edm_ars.analysis.multilevel)."""

from __future__ import annotations

from typing import Any

from edm_ars.core.artifacts import read_json, write_json
from edm_ars.jobs.rule_io import log


def multilevel(smk: Any) -> None:
    """Variance between and within clusters (ICC), what the study's predictors explain of each, and whether cluster
    context improves held-out prediction, for every cluster level the registry declares (dataset.grouping)."""
    from edm_ars.analysis.multilevel import multilevel as analyse
    from edm_ars.core.errors import DataError
    from edm_ars.core.frames import read_column, read_frame
    from edm_ars.jobs.rule_io import registry_of

    cfg = smk.params.multilevel
    settings = {"min_clusters": int(cfg["min_clusters"]), "n_bootstrap_icc": int(cfg["n_bootstrap_icc"]),
                "max_predictors": int(cfg["max_predictors"])}
    evaluation = read_json(smk.input.evaluation)
    report = read_json(smk.input.report)
    reg = registry_of(smk)
    task = evaluation["task"]
    train_X, test_X = read_frame(smk.input.train_X), read_frame(smk.input.test_X)
    train_y = read_column(smk.input.train_y).to_numpy(dtype=float)
    test_y = read_column(smk.input.test_y).to_numpy(dtype=float)
    train_groups = read_column(smk.input.train_groups).to_numpy()
    test_groups = read_column(smk.input.test_groups).to_numpy()
    for name, frame, n in (("train_groups", train_groups, len(train_y)), ("test_groups", test_groups, len(test_y))):
        if len(frame) != n:
            raise DataError(f"{smk.input[name]}: {len(frame)} group ids for {n} rows; re-run the engineer rule so "
                            "that the groups and the rows come from the same split")
    train_levels, test_levels = read_frame(smk.input.train_levels), read_frame(smk.input.test_levels)
    own = {unit: (train_levels[unit].to_numpy(), test_levels[unit].to_numpy()) for unit in train_levels.columns
           if unit in test_levels.columns and len(train_levels) == len(train_y) and len(test_levels) == len(test_y)}
    doc = analyse(task, reg.cluster_levels, report.get("split") or {}, train_X, train_y, train_groups, test_X,
                  test_y, test_groups, seed=int(smk.params.seed), n_bootstrap=int(smk.params.n_bootstrap),
                  cfg=settings, level_ids=own)
    if doc["skipped"]:
        log.info("multilevel analysis skipped: %s", doc["skipped"])
    for lv in doc["levels"]:
        null, ctx = lv["null_model"], lv["context"]
        log.info("%s (%d clusters): ICC %.3f %s, explained between %s within %s; context %s %s %s%s",
                 lv["unit"], lv["n_clusters"], null["icc"], null["icc_ci"], lv["explained"]["between"],
                 lv["explained"]["within"], ctx["metric"], ctx.get("difference", "skipped"),
                 ctx.get("ci", ctx.get("skipped", "")), "; few clusters" if lv["few_clusters"] else "")
    for n in doc["not_estimated"]:
        log.info("level %s not estimated: %s", n["unit"], n["reason"])
    write_json(smk.output.multilevel, doc, "multilevel")
