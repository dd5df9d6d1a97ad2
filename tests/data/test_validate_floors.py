"""`edm-ars validate-registry --data` checks the rows against every floor the run applies, with the run's settings:
config/config.yaml beside the package updated by each `--configfile` (later files win), the explicit options over
both; the analytic cases against both floors that stop a run, the clusters against engineer.min_clusters, the test
set the engineer's split would hold against critic.min_test_n (a warning); a bad config file is one line naming it
(exit 1)."""

import numpy as np
import pandas as pd
import pytest
import yaml

from edm_ars import cli
from edm_ars.cli import main
from edm_ars.data.engineer import prepare
from edm_ars.data.floors import Floors, floor_problems
from edm_ars.data.protocol import Protocol
from edm_ars.data.registry import load_registry


def write_study(folder, n=300, n_schools=60, seed=3, grouped=True, missing_outcome=0.0):
    """A CSV of `n` students in `n_schools` schools and its registry (one question: score from x1, x2, x3)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    score = x @ [1.0, 0.5, 0.25] + rng.normal(0, 0.5, n)
    score[rng.random(n) < missing_outcome] = np.nan
    frame = pd.DataFrame({"student": np.arange(n), "school": rng.permutation(np.arange(n) % n_schools),
                          "x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2], "sex": rng.choice(["F", "M"], n),
                          "score": score})
    data = folder / "students.csv"
    frame.to_csv(data, index=False)
    dataset = {"name": "students", "title": "Students in schools", "id_column": "student",
               "require_all_variables": True,
               "prose": {"short": "student data", "long": "student data", "about": "students in schools",
                         "source": "data file students.csv", "design": "", "unit": "student", "units": "students",
                         "measures": "", "purpose": "", "actors": "", "decision_time": ""},
               "provenance": {"kind": "local_file", "statement": "generated for a test"},
               "waves": [], "protected_default": ["sex"], "protected_intersections": [], "limitations": []}
    if grouped:
        dataset["grouping"] = {"unit": "school", "columns": ["school"], "reconstructed": False}
    variables = [{"name": "sex", "label": "Sex", "role": "protected", "type": "binary", "pct_missing": 0.0,
                  "protected": True, "values": {"F": "Female", "M": "Male"}},
                 *({"name": f"x{k}", "label": f"Measure {k}", "role": "predictor", "type": "continuous",
                    "pct_missing": 0.0} for k in (1, 2, 3)),
                 {"name": "score", "label": "Score", "role": "outcome", "type": "continuous", "pct_missing": 0.0}]
    questions = [{"id": "score_prediction", "default": True, "question": "How accurately can score be predicted?",
                  "outcome": "score", "keywords": ["score"], "population": "Students with a score",
                  "subgroups": ["sex"], "predictors": {"x1": "", "x2": "", "x3": ""}}]
    reg = folder / "reg.yaml"
    reg.write_text(yaml.safe_dump({"dataset": dataset, "variables": variables,
                                   "tier3": {"exact": ["student", "school"]}, "pitfalls": [],
                                   "questions": questions}, sort_keys=False))
    return data, reg


def configfile(folder, name, settings):
    path = folder / name
    path.write_text(yaml.safe_dump(settings))
    return str(path)


def validate(capsys, *argv):
    code = main(["validate-registry", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_configfile_lowering_both_floors_makes_a_small_file_pass(tmp_path, capsys):
    data, reg = write_study(tmp_path)
    code, out, _ = validate(capsys, reg, "--data", data)
    assert code == 1
    assert ("outcome score: 300 rows, fewer than the floor engineer.min_analytic_n = 1000 and the floor "
            "critic.abort_below_n = 1000; two settings stop a run on 300 rows") in out
    assert "min_analytic_n: 300" in out and "abort_below_n: 300" in out  # the --configfile lines that lower them
    small = configfile(tmp_path, "small.yaml", {"engineer": {"min_analytic_n": 250},
                                                "critic": {"abort_below_n": 250, "min_test_n": 50}})
    code, out, _ = validate(capsys, reg, "--data", data, "--configfile", small)
    assert code == 0, out
    assert "OK" in out and "warning" not in out
    assert "engineer.min_analytic_n = 250, critic.abort_below_n = 250" in out and "small.yaml)" in out


def test_lowering_only_the_engineers_floor_still_fails_naming_the_critics(tmp_path, capsys):
    """The run would pass the data step and end in ABORT at the Critic: validate-registry says so now."""
    data, reg = write_study(tmp_path)
    half = configfile(tmp_path, "half.yaml", {"engineer": {"min_analytic_n": 100}})
    code, out, _ = validate(capsys, reg, "--data", data, "--configfile", half)
    assert code == 1
    assert "outcome score: 300 rows, fewer than the floor critic.abort_below_n = 1000;" in out
    assert "the floor engineer.min_analytic_n" not in out


def test_later_configfiles_win_and_options_override_them(tmp_path, capsys):
    data, reg = write_study(tmp_path)
    low = configfile(tmp_path, "low.yaml", {"engineer": {"min_analytic_n": 100, "min_clusters": 5},
                                            "critic": {"abort_below_n": 100, "min_test_n": 10}})
    high = configfile(tmp_path, "high.yaml", {"engineer": {"min_analytic_n": 500}})
    code, out, _ = validate(capsys, reg, "--data", data, "--configfile", low, "--configfile", high)
    assert code == 1 and "fewer than the floor engineer.min_analytic_n = 500;" in out
    # the first file's other keys stay, in the same section too (a nested update, not a replaced section)
    assert "critic.abort_below_n = 100" in out and "engineer.min_clusters = 5" in out
    code, out, _ = validate(capsys, reg, "--data", data, "--configfile", low, "--configfile", high,
                            "--min-rows", "200")
    assert code == 0, out
    code, out, _ = validate(capsys, reg, "--data", data, "--configfile", low, "--abort-below-n", "400")
    assert code == 1 and "fewer than the floor critic.abort_below_n = 400;" in out


def test_the_workflows_config_file_is_read_from_any_directory(tmp_path, capsys, monkeypatch):
    """The floors come from config/config.yaml beside the package, wherever the command runs."""
    data, reg = write_study(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert cli.CONFIG_FILE.is_file()
    assert yaml.safe_load(cli.CONFIG_FILE.read_text())["engineer"]["min_analytic_n"] == 1000
    code, out, _ = validate(capsys, reg, "--data", data)
    assert code == 1 and "engineer.min_analytic_n = 1000" in out
    own = tmp_path / "config.yaml"
    own.write_text("engineer:\n  min_analytic_n: 120\ncritic:\n  abort_below_n: 120\n  min_test_n: 20\n")
    monkeypatch.setattr(cli, "CONFIG_FILE", own)
    code, out, _ = validate(capsys, reg, "--data", data)
    assert code == 0, out


def test_a_registry_grouping_five_clusters_fails_naming_the_cluster_floor(tmp_path, capsys):
    data, reg = write_study(tmp_path, n_schools=5)
    small = configfile(tmp_path, "small.yaml", {"engineer": {"min_analytic_n": 100},
                                                "critic": {"abort_below_n": 100, "min_test_n": 10}})
    code, out, _ = validate(capsys, reg, "--data", data, "--configfile", small)
    assert code == 1
    assert "the data have 5 school clusters (school), fewer than the floor engineer.min_clusters = 10" in out
    # the run's data step stops on the same floor with the same line
    spec = {"outcome": {"name": "score"}, "task": "regression", "subgroups": ["sex"],
            "predictors": [{"name": n, "rationale": "test"} for n in ("x1", "x2", "x3")]}
    with pytest.raises(Exception) as stopped:
        prepare(pd.read_csv(data), spec, load_registry(reg), None, Protocol(min_analytic_n=100))
    assert "the data have 5 school clusters (school), fewer than the floor engineer.min_clusters = 10" in str(
        stopped.value)
    # 8 clusters with the floor lowered to 8 pass
    data, reg = write_study(tmp_path, n_schools=8)
    code, out, _ = validate(capsys, reg, "--data", data, "--configfile", small)
    assert code == 1 and "engineer.min_clusters = 10" in out and "min_clusters: 8" in out
    eight = configfile(tmp_path, "eight.yaml", {"engineer": {"min_clusters": 8}})
    code, out, _ = validate(capsys, reg, "--data", data, "--configfile", small, "--configfile", eight)
    assert code == 0, out


def test_a_small_test_set_is_a_warning_naming_critic_min_test_n(tmp_path, capsys):
    """The test set is the one the engineer's split draws (whole schools, engineer.test_fraction, the seed): its
    size is the run's, and under critic.min_test_n the command warns but passes (it caps the review only)."""
    data, reg = write_study(tmp_path)
    small = configfile(tmp_path, "small.yaml", {"engineer": {"min_analytic_n": 100},
                                                "critic": {"abort_below_n": 100}})
    code, out, _ = validate(capsys, reg, "--data", data, "--configfile", small)
    assert code == 0 and "OK" in out
    spec = {"outcome": {"name": "score"}, "task": "regression", "subgroups": ["sex"],
            "predictors": [{"name": n, "rationale": "test"} for n in ("x1", "x2", "x3")]}
    prep = prepare(pd.read_csv(data), spec, load_registry(reg), None, Protocol(min_analytic_n=100), describe=False)
    n_test = len(prep.test_y)
    assert n_test < 200
    assert (f"warning: data {data}: outcome score: the test set would hold {n_test} of 300 analytic cases (a split "
            "of whole clusters with engineer.test_fraction = 0.2), under critic.min_test_n = 200") in out
    assert f"critic: {{min_test_n: {n_test}}}" in out


def test_the_retention_floor_is_checked(tmp_path):
    data, reg = write_study(tmp_path, missing_outcome=0.5)
    frame = pd.read_csv(data)
    floors = Floors(min_analytic_n=50, abort_below_n=50, min_test_n=10)
    problems, _ = floor_problems(frame, load_registry(reg), floors)
    assert len(problems) == 1 and "under the retention floor engineer.min_retention = 0.6" in problems[0]
    assert floor_problems(frame, load_registry(reg), Floors(min_analytic_n=50, abort_below_n=50, min_test_n=10,
                                                            min_retention=0.4)) == ([], [])


@pytest.mark.parametrize("content, expected", [
    ("engineer:\n  min_analytic_nn: 50\n", "unknown setting 'engineer.min_analytic_nn'; did you mean "
                                           "'engineer.min_analytic_n'?"),
    ("engineer: [1\n", "not valid YAML (line 2"),
    ("- 1\n- 2\n", "holds a list, not a mapping of settings"),
    ("critic:\n  min_test_n: lots\n", "critic.min_test_n = 'lots' is not a whole number"),
    ("engineer:\n  test_fraction: 2\n", "engineer.test_fraction = 2 is not a fraction between 0 and 1"),
])
def test_a_bad_config_file_is_one_line_naming_it(tmp_path, capsys, content, expected):
    data, reg = write_study(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    code, out, err = validate(capsys, reg, "--data", data, "--configfile", bad)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"edm-ars: config file {bad}: ") and expected in err
    code, _, err = validate(capsys, reg, "--configfile", tmp_path / "absent.yaml")
    assert code == 1 and "absent.yaml" in err and err.count("\n") == 1
