"""Figures of the causal study (matplotlib, headless, the project's figure style): a love plot of the absolute
standardised mean differences (balance.pdf) and, for an observational design, the cross-fitted propensities by
arm (overlap.pdf); each PDF with its PNG rendering next to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from edm_ars.analysis.figures import AXIS_LABEL_WIDTH, REFERENCE, plt, png_path, save_figure, wrap_label
from edm_ars.causal.labels import FIGURE_ROWS, feature_label
from edm_ars.core.errors import DataError


def balance_figure(results: dict[str, Any], path: Path, *, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """|SMD| of each feature between the arms, before (and after weighting, when the results have it), with
    the 0.1 threshold; rows named 'Covariate: level' (`labels`: covariate name -> label); with more than
    FIGURE_ROWS features, the FIGURE_ROWS with the largest |SMD| (in the table's order)."""
    bal = results["balance"]
    rows = bal["rows"]
    if not rows:
        raise DataError("the results' balance table has no rows: no balance figure to draw")
    if len(rows) > FIGURE_ROWS:
        keep = sorted(sorted(range(len(rows)), key=lambda i: -abs(float(rows[i]["smd"] or 0)))[:FIGURE_ROWS])
        rows = [rows[i] for i in keep]
    names = [wrap_label(feature_label(r["feature"], r.get("covariate"), labels), AXIS_LABEL_WIDTH, 2) for r in rows]
    y = np.arange(len(rows))[::-1]
    fig, ax = plt.subplots(figsize=(3.3, max(2.0, 0.8 + 0.16 * len(rows))))
    before = [abs(r["smd"]) if r["smd"] is not None else np.nan for r in rows]
    weighted = bal.get("max_abs_smd_weighted") is not None
    ax.scatter(before, y, s=12, marker="o", facecolors="none", edgecolors="C0",
               label="Unweighted" if weighted else "Between arms")
    if weighted:
        after = [abs(r["smd_weighted"]) if r["smd_weighted"] is not None else np.nan for r in rows]
        ax.scatter(after, y, s=12, marker="o", color="C1", label="Inverse-probability weighted")
    ax.axvline(bal["threshold"], ls=":", color="grey", lw=0.8, gid=REFERENCE)
    ax.set_yticks(y, names, fontsize=6)
    ax.set_xlabel("Absolute standardised mean difference")
    ax.set_xlim(left=0)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=6, frameon=False)
    fig.tight_layout()
    return save_figure(fig, path)


def overlap_figure(propensity: np.ndarray, treated: np.ndarray, path: Path) -> dict[str, Any]:
    """Histograms of the cross-fitted propensity of the treated and the control rows."""
    fig, ax = plt.subplots(figsize=(3.3, 2.6))
    bins = np.linspace(0, 1, 41)
    ax.hist(propensity[treated == 1], bins=bins, alpha=0.6, color="C1", label="Treated", density=True)
    ax.hist(propensity[treated == 0], bins=bins, alpha=0.6, color="C0", label="Control", density=True)
    ax.set_xlabel("Cross-fitted propensity of treatment")
    ax.set_ylabel("Density")
    ax.set_xlim(0, 1)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=6, frameon=False)
    fig.tight_layout()
    return save_figure(fig, path)


def causal_figures(frame: pd.DataFrame, results: dict[str, Any], out_dir: str | Path, *,
                   propensity: np.ndarray | None = None, labels: dict[str, str] | None = None) -> list[str]:
    """Write balance.pdf (+ .png) and, for an observational design, overlap.pdf (+ .png) into `out_dir`; returns
    the names of the files written. `propensity`: the cross-fitted propensity of each row of `frame` (NaN for a
    row not analysed), as estimate(..., return_propensity=True) returns it; needed for an observational design. `labels`: covariate
    name -> label, for the love plot's rows."""
    out = Path(out_dir)
    written = []
    balance_figure(results, out / "balance.pdf", labels=labels)
    written += ["balance.pdf", "balance.png"]
    if results.get("design") == "observational":
        if propensity is None:
            raise DataError("an observational design's overlap figure needs the cross-fitted propensities "
                            "(estimate(..., return_propensity=True))")
        e = np.asarray(propensity, dtype=float)
        if len(e) != len(frame) or "treated" not in frame.columns:
            raise DataError(f"the propensities ({len(e)}) must align with the rows of the analytic frame "
                            f"({len(frame)}), which needs its column treated")
        t = pd.to_numeric(frame["treated"], errors="coerce").to_numpy()
        keep = np.isfinite(e) & np.isfinite(t)
        overlap_figure(e[keep], t[keep], out / "overlap.pdf")
        written += ["overlap.pdf", png_path(Path("overlap.pdf")).name]
    return written
