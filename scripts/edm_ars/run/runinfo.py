"""The provenance record of a run (output/paper/provenance.json, rule `provenance`), which the Writer states in the
paper's data section and its data and code availability statement: what the rows are (from the data manifest), the
data set's citation (its entry in the curated bibliography), the commit of the workflow, a hash of the run's
configuration and the versions of the packages that did the work.

Standard library only. The same inputs (manifest, bibliography, configuration, the workflow's checkout and the
installed packages) give the same record: nothing here reads the clock or the environment's variables.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from edm_ars.core.errors import EdmArsError
from edm_ars.formulate.bibliography import parse_bibtex

#: the packages whose versions the availability statement gives (python first)
PACKAGES = ("snakemake", "pandas", "pyarrow", "scikit-learn", "xgboost", "shap")
#: configuration keys that could hold a secret: left out of the snapshot that is hashed. `*_env` keys hold only the
#: *name* of an environment variable (never its value) and stay.
SECRET_KEY = re.compile(r"(?:^|_)(?:api_?key|key|token|secret|password|passwd|credentials?)(?:$|_)", re.I)
NOT_UNDER_VERSION_CONTROL = "not under version control"


def config_snapshot(config: Any) -> Any:
    """The configuration without any key that could hold a secret (at any depth); `*_env` names are kept."""
    if isinstance(config, dict):
        return {str(k): config_snapshot(v) for k, v in config.items()
                if str(k).endswith("_env") or not SECRET_KEY.search(str(k))}
    if isinstance(config, (list, tuple)):
        return [config_snapshot(v) for v in config]
    return config


def config_hash(config: Any) -> str:
    """SHA-256 of the canonical JSON of the configuration snapshot (sorted keys), first 12 hex digits."""
    text = json.dumps(config_snapshot(config), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def workflow_commit(directory: str | Path) -> dict[str, Any]:
    """The git commit the workflow's folder is checked out at, its commit time (Unix seconds: the date a PDF built
    from this workflow carries, see edm_ars.writer.latex), and whether tracked files differ from it;
    {'commit': None, 'state': 'not under version control'} when it is no git checkout or git is unavailable."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, check=True,
                              timeout=30).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        modified = bool(git("status", "--porcelain", "--untracked-files=no"))
        committed = git("show", "-s", "--format=%ct", "HEAD")
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "short": None, "commit_time": None, "modified": None,
                "state": NOT_UNDER_VERSION_CONTROL}
    if not re.fullmatch(r"[0-9a-f]{40}", commit) or not committed.isdigit():
        return {"commit": None, "short": None, "commit_time": None, "modified": None,
                "state": NOT_UNDER_VERSION_CONTROL}
    return {"commit": commit, "short": commit[:12], "commit_time": int(committed), "modified": modified,
            "state": "modified" if modified else "clean"}


#: the import name of each package, to find a distribution published under another name (xgboost-cpu)
IMPORT_NAMES = {"scikit-learn": "sklearn"}


def package_versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """{'python': '3.11.9', package: version or None when it is not installed in this environment}; a package is
    looked up by its distribution name, then through the distributions that provide its import name."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    providers: dict[str, list[str]] | None = None
    for name in packages:
        try:
            out[name] = metadata.version(name)
            continue
        except metadata.PackageNotFoundError:
            out[name] = None
        if providers is None:
            providers = metadata.packages_distributions()
        for dist in providers.get(IMPORT_NAMES.get(name, name), []):
            try:
                out[name] = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
    return out


def dataset_citation(bib_text: str, key: str | None, where: str = "registry/bibliography/references.bib",
                     own: str | None = None) -> dict[str, Any] | None:
    """The entry for the data set's citation key, as a literature paper: the registry's own entry (`own`, the
    BibTeX text of `dataset.citation`, the data owner's statement of how to cite the data) when it carries one,
    else the curated bibliography's (VERIFIED: every field of the curated bibliography is confirmed); a key that is
    in neither stops with the key and the file."""
    if not key:
        return None
    entries = {e.key: e for e in parse_bibtex(own or bib_text)}
    if own:
        where = "the registry's dataset.citation"
    if key not in entries:
        raise EdmArsError(f"dataset.provenance.citation {key!r} is not an entry of {where}: cite only entries of "
                          "the curated bibliography, or give the data set's own BibTeX entry in the registry's "
                          "dataset.citation (or leave the key out)")
    e = entries[key]
    return {"key": key, "title": e.fields.get("title", "").replace("{", "").replace("}", ""),
            "authors": e.authors, "year": e.year, "venue": e.venue, "url": e.fields.get("url"),
            "topics": ["dataset"], "status": "VERIFIED", "bibtex": e.text}


def provenance_record(manifest: dict[str, Any], *, config: dict[str, Any], workflow_dir: str | Path,
                      bib_text: str, bib_path: str = "registry/bibliography/references.bib") -> dict[str, Any]:
    """output/paper/provenance.json: the rows' provenance from the manifest (one fact, resolved by the dataset
    rule), the citation's entry, the workflow's commit, the configuration's hash and the package versions."""
    prov = manifest.get("provenance")
    if not isinstance(prov, dict) or not prov.get("kind"):
        raise EdmArsError("output/data/dataset.json has no provenance (key provenance.kind): re-run the dataset "
                          "rule, which resolves it from the registry and the source of the rows")
    return {
        "dataset": manifest.get("dataset"),
        "data": {**prov, "n_rows": manifest.get("n_rows"), "sha256": manifest.get("sha256")},
        "citation": dataset_citation(bib_text, prov.get("citation"), bib_path, prov.get("citation_bibtex")),
        "workflow": workflow_commit(workflow_dir),
        "config_hash": config_hash(config),
        "config_hash_algorithm": "SHA-256",
        "software": package_versions(),
    }
