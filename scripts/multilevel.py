"""Rule multilevel (Analyst, multilevel phase): the school-level structure of the outcome for every declared cluster
level: the share of its variance between clusters (ICC; latent scale for a binary outcome), what the study's
predictors explain of the between- and within-cluster variance, and whether cluster context (cluster means of the
predictors, from training rows) improves held-out prediction."""

from edm_ars.jobs.analysis.multilevel import multilevel
from edm_ars.jobs.rule_io import run

run(snakemake, multilevel)  # noqa: F821
