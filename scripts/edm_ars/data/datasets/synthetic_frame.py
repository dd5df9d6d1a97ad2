"""The working frame of the synthetic HSLS:09 generator and its sampling helpers.

`_Frame` holds the columns under construction (true codes or values plus a reserve-code array,
0 = observed), imposes missingness with exact shares and turns each column into its finished form
(numeric reserve codes, or the text value labels of the layout file). The helpers cut latent
variables into ordinal codes with exact marginals, draw exact-size random subsets, and make the
standardized scales shared by the waves.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

_SCALE_DECIMALS = 2


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _std(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    sd = x.std()
    return (x - x.mean()) / (sd if sd > 0 else 1.0)


def _ordinal(latent: np.ndarray, codes: tuple[int, ...] | list[int], probs: tuple[float, ...] | list[float]):
    """Cut a latent variable into codes (given from lowest to highest latent) with exact marginals."""
    p = np.asarray(probs, dtype=float)
    p = p / p.sum()
    cuts = np.quantile(latent, np.cumsum(p)[:-1])
    return np.asarray(codes, dtype=np.int64)[np.searchsorted(cuts, latent, side="right")]


def _pick(rng: np.random.Generator, k: int, eligible: np.ndarray, weights: np.ndarray | None = None):
    """A boolean mask of exactly k units drawn without replacement from `eligible`, optionally with
    probability increasing in `weights` (Gumbel top-k)."""
    idx = np.flatnonzero(eligible)
    k = int(min(max(k, 0), idx.size))
    mask = np.zeros(eligible.shape[0], dtype=bool)
    if k == 0:
        return mask
    keys = rng.gumbel(size=idx.size)
    if weights is not None:
        keys = keys + np.log(np.asarray(weights, dtype=float)[idx])
    mask[idx[np.argpartition(-keys, k - 1)[:k]]] = True
    return mask


_ERF = np.vectorize(math.erf, otypes=[float])


def _logistic_from_normal(z: np.ndarray) -> np.ndarray:
    """Map standard normal draws to standard logistic draws (probability integral transform)."""
    p = np.clip(0.5 * (1 + _ERF(z / math.sqrt(2))), 1e-12, 1 - 1e-12)
    return np.log(p / (1 - p))


def _compact_codes(codes: np.ndarray) -> np.ndarray:
    """Integer codes in the smallest integer type that holds them (a million students' codes in 1-2 MB, not 8)."""
    codes = np.asarray(codes)
    if codes.dtype == bool:
        return codes.astype(np.int8)
    if codes.size == 0:
        return codes.astype(np.int8)
    lo, hi = int(codes.min()), int(codes.max())
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return codes.astype(dtype)
    return codes.astype(np.int64)


def _categorical(rng: np.random.Generator, n: int, codes: list[int], probs: list[float]) -> np.ndarray:
    p = np.asarray(probs, dtype=float)
    return np.asarray(codes, dtype=np.int64)[rng.choice(len(codes), size=n, p=p / p.sum())]


class _Frame:
    """Columns under construction: true codes / values plus a reserve-code array (0 = observed)."""

    def __init__(self, n: int, rng: np.random.Generator, layout: Any, registry: Any):
        self.n, self.rng, self.layout, self.reg = n, rng, layout, registry
        self.kind: dict[str, str] = {}
        self.data: dict[str, np.ndarray] = {}
        self.miss: dict[str, np.ndarray] = {}
        self.decimals: dict[str, int] = {}
        self.notes: list[str] = []
        self._codes = np.asarray(sorted(registry.sentinel_codes), dtype=float)
        meanings = registry.dataset.get("sentinels", {}).get("meanings", {})
        self._meanings = {int(k): v for k, v in meanings.items()}

    # ---- setting columns -------------------------------------------------------------------
    def cat(self, name: str, codes: np.ndarray) -> None:
        self.kind[name] = "cat"
        self.data[name] = _compact_codes(codes)
        self.miss[name] = np.zeros(self.n, dtype=np.int8)

    def num(self, name: str, values: np.ndarray, lo: float | None = None, hi: float | None = None,
            decimals: int = _SCALE_DECIMALS) -> np.ndarray:
        v = np.asarray(values, dtype=float)
        if lo is not None or hi is not None:
            v = np.clip(v, lo, hi)
        v = np.round(v, decimals)
        # a valid value must not coincide with a numeric reserve code (e.g. a scale value of -1.00)
        step = 10.0 ** -decimals
        v = np.where(np.isin(v, self._codes), np.round(v + step, decimals), v)
        self.kind[name] = "num"
        self.data[name] = v
        self.miss[name] = np.zeros(self.n, dtype=np.int8)
        self.decimals[name] = decimals
        return v

    def raw(self, name: str, values: np.ndarray) -> None:
        self.kind[name] = "raw"
        self.data[name] = values

    def rng_of(self, name: str) -> tuple[float, float]:
        rec = self.reg.tier1[name]
        lo, hi = rec["range"]
        return float(lo), float(hi)

    def value(self, name: str) -> np.ndarray:
        """The complete (pre-missingness) numeric value: the value, or the layout code."""
        return self.data[name].astype(float)

    # ---- missingness -----------------------------------------------------------------------
    def code(self, name: str, preferred: tuple[int, ...]) -> int:
        """The first reserve code of `preferred` the variable has in the layout (else the first)."""
        if self.kind[name] == "num":
            return preferred[0]
        have = self.layout.codes(name)
        for c in preferred:
            if c in have:
                return c
        return preferred[0]

    def missing(self, name: str) -> np.ndarray:
        return self.miss[name] != 0

    def mask(self, name: str, where: np.ndarray, preferred: tuple[int, ...] | int) -> None:
        code = preferred if isinstance(preferred, int) else self.code(name, preferred)
        m = self.miss[name]
        m[np.asarray(where, dtype=bool) & (m == 0)] = code

    def top_up(self, name: str, pct: float, preferred: tuple[int, ...] | int = (-9, -8),
               eligible: np.ndarray | None = None, weights: np.ndarray | None = None) -> None:
        """Add missing values (`preferred` code) until the variable is `pct` percent missing."""
        cur = self.missing(name)
        k = int(round(pct / 100.0 * self.n)) - int(cur.sum())
        if k < 0:
            if -k > 0.001 * self.n:
                self.notes.append(
                    f"{name}: structural missingness ({100 * cur.mean():.2f}%) exceeds the recorded "
                    f"{pct}%; structure kept.")
            return
        elig = ~cur if eligible is None else (~cur & eligible)
        self.mask(name, _pick(self.rng, k, elig, weights), preferred)

    def share(self, mask: np.ndarray) -> float:
        return float(np.mean(mask))

    # ---- output -----------------------------------------------------------------------------
    def _labelled(self, name: str, codes: np.ndarray) -> pd.Categorical:
        """The codes as their text labels: a categorical (one small integer per student, each label stored once)."""
        table = dict(self.layout.codes(name))
        t1 = (self.reg.tier1.get(name) or {}).get("sentinels") or {}
        uniq, inv = np.unique(codes, return_inverse=True)
        labels = []
        for c in uniq.tolist():
            if c in table:
                labels.append(table[c])
            elif c in t1:
                labels.append(t1[c])
            elif c < 0:
                labels.append(self._meanings.get(c, "Missing"))
            else:  # no value label in the layout: the code itself, as text
                labels.append(str(c))
        distinct = list(dict.fromkeys(labels))  # two codes may share a label (two reserve codes both "Missing")
        position = np.asarray([distinct.index(lab) for lab in labels], dtype=np.int64)
        return pd.Categorical.from_codes(_compact_codes(position[inv]),
                                         dtype=pd.CategoricalDtype(pd.Index(distinct, dtype="str")))

    def column(self, name: str):
        """The finished column (missing values as their reserve codes or labels); the working arrays are released."""
        kind = self.kind[name]
        if kind == "raw":
            return self.data.pop(name)
        m, v = self.miss.pop(name), self.data.pop(name)
        if kind == "num":
            return np.where(m != 0, m.astype(float), v)
        return self._labelled(name, np.where(m != 0, m, v))


# ---- scales ----------------------------------------------------------------------------------


def _scale(f: _Frame, name: str, latent: np.ndarray, noise: float) -> np.ndarray:
    lo, hi = f.rng_of(name)
    x = _std(latent + f.rng.normal(0, noise, f.n))
    return f.num(name, x, lo, hi, _SCALE_DECIMALS)


def _skewed_scale(f: _Frame, name: str, z: np.ndarray) -> np.ndarray:
    """A left-skewed scale below the registry maximum (no point mass at the ceiling, so that school
    fingerprints rarely collide), median about 0, rounded to 2 decimals."""
    lo, hi = f.rng_of(name)
    return np.round(np.clip(hi - hi * np.exp(-0.6 * z), lo, hi - 0.01), 2)
