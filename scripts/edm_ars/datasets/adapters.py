"""Dataset adapters behind one interface: where the raw file is, how to read it, how to check it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError
from ..registry import Registry


@dataclass(frozen=True)
class Adapter:
    name: str
    registry: str  # registry folder name under registry/
    synthetic: bool = False

    def raw_path(self, config: dict[str, Any]) -> str:
        if self.synthetic:
            return "output/data/raw.csv"
        data = config.get("data", {}) or {}
        return data.get("csv") or data.get("hsls09_csv") or ""

    def missing_message(self, path: str, reg: Registry | None) -> str:
        hint = (reg.dataset.get("download_hint", "") if reg else "").strip()
        return (f"dataset '{self.name}': the raw data file {path or '(not configured)'} does not exist.\n"
                + (f"{hint}\n" if hint else "")
                + "Or run on the bundled synthetic data: --config dataset=hsls09_synthetic")


ADAPTERS = {
    "hsls09_synthetic": Adapter("hsls09_synthetic", "hsls09", synthetic=True),
    "hsls09": Adapter("hsls09", "hsls09"),
}


def adapter(name: str) -> Adapter:
    if name not in ADAPTERS:
        raise DataError(f"unknown dataset '{name}' (known: {sorted(ADAPTERS)})")
    return ADAPTERS[name]


def read_raw(path: str | Path, usecols: list[str] | None = None) -> pd.DataFrame:
    """Read a raw survey CSV: numbers stay numbers, labels stay text (never coerced wholesale)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"raw data file not found: {path}")
    try:
        header = pd.read_csv(path, nrows=0)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a readable CSV file ({exc})") from exc
    if usecols is not None:
        absent = [c for c in usecols if c not in header.columns]
        if absent:
            raise DataError(f"{path}: columns not in the data: {absent}")
    try:
        return pd.read_csv(path, usecols=usecols, low_memory=False)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{path}: malformed CSV ({exc})") from exc


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_raw(frame: pd.DataFrame, reg: Registry, path: str | Path) -> dict[str, Any]:
    """The dataset manifest: size, ID column, and coverage of the curated variables."""
    id_col = reg.dataset.get("id_column")
    if id_col and id_col not in frame.columns:
        raise DataError(f"{path}: the ID column {id_col} is missing; is this the {reg.dataset['name']} file?")
    if len(frame) == 0:
        raise DataError(f"{path}: the file has no rows")
    if id_col and frame[id_col].duplicated().any():
        dup = frame.loc[frame[id_col].duplicated(), id_col].iloc[0]
        raise DataError(f"{path}: {id_col} is not unique (e.g. {dup})")
    tier1 = [n for n, v in reg.tier1.items() if not v.get("derived")]
    present = [n for n in tier1 if n in frame.columns]
    if len(present) < max(1, len(tier1) // 2):
        raise DataError(f"{path}: only {len(present)} of {len(tier1)} curated {reg.dataset['name']} variables "
                        f"are columns of this file (e.g. missing {[n for n in tier1 if n not in present][:5]})")
    return {
        "path": str(path),
        "sha256": file_sha256(path),
        "n_rows": int(len(frame)),
        "n_columns": int(frame.shape[1]),
        "id_column": id_col,
        "tier1_present": len(present),
        "tier1_missing": [n for n in tier1 if n not in present],
        "columns": [str(c) for c in frame.columns],
    }
