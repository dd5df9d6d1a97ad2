"""The causal study's analytic frame (envs/data.yaml)."""

from __future__ import annotations

from typing import Any

from edm_ars.core.artifacts import read_json, write_json
from edm_ars.jobs.rule_io import log, registry_of


def frame(smk: Any) -> None:
    """The analytic frame and its data report (edm_ars.causal.frame)."""
    from edm_ars.causal.frame import analytic_frame
    from edm_ars.core.frames import write_frame
    from edm_ars.data.raw import read_raw
    from edm_ars.jobs.rule_io import unacted_notes

    reg = registry_of(smk)
    spec = read_json(smk.input.spec)
    columns = read_json(smk.input.manifest)["columns"]
    id_column = reg.dataset.get("id_column")
    needed = [spec["treatment"]["variable"], *(spec["outcome"]["sum_of"] or [spec["outcome"]["name"]]),
              *(c["name"] for c in spec["covariates"]), *(g["name"] for g in spec["subgroups"]),
              *(spec["design"][k] for k in ("blocks", "cluster") if spec["design"].get(k)),
              *([id_column] if id_column in columns else [])]
    raw = read_raw(smk.input.raw, usecols=list(dict.fromkeys(needed)))
    data, report = analytic_frame(raw, spec, reg, id_column)
    log.info("analytic frame: %d treated, %d comparison, %s left out (another value), %d without the treatment; "
             "outcome missing for %s; %d features", report["n_treated"], report["n_control"],
             report["excluded_levels"] or "none", report["n_missing_treatment"], report["outcome_missing"],
             len(report["features"]))
    unacted = unacted_notes(smk, "engineer")
    if unacted:
        report["researcher_notes"] = unacted
    write_frame(smk.output.frame, data)
    write_json(smk.output.report, report)
