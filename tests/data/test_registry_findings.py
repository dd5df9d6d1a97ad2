"""Published findings in a registry (`dataset.findings`, edm_ars.data.registry_findings): the shipped real registries
load with theirs and cite only confirmed bibliography entries; a wrong finding stops the loading with an error that
names the registry file, the finding's id and the value."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from edm_ars.core.errors import EdmArsError
from edm_ars.data.registry import load_registry
from edm_ars.data.registry_findings import FINDING_KINDS, bibliography_keys, finding_problems
from edm_ars.data.registry_validation import validate_registry

ROOT = Path(__file__).resolve().parents[2]
BIB = ROOT / "registry" / "bibliography" / "references.bib"
FACTS = ROOT / "registry" / "bibliography" / "bibliography_facts.md"
REAL = ["star", "hsb_math", "london_exam"]


@pytest.mark.parametrize("name", REAL)
def test_the_shipped_registries_load_with_their_findings(name):
    reg = load_registry(ROOT / "registry" / f"{name}.yaml")
    findings = reg.dataset["findings"]
    assert len(findings) >= 2 and validate_registry(reg) == []
    keys = set(re.findall(r"^@\w+\{([^,]+),", BIB.read_text(), re.M))
    facts = FACTS.read_text()
    for f in findings:
        assert f["cite"] in keys, f"{name}: {f['id']} cites {f['cite']}, not an entry of references.bib"
        assert f"| {f['cite']} |" in facts, f"{f['cite']} has no row in bibliography_facts.md"
        assert f"| {name}.yaml | {f['id']} |" in facts, f"{name}: {f['id']} has no row in the findings table"
        assert f["test"]["kind"] in FINDING_KINDS


def test_the_generated_default_has_no_findings():
    assert load_registry(ROOT / "registry" / "hsls09").dataset.get("findings") is None


def test_the_testable_findings_name_the_registries_variables():
    kinds = {f["id"]: f["test"]["kind"] for n in REAL for f in load_registry(ROOT / "registry" / f"{n}.yaml")
             .dataset["findings"]}
    assert kinds["between_school_share"] == "between_cluster_share"
    assert kinds["small_class_advantage"] == kinds["catholic_advantage"] == "group_difference"
    assert kinds["school_mean_ses_positive"] == "association"


def with_findings(tmp_path, change):
    """A copy of the HSB registry whose findings `change` edits; returns its path."""
    doc = yaml.safe_load((ROOT / "registry" / "hsb_math.yaml").read_text())
    doc["dataset"]["findings"] = change(copy.deepcopy(doc["dataset"]["findings"]))
    path = tmp_path / "hsb_math.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _set(i, key, value, inner=None):
    def change(findings):
        (findings[i][inner] if inner else findings[i])[key] = value
        return findings
    return change


@pytest.mark.parametrize("change, words", [
    (_set(0, "kind", "icc", "test"), ["findings[between_school_share].test.kind 'icc'", "between_cluster_share"]),
    (_set(1, "variable", "SES_MEAN", "test"), ["findings[school_mean_ses_positive].test.variable 'SES_MEAN'",
                                               "not a variable of the registry"]),
    (_set(2, "cite", "lee1986unknown"), ["findings[catholic_advantage].cite 'lee1986unknown'", "references.bib"]),
    (_set(0, "value", 18, "test"), ["findings[between_school_share].test.value 18", "between 0 and 1"]),
    (_set(1, "direction", "up", "test"), ["test.direction 'up'", "positive"]),
    (_set(1, "variable", "Sector", "test"), ["test.variable Sector has type binary", "group_difference"]),
    (_set(2, "variable", "MathAch", "test"), ["test.variable MathAch is an outcome"]),
    (_set(2, "extra", 1, "test"), ["findings[catholic_advantage].test: unknown key(s) ['extra']"]),
    (_set(0, "outcomes", ["SES"]), ["findings[between_school_share].outcomes: 'SES' is not an outcome"]),
    (_set(1, "id", "between_school_share"), ["findings[between_school_share].id 'between_school_share' is used"]),
    (_set(0, "id", "Between School"), ["findings[Between School].id 'Between School' must be snake_case"]),
    (lambda f: f + [{"id": "x", "claim": "A claim.", "cite": "raudenbush2002hierarchical", "where": "p. 1",
                     "test": {"kind": "none"}}], ["findings[x].test: kind none needs 'reason'"]),
])
def test_a_wrong_finding_stops_the_loading_naming_file_id_and_value(tmp_path, change, words):
    path = with_findings(tmp_path, change)
    with pytest.raises(EdmArsError) as err:
        load_registry(path)
    message = str(err.value)
    assert f"registry {path}" in message
    for w in words:
        assert w in message, message


def test_a_level_that_is_not_a_code_of_the_variable(tmp_path):
    doc = yaml.safe_load((ROOT / "registry" / "star.yaml").read_text())
    doc["dataset"]["findings"][0]["test"]["higher"] = "smal"
    path = tmp_path / "star.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(EdmArsError, match=r"findings\[small_class_advantage\]\.test\.higher 'smal' is not a code "
                                          r"of stark \(its codes: regular, small, regular\+aide\)"):
        load_registry(path)


def test_a_share_needs_a_cluster_level_and_the_registry_may_carry_its_own_entry(tmp_path):
    doc = yaml.safe_load((ROOT / "registry" / "hsb_math.yaml").read_text())
    doc["dataset"]["grouping"] = {"unit": "school", "columns": [], "reconstructed": False}
    doc["dataset"]["findings"][2]["cite"] = "own2020"
    doc["dataset"]["citation"] = "@misc{own2020, title = {Our data}, year = {2020}}"
    path = tmp_path / "hsb_math.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(EdmArsError) as err:
        load_registry(path)
    assert "declares no dataset.grouping.columns" in str(err.value)
    assert "own2020" not in str(err.value)  # a key of dataset.citation may be cited


def test_keys_are_not_checked_without_a_bibliography(tmp_path):
    reg = load_registry(ROOT / "registry" / "hsb_math.yaml")
    assert bibliography_keys(reg, tmp_path / "absent.bib") is None
    reg.dataset["findings"][0]["cite"] = "nowhere1999"
    assert finding_problems(reg, None) == []
    assert finding_problems(reg, bibliography_keys(reg)) == [
        "dataset.findings[between_school_share].cite 'nowhere1999' is not a key of "
        "registry/bibliography/references.bib (nor of dataset.citation): add the confirmed entry there "
        "(bibliography_facts.md) first"]
