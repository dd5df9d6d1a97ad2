import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import confusion_matrix, roc_auc_score
from test_figures import assert_whole_or_cut_by_the_rule

import edm_ars.analysis.fairness as fa
import edm_ars.analysis.fairness_figures as ff
from edm_ars.analysis.fairness import audit, disparity_flagged
from edm_ars.analysis.fairness_figures import fairness_figure
from edm_ars.analysis.figures import ELLIPSIS, texts_outside
from edm_ars.core.frames import read_labels, write_frame

WHITE = "White, non-Hispanic"
BLACK = "Black/African-American, non-Hispanic"
HISP = "Hispanic, race specified"
NHPI = "Native Hawaiian/Pacific Islander, non-Hispanic"


def _binary_data(n=4000, noisy_group=None, extra_noise=2.5, seed=0, n_small=0):
    """Scores from a shared latent signal; optionally one race group gets extra noise on its scores."""
    rng = np.random.default_rng(seed)
    race = rng.choice([WHITE, BLACK, HISP], size=n, p=[0.5, 0.25, 0.25]).astype(object)
    if n_small:
        race[:n_small] = NHPI
    sex = rng.choice(["Male", "Female"], size=n).astype(object)
    latent = rng.normal(size=n)
    y = (latent + rng.normal(scale=0.8, size=n) > 0).astype(int)
    noise = rng.normal(scale=0.6, size=n)
    if noisy_group is not None:
        noise = np.where(race == noisy_group, rng.normal(scale=extra_noise, size=n), noise)
    prob = 1 / (1 + np.exp(-(1.5 * latent + noise)))
    protected = pd.DataFrame({"X1RACE": race, "X1SEX": sex})
    return y, prob, protected


def test_planted_disparity_flagged():
    y, prob, prot = _binary_data(noisy_group=BLACK)
    res = audit("binary_classification", y, prob, prot, ["X1RACE", "X1SEX"], n_resamples=200)
    gap = res["attributes"]["X1RACE"]["gaps"]["auc"]
    assert gap["flagged"] and gap["min_group"] == BLACK
    assert gap["ci"][0] > 0.05  # the planted gap is well beyond sampling noise
    assert disparity_flagged(res, "X1RACE", BLACK)
    assert not disparity_flagged(res, "X1SEX", "Male")
    assert any(f.startswith("X1RACE: AUC gap") and f"'{BLACK}'" in f for f in res["flags"])
    assert res["primary_metric"] == "auc"


def test_fair_setting_no_primary_flag():
    y, prob, prot = _binary_data(n=12000, noisy_group=None, seed=1)
    res = audit("binary_classification", y, prob, prot, ["X1RACE", "X1SEX"], intersections=[("X1RACE", "X1SEX")],
                n_resamples=100)
    for name in ("X1RACE", "X1SEX", "X1RACE x X1SEX"):
        gap = res["attributes"][name]["gaps"]["auc"]
        assert gap is not None and not gap["flagged"], (name, gap)
    assert not any("AUC gap" in f for f in res["flags"])


def test_small_group_unreliable_and_excluded():
    y, prob, prot = _binary_data(noisy_group=None, seed=2, n_small=12)
    # make the tiny group extreme so it would dominate the gap if it were included
    prob = prob.copy()
    prob[:12] = 1 - prob[:12]
    res = audit("binary_classification", y, prob, prot, ["X1RACE"], n_resamples=100, min_group=50)
    rec = res["attributes"]["X1RACE"]
    small = next(g for g in rec["groups"] if g["group"] == NHPI)
    assert small["n"] == 12 and small["reliable"] is False
    assert NHPI not in (rec["gaps"]["auc"]["min_group"], rec["gaps"]["auc"]["max_group"])
    assert rec["gaps"]["auc"]["n_groups"] == 3
    assert f"X1RACE: group '{NHPI}' has 12 test students (< 50): unreliable" in rec["flags"]
    assert not disparity_flagged(res, "X1RACE", NHPI)


def test_single_class_group_metric_null():
    y = np.array([0, 1] * 100 + [1] * 60)
    prob = np.linspace(0.01, 0.99, len(y))
    prot = pd.DataFrame({"X1SEX": ["Male"] * 200 + ["Female"] * 60})
    res = audit("binary_classification", y, prob, prot, ["X1SEX"], n_resamples=50)
    fem = next(g for g in res["attributes"]["X1SEX"]["groups"] if g["group"] == "Female")
    assert fem["metric"] is None and fem["auc"] is None and fem["reliable"] is False
    assert "one outcome class" in fem["reason"]
    # the rule flags the 20% (52 of 260) highest predictions, all of them Female (positive class at risk)
    assert fem["fpr"] is None and fem["tpr"] == pytest.approx(52 / 60) and fem["flag_rate"] == pytest.approx(52 / 60)
    assert res["attributes"]["X1SEX"]["gaps"]["auc"] is None
    assert any("'Female'" in f and "unreliable" in f for f in res["flags"])


def _hand_rates(y, prob, groups, at_risk_class, share):
    """The rule by hand: rank the risks, flag the top round(share * n), count per group."""
    risk = prob if at_risk_class == 1 else 1 - prob
    m = int(round(share * len(y)))
    flagged = np.zeros(len(y), dtype=int)
    flagged[np.argsort(-risk, kind="stable")[:m]] = 1
    out = {}
    for g in np.unique(groups):
        sel = groups == g
        target = (y[sel] == at_risk_class).astype(int)
        tn, fp, fn, tp = confusion_matrix(target, flagged[sel], labels=[0, 1]).ravel()
        out[g] = {"tpr": tp / (tp + fn), "fpr": fp / (fp + tn), "flag_rate": (tp + fp) / sel.sum(),
                  "base_rate": y[sel].mean(), "at_risk_rate": target.mean(), "auc": roc_auc_score(y[sel], prob[sel]),
                  "citl": prob[sel].mean() - y[sel].mean()}
    return out, int(flagged.sum())


@pytest.mark.parametrize("at_risk_class", [1, 0])
def test_rates_at_the_top_k_rule_match_a_hand_computation(at_risk_class):
    rng = np.random.default_rng(3)
    n = 400
    y = rng.integers(0, 2, n)
    prob = np.clip(0.3 * y + rng.uniform(0, 0.7, n), 0, 1)
    sex = np.where(rng.uniform(size=n) < 0.4, "Female", "Male")
    prot = pd.DataFrame({"X1SEX": sex})
    rule = fa.decision_rule(at_risk_class, None, y)
    assert rule["share"] == pytest.approx(np.mean(y == at_risk_class)) and rule["share_source"] == "at_risk_share"
    res = audit("binary_classification", y, prob, prot, ["X1SEX"], rule=rule, n_resamples=50, min_group=10)
    rec = res["attributes"]["X1SEX"]
    expect, n_flagged = _hand_rates(y, prob, sex, at_risk_class, rule["share"])
    assert res["decision_rule"]["n_flagged"] == n_flagged == round(rule["share"] * n)
    for g in rec["groups"]:
        for k, v in expect[g["group"]].items():
            assert g[k] == pytest.approx(v, abs=1e-12), (g["group"], k)
    tpr_gap = abs(expect["Male"]["tpr"] - expect["Female"]["tpr"])
    fpr_gap = abs(expect["Male"]["fpr"] - expect["Female"]["fpr"])
    assert rec["gaps"]["tpr"]["gap"] == pytest.approx(tpr_gap)
    assert rec["gaps"]["fpr"]["gap"] == pytest.approx(fpr_gap)
    assert rec["gaps"]["equalized_odds"]["gap"] == pytest.approx(max(tpr_gap, fpr_gap))
    flag_gap = abs(expect["Male"]["flag_rate"] - expect["Female"]["flag_rate"])
    assert rec["gaps"]["flag_rate"]["gap"] == pytest.approx(flag_gap)


def test_the_rule_defaults_to_the_positive_class_and_twenty_percent_and_takes_a_configured_share():
    assert fa.decision_rule(None, None, np.array([0, 1, 1])) == {
        "at_risk_class": 1, "at_risk_declared": False, "share": 0.2, "share_source": "default"}
    assert fa.decision_rule(0, 0.1, np.array([0, 1, 1]))["share"] == 0.1
    with pytest.raises(ValueError, match="flag share"):
        fa.decision_rule(1, None, np.ones(5))  # every training student at risk: no rule
    flags = fa.top_share_flags(np.array([0.1, 0.9, 0.5, 0.7, 0.3]), 0.4)
    assert flags.tolist() == [False, True, False, True, False]


def test_a_group_with_worse_calibration_is_found():
    """One group's predictions are too extreme (logit times 2.5) and shifted up: its calibration slope is far under
    1 and its CITL positive, the other groups' near 1 and 0; the CITL gap is flagged with that group at the top."""
    rng = np.random.default_rng(21)
    n = 6000
    race = rng.choice([WHITE, BLACK, HISP], size=n, p=[0.5, 0.25, 0.25]).astype(object)
    logit = rng.normal(0, 1.2, n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
    bad = race == HISP
    shown = np.where(bad, 2.5 * logit + 0.8, logit)
    prob = 1 / (1 + np.exp(-shown))
    res = audit("binary_classification", y, prob, pd.DataFrame({"X1RACE": race}), ["X1RACE"], n_resamples=200)
    by = {g["group"]: g for g in res["attributes"]["X1RACE"]["groups"]}
    assert by[HISP]["calibration_slope"] == pytest.approx(0.4, abs=0.08)
    for g in (WHITE, BLACK):
        assert by[g]["calibration_slope"] == pytest.approx(1.0, abs=0.15)
        assert abs(by[g]["citl"]) < 0.03
        lo, hi = by[g]["cis"]["calibration_slope"]
        assert lo < 1.05 and hi > 0.95  # around 1 (the data were drawn from these probabilities)
    assert by[HISP]["citl"] > 0.05 and by[HISP]["cis"]["calibration_slope"][1] < 0.6
    gap = res["attributes"]["X1RACE"]["gaps"]["citl"]
    assert gap["flagged"] and gap["max_group"] == HISP and gap["ci"][0] > 0
    # the slope against a direct fit: an unpenalised logistic regression of y on logit(p)
    from sklearn.linear_model import LogisticRegression

    x = np.log(prob[bad] / (1 - prob[bad]))
    fit = LogisticRegression(penalty=None, tol=1e-10, max_iter=1000).fit(x[:, None], y[bad])
    assert by[HISP]["calibration_slope"] == pytest.approx(fit.coef_[0][0], rel=1e-4)


def test_the_cluster_bootstrap_resamples_schools_and_widens_the_intervals():
    """Scores that share a school effect: the cluster bootstrap's intervals are wider than the ordinary ones, and
    deterministic."""
    rng = np.random.default_rng(5)
    schools = np.repeat(np.arange(60), 50)
    n = len(schools)
    sex = rng.choice(["Male", "Female"], size=n)
    y = rng.normal(0, 1, n)
    pred = y + rng.normal(0, 0.5, 60)[schools] + rng.normal(0, 0.3, n)  # a school-level error
    prot = pd.DataFrame({"X1SEX": sex})
    plain = audit("regression", y, pred, prot, ["X1SEX"], n_resamples=300)
    clus = audit("regression", y, pred, prot, ["X1SEX"], n_resamples=300, clusters=schools)
    assert plain["bootstrap"] == "ordinary" and clus["bootstrap"] == "cluster" and clus["n_clusters"] == 60
    width = lambda r, k: np.diff(r["attributes"]["X1SEX"]["groups"][0]["cis"][k])[0]  # noqa: E731
    assert width(clus, "mean_error") > 2 * width(plain, "mean_error")
    again = audit("regression", y, pred, prot, ["X1SEX"], n_resamples=300, clusters=schools)
    assert json.dumps(again, sort_keys=True) == json.dumps(clus, sort_keys=True)


def test_continuous_errors_are_reported_in_the_units_given():
    rng = np.random.default_rng(6)
    n = 2000
    g = rng.choice(["a", "b"], size=n)
    y = rng.normal(100, 15, n)
    pred = y + rng.normal(0, 5, n) + np.where(g == "b", 6.0, 0.0)
    sd = float(np.std(y[:1000], ddof=1))  # the "training" SD
    res = audit("regression", y / sd, pred / sd, pd.DataFrame({"G": g}), ["G"], n_resamples=50,
                error_scale={"kind": "training_outcome_sd", "sd": sd})
    by = {x["group"]: x for x in res["attributes"]["G"]["groups"]}
    b = g == "b"
    assert by["b"]["rmse"] == pytest.approx(np.sqrt(np.mean((pred[b] - y[b]) ** 2)) / sd)
    assert by["b"]["mean_error"] == pytest.approx(np.mean(pred[b] - y[b]) / sd)
    assert by["b"]["mean_error"] == pytest.approx(6.0 / 15, abs=0.05)
    assert res["error_scale"]["sd"] == sd and res["decision_rule"] is None


def test_grades_and_numbered_groups_keep_their_natural_order():
    from edm_ars.analysis.figure_sanity import figure_problems

    rng = np.random.default_rng(9)
    n = 1200
    grade = rng.choice(["3", "K", "1", "2", "10"], size=n)
    y = rng.integers(0, 2, n)
    prob = np.clip(0.2 + 0.5 * y + rng.normal(0, 0.2, n), 0.01, 0.99)
    res = audit("binary_classification", y, prob, pd.DataFrame({"grade": grade}), ["grade"], n_resamples=20)
    rec = res["attributes"]["grade"]
    assert [g["group"] for g in rec["groups"]] == ["K", "1", "2", "3", "10"] and rec["ordered"]
    fig = ff.fairness_plot(res)
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert [t.split("\n")[0] for t in ticks] == ["K", "1", "2", "3", "10"]
    assert all(t.endswith(f"(n = {g['n']:,})") for t, g in zip(ticks, rec["groups"], strict=True))
    from edm_ars.analysis.figures import figure_facts

    drawn = figure_facts(fig)
    assert figure_problems({"kind": "fairness", "path": "x", "drawn": drawn}, {"fairness": res}) == []
    # the same ticks out of order are caught
    bad = json.loads(json.dumps(drawn))
    cats = bad["axes"][0]["y"]["categories"]
    cats[0], cats[1] = cats[1], cats[0]
    assert figure_problems({"kind": "fairness", "path": "x", "drawn": bad}, {"fairness": res})


def test_an_attribute_binned_from_a_predictor_is_detected_and_a_declared_one_recorded():
    rng = np.random.default_rng(12)
    n = 3000
    ses = rng.normal(size=n)
    quint = pd.qcut(ses, 5, labels=["First quintile (lowest)", "Second quintile", "Third quintile",
                                    "Fourth quintile", "Fifth quintile (highest)"]).astype(str)
    race = rng.choice(["A", "B", "C"], size=n)
    y = rng.integers(0, 2, n)
    prob = rng.uniform(size=n)
    prot = pd.DataFrame({"SESQ5": quint, "RACE": race})
    predictors = pd.DataFrame({"SES": ses, "MATH": 0.6 * ses + rng.normal(0, 0.8, n)})
    res = audit("binary_classification", y, prob, prot, ["SESQ5", "RACE"], n_resamples=10, predictors=predictors)
    d = res["attributes"]["SESQ5"]["derived_from"]
    assert d["predictor"] == "SES" and d["source"] == "detected" and d["concordance"] > 0.99
    assert "derived_from" not in res["attributes"]["RACE"]  # nominal, not binned from anything
    # a correlated predictor is not taken for the source
    res2 = audit("binary_classification", y, prob, prot, ["SESQ5"], n_resamples=10, predictors=predictors[["MATH"]])
    assert "derived_from" not in res2["attributes"]["SESQ5"]
    res3 = audit("binary_classification", y, prob, prot, ["SESQ5"], n_resamples=10,
                 derived={"SESQ5": {"predictor": "X1SES", "label": "SES composite"}})
    assert res3["attributes"]["SESQ5"]["derived_from"] == {"predictor": "X1SES", "source": "registry",
                                                          "label": "SES composite"}


def test_the_group_calibration_figure_names_every_group_with_its_size(tmp_path):
    from edm_ars.analysis.figure_sanity import figure_problems

    y, prob, prot = _binary_data(seed=13)
    res = audit("binary_classification", y, prob, prot, ["X1RACE", "X1SEX"], n_resamples=20)
    curves = ff.group_calibration_curves(y, prob, prot, res)
    assert [c["group"] for c in curves["X1SEX"]] == [g["group"] for g in res["attributes"]["X1SEX"]["groups"]]
    drawn = ff.calibration_group_figure(curves, res, tmp_path / "cal.pdf")
    assert (tmp_path / "cal.png").exists()
    legends = ["".join(e.split()) for ax in drawn["axes"] for e in (ax.get("legend") or {}).get("entries") or []]
    for rec in res["attributes"].values():
        for g in rec["groups"]:
            name, size = "".join(g["group"].split()), f"(n={g['n']:,})"
            assert any(e.startswith(name) and e.endswith(size) for e in legends), g["group"]
    assert figure_problems({"kind": "fairness_calibration", "path": "x", "drawn": drawn}, {"fairness": res}) == []


def test_ci_contains_point_and_deterministic():
    y, prob, prot = _binary_data(seed=4)
    kw = {"n_resamples": 200, "seed": 7}
    a = audit("binary_classification", y, prob, prot, ["X1RACE", "X1SEX"], **kw)
    b = audit("binary_classification", y, prob, prot, ["X1RACE", "X1SEX"], **kw)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    for rec in a["attributes"].values():
        for g in rec["groups"]:
            if g["reliable"]:
                lo, hi = g["ci"]
                assert lo <= g["metric"] <= hi
                assert lo < hi
    c = audit("binary_classification", y, prob, prot, ["X1RACE"], n_resamples=200, seed=8)
    assert c["attributes"]["X1RACE"]["groups"][0]["ci"] != a["attributes"]["X1RACE"]["groups"][0]["ci"]


def test_regression_error_gaps_and_bias_sign():
    rng = np.random.default_rng(5)
    n = 3000
    sex = rng.choice(["Male", "Female"], size=n)
    y = rng.normal(50, 10, n)
    pred = y + rng.normal(0, 4, n)
    pred = np.where(sex == "Female", pred + 3.0, pred)  # biased upward for one group
    prot = pd.DataFrame({"X1SEX": sex})
    res = audit("regression", y, pred, prot, ["X1SEX"], n_resamples=200)
    assert res["primary_metric"] == "rmse" and "r2" not in json.dumps(res)
    rec = res["attributes"]["X1SEX"]
    by = {g["group"]: g for g in rec["groups"]}
    assert by["Female"]["mean_error"] == pytest.approx(3.0, abs=0.5)
    assert abs(by["Male"]["mean_error"]) < 0.5
    f = sex == "Female"
    assert by["Female"]["rmse"] == pytest.approx(np.sqrt(np.mean((y[f] - pred[f]) ** 2)))
    assert by["Female"]["mae"] == pytest.approx(np.mean(np.abs(y[f] - pred[f])))
    assert set(rec["gaps"]) == {"rmse", "mean_error"}
    me = rec["gaps"]["mean_error"]
    assert me["max_group"] == "Female" and me["gap"] == pytest.approx(3.0, abs=0.5) and me["flagged"]
    assert rec["gaps"]["rmse"]["gap"] > 0
    assert disparity_flagged(res, "X1SEX", "Female")
    assert by["Female"]["ci"][0] <= by["Female"]["metric"] <= by["Female"]["ci"][1]


def test_intersections_and_missing_values(tmp_path):
    y, prob, prot = _binary_data(seed=6)
    prot = prot.copy()
    prot.loc[:29, "X1SEX"] = np.nan
    prot.loc[30:49, "X1RACE"] = np.nan
    pairs = [("X1RACE", "X1SEX")]  # the registry's protected_intersections
    res = audit("binary_classification", y, prob, prot, ["X1RACE", "X1SEX"], intersections=pairs, n_resamples=50)
    assert res["attributes"]["X1SEX"]["n_missing"] == 30
    # the same frame as the fairness rule reads it (test_protected.parquet: text, NaN for missing) gives the same audit
    write_frame(tmp_path / "test_protected.parquet", prot)
    back = read_labels(tmp_path / "test_protected.parquet")
    res_csv = audit("binary_classification", y, prob, back, ["X1RACE", "X1SEX"], intersections=pairs, n_resamples=50)
    assert json.dumps(res_csv, sort_keys=True) == json.dumps(res, sort_keys=True)
    assert res["attributes"]["X1RACE"]["n_missing"] == 20
    inter = res["attributes"]["X1RACE x X1SEX"]
    assert inter["kind"] == "intersection" and inter["n_missing"] == 50
    names = {g["group"] for g in inter["groups"]}
    assert f"{BLACK} x Female" in names and len(names) == 6
    assert sum(g["n"] for g in inter["groups"]) == len(y) - 50
    assert sum(g["n"] for g in res["attributes"]["X1SEX"]["groups"]) == len(y) - 30
    # explicit intersections, a missing attribute, and labels
    res2 = audit("binary_classification", y, prob, prot, ["X1SEX", "X1SESQ5"], intersections=[("X1SEX", "X1SESQ5")],
                 n_resamples=20, labels={"X1SEX": "Sex"})
    assert "X1SESQ5" in res2["skipped"] and "X1SEX x X1SESQ5" in res2["skipped"]
    assert res2["attributes"]["X1SEX"]["label"] == "Sex"
    assert "X1RACE x X1SEX" not in res2["attributes"]


def test_continuous_attribute_binned_into_quintiles():
    y, prob, prot = _binary_data(seed=7)
    prot = prot.copy()
    ses = np.random.default_rng(8).normal(size=len(y))
    ses[:10] = np.nan
    prot["X1SES"] = ses
    res = audit("binary_classification", y, prob, prot, ["X1SES"], n_resamples=20)
    rec = res["attributes"]["X1SES"]
    labels = [g["group"] for g in rec["groups"]]
    assert labels == ["Q1 (lowest)", "Q2", "Q3", "Q4", "Q5 (highest)"]
    assert rec["n_missing"] == 10 and rec["binned"]["bins"] == 5
    assert all(abs(g["n"] - (len(y) - 10) / 5) <= 1 for g in rec["groups"])


def test_ordinal_text_labels_in_natural_order():
    rng = np.random.default_rng(9)
    q = ["First quintile (lowest)", "Second quintile", "Third quintile", "Fourth quintile",
         "Fifth quintile (highest)"]
    n = 1000
    y = rng.integers(0, 2, n)
    prob = rng.uniform(size=n)
    prot = pd.DataFrame({"X1SESQ5": rng.choice(q, size=n)})
    res = audit("binary_classification", y, prob, prot, ["X1SESQ5"], n_resamples=10)
    assert [g["group"] for g in res["attributes"]["X1SESQ5"]["groups"]] == q


def test_json_serialisable_and_figure(tmp_path):
    y, prob, prot = _binary_data(noisy_group=HISP, seed=10, n_small=20)
    prot = prot.copy()
    prot["X1SES"] = np.random.default_rng(11).normal(size=len(y))
    res = audit("binary_classification", y, prob, prot, ["X1RACE", "X1SEX", "X1SES", "X1PAREDU"], n_resamples=50)
    text = json.dumps(res, allow_nan=False)
    assert json.loads(text) == res
    out = tmp_path / "fig" / "fairness.pdf"
    fairness_figure(res, out)
    assert out.exists() and out.stat().st_size > 1000
    png = tmp_path / "fairness.png"
    fairness_figure(res, png, attributes=["X1SEX"])
    assert png.exists()
    empty = tmp_path / "empty.pdf"
    fairness_figure({"primary_metric": "auc", "attributes": {}}, empty)
    assert empty.exists()


# ---- the figure: no label cut off ----------------------------------------------------------------------
LONG_GROUP = ("Native Hawaiian/Pacific Islander, non-Hispanic, or another group whose survey label runs on for far "
              "longer than three lines of a tick label")


def _audit_with(panels: dict[str, tuple[str, list[str]]]) -> dict:
    """An audit result whose groups' metrics rise in the order given (the figure sorts groups by metric)."""
    attrs = {a: {"label": label, "kind": "attribute",
                 "groups": [{"group": g, "reliable": True, "metric": 0.6 + 0.02 * i, "ci": [0.55 + 0.02 * i,
                                                                                             0.65 + 0.02 * i]}
                            for i, g in enumerate(groups)]}
             for a, (label, groups) in panels.items()}
    return {"primary_metric": "auc", "overall": {"auc": 0.7}, "attributes": attrs}


@pytest.mark.slow
def test_fairness_figure_keeps_every_title_and_group_label_inside_and_whole(tmp_path):
    panels = {
        "X1SEX": ("X1 Student's sex", ["Female", "Male"]),
        "X1RACE": ("X1 Student's race/ethnicity-composite", [
            "Amer. Indian/Alaska Native, non-Hispanic", "Asian, non-Hispanic", BLACK, "Hispanic, no race specified",
            HISP, "More than one race, non-Hispanic", NHPI, WHITE]),
        "X1SESQ5": ("X1 Quintile coding of X1SES composite", ["First quintile (lowest)", "Fifth quintile (highest)"]),
        "X4LONG": ("X4 A protected attribute whose survey label is so long that even two lines of the panel's width "
                   "cannot hold it, so that it has to end with an ellipsis", ["Yes", LONG_GROUP]),
    }
    fig = ff.fairness_plot(_audit_with(panels))
    assert texts_outside(fig) == []  # nothing sticks out of the figure (a plain savefig would cut it)
    axes = fig.axes
    assert len(axes) == len(panels) and len({round(ax.get_position().x0, 4) for ax in axes}) == 1  # aligned panels
    for ax, (label, groups) in zip(axes, panels.values(), strict=True):
        title = ax.get_title(loc="left")
        assert_whole_or_cut_by_the_rule(title, label, ff.TITLE_WIDTH, ff.TITLE_LINES)
        assert title.endswith(ELLIPSIS) == label.startswith("X4 A protected")  # the HSLS labels are whole
        ticks = [t.get_text() for t in ax.get_yticklabels()]
        assert len(ticks) == len(groups)
        for shown, group in zip(ticks, groups, strict=True):
            assert_whole_or_cut_by_the_rule(shown, group, ff.LABEL_WIDTH, ff.LABEL_LINES)
            assert shown.endswith(ELLIPSIS) == (group == LONG_GROUP)  # only a label past three lines is cut
    ff.fairness_figure(_audit_with(panels), tmp_path / "fairness.png")
    assert (tmp_path / "fairness.png").stat().st_size > 1000


def test_groups_are_named_by_the_registry_value_labels_and_never_as_float_codes(tmp_path):
    """STAR's ethnicity codes (afam, cauc) become the R documentation's names; a 0/1 code read back from CSV as
    '0.0'/'1.0' is normalised and labelled; the figure and the flags carry the labels, never the codes."""
    from pathlib import Path

    from edm_ars.data.registry import load_registry, value_labels

    star = load_registry(Path(__file__).resolve().parents[2] / "registry" / "star.yaml")
    rng = np.random.default_rng(4)
    n = 900
    y = rng.normal(0, 1, n)
    pred = y + rng.normal(0, 1, n)
    prot = pd.DataFrame({"ethnicity": rng.choice(["afam", "cauc"], n),
                         "gender": rng.choice(["0.0", "1.0"], n), "plain": rng.choice(["1.0", "2.0"], n)})
    res = audit("regression", y, pred, prot, ["ethnicity", "gender", "plain"], intersections=[("ethnicity", "gender")],
                n_resamples=20, values={"ethnicity": value_labels(star, "ethnicity"),
                                        "gender": {0: "Female", 1: "Male"}})
    groups = {a: [g["group"] for g in r["groups"]] for a, r in res["attributes"].items()}
    assert groups["ethnicity"] == ["Caucasian", "African-American"]  # the registry's order
    assert groups["gender"] == ["Female", "Male"] and groups["plain"] == ["1", "2"]
    assert "African-American x Female" in groups["ethnicity x gender"]
    text = json.dumps(res)
    assert "afam" not in text and "cauc" not in text and "0.0" not in json.dumps(groups)
    fig = ff.fairness_plot(res)
    ticks = [t.get_text().split("\n(n = ")[0] for ax in fig.axes for t in ax.get_yticklabels()]
    assert "African-American" in ticks and not {"afam", "cauc", "0.0", "1.0"} & set(ticks)


def test_a_numeric_attribute_read_as_text_with_many_values_is_binned_into_quintiles():
    import pandas as pd

    from edm_ars.analysis.fairness_groups import _grouping

    s = pd.Series([str(v) for v in range(10, 51, 2)] * 5)  # 21 distinct scores, read from CSV as text
    rows, order, binning = _grouping(s)
    assert binning is not None and binning["bins"] == 5 and order[0] == "Q1 (lowest)" and len(order) == 5
    letters = pd.Series(list("abcdefghijklmnopqrstu"))
    assert _grouping(letters)[2] is None


def test_registry_labels_that_state_their_places_are_put_in_that_order():
    """A registry listing an ordered attribute's labels out of order (3, 1, K, 2) still gives K < 1 < 2 < 3."""
    rng = np.random.default_rng(14)
    n = 800
    codes = rng.choice(["g3", "g1", "gk", "g2"], size=n)
    y = rng.normal(size=n)
    res = audit("regression", y, y + rng.normal(size=n), pd.DataFrame({"grade": codes}), ["grade"], n_resamples=10,
                values={"grade": {"g3": "3", "g1": "1", "gk": "K", "g2": "2"}})
    assert [g["group"] for g in res["attributes"]["grade"]["groups"]] == ["K", "1", "2", "3"]


def test_the_calibration_slope_does_not_depend_on_where_newton_starts():
    """The bootstrap starts each resample's fit at the whole group's (fewer steps); the slopes are those from the
    default start, and undefined resamples (one class) stay undefined."""
    from edm_ars.analysis.fairness import calibration_slope
    from edm_ars.analysis.metrics import bootstrap_counts

    rng = np.random.default_rng(4)
    n = 2000
    x = rng.normal(0, 1.5, n)
    prob = 1 / (1 + np.exp(-x))
    y = (rng.random(n) < 1 / (1 + np.exp(-0.7 * x + 0.2))).astype(float)
    w = bootstrap_counts(n, 40, 9).astype(float)
    w[3] = np.where(y == 1, 0.0, w[3])  # a resample without a positive
    cold = calibration_slope(y, prob, w)
    warm = calibration_slope(y, prob, w, start=(-0.2, 0.7))
    assert np.isnan(cold[3]) and np.isnan(warm[3])
    np.testing.assert_allclose(warm[~np.isnan(cold)], cold[~np.isnan(cold)], rtol=0, atol=1e-6)
    assert 0.5 < np.nanmean(cold) < 0.9
