"""The Tier 2 and Tier 3 columns of the synthetic HSLS:09 data set.

Tier 2: questionnaire items derived from the composites (and a few more student, parent and first
follow-up items). Tier 3, which the registry rules must exclude: weights and replicate weights,
questionnaire status variables, and imputation and processing flags.
"""

from __future__ import annotations

import numpy as np

from edm_ars.data.datasets.synthetic_frame import _categorical, _Frame, _ordinal, _pick, _sigmoid, _std

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
