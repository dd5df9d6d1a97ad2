"""Rule debate: the results debate (optimist, skeptic, methodologist, synthesizer) -> claims.json, the
claims the paper may make with their evidence. Offline the lenses are rules in code; with a model the
model may only make a claim more conservative (edm_ars.review.claims)."""

from edm_ars.jobs.agents import debate
from edm_ars.jobs.rule_io import run

run(snakemake, debate)  # noqa: F821
