"""The causal study's figures (edm_ars.causal.figures): the love plot and, for an observational design, the
propensities by arm; each a PDF with its PNG, showing what the results hold."""

from __future__ import annotations

import numpy as np
import pytest
from test_causal_estimate import FAST, OBSERVATIONAL, RANDOMIZED, confounded, experiment

from edm_ars.analysis.figures import texts_outside
from edm_ars.causal import figures as cf
from edm_ars.causal.estimate import estimate
from edm_ars.core.errors import DataError


def test_a_randomised_study_gets_the_balance_figure_only(tmp_path, monkeypatch):
    frame, _ = experiment(n_schools=6, per=30, seed=1)
    results = estimate(frame, RANDOMIZED, FAST, seed=1)
    drawn = []
    monkeypatch.setattr(cf, "save_figure", lambda fig, path, _s=cf.save_figure: (
        drawn.append((fig, texts_outside(fig))), _s(fig, path))[1])
    names = cf.causal_figures(frame, results, tmp_path)
    assert names == ["balance.pdf", "balance.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    assert all((tmp_path / n).stat().st_size > 1000 for n in names)
    facts = cf.balance_figure(results, tmp_path / "again.pdf")
    ax = facts["axes"][0]
    assert ax["y"]["categories"] == ["Sex: boy", "Sex: girl", "X"]  # bottom to top: the table's order reversed
    assert [s["n"] for s in ax["series"]] == [3] and ax["legend"]["entries"] == ["Between arms"]
    assert drawn and drawn[0][1] == []  # no text leaves the figure


def test_an_observational_study_gets_weighted_balance_and_overlap(tmp_path):
    frame, _ = confounded(n=800, seed=2)
    results, e = estimate(frame, OBSERVATIONAL, FAST, seed=1, return_propensity=True)
    names = cf.causal_figures(frame, results, tmp_path, propensity=e)
    assert names == ["balance.pdf", "balance.png", "overlap.pdf", "overlap.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    facts = cf.balance_figure(results, tmp_path / "b.pdf")["axes"][0]
    assert facts["legend"]["entries"] == ["Unweighted", "Inverse-probability weighted"]
    t = frame["treated"].to_numpy()
    keep = np.isfinite(e)
    over = cf.overlap_figure(e[keep], t[keep], tmp_path / "o.pdf")["axes"][0]
    assert over["legend"]["entries"] == ["Treated", "Control"] and len(over["series"]) == 2
    with pytest.raises(DataError, match="needs the cross-fitted propensities"):
        cf.causal_figures(frame, results, tmp_path / "x")
    with pytest.raises(DataError, match="must align with the rows"):
        cf.causal_figures(frame, results, tmp_path / "x", propensity=e[:-1])


def test_the_love_plot_names_covariates_and_keeps_the_largest_twenty(tmp_path):
    """Rows read 'Label: level' (never a frame column's name); past FIGURE_ROWS features only the largest |SMD|."""
    rows = [{"feature": f"x__birth=Q{i}", "covariate": "birth", "smd": 0.001 * i, "smd_weighted": None}
            for i in range(24)]
    rows += [{"feature": "x__ethnicity__missing", "covariate": "ethnicity", "smd": -0.5, "smd_weighted": None},
             {"feature": "x__lunchk=Not qualified for free lunch", "covariate": "lunchk", "smd": 0.4,
              "smd_weighted": None}]
    results = {"balance": {"threshold": 0.1, "rows": rows, "max_abs_smd_weighted": None}}
    labels = {"birth": "Birth quarter of the student", "ethnicity": "Ethnicity of the student"}
    names = cf.balance_figure(results, tmp_path / "b.pdf", labels=labels)["axes"][0]["y"]["categories"]
    assert len(names) == cf.FIGURE_ROWS == 20
    assert names[0] == "Not qualified for free lunch" and names[1] == "Ethnicity: missing"
    assert "Birth quarter: Q23" in names and "Birth quarter: Q5" not in names  # the smallest |SMD| left out
    assert not any("x__" in n or "=" in n for n in names)
