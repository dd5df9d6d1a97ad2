"""The later waves of the synthetic HSLS:09 data set: the 2012 first follow-up, the 2013 update and
high school transcripts, the 2016 second follow-up and the 2017 postsecondary records.

The canonical outcomes are generated here through the planted data-generating process
(synthetic_dgp), together with the variables around them: the leakage trap, the outcome-derived
near-proxy S3CLASSES, and the legitimate skips of students who never attended college.
"""

from __future__ import annotations

import numpy as np

from edm_ars.data.datasets.synthetic_dgp import (
    ATTEND_DROPOUT_NOISE_CORR,
    LEAKAGE_AGREEMENT,
    _continuous_outcome,
    _logistic_eta,
)
from edm_ars.data.datasets.synthetic_frame import (
    _categorical,
    _Frame,
    _logistic_from_normal,
    _ordinal,
    _pick,
    _scale,
    _skewed_scale,
    _std,
)

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
