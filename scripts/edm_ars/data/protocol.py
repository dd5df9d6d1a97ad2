"""The DataEngineer's stated protocol: the thresholds of its imputation, feasibility and leakage rules (from the
config's `engineer` section; edm_ars.data.engineer.protocol builds one for a run).
"""

from __future__ import annotations

from dataclasses import dataclass

from edm_ars.core.conventions import LEAKAGE_CORR


@dataclass
class Protocol:
    """The stated imputation and feasibility protocol (thresholds from config)."""

    test_fraction: float = 0.2
    seed: int = 42
    simple_below: float = 5.0  # % missing: median / mode below this
    warn_above: float = 20.0  # % missing: impute and warn above this
    drop_above: float = 99.0  # % missing: a suppressed variable carries no information
    min_analytic_n: int = 1000
    min_retention: float = 0.60
    max_categories: int = 100
    iterative_max_iter: int = 5
    min_clusters: int = 50
    structural_above: float = 40.0  # % missing (training rows): missing by design, so an indicator is added
    leakage_corr: float = LEAKAGE_CORR  # |r| with the outcome in the training rows above which a column is a proxy
    imputation: str = "by_missingness"  # by_missingness | simple | iterative (edm_ars.review.actions.IMPUTATIONS)
