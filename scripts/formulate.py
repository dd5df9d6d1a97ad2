"""Rule formulate (ProblemFormulator): research specification, spec gate, literature context.

Offline: a deterministic expert system picks a supported canonical question and the curated
bibliography. With a model: a structured debate and a synthesized specification (same gate, one
revision), then Semantic Scholar retrieval verified against CrossRef (curated fallback)."""

from edm_ars.jobs.agents import formulate
from edm_ars.jobs.rule_io import run

run(snakemake, formulate)  # noqa: F821
