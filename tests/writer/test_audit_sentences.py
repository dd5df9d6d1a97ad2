"""A numeric audited attribute and a data set without waves: the Methods say where the audit cut the attribute into
groups, and name only checks that could run (issue 33, every sentence follows the facts of the design)."""

from __future__ import annotations

import json

import test_writer as tw
from test_design_facts import _flat, _no_waves, _paper

from edm_ars.writer import slot_content
from edm_ars.writer.verify import verify_paper


def test_the_cut_points_of_a_binned_attribute_are_stated_and_reconcile(tmp_path):
    arts = tw.real_artifacts()
    arts["results"]["fairness"]["attributes"]["X1SESQ5"]["binned"] = {
        "bins": 5, "edges": [10.0, 20.0, 23.0, 30.0, 37.5, 50.0]}
    tex = _flat(_paper(tmp_path, arts))
    assert "The cut points of \\texttt{X1SESQ5} (each the upper end of a group) were" in tex
    report = verify_paper(tmp_path / "paper" / "paper.tex", artifacts=tw._artifacts_by_name(arts))
    assert report.ok, report.summary()
    macros = json.loads((tmp_path / "paper" / "numbers.json").read_text())["macros"]
    cuts = {m["source"].rsplit(".", 1)[1]: m["value"] for m in macros
            if m["source"].startswith("results.json:fairness.attributes.X1SESQ5.binned.edges.")}
    assert cuts == {"1": "20", "2": "23", "3": "30", "4": "37.50"}  # the inner edges only, as the data give them


def test_without_waves_no_temporal_check_is_named(tmp_path):
    arts = _no_waves()
    no_waves = _flat(_paper(tmp_path / "nw", arts, dataset=dict(tw.HSLS_PROSE, waves={}, wave_labels={},
                                                                  wave_order=[])))
    assert "automated validation checks" in no_waves and "temporal ordering of predictors" not in no_waves
    waves = _flat(_paper(tmp_path / "w", tw.real_artifacts()))
    assert "temporal ordering of predictors" in waves


def _rule_paper(tmp_path, *, declared: bool, same_base_rates: bool) -> str:
    res = tw.results(True)
    if not declared:
        res["fairness"]["decision_rule"].update(at_risk_class=1, at_risk_declared=False, at_risk_source=None)
    sex = res["fairness"]["attributes"]["X1SEX"]
    for g in sex["groups"]:
        g["at_risk_rate"] = 0.257 if same_base_rates else g["at_risk_rate"]
    sex["gaps"]["tpr"] = dict(sex["gaps"]["tpr"] or {}, flagged=True)
    _, out = tw._build(tmp_path, binary=True, passed=True, results=res)
    return _flat(slot_content((out / "paper.tex").read_text(), "RESULTS"))


def test_an_undeclared_class_is_not_called_at_risk(tmp_path):
    """With no class declared as the one a school acts on, the rule flags the likeliest positive class, which may
    be a good outcome (a degree): those students are 'predicted most likely to have the outcome', not 'at risk'."""
    undeclared = _rule_paper(tmp_path / "u", declared=False, same_base_rates=False)
    assert "most at risk" not in undeclared and "predicted most likely to have the outcome were flagged" in undeclared
    declared = _rule_paper(tmp_path / "d", declared=True, same_base_rates=False)
    assert "most at risk were flagged" in declared


def test_equal_base_rates_are_not_said_to_explain_the_gaps(tmp_path):
    same = _rule_paper(tmp_path / "s", declared=True, same_base_rates=True)
    sex = same[same.index("For \\emph{x1 Student's sex}") if "For \\emph{x1 Student's sex}" in same else 0:]
    assert "was about the same in every group" in same
    assert "partly mirror" not in sex[:sex.index("For ", 10)] if "For " in sex[10:] else True
    differ = _rule_paper(tmp_path / "d", declared=True, same_base_rates=False)
    assert "partly mirror differences in the share" in differ and "about the same in every group" not in differ


def test_a_study_without_protected_attributes_or_clusters_claims_neither(tmp_path):
    """A data set of states without protected attributes or cluster columns (the SAT data of 50 states): no
    fairness literature, no 'groups such as', no captions about an audit, no 'states and their schools'; the
    literature's findings about students stay about students."""
    arts = _no_waves()
    arts["spec"]["subgroups"] = []
    arts["results"]["fairness"] = None
    arts["results"]["figures"] = [f for f in arts["results"]["figures"] if not f["kind"].startswith("fairness")]
    arts["results"]["tables"] = [t for t in arts["results"].get("tables") or [] if t.get("kind") != "fairness"]
    arts["data_report"]["split"].update(method="ShuffleSplit (no cluster groups available)", clustered=False,
                                        grouped=False, grouped_by=None, n_groups=50, train_clusters=40,
                                        test_clusters=10)  # as the engineer records a split of 50 states
    dataset = dict(tw.HSLS_PROSE, waves={}, wave_labels={}, wave_order=[], unit="state", units="states",
                   grouping={"unit": "school", "columns": [], "reconstructed": False},
                   actors="", purpose="", decision_time="")
    tex = _flat(_paper(tmp_path, arts, dataset=dataset))
    assert "Predictive models in education can be less accurate" not in tex
    assert "between groups such as" not in tex and "differences between models cannot be judged" in tex
    assert "audit leaves out" not in tex and "For the audited attributes" not in tex
    assert "states and their schools" not in tex and "describe states at one point in time" in tex
    assert "Early-warning systems flag students at risk" in tex  # the literature, not the data set's states
    assert "from the same school may appear in both" not in tex  # no cluster columns: rows declared independent
    assert "could help schools" not in tex  # no declared use, and states are not whom schools support
    assert "Performance was also reported for groups" not in tex
    with_groups = _flat(_paper(tmp_path / "groups", tw.real_artifacts()))
    assert "between models or between groups such as" in with_groups
    assert "Predictive models in education can be less accurate" in with_groups



def test_few_test_clusters_are_named_in_the_abstract(tmp_path):
    """A grouped split with 4 clusters in the test set (19 secondary schools split 15/4): the review's check
    test_clusters failed, and the abstract says the intervals understate the uncertainty, with the count."""
    arts = tw.real_artifacts()
    arts["data_report"]["split"].update(grouped=True, grouped_by="cluster", test_clusters=4)
    arts["review"].setdefault("checks", []).append({"id": "an_test_clusters_min", "function": "test_clusters",
                                                     "passed": False})
    tex = _paper(tmp_path, arts)
    abstract = _flat(slot_content(tex, "ABSTRACT"))
    assert "The test set holds only \\TestClusters{} schools" in abstract
    report = verify_paper(tmp_path / "paper" / "paper.tex", artifacts=tw._artifacts_by_name(arts))
    assert report.ok, report.summary()
    plain = _flat(slot_content(_paper(tmp_path / "plain", tw.real_artifacts()), "ABSTRACT"))
    assert "The test set holds only" not in plain


def test_no_gap_with_every_group_reliable_names_no_small_groups(tmp_path):
    """No gap above the threshold: 'small groups could not be assessed reliably' only when the audit had one."""
    def unflagged(reliable: bool) -> dict:
        arts = tw.real_artifacts()
        for rec in arts["results"]["fairness"]["attributes"].values():
            for g in rec["groups"]:
                g["reliable"] = reliable or g is not rec["groups"][0]
            for gap in (rec.get("gaps") or {}).values():
                if isinstance(gap, dict):
                    gap["flagged"] = False
        arts["results"]["fairness"]["flags"] = []
        return arts
    all_reliable = _flat(slot_content(_paper(tmp_path / "r", unflagged(True)), "DISCUSSION"))
    assert "found no gap above the flagging threshold among groups large enough to be assessed" in all_reliable
    assert "small groups could not be assessed" not in all_reliable
    some_small = _flat(slot_content(_paper(tmp_path / "s", unflagged(False)), "DISCUSSION"))
    assert "although small groups could not be assessed reliably" in some_small
