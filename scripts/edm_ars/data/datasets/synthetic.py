"""A synthetic stand-in for the NCES HSLS:09 public-use student file, with a known data-generating process.

`generate(registry, layout)` returns a frame that looks like the labelled public-use CSV
(hsls_17_student_pets_sr_v1_0.csv): one row per student, `STU_ID`, the 116 non-derived Tier 1
variables under their real names, a few dozen Tier 2 items, and weights, status variables and
imputation/processing flags that Tier 3 rules must exclude. Categorical and binary variables hold
the text value labels of the NCES layout file; continuous variables are numeric, with the numeric
reserve codes (-5, -7, -8, -9, ...) where a value is missing. Missing data follow the structure of
the real file: one set of 2016 unit non-respondents shared by all X4 variables, one set of base-year
parent non-respondents shared by the parent composites, legitimate skips for postsecondary
variables of students who never attended college, and school-level missingness for school scales.

Students belong to `n_schools` schools whose seven school-level variables (dataset.yaml
`school_fingerprint`) are constant within a school, so grouping on them recovers the schools.

The outcomes of the five canonical questions are generated from *observed* earlier-wave predictors
(their complete, pre-missingness values, standardized; categorical predictors through their
standardized layout code) with five clearly separated strong effects each, plus noise. A subgroup
disparity (extra outcome noise for Black students) and a same-wave leakage trap (X4EVRAPPCLG, a
near-copy of X4EVRATNDCLG) are planted. Everything is described in the returned `dgp` dict, which
validates against scripts/edm_ars/schemas/dgp.json. Only numpy's Generator seeded from `seed` is
used, so the same seed gives an identical frame.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

N_STUDENTS = 23503
N_SCHOOLS = 944

# ---- the known data-generating process of the canonical outcomes -------------------------------
# `effects` are standardized effects (per SD of the predictor, on the latent scale of the outcome);
# for logistic outcomes they are multiplied by `scale` to give log-odds per SD. Predictors of a
# question that are not listed have a zero effect. Every strong effect (ranks 1-5) is >= 0.35 and
# every other one is <= 0.1 in absolute value (before `scale`).
OUTCOME_SPECS: dict[str, dict[str, Any]] = {
    "X2TXMTSCOR": {
        "question": "math_achievement", "link": "identity", "mean": 50.0, "sd": 10.0, "r2": 0.55,
        "school_share": 0.15,
        "effects": {"X1TXMTSCOR": 1.0, "X1MTHEFF": 0.8, "X1SES": 0.6, "X1STUEDEXPCT": 0.45,
                    "X1MTHUTI": 0.35, "X1MTHID": 0.1, "X1SCHOOLENG": 0.08, "X1TMEFF": 0.06,
                    "X1PAREDU": 0.05, "X1MTHINT": -0.04, "X1SCHOOLBEL": 0.03},
    },
    "X3TGPAACAD": {
        "question": "academic_gpa", "link": "identity", "mean": 2.78, "sd": 0.72, "r2": 0.5,
        "school_share": 0.15,
        "effects": {"X1SCHOOLENG": 1.0, "X2TXMTSCOR": 0.8, "X1STUEDEXPCT": 0.6, "X1SES": 0.45,
                    "X1SCIEFF": 0.35, "X1TXMTSCOR": 0.1, "X1SCHOOLBEL": 0.08, "X2MTHEFF": 0.05,
                    "X1MTHEFF": 0.04, "X1PAREDU": 0.03},
    },
    "X4EVRATNDCLG": {
        "question": "college_attendance", "link": "logistic", "scale": 0.75, "base_rate": 0.747,
        "school_sd": 0.3, "population": "2016 respondents",
        "effects": {"X3TGPAACAD": 1.0, "X1SES": 0.8, "X2STUEDEXPCT": 0.6, "X1PAREDEXPCT": 0.45,
                    "X3TCREDAPMTH": 0.35, "X2TXMTSCOR": 0.1, "X3TCREDTOT": 0.1, "X1STUEDEXPCT": 0.08,
                    "X1PAREDU": 0.06, "X1SCHOOLENG": 0.05, "X3THISCI": 0.05, "X1LOCALE": -0.05,
                    "X1CONTROL": 0.04, "X1TXMTSCOR": 0.03},
    },
    "dropout_derived": {
        "question": "hs_completion", "link": "logistic", "scale": 0.75, "base_rate": 0.065,
        "school_sd": 0.3, "population": "2016 respondents",
        "observed_as": "X4HSCOMPSTAT == 'No HS credential' (1); 'Diploma' or 'GED, ...' (0)",
        "effects": {"X2EVERDROP": 1.0, "X1SCHOOLENG": -0.8, "X2TXMTSCOR": -0.6, "X1SES": -0.45,
                    "X2STUEDEXPCT": -0.35, "X1IEPFLAG": 0.1, "X1SCHOOLBEL": -0.1, "X1TXMTSCOR": -0.08,
                    "X1STUEDEXPCT": -0.05, "X1PAREDU": -0.05},
    },
    "X4RFDGMJSTEM": {
        "question": "stem_major", "link": "logistic", "scale": 0.8, "base_rate": 0.30,
        "school_sd": 0.2, "population": "college attenders (students with a reference major)",
        "effects": {"X1MTHID": 1.0, "X3TGPASTEM": 0.8, "X1SCIID": 0.6, "X3TCREDAPSCI": 0.45,
                    "X2TXMTSCOR": 0.35, "X3TCREDAPMTH": 0.1, "X3THISCI": 0.1, "X1TXMTSCOR": 0.08,
                    "X1MTHEFF": 0.05, "X1SCIEFF": 0.05, "X1SES": -0.05},
    },
}

DISPARITY = {"attribute": "X1RACE", "group": "Black/African-American, non-Hispanic", "code": 3,
             "extra_noise_sd": 2.0, "outcomes": ["X4EVRATNDCLG", "dropout_derived"]}
LEAKAGE_AGREEMENT = 0.97
# Correlation of the (logistic) noise of college attendance and of high school non-completion,
# through a Gaussian copula: the marginal DGP of each outcome is unchanged.
ATTEND_DROPOUT_NOISE_CORR = -0.9

# Tier 2 items: (name, composite or latent source, reversed, probabilities of codes in layout order).
_AGREE = (1, 2, 3, 4)
_TIER2_ITEMS: list[tuple[str, str, bool, tuple[float, ...]]] = [
    ("S1MPERSON1", "X1MTHID", False, (0.2, 0.42, 0.28, 0.1)),
    ("S1MPERSON2", "X1MTHID", False, (0.15, 0.45, 0.3, 0.1)),
    ("S1MTESTS", "X1MTHEFF", False, (0.3, 0.5, 0.15, 0.05)),
    ("S1MTEXTBOOK", "X1MTHEFF", False, (0.28, 0.5, 0.17, 0.05)),
    ("S1MSKILLS", "X1MTHEFF", False, (0.3, 0.5, 0.15, 0.05)),
    ("S1MASSEXCL", "X1MTHEFF", False, (0.32, 0.5, 0.14, 0.04)),
    ("S1MUSELIFE", "X1MTHUTI", False, (0.2, 0.5, 0.23, 0.07)),
    ("S1MUSECLG", "X1MTHUTI", False, (0.45, 0.45, 0.07, 0.03)),
    ("S1MUSEJOB", "X1MTHUTI", False, (0.3, 0.45, 0.2, 0.05)),
    ("S1MENJOYING", "X1MTHINT", False, (0.15, 0.45, 0.28, 0.12)),
    ("S1MWASTE", "X1MTHINT", True, (0.05, 0.1, 0.5, 0.35)),
    ("S1MBORING", "X1MTHINT", True, (0.1, 0.25, 0.45, 0.2)),
    ("S1SAFE", "X1SCHOOLBEL", False, (0.25, 0.6, 0.11, 0.04)),
    ("S1PROUD", "X1SCHOOLBEL", False, (0.25, 0.52, 0.17, 0.06)),
    ("S1TALKPROB", "X1SCHOOLBEL", False, (0.22, 0.5, 0.2, 0.08)),
    ("S1SCHWASTE", "X1SCHOOLBEL", True, (0.05, 0.13, 0.5, 0.32)),
    ("S1GOODGRADES", "X1SCHOOLBEL", False, (0.62, 0.33, 0.03, 0.02)),
    ("S1NOHWDN", "X1SCHOOLENG", False, (0.3, 0.38, 0.24, 0.08)),
    ("S1NOPAPER", "X1SCHOOLENG", False, (0.45, 0.35, 0.15, 0.05)),
    ("S1NOBOOKS", "X1SCHOOLENG", False, (0.5, 0.32, 0.13, 0.05)),
    ("S1LATE", "X1SCHOOLENG", False, (0.45, 0.33, 0.16, 0.06)),
]
# Imputation flags (Tier 3 `_IM$`) and the share of observed values flagged as imputed.
_IMPUTATION_FLAGS = {"X1SEX_IM": 0.004, "X1RACE_IM": 0.03, "X1PAR1EDU_IM": 0.02, "X1PAREDU_IM": 0.02,
                     "X1STUEDEX_IM": 0.01, "X1PAREDEX_IM": 0.02, "X1TXMATH_IM": 0.04,
                     "X1FAMINC_IM": 0.06, "X2TXMATH_IM": 0.03}

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


# ---- the generator ---------------------------------------------------------------------------


def generate(registry: Any, layout: Any, n_students: int = N_STUDENTS, n_schools: int = N_SCHOOLS,
             seed: int = 42) -> tuple[pd.DataFrame, dict]:
    """Return (raw frame as the public-use CSV would look, dgp dict)."""
    if n_students < n_schools or n_schools < 1:
        raise ValueError("need n_students >= n_schools >= 1")
    rng = np.random.default_rng(seed)
    f = _Frame(n_students, rng, layout, registry)
    dgp_outcomes: dict[str, dict[str, Any]] = {}

    school, lat = _schools_and_latents(f, n_schools)
    sets = _response_sets(f, lat, school)
    _base_year(f, lat, school, sets)
    _first_follow_up(f, lat, school, sets, dgp_outcomes)
    _second_follow_up(f, lat, school, sets, dgp_outcomes)
    _update_panel(f, lat, school, sets, dgp_outcomes)
    _postsecondary(f, lat, sets)
    _tier2(f, lat, sets)
    _tier3(f, lat, school, sets)
    lat.clear()  # the latent traits and shared sets are not needed for the columns: their memory goes first
    sets.clear()

    frame = _assemble(f, registry, layout)
    dgp = _dgp_dict(f, seed, n_students, n_schools, dgp_outcomes)
    return frame, dgp


# ---- schools and latent traits ----------------------------------------------------------------


def _schools_and_latents(f: _Frame, n_schools: int):
    rng, n = f.rng, f.n
    # school sizes roughly uniform between 0.4 and 1.6 times the mean (10-40 at full size)
    raw = rng.uniform(0.4, 1.6, n_schools)
    sizes = np.maximum(1, np.floor(raw * n / raw.sum()).astype(np.int64))
    while sizes.sum() != n:
        diff = n - int(sizes.sum())
        pool = np.flatnonzero(sizes > 1) if diff < 0 else np.arange(n_schools)
        sizes[rng.choice(pool, size=min(abs(diff), pool.size), replace=False)] += int(np.sign(diff))
    sid = np.repeat(np.arange(n_schools), sizes)

    control = np.where(rng.random(n_schools) < 0.22, 2, 1)  # 1 Public, 2 Catholic or other private
    locale = _categorical(rng, n_schools, [1, 2, 3, 4], [0.3, 0.33, 0.13, 0.24])
    region = _categorical(rng, n_schools, [1, 2, 3, 4], [0.17, 0.25, 0.36, 0.22])
    minority = rng.normal(size=n_schools) + 0.4 * (locale == 1) - 0.3 * (control == 2)
    s_ses = _std(rng.normal(size=n_schools) - 0.35 * minority + 0.6 * (control == 2)
                 + 0.3 * (locale == 2) - 0.25 * (locale == 4))
    s_qual = _std(0.4 * s_ses + rng.normal(size=n_schools))

    # race/ethnicity, clustered by school; codes 1..8 as in the layout
    target = np.array([0.007, 0.075, 0.13, 0.075, 0.085, 0.08, 0.005, 0.543])
    slope = np.array([0.5, 0.3, 1.0, 0.9, 0.9, 0.2, 0.3, 0.0])
    reg_eff = np.zeros((n_schools, 8))
    reg_eff[:, 2] += 0.6 * (region == 3)
    reg_eff[:, [3, 4]] += (0.6 * (region == 4) + 0.3 * (region == 3))[:, None]
    reg_eff[:, 1] += 0.5 * (region == 4)
    logb = np.log(target)
    for _ in range(8):
        logits = logb + minority[:, None] * slope + reg_eff
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        logb += np.log(target / (sizes[:, None] * p).sum(axis=0) * n)
    cum = np.cumsum(p, axis=1)[sid]
    race = 1 + (rng.random(n)[:, None] > cum[:, :-1]).sum(axis=1)
    male = rng.random(n) < 0.505

    race_ses = np.array([0, -0.4, 0.1, -0.45, -0.5, -0.4, -0.05, -0.2, 0.15])[race]
    ses = _std(0.45 * s_ses[sid] + race_ses + rng.normal(0, 0.85, n))
    abil = _std(0.35 * ses + 0.25 * s_qual[sid] + rng.normal(0, 0.88, n))
    eng = _std(0.15 * ses + 0.2 * abil + 0.15 * (~male) + rng.normal(0, 0.95, n))
    bel = _std(0.35 * eng + 0.1 * ses + 0.15 * s_qual[sid] + rng.normal(0, 0.9, n))
    mself = _std(0.35 * abil + 0.15 * eng + 0.12 * male + rng.normal(0, 0.9, n))
    sself = _std(0.25 * abil + 0.15 * eng + 0.3 * mself + rng.normal(0, 0.9, n))
    expct = _std(0.3 * ses + 0.3 * abil + 0.2 * eng + rng.normal(0, 0.85, n))
    lat = {"ses": ses, "abil": abil, "eng": eng, "bel": bel, "mself": mself, "sself": sself,
           "expct": expct, "race": race, "male": male}
    school = {"id": sid, "sizes": sizes, "control": control, "locale": locale, "region": region,
              "ses": s_ses, "qual": s_qual, "n": n_schools}
    return school, lat


def _response_sets(f: _Frame, lat: dict, school: dict) -> dict[str, np.ndarray]:
    """Unit non-response and skip sets shared by many variables (exact sizes)."""
    rng, n = f.rng, f.n
    k = lambda pct: int(round(pct / 100.0 * n))  # noqa: E731
    everyone = np.ones(n, dtype=bool)
    ses, eng, abil = lat["ses"], lat["eng"], lat["abil"]
    s = {}
    # base-year study non-participants: no X1 assessment, questionnaire or SES (8.76%)
    s["bynp"] = _pick(rng, k(8.76), everyone, np.exp(-0.3 * eng))
    # base-year parent questionnaire non-response (28.57%), including all base-year non-participants
    s["pnr"] = s["bynp"] | _pick(rng, k(28.57) - int(s["bynp"].sum()), ~s["bynp"], np.exp(-0.4 * ses))
    # not taking math / science in fall 2009: legitimate skips of the course-specific scales
    s["skip_math"] = _pick(rng, k(10.5), ~s["bynp"], np.exp(-0.5 * abil))
    s["skip_sci"] = _pick(rng, k(16.5), ~s["bynp"], np.exp(-0.3 * abil))
    # math / science teacher non-response (beyond non-participants and skips)
    s["tm_nr"] = _pick(rng, k(8.4), ~(s["bynp"] | s["skip_math"]))
    s["ts_nr"] = _pick(rng, k(9.05), ~(s["bynp"] | s["skip_sci"]))
    # first follow-up (2012): questionnaire non-response > no assessment > no SES
    s["f1_q"] = _pick(rng, k(15.42), everyone, np.exp(-0.35 * eng - 0.2 * ses))
    s["f1_test"] = _pick(rng, k(12.38), s["f1_q"])
    s["f1_ses"] = _pick(rng, k(10.99), s["f1_test"])
    s["f1_skip_math"] = _pick(rng, k(13.5), ~s["f1_q"], np.exp(-0.4 * abil))
    # 2016 second follow-up unit non-response (26.24%), MAR on earlier traits
    s["u"] = _pick(rng, k(26.24), everyone, np.exp(-0.35 * ses - 0.3 * eng - 0.15 * abil))
    # 2013 update non-response overlaps strongly with 2016 non-response
    s["s3_nr"] = _pick(rng, k(26.9), everyone, np.exp(1.6 * s["u"] - 0.2 * eng))
    return s


# ---- base year (2009) ------------------------------------------------------------------------


def _scale(f: _Frame, name: str, latent: np.ndarray, noise: float) -> np.ndarray:
    lo, hi = f.rng_of(name)
    x = _std(latent + f.rng.normal(0, noise, f.n))
    return f.num(name, x, lo, hi, _SCALE_DECIMALS)


def _skewed_scale(f: _Frame, name: str, z: np.ndarray) -> np.ndarray:
    """A left-skewed scale below the registry maximum (no point mass at the ceiling, so that school
    fingerprints rarely collide), median about 0, rounded to 2 decimals."""
    lo, hi = f.rng_of(name)
    return np.round(np.clip(hi - hi * np.exp(-0.6 * z), lo, hi - 0.01), 2)


def _base_year(f: _Frame, lat: dict, school: dict, sets: dict) -> None:
    rng, n = f.rng, f.n
    sid = school["id"]
    ses, abil, eng, bel = lat["ses"], lat["abil"], lat["eng"], lat["bel"]
    mself, sself, expct, race, male = lat["mself"], lat["sself"], lat["expct"], lat["race"], lat["male"]
    bynp, pnr = sets["bynp"], sets["pnr"]

    # --- school-level: fingerprint and other school variables --------------------------------
    f.cat("X1CONTROL", school["control"][sid])
    f.cat("X1LOCALE", school["locale"][sid])
    f.cat("X1REGION", school["region"][sid])
    n_s = school["n"]
    sch_vals = {
        "X1SCHOOLCLI": 0.5 * school["ses"] + 0.5 * school["qual"],
        "X1COUPERTEA": 0.5 * school["ses"] + 0.3 * school["qual"],
        "X1COUPERCOU": 0.4 * school["ses"] + 0.2 * school["qual"],
        "X1COUPERPRI": 0.3 * school["ses"] + 0.4 * school["qual"],
    }
    for name, m in sch_vals.items():
        v = _skewed_scale(f, name, _std(m + rng.normal(0, 0.9, n_s)))
        f.num(name, v[sid], *f.rng_of(name), 2)
    # school-level missingness, hitting the student-level rate: counselor questionnaire
    # non-response (nested), administrator questionnaire non-response independently
    order = rng.permutation(n_s)
    cum = np.cumsum(school["sizes"][order]) / f.n

    def first_schools(pct: float) -> np.ndarray:
        chosen = np.zeros(n_s, dtype=bool)
        chosen[order[: int(np.searchsorted(cum, pct / 100.0))]] = True
        return chosen

    counselor_nr = first_schools(11.5)[sid]
    for name, pct in (("X1COUPERCOU", 11.5), ("X1COUPERTEA", 12.6), ("X1COUPERPRI", 13.96)):
        f.mask(name, counselor_nr, -8)
        f.mask(name, first_schools(pct)[sid], -9)
    # administrator non-response, drawn among schools with counselor data so that no school loses
    # all four scales (which would merge fingerprints)
    cou_school = first_schools(13.96)
    order2 = rng.permutation(np.flatnonzero(~cou_school))
    cum2 = np.cumsum(school["sizes"][order2]) / f.n
    admin_nr = np.zeros(n_s, dtype=bool)
    admin_nr[order2[: int(np.searchsorted(cum2, 0.2161))]] = True
    f.mask("X1SCHOOLCLI", admin_nr[sid], -8)
    f.cat("X1FREELUNCH", np.full(n, -5))
    f.mask("X1FREELUNCH", np.ones(n, bool), -5)
    f.cat("X1REPEAT9TH", np.full(n, -5))
    f.mask("X1REPEAT9TH", np.ones(n, bool), -5)

    # --- demographics ------------------------------------------------------------------------
    f.cat("X1SEX", np.where(male, 1, 2))
    f.top_up("X1SEX", 0.03, (-9,))
    race_miss = _pick(rng, int(round(0.0428 * n)), np.ones(n, bool))
    f.cat("X1RACE", race)
    f.mask("X1RACE", race_miss, -9)
    f.cat("X1HISPANIC", np.isin(race, [4, 5]).astype(int))
    f.mask("X1HISPANIC", race_miss, -9)
    wb_miss = _pick(rng, int(round(0.024 * n)), race_miss)
    u = rng.random(n)
    white = (race == 8) | ((race == 5) & (u < 0.6)) | ((race == 6) & (u < 0.7))
    black = (race == 3) | ((race == 6) & (u > 0.65)) | ((race == 5) & (u > 0.95))
    f.cat("X1WHITE", white.astype(int))
    f.mask("X1WHITE", wb_miss, -9)
    f.cat("X1BLACK", black.astype(int))
    f.mask("X1BLACK", wb_miss, -9)
    for name in ("X1ASIAN", "X1NATIVELANG"):
        f.cat(name, np.full(n, -5))
        f.mask(name, np.ones(n, bool), -5)
    hisp, asian = np.isin(race, [4, 5]), race == 2
    lang_p = np.where(hisp[:, None], [0.45, 0.35, 0.2], np.where(asian[:, None], [0.4, 0.4, 0.2],
                                                                   [0.93, 0.03, 0.04]))
    duallang = 1 + (rng.random(n)[:, None] > np.cumsum(lang_p, axis=1)[:, :-1]).sum(axis=1)
    f.cat("X1DUALLANG", duallang)
    f.mask("X1DUALLANG", bynp, -8)
    f.top_up("X1DUALLANG", 8.87, -9)
    lat["duallang"] = duallang

    # --- SES composites ---------------------------------------------------------------------
    lo, hi = f.rng_of("X1SES")
    x1ses = f.num("X1SES", 0.05 + 0.78 * _std(0.92 * ses + rng.normal(0, 0.39, n)), lo, hi, 4)
    lo, hi = f.rng_of("X1SES_U")
    f.num("X1SES_U", x1ses + 0.04 * (school["locale"][sid] - 2.5) + rng.normal(0, 0.08, n), lo, hi, 4)
    f.cat("X1SESQ5", _ordinal(x1ses + rng.normal(0, 1e-6, n), [1, 2, 3, 4, 5], [0.2] * 5))
    for name in ("X1SES", "X1SESQ5"):
        f.mask(name, bynp, -8)
    f.mask("X1SES_U", bynp, -8)
    f.top_up("X1SES_U", 8.77, -9)

    # --- family (parent questionnaire) ----------------------------------------------------
    single = _ordinal(0.4 * ses + rng.normal(0, 1, n), [1, 0], [0.216, 0.784]).astype(bool)
    two_p = _categorical(rng, n, [1, 2, 4, 6], [0.62, 0.11, 0.03, 0.024])
    one_p = _categorical(rng, n, [7, 8, 9, 10, 11], [0.14, 0.03, 0.03, 0.005, 0.011])
    pattern = np.where(single, one_p, two_p)
    f.cat("X1PARPATTERN", pattern)
    edu_codes, edu_p = [1, 2, 3, 4, 5, 7], [0.1, 0.36, 0.14, 0.22, 0.12, 0.06]
    mom_e = _ordinal(0.6 * ses + rng.normal(0, 0.8, n), edu_codes, edu_p)
    dad_e = _ordinal(0.6 * ses + rng.normal(0, 0.8, n), edu_codes, edu_p)
    grd_e = _ordinal(0.5 * ses + rng.normal(0, 0.9, n), edu_codes, [0.16, 0.4, 0.13, 0.17, 0.1, 0.04])
    step = rng.random(n) < 0.7
    has_mom = np.isin(pattern, [1, 2, 7]) | ((pattern == 4) & step)
    has_dad = np.isin(pattern, [1, 4, 8]) | ((pattern == 2) & step)
    f.cat("X1MOMEDU", np.where(has_mom, mom_e, 0))
    f.cat("X1DADEDU", np.where(has_dad, dad_e, 0))
    p1 = np.where(np.isin(pattern, [1, 2, 7]), mom_e, np.where(np.isin(pattern, [4, 8]), dad_e, grd_e))
    p2 = np.where(np.isin(pattern, [1, 4]), dad_e,
                  np.where(pattern == 2, grd_e, np.where(pattern == 6, mom_e, 0)))
    f.cat("X1PAR1EDU", p1)
    f.cat("X1PAR2EDU", np.where(single, 1, p2))
    paredu = np.where(single, p1, np.maximum(p1, p2))
    f.cat("X1PAREDU", paredu)
    f.mask("X1PAR2EDU", single, -7)
    f.cat("X1PARRESP", (rng.random(n) < 0.965).astype(int))

    inc_p = [0.1, 0.2, 0.17, 0.13, 0.1, 0.08, 0.05, 0.04, 0.03, 0.02, 0.015, 0.01, 0.055]
    income = _ordinal(0.8 * ses - 0.3 * single + rng.normal(0, 0.55, n), list(range(1, 14)), inc_p)
    hh = _ordinal(0.3 * rng.normal(size=n) + 0.7 * rng.normal(size=n) - 0.8 * single,
                  list(range(2, 12)), [0.08, 0.2, 0.3, 0.22, 0.11, 0.05, 0.02, 0.01, 0.005, 0.005])
    f.cat("X1FAMINCOME", income)
    f.cat("X1HHNUMBER", hh)
    mid = np.array([0, 10e3, 25e3, 45e3, 65e3, 85e3, 105e3, 125e3, 145e3, 165e3, 185e3, 205e3, 225e3, 260e3])
    ratio = mid[income] / (10830.0 + 3740.0 * (hh - 1))
    f.cat("X1POVERTY130", (ratio < 1.3).astype(int))
    f.cat("X1POVERTY185", (ratio < 1.85).astype(int))
    lat["poverty100"] = ratio < 1.0
    lat["single"] = single
    lat["pattern"] = pattern

    pexp = _ordinal(0.45 * expct + 0.35 * ses + 0.2 * abil + rng.normal(0, 0.75, n), list(range(1, 11)),
                    [0.003, 0.05, 0.01, 0.06, 0.02, 0.32, 0.02, 0.25, 0.02, 0.247])
    f.cat("X1PAREDEXPCT", pexp)
    for name in ("X1PARRESP", "X1PAR1EDU", "X1PAR2EDU", "X1PAREDU", "X1PARPATTERN", "X1MOMEDU",
                 "X1DADEDU", "X1FAMINCOME", "X1HHNUMBER", "X1POVERTY130", "X1POVERTY185", "X1PAREDEXPCT"):
        f.mask(name, pnr, -8)
    pov_extra = _pick(rng, int(round(0.0023 * n)), ~pnr)
    for name in ("X1POVERTY130", "X1POVERTY185"):
        f.mask(name, pov_extra, -9)
    for name, pct in (("X1PAR1EDU", 28.59), ("X1PAREDU", 28.6), ("X1PARPATTERN", 28.66),
                      ("X1FAMINCOME", 28.69), ("X1HHNUMBER", 28.71), ("X1POVERTY130", 28.8),
                      ("X1POVERTY185", 28.8), ("X1PAR2EDU", 43.99)):
        f.top_up(name, pct, -9)
    edu_extra = _pick(rng, int(round(0.0002 * n)), ~pnr)
    f.mask("X1MOMEDU", edu_extra, -9)
    f.mask("X1DADEDU", edu_extra, -9)
    # parents who "Don't know" how far their 9th grader will go (code 11), then item non-response
    f.top_up("X1PAREDEXPCT", 35.5, 11, weights=np.exp(-0.4 * expct))
    f.top_up("X1PAREDEXPCT", 36.05, -9)

    # --- achievement --------------------------------------------------------------------------
    lo, hi = f.rng_of("X1TXMTH")
    theta = f.num("X1TXMTH", _std(0.95 * abil + rng.normal(0, 0.3, n)), lo, hi, 4)
    lo, hi = f.rng_of("X1TXMTSCOR")
    f.num("X1TXMTSCOR", 50 + 10 * theta, lo, hi, 4)
    f.cat("X1TXMQUINT", _ordinal(theta + rng.normal(0, 1e-6, n), [1, 2, 3, 4, 5], [0.2] * 5))
    for name in ("X1TXMTH", "X1TXMTSCOR", "X1TXMQUINT"):
        f.mask(name, bynp, -8)

    stud = _ordinal(0.85 * expct + rng.normal(0, 0.55, n), list(range(1, 11)),
                    [0.006, 0.09, 0.02, 0.07, 0.03, 0.27, 0.02, 0.22, 0.03, 0.264])
    f.cat("X1STUEDEXPCT", stud)
    f.mask("X1STUEDEXPCT", bynp, -8)
    # "Don't know" (code 11) is a registry missing label; chosen more often by less-engaged students
    f.top_up("X1STUEDEXPCT", 28.46, 11, weights=np.exp(-0.5 * expct - 0.3 * eng))

    # --- attitude scales (student questionnaire) --------------------------------------------
    _scale(f, "X1MTHID", 0.72 * mself, 0.69)
    _scale(f, "X1MTHEFF", 0.7 * mself + 0.15 * abil, 0.68)
    _scale(f, "X1MTHINT", 0.65 * mself + 0.2 * eng, 0.72)
    _scale(f, "X1MTHUTI", 0.6 * mself + 0.2 * expct, 0.75)
    _scale(f, "X1SCIID", 0.72 * sself, 0.69)
    _scale(f, "X1SCIEFF", 0.7 * sself + 0.15 * abil, 0.68)
    _scale(f, "X1SCIINT", 0.65 * sself + 0.2 * eng, 0.72)
    _scale(f, "X1SCIUTI", 0.6 * sself + 0.2 * expct, 0.75)
    _scale(f, "X1SCHOOLENG", 0.8 * eng, 0.6)
    _scale(f, "X1SCHOOLBEL", 0.8 * bel, 0.6)
    for name, pct, skip in (("X1MTHID", 9.97, None), ("X1MTHEFF", 20.91, "skip_math"),
                            ("X1MTHINT", 21.74, "skip_math"), ("X1MTHUTI", 20.0, "skip_math"),
                            ("X1SCIID", 10.19, None), ("X1SCIEFF", 26.58, "skip_sci"),
                            ("X1SCIINT", 29.89, "skip_sci"), ("X1SCIUTI", 26.38, "skip_sci"),
                            ("X1SCHOOLENG", 12.14, None), ("X1SCHOOLBEL", 12.41, None)):
        f.mask(name, bynp, -8)
        if skip:
            f.mask(name, sets[skip], -7)
        f.top_up(name, pct, -9)

    iep = rng.random(n) < _sigmoid(-2.4 - 0.9 * abil)
    f.cat("X1IEPFLAG", iep.astype(int))
    f.top_up("X1IEPFLAG", 56.67, -9)
    lat["iep"] = iep

    # --- teachers -----------------------------------------------------------------------------
    cert_codes, cert_p = [0, 1, 2, 3, 5], [0.03, 0.85, 0.05, 0.03, 0.04]
    teachers = (("X1TM", "skip_math", "tm_nr", {"CERT": 27.66, "EFF": 36.42, "EXP": 34.38, "PRINC": 36.16}),
                ("X1TS", "skip_sci", "ts_nr", {"CERT": 34.31, "EFF": 41.89, "EXP": 40.44}))
    for prefix, skip, nr, pcts in teachers:
        f.cat(prefix + "CERT", _categorical(rng, n, cert_codes, cert_p))
        school_part = rng.normal(0, 0.6, school["n"])
        for item in ("EFF", "EXP", "PRINC"):
            if item in pcts:
                _scale(f, prefix + item, school_part[sid] + 0.3 * school["qual"][sid], 0.8)
        for item, pct in pcts.items():
            name = prefix + item
            f.mask(name, bynp | sets[nr], -8)
            f.mask(name, sets[skip], -7)
            f.top_up(name, pct, -9)


# ---- the DGP helper ----------------------------------------------------------------------------


def _linear_predictor(f: _Frame, effects: dict[str, float]) -> tuple[np.ndarray, list[dict]]:
    eta = np.zeros(f.n)
    info = []
    for var, beta in effects.items():
        x = f.value(var)
        mu, sd = float(x.mean()), float(x.std())
        eta += beta * (x - mu) / sd
        info.append({"variable": var, "standardized_effect": beta, "mean": round(mu, 6), "sd": round(sd, 6),
                     "encoding": "value" if f.kind[var] == "num" else "layout code"})
    return eta, info


def _ranked(info: list[dict], scale: float) -> list[dict]:
    out = sorted(info, key=lambda e: -abs(e["standardized_effect"]))
    for rank, e in enumerate(out, start=1):
        e["effect"] = round(scale * e["standardized_effect"], 6)
        e["rank"] = rank
    return [{"variable": e["variable"], "effect": e["effect"], "rank": e["rank"],
             "standardized_effect": e["standardized_effect"], "encoding": e["encoding"],
             "mean": e["mean"], "sd": e["sd"]} for e in out]


def _continuous_outcome(f: _Frame, school: dict, name: str, dgp: dict) -> np.ndarray:
    spec = OUTCOME_SPECS[name]
    signal, info = _linear_predictor(f, spec["effects"])
    noise_var = signal.var() * (1.0 / spec["r2"] - 1.0)
    s_sd = np.sqrt(spec["school_share"] * noise_var)
    e_sd = np.sqrt((1 - spec["school_share"]) * noise_var)
    latent = signal + f.rng.normal(0, s_sd, school["n"])[school["id"]] + f.rng.normal(0, e_sd, f.n)
    b = spec["sd"] / latent.std()
    a = spec["mean"] - b * latent.mean()
    y = a + b * latent
    dgp[name] = {
        "question": spec["question"], "link": "identity", "intercept": round(float(a), 6),
        "noise_sd": round(float(b * np.sqrt(noise_var)), 6), "school_noise_sd": round(float(b * s_sd), 6),
        "scale": round(float(b), 6), "population_r2": round(float(np.var(b * signal) / np.var(y)), 4),
        "effects": _ranked(info, float(b)),
        "formula": "y = intercept + sum(effect * (x - mean) / sd) + school effect + noise, then clipped "
                   "to the registry range and rounded",
    }
    return y


def _logistic_eta(f: _Frame, school: dict, name: str, population: np.ndarray, race: np.ndarray,
                  dgp: dict) -> tuple[np.ndarray, np.ndarray]:
    """The linear predictor (incl. normal noise) with its intercept calibrated on `population`."""
    spec = OUTCOME_SPECS[name]
    signal, info = _linear_predictor(f, spec["effects"])
    signal = spec["scale"] * signal
    noise = f.rng.normal(0, spec["school_sd"], school["n"])[school["id"]]
    extra = np.zeros(f.n)
    if name in DISPARITY["outcomes"]:
        grp = race == DISPARITY["code"]
        extra[grp] = f.rng.normal(0, DISPARITY["extra_noise_sd"], int(grp.sum()))
    eta0 = signal + noise + extra
    lo, hi = -15.0, 15.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _sigmoid(mid + eta0[population]).mean() < spec["base_rate"]:
            lo = mid
        else:
            hi = mid
    b0 = 0.5 * (lo + hi)
    dgp[name] = {
        "question": spec["question"], "link": "logistic", "intercept": round(float(b0), 6),
        "noise_sd": spec["school_sd"], "school_noise_sd": spec["school_sd"], "scale": spec["scale"],
        "base_rate_target": spec["base_rate"], "population": spec["population"],
        "effects": _ranked(info, spec["scale"]),
        **({"observed_as": spec["observed_as"]} if "observed_as" in spec else {}),
        "formula": "logit P(y=1) = intercept + sum(effect * (x - mean) / sd) + school effect "
                   "(+ disparity noise); standard logistic noise on top",
    }
    return b0 + eta0, signal


# ---- first follow-up (2012) --------------------------------------------------------------------


def _first_follow_up(f: _Frame, lat: dict, school: dict, sets: dict, dgp: dict) -> None:
    rng, n = f.rng, f.n
    ses, abil, eng, bel, mself, expct = (lat[k] for k in ("ses", "abil", "eng", "bel", "mself", "expct"))

    y = _continuous_outcome(f, school, "X2TXMTSCOR", dgp)
    lo, hi = f.rng_of("X2TXMTSCOR")
    score = f.num("X2TXMTSCOR", y, lo, hi, 4)
    lo, hi = f.rng_of("X2TXMTH")
    f.num("X2TXMTH", 0.9 + 1.0 * (score - 50) / 10, lo, hi, 4)
    f.cat("X2TXMQUINT", _ordinal(score + rng.normal(0, 1e-6, n), [1, 2, 3, 4, 5], [0.2] * 5))
    for name in ("X2TXMTSCOR", "X2TXMTH", "X2TXMQUINT"):
        f.mask(name, sets["f1_test"], -8)
    zs = _std(score)
    lat["x2math"] = zs

    lo, hi = f.rng_of("X2SES")
    f.num("X2SES", 0.02 + 0.72 * _std(0.85 * _std(f.value("X1SES")) + rng.normal(0, 0.5, n)), lo, hi, 4)
    f.mask("X2SES", sets["f1_ses"], -8)

    _scale(f, "X2MTHID", 0.45 * _std(f.value("X1MTHID")) + 0.35 * mself + 0.1 * zs, 0.75)
    _scale(f, "X2MTHEFF", 0.3 * _std(f.value("X1MTHEFF")) + 0.3 * mself + 0.15 * zs, 0.85)
    _scale(f, "X2MTHINT_R", 0.35 * _std(f.value("X1MTHINT")) + 0.3 * mself + 0.1 * eng, 0.85)
    _scale(f, "X2MTHUTI", 0.4 * _std(f.value("X1MTHUTI")) + 0.3 * mself + 0.1 * expct, 0.8)
    for name, pct in (("X2MTHID", 15.42), ("X2MTHEFF", 15.91), ("X2MTHUTI", 15.44), ("X2MTHINT_R", 29.59)):
        f.mask(name, sets["f1_q"], -8)
        if name == "X2MTHINT_R":
            f.mask(name, sets["f1_skip_math"], -7)
        f.top_up(name, pct, -9)

    exp2 = _ordinal(0.5 * expct + 0.25 * zs + 0.15 * ses + rng.normal(0, 0.75, n), list(range(1, 13)),
                    [0.01, 0.07, 0.02, 0.05, 0.02, 0.07, 0.03, 0.3, 0.03, 0.2, 0.02, 0.18])
    f.cat("X2STUEDEXPCT", exp2)
    f.mask("X2STUEDEXPCT", sets["f1_q"], -8)
    f.top_up("X2STUEDEXPCT", 21.34, 13, weights=np.exp(-0.4 * expct))

    first = np.unique(school["id"], return_index=True)[1]
    z2 = _std(0.6 * f.value("X1SCHOOLCLI")[first] + rng.normal(0, 0.8, school["n"]))
    sch = _skewed_scale(f, "X2SCHOOLCLI", z2)
    f.num("X2SCHOOLCLI", sch[school["id"]], *f.rng_of("X2SCHOOLCLI"), 2)
    order = rng.permutation(school["n"])
    cum = np.cumsum(school["sizes"][order]) / n
    nr = np.zeros(school["n"], dtype=bool)
    nr[order[: int(np.searchsorted(cum, 0.2733))]] = True
    f.mask("X2SCHOOLCLI", nr[school["id"]], -8)

    # ever dropped out by spring 2012 (about 5%)
    risk = -1.1 * eng - 0.5 * abil - 0.45 * ses - 0.3 * bel + 0.4 * lat["iep"]
    x2drop = _pick(rng, int(round(0.05 * n)), np.ones(n, bool), np.exp(risk))
    f.cat("X2EVERDROP", x2drop.astype(int))
    status = _categorical(rng, n, [1, 2, 3, 4, 6, 7, 8], [0.84, 0.09, 0.01, 0.005, 0.025, 0.025, 0.005])
    current = x2drop & (rng.random(n) < 0.6)
    f.cat("X2ENROLSTAT", np.where(current, 5, np.where(x2drop & (status == 1), 6, status)))
    lat["x2drop"] = x2drop


# ---- second follow-up / transcripts (2013) -----------------------------------------------------


def _second_follow_up(f: _Frame, lat: dict, school: dict, sets: dict, dgp: dict) -> None:
    rng, n = f.rng, f.n
    ses, abil, eng, sself, expct = (lat[k] for k in ("ses", "abil", "eng", "sself", "expct"))
    zs = lat["x2math"]
    new_drop = _pick(rng, int(round(0.022 * n)), ~lat["x2drop"], np.exp(-1.0 * eng - 0.4 * ses))
    x3drop = lat["x2drop"] | new_drop
    f.cat("X3EVERDROP", x3drop.astype(int))
    lat["x3drop"] = x3drop

    y = _continuous_outcome(f, school, "X3TGPAACAD", dgp)
    gpa = f.num("X3TGPAACAD", y, 0.25, 4.0, 2)
    zg = _std(gpa)
    lat["gpa"] = zg
    subj = {"X3TGPAMAT": 0.2 * zs - 0.05, "X3TGPAENG": 0.1 * (~lat["male"]) + 0.05,
            "X3TGPASCI": 0.1 * sself - 0.05, "X3TGPASOCST": 0.03}
    for name, shift in subj.items():
        f.num(name, gpa + shift + rng.normal(0, 0.33, n), 0.25, 4.0, 2)
    f.num("X3TGPASTEM", 0.5 * (f.data["X3TGPAMAT"] + f.data["X3TGPASCI"]) + rng.normal(0, 0.12, n),
          0.25, 4.0, 2)

    def half(x: np.ndarray) -> np.ndarray:
        return np.round(x * 2) / 2

    drop_pen = np.where(x3drop, -1.5, 0.0)
    eng_c = f.num("X3TCREDENG", half(4.1 + 0.3 * zg + 0.6 * drop_pen + rng.normal(0, 0.5, n)), 0, 9)
    mat_c = f.num("X3TCREDMAT", half(3.8 + 0.35 * zs + 0.2 * zg + 0.6 * drop_pen + rng.normal(0, 0.55, n)),
                  0, 8)
    sci_c = f.num("X3TCREDSCI", half(3.4 + 0.3 * sself + 0.25 * zg + 0.6 * drop_pen + rng.normal(0, 0.6, n)),
                  0, 8)
    soc_c = f.num("X3TCREDSOCST", half(3.6 + 0.2 * zg + 0.6 * drop_pen + rng.normal(0, 0.5, n)), 0, 8)
    other = np.clip(11.5 + 0.4 * zg + 0.3 * eng + 2.5 * drop_pen + rng.normal(0, 2.4, n), 0, None)
    f.num("X3TCREDTOT", half(eng_c + mat_c + sci_c + soc_c + other), 0, 36)

    def ap(latent: np.ndarray, share: float, amounts: list[float], probs: list[float]) -> np.ndarray:
        take = _pick(rng, int(round(share * n)), np.ones(n, bool), np.exp(latent))
        return np.where(take, _categorical(rng, n, amounts, probs), 0.0)

    f.num("X3TCREDAPMTH", ap(1.3 * zs + 0.7 * zg + 0.4 * ses + 0.3 * lat["mself"], 0.15,
                             [0.5, 1, 2, 3], [0.1, 0.62, 0.23, 0.05]), 0, 3)
    apsci = f.num("X3TCREDAPSCI", ap(1.0 * zs + 0.7 * zg + 0.4 * ses + 0.9 * sself, 0.12,
                                     [0.5, 1, 2, 3, 4], [0.08, 0.6, 0.23, 0.07, 0.02]), 0, 4)
    f.num("X3TCREDAPENG", ap(1.0 * zg + 0.4 * ses + 0.5 * expct, 0.16,
                             [0.5, 1, 2, 3], [0.1, 0.6, 0.25, 0.05]), 0, 3)
    f.cat("X3TCREDAP", np.full(n, -5))
    f.mask("X3TCREDAP", np.ones(n, bool), -5)
    hisci = _ordinal(0.5 * sself + 0.4 * zg + 0.3 * abil + rng.normal(0, 0.8, n), [0, 1, 2, 3, 5],
                     [0.012, 0.05, 0.47, 0.33, 0.138])
    f.cat("X3THISCI", np.where(apsci > 0, 5, hisci))

    trans = _pick(rng, int(round(0.067 * n)), np.ones(n, bool), np.exp(1.2 * x3drop))
    for name in ("X3TCREDENG", "X3TCREDMAT", "X3TCREDSCI", "X3TCREDSOCST", "X3TCREDTOT", "X3TCREDAPENG",
                 "X3TCREDAPMTH", "X3TCREDAPSCI", "X3THISCI", "X3TGPAACAD", "X3TGPAMAT", "X3TGPAENG",
                 "X3TGPASCI", "X3TGPASOCST", "X3TGPASTEM"):
        f.mask(name, trans, -8)
    for name, pct in (("X3THISCI", 6.95), ("X3TGPAACAD", 7.0), ("X3TGPAMAT", 7.41), ("X3TGPAENG", 7.4),
                      ("X3TGPASCI", 7.76), ("X3TGPASOCST", 8.21), ("X3TGPASTEM", 7.14)):
        f.top_up(name, pct, -9)
    sets["trans"] = trans



# ---- 2016 second follow-up ---------------------------------------------------------------------


def _update_panel(f: _Frame, lat: dict, school: dict, sets: dict, dgp: dict) -> None:
    rng, n = f.rng, f.n
    u = sets["u"]
    resp = ~u
    race, ses, zg, zs = lat["race"], lat["ses"], lat["gpa"], lat["x2math"]

    # correlated logistic noise for attendance and non-completion (Gaussian copula)
    z1 = rng.normal(size=n)
    z2 = ATTEND_DROPOUT_NOISE_CORR * z1 + np.sqrt(1 - ATTEND_DROPOUT_NOISE_CORR ** 2) * rng.normal(size=n)
    eta_att, _ = _logistic_eta(f, school, "X4EVRATNDCLG", resp, race, dgp)
    attend = eta_att + _logistic_from_normal(z1) > 0
    eta_drop, _ = _logistic_eta(f, school, "dropout_derived", resp, race, dgp)
    nocred = eta_drop + _logistic_from_normal(z2) > 0

    f.cat("X4EVRATNDCLG", attend.astype(int))
    f.mask("X4EVRATNDCLG", u, -8)
    # the leakage trap: applied/registered at a college, a near-copy of attendance
    applied = attend.copy()
    flip_no = _pick(rng, int(round((1 - LEAKAGE_AGREEMENT) * 0.85 * resp.sum())), resp & ~attend)
    flip_yes = _pick(rng, int(round((1 - LEAKAGE_AGREEMENT) * 0.15 * resp.sum())), resp & attend)
    applied[flip_no] = True
    applied[flip_yes] = False
    f.cat("X4EVRAPPCLG", applied.astype(int))
    f.mask("X4EVRAPPCLG", u, -8)
    f.top_up("X4EVRAPPCLG", 28.37, -9)

    ged = ~nocred & (rng.random(n) < np.where(lat["x3drop"], 0.45, 0.02))
    f.cat("X4HSCOMPSTAT", np.where(nocred, 3, np.where(ged, 2, 1)))
    f.mask("X4HSCOMPSTAT", u, -8)
    everdrop = lat["x3drop"] | (nocred & (rng.random(n) < 0.85)) | (ged & (rng.random(n) < 0.6))
    f.cat("X4EVERDROP", everdrop.astype(int))
    f.mask("X4EVERDROP", u, -8)
    f.top_up("X4EVERDROP", 26.26, -9)

    att = attend & resp  # attenders known to the 2016 survey
    noatt = ~attend & resp
    sets["att"], sets["noatt"] = att, noatt

    # first institution
    lvl_lat = 1.1 * zg + 0.6 * ses + 0.4 * lat["expct"] + rng.normal(0, 1, n)
    level = _ordinal(lvl_lat, [3, 2, 1], [0.05, 0.4, 0.55])
    sec4 = _categorical(rng, n, [1, 2, 3, 4, 5, 6], [0.35, 0.18, 0.04, 0.18, 0.17, 0.08])
    sec2 = _categorical(rng, n, [7, 8, 9], [0.88, 0.03, 0.09])
    sec1 = _categorical(rng, n, [10, 11, 12], [0.3, 0.1, 0.6])
    sector = np.where(level == 1, sec4, np.where(level == 2, sec2, sec1))
    ctrl_of = np.array([0, 1, 1, 1, 2, 2, 3, 1, 2, 3, 1, 2, 3])
    sel4 = _ordinal(1.2 * zg + 0.5 * zs + 0.4 * ses + rng.normal(0, 1, n), [4, 3, 2, 1],
                    [0.06, 0.3, 0.44, 0.2])
    sel4 = np.where(rng.random(n) < 0.04, 4, sel4)
    select = np.where(level == 1, sel4, np.where(level == 2, 5, 6))
    deg4 = _categorical(rng, n, [1, 2, 3, 4], [0.88, 0.03, 0.01, 0.08])
    deg2 = _categorical(rng, n, [2, 3, 4], [0.65, 0.1, 0.25])
    deg1 = _categorical(rng, n, [3, 4], [0.85, 0.15])
    degtype = np.where(level == 1, deg4, np.where(level == 2, deg2, deg1))

    # reference institution: the first one, or a transfer (2-year -> 4-year mostly)
    transfer = rng.random(n) < np.where(level == 2, 0.3, 0.12)
    rlevel = np.where(transfer & (level == 2), 1, np.where(transfer & (level == 1), 2, level))
    rsector = np.where(transfer, np.where(rlevel == 1, _categorical(rng, n, [1, 2, 3, 4, 5, 6],
                                                                   [0.3, 0.25, 0.06, 0.12, 0.17, 0.1]),
                                          np.where(rlevel == 2, 7, sector)), sector)
    rlevel = np.where(rsector <= 6, 1, np.where(rsector <= 9, 2, 3))
    rdeg = np.where(transfer, np.where(rlevel == 1, deg4, np.where(rlevel == 2, deg2, deg1)), degtype)
    # "No reference degree" (code 4) for about 9% of attenders: their major is a legitimate skip
    nodeg = _pick(rng, int(round(0.09 * att.sum())), att, np.exp(-0.5 * zg))
    rdeg = np.where(nodeg, 4, np.where(rdeg == 4, 1 + (rlevel - 1), rdeg))
    rdeg = np.where((rdeg == 1) & (rlevel != 1), 2, rdeg)

    postsec = {"X4PS1SECTOR": sector, "X4PS1LEVEL": level, "X4PS1CTRL": ctrl_of[sector],
               "X4PS1SELECT": select, "X4PS1DEGTYPE1": degtype, "X4REFSECTOR": rsector,
               "X4REFLEVEL": rlevel, "X4REFCTRL": ctrl_of[rsector], "X4REFDEGTYPE": rdeg}

    # attainment and persistence
    pers = 0.8 * zg + 0.3 * ses + rng.normal(0, 1, n)
    q = _ordinal(pers, [0, 1, 2], [0.3, 0.5, 0.2])
    early = rng.random(n)
    lvla = np.select(
        [rlevel == 1, rlevel == 2],
        [np.where(q == 0, 6, np.where((q == 2) & (early < 0.06), 1, 4)),
         np.where(q == 0, 6, np.where(q == 2, np.where(early < 0.5, 2, 4), np.where(early < 0.15, 3, 5)))],
        np.where(q == 0, 6, np.where(early < 0.6, 3, 5)),
    )
    tfi = np.select([np.isin(lvla, [1, 2, 3]) & ~transfer, lvla == 6, transfer],
                    [lvla, 6, 5], np.where(np.isin(lvla, [4, 5]), 4, 5))
    postsec["X4ATPRLVLA"] = lvla
    postsec["X4ATPRTFI"] = tfi

    on_time = _categorical(rng, n, [0, 1, 2, 3, 4], [0.04, 0.04, 0.3, 0.55, 0.07])
    delayed = np.minimum(30, 4 + np.round(rng.exponential(6 + 3 * (level != 1), n)))
    months = np.where(rng.random(n) < 0.8, on_time, delayed)
    f.num("X4HS2PSMOS", months, 0, 30, 0)
    lat["ps_months"] = months

    # taking postsecondary classes in November 2013 (2013 update): students who enrolled within
    # about five months of high school. An earlier-wave (2013) near-proxy of X4EVRATNDCLG, generated
    # from the realised attendance, as in the real file; it is not a predictor in the outcome's DGP.
    classes = (attend & (months <= 5)) ^ (rng.random(n) < 0.03)
    f.cat("S3CLASSES", np.where(classes, 1, 2))
    f.mask("S3CLASSES", sets["s3_nr"], -8)
    f.top_up("S3CLASSES", 27.7, 3)
    f.top_up("S3CLASSES", 28.19, -9)

    for name, codes in postsec.items():
        f.cat(name, codes)
    for name, pct in (("X4PS1SECTOR", 45.16), ("X4PS1LEVEL", 44.87), ("X4PS1CTRL", 44.91),
                      ("X4PS1SELECT", 44.87), ("X4PS1DEGTYPE1", 44.9), ("X4REFSECTOR", 45.33),
                      ("X4REFLEVEL", 44.99), ("X4REFCTRL", 45.06), ("X4REFDEGTYPE", 44.87),
                      ("X4ATPRLVLA", 45.04), ("X4ATPRTFI", 44.9), ("X4HS2PSMOS", 45.15)):
        f.mask(name, u, -8)
        f.mask(name, noatt, -7)
        f.top_up(name, pct, -9)
    for name in ("X4REFDEG", "X4RFDGMJ16"):
        f.cat(name, np.full(n, -5))
        f.mask(name, np.ones(n, bool), -5)

    ever2y = (sector == 7) | (rsector == 7) | (rng.random(n) < 0.05)
    f.cat("X4EVR2YPUB", (att & ever2y).astype(int))
    f.mask("X4EVR2YPUB", u, -8)
    f.top_up("X4EVR2YPUB", 26.72, -9)

    # major of the reference degree: STEM (codes 1-3) from the STEM DGP, else another field
    eta_stem, _ = _logistic_eta(f, school, "X4RFDGMJSTEM", att & (rdeg != 4), race, dgp)
    stem = eta_stem + rng.logistic(0, 1, n) > 0
    field_stem = _categorical(rng, n, [1, 2, 3], [0.3, 0.3, 0.4])
    field_other = _categorical(rng, n, [4, 5, 6, 7, 8, 9, 10], [0.15, 0.15, 0.1, 0.22, 0.2, 0.06, 0.12])
    field = np.where(stem, field_stem, field_other)
    to12 = np.array([0, 1, 2, 3, 4, 5, 5, 9, 10, 11, 11])
    f12 = to12[field]
    sub = (rdeg != 1) & (field == 10)
    f12 = np.where(sub, _categorical(rng, n, [6, 7, 8, 11], [0.3, 0.3, 0.1, 0.3]), f12)
    f.cat("X4RFDGMJ14Y", field)
    f.cat("X4RFDGMJ12Y", f12)
    f.cat("X4RFDGMJSTEM", stem.astype(int))
    dk = _pick(rng, int(round(0.0065 * n)), att & (rdeg != 4))
    for name in ("X4RFDGMJ14Y", "X4RFDGMJ12Y", "X4RFDGMJSTEM"):
        f.mask(name, u, -8)
        f.mask(name, noatt, -7)
        f.mask(name, att & (rdeg == 4), -7)
        f.mask(name, dk, -1)
    extra = _pick(rng, int(round(0.5081 * n)) - int(f.missing("X4RFDGMJSTEM").sum()),
                  ~f.missing("X4RFDGMJSTEM"))
    for name in ("X4RFDGMJ14Y", "X4RFDGMJ12Y", "X4RFDGMJSTEM"):
        f.mask(name, extra, -9)
    lat["stem"], lat["lvla"], lat["sector"], lat["transfer"] = stem, lvla, sector, transfer
    lat["attend"], lat["nocred"] = attend, nocred


# ---- postsecondary transcripts and records (2017) ---------------------------------------------


def _postsecondary(f: _Frame, lat: dict, sets: dict) -> None:
    rng, n = f.rng, f.n
    u, att, noatt = sets["u"], sets["att"], sets["noatt"]
    sr = np.where(u, 3, np.where(noatt, 0, np.where(rng.random(n) < 0.85, 1, 2)))
    tr = np.where(u, 3, np.where(noatt, 0, np.where(rng.random(n) < 0.8, 1, 2)))
    f.cat("X5SRRESP", sr)
    f.cat("X5TRANRESP", tr)

    months = lat["ps_months"]
    ay = np.where(months <= 9, 2014, np.where(months <= 21, 2015, 2016))
    ay = np.where(rng.random(n) < 0.05, 2013, ay)
    ay = np.where(rng.random(n) < 0.004, 2012, ay)
    f.cat("X5POSTHSAY", ay)
    sec = np.where(lat["sector"] == 11, 12, lat["sector"])
    f.cat("X5PS1SEC", sec)
    enr = np.array([0, 13, 9, 5, 3, 2, 1])[lat["lvla"]]
    enr = np.where((enr == 9) & (rng.random(n) < 0.4), 11, enr)
    enr = np.where((enr == 5) & (rng.random(n) < 0.3), 6, enr)
    enr = np.where((enr == 13) & (rng.random(n) < 0.3), 15, enr)
    f.cat("X5ENRATT", enr)
    for name, pct in (("X5POSTHSAY", 45.15), ("X5PS1SEC", 44.57), ("X5ENRATT", 46.02)):
        f.mask(name, u, -8)
        f.mask(name, noatt, (-7, -6))
        f.top_up(name, pct, -9)

    # STEM credits attempted and GPA (SMART and NCES definitions)
    zg = lat["gpa"]
    stem = lat["stem"]
    zero1 = _pick(rng, int(round(0.137 * att.sum())), att, np.exp(-1.5 * stem - 0.5 * lat["x2math"]))
    cred1 = np.where(zero1, 0.0, np.round(rng.gamma(2.0, 6.0 + 9.0 * stem + 1.5 * zg.clip(-2, 2) + 3.0, n)))
    cred1 = np.where(~zero1 & (cred1 == 0), 1.0, cred1)
    pos3 = zero1 & (rng.random(n) < 0.05)
    cred3 = cred1 + np.where(pos3 | ~zero1, np.round(rng.gamma(1.5, 3.0, n)) + pos3, 0.0)
    f.num("X5STEM1ATT", cred1, 0, 115, 0)
    f.num("X5STEM3ATT", cred3, 0, 120, 0)
    gpa_stem = f.value("X3TGPASTEM")
    g1 = 0.4 + 0.75 * gpa_stem + rng.normal(0, 0.55, n)
    f.num("X5STEM1GPA", g1, 0, 4, 2)
    f.num("X5STEM3GPA", 0.7 * g1 + 0.3 * (0.4 + 0.75 * gpa_stem) + rng.normal(0, 0.3, n), 0, 4, 2)
    for name, zero, pct in (("X5STEM1ATT", None, 44.89), ("X5STEM3ATT", None, 44.89),
                            ("X5STEM1GPA", cred1 == 0, 52.44), ("X5STEM3GPA", cred3 == 0, 52.05)):
        f.mask(name, u, -8)
        f.mask(name, noatt, -7)
        if zero is not None:
            f.mask(name, att & zero, -7)
        f.top_up(name, pct, -9)

    degree = np.isin(lat["lvla"], [1, 2, 3])
    f.cat("X5STEMCRED", (degree & stem).astype(int))
    f.mask("X5STEMCRED", u, -8)
    f.mask("X5STEMCRED", noatt, -7)
    f.top_up("X5STEMCRED", 61.57, -6, eligible=att)
    f.notes.append("X5STEMCRED: 'Component not applicable' is assigned at random to about 30% of attenders "
                   "to reach the recorded missing rate.")


# ---- Tier 2 items ------------------------------------------------------------------------------


def _tier2(f: _Frame, lat: dict, sets: dict) -> None:
    rng, n = f.rng, f.n
    bynp, pnr = sets["bynp"], sets["pnr"]
    for name, src, reverse, probs in _TIER2_ITEMS:
        latent = 0.8 * _std(f.value(src)) + rng.normal(0, 0.6, n)
        # code 1 ("Strongly agree" / "Never") for the highest composite, or the lowest if reversed
        codes = _ordinal(latent, _AGREE, probs) if reverse else _ordinal(latent, _AGREE[::-1], probs[::-1])
        f.cat(name, codes)
        f.miss[name] = np.where(f.miss[src] == -5, -9, f.miss[src]).copy()
        if -7 not in f.layout.codes(name):
            f.miss[name] = np.where(f.miss[name] == -7, -9, f.miss[name])
        f.top_up(name, 100 * f.share(f.missing(name)) + 1.2, -9)

    f.cat("S1MFALL09", (~sets["skip_math"]).astype(int))
    f.cat("S1SFALL09", (~sets["skip_sci"]).astype(int))
    grade = _ordinal(0.8 * lat["abil"] + 0.4 * lat["eng"] + rng.normal(0, 0.6, n), [5, 4, 3, 2, 1],
                     [0.02, 0.06, 0.2, 0.37, 0.35])
    f.cat("S1M8GRADE", np.where(rng.random(n) < 0.02, 6, grade))
    club = _pick(rng, int(round(0.05 * n)), np.ones(n, bool), np.exp(1.2 * lat["mself"]))
    f.cat("S1MCLUB", club.astype(int))
    for name in ("S1MFALL09", "S1SFALL09", "S1M8GRADE", "S1MCLUB"):
        f.mask(name, bynp, -8)
        f.top_up(name, 100 * f.share(f.missing(name)) + 1.0, -9)

    pattern = lat["pattern"]
    mar = np.where(np.isin(pattern, [1, 4]), _categorical(rng, n, [1, 2, 3], [0.93, 0.04, 0.03]),
                   _categorical(rng, n, [1, 2, 3, 4, 5], [0.3, 0.3, 0.1, 0.25, 0.05]))
    f.cat("P1MARSTAT", mar)
    f.cat("P1OWNHOME", _ordinal(0.8 * lat["ses"] + rng.normal(0, 0.6, n), [3, 2, 1], [0.05, 0.3, 0.65]))
    repeated = _pick(rng, int(round(0.1 * n)), np.ones(n, bool), np.exp(-1.0 * lat["abil"]))
    f.cat("P1REPEATGRD", repeated.astype(int))
    dual = lat["duallang"]
    f.cat("P1HOMELANG", (rng.random(n) < np.where(dual > 1, 0.9, 0.06)).astype(int))
    for name in ("P1MARSTAT", "P1OWNHOME", "P1REPEATGRD", "P1HOMELANG"):
        f.mask(name, pnr, -8)
        f.top_up(name, 100 * f.share(f.missing(name)) + 0.8, -9)

    zs, zg_pre = lat["x2math"], lat["expct"]
    f.cat("S2CLGTOUR", (rng.random(n) < _sigmoid(0.2 + 0.6 * zg_pre + 0.4 * lat["ses"])).astype(int))
    sat = _ordinal(0.6 * zs + 0.4 * zg_pre + rng.normal(0, 0.8, n), [0, 1, 2, 3], [0.55, 0.28, 0.1, 0.07])
    f.cat("S2SATNUM", np.where(rng.random(n) < 0.02, 4, sat))
    f.cat("S2SUREBA", _ordinal(0.9 * zg_pre + 0.3 * zs + rng.normal(0, 0.6, n), [4, 3, 2, 1],
                               [0.06, 0.12, 0.32, 0.5]))
    f.cat("S2ABSENT", _ordinal(-0.9 * lat["eng"] + rng.normal(0, 0.7, n), [1, 2, 3, 4, 5],
                               [0.12, 0.4, 0.3, 0.1, 0.08]))
    for name in ("S2CLGTOUR", "S2SATNUM", "S2SUREBA", "S2ABSENT"):
        f.mask(name, sets["f1_q"], -8)
        f.top_up(name, 100 * f.share(f.missing(name)) + 1.5, -9)

    f.cat("X2SESQ5", _ordinal(f.value("X2SES") + rng.normal(0, 1e-6, n), [1, 2, 3, 4, 5], [0.2] * 5))
    f.mask("X2SESQ5", sets["f1_ses"], -8)
    pov = lat["poverty100"] ^ (rng.random(n) < 0.08)
    f.cat("X2POVERTY", pov.astype(int))
    f.mask("X2POVERTY", sets["f1_ses"], -8)
    f.cat("X2MACC", (rng.random(n) < np.where(lat["iep"], 0.35, 0.02)).astype(int))
    f.mask("X2MACC", sets["f1_test"], -8)


# ---- Tier 3: weights, status variables, flags ------------------------------------------------


def _tier3(f: _Frame, lat: dict, school: dict, sets: dict) -> None:
    rng, n = f.rng, f.n
    sid = school["id"]
    s_w = np.exp(rng.normal(np.log(40), 0.6, school["n"]))
    w1 = np.round(s_w[sid] * np.exp(rng.normal(np.log(4.5), 0.3, n)), 4)
    f.raw("W1STUDENT", w1)
    for r in range(1, 6):
        f.raw(f"W1STUDENT{r:03d}", np.round(w1 * np.exp(rng.normal(0, 0.15, school["n"]))[sid], 4))
    f.raw("W1PARENT", np.round(w1 * 1.35 * np.exp(rng.normal(0, 0.2, n)), 4))
    f.raw("W2W1STU", np.round(w1 * 1.15 * np.exp(rng.normal(0, 0.2, n)), 4))
    f.raw("W4W1STU", np.round(w1 * 1.4 * np.exp(rng.normal(0, 0.25, n)), 4))

    f.cat("X1SQSTAT", np.where(sets["bynp"], 8, _categorical(rng, n, [1, 2, 3], [0.95, 0.03, 0.02])))
    f.cat("X1PQSTAT", np.where(sets["pnr"], 8, 1))
    f.cat("X2SQSTAT", np.where(sets["f1_q"], 8, _categorical(rng, n, [1, 2, 3, 4], [0.85, 0.08, 0.05, 0.02])))
    f.cat("X4SQSTAT", np.where(sets["u"], 8, _categorical(rng, n, [1, 2, 3, 4], [0.6, 0.25, 0.1, 0.05])))

    for name, share in _IMPUTATION_FLAGS.items():
        if name in f.layout.labels:
            imputed = min(c for c in f.layout.substantive_codes(name) if c > 0)
            f.cat(name, np.where(rng.random(n) < share, imputed, 0))
    # SES components were imputed for parent non-respondents who took part in the base year
    f.cat("X1SES_IM", np.where(sets["pnr"] & ~sets["bynp"], 2, (rng.random(n) < 0.01).astype(int)))
    for name in ("X4EVRATNDCLG_IM", "X4HSCOMPSTAT_IM"):
        f.cat(name, (rng.random(n) < 0.01).astype(int))
        f.mask(name, sets["u"], -8)
    f.cat("S4EVRATNDCLG_I", (rng.random(n) < 0.04).astype(int))
    f.mask("S4EVRATNDCLG_I", sets["u"], -8)

    for name in ("X5DUALFLG", "X5DUALCRSFLG", "X5DUALDTFLG"):
        f.cat(name, _categorical(rng, n, [1, 2, 3], [0.02, 0.25, 0.73]))
        f.mask(name, sets["u"], -8)
        f.mask(name, sets["noatt"], -6)


# ---- assembly and the dgp dict ----------------------------------------------------------------


def _assemble(f: _Frame, registry: Any, layout: Any) -> pd.DataFrame:
    n = f.n
    names = [nm for nm in f.kind if nm in layout.labels]
    missing_t1 = [nm for nm, rec in registry.tier1.items() if not rec.get("derived") and nm not in f.kind]
    if missing_t1:
        raise RuntimeError(f"synthetic generator does not produce Tier 1 variables: {missing_t1}")
    position = {nm: i for i, nm in enumerate(layout.labels)}
    names.sort(key=lambda nm: position[nm])
    perm = f.rng.permutation(n)
    cols: dict[str, Any] = {"STU_ID": np.arange(10001, 10001 + n, dtype=np.int64)}
    for nm in names:
        col = f.column(nm)
        cols[nm] = col[perm]
    return pd.DataFrame(cols)


def _dgp_dict(f: _Frame, seed: int, n: int, n_schools: int, outcomes: dict) -> dict:
    return {
        "seed": int(seed),
        "n_students": int(n),
        "n_schools": int(n_schools),
        "outcomes": outcomes,
        "disparity": {
            "attribute": DISPARITY["attribute"], "group": DISPARITY["group"],
            "extra_noise_sd": DISPARITY["extra_noise_sd"], "outcomes": list(DISPARITY["outcomes"]),
            "mechanism": "extra N(0, extra_noise_sd) noise on the linear predictor of the listed outcomes "
                         "for students whose true X1RACE is the group",
        },
        "leakage_trap": {"variable": "X4EVRAPPCLG", "copies": "X4EVRATNDCLG", "agreement": LEAKAGE_AGREEMENT,
                         "note": "same wave (2016) and same unit non-response as the outcome"},
        "notes": [
            "Outcomes are generated from the complete (pre-missingness) values of observed earlier-wave "
            "predictors, standardized with the mean and sd recorded in each effect; categorical predictors "
            "enter through their standardized layout code (e.g. X3THISCI 0,1,2,3,5; X1CONTROL 1 Public, "
            "2 private). Missingness is imposed afterwards and never depends on outcome noise, so "
            "complete-case fits recover the effects.",
            "'Don't know' answers (X1STUEDEXPCT, X1PAREDEXPCT code 11, X2STUEDEXPCT code 13, S3CLASSES) "
            "are a registry missing label; they replace the student's generated code, which the DGP uses.",
            "dropout_derived is 1 where X4HSCOMPSTAT is 'No HS credential'. Its logistic noise is "
            f"correlated ({ATTEND_DROPOUT_NOISE_CORR}) with that of X4EVRATNDCLG through a Gaussian copula; "
            "the marginal DGP of each is as stated.",
            "X4RFDGMJSTEM is generated for everyone and observed for college attenders with a reference "
            "degree (others: legitimate skip / non-response); X4RFDGMJ14Y and X4RFDGMJ12Y are consistent "
            "with it (STEM = codes 1-3).",
            "Continuous outcomes are clipped to the registry range and rounded after generation.",
            "X4 postsecondary variables and X5 transcript outcomes are 'Item legitimate skip/NA' (-7) for "
            "2016 respondents who never attended college and unit non-response (-8) for 2016 "
            "non-respondents.",
            "S3CLASSES (2013, taking postsecondary classes) is generated from the realised X4EVRATNDCLG and "
            "the months between high school and college: a temporally valid but outcome-derived near-proxy, "
            "like in the real file. It is not part of any outcome's DGP; including it as a predictor of "
            "X4EVRATNDCLG inflates accuracy beyond what the stated effects imply.",
            "Schools: the seven school_fingerprint variables are constant within a school; school-level "
            "scale missingness is assigned by school.",
            *f.notes,
        ],
    }
