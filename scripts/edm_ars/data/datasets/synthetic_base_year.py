"""The base year (2009) of the synthetic HSLS:09 data set: schools, latent traits, response sets.

The schools and their fingerprint variables, the students' latent traits (SES, ability, engagement,
belonging, self-efficacy, expectations, race, sex), the unit non-response and skip sets shared by
many variables across the waves, and the base-year student, parent, teacher and school variables.
"""

from __future__ import annotations

import numpy as np

from edm_ars.data.datasets.synthetic_frame import (
    _categorical,
    _Frame,
    _ordinal,
    _pick,
    _scale,
    _sigmoid,
    _skewed_scale,
    _std,
)

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
