"""Rule dataset: read the raw data file, check the registry and the data against each other (every
inconsistency named), and write the manifest."""

from edm_ars.artifacts import write_json
from edm_ars.datasets.adapters import check_raw, read_raw
from edm_ars.errors import DataError
from edm_ars.registry import validate_registry
from edm_ars.rule_io import log, registry_of, run


def main(smk):
    reg = registry_of(smk)
    problems = validate_registry(reg)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise DataError(f"registry {reg.root} ({reg.name}) is inconsistent ({len(problems)} problem(s)):\n{lines}")
    frame = read_raw(smk.input.raw)
    manifest = check_raw(frame, reg, smk.input.raw, smk.params.min_rows) | {"dataset": smk.params.dataset}
    log.info("%s: %d rows, %d columns, %d curated variables present", smk.input.raw, manifest["n_rows"],
             manifest["n_columns"], manifest["tier1_present"])
    write_json(smk.output.manifest, manifest)


run(snakemake, main)  # noqa: F821
