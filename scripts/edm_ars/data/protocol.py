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
    min_clusters: int = 10  # engineer.min_clusters: fewer declared clusters stop the run
    structural_above: float = 40.0  # % missing (training rows): missing by design, so an indicator is added
    leakage_corr: float = LEAKAGE_CORR  # |r| with the outcome in the training rows above which a column is a proxy
    imputation: str = "by_missingness"  # by_missingness | simple | iterative (edm_ars.review.actions.IMPUTATIONS)


def too_few_cases(n: int, noun: str, min_analytic_n: int | None = None, abort_below_n: int | None = None) -> str:
    """What stops a run on `n` analytic cases (`noun`: "rows", "analytic cases") and how to lower it: both
    settings that stop such a run (engineer.min_analytic_n at the dataset and data steps, critic.abort_below_n at
    the Critic, which ends the study with ABORT), their values when known, and the `--configfile` YAML lines that
    lower both to `n`, so that lowering one does not cost a full run stopped by the other."""
    def value(v: int | None) -> str:
        return f" = {v}" if v is not None else ""

    lower = max(int(n), 1)
    return (f"two settings stop a run on {n} {noun}: engineer.min_analytic_n{value(min_analytic_n)} (the dataset "
            f"and data steps refuse fewer) and critic.abort_below_n{value(abort_below_n)} (the Critic ends the study "
            f"with ABORT below it); to run it, lower both in a YAML file passed with --configfile, e.g. small.yaml "
            f"holding the lines\n"
            f"      engineer:\n        min_analytic_n: {lower}\n      critic:\n        abort_below_n: {lower}\n"
            f"    and run `snakemake --cores 8 output/paper.pdf --configfile small.yaml`. Estimates from so few cases "
            f"are imprecise: a test set under critic.min_test_n (default 200) caps the review, and the paper is "
            f"written flagged UNVERIFIED, saying in its abstract that the sample is small")
