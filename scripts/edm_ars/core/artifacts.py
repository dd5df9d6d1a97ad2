"""Reading and writing JSON artifacts: validated against their schema, written atomically."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO

import jsonschema
import numpy as np
import pandas as pd
import yaml

from edm_ars.core.errors import OutputWriteError, SchemaError
from edm_ars.core.yamlio import load_yaml


@cache
def schema(kind: str) -> dict[str, Any]:
    text = resources.files("edm_ars.schemas").joinpath(f"{kind}.json").read_text()
    return json.loads(text)


def validate(obj: Any, kind: str, where: str = "") -> None:
    validator = jsonschema.Draft202012Validator(schema(kind))
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"  - {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors[:20]]
        raise SchemaError(f"{where or kind}: does not match the {kind} schema:\n" + "\n".join(lines))


def _default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return None if np.isnan(o) else float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"cannot serialise {type(o).__name__}")


def creation_mode() -> int:
    """The mode a new file gets from open(): 0666 less the process's umask (mkstemp's own is 0600)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no /proc (macOS): read the umask by setting it, and put it back at once
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename, so no reader sees half a file. The file gets
    the mode the user's umask gives new files. A full disk or an unwritable folder raises an OutputWriteError
    naming `path`, and the temporary file is removed."""
    atomic_write_with(path, lambda fh: fh.write(data))


def atomic_write_with(path: str | Path, write: Callable[[BinaryIO], Any]) -> None:
    """As atomic_write_bytes, with `write(fh)` writing the content to the open binary temporary file (a large
    table streams to the disk instead of being held in memory as one string)."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), creation_mode())
            write(fh)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise OutputWriteError.of(exc, path) from exc
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """atomic_write_bytes of `text` in UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_copy(src: str | Path, dst: str | Path) -> None:
    """Copy a finished file into place atomically (see atomic_write_bytes)."""
    atomic_write_bytes(dst, Path(src).read_bytes())


def write_json(path: str | Path, obj: Any, kind: str | None = None) -> None:
    """Validate (when a kind is given) and write a JSON artifact atomically."""
    obj = json.loads(json.dumps(obj, default=_default, allow_nan=False))
    if kind:
        validate(obj, kind, where=str(path))
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def read_json(path: str | Path, kind: str | None = None) -> Any:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"artifact not found: {path}")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{path}: not valid JSON ({exc})") from exc
    if kind:
        validate(obj, kind, where=str(path))
    return obj


def read_yaml(path: str | Path, what: str, error: type[Exception] = SchemaError) -> Any:
    """A YAML file (rubric, prompt, registry part), with an error that names the file and the problem."""
    path = Path(path)
    try:
        return load_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{what} not found: {path} does not exist") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML ({exc})") from None


#: rows per block written by write_csv: pandas' own default (100,000 cells) makes a block of a few hundred rows
#: of a wide table and spends more time per block than on its rows
CSV_BLOCK_ROWS = 20_000


def write_csv(path: str | Path, frame: pd.DataFrame) -> None:
    """The frame as CSV (no index), written atomically and streamed to the file in blocks of rows: the same text
    as `frame.to_csv(index=False)` without holding it in memory."""
    atomic_write_with(path, lambda fh: frame.to_csv(fh, index=False, encoding="utf-8", chunksize=CSV_BLOCK_ROWS))
