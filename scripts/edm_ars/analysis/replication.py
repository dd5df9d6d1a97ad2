"""What is already known about the data, tested on the study's own training rows: each published finding of the
registry (`dataset.findings`, edm_ars.data.registry_findings) gets an estimate, a bootstrap interval and a status.

- between_cluster_share: the share of the outcome's variance between the leading cluster level's clusters, read from
  the multilevel analysis (multilevel.json, levels[0].null_model: icc and icc_ci). It agrees when the interval
  overlaps the published value plus or minus the tolerance, and differs when it lies wholly outside that band.
- association: the slope of the outcome on the variable alone (least squares on the training rows). It agrees when
  the interval lies wholly on the published side of zero and differs when it lies wholly on the other side.
- group_difference: the outcome's mean among the rows of the level published as higher minus its mean among the rows
  of the level published as lower (the variable's one-hot columns of the training rows), with the same rule.
- none: the registry's reason.

Anything else is cannot_test, with a one-sentence reason holding the numbers. Intervals are percentile intervals of a
bootstrap that resamples whole clusters when the split is grouped (else rows), seeded, so they are deterministic.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edm_ars.core.conventions import level_slug

#: the interval's coverage (percentile bootstrap)
LEVEL = 0.95
#: fewest training rows a group (or the association) needs before its estimate is reported
MIN_ROWS = 20
STATUSES = ("agrees", "differs", "cannot_test")


def _r(x: float | None, digits: int = 4) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), digits)


def _fmt(x: float) -> str:
    return f"{x:.3f}"


def published(test: dict[str, Any]) -> dict[str, Any]:
    """The finding's published value or direction (the test without its kind)."""
    return {k: v for k, v in test.items() if k != "kind"}


def _resample_counts(n_units: int, n_bootstrap: int, seed: int) -> np.ndarray:
    """How often each unit (cluster or row) is drawn in each bootstrap resample (n_bootstrap x n_units)."""
    rng = np.random.default_rng(seed)
    return np.stack([np.bincount(rng.integers(0, n_units, n_units), minlength=n_units)
                     for _ in range(n_bootstrap)]).astype(float)


def _units(n: int, groups: np.ndarray | None) -> tuple[np.ndarray, int]:
    """Each row's resampling unit (its cluster when grouped, else itself) and the number of units."""
    if groups is None:
        return np.arange(n), n
    _, inverse = np.unique(np.asarray(groups).astype(str), return_inverse=True)
    return inverse, int(inverse.max()) + 1 if n else 0


def _per_unit(unit: np.ndarray, n_units: int, columns: list[np.ndarray]) -> np.ndarray:
    """Per-unit sums of each column (n_units x k)."""
    return np.stack([np.bincount(unit, weights=c, minlength=n_units) for c in columns], axis=1)


def _interval(draws: np.ndarray) -> tuple[float, float] | None:
    ok = draws[np.isfinite(draws)]
    if ok.size < 0.9 * draws.size or ok.size == 0:  # too many resamples without the estimate: no interval
        return None
    lo, hi = np.percentile(ok, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return float(lo), float(hi)


def mean_difference(y: np.ndarray, higher: np.ndarray, lower: np.ndarray, groups: np.ndarray | None,
                    n_bootstrap: int, seed: int) -> tuple[float, tuple[float, float] | None]:
    """Mean of y where `higher` minus mean where `lower`, with its bootstrap interval."""
    unit, n_units = _units(len(y), groups)
    h, lo = higher.astype(float), lower.astype(float)
    sums = _per_unit(unit, n_units, [y * h, h, y * lo, lo])
    est = sums[:, 0].sum() / sums[:, 1].sum() - sums[:, 2].sum() / sums[:, 3].sum()
    boot = _resample_counts(n_units, n_bootstrap, seed) @ sums
    with np.errstate(divide="ignore", invalid="ignore"):
        draws = boot[:, 0] / boot[:, 1] - boot[:, 2] / boot[:, 3]
    return float(est), _interval(draws)


def slope(y: np.ndarray, x: np.ndarray, groups: np.ndarray | None, n_bootstrap: int,
          seed: int) -> tuple[float, tuple[float, float] | None]:
    """The least-squares slope of y on x alone, with its bootstrap interval."""
    unit, n_units = _units(len(y), groups)
    sums = _per_unit(unit, n_units, [np.ones_like(y), x, y, x * y, x * x])

    def fit(s: np.ndarray) -> np.ndarray:
        n, sx, sy, sxy, sxx = (s[..., k] for k in range(5))
        with np.errstate(divide="ignore", invalid="ignore"):
            return (sxy - sx * sy / n) / (sxx - sx * sx / n)

    est = float(fit(sums.sum(axis=0)))
    draws = fit(_resample_counts(n_units, n_bootstrap, seed) @ sums)
    return est, _interval(draws)


def _encoded(sources: dict[str, str], var: str) -> list[str]:
    """The training columns encoding a variable (its one-hot columns or itself), without missing indicators."""
    return [c for c, s in sources.items() if s == var and not c.endswith("__not_observed")]


def group_rows(train_x: Any, sources: dict[str, str], var: str, higher: str,
               lower: str) -> tuple[np.ndarray, np.ndarray] | str:
    """The training rows of the two levels (boolean masks), or why they cannot be read. A binary variable is one
    column (`<var>__<second level>`): the other level is where it is 0."""
    cols = _encoded(sources, var)
    if not cols:
        return f"{var} is not among this study's predictors, so its levels are not in the training rows"
    names = {lvl: f"{var}__{level_slug(lvl)}" for lvl in (higher, lower)}
    present = {lvl: name in cols for lvl, name in names.items()}
    if all(present.values()):
        return (train_x[names[higher]].to_numpy() == 1), (train_x[names[lower]].to_numpy() == 1)
    if len(cols) == 1 and sum(present.values()) == 1:  # binary: one column for the second level
        lvl = higher if present[higher] else lower
        ones = train_x[names[lvl]].to_numpy() == 1
        return (ones, ~ones) if lvl == higher else (~ones, ones)
    missing = [lvl for lvl, ok in present.items() if not ok]
    return (f"the training rows have no column for {var} = {' or '.join(map(repr, missing))} "
            f"(its columns: {', '.join(cols)})")


def _direction_status(est: float, ci: tuple[float, float] | None, what: str, sign: int) -> tuple[str, str]:
    """agrees when the interval lies wholly on the published side of zero (sign +1: above, -1: below), differs when
    wholly on the other side, else cannot_test; with the reason holding the numbers."""
    if ci is None:
        return "cannot_test", f"{what} is {_fmt(est)}, but too few bootstrap resamples held the rows for an interval"
    lo, hi = ci
    span = f"{what} is {_fmt(est)} (95% interval {_fmt(lo)} to {_fmt(hi)})"
    side = "above" if sign > 0 else "below"
    if (lo > 0 and sign > 0) or (hi < 0 and sign < 0):
        return "agrees", f"{span}, wholly {side} zero as published"
    if (hi < 0 and sign > 0) or (lo > 0 and sign < 0):
        return "differs", f"{span}, wholly on the other side of zero from the published direction ({side} zero)"
    return "cannot_test", f"{span}; the interval includes zero, so these data do not settle the direction"


def assess_finding(finding: dict[str, Any], *, outcome: str, train_x: Any, train_y: np.ndarray,
                   groups: np.ndarray | None, sources: dict[str, str], multilevel: dict[str, Any] | None,
                   n_bootstrap: int, seed: int, dropped: tuple[str, ...] | list[str] = (),
                   cluster_unit: str | None = None) -> dict[str, Any]:
    """One finding's row of the replication table (`dropped`: the predictors the DataEngineer dropped for their
    missing values, data_report.json:predictors_dropped; `cluster_unit`: the registry's leading cluster level,
    grouping.unit, whose share a between_cluster_share finding is about; None: multilevel.json's first level)."""
    test = dict(finding["test"])
    kind = test["kind"]
    row = {"id": finding["id"], "claim": " ".join(str(finding["claim"]).split()), "cite": finding["cite"],
           "where": finding["where"], "kind": kind, "published": published(test), "estimate": None, "ci": None}

    def done(status: str, reason: str, est: float | None = None, ci: tuple[float, float] | None = None):
        return row | {"estimate": _r(est), "ci": None if ci is None else [_r(ci[0]), _r(ci[1])],
                      "status": status, "reason": reason[:1].upper() + reason[1:].rstrip(".") + "."}

    if kind == "none":
        return done("cannot_test", " ".join(str(test["reason"]).split()))
    outcomes = finding.get("outcomes")
    if outcomes and outcome not in outcomes:
        return done("cannot_test", f"the finding concerns {', '.join(map(str, outcomes))}, but this study's outcome "
                                   f"is {outcome}")
    if kind == "between_cluster_share":
        levels = [lv for lv in (multilevel or {}).get("levels") or []
                  if cluster_unit is None or lv.get("unit") == cluster_unit]
        if multilevel is None or multilevel.get("skipped") or not levels:
            why = (multilevel or {}).get("skipped") or next(
                (f"{m.get('unit')}: {m.get('reason')}" for m in (multilevel or {}).get("not_estimated") or []
                 if cluster_unit is None or m.get("unit") == cluster_unit),
                "no multilevel analysis was run" if multilevel is None else f"no {cluster_unit or 'cluster'} level")
            return done("cannot_test", f"the between-cluster share could not be estimated ({why})")
        null = levels[0].get("null_model") or {}
        icc, ci = null.get("icc"), null.get("icc_ci")
        if icc is None or not ci or None in ci:
            return done("cannot_test", "the multilevel analysis gives no interval for the between-cluster share",
                        icc)
        value, tol = float(test["value"]), float(test["tolerance"])
        lo, hi = float(ci[0]), float(ci[1])
        scale = " on the latent scale" if multilevel.get("outcome_scale") == "latent" else ""
        span = (f"the share of the variance between {levels[0].get('unit', 'clusters')}s{scale} is {_fmt(icc)} "
                f"(95% interval {_fmt(lo)} to {_fmt(hi)}) against the published {value:g} "
                f"(within {tol:g}: {_fmt(value - tol)} to {_fmt(value + tol)})")
        if hi >= value - tol and lo <= value + tol:
            return done("agrees", f"{span}; the interval overlaps that band", icc, (lo, hi))
        return done("differs", f"{span}; the interval lies wholly {'above' if lo > value + tol else 'below'} it",
                    icc, (lo, hi))
    var = str(test["variable"])
    y = np.asarray(train_y, dtype=float)
    if var in dropped:
        return done("cannot_test", f"{var} was dropped from this study's predictors for its missing values "
                                   "(data_report.json: predictors_dropped), so it is not in the training rows")
    if kind == "association":
        cols = _encoded(sources, var)
        if var not in cols:
            return done("cannot_test", f"{var} is not among this study's predictors, so its values are not in the "
                                       "training rows")
        x = train_x[var].to_numpy(dtype=float)
        if len(y) < MIN_ROWS or np.nanstd(x) == 0:
            return done("cannot_test", f"{var} has {len(y)} training rows and a standard deviation of "
                                       f"{_fmt(float(np.nanstd(x)))}, too few or too constant for a slope")
        est, ci = slope(y, x, groups, n_bootstrap, seed)
        status, reason = _direction_status(est, ci, f"the slope of {outcome} on {var}",
                                           1 if test["direction"] == "positive" else -1)
        return done(status, reason, est, ci)
    higher, lower = str(test["higher"]), str(test["lower"])
    masks = group_rows(train_x, sources, var, higher, lower)
    if isinstance(masks, str):
        return done("cannot_test", masks)
    h, lo_mask = masks
    n_h, n_l = int(h.sum()), int(lo_mask.sum())
    if min(n_h, n_l) < MIN_ROWS:
        return done("cannot_test", f"{var} = {higher} has {n_h} and {var} = {lower} has {n_l} training rows, fewer "
                                   f"than {MIN_ROWS} in a group")
    est, ci = mean_difference(y, h, lo_mask, groups, n_bootstrap, seed)
    status, reason = _direction_status(est, ci, f"the mean {outcome} of {var} = {higher} ({n_h} rows) minus that of "
                                                f"{var} = {lower} ({n_l} rows)", 1)
    return done(status, reason, est, ci)


def replication_table(findings: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    """replication.json: every finding's row and the counts by status (source registry, or none without findings)."""
    rows = [assess_finding(f, **kwargs) for f in findings]
    return {"source": "registry" if findings else "none", "findings": rows,
            "counts": {s: sum(r["status"] == s for r in rows) for s in STATUSES}}
