import pytest

from edm_ars.analysis.stability import bootstrap_rows, overlap, perturbations, rank_correlation, summarize
from edm_ars.core.conventions import UNSTABLE_TOP5


def test_perturbation_names():
    assert perturbations({"imputation": ["simple"], "bootstrap": 2, "seeds": 1}) == [
        "impute_simple", "bootstrap_1", "bootstrap_2", "seed_1"]
    assert perturbations({}) == []


def test_bootstrap_rows_are_seeded_and_differ_by_k():
    a, b = bootstrap_rows(100, 1, 42), bootstrap_rows(100, 2, 42)
    assert (a == bootstrap_rows(100, 1, 42)).all() and not (a == b).all()
    assert a.min() >= 0 and a.max() < 100


def test_overlap_and_rank_correlation():
    ref = list("abcdefghij")
    assert overlap(ref, list("abcdeklmno"), 5) == 1.0
    assert overlap(ref, list("abxyzklmno"), 5) == 0.4
    assert rank_correlation(ref, ref) == pytest.approx(1.0)
    assert rank_correlation(ref, ref[::-1]) < 0


def run(name, metric, feats):
    return {"perturbation": name, "kind": name.split("_")[0], "metric": metric,
            "top_features": [{"feature": f} for f in feats]}


def test_summary_flags_unstable_rankings():
    ref = list("abcdefghij")
    stable = summarize(ref, 0.8, [run("seed_1", 0.80, ref), run("bootstrap_1", 0.79, list("abcdfeghij"))], "auc")
    assert not stable["unstable"] and stable["top5_overlap"]["mean"] == pytest.approx(0.9)  # e left the top 5
    assert stable["metric_spread"]["min"] == 0.79 and stable["n_perturbations"] == 2
    shaky = summarize(ref, 0.8, [run("seed_1", 0.8, list("avwxyzbcde")), run("seed_2", 0.8, list("vwxyzabcde"))],
                      "auc")
    assert shaky["unstable"] and shaky["top5_overlap"]["mean"] < 0.6
    # the threshold applied is recorded with the verdict (the Critic and the Writer read it there)
    assert stable["thresholds"] == shaky["thresholds"] == {"unstable_top5": UNSTABLE_TOP5}
