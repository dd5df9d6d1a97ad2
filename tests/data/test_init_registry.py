"""`edm-ars init-registry`: a draft registry from a CSV that loads, matches its own file, states each suspicion
(identifier, weight, missing codes, cluster, protected attribute, outcomes), marks every placeholder it drafts with
the draft marker, and is refused (naming each key) until the user has replaced them."""

import numpy as np
import pandas as pd
import pytest
import yaml

from edm_ars.cli import main
from edm_ars.data.datasets.adapters import data_problems
from edm_ars.data.datasets.draft import draft_registry, render_yaml
from edm_ars.data.raw import read_raw
from edm_ars.data.registry import DRAFT_MARKER, draft_marker_keys, load_registry
from edm_ars.data.registry_validation import validate_registry
from edm_ars.formulate.spec import offline_spec, validate_spec


def edited(node):
    """The draft as a user leaves it after editing: every draft-marker text replaced (here: the marker removed)."""
    if isinstance(node, str):
        return node.replace(DRAFT_MARKER + " ", "").replace(DRAFT_MARKER, "")
    if isinstance(node, dict):
        return {k: edited(v) for k, v in node.items()}
    if isinstance(node, list):
        return [edited(v) for v in node]
    return node


def edit_file(path):
    path.write_text(yaml.safe_dump(edited(yaml.safe_load(path.read_text())), sort_keys=False))
    return path


def district_csv(path, n=1200, seed=7):
    rng = np.random.default_rng(seed)
    prior = rng.normal(50, 10, n)
    attendance = rng.uniform(0.5, 1.0, n).round(3)
    frame = pd.DataFrame({
        "student_id": rng.permutation(np.arange(10_000, 10_000 + n)),
        "school": rng.integers(1, 60, n),
        "sex": rng.choice(["F", "M"], n),
        "race": rng.choice(["A", "B", "C", "D"], n),
        "prior_score": prior.round(2),
        "attendance": attendance,
        "absences": rng.integers(0, 30, n).astype(float),
        "track": rng.choice(["academic", "general", "vocational", "Missing"], n, p=[0.4, 0.4, 0.15, 0.05]),
        "sample_weight": rng.uniform(0.5, 3.0, n).round(4),
        "final_score": (0.8 * prior + rng.normal(0, 5, n)).round(2),
        "passed": (prior + rng.normal(0, 8, n) > 50).astype(int),
    })
    frame.loc[rng.random(n) < 0.05, "absences"] = -9
    frame.to_csv(path, index=False)
    return path


@pytest.fixture
def drafted(tmp_path):
    data = district_csv(tmp_path / "district.csv")
    draft, notes = draft_registry(read_raw(data), str(data))
    reg_path = tmp_path / "reg.yaml"
    reg_path.write_text(render_yaml(draft, notes, str(data)))
    return data, reg_path, draft, notes


def test_the_draft_loads_and_matches_its_own_file(drafted):
    data, reg_path, _, _ = drafted
    reg = load_registry(edit_file(reg_path))
    assert validate_registry(reg) == []
    frame = pd.read_csv(data)
    assert data_problems(frame, reg, min_rows=1000) == []
    spec = offline_spec(reg, prompt=None, question_id=None, round_=0)
    assert validate_spec(spec, reg, set(frame.columns)) == []
    assert "no wave structure" in spec["temporal_order_note"]


def test_the_suspicions(drafted):
    _, reg_path, draft, notes = drafted
    reg = load_registry(reg_path)
    ds = draft["dataset"]
    assert ds["id_column"] == "student_id" and "student_id" not in reg.tier1
    assert all("student_id" not in q["predictors"] for q in reg.questions)
    assert "sample_weight" in draft["tier3"]["exact"] and "sample_weight" not in reg.tier1
    assert ds["sentinels"]["numeric"] == [-9.0] and "Missing" in ds["sentinels"]["labels"]
    assert ds["grouping"] == {"unit": "school", "columns": ["school"], "reconstructed": False}
    assert set(ds["protected_default"]) == {"sex", "race"}
    assert reg.tier1["final_score"]["role"] == "outcome" and reg.tier1["final_score"]["type"] == "continuous"
    assert reg.tier1["passed"]["role"] == "outcome" and reg.tier1["passed"]["type"] == "binary"
    assert reg.tier1["absences"]["pct_missing"] > 0  # the -9 codes count as missing
    outcomes = {q["outcome"] for q in reg.questions}
    assert outcomes == {"final_score", "passed"}
    for q in reg.questions:  # another outcome is never a predictor
        assert not outcomes & set(q["predictors"]) and set(q["subgroups"]) == {"sex", "race"}
    assert sum(bool(q.get("default")) for q in reg.questions) == 1
    assert any("suspected identifier: student_id" in n for n in notes)


def test_cli_prints_yaml(tmp_path, capsys):
    data = district_csv(tmp_path / "district.csv")
    assert main(["init-registry", str(data)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# DRAFT registry") and yaml.safe_load(out)["dataset"]["name"] == "district"
    (tmp_path / "reg.yaml").write_text(out)
    edit_file(tmp_path / "reg.yaml")
    assert main(["validate-registry", str(tmp_path / "reg.yaml"), "--data", str(data)]) == 0
    assert "OK" in capsys.readouterr().out


@pytest.mark.parametrize("content, message", [
    ("student_id,score\n", "no rows"),
    ("score\n1.5\n2.5\n", "1 column"),
    ("name,city\nann,x\nbob,y\ncat,z\n", "no column can serve as an outcome"),
])
def test_bad_inputs_are_named(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.csv"
    bad.write_text(content)
    assert main(["init-registry", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and message in err


def test_validate_registry_names_the_column(tmp_path, capsys):
    data = district_csv(tmp_path / "district.csv")
    assert main(["init-registry", str(data)]) == 0
    (tmp_path / "reg.yaml").write_text(capsys.readouterr().out)
    edit_file(tmp_path / "reg.yaml")
    pd.read_csv(data).drop(columns=["attendance"]).to_csv(data, index=False)
    assert main(["validate-registry", str(tmp_path / "reg.yaml"), "--data", str(data)]) == 1
    assert "column attendance: listed in the registry but not in the data" in capsys.readouterr().out


def test_zero_byte_file_is_named(tmp_path, capsys):
    bad = tmp_path / "empty.csv"
    bad.write_text("")
    assert main(["init-registry", str(bad)]) == 2
    assert "empty.csv" in capsys.readouterr().err


def test_too_few_predictors_is_named(tmp_path, capsys):
    rng = np.random.default_rng(3)
    bad = tmp_path / "thin.csv"
    pd.DataFrame({"student_id": np.arange(1200), "sex": rng.choice(["F", "M"], 1200),
                  "prior_score": rng.normal(0, 1, 1200), "final_score": rng.normal(0, 1, 1200)}).to_csv(bad,
                                                                                                        index=False)
    assert main(["init-registry", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "thin.csv" in err and "fewer than 3 usable predictors" in err


def test_name_option_and_render_without_source(tmp_path, capsys):
    data = district_csv(tmp_path / "2024 District Extract.csv")
    assert main(["init-registry", str(data), "--name", "My District"]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert doc["dataset"]["name"] == "my_district"
    draft, notes = draft_registry(read_raw(data), str(data))
    assert draft["dataset"]["name"] == "data_2024_district_extract"
    text = render_yaml(draft, notes)
    assert text.startswith("# DRAFT registry") and yaml.safe_load(text) == draft
    assert "# suspected identifier: student_id (unique per row)" in text.splitlines()


def test_codes_that_are_real_values_are_not_missing_codes(tmp_path):
    """99 far above a column is a code, 99 inside a 0-100 range is not; -1/1 effect codes and a gain score
    running below zero keep their negatives; a code found in one column is flagged where it is a real value."""
    rng = np.random.default_rng(5)
    n = 1200
    frame = pd.DataFrame({
        "student_id": np.arange(n),
        "age": np.where(rng.random(n) < 0.03, 99, rng.integers(14, 19, n)),
        "percent_correct": rng.integers(0, 101, n),
        "effect": rng.choice([-1, 1], n),
        "gain": rng.integers(-3, 15, n),
        "hours": rng.uniform(0, 10, n).round(2),
        "final_score": rng.normal(50, 10, n).round(2),
    })
    draft, notes = draft_registry(frame, "codes.csv")
    assert draft["dataset"]["sentinels"]["numeric"] == [99.0]
    assert any(n.startswith("WARNING: 99 ") and "percent_correct" in n for n in notes)
    types = {v["name"]: v["type"] for v in draft["variables"]}
    assert types["age"] == "categorical" and types["effect"] == "binary" and types["gain"] == "continuous"


def test_repeated_learner_rows_are_grouped_and_labelled_outcomes_wait_for_a_label(tmp_path):
    """A log table (several rows per user) splits by user; a course with a few values stays a predictor; a
    binary outcome labelled other than 0/1 or No/Yes is drafted after a runnable one, with a note."""
    rng = np.random.default_rng(11)
    n = 1200
    path = tmp_path / "mooc_log.csv"
    pd.DataFrame({
        "user_id": rng.integers(0, 300, n),
        "course": rng.choice(["c1", "c2", "c3"], n),
        "gender": rng.choice(["f", "m"], n),
        "clicks": rng.poisson(20, n),
        "videos": rng.poisson(5, n),
        "forum_posts": rng.poisson(2, n),
        "certificate": rng.choice(["earned", "none"], n),
        "completed": rng.choice(["No", "Yes"], n),
        "passed": rng.choice(["fail", "pass"], n),
    }).to_csv(path, index=False)
    draft, notes = draft_registry(read_raw(path), str(path))
    reg_path = tmp_path / "reg.yaml"
    reg_path.write_text(render_yaml(draft, notes, str(path)))
    reg = load_registry(edit_file(reg_path))
    assert validate_registry(reg) == [] and data_problems(read_raw(path), reg) == []
    assert reg.grouping == {"unit": "user", "columns": ["user_id"], "reconstructed": False}
    assert reg.id_columns == [] and "user_id" in draft["tier3"]["exact"]
    assert [q["outcome"] for q in reg.questions] == ["completed", "passed"]
    assert reg.questions[0]["default"] and "course" in reg.questions[0]["predictors"]
    assert any("passed" in n and "not 0/1 or No/Yes" in n for n in notes)


def test_every_drafted_placeholder_is_marked_and_the_draft_is_refused_naming_each_key(drafted, capsys):
    """The draft as written is refused by validate-registry (non-zero), naming every key that holds the marker:
    prose, provenance statement, variable and value labels, question text, population, rationales."""
    data, reg_path, draft, _ = drafted
    ds = draft["dataset"]
    printed = [ds["title"], ds["provenance"]["statement"]] + [ds["prose"][k] for k in ("short", "long", "about",
                                                                                          "source")]
    printed += [v["label"] for v in draft["variables"]] + [lab for v in draft["variables"]
                                                            for lab in (v.get("values") or {}).values()]
    for q in draft["questions"]:
        printed += [q["question"], q["population"], *q["predictors"].values()]
    assert printed and all(t.startswith(DRAFT_MARKER + " ") for t in printed)
    assert ds["provenance"]["kind"] == "local_file"
    keys = draft_marker_keys(load_registry(reg_path))
    for key in ("dataset.prose.short", "dataset.provenance.statement", "variables[prior_score].label",
                "variables[sex].values.F", "questions[final_score_prediction].question",
                "questions[final_score_prediction].predictors.prior_score"):
        assert key in keys
    assert main(["validate-registry", str(reg_path), "--data", str(data)]) == 1
    out = capsys.readouterr().out
    assert f"dataset.prose.long: still the {DRAFT_MARKER} text" in out and "variables[race].values.A" in out
    header = reg_path.read_text().split("\ndataset:")[0]  # the header names the keys to edit
    assert "dataset.prose.short" in header and "variables[NAME].values of sex, race" in header
    # one key edited, one fewer problem; all edited, none
    doc = yaml.safe_load(reg_path.read_text())
    doc["dataset"]["prose"]["short"] = "district records"
    reg_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert "dataset.prose.short" not in draft_marker_keys(load_registry(reg_path))
    assert validate_registry(load_registry(edit_file(reg_path))) == []


def test_prose_has_no_leading_article_and_codes_get_value_labels(tmp_path):
    """'mathplacement data', never 'the mathplacement data' (the paper adds its article); a 0/1 code read as
    float (NaN present) is drafted as integer codes, never '0.0'/'1.0'; a text predictor gets no value labels."""
    rng = np.random.default_rng(2)
    n = 1200
    gender = rng.choice([0.0, 1.0], n)
    gender[rng.random(n) < 0.1] = np.nan
    path = tmp_path / "MathPlacement.csv"
    pd.DataFrame({"Student": np.arange(n), "Gender": gender, "ACTM": rng.integers(15, 36, n),
                  "Rank": rng.uniform(0, 1, n), "RecTaken": rng.integers(0, 2, n).astype(float),
                  "Recommends": rng.choice(["R0", "R1", "R2"], n),
                  "PlcmtScore": rng.normal(20, 5, n).round(1)}).to_csv(path, index=False)
    draft, notes = draft_registry(read_raw(path), str(path))
    prose = draft["dataset"]["prose"]
    for key in ("short", "long", "about", "source"):
        assert not prose[key].removeprefix(DRAFT_MARKER + " ").lower().startswith(("the ", "a ", "an "))
    assert prose["short"] == f"{DRAFT_MARKER} math placement data"
    rec = {v["name"]: v for v in draft["variables"]}
    assert list(rec["Gender"]["values"]) == [0, 1] and list(rec["RecTaken"]["values"]) == [0, 1]
    assert "values" not in rec["Recommends"] and "values" not in rec["Rank"]
    text = render_yaml(draft, notes, str(path))
    assert "0.0:" not in text and "1.0:" not in text
