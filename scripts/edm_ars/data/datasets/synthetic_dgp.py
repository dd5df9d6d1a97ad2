"""The planted data-generating process of the synthetic HSLS:09 data set and its record.

The effects of the five canonical outcomes (`OUTCOME_SPECS`), the subgroup disparity, the leakage
trap and the correlation of the attendance and dropout noise; the linear predictors that generate
the outcomes from the frame's complete earlier-wave values; and the `dgp` dict that describes it
all (validated against scripts/edm_ars/schemas/dgp.json).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edm_ars.data.datasets.synthetic_frame import _Frame, _sigmoid

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


# ---- the dgp dict ------------------------------------------------------------------------------


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
