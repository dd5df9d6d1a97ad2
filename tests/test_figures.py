"""Figure text: labels wrapped rather than cut, and a check that no text leaves the figure."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import pytest

from edm_ars.figures import ELLIPSIS, texts_outside, wrap_label

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

    import edm_ars.figures as figures

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
