"""Rule lessons: what this run teaches (failed checks, revisions, rejections), added to the store."""

import hashlib
from datetime import UTC, datetime
from pathlib import Path

from edm_ars.artifacts import write_json
from edm_ars.lessons import append, lessons_from_run
from edm_ars.rule_io import log, run


def main(smk):
    # a run is identified by where it ran and what its reviews say
    h = hashlib.sha256(str(Path.cwd().resolve()).encode())
    for path in smk.input.reviews:
        h.update(Path(path).read_bytes())
    run_id = h.hexdigest()[:12]
    found = lessons_from_run(Path("output"), Path("approvals"), run_id, datetime.now(UTC))
    written = append(Path(smk.params.store), found)
    log.info("run %s: %d lessons, %d new in %s", run_id, len(found), written, smk.params.store)
    write_json(smk.output.lessons, {"run_id": run_id, "store": smk.params.store, "written": written,
                                    "lessons": [vars(lesson) for lesson in found]})


run(snakemake, main)  # noqa: F821
