"""Data frames passed between rules: Parquet files (pyarrow), with their types kept.

The prepared data, the out-of-fold and held-out predictions and a generated data set's rows travel from one job
to the next as Parquet: floats, nullable integers, booleans, categories (their categories, used or not, and their
order), strings and missing values come back as they were written, with the column order and the index (a plain
0..n-1 index is stored as metadata only). CSV stays where a person reads a file (tables/*.csv) and where a user
gives the data (their own CSV is read by edm_ars.data.datasets.adapters).

Files are written atomically (a temporary file in the same folder, then a rename) and byte for byte the same
for the same frame: no timestamps, and the metadata pyarrow stores (the schema, the pandas dtypes, the writer's
version) depend on the frame and the installed versions only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from edm_ars.core.artifacts import atomic_write_with
from edm_ars.core.errors import DataError

#: zstd: 12-19% smaller than snappy on the default study's files, read about as fast
COMPRESSION = "zstd"


def write_frame(path: str | Path, frame: pd.DataFrame) -> None:
    """Write a frame to a Parquet file atomically. A column pyarrow cannot store as one type (numbers and text
    mixed in an object column) raises a DataError naming the column and the file."""
    path = Path(path)
    table = _table(frame, path)
    atomic_write_with(path, lambda fh: pq.write_table(table, fh, compression=COMPRESSION))


def _table(frame: pd.DataFrame, path: Path) -> pa.Table:
    if not frame.columns.is_unique:
        dup = sorted({str(c) for c in frame.columns[frame.columns.duplicated()]})
        raise DataError(f"{path}: cannot write a frame that names more than one column the same: {dup}")
    try:
        return pa.Table.from_pandas(frame)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        for col in frame.columns:  # name the column that cannot be stored
            try:
                pa.array(frame[col], from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as col_exc:
                raise DataError(f"{path}: column {col!r} cannot be written as one type "
                                f"({_one_line(col_exc)})") from exc
        raise DataError(f"{path}: the frame cannot be written as Parquet ({_one_line(exc)})") from exc


def read_frame(path: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """A frame written by write_frame (or any Parquet file), optionally only some of its columns, in the order
    given. A missing file, a file that is not Parquet (cut short, another format) and columns the file does not
    hold raise a DataError naming the file."""
    path = Path(path)
    if columns is not None:
        present = set(frame_columns(path))
        absent = [c for c in columns if c not in present]
        if absent:
            raise DataError(f"{path}: columns not in the file: {absent}")
    _exists(path)
    try:
        table = pq.read_table(path, columns=list(columns) if columns is not None else None)
        return table.to_pandas()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise DataError(f"{path}: not a readable Parquet file ({_one_line(exc)})") from exc


def read_column(path: str | Path) -> pd.Series:
    """The one column of a single-column file (an outcome, the groups, out-of-fold predictions)."""
    frame = read_frame(path)
    if frame.shape[1] != 1:
        raise DataError(f"{path}: expected one column, found {frame.shape[1]}: {list(frame.columns)[:5]}")
    return frame.iloc[:, 0]


def read_labels(path: str | Path) -> pd.DataFrame:
    """A frame of group labels (the protected attributes) with every column as text and missing values kept
    missing: a numeric code reads as its text ("1", "2.0"), so groups are named the same whatever the column's
    type."""
    frame = read_frame(path)
    return frame.astype({c: "str" for c in frame.columns})


def frame_columns(path: str | Path) -> list[str]:
    """The column names of a Parquet file, from its footer (no rows are read; a stored index is not a column)."""
    schema = _footer(Path(path), pq.read_schema)
    meta = schema.pandas_metadata or {}
    index = {c for c in meta.get("index_columns", []) if isinstance(c, str)}
    return [name for name in schema.names if name not in index]


def frame_rows(path: str | Path) -> int:
    """The number of rows of a Parquet file, from its footer."""
    return int(_footer(Path(path), pq.read_metadata).num_rows)


def _footer(path: Path, read):
    _exists(path)
    try:
        return read(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise DataError(f"{path}: not a readable Parquet file ({_one_line(exc)})") from exc


def _exists(path: Path) -> None:
    if not path.exists():
        raise DataError(f"data file not found: {path}")
    if not path.is_file():
        raise DataError(f"data file {path} is not a file")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
