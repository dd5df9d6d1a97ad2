"""Rule lessons: what this run teaches (failed checks, revisions, rejections), added to the store."""

from edm_ars.jobs.data import lessons
from edm_ars.jobs.rule_io import run

run(snakemake, lessons)  # noqa: F821
