"""The Analyst's interpretation job (envs/analysis.yaml): explain, SHAP for every interpretable model above the
quality floor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import read_json, write_json


def explain(smk: Any) -> None:
    """SHAP for every interpretable model above the floor (edm_ars.analysis.explain_phase.explain_models)."""

    from edm_ars.analysis.explain_phase import explain_models
    from edm_ars.analysis.models import load_fitted
    from edm_ars.core.frames import read_frame
    from edm_ars.core.reuse import earlier_record
    from edm_ars.jobs.rule_io import registry_of

    evaluation = read_json(smk.input.evaluation)
    report = read_json(smk.input.report, "data_report")
    labels = {name: rec.get("label", name) for name, rec in registry_of(smk).tier1.items()}
    files = {name: smk.input[name] for name in evaluation["models"] if name in smk.input.keys()}
    earlier = earlier_record(smk)
    doc = explain_models(evaluation, files, load_fitted, read_frame(smk.input.train_X),
                         read_frame(smk.input.test_X), report["feature_sources"], labels, smk.params.shap,
                         smk.params.seed, Path(smk.output.figures), earlier=earlier,
                         earlier_figures=Path(smk.input.earlier_figures) if earlier else None)
    write_json(smk.output.explain, doc)
