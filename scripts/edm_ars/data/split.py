"""Step 4 of the DataEngineer (edm_ars.data.engineer): pseudo school ids reconstructed from the school-level
fingerprint, the groups a split keeps whole (clusters, the units of repeated records, or the connected components
of both: split_groups), and the train/test split (stratified for classification, grouped so that no cluster and no
unit is on both sides), made before any encoding or imputation.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupShuffleSplit, ShuffleSplit, StratifiedKFold


def fingerprint_ids(frame: pd.DataFrame) -> np.ndarray:
    """Group ids of the rows' value combinations, numbered in the sorted order of the combinations written as text
    (a missing value as "<NA>"): what `frame.astype("string").fillna("<NA>").groupby(columns, sort=True,
    dropna=False).ngroup()` gives, computed from each column's distinct values (their text and rank) and the rows'
    integer codes, so its cost is a sort of integers, not of a million rows of text."""
    combined = np.zeros(len(frame), dtype=np.int64)
    for col in frame.columns:
        s = frame[col]
        if pd.api.types.is_float_dtype(s.dtype) and not isinstance(s.dtype, pd.api.extensions.ExtensionDtype):
            # by bit pattern: -0.0 and 0.0 are different texts ("-0.0", "0.0"), which factorize would merge
            values = s.to_numpy(dtype=np.float64)
            codes, bits = pd.factorize(values.view(np.int64))
            codes[np.isnan(values)] = -1
            uniques = bits.view(np.float64)
        else:
            codes, uniques = pd.factorize(s, use_na_sentinel=True)
        text = pd.Series(uniques).astype("string").fillna("<NA>").to_numpy(dtype=object)
        text = np.append(text, "<NA>").astype(str)  # code -1 (a missing value) is the last entry
        names, rank = np.unique(text, return_inverse=True)
        rank = rank.astype(np.int64)[codes]  # equal texts (e.g. two spellings of a missing value) share a rank
        combined = _combine_codes(combined, rank, len(names))
    return np.unique(combined, return_inverse=True)[1].astype(np.int64)


def _combine_codes(combined: np.ndarray, rank: np.ndarray, k: int) -> np.ndarray:
    """The pair (combined, rank) as one integer code ordered as the pairs are (combined first), renumbered to
    consecutive codes first when the product would not fit in 64 bits."""
    top = int(combined.max()) + 1 if len(combined) else 1
    if top * k >= 2 ** 62:
        combined = np.unique(combined, return_inverse=True)[1].astype(np.int64)
        top = int(combined.max()) + 1 if len(combined) else 1
    return combined * k + rank


def reconstruct_schools(frame: pd.DataFrame, columns: list[str], min_clusters: int = 10
                        ) -> tuple[pd.Series, dict[str, Any]]:
    """Pseudo school ids from the school-level fingerprint (missing values are part of it)."""
    present = [c for c in columns if c in frame.columns]
    if not present:
        ids = pd.Series(np.arange(len(frame)), index=frame.index, name="pseudo_school_id")
        # the registry names no cluster (a file without schools) or none of its columns is in the data
        return ids, {"status": "failed_zero_clusters" if columns else "no_grouping", "n_clusters": 0, "columns": []}
    ids = pd.Series(fingerprint_ids(frame[present]), index=frame.index, name="pseudo_school_id")
    n = int(ids.nunique())
    status = "success" if n >= min_clusters else "degenerate_few_clusters"
    sizes = ids.value_counts()
    return ids, {
        "status": status, "n_clusters": n, "columns": present,
        "median_cluster_size": float(sizes.median()), "max_cluster_size": int(sizes.max()),
    }


def split_groups(clusters: np.ndarray | None, units: np.ndarray | None) -> np.ndarray:
    """The groups a split keeps whole: the connected components of rows sharing a cluster or a unit id (a child who
    changed schools merges those schools into one group), numbered 0, 1, ... in the order of their first row.
    Without units the clusters themselves (unchanged, so a cluster-grouped split is the one it always was); without
    clusters the units; with neither, each row its own group."""
    if units is None:
        if clusters is None:
            raise ValueError("split_groups needs clusters or units")
        return np.asarray(clusters)
    unit_codes = pd.factorize(pd.Series(np.asarray(units, dtype=object)), use_na_sentinel=False)[0]
    n = len(unit_codes)
    if clusters is None:
        return unit_codes.astype(np.int64)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    cluster_codes = pd.factorize(pd.Series(np.asarray(clusters, dtype=object)), use_na_sentinel=False)[0]
    n_units, n_clusters = int(unit_codes.max()) + 1 if n else 0, int(cluster_codes.max()) + 1 if n else 0
    # a bipartite graph: unit nodes 0..U-1, cluster nodes U..U+C-1, one edge per row
    graph = coo_matrix((np.ones(n), (unit_codes, n_units + cluster_codes)),
                       shape=(n_units + n_clusters, n_units + n_clusters))
    _, labels = connected_components(graph, directed=False)
    component = labels[unit_codes]
    return pd.factorize(component)[0].astype(np.int64)  # numbered by first row: deterministic


def connected_groups(keys: list[np.ndarray]) -> np.ndarray:
    """The connected components of rows sharing a value of any of `keys` (one id array per cluster level: a pupil
    in primary school 3 and secondary school 7 joins the two, and every pupil of either), numbered 0, 1, ... in
    the order of their first row. One key: its values numbered the same way."""
    if not keys:
        raise ValueError("connected_groups needs at least one key")
    codes = [pd.factorize(pd.Series(np.asarray(k, dtype=object)), use_na_sentinel=False)[0].astype(np.int64)
             for k in keys]
    if len(codes) == 1:
        return pd.factorize(codes[0])[0].astype(np.int64)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    offsets = np.cumsum([0] + [int(c.max()) + 1 if len(c) else 0 for c in codes])
    # one node per value of each key; each row links its value of the first key to its value of every other key
    rows = np.concatenate([codes[0] for _ in codes[1:]])
    cols = np.concatenate([c + offsets[i + 1] for i, c in enumerate(codes[1:])])
    size = int(offsets[-1])
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(size, size))
    _, labels = connected_components(graph, directed=False)
    return pd.factorize(labels[codes[0]])[0].astype(np.int64)


def stratified_group_fold0(y: np.ndarray, groups: np.ndarray, n_splits: int, seed: int) -> np.ndarray:
    """The rows of the first test fold of scikit-learn's StratifiedGroupKFold(n_splits, shuffle=True,
    random_state=seed): the same groups, assigned by the same greedy rule in the same order, with the class counts
    per group counted at once and the greedy pass in plain Python over a handful of numbers per group (scikit-learn
    loops over the rows in Python and makes a dozen numpy calls per group: a tenth of the DataEngineer's time).
    tests/data/test_engineer.py compares the two on many random inputs."""
    y, groups = np.asarray(y), np.asarray(groups)
    _, y_inv, y_cnt = np.unique(y, return_inverse=True, return_counts=True)
    if np.all(n_splits > y_cnt):
        raise ValueError(f"n_splits={n_splits} cannot be greater than the number of members in each class.")
    if n_splits > int(y_cnt.min()):
        warnings.warn(f"The least populated class in y has only {int(y_cnt.min())} members, which is less than "
                      f"n_splits={n_splits}.", UserWarning, stacklevel=2)
    n_classes = len(y_cnt)
    _, groups_inv, groups_cnt = np.unique(groups, return_inverse=True, return_counts=True)
    n_groups = len(groups_cnt)
    if n_splits > n_groups:
        raise ValueError(f"Cannot have number of splits n_splits={n_splits} greater than the number of groups: "
                         f"{n_groups}.")
    per_group = np.zeros((n_groups, n_classes))
    np.add.at(per_group, (groups_inv.ravel(), y_inv.ravel()), 1)
    perm = np.arange(n_groups)
    np.random.RandomState(seed).shuffle(perm)  # scikit-learn's check_random_state(seed), shuffle=True
    per_group = per_group[perm]
    order = np.argsort(-np.std(per_group, axis=1), kind="stable")
    totals = [float(c) for c in y_cnt]
    folds = [[0.0] * n_classes for _ in range(n_splits)]
    rows = per_group.tolist()
    fold0 = []
    for g in order.tolist():
        counts = rows[g]
        best, min_eval, min_samples = 0, math.inf, math.inf
        for i in range(n_splits):
            spread = 0.0
            for c in range(n_classes):  # the SD over folds of each class's share, fold i with the group added
                shares = [(folds[f][c] + counts[c] if f == i else folds[f][c]) / totals[c] for f in range(n_splits)]
                mean = sum(shares) / n_splits
                spread += math.sqrt(sum((x - mean) * (x - mean) for x in shares) / n_splits)
            fold_eval = spread / n_classes
            samples = sum(folds[i])
            close = math.isfinite(min_eval) and abs(fold_eval - min_eval) <= 1e-8 + 1e-5 * abs(min_eval)
            if fold_eval < min_eval or (close and samples < min_samples):
                best, min_eval, min_samples = i, fold_eval, samples
        folds[best] = [a + b for a, b in zip(folds[best], counts, strict=True)]
        if best == 0:
            fold0.append(g)
    # positions after the shuffle back to the original group codes
    return np.flatnonzero(np.isin(groups_inv, perm[np.asarray(fold0, dtype=np.int64)]))


def split_train_test(y: pd.Series, groups: pd.Series | None, task: str, test_fraction: float, seed: int,
                     group_label: str = "reconstructed school") -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Positions of training and test rows; grouped by cluster (e.g. school) when groups are given."""
    n_splits = max(2, int(round(1 / test_fraction)))
    idx = np.arange(len(y))
    yv = y.to_numpy()
    if groups is not None:
        g = groups.to_numpy()
        if task == "binary_classification":
            test = stratified_group_fold0(yv, g, n_splits, seed)
            train = np.setdiff1d(idx, test, assume_unique=True)
            method = f"StratifiedGroupKFold(n_splits={n_splits}) fold 0, grouped by {group_label}"
        else:
            splitter = GroupShuffleSplit(n_splits=1, test_size=test_fraction, random_state=seed)
            train, test = next(splitter.split(idx, yv, g))
            method = f"GroupShuffleSplit, grouped by {group_label}"
        overlap = len(set(g[train]) & set(g[test]))
    else:
        if task == "binary_classification":
            splitter = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
            train, test = next(splitter.split(idx, yv))
            method = f"StratifiedKFold(n_splits={n_splits}) fold 0 (no cluster groups available)"
        else:
            train, test = next(ShuffleSplit(n_splits=1, test_size=test_fraction, random_state=seed).split(idx))
            method = "ShuffleSplit (no cluster groups available)"
        overlap = 0
    info = {"method": method, "seed": seed, "test_fraction": round(len(test) / len(y), 4),
            "group_overlap": int(overlap)}
    return np.sort(train), np.sort(test), info
