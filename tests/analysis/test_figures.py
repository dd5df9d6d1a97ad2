"""Figure text: labels wrapped rather than cut, and a check that no text leaves the figure."""

from __future__ import annotations

import re
import textwrap

import matplotlib.pyplot as plt
import pytest

from edm_ars.analysis.figures import ELLIPSIS, texts_outside, wrap_label

LONG = "X2 How far in school sample member thinks he/she will get after high school, as reported in the spring"


def assert_whole_or_cut_by_the_rule(shown: str, full: str, width: int, max_lines: int) -> None:
    """The label rule of the figures: at most `max_lines` lines of at most `width` characters; all of the text when it
    fits in those lines, else its beginning (whole words) and an ellipsis."""
    lines = shown.split("\n")
    assert len(lines) <= max_lines and all(len(line) <= width for line in lines), shown

    def squash(s: str) -> str:
        return "".join(s.split())

    if shown.endswith(ELLIPSIS):
        assert len(textwrap.wrap(full, width)) > max_lines, f"{full!r} fits in {max_lines} lines but was cut"
        assert squash(full).startswith(squash(shown[:-1])), shown
    else:
        assert squash(shown) == squash(full), (shown, full)


@pytest.mark.parametrize("text, width, max_lines, expected", [
    ("Female", 28, 3, "Female"),
    ("Black/African-American, non-Hispanic", 28, 3, "Black/African-American, non-\nHispanic"),
    ("X1 Student's race/ethnicity-composite", 24, 2, "X1 Student's\nrace/ethnicity-composite"),
    (LONG, 30, 2, "X2 How far in school sample\nmember thinks he/she will get\u2026"),
    (LONG, 28, 2, "X2 How far in school sample\nmember thinks he/she will\u2026"),
    ("  spaces   inside\nand breaks ", 40, 1, "spaces inside and breaks"),
])
def test_wrap_label(text, width, max_lines, expected):
    shown = wrap_label(text, width, max_lines)
    assert shown == expected
    assert_whole_or_cut_by_the_rule(shown, text, width, max_lines)


@pytest.mark.parametrize("width, max_lines", [(8, 1), (12, 2), (20, 3), (30, 3), (60, 2)])
def test_wrap_label_follows_the_rule_for_any_width(width, max_lines):
    for text in (LONG, "Supercalifragilisticexpialidocious students", "a", ""):
        assert_whole_or_cut_by_the_rule(wrap_label(text, width, max_lines), text, width, max_lines)


def test_texts_outside_finds_a_clipped_title_and_passes_a_fitting_one():
    fig, ax = plt.subplots(figsize=(2.0, 1.5))
    fig.subplots_adjust(left=0.25, right=0.85, bottom=0.25, top=0.6)
    ax.set_title(LONG, loc="left")  # the way the fairness panels were titled: runs off the right edge
    assert texts_outside(fig) == [LONG]
    ax.set_title(wrap_label(LONG, 30, 4), loc="left", fontsize=6)
    ax.set_yticks([0, 1], ["a", "b"])
    assert texts_outside(fig) == []
    ax.axis("off")  # tick labels of an axes drawn without its axes are not drawn, so not checked
    ax.set_yticks([0, 1], ["a" * 80, "b"])
    assert texts_outside(fig) == []
    plt.close(fig)


def test_evaluation_figures_wrap_a_long_model_name(monkeypatch, tmp_path):
    import numpy as np

    import edm_ars.analysis.figures as figures

    drawn = []
    monkeypatch.setattr(figures, "_save", lambda fig, path: (fig.tight_layout(), drawn.append(fig)))
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 2, 300), rng.uniform(size=300)
    name = "Stacking (a logistic meta-learner on the out-of-fold predictions of five families)"
    labels = {"logistic": "Logistic regression (L2)", "stacking": name}
    figures.roc_figure(y, {k: p for k in labels}, labels, {k: 0.8123 for k in labels}, tmp_path / "roc.pdf")
    figures.calibration_figure(y, p, name, tmp_path / "calibration.pdf")
    figures.observed_predicted_figure(p, p, name, tmp_path / "observed.pdf")
    figures.residual_figure(p, p, name, tmp_path / "residuals.pdf")
    assert [texts_outside(fig) for fig in drawn] == [[], [], [], []]
    assert_whole_or_cut_by_the_rule(drawn[2].axes[0].get_ylabel(), f"Predicted ({name})", figures.AXIS_LABEL_WIDTH, 2)
    legend = [t.get_text() for t in drawn[0].axes[0].get_legend().get_texts()]
    assert legend[0] == "Logistic regression (L2) (AUC 0.812)" and legend[1].endswith(" (AUC 0.812)")  # AUC kept
    for fig in drawn:
        plt.close(fig)


# ---- PNG renderings and the record of what each figure shows -----------------------------------------------
def _small_run(out):
    """The figures of a small binary study drawn by the Analyst's own code into `out` (as in a run's round folder),
    with the results entries a run records: ROC and calibration of two models, the SHAP summary and importance of a
    linear model (exact linear SHAP values), and the fairness audit of three protected attributes, one of them SES
    binned into quintiles whose AUCs do not rise with the quintile (a figure sorted by metric scrambles them)."""
    import numpy as np
    import pandas as pd

    import edm_ars.analysis.figures as figures
    from edm_ars.analysis.explain import top_features
    from edm_ars.analysis.explain_figures import importance_figure, summary_figure
    from edm_ars.analysis.fairness import audit
    from edm_ars.analysis.fairness_figures import fairness_figure

    rng = np.random.default_rng(5)
    n = 2000
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=["gpa", "ses", "expect", "absent"])
    sex = rng.choice(["Female", "Male"], n)
    race = rng.choice(["Asian", "Black", "Hispanic", "White"], n)
    logit = 1.2 * X["gpa"] + 0.6 * X["ses"] + 0.4 * X["expect"] - 0.3 * X["absent"]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(float).to_numpy()
    q = pd.qcut(X["ses"], 5, labels=False).to_numpy()
    noise = np.array([0.2, 2.5, 0.4, 1.8, 0.1])[q]  # the 2nd and 4th quintile predicted worst
    prob = 1 / (1 + np.exp(-(logit + rng.normal(0, 1, n) * noise))).to_numpy()
    weak = 1 / (1 + np.exp(-(0.5 * X["gpa"]).to_numpy()))
    labels = {"logistic": "Logistic regression (L2)", "weak": "One-predictor logistic regression"}
    coef = np.array([1.2, 0.6, 0.4, -0.3])
    shap = (X - X.mean()).to_numpy() * coef
    names = {"gpa": "Grade point average", "ses": "Socio-economic status", "expect": "Educational expectations",
             "absent": "Days absent"}
    sources = {c: c for c in X.columns}
    top = top_features(shap, X, sources, names, k=4)
    result = audit("binary_classification", y, prob, pd.DataFrame({"X1SEX": sex, "X1RACE": race, "X1SES": X["ses"]}),
                   ["X1SEX", "X1RACE", "X1SES"], n_resamples=50, seed=1,
                   labels={"X1SEX": "Sex", "X1RACE": "Race/ethnicity", "X1SES": "Socio-economic status"})
    drawn = {
        "evaluate/roc": figures.roc_figure(y, {"logistic": prob, "weak": weak}, labels, {"logistic": 0.8, "weak": 0.7},
                                           out / "figures/evaluate/roc.pdf"),
        "evaluate/calibration": figures.calibration_figure(y, prob, labels["logistic"],
                                                           out / "figures/evaluate/calibration.pdf"),
        "explain/shap_summary": summary_figure(shap, X, sources, names, out / "figures/explain/shap_summary.pdf"),
        "explain/shap_importance": importance_figure(top, out / "figures/explain/shap_importance.pdf"),
        "fairness/fairness": fairness_figure(result, out / "figures/fairness/fairness.pdf",
                                             attributes=["X1SEX", "X1RACE", "X1SES"]),
    }
    entries = [{"path": f"figures/{k}.pdf", "kind": k.split("/")[1], "caption": "A figure.",
                "png": f"figures/{k}.png", "drawn": d} for k, d in drawn.items()]
    return {"figures": entries, "top_features": top, "fairness": result}


@pytest.mark.slow
def test_every_figure_is_written_as_pdf_and_a_png_next_to_it_byte_identical_on_a_rerun(tmp_path):
    from edm_ars.review.model_critic import MAX_IMAGE_BYTES

    first, second = _small_run(tmp_path / "a"), _small_run(tmp_path / "b")
    assert first == second  # the same record of what each figure shows
    for f in first["figures"]:
        pdf, png = tmp_path / "a" / f["path"], tmp_path / "a" / f["png"]
        assert png == pdf.with_suffix(".png")
        assert pdf.read_bytes().startswith(b"%PDF") and png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        assert 1000 < png.stat().st_size < MAX_IMAGE_BYTES / 10, (png, png.stat().st_size)  # well under the limit
        for name in (f["path"], f["png"]):  # no date, no version: the same bytes for the same inputs
            assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
        assert b"CreationDate" not in pdf.read_bytes() and b"Software" not in png.read_bytes()


@pytest.mark.slow
def test_the_figures_of_a_small_run_record_what_they_show_and_pass_the_sanity_check(tmp_path):
    import json

    import jsonschema

    from edm_ars.analysis.figure_sanity import figures_problems
    from edm_ars.core.artifacts import schema

    results = _small_run(tmp_path)
    assert figures_problems(results) == []
    item = schema("results")["properties"]["figures"]["items"]
    for f in results["figures"]:
        jsonschema.validate(f, item)
        json.dumps(f, allow_nan=False)
    facts = {f["kind"]: f["drawn"] for f in results["figures"]}
    [roc] = facts["roc"]["axes"]
    assert roc["x"]["label"] == "False-positive rate" and roc["y"]["label"] == "True-positive rate"
    assert roc["legend"]["entries"] == ["Logistic regression (L2) (AUC 0.800)",
                                        "One-predictor logistic regression (AUC 0.700)"]
    assert [s["label"] for s in roc["series"]] == roc["legend"]["entries"]  # the chance diagonal is a guide
    sex, race, ses = facts["fairness"]["axes"]
    assert [p["panel"] for p in (sex, race, ses)] == ["X1SEX", "X1RACE", "X1SES"]
    def names(axis):  # each group's name, its size on a second line
        assert all(re.search(r"\n\(n = [\d,]+\)$", c) for c in axis["categories"]), axis["categories"]
        return [c.split("\n(n = ")[0] for c in axis["categories"]]

    assert names(ses["y"]) == ["Q1 (lowest)", "Q2", "Q3", "Q4", "Q5 (highest)"]  # in order, not by AUC
    by_auc = {g["group"]: g["metric"] for g in results["fairness"]["attributes"]["X1SES"]["groups"]}
    assert sorted(by_auc, key=by_auc.get) != names(ses["y"])  # (sorting by AUC would have scrambled them)
    aucs = {g["group"]: g["metric"] for g in results["fairness"]["attributes"]["X1RACE"]["groups"]}
    assert names(race["y"]) == sorted(aucs, key=aucs.get)  # a nominal attribute: by metric
    assert ses["x"]["label"] == "AUC (95% bootstrap CI)" and sex["x"]["label"] == ""  # shared, labelled once
    assert sex["x"]["shared_with"] == [1, 2] and len(sex["series"]) == 1  # the whole-sample line is a guide
    [summary] = facts["shap_summary"]["axes"]
    assert summary["panel"] == "ranking" and len(summary["series"]) == 1 and summary["series"][0]["n"] == 4 * 2000
    assert summary["y"]["categories"] == [t["label"] for t in reversed(results["top_features"])]  # largest on top
    assert facts["shap_summary"]["colorbars"] == [{"label": "Feature value (grey: categorical)"}]


def test_the_record_is_read_from_the_drawn_figure_so_a_drawn_defect_is_caught(tmp_path):
    """Figures drawn with a defect (no x label; two series, no legend; quintiles out of order) record it, and the
    sanity check names it."""
    from edm_ars.analysis.figure_sanity import figure_problems
    from edm_ars.analysis.figures import save_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    ax.plot([0, 1], [1, 0])
    ax.set_ylabel("Score")
    drawn = save_figure(fig, tmp_path / "bad.pdf")
    assert (tmp_path / "bad.png").is_file()
    assert drawn["axes"][0]["x"]["label"] == "" and drawn["axes"][0]["legend"] is None
    problems = figure_problems({"kind": "bad", "path": "bad.pdf", "drawn": drawn}, {})
    assert problems == ["figure bad (bad.pdf), panel 1: the x axis has no label",
                        "figure bad (bad.pdf), panel 1: 2 series are plotted but there is no legend"]
    fig, ax = plt.subplots()
    ax.bar(range(3), [3, 1, 2])
    ax.set_xticks(range(3), ["Third quintile", "First quintile", "Second quintile"])
    ax.set_ylabel("Share")
    drawn = save_figure(fig, tmp_path / "bars.pdf")
    assert drawn["axes"][0]["x"]["kind"] == "categorical" and drawn["axes"][0]["series"][0]["kind"] == "bar"
    [problem] = figure_problems({"kind": "bars", "path": "bars.pdf", "drawn": drawn}, {})
    assert "are not in the places the labels state" in problem


def test_figures_kept_from_the_previous_round_bring_their_png(tmp_path):
    """The explain phase keeps an unchanged interpreted model's explanation and copies its figures from the
    previous round's folder: the PNG renderings come along, and the record of what each figure shows."""
    import pandas as pd

    from edm_ars.analysis.explain_phase import explain_models

    earlier_dir, fig_dir = tmp_path / "round_0", tmp_path / "round_1"
    earlier_dir.mkdir()
    for name in ("shap_summary", "shap_importance"):
        (earlier_dir / f"{name}.pdf").write_bytes(b"%PDF-1.4 " + name.encode())
        (earlier_dir / f"{name}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + name.encode())
    cfg = {"background": 10, "max_samples": 50, "other_samples": 20, "kernel_samples": 10, "timeout_s": 5}
    inputs = {"model": "models/logistic.joblib", "max_samples": 50}
    figs = [{"path": f"figures/explain/{n}.pdf", "kind": n, "caption": "c", "png": f"figures/explain/{n}.png",
             "drawn": {"axes": [], "colorbars": [], "legends": []}} for n in ("shap_summary", "shap_importance")]
    earlier = {"interpreted_model": "logistic", "figures": figs,
               "by_model": {"logistic": {"inputs": inputs, "top_features": [{"feature": "a"}]}}}
    evaluation = {"interpreted_model": "logistic", "task": "binary_classification", "above_floor": ["logistic"],
                  "models": {"logistic": {"label": "Logistic regression"}}}
    X = pd.DataFrame({"a": range(20)})
    doc = explain_models(evaluation, {"logistic": "models/logistic.joblib"}, lambda f: None, X, X, {"a": "a"},
                         {}, cfg, 0, fig_dir, earlier=earlier, earlier_figures=earlier_dir)
    assert doc["figures"] == figs
    for name in ("shap_summary.pdf", "shap_summary.png", "shap_importance.pdf", "shap_importance.png"):
        assert (fig_dir / name).read_bytes() == (earlier_dir / name).read_bytes()


def test_shap_captions_name_all_predictors_when_there_are_fewer_than_ten(tmp_path):
    """With three predictors the SHAP figures show all three: their captions say so, never "the ten most
    important predictors" (issue 33)."""
    import numpy as np
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    from edm_ars.analysis.explain_phase import explain_models

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(120, 3)), columns=["a", "b", "c"])
    y = (X["a"] + 0.5 * X["b"] + rng.normal(size=120) > 0).astype(int)
    model = LogisticRegression().fit(X, y)
    cfg = {"background": 20, "max_samples": 40, "other_samples": 20, "kernel_samples": 20, "timeout_s": 60}
    evaluation = {"interpreted_model": "logistic", "task": "binary_classification", "above_floor": ["logistic"],
                  "models": {"logistic": {"label": "Logistic regression"}}}
    fig_dir = tmp_path / "explain"
    fig_dir.mkdir()
    doc = explain_models(evaluation, {"logistic": "m.joblib"}, lambda f: model, X, X, {c: c for c in X}, {}, cfg, 0,
                         fig_dir)
    captions = [f["caption"] for f in doc["figures"]]
    assert len(captions) == 2, doc.get("errors")
    assert all("all 3 predictors" in c and "ten most important" not in c for c in captions)
