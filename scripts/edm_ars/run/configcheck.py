"""Unknown settings are refused before any job: the configuration is walked against config/config.schema.yaml,
and a key the schema does not know (a typo such as `datset`, or `analysis.bootstrapp` in an extra config file)
stops the run with one line naming the key, where it came from (the command line, a profile or which config
file) and the closest known key.

The schema is closed (`additionalProperties: false`) wherever a user sets keys; maps whose keys are data (the
per-agent model settings `llm.agents`, the prices `llm.prices` keyed by model id) are open but their values are
closed objects. `schema_paths` lists every key path the schema knows (a map's data key as `*`), for the tests that
compare it with the keys the code reads and with the configuration table of docs/configuration.md."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

Path_ = tuple[str, ...]


def _children(node: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """A schema node's named properties and its additionalProperties (False: closed; a schema: an open map)."""
    return dict(node.get("properties") or {}), node.get("additionalProperties", True)


def schema_paths(schema: Mapping[str, Any], prefix: Path_ = ()) -> list[Path_]:
    """Every key path the schema knows, parents before children; an open map's data key is '*'."""
    props, extra = _children(schema)
    out: list[Path_] = []
    for key, sub in props.items():
        out.append((*prefix, key))
        if isinstance(sub, Mapping):
            out += schema_paths(sub, (*prefix, key))
    if isinstance(extra, Mapping):
        out.append((*prefix, "*"))
        out += schema_paths(extra, (*prefix, "*"))
    return out


def unknown_keys(config: Any, schema: Mapping[str, Any], prefix: Path_ = ()) -> list[Path_]:
    """Key paths of `config` that the schema does not know, in the config's order. A node without
    `additionalProperties: false` and without a map schema accepts any key (JSON Schema's default)."""
    if not isinstance(config, Mapping):
        return []
    props, extra = _children(schema)
    found: list[Path_] = []
    for key, value in config.items():
        path = (*prefix, str(key))
        if key in props:
            found += unknown_keys(value, props[key], path) if isinstance(props[key], Mapping) else []
        elif isinstance(extra, Mapping):
            found += unknown_keys(value, extra, path)
        elif extra is False:
            found.append(path)
    return found


def closest(path: Path_, schema: Mapping[str, Any]) -> str | None:
    """The known key closest to an unknown one: among its siblings first, else among all known paths (a
    nested key set at the top level, `n_bootstrap` for `analysis.n_bootstrap`); None when none is close."""
    node: Any = schema
    for part in path[:-1]:
        props, extra = _children(node)
        node = props.get(part, extra if isinstance(extra, Mapping) else {})
    siblings = list(_children(node)[0])
    match = difflib.get_close_matches(path[-1], siblings, n=1, cutoff=0.75)
    if match:
        return ".".join((*path[:-1], match[0]))
    known = [".".join(p) for p in schema_paths(schema) if "*" not in p]
    match = difflib.get_close_matches(".".join(path), known, n=1, cutoff=0.75)
    if match:
        return match[0]
    by_leaf = {p.rsplit(".", 1)[-1]: p for p in reversed(known)}
    match = difflib.get_close_matches(path[-1], list(by_leaf), n=1, cutoff=0.8)
    return by_leaf[match[0]] if match else None


def _has(config: Any, path: Path_) -> bool:
    for part in path:
        if not isinstance(config, Mapping) or part not in config:
            return False
        config = config[part]
    return True


def _load(path: str | Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh) or {}
    except (OSError, yaml.YAMLError):
        return {}


def _shown(path: str | Path) -> str:
    """A config file's name as the user would recognise it: relative to the working directory when inside it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def origin(path: Path_, command_line: Mapping[str, Any], configfiles: Sequence[str | Path],
           default_file: str | Path | None = None, argv: Iterable[str] | None = None) -> str:
    """Where a key came from, latest source first (Snakemake's precedence): --config (on the command line, or
    in a profile when the key is not on the command line), else the last --configfile that has it, else the
    workflow's own config file."""
    if _has(dict(command_line), path):
        words = list(sys.argv if argv is None else argv)
        top = path[0]
        on_line = any(w.removeprefix("--config=").split("=", 1)[0] == top for w in words)
        return "from --config on the command line" if on_line else "from --config in a profile"
    for f in reversed(list(configfiles)):
        if _has(_load(f), path):
            return f"from config file {_shown(f)}"
    if default_file is not None and _has(_load(default_file), path):
        return f"from the workflow's config file {_shown(default_file)}"
    return "from the configuration"


def message(path: Path_, schema: Mapping[str, Any], where: str) -> str:
    """The one line for an unknown setting."""
    line = f"EDM-ARS: unknown setting '{'.'.join(path)}' ({where})"
    near = closest(path, schema)
    return f"{line}; did you mean '{near}'?" if near else f"{line}; see config/config.schema.yaml for the known settings"


def unknown_setting(config: Mapping[str, Any], schema_file: str | Path, workflow: Any = None,
                    default_file: str | Path | None = None) -> str | None:
    """The line refusing the first unknown key of `config` (None when every key is known). `workflow` is
    Snakemake's workflow object: its config settings tell which --configfile or --config a key came from."""
    schema = _load(schema_file)
    unknown = unknown_keys(config, schema)
    if not unknown:
        return None
    settings = getattr(workflow, "config_settings", None)
    command_line = dict(getattr(settings, "config", None) or {})
    files = list(getattr(workflow, "overwrite_configfiles", None) or getattr(settings, "configfiles", None) or [])
    return message(unknown[0], schema, origin(unknown[0], command_line, files, default_file))
