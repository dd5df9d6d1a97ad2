"""A planted, confounded treatment in the synthetic HSLS:09 data set, for the causal study's validation.

Treatment S1MTUTOR (base year: the 9th grader took part in a math study group or tutoring since the start of
2008-09) with a logistic uptake on measured base-year covariates (SES, race/ethnicity, school locale, sex), and
outcome X2TXMSCR (first follow-up: mathematics IRT-estimated number-right score), built from the untreated
11th-grade math score the generator made for X2TXMTSCOR plus the planted effect tau_i * T_i with
tau_i = base + extra * [female], plus a little independent noise. SES raises both uptake and the outcome, so the
naive difference in means is biased upwards; conditional on the listed confounders, uptake is independent of the
untreated outcome, so the effect is identified.

Everything here draws from its own generator, `np.random.default_rng([seed, TREATMENT_STREAM])`, and only reads the
frame's working arrays: every other column of the generated data (and the row order) is what it was without it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edm_ars.data.datasets.synthetic_frame import _Frame, _pick, _sigmoid

#: the second entry of the treatment generator's seed sequence (`default_rng([seed, TREATMENT_STREAM])`)
TREATMENT_STREAM = 37

TREATMENT = "S1MTUTOR"
OUTCOME = "X2TXMSCR"
#: the untreated outcome is a linear map of the complete (pre-missingness) X2TXMTSCOR (mean 50, sd 10)
SOURCE_SCORE = "X2TXMTSCOR"
NR_INTERCEPT, NR_SLOPE = 45.0, 1.4  # number right = 45 + 1.4 * (X2TXMTSCOR - 50): about 6 to 94 of 118 items
NR_RANGE = (0.0, 118.0)  # the first follow-up mathematics assessment has 118 items
NR_NOISE_SD = 1.0
NR_DECIMALS = 4

EFFECT_BASE = 2.5  # number-right points, for every treated student
EFFECT_EXTRA = {"attribute": "X1SEX", "code": 2, "group": "Female", "extra": 3.0}  # on top of the base

#: logit P(S1MTUTOR = Yes) = intercept + sum of the terms below (X1SES standardized over all students;
#: X1RACE, X1LOCALE, X1SEX as indicators of their observed value, a missing value counting as none)
PROPENSITY_INTERCEPT = -1.45
PROPENSITY_SES = 0.8  # per SD of X1SES
PROPENSITY_TERMS: list[tuple[str, tuple[int, ...], float]] = [
    ("X1RACE", (3,), 0.4),  # Black/African-American, non-Hispanic
    ("X1RACE", (4,), 0.25),  # Hispanic, no race specified
    ("X1RACE", (5,), 0.25),  # Hispanic, race specified
    ("X1RACE", (2,), 0.5),  # Asian, non-Hispanic
    ("X1LOCALE", (1,), 0.3),  # City
    ("X1LOCALE", (2,), 0.2),  # Suburb
    ("X1SEX", (2,), 0.2),  # Female
]
MISSING_PCT = 2.0  # S1MTUTOR item non-response (-9) among base-year participants, at random


def _observed_code(f: _Frame, name: str) -> np.ndarray:
    """The variable's layout code where it is observed, NaN where it is missing (as the data show it)."""
    return np.where(f.missing(name), np.nan, f.value(name))


def _label(f: _Frame, name: str, code: int) -> str:
    return str(f.layout.codes(name).get(code, code))


def _plant_treatment(f: _Frame, seed: int, nonparticipants: np.ndarray) -> dict[str, Any]:
    """Add S1MTUTOR and X2TXMSCR to the frame; return dgp["treatments"]. `nonparticipants`: the base-year student
    non-participants (their S1MTUTOR is unit non-response, -8). Reads the complete X1SES and X2TXMTSCOR and the
    observed X1RACE, X1LOCALE, X1SEX; draws only from `default_rng([seed, TREATMENT_STREAM])`."""
    for name in ("X1SES", "X1RACE", "X1LOCALE", "X1SEX", SOURCE_SCORE):
        if name not in f.data:
            raise RuntimeError(f"synthetic treatment {TREATMENT}: column {name} must be generated first")
    rng = np.random.default_rng([int(seed), TREATMENT_STREAM])
    n = f.n

    # --- uptake -------------------------------------------------------------------------------------------
    ses = f.value("X1SES")
    ses_mean, ses_sd = float(ses.mean()), float(ses.std())
    eta = PROPENSITY_INTERCEPT + PROPENSITY_SES * (ses - ses_mean) / ses_sd
    coefficients = {"X1SES": PROPENSITY_SES}
    for name, codes, beta in PROPENSITY_TERMS:
        eta = eta + beta * np.isin(_observed_code(f, name), codes)
        for code in codes:
            coefficients[f"{name}={_label(f, name, code)}"] = beta
    propensity = _sigmoid(eta)
    treated = rng.random(n) < propensity

    # --- outcome ------------------------------------------------------------------------------------------
    female = f.value(EFFECT_EXTRA["attribute"]) == EFFECT_EXTRA["code"]  # the true sex (0.03% are missing)
    tau = EFFECT_BASE + EFFECT_EXTRA["extra"] * female
    untreated = NR_INTERCEPT + NR_SLOPE * (f.value(SOURCE_SCORE) - 50.0) + rng.normal(0, NR_NOISE_SD, n)
    y = untreated + tau * treated
    n_clipped = int(((y < NR_RANGE[0]) | (y > NR_RANGE[1])).sum())
    f.cat(TREATMENT, treated.astype(int))
    f.num(OUTCOME, y, NR_RANGE[0], NR_RANGE[1], NR_DECIMALS)

    # --- missingness: as the other S1 items (-8 base-year non-participants, then -9) and as X2TXMTSCOR -----
    f.mask(TREATMENT, nonparticipants, -8)
    k = int(round(MISSING_PCT / 100.0 * n))
    f.mask(TREATMENT, _pick(rng, k, ~f.missing(TREATMENT)), -9)
    f.miss[OUTCOME] = f.miss[SOURCE_SCORE].copy()

    observed = ~f.missing(OUTCOME) & ~f.missing(TREATMENT)
    sex_labels = {code: _label(f, "X1SEX", code) for code in (1, 2)}
    group_effects = {sex_labels[1]: EFFECT_BASE, sex_labels[2]: EFFECT_BASE + EFFECT_EXTRA["extra"]}
    return {TREATMENT: {
        "outcome": OUTCOME,
        "treated_value": _label(f, TREATMENT, 1),
        "control_value": _label(f, TREATMENT, 0),
        "effect": {"base": EFFECT_BASE, "group": {"attribute": EFFECT_EXTRA["attribute"],
                                                  "group": EFFECT_EXTRA["group"], "extra": EFFECT_EXTRA["extra"]}},
        "ate": round(float(tau.mean()), 6),
        "ate_observed": round(float(tau[observed].mean()), 6),
        "group_effects": group_effects,
        "propensity": {
            "intercept": PROPENSITY_INTERCEPT, "coefficients": coefficients,
            "standardized": {"X1SES": {"mean": round(ses_mean, 6), "sd": round(ses_sd, 6)}},
            "min": round(float(propensity.min()), 6), "max": round(float(propensity.max()), 6),
            "mean": round(float(propensity.mean()), 6),
            "formula": "logit P(S1MTUTOR = Yes) = intercept + X1SES coefficient * (X1SES - mean) / sd + the "
                       "coefficient of each observed X1RACE, X1LOCALE, X1SEX value listed (a missing value adds "
                       "nothing)",
        },
        "confounders": ["X1SES", "X1RACE", "X1LOCALE", "X1SEX"],
        "uptake": round(float(treated.mean()), 6),
        "n_observed": int(observed.sum()),
        "notes": (
            f"{OUTCOME} = {NR_INTERCEPT:g} + {NR_SLOPE:g} * ({SOURCE_SCORE} - 50) + N(0, {NR_NOISE_SD:g}) + tau * T, "
            f"with {SOURCE_SCORE} the student's complete (untreated) generated score and tau = {EFFECT_BASE:g} "
            f"number-right points, plus {EFFECT_EXTRA['extra']:g} for {EFFECT_EXTRA['group']} students (the true "
            f"{EFFECT_EXTRA['attribute']}); clipped to {list(NR_RANGE)} ({n_clipped} values clipped) and rounded to "
            f"{NR_DECIMALS} decimals. {OUTCOME} is missing (-8) for exactly the students whose {SOURCE_SCORE} is. "
            f"Uptake depends only on the listed confounders' observed values (X1SES is observed for every base-year "
            f"participant), so the effect is identified given them; SES raises uptake and the outcome, so the "
            f"naive difference in means overstates the effect. {TREATMENT} is unit non-response (-8) for base-year "
            f"non-participants and missing (-9) for {MISSING_PCT:g}% of students at random. ate: mean of tau over "
            f"all students; ate_observed: over students with {OUTCOME} and {TREATMENT} observed. Drawn from its own "
            f"random generator, so no other column depends on it."),
    }}
