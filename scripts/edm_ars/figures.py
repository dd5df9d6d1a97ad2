"""Result figures (matplotlib, headless): written as PDF for LaTeX."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.metrics import roc_curve  # noqa: E402

plt.rcParams.update({"font.size": 8, "pdf.fonttype": 42, "svg.hashsalt": "edm-ars"})


def _save(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, metadata={"CreationDate": None, "ModDate": None})
    plt.close(fig)


def roc_figure(y: np.ndarray, predictions: dict[str, np.ndarray], labels: dict[str, str],
               aucs: dict[str, float], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(3.3, 3.0))
    for name, prob in predictions.items():
        fpr, tpr, _ = roc_curve(y, prob)
        ax.plot(fpr, tpr, lw=1.2, label=f"{labels[name]} (AUC {aucs[name]:.3f})")
    ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=0.8)
    ax.set_xlabel("False-positive rate")
    ax.set_ylabel("True-positive rate")
    ax.legend(loc="lower right", fontsize=6, frameon=False)
    _save(fig, path)


def calibration_figure(y: np.ndarray, prob: np.ndarray, label: str, path: Path, bins: int = 10) -> None:
    edges = np.quantile(prob, np.linspace(0, 1, bins + 1))
    idx = np.clip(np.searchsorted(edges, prob, side="right") - 1, 0, bins - 1)
    mean_pred = np.array([prob[idx == b].mean() for b in range(bins) if (idx == b).any()])
    mean_obs = np.array([y[idx == b].mean() for b in range(bins) if (idx == b).any()])
    fig, ax = plt.subplots(figsize=(3.3, 3.0))
    ax.plot([0, 1], [0, 1], ls=":", color="grey", lw=0.8)
    ax.plot(mean_pred, mean_obs, marker="o", ms=3, lw=1.2, label=label)
    ax.set_xlabel("Mean predicted probability (decile)")
    ax.set_ylabel("Observed proportion")
    ax.legend(loc="upper left", fontsize=6, frameon=False)
    _save(fig, path)


def observed_predicted_figure(y: np.ndarray, pred: np.ndarray, label: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(3.3, 3.0))
    ax.scatter(y, pred, s=2, alpha=0.3, rasterized=True)
    lo, hi = float(min(y.min(), pred.min())), float(max(y.max(), pred.max()))
    ax.plot([lo, hi], [lo, hi], ls=":", color="grey", lw=0.8)
    ax.set_xlabel("Observed")
    ax.set_ylabel(f"Predicted ({label})")
    _save(fig, path)


def residual_figure(y: np.ndarray, pred: np.ndarray, label: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(3.3, 3.0))
    ax.scatter(pred, y - pred, s=2, alpha=0.3, rasterized=True)
    ax.axhline(0, ls=":", color="grey", lw=0.8)
    ax.set_xlabel(f"Predicted ({label})")
    ax.set_ylabel("Residual")
    _save(fig, path)
