"""SHAP explanations of fitted models: explainer choice per family, grouping back to source variables, figures.

Tree ensembles use TreeSHAP (exact, path-dependent), linear pipelines use the linear explainer on the
standardized inputs (values map 1:1 to the original columns), and anything else (the MLP) uses shap's
KernelExplainer on a small seeded background, bounded in rows and wall-clock time. Stacking ensembles are
never explained.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from edm_ars.analysis.figure_sanity import RANKING  # noqa: E402
from edm_ars.analysis.figures import REFERENCE, fit_text, n_lines, png_path, save_figure, wrap_label  # noqa: E402
from edm_ars.core.conventions import BINARY, LINEAR_FAMILIES, STACKING  # noqa: E402
from edm_ars.core.errors import ExplainSkipped, SHAPTimeout  # noqa: E402

log = logging.getLogger("edm_ars")

TREE_FAMILIES = {"random_forest", "xgboost"}
AGNOSTIC_FAMILIES = {"mlp"}
NEVER_EXPLAINED = {STACKING: "SHAP is not computed for stacking"}

TREE_CHUNK = 500       # rows per TreeSHAP call (the timeout is checked between chunks)
AGNOSTIC_CHUNK = 10    # rows per KernelExplainer call
BACKGROUND_LINEAR = 1000
DIRECTION_MIN_R = 0.1
KERNEL_COALITIONS = 1000

_RC = {"font.size": 7, "axes.titlesize": 8, "axes.labelsize": 7, "xtick.labelsize": 7, "ytick.labelsize": 7,
       "pdf.fonttype": 42, "svg.hashsalt": "edm-ars"}
_POSITIVE, _NEGATIVE, _MIXED = "#c0392b", "#2e6da4", "#8c8c8c"


# ---------------------------------------------------------------------------------------------------------------
# shapes


def as_matrix(values: Any, n_rows: int, n_cols: int) -> np.ndarray:
    """Absorb shap's return shapes into a float (n_rows, n_cols) array.

    Accepts a 2-D array; a list of per-class arrays or a 3-D array with the class axis last, (n, p, classes), or
    first, (classes, n, p) (the positive class, i.e. the last, is taken); a shap.Explanation (its .values); a
    DataFrame. A 1-D array is accepted only for a single row. Raises ValueError naming the shape otherwise.
    """
    original = values
    if hasattr(values, "values") and type(values).__name__ == "Explanation":
        values = values.values
    if isinstance(values, pd.DataFrame):
        values = values.to_numpy()
    if isinstance(values, (list, tuple)):
        try:
            parts = [np.asarray(v, dtype=float) for v in values]
        except (TypeError, ValueError) as e:
            raise ValueError(f"cannot read SHAP values given as a {type(original).__name__}: {e}") from e
        shapes = [p.shape for p in parts]
        if not parts or len(parts) > 2 or len(set(shapes)) != 1:
            raise ValueError(f"expected one or two per-class arrays, got a list of shapes {shapes}")
        arr = parts[-1]
    else:
        try:
            arr = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as e:
            raise ValueError(f"cannot read SHAP values given as a {type(original).__name__}: {e}") from e
    target = (n_rows, n_cols)
    if arr.ndim == 3:
        if arr.shape[:2] == target and arr.shape[2] in (1, 2):
            arr = arr[:, :, -1]
        elif arr.shape[1:] == target and arr.shape[0] in (1, 2):
            arr = arr[-1]
        else:
            raise ValueError(f"cannot read SHAP values of shape {arr.shape} as {target} "
                             "(expected (n, p, classes) or (classes, n, p) with one or two classes)")
    elif arr.ndim == 1 and n_rows == 1 and arr.shape[0] == n_cols:
        arr = arr.reshape(1, n_cols)
    if arr.shape != target:
        raise ValueError(f"SHAP values have shape {arr.shape}, expected {target}")
    return np.ascontiguousarray(arr, dtype=float)


def _scalar(expected: Any) -> float:
    arr = np.atleast_1d(np.asarray(expected, dtype=float)).ravel()
    return float(arr[-1])


# ---------------------------------------------------------------------------------------------------------------
# computing SHAP values


def _sample_rows(X: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """A seeded sample of at most n rows, kept in their original order."""
    if len(X) <= n:
        return X
    pos = np.sort(np.random.default_rng(seed).choice(len(X), size=n, replace=False))
    return X.iloc[pos]


def _is_pipeline(model: Any) -> bool:
    return hasattr(model, "steps") and hasattr(model, "__getitem__")


def _final(model: Any) -> Any:
    return model.steps[-1][1] if _is_pipeline(model) else model


def _prefix_transform(model: Any, X: pd.DataFrame) -> np.ndarray:
    """The data as the pipeline's final estimator sees it (identity for a bare estimator)."""
    if _is_pipeline(model) and len(model.steps) > 1:
        out = model[:-1].transform(X)
    else:
        out = X
    out = out.to_numpy(dtype=float) if isinstance(out, pd.DataFrame) else np.asarray(out, dtype=float)
    if out.shape[1] != X.shape[1]:
        raise ExplainSkipped(f"the pipeline's preprocessing changes the number of columns ({X.shape[1]} -> "
                             f"{out.shape[1]}), so linear SHAP values cannot be mapped to the input columns")
    return out


def _kind(model: Any, family: str) -> str:
    if family in TREE_FAMILIES:
        return "tree"
    if family in LINEAR_FAMILIES:
        return "linear"
    if family in AGNOSTIC_FAMILIES:
        return "agnostic"
    # a family this module does not know: decide from the estimator itself
    final = _final(model)
    coef = getattr(final, "coef_", None)
    single_row = coef is not None and (np.ndim(coef) == 1 or (np.ndim(coef) == 2 and np.shape(coef)[0] == 1))
    if single_row and hasattr(final, "intercept_"):
        return "linear"
    return "tree?"


def _run_chunks(explain: Callable[[pd.DataFrame], np.ndarray], X: pd.DataFrame, chunk: int, start: float,
                timeout_s: float, name: str) -> np.ndarray:
    """Explain X in chunks, checking the wall clock before each one."""
    parts: list[np.ndarray] = []
    for lo in range(0, len(X), chunk):
        elapsed = time.perf_counter() - start
        if elapsed >= timeout_s:
            raise SHAPTimeout(f"timeout after {elapsed:.1f} s (limit {timeout_s:g} s): {name} had explained "
                                 f"{lo} of {len(X)} rows")
        part = X.iloc[lo:lo + chunk]
        parts.append(as_matrix(explain(part), len(part), X.shape[1]))
    if not parts:
        return np.zeros((0, X.shape[1]))
    return np.vstack(parts)


def _tree(model: Any, task: str, X: pd.DataFrame, start: float, timeout_s: float) -> tuple[np.ndarray, dict]:
    import shap

    final = _final(model)
    if _is_pipeline(model) and len(model.steps) > 1:
        X = pd.DataFrame(_prefix_transform(model, X), columns=X.columns, index=X.index)
    explainer = shap.TreeExplainer(final, feature_perturbation="tree_path_dependent")

    def explain(part: pd.DataFrame) -> Any:
        return explainer.shap_values(part, check_additivity=False)

    values = _run_chunks(explain, X, TREE_CHUNK, start, timeout_s, "TreeExplainer")
    units = {"log_odds": "log-odds", "probability": "probability", "raw_value": "outcome units"}
    tree_output = getattr(getattr(explainer, "model", None), "tree_output", None)
    if task != BINARY:
        space = "outcome units"
    else:  # xgboost and boosted trees explain the margin; sklearn forests' leaves hold class proportions
        space = units.get(tree_output, str(tree_output))
    info = {"explainer": "TreeExplainer", "feature_perturbation": "tree_path_dependent", "space": space,
            "expected_value": _scalar(explainer.expected_value), "n_background": 0}
    return values, info


def _linear(model: Any, task: str, X_background: pd.DataFrame, X: pd.DataFrame, seed: int,
            start: float, timeout_s: float) -> tuple[np.ndarray, dict]:
    import shap

    final = _final(model)
    background = _prefix_transform(model, _sample_rows(X_background, BACKGROUND_LINEAR, seed))
    masker = shap.maskers.Independent(background, max_samples=len(background))
    explainer = shap.LinearExplainer(final, masker)
    Z = pd.DataFrame(_prefix_transform(model, X), columns=X.columns, index=X.index)
    values = _run_chunks(lambda part: explainer.shap_values(part.to_numpy()), Z, max(len(Z), 1), start,
                         timeout_s, "LinearExplainer")
    space = "log-odds" if task == BINARY else "outcome units"
    info = {"explainer": "LinearExplainer", "space": space, "inputs": "standardized" if _is_pipeline(model) else "raw",
            "expected_value": _scalar(explainer.expected_value), "n_background": len(background)}
    return values, info


def kernel_coalitions(p: int) -> int:
    """Coalitions evaluated per explained row: all of them when there are few features (exact Shapley values with
    respect to the background), otherwise max(1000, 2p + 256). On 60 features this is about half the cost of
    shap's default 2p + 2048 at a relative RMSE of ~0.12 (vs ~0.07) against a 16,000-coalition reference."""
    if p <= 11:
        return max(2**p - 2, 1)
    return max(KERNEL_COALITIONS, 2 * p + 256)


def _agnostic(model: Any, task: str, X_background: pd.DataFrame, X: pd.DataFrame, seed: int, n_background: int,
              nsamples: int | None, start: float, timeout_s: float) -> tuple[np.ndarray, dict]:
    import shap

    columns = list(X.columns)
    if task == BINARY:
        def f(A: np.ndarray) -> np.ndarray:
            return model.predict_proba(pd.DataFrame(A, columns=columns))[:, 1]
    else:
        def f(A: np.ndarray) -> np.ndarray:
            return np.asarray(model.predict(pd.DataFrame(A, columns=columns)), dtype=float).ravel()

    background = _sample_rows(X_background, n_background, seed).to_numpy(dtype=float)
    explainer = shap.KernelExplainer(lambda A: f(A), background)
    chunk_index = [0]
    nsamples = int(nsamples or kernel_coalitions(X.shape[1]))

    def explain(part: pd.DataFrame) -> Any:
        # KernelExplainer draws coalitions from numpy's global generator: seed it per chunk, then restore it
        state = np.random.get_state()
        np.random.seed((seed + 7919 * chunk_index[0]) % 2**32)
        try:
            return explainer.shap_values(part.to_numpy(dtype=float), nsamples=nsamples, l1_reg=False, silent=True)
        finally:
            np.random.set_state(state)
            chunk_index[0] += 1

    values = _run_chunks(explain, X, AGNOSTIC_CHUNK, start, timeout_s, "KernelExplainer")
    info = {"explainer": "KernelExplainer", "space": "probability" if task == BINARY else "outcome units",
            "expected_value": _scalar(explainer.expected_value), "n_background": len(background),
            "coalitions_per_row": int(min(nsamples, 2 ** min(X.shape[1], 30) - 2))}
    return values, info


def shap_values(model: Any, family: str, task: str, X_background: pd.DataFrame, X_explain: pd.DataFrame, *,
                max_samples: int = 2000, kernel_samples: int = 200, timeout_s: float = 120.0, seed: int = 42,
                background_samples: int = 50, kernel_nsamples: int | None = None
                ) -> tuple[np.ndarray, pd.DataFrame, dict]:
    """SHAP values of a fitted model for a seeded sample of X_explain.

    Returns (values of shape (rows explained, columns), the rows explained in the original feature space, info).
    info: explainer, space (the units of the values: "log-odds", "probability" or "outcome units"),
    n_explained, seconds, expected_value (the base value in that space), n_background, family, task.
    The model-agnostic KernelExplainer (the MLP) explains at most kernel_samples rows against background_samples
    background rows with kernel_nsamples coalitions per row (default: kernel_coalitions(p)), in chunks of
    AGNOSTIC_CHUNK rows. The wall clock is checked before each chunk (of every explainer): past timeout_s,
    SHAPTimeout("timeout after ..."), an ExplainSkipped. Stacking raises ExplainSkipped. A family this module
    does not know is explained as linear if its final estimator has a single coef_ row, else by TreeSHAP if shap accepts the
    estimator, else model-agnostically.
    """
    if family in NEVER_EXPLAINED or type(model).__name__.startswith("Stacking"):
        raise ExplainSkipped(NEVER_EXPLAINED[STACKING])
    if task not in (BINARY, "regression"):
        raise ExplainSkipped(f"SHAP is not computed for task '{task}'")
    if list(X_background.columns) != list(X_explain.columns):
        raise ValueError("X_background and X_explain must have the same columns in the same order")
    start = time.perf_counter()
    kind = _kind(model, family)
    if kind == "tree?":
        import shap

        try:
            shap.TreeExplainer(_final(model), feature_perturbation="tree_path_dependent")
            kind = "tree"
        except Exception:  # shap raises InvalidModelError (or others) for estimators it cannot walk
            kind = "agnostic"
    limit = min(max_samples, kernel_samples) if kind == "agnostic" else max_samples
    X = _sample_rows(X_explain, max(int(limit), 0), seed)
    if kind == "tree":
        values, info = _tree(model, task, X, start, timeout_s)
    elif kind == "linear":
        values, info = _linear(model, task, X_background, X, seed, start, timeout_s)
    else:
        values, info = _agnostic(model, task, X_background, X, seed, background_samples, kernel_nsamples, start,
                                 timeout_s)
    if not np.all(np.isfinite(values)):
        raise ExplainSkipped(f"{info['explainer']} returned non-finite SHAP values")
    info.update({"family": family, "task": task, "n_explained": len(X)})
    log.info("%s: %s explained %d rows in %.1f s", family, info["explainer"], len(X), time.perf_counter() - start)
    return values, X, info


# ---------------------------------------------------------------------------------------------------------------
# grouping to source variables


def _groups(columns: list[str], feature_sources: dict[str, str]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for j, col in enumerate(columns):
        groups.setdefault(feature_sources.get(col, col), []).append(j)
    return groups


def grouped(shap: np.ndarray, X: pd.DataFrame, feature_sources: dict[str, str]) -> dict[str, np.ndarray]:
    """Per-row SHAP values summed over each source variable's encoded columns (additive)."""
    shap = as_matrix(shap, len(X), X.shape[1])
    return {src: shap[:, idx].sum(axis=1) for src, idx in _groups(list(X.columns), feature_sources).items()}


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3:
        return float("nan")
    rx = pd.Series(x[ok]).rank().to_numpy()
    ry = pd.Series(y[ok]).rank().to_numpy()
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def _sign(r: float) -> int:
    if not np.isfinite(r) or abs(r) < DIRECTION_MIN_R:
        return 0
    return 1 if r > 0 else -1


def _direction(shap: np.ndarray, X: pd.DataFrame, idx: list[int]) -> str:
    """Sign of the rank correlation between a column's values and its SHAP values; a group of one-hot columns
    is "mixed" unless every column that varies agrees in sign."""
    values = X.to_numpy(dtype=float)
    if len(idx) == 1:
        s = _sign(_spearman(values[:, idx[0]], shap[:, idx[0]]))
        return {1: "positive", -1: "negative"}.get(s, "mixed")
    signs = []
    for j in idx:
        r = _spearman(values[:, j], shap[:, j])
        if np.isfinite(r):  # a column that never varies (or never matters) carries no direction
            signs.append(_sign(r))
    if signs and all(s == 1 for s in signs):
        return "positive"
    if signs and all(s == -1 for s in signs):
        return "negative"
    return "mixed"


def top_features(shap: np.ndarray, X: pd.DataFrame, feature_sources: dict[str, str],
                 labels: dict[str, str] | None = None, k: int = 10) -> list[dict]:
    """The k source variables with the largest mean |SHAP|, SHAP summed per row over each source's columns.

    Columns missing from feature_sources are their own source. Ties keep column order.
    """
    shap = as_matrix(shap, len(X), X.shape[1])
    labels = labels or {}
    rows = []
    for src, idx in _groups(list(X.columns), feature_sources).items():
        summed = shap[:, idx].sum(axis=1)
        rows.append({"feature": src, "label": labels.get(src, src),
                     "mean_abs_shap": float(np.mean(np.abs(summed))) if len(summed) else 0.0,
                     "direction": _direction(shap, X, idx), "columns": [str(X.columns[j]) for j in idx]})
    rows.sort(key=lambda r: -r["mean_abs_shap"])  # stable: ties keep column order
    return rows[:k]


# ---------------------------------------------------------------------------------------------------------------
# figures


#: tick labels are wrapped to LABEL_LINES lines of LABEL_WIDTH characters (an ellipsis only beyond), titles likewise
LABEL_WIDTH, LABEL_LINES = 30, 3
TITLE_WIDTH, TITLE_LINES = 50, 3
FIGURE_WIDTH = 3.3  # inches: one ACM column


def _labels(texts: list[str]) -> tuple[list[str], float]:
    """The wrapped tick labels, and the height in inches of a row that holds the tallest of them."""
    wrapped = [wrap_label(t, LABEL_WIDTH, LABEL_LINES) for t in texts]
    return wrapped, 0.06 + 0.115 * max((n_lines(w) for w in wrapped), default=1)


def importance_plot(top: list[dict], title: str | None = None, xlabel: str = "Mean |SHAP value|") -> Any:
    """The figure of :func:`importance_figure` (not saved): every text inside the figure, none cut."""
    colours = {"positive": _POSITIVE, "negative": _NEGATIVE}
    with plt.rc_context(_RC):
        items = list(reversed(top))
        labels, row = _labels([t.get("label") or t["feature"] for t in items])
        fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, max(3.0, 0.9 + row * len(items))), layout="constrained")
        ax.set_gid(RANKING)  # the rows are ranked (largest at the top): recorded with the figure's facts
        y = np.arange(len(items))
        ax.barh(y, [t["mean_abs_shap"] for t in items], height=0.65,
                color=[colours.get(t.get("direction"), _MIXED) for t in items])
        ax.set_yticks(y, labels)
        ax.set_xlabel(xlabel)
        ax.set_ylim(-0.6, max(len(items), 1) - 0.4)
        ax.spines[["top", "right"]].set_visible(False)
        present = [d for d in ("positive", "negative", "mixed") if any(t.get("direction") == d for t in items)]
        if present:
            from matplotlib.patches import Patch

            ax.legend(handles=[Patch(color=colours.get(d, _MIXED), label=d) for d in present], loc="lower right",
                      fontsize=6, frameon=False, title="direction", title_fontsize=6)
        if title:  # over the bars, wrapped to fit the figure
            fit_text(fig, ax.set_title(title), title, TITLE_WIDTH, TITLE_LINES)
        fig.draw_without_rendering()  # ticks and layout made under these settings
    return fig


def importance_figure(top: list[dict], path: Path, title: str | None = None,
                      xlabel: str = "Mean |SHAP value|") -> dict[str, Any]:
    """Horizontal bars of mean |SHAP| per source variable, largest at the top, coloured by direction; saved as PDF
    and PNG; returns what the drawn figure shows (figures.figure_facts)."""
    return save_figure(importance_plot(top, title, xlabel), path, dpi=300)


def _swarm_offsets(x: np.ndarray, width: float = 0.38, bins: int = 60) -> np.ndarray:
    """Deterministic beeswarm-like vertical offsets: points sharing a histogram bin spread alternately up and down,
    scaled by the densest bin."""
    if len(x) == 0:
        return np.zeros(0)
    lo, hi = float(np.min(x)), float(np.max(x))
    b = np.zeros(len(x), dtype=int) if hi <= lo else np.clip(((x - lo) / (hi - lo) * bins).astype(int), 0, bins - 1)
    offsets = np.zeros(len(x))
    order = np.lexsort((x, b))
    counts = np.bincount(b, minlength=bins)
    scale = width / max(counts.max() / 2, 1)
    position = np.zeros(bins, dtype=int)
    for i in order:
        r = position[b[i]]
        position[b[i]] += 1
        offsets[i] = ((r + 1) // 2) * (1 if r % 2 else -1) * scale
    return offsets


def summary_plot(shap: np.ndarray, X: pd.DataFrame, feature_sources: dict[str, str], labels: dict[str, str] | None,
                 k: int = 10, xlabel: str = "SHAP value") -> Any:
    """The figure of :func:`summary_figure` (not saved): every text inside the figure, none cut."""
    shap = as_matrix(shap, len(X), X.shape[1])
    top = top_features(shap, X, feature_sources, labels, k=k)
    index = {c: j for j, c in enumerate(X.columns)}
    cmap = plt.get_cmap("coolwarm")
    with plt.rc_context(_RC):
        ticks, row = _labels([t["label"] for t in reversed(top)])
        fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, max(3.0, 0.9 + row * len(top))), layout="constrained")
        ax.set_gid(RANKING)  # the rows are ranked (largest at the top): recorded with the figure's facts
        xs, ys, zs = [], [], []
        for i, t in enumerate(reversed(top)):
            idx = [index[c] for c in t["columns"]]
            s = shap[:, idx].sum(axis=1)
            xs.append(s)
            ys.append(i + _swarm_offsets(s))
            if len(idx) == 1:
                v = X.iloc[:, idx[0]].to_numpy(dtype=float)
                sd = np.nanstd(v)
                zs.append(np.clip((v - np.nanmean(v)) / sd, -2, 2) if sd > 0 else np.zeros_like(v))
            else:  # a group of one-hot columns: no single value to colour by (grey, the colour map's "bad")
                zs.append(np.full(len(s), np.nan))
        z = np.concatenate(zs) if zs else np.zeros(0)
        # one series: every point (a test student's summed SHAP value in a predictor's row), drawn row by row
        points = ax.scatter(np.concatenate(xs) if xs else z, np.concatenate(ys) if ys else z, c=z,
                            cmap=cmap.with_extremes(bad=_MIXED), vmin=-2, vmax=2, s=1.5, lw=0,
                            rasterized=True, plotnonfinite=True)
        scatter = points if np.isfinite(z).any() else None
        ax.axvline(0, color="black", lw=0.5, gid=REFERENCE)
        ax.set_yticks(np.arange(len(top)), ticks)
        ax.set_ylim(-0.6, max(len(top), 1) - 0.4)
        ax.set_xlabel(xlabel)
        ax.spines[["top", "right"]].set_visible(False)
        if scatter is not None:
            bar = fig.colorbar(scatter, ax=ax, pad=0.02, fraction=0.05, aspect=30, ticks=[-2, 2])
            bar.ax.set_yticklabels(["low", "high"])
            bar.set_label("Feature value (grey: categorical)", fontsize=6)
            bar.ax.tick_params(labelsize=6, length=0)
            bar.outline.set_visible(False)
        fig.draw_without_rendering()
    return fig


def summary_figure(shap: np.ndarray, X: pd.DataFrame, feature_sources: dict[str, str],
                   labels: dict[str, str] | None, path: Path, k: int = 10, xlabel: str = "SHAP value"
                   ) -> dict[str, Any]:
    """Beeswarm-like summary: one row per source variable (top k by mean |summed SHAP|), a point per explained row
    at its summed SHAP value, coloured by the standardized value of a single-column source and grey for a group
    of one-hot columns; saved as PDF and PNG; returns what the drawn figure shows (figures.figure_facts)."""
    return save_figure(summary_plot(shap, X, feature_sources, labels, k=k, xlabel=xlabel), path, dpi=300)


# ---------------------------------------------------------------------------------------------------------------
# the interpretation phase


def explain_models(evaluation: dict[str, Any], model_files: dict[str, str], load: Callable[[str], Any],
                   X_train: pd.DataFrame, X_test: pd.DataFrame, feature_sources: dict[str, str],
                   labels: dict[str, str], cfg: dict[str, Any], seed: int, fig_dir: Path, *,
                   earlier: dict[str, Any] | None = None, earlier_figures: Path | None = None) -> dict[str, Any]:
    """SHAP for every model of the evaluation above the quality floor (never stacking), the figures of the
    interpreted one in fig_dir; the document explain.json holds.

    model_files: each model's file (recorded as the input its explanation came from); load(file) the fitted model.
    cfg: the config's analysis.shap (background, max_samples for the interpreted model, other_samples for the
    others, kernel_samples, timeout_s). A model explained from the same file on as many rows in the `earlier`
    document (the previous round's) is kept from it, with its figures copied from earlier_figures if it is the
    interpreted model. A model stopped by a condition of the data (a timeout, a failed explainer: ExplainSkipped)
    or by the memory is recorded in "errors" and "skipped", and the others are still explained; anything else
    raises."""
    import shutil

    from edm_ars.core.phases import recorded
    from edm_ars.core.reuse import same_inputs

    background = X_train.sample(min(len(X_train), cfg["background"]), random_state=seed)
    fig_dir = Path(fig_dir)
    fig_dir.mkdir(parents=True, exist_ok=True)
    by_model: dict[str, Any] = {}
    errors: list[dict[str, Any]] = []
    figs: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    earlier = earlier or {"by_model": {}}
    interpreted = evaluation["interpreted_model"]
    task = evaluation["task"]
    for name in evaluation["models"]:
        if name == STACKING:
            skipped[name] = "SHAP is not computed for stacking (a model of models)"
            continue
        if name not in evaluation["above_floor"]:
            skipped[name] = "below the quality floor"
            continue
        cap = cfg["max_samples"] if name == interpreted else cfg["other_samples"]
        inputs = {"model": model_files[name], "max_samples": cap}
        kept = earlier["by_model"].get(name)
        if same_inputs(kept, inputs) and (name != interpreted or earlier.get("interpreted_model") == name):
            # the same fit explained on the same rows in the previous round (and its figures, if interpreted)
            by_model[name] = kept
            if name == interpreted:
                for fig in earlier["figures"]:  # the PDF and its PNG rendering
                    for name in (Path(fig["path"]).name, png_path(Path(fig["path"])).name):
                        if name == Path(fig["path"]).name or (Path(earlier_figures) / name).is_file():
                            shutil.copyfile(Path(earlier_figures) / name, fig_dir / name)
                figs += earlier["figures"]
            log.info("%s: kept from the previous round (same fit, same rows)", name)
            continue
        with recorded(errors, "explain", name):
            model = load(model_files[name])
            values, rows, info = shap_values(model, name, task, background, X_test, max_samples=cap,
                                             kernel_samples=cfg["kernel_samples"], timeout_s=cfg["timeout_s"],
                                             seed=seed)
            top = top_features(values, rows, feature_sources, labels, k=10)
            by_model[name] = {"top_features": top, **info, "inputs": inputs}
            log.info("%s: %s on %d rows; top %s", name, info.get("explainer"), info.get("n_explained", 0),
                     [t["feature"] for t in top[:5]])
            if name == interpreted:
                summary = summary_figure(values, rows, feature_sources, labels, fig_dir / "shap_summary.pdf")
                importance = importance_figure(top, fig_dir / "shap_importance.pdf")
                label = evaluation["models"][name]["label"]
                figs += [{"path": "figures/explain/shap_summary.pdf", "kind": "shap_summary",
                          "png": "figures/explain/shap_summary.png", "drawn": summary,
                          "caption": f"SHAP values of the {label} model for the ten most important predictors "
                                     "(one point per test student; colour: the predictor's value)."},
                         {"path": "figures/explain/shap_importance.pdf", "kind": "shap_importance",
                          "png": "figures/explain/shap_importance.png", "drawn": importance,
                          "caption": f"Mean absolute SHAP value of the ten most important predictors ({label})."}]
        if errors and errors[-1].get("what") == name:
            skipped[name] = errors[-1]["message"]
    return {
        "interpreted_model": interpreted,
        "top_features": by_model.get(interpreted, {}).get("top_features", []),
        "by_model": by_model, "skipped": skipped, "figures": figs, "errors": errors,
    }
