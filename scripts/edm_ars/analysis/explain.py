"""SHAP explanations of fitted models: explainer choice per family, grouping back to source variables, the ranking
of the source variables (:func:`top_features`).

Tree ensembles use TreeSHAP (exact, path-dependent), linear pipelines use the linear explainer on the
standardized inputs (values map 1:1 to the original columns), and anything else (the MLP) uses shap's
KernelExplainer on a small seeded background, bounded in rows and wall-clock time. Stacking ensembles are
never explained.

The SHAP figures are drawn by edm_ars.analysis.explain_figures; the interpretation phase (every model above the
floor explained, explain.json) is edm_ars.analysis.explain_phase.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: shap imports matplotlib.pyplot when it is imported
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

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
