"""Table 1 and the sample flow (edm_ars.data.sample), structural missingness (edm_ars.data.engineer), and the paper's use of
them: Table 1 and the flow in the Data subsection, one Limitations sentence instead of a bullet per variable."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_engineer import make_raw, spec_for  # noqa: F401  (reg, layout: conftest)

from edm_ars.core.artifacts import validate
from edm_ars.data.engineer import prepare
from edm_ars.data.impute import MISSING_CATEGORY, fit_imputer
from edm_ars.data.protocol import Protocol
from edm_ars.data.sample import OTHER_LEVELS, describe_sample, describe_variable, sample_flow, table_rows

ROOT = Path(__file__).resolve().parents[2]


def small(binary: bool, n: int = 400, seed: int = 3):
    rng = np.random.default_rng(seed)
    x = rng.normal(50, 10, n)
    x[rng.random(n) < 0.1] = np.nan
    cat = pd.Series(rng.choice(["1", "2", "3"], n), dtype=object)
    cat[rng.random(n) < 0.2] = np.nan
    many = pd.Series(rng.choice([f"L{i}" for i in range(12)], n), dtype=object)
    y = (rng.random(n) < 0.3).astype(float) if binary else rng.normal(0, 1, n) + 0.05 * np.nan_to_num(x, nan=50)
    prot = pd.DataFrame({"sex": pd.Series(rng.choice(["F", "M"], n), dtype=object)})
    prot.loc[rng.random(n) < 0.05, "sex"] = np.nan
    X = pd.DataFrame({"x": x, "cat": cat, "many": many})
    return X, pd.Series(y, name="y"), prot


@pytest.mark.parametrize("binary", [True, False])
def test_table_one_numbers_agree_with_pandas(binary):
    X, y, prot = small(binary)
    kinds = {"x": "continuous", "cat": "categorical", "many": "categorical"}
    task = "binary_classification" if binary else "regression"
    flow = sample_flow(500, 400, 400, X, np.arange(300), np.arange(300, 400), pd.Series(np.arange(400) // 10),
                       True, prot)
    s = describe_sample(X, kinds, y, task, prot, flow, labels={"cat": {"1": "First", "2": "Second"},
                                                               "sex": {"F": "Female", "M": "Male"}},
                        var_labels={"x": "A score"}, max_levels=8)
    validate(s, "sample", where="test")
    px, pc, pm = s["predictors"]
    assert px["label"] == "A score" and px["pct_missing"] == pytest.approx(100 * X["x"].isna().mean(), abs=1e-3)
    assert px["mean"] == pytest.approx(X["x"].mean()) and px["sd"] == pytest.approx(X["x"].std())
    observed = X["cat"].dropna()
    assert [lv["label"] for lv in pc["levels"]] == ["First", "Second", "3"]  # the registry's labels and order
    for lv in pc["levels"]:
        assert lv["pct"] == pytest.approx(100 * (observed == lv["value"]).mean(), abs=1e-3)
    assert pc["pct_missing"] == pytest.approx(100 * X["cat"].isna().mean(), abs=1e-3)
    if binary:
        for c, by in zip([0.0, 1.0], px["by_class"], strict=True):
            assert by["mean"] == pytest.approx(X["x"][y == c].mean())
        lv = pc["levels"][0]
        in_level = X["cat"] == "1"
        assert lv["rate"] == pytest.approx(100 * y[in_level].mean(), abs=1e-3)
        assert lv["by_class_pct"][1] == pytest.approx(100 * (X["cat"][y == 1].dropna() == "1").mean(), abs=1e-3)
        assert [c["n"] for c in s["classes"]] == [int((y == 0).sum()), int((y == 1).sum())]
    else:
        both = X["x"].notna()
        assert px["corr"] == pytest.approx(np.corrcoef(X["x"][both], y[both])[0, 1])
        assert pc["levels"][1]["outcome_mean"] == pytest.approx(y[X["cat"] == "2"].mean())
    # more levels than shown: the rarer ones are pooled, the shares still add up to 100
    assert len(pm["levels"]) == 8 and pm["levels"][-1]["value"] == OTHER_LEVELS
    assert sum(lv["pct"] for lv in pm["levels"]) == pytest.approx(100, abs=1e-3)
    assert sum(lv["n"] for lv in pm["levels"]) == X["many"].notna().sum()
    sex = s["audited"][0]
    assert [(g["label"], g["n"]) for g in sex["levels"]] == [("Female", int((prot["sex"] == "F").sum())),
                                                          ("Male", int((prot["sex"] == "M").sum()))]
    table = table_rows(s)
    assert len(table) == 1 + 3 + 8 + 2 and set(table["section"]) == {"predictor", "audited"}


def test_flow_counts_add_up():
    X, y, prot = small(True)
    groups = pd.Series(np.arange(400) // 10)
    train, test = np.arange(0, 320), np.arange(320, 400)
    f = sample_flow(520, 400, 400, X, train, test, groups, True, prot)
    assert f["raw_n"] == f["outcome_missing_n"] + f["outcome_present_n"] and f["analytic_n"] == 400
    assert f["train_n"] + f["test_n"] == f["analytic_n"]
    assert f["train_clusters"] == 32 and f["test_clusters"] == 8
    assert f["complete_case_train_n"] + f["complete_case_test_n"] == f["complete_case_n"] \
        == int(X.notna().all(axis=1).sum())
    assert f["test_missing_protected"] == [{"name": "sex", "n": int(prot["sex"].iloc[test].isna().sum()),
                                            "pct": pytest.approx(100 * prot["sex"].iloc[test].isna().mean())}]


def test_prepare_writes_the_sample_and_flow(reg, layout):  # noqa: F811
    raw = make_raw()
    spec = spec_for()
    p = prepare(raw, spec, reg, layout, Protocol(min_analytic_n=500))
    s, d = p.sample, p.report
    validate(s, "sample", where="test")
    f = s["flow"]
    assert (f["raw_n"], f["analytic_n"], f["train_n"], f["test_n"]) == (d["original_n"], d["analytic_n"],
                                                                        d["train_n"], d["test_n"])
    assert (f["train_clusters"], f["test_clusters"]) == (d["split"]["train_clusters"], d["split"]["test_clusters"])
    assert f["complete_case_n"] == d["complete_case_n"]
    assert [v["name"] for v in s["predictors"]] == list(d["missingness"])
    for v in s["predictors"]:  # the same missing share as the report's
        assert v["pct_missing"] == pytest.approx(d["missingness"][v["name"]]["pct_missing"], abs=0.01)
    # the flagged shares are no longer one warning per variable
    assert not any("missing in the training rows" in w for w in d["warnings"])


def planted(n=1000, seed=1):
    """`early` is missing by design for the later entrants (60%), `mild` at random for 25%."""
    rng = np.random.default_rng(seed)
    late = rng.random(n) < 0.6
    early = np.where(late, np.nan, rng.normal(0, 1, n))
    mild = rng.normal(0, 1, n)
    mild[rng.random(n) < 0.25] = np.nan
    grade = pd.Series(np.where(late, "entered later", "kindergarten"), dtype=object)
    cls = pd.Series(rng.choice(["small", "regular"], n), dtype=object).where(~late, np.nan)
    return pd.DataFrame({"early": early, "mild": mild, "grade": grade, "cls": cls}), late


@pytest.mark.parametrize("strategy", ["by_missingness", "simple", "iterative"])
def test_a_structurally_missing_predictor_gets_an_indicator(strategy):
    frame, late = planted()
    kinds = {"early": "continuous", "mild": "continuous", "grade": "categorical", "cls": "categorical"}
    imp, _ = fit_imputer(frame, kinds, Protocol(imputation=strategy))
    assert imp.indicators == {"early": "early__not_observed"}
    assert "missing_indicator" in imp.methods["early"] and "structural" in imp.methods["early"]
    assert "missing_indicator" not in imp.methods["mild"]
    assert imp.methods["cls"].startswith("missing_category")  # a categorical one: its own category, any strategy
    out = imp.transform(frame)
    assert (out["early__not_observed"].to_numpy() == late.astype(float)).all()
    assert not out["early"].isna().any() and (out["cls"][late] == MISSING_CATEGORY).all()
    # the threshold is the protocol's
    imp, _ = fit_imputer(frame, kinds, Protocol(structural_above=70.0))
    assert imp.indicators == {}


def test_prepare_adds_the_indicator_and_reports_it(reg, layout):  # noqa: F811
    raw = make_raw()
    rng = np.random.default_rng(5)
    raw.loc[rng.random(len(raw)) < 0.55, "X1TXMTSCOR"] = np.nan  # planted: more than 40% missing
    p = prepare(raw, spec_for(), reg, layout, Protocol(min_analytic_n=500))
    rec = p.report["missingness"]["X1TXMTSCOR"]
    assert rec["structural"] and rec["indicator"] == "X1TXMTSCOR__not_observed" and "missing_indicator" in rec["method"]
    assert "X1TXMTSCOR__not_observed" in p.train_X.columns and "X1TXMTSCOR__not_observed" in p.test_X.columns
    assert p.report["feature_sources"]["X1TXMTSCOR__not_observed"] == "X1TXMTSCOR"
    assert not p.report["missingness"]["X1SES"]["structural"]
    assert "structural missingness" in p.report["imputation_protocol"]


# ---- the paper ------------------------------------------------------------------------------------------
def _fixture_paper(tmp_path: Path, regression: bool, with_sample: bool = True, report_changes=None,
                   spec_limitations=None):
    from test_writer import (
        HSLS_PROSE,
        PHRASES,
        REAL_LABELS,
        TEMPLATE,
        _real_figures,
        real_artifacts,
        regression_variant,
    )

    from edm_ars.writer import build_paper

    arts = real_artifacts()
    if regression:
        arts = regression_variant(arts)
    d = arts["data_report"]
    if spec_limitations is not None:
        arts["spec"]["limitations"] = spec_limitations
    if report_changes:
        report_changes(d)
    rng = np.random.default_rng(0)
    names = d["predictors_before"]
    kinds = {v: d["missingness"][v].get("kind", "continuous") for v in names}
    n = 300
    X = pd.DataFrame({v: (rng.normal(0, 1, n) if k == "continuous" else rng.choice(["1", "2", "3"], n))
                      for v, k in kinds.items()})
    y = pd.Series((rng.random(n) < 0.4).astype(float) if not regression else rng.normal(0, 1, n))
    prot = pd.DataFrame({a: rng.choice(["1", "2"], n) for a in d.get("protected") or []})
    flow = sample_flow(d["original_n"], n, n, X, np.arange(240), np.arange(240, n), pd.Series(np.arange(n) // 5),
                       True, prot)
    sample = describe_sample(X, kinds, y, d["task"], prot, flow) if with_sample else None
    figs = _real_figures(tmp_path / "round_0", arts["results"])
    out = tmp_path / "paper"
    build_paper(arts["spec"], arts["literature"], d, arts["results"], arts["review"], figures_dir=figs,
                template=TEMPLATE, out_dir=out, phrases=PHRASES, registry_labels=REAL_LABELS, dataset=HSLS_PROSE,
                sample=sample)
    return out, arts, sample


def _limitations(tex: str) -> str:
    return tex[tex.index("%%BEGIN:LIMITATIONS%%"):tex.index("%%END:LIMITATIONS%%")]


@pytest.mark.parametrize("regression", [False, True])
def test_the_paper_has_table_one_and_the_flow_and_they_reconcile(tmp_path, regression):
    from edm_ars.writer.verify import verify_paper

    out, arts, sample = _fixture_paper(tmp_path, regression)
    tex = (out / "paper.tex").read_text()
    data = tex[tex.index("\\subsection{Data"):tex.index("\\subsection", tex.index("\\subsection{Data") + 5)]
    assert "\\label{tab:sample}" in data and "\\label{tab:flow}" in data and "\\begin{table*}" in data
    lim = _limitations(tex)
    assert "Data preparation warning" not in lim or not re.search(r"warning: \S+ is .{0,40}missing in the training",
                                                                    lim)
    assert "missing-share column of Table~\\ref{tab:sample}" in lim
    # the predictor table no longer repeats the missing shares
    pred = tex[tex.index("\\label{tab:predictors}"):]
    assert "& Missing" not in pred[:pred.index("\\end{table}")]
    names = {"spec": "research_spec.json", "literature": "literature_context.json", "data_report": "data_report.json",
             "results": "results.json", "review": "review_report.json"}
    given = {names[k]: v for k, v in arts.items() if k in names} | {"sample.json": sample}
    report = verify_paper(out / "paper.tex", artifacts=given)
    assert report.ok and not report.warnings, report.summary()
    macros = json.loads((out / "numbers.json").read_text())["macros"]
    assert sum(1 for m in macros if m["source"].startswith("sample.json:")) > 20
    # a planted wrong number in sample.json is caught
    bad = copy.deepcopy(sample)
    bad["flow"]["raw_n"] += 1000
    bad["predictors"][0]["pct_missing"] += 5
    report = verify_paper(out / "paper.tex", artifacts=given | {"sample.json": bad})
    assert not report.ok, report.summary()
    assert {"sample.json:flow.raw_n", "sample.json:predictors.0.pct_missing"} <= {
        n.source for n in report.numbers if n.status == "unmatched"}, report.summary()


def test_limitations_keep_one_missing_sentence_without_table_one(tmp_path):
    out, _, _ = _fixture_paper(tmp_path, regression=False, with_sample=False)
    tex = (out / "paper.tex").read_text()
    lim = _limitations(tex)
    assert not re.search(r"\\item Data preparation warning: \S+ is", lim), lim
    assert len(re.findall(r"missing-share column", lim)) == 1 and "tab:predictors" in lim
    assert "tab:sample" not in tex


def test_levels_follow_the_codebook_order_whether_the_data_hold_codes_or_labels():
    from edm_ars.data.sample import codebook_order

    values = {1: "First quintile (lowest)", 2: "Second quintile", 3: "Third quintile", 10: "Tenth"}
    order = codebook_order(values)
    labels_data = pd.Series(["Third quintile", "First quintile (lowest)", "Tenth", "Second quintile", "Zeta"] * 4)
    codes_data = pd.Series(["3", "1", "10", "2", "2"] * 4)
    y = pd.Series(np.arange(20, dtype=float))
    by_label = describe_variable("q", labels_data, "categorical", y, "regression", [], {}, None, 8, order)
    assert [lv["value"] for lv in by_label["levels"]] == ["First quintile (lowest)", "Second quintile",
                                                         "Third quintile", "Tenth", "Zeta"]
    by_code = describe_variable("q", codes_data, "categorical", y, "regression", [],
                                {"1": "First quintile (lowest)", "2": "Second quintile", "3": "Third quintile",
                                 "10": "Tenth"}, None, 8, order)
    assert [lv["label"] for lv in by_code["levels"]] == ["First quintile (lowest)", "Second quintile",
                                                        "Third quintile", "Tenth"]


def test_the_methods_name_the_structurally_missing_predictors_and_what_they_received(tmp_path):
    def plant(d):
        d["missingness"]["X1MTHEFF"].update(structural=True, indicator="X1MTHEFF__not_observed",
                                            method="iterative_imputer + missing_indicator (structural)")
        d["missingness"]["X1PAREDEXPCT"].update(structural=True)
        d["duplicated_columns"] = {"X1PAREDU__Missing_imputation_category": "X1PAREDEXPCT__Missing_imputation_category"}

    out, _, _ = _fixture_paper(tmp_path, regression=False, report_changes=plant)
    tex = (out / "paper.tex").read_text()
    pre = tex[tex.index("\\subsection{Preprocessing"):]
    pre = pre[:pre.index("\\subsection", 5)]
    assert "\\NStructural{} predictors, \\texttt{X1PAREDEXPCT} and \\texttt{X1MTHEFF}, were missing" in pre, pre
    assert "received a missing indicator" in pre and "explicit missing category" in pre
    assert "\\texttt{X1PAREDU\\_\\_Missing\\_imputation\\_category}" in pre
    numbers = {m["macro"]: m for m in json.loads((out / "numbers.json").read_text())["macros"]}
    assert numbers["\\NStructural"]["value"] == "2" and numbers["\\StructuralAbovePct"]["value"] == "40.0\\%"
    # without a structural predictor the sentence is absent
    out, _, _ = _fixture_paper(tmp_path / "none", regression=False)
    assert "missing indicator beside" not in (out / "paper.tex").read_text()


def test_table_one_prints_means_rounded_as_printed():
    from edm_ars.writer.table_one import fmt_fixed

    assert fmt_fixed(-0.0004, 2) == "0.00" and fmt_fixed(0.0004, 2) == "0.00"
    assert fmt_fixed(-0.37, 2) == "$-$0.37" and fmt_fixed(498.402, 1) == "498.4"


@pytest.mark.parametrize("said", [True, False])
def test_a_structural_outcome_is_one_limitation_not_two(tmp_path, said):
    """The engineer's note on a structurally missing outcome is left out when the specification's limitations (from
    the registry) already say the outcome is missing, and kept otherwise."""
    note = ("Outcome X4EVRATNDCLG has structural missingness (26.2% in full dataset); analytic sample represents "
            "students with a valid record. This is a population restriction, not random dropout.")

    def plant(d):
        d["warnings"] = [*d.get("warnings", []), note]

    out, arts, _ = _fixture_paper(tmp_path, regression=False, report_changes=plant,
                                  spec_limitations=(["The outcome is missing for 26.2% of the students in the file."]
                                                    if said else []))
    lim = _limitations((out / "paper.tex").read_text())
    assert ("structural missingness" in lim) is not said, lim


def test_an_audited_numeric_scale_is_described_as_the_audit_groups_it():
    """A protected attribute with many numeric values is binned into quintiles by the audit, so Table 1 describes it
    like a continuous predictor (mean, SD, r), not as a list of its raw values; coded groups stay groups."""
    rng = np.random.default_rng(0)
    n = 300
    y = pd.Series(rng.normal(size=n))
    X = pd.DataFrame({"x": rng.normal(size=n)})
    protected = pd.DataFrame({"ses": rng.integers(10, 51, n).astype(float),             # a scale: 41 values
                              "coded": rng.choice([1, 2, 3], n),                        # labelled codes
                              "many_codes": rng.integers(0, 20, n)})                    # 20 codes, every one labelled
    labels = {"coded": {"1": "low", "2": "middle", "3": "high"},
              "many_codes": {str(k): f"group {k}" for k in range(20)}}
    out = describe_sample(X, {"x": "continuous"}, y, "regression", protected, {}, labels=labels)
    kinds = {rec["name"]: rec["kind"] for rec in out["audited"]}
    assert kinds == {"ses": "continuous", "coded": "categorical", "many_codes": "categorical"}
    ses = next(rec for rec in out["audited"] if rec["name"] == "ses")
    assert ses["mean"] == pytest.approx(protected["ses"].mean()) and "levels" not in ses
    assert ses["corr"] == pytest.approx(np.corrcoef(protected["ses"], y)[0, 1])
