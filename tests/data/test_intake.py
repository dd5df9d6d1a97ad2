"""Intake robustness: a CSV whose header names two columns the same, or that is separated by something other than
commas, is refused naming what is wrong; a missing file and a registry that is not valid YAML stop with one line
(no Python stack frames) and a non-zero exit, from the command line, the registry loader and the workflow."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_adapters import small_frame, small_registry
from workflow import snakemake

from edm_ars.core.errors import DataError, EdmArsError
from edm_ars.data.datasets.adapters import known_datasets
from edm_ars.data.raw import header_problem, read_raw
from edm_ars.data.registry import load_registry

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "scripts"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "edm_ars.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)


def one_clear_line(result: subprocess.CompletedProcess) -> str:
    """The failure's message: a non-zero exit, nothing on stdout, one line on stderr and no stack frames."""
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and 'File "' not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


# ---- the CSV's header ----------------------------------------------------------------------------------------


def test_duplicate_column_names_are_refused_naming_them(tmp_path):
    frame = small_frame(200)
    text = frame.to_csv(index=False).replace("attendance", "prior_score", 1).replace("track", "sex", 1)
    path = tmp_path / "dup.csv"
    path.write_text(text)
    # pandas on its own reads it without a word, renaming the copies
    import pandas as pd

    assert {"prior_score.1", "sex.1"} <= set(pd.read_csv(path).columns)
    with pytest.raises(DataError, match=r"dup.csv: the header names more than one column the same: "
                                        r"sex \(2 times\), prior_score \(2 times\)"):
        read_raw(path)
    line = one_clear_line(cli("init-registry", str(path), cwd=tmp_path))
    assert "sex (2 times), prior_score (2 times)" in line and line.startswith("edm-ars: ")
    # the same names in a file without copies are fine
    frame.to_csv(tmp_path / "ok.csv", index=False)
    assert header_problem(tmp_path / "ok.csv") is None and len(read_raw(tmp_path / "ok.csv")) == 200


@pytest.mark.parametrize("sep, name, shown", [(";", "semicolon", ";"), ("\t", "tab", "\\t"),
                                              ("|", "vertical bar", "|")])
def test_a_file_with_another_separator_is_refused_naming_it(tmp_path, sep, name, shown):
    path = tmp_path / "other.csv"
    small_frame(200).to_csv(path, index=False, sep=sep)
    with pytest.raises(DataError, match=f"looks {name}-separated"):
        read_raw(path)
    line = one_clear_line(cli("init-registry", str(path), cwd=tmp_path))
    assert f"holds 6 {name}(s) ('{shown}')" in line and "save it comma-separated" in line
    # the registry check of a data file says the same
    reg = tmp_path / "reg.yaml"
    reg.write_text(yaml.safe_dump(small_registry(), sort_keys=False))
    assert f"looks {name}-separated" in one_clear_line(cli("validate-registry", str(reg), "--data", str(path),
                                                           cwd=tmp_path))


def test_a_one_column_file_without_another_separator_is_read(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("score\n1.5\n2.5\n")
    assert header_problem(path) is None and read_raw(path)["score"].tolist() == [1.5, 2.5]


# ---- missing files and YAML syntax errors: one line -------------------------------------------------------------


def test_a_missing_file_is_one_line(tmp_path):
    line = one_clear_line(cli("init-registry", str(tmp_path / "absent.csv"), cwd=tmp_path))
    assert line == f"edm-ars: raw data file not found: {tmp_path / 'absent.csv'}"
    line = one_clear_line(cli("validate-registry", str(tmp_path / "absent.yaml"), cwd=tmp_path))
    assert "absent.yaml" in line and "registry not found" in line
    line = one_clear_line(cli("verify-paper", str(tmp_path / "absent.tex"), cwd=tmp_path))
    assert "absent.tex" in line


BROKEN = "dataset:\n  name: broken\n  title: [a, b\nvariables: []\n"


def test_a_registry_yaml_syntax_error_is_one_line_with_line_and_column(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN)
    with pytest.raises(EdmArsError) as info:
        load_registry(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "line 4, column 1" in message
    assert "opened at line 3, column 10" in message
    line = one_clear_line(cli("validate-registry", str(path), cwd=tmp_path))
    assert line == f"edm-ars: {message}"
    index = tmp_path / "registry"
    index.mkdir()
    (index / "datasets.yaml").write_text("star:\n  registry: star.yaml\n bad: indent\n")
    with pytest.raises(DataError, match=r"datasets.yaml: cannot read the list of data sets: not valid YAML at line 3"):
        known_datasets(index)


@pytest.mark.workflow
def test_the_workflow_stops_with_one_line_before_any_job(tmp_path):
    """At parse time (dataset=csv with a missing file, a registry with a syntax error): the message alone, not the
    frames of the Snakefile; a header problem stops the dataset rule with that one line in its log."""
    data = tmp_path / "data.csv"
    small_frame().to_csv(data, index=False)
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN)
    good = tmp_path / "reg.yaml"
    good.write_text(yaml.safe_dump(small_registry(), sort_keys=False))
    for config, expected in (({"path": tmp_path / "absent.csv", "registry": good}, "absent.csv does not exist"),
                             ({"path": data, "registry": broken}, "not valid YAML at line 4, column 1")):
        result = snakemake(tmp_path, "-n", "output/paper.pdf", config={"dataset": "csv", **config})
        assert result.returncode != 0
        assert "Traceback" not in result.stderr and 'File "' not in result.stderr, result.stderr
        [line] = [x for x in result.stderr.splitlines() if x.startswith("EDM-ARS")]
        assert expected in line
    semi = tmp_path / "semi.csv"
    small_frame().to_csv(semi, index=False, sep=";")
    result = snakemake(tmp_path, "output/data/dataset.json", config={"dataset": "csv", "path": semi,
                                                                     "registry": good})
    assert result.returncode != 0 and "looks semicolon-separated" in result.stderr
    log = (tmp_path / "logs" / "dataset.log").read_text().strip().splitlines()
    assert len(log) == 1 and "dataset failed: " in log[0] and "looks semicolon-separated" in log[0]
