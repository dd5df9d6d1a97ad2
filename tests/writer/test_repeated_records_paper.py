"""The paper of a long-format study (issue 33): when the registry declares repeated records of a unit
(`dataset.repeated`), every count of rows says records, the number of units stands beside the sample and the test
set as macros from the data report, and data without waves are not called a cross-section."""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import pytest

from edm_ars.data.registry import rules_text, temporal_order_note
from edm_ars.formulate.spec import offline_spec
from edm_ars.writer import build_paper
from edm_ars.writer.verify import verify_paper

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "writer"))
sys.path.insert(0, str(ROOT / "tests" / "data"))
from test_repeated import registry as long_registry  # noqa: E402
from test_writer import (  # noqa: E402
    HSLS_PROSE,
    PHRASES,
    REAL_LABELS,
    TEMPLATE,
    _artifacts_by_name,
    _build_real,
    _real_figures,
    real_artifacts,
    regression_variant,
)

REPEATED = {"unit": "child", "units": "children", "id": "childid", "time": "year", "train_units": 3101,
            "test_units": 777, "train_records": 13876, "test_records": 3460, "units_on_both_sides": 0}
NOTE = ("The records of each child are ordered by year, but the registry declares no waves, so the temporal gate "
        "could not establish that every predictor was measured before the outcome.")


def long_artifacts(regression: bool) -> tuple[dict, dict]:
    """The fixture's artifacts as a long-format study without waves: the data report's split records the children
    whose yearly records it kept together, the registry's prose has no waves."""
    arts = real_artifacts()
    if regression:
        arts = regression_variant(arts)
    arts = copy.deepcopy(arts)
    arts["data_report"]["split"]["repeated"] = dict(REPEATED)
    arts["data_report"]["split"]["grouped_by"] = "unit"
    arts["spec"]["temporal_order_note"] = NOTE
    arts["spec"]["outcome"]["wave"] = None
    for v in arts["spec"].get("predictors") or []:
        if isinstance(v, dict):
            v.pop("wave", None)
    prose = copy.deepcopy(HSLS_PROSE)
    prose.update(waves={}, wave_labels={}, wave_order=[], design="longitudinal study",
                 repeated={k: REPEATED[k] for k in ("unit", "units", "id", "time")})
    return arts, prose


def build(tmp_path: Path, regression: bool) -> tuple[str, Path, dict]:
    arts, prose = long_artifacts(regression)
    figs = _real_figures(tmp_path / "round_0", arts["results"])
    out = tmp_path / "paper"
    build_paper(arts["spec"], arts["literature"], arts["data_report"], arts["results"], arts["review"],
                figures_dir=figs, template=TEMPLATE, out_dir=out, phrases=PHRASES, registry_labels=REAL_LABELS,
                dataset=prose, authors="EDM-ARS (automated research system)")
    return (out / "paper.tex").read_text(), out, arts


def flat(tex: str) -> str:
    return re.sub(r"\s+", " ", tex)


@pytest.mark.parametrize("regression", [False, True])
def test_rows_are_records_of_children(tmp_path, regression):
    tex, out, arts = build(tmp_path, regression)
    text = flat(tex)
    # the sample and the test set: records, with the children beside them
    assert "we analysed \\AnalyticN{} records of \\AnalyticUnits{} children" in text
    assert "held-out test set of \\TestN{} records of \\TestUnits{} children" in text
    # no count of rows says students
    for wrong in ("\\AnalyticN{} students", "\\TestN{} students", "\\TrainN{} students", "test students",
                  "training students", "\\TestN{} held-out students", "students of one cluster",
                  "test children", "test child"):  # the figures' captions count rows too
        assert wrong not in text, wrong
    assert "\\TestN{} test records" in text or "\\TestN{} held-out records" in text
    assert "These records belong to \\AnalyticUnits{} children (identified by \\texttt{childid})." in text
    # where the paper speaks of people rather than counting rows it names the children
    assert "on children whose" in text and "records whose" not in text and "a record's" not in text
    # the numbers are macros with their source in the data report, and the paper passes verify-paper
    numbers = (out / "numbers.tex").read_text()
    assert "\\newcommand{\\AnalyticUnits}{3{,}878}" in numbers and "\\newcommand{\\TestUnits}{777}" in numbers
    report = verify_paper(out / "paper.tex", artifacts=_artifacts_by_name(arts))
    assert report.ok, report.summary()


@pytest.mark.parametrize("regression", [False, True])
def test_not_called_a_cross_section(tmp_path, regression):
    text = flat(build(tmp_path, regression)[0])
    assert "cross-section" not in text and "cross-sectional" not in text
    assert "ordered by" in text and "registry declares no waves" in text


def test_registry_note_for_repeated_records_without_waves():
    """The temporal gate's note (research_spec.json:temporal_order_note) and the agents' rules name the records'
    order, not a cross-section, when the registry declares repeated records; a real cross-section keeps its words."""
    note = temporal_order_note(long_registry(repeated=True))
    assert note == ("The records of each child in the long_test data are ordered by year, but the registry declares "
                    "no waves, so the temporal gate could not establish that every predictor was measured before "
                    "the outcome.")
    assert "cross-section" not in rules_text(long_registry(repeated=True))
    assert "one cross-section" in temporal_order_note(long_registry(repeated=False))
    assert "one cross-section" in rules_text(long_registry(repeated=False))



@pytest.mark.parametrize("repeated", [True, False])
def test_specification_of_repeated_records_is_not_a_cross_section(repeated):
    """The rule-built specification (its expected contribution and temporal note, both printed in the paper) calls
    repeated records without waves what they are, and keeps 'one cross-section' for a real cross-section."""
    reg = long_registry(repeated=repeated)
    reg.questions[0]["question"] = "How well can the score be predicted?"
    spec = offline_spec(reg, prompt=None, question_id=None, round_=0)
    said = spec["expected_contribution"] + " " + spec["temporal_order_note"]
    assert ("cross-section" not in said) == repeated
    assert ("each child's records" in said and "ordered by year" in said) == repeated


def test_default_paper_keeps_its_nouns(tmp_path):
    """Without repeated records nothing changes: rows are the registry's unit (students), no unit macros."""
    _, out, _ = _build_real(tmp_path, False)
    text = flat((out / "paper.tex").read_text())
    assert "we analysed \\AnalyticN{} students" in text and "test set of \\TestN{} students," in text
    assert "Units{}" not in text and "records of" not in text


def test_the_note_names_the_data_set_as_the_paper_does():
    """The note says the data set's short name (dataset.prose.short), not its registry key."""
    reg = long_registry(repeated=False)
    reg.dataset.setdefault("prose", {})["short"] = "College Distance data"
    assert temporal_order_note(reg).startswith("The College Distance data have no wave structure")


def test_the_introduction_speaks_of_children_not_records(tmp_path):
    """Records are counted as records, but it is children who are nested in schools and to whom accuracy should
    carry over."""
    text = flat(build(tmp_path, True)[0])
    assert "carry over to new records" not in text and "records are nested" not in text
    assert re.search(r"carry over to new (children|pupils|students)", text), text[:3000]


def test_a_split_by_child_says_so_where_a_split_by_school_would(tmp_path):
    """Without a cluster column the split keeps each child's records together: the abstract's and contributions'
    'split ... by child', as a clustered split says 'by school'."""
    text = flat(build(tmp_path, True)[0])
    assert "split the data into training and test sets by child before any encoding" in text


def test_the_cluster_size_counts_records_and_the_person_level_is_said_to_be_left_out(tmp_path):
    """egsingle: 129 records per school, not 129 children; each child's records are no level of the models."""
    from test_multilevel_paper import multilevel

    arts, prose = long_artifacts(False)
    arts["results"]["multilevel"] = multilevel(improves=False)
    figs = _real_figures(tmp_path / "round_0", arts["results"])
    build_paper(arts["spec"], arts["literature"], arts["data_report"], arts["results"], arts["review"],
                figures_dir=figs, template=TEMPLATE, out_dir=tmp_path / "paper", phrases=PHRASES,
                registry_labels=REAL_LABELS, dataset=prose)
    text = flat((tmp_path / "paper" / "paper.tex").read_text())
    assert "(on average \\MLSchoolSizeMean{} records each" in text
    assert f"The records of one {REPEATED['unit']} are not a level of their own in these models" in text
