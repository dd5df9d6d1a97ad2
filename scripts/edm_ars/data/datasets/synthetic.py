"""A synthetic stand-in for the NCES HSLS:09 public-use student file, with a known data-generating process.

`generate(registry, layout)` returns a frame that looks like the labelled public-use CSV
(hsls_17_student_pets_sr_v1_0.csv): one row per student, `STU_ID`, the 118 non-derived Tier 1
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
near-copy of X4EVRATNDCLG) are planted. For the causal study, a confounded treatment is planted too:
S1MTUTOR (math study group or tutoring in 9th grade), whose uptake rises with SES, with a known effect
on X2TXMSCR (the follow-up number-right math score), larger for girls (synthetic_treatment; its own
generator `default_rng([seed, 37])`, so every other column is what it is without it). Everything is
described in the returned `dgp` dict, which validates against scripts/edm_ars/schemas/dgp.json. Only
numpy's Generators seeded from `seed` are used, so the same seed gives an identical frame.

This module runs the generation and assembles the frame; the pieces live beside it:
synthetic_frame (the working frame and sampling helpers), synthetic_dgp (the planted
data-generating process and the `dgp` dict), synthetic_base_year (schools, latent traits, response
sets, 2009), synthetic_follow_ups (2012, 2013, 2016, 2017), synthetic_tiers (Tier 2 items,
Tier 3 weights, status variables and flags) and synthetic_treatment (the planted treatment).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from edm_ars.data.datasets.synthetic_base_year import _base_year, _response_sets, _schools_and_latents
from edm_ars.data.datasets.synthetic_dgp import _dgp_dict
from edm_ars.data.datasets.synthetic_follow_ups import (
    _first_follow_up,
    _postsecondary,
    _second_follow_up,
    _update_panel,
)
from edm_ars.data.datasets.synthetic_frame import _Frame
from edm_ars.data.datasets.synthetic_tiers import _tier2, _tier3
from edm_ars.data.datasets.synthetic_treatment import _plant_treatment

N_STUDENTS = 23503
N_SCHOOLS = 944
#: plant the confounded treatment S1MTUTOR -> X2TXMSCR (synthetic_treatment); it has its own random generator,
#: so switching it off leaves every other column as it is (the tests check that)
PLANT_TREATMENT = True


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
    treatments = _plant_treatment(f, seed, sets["bynp"]) if PLANT_TREATMENT else {}
    lat.clear()  # the latent traits and shared sets are not needed for the columns: their memory goes first
    sets.clear()

    frame = _assemble(f, registry, layout)
    dgp = _dgp_dict(f, seed, n_students, n_schools, dgp_outcomes)
    dgp["treatments"] = treatments
    return frame, dgp


# ---- assembly ----------------------------------------------------------------------------------


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


