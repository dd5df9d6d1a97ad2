"""The Analyst's replication job (envs/analysis.yaml): replication.json, the registry's published findings
(`dataset.findings`) tested on the study's training rows (edm_ars.analysis.replication)."""

from __future__ import annotations

from typing import Any

from edm_ars.core.artifacts import read_json, write_json
from edm_ars.jobs.rule_io import log


def replication(smk: Any) -> None:
    """Each published finding of the registry with its estimate on the training rows, its bootstrap interval (whole
    clusters resampled when the split is grouped) and its status; between-cluster shares come from multilevel.json
    (input `multilevel`, when the workflow has the multilevel rule). A data set without findings: source none."""
    from edm_ars.analysis.evaluation import split_grouped
    from edm_ars.analysis.replication import replication_table
    from edm_ars.core.frames import read_column, read_frame
    from edm_ars.jobs.rule_io import registry_of

    reg = registry_of(smk)
    report = read_json(smk.input.report)
    findings = list(reg.dataset.get("findings") or [])
    multilevel = read_json(smk.input.multilevel) if "multilevel" in smk.input.keys() else None
    groups = None
    if split_grouped(report.get("split") or {}):
        groups = read_column(smk.input.train_groups).astype(str).to_numpy()
    table = replication_table(
        findings, outcome=report["outcome"], train_x=read_frame(smk.input.train_X),
        train_y=read_column(smk.input.train_y).to_numpy(dtype=float), groups=groups,
        sources=dict(report.get("feature_sources") or {}), multilevel=multilevel,
        n_bootstrap=int(smk.params.n_bootstrap), seed=int(smk.params.seed),
        dropped=list(report.get("predictors_dropped") or []), cluster_unit=reg.grouping.get("unit") or None)
    table |= {"n_bootstrap": int(smk.params.n_bootstrap), "seed": int(smk.params.seed),
              "resampled": "clusters" if groups is not None else "rows", "rows": "training"}
    log.info("replication: %d finding(s) of %s: %s", len(findings), reg.name,
             ", ".join(f"{k} {v}" for k, v in table["counts"].items()))
    write_json(smk.output.replication, table, "replication")
