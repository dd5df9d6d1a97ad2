"""Rule engineer (DataEngineer): leakage-safe preparation of the analytic data."""

from edm_ars import actions
from edm_ars.artifacts import read_json, write_csv, write_json
from edm_ars.datasets.adapters import read_raw
from edm_ars.engineer import Protocol, needed_columns, outcome_source, prepare
from edm_ars.errors import DataError
from edm_ars.gates import read_notes
from edm_ars.rule_io import earlier_reviews, layout_of, log, registry_of, run


def main(smk):
    reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
    spec = read_json(smk.input.spec, "research_spec")
    p = smk.params.protocol
    reviews = earlier_reviews(smk)
    strategy = actions.imputation(reviews, p["imputation"])
    if strategy != p["imputation"]:
        log.info("revision: imputation strategy %s -> %s", p["imputation"], strategy)
    proto = Protocol(test_fraction=p["test_fraction"], seed=smk.params.seed, simple_below=p["simple_below"],
                     warn_above=p["warn_above"], min_analytic_n=p["min_analytic_n"],
                     min_retention=p["min_retention"], max_categories=p["max_categories"], imputation=strategy)
    outcome = spec["outcome"]["name"]
    source = outcome_source(reg, outcome)
    columns = needed_columns(spec, reg)
    manifest = read_json(smk.input.manifest)
    available = set(manifest["columns"])
    absent = [c for c in [p["name"] for p in spec["predictors"]] + [source] if c not in available]
    if absent:
        raise DataError(f"{smk.input.raw}: columns named by the specification are not in the data: {absent}")
    raw = read_raw(smk.input.raw, usecols=[c for c in columns if c in available])
    prepared = prepare(raw, spec, reg, layout_of(smk), proto)
    report = prepared.report
    notes = []
    if reviews:  # this round re-runs because of the last one
        notes += reviews[-1]["revision_instructions"].get("engineer", [])
    if "human_notes" in smk.input.keys():
        notes += [f"Researcher: {n}" for n in read_notes(smk.input.human_notes)]
    if notes:
        report["revision_notes"] = notes
    applied = [actions.describe(a) for a in actions.of_stage(reviews, "engineer")]
    if applied:
        report["revision_actions_applied"] = applied
    log.info("analytic n %d (train %d, test %d), %d features; checks passed: %s", report["analytic_n"],
             report["train_n"], report["test_n"], len(report["predictors_after"]), report["validation_passed"])
    for w in report["warnings"]:
        log.warning(w)
    write_csv(smk.output.train_X, prepared.train_X)
    write_csv(smk.output.train_y, prepared.train_y.to_frame(outcome))
    write_csv(smk.output.train_groups, prepared.train_groups.to_frame("pseudo_school_id"))
    write_csv(smk.output.test_X, prepared.test_X)
    write_csv(smk.output.test_y, prepared.test_y.to_frame(outcome))
    write_csv(smk.output.test_protected, prepared.test_protected)
    write_json(smk.output.report, report, "data_report")


run(snakemake, main)  # noqa: F821
