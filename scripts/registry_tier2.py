"""Rule registry_tier2: generate Tier 2 from the data and the codebook layout."""

from edm_ars.artifacts import write_json
from edm_ars.datasets.adapters import read_raw
from edm_ars.rule_io import layout_of, log, registry_of, run
from edm_ars.tier2 import build_tier2


def main(smk):
    reg = registry_of(smk)
    tier2 = build_tier2(read_raw(smk.input.raw), reg, layout_of(smk))
    log.info("tier 2: %d variables", tier2["n_variables"])
    write_json(smk.output.tier2, tier2, "tier2")


run(snakemake, main)  # noqa: F821
