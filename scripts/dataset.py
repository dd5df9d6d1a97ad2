"""Rule dataset: read and check the raw data file; write its manifest."""

from edm_ars.artifacts import write_json
from edm_ars.datasets.adapters import check_raw, read_raw
from edm_ars.rule_io import log, registry_of, run


def main(smk):
    reg = registry_of(smk)
    frame = read_raw(smk.input.raw)
    manifest = check_raw(frame, reg, smk.input.raw) | {"dataset": smk.params.dataset}
    log.info("%s: %d rows, %d columns, %d curated variables present", smk.input.raw, manifest["n_rows"],
             manifest["n_columns"], manifest["tier1_present"])
    write_json(smk.output.manifest, manifest)


run(snakemake, main)  # noqa: F821
