"""Rule gate: passes only when the researcher approved exactly the artifacts it shows."""

from pathlib import Path

from edm_ars.artifacts import read_json, write_json
from edm_ars.errors import SpecError
from edm_ars.formulate import validate_spec
from edm_ars.gates import check
from edm_ars.rule_io import log, registry_of, run


def main(smk):
    gate, round_ = smk.wildcards.gate, int(smk.wildcards.round)
    record = check(gate, round_, Path.cwd())
    if gate == "formulate":
        # the researcher may have edited the specification: it must still pass the gate
        reg = registry_of(smk, tier2=read_json(smk.input.tier2, "tier2"))
        violations = validate_spec(read_json(smk.input.spec, "research_spec"), reg)
        if violations:
            raise SpecError(violations)
    log.info("gate %s (round %d) approved at %s%s", gate, round_, record["time"],
             f": {record['note']}" if record.get("note") else "")
    write_json(smk.output.approved, record)


run(snakemake, main)  # noqa: F821
