"""Reading a data set's raw rows: a user's CSV (its header checked first) or the Parquet file a rule of the workflow
wrote, and the recoding of the registry's missing-data reserve codes and labels to missing values, the first step of
every preparation and of the check of a data file against its registry."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import pandas as pd

from edm_ars.core.errors import DataError
from edm_ars.data.registry import Registry, sentinels

#: the separators a file that parses as one comma-separated column is checked for (European spreadsheets write `;`)
OTHER_DELIMITERS = {";": "semicolon", "\t": "tab", "|": "vertical bar"}


def header_fields(path: str | Path) -> list[str]:
    """The column names of a CSV's header as written (read with the csv module: pandas renames a duplicated
    name `x` to `x.1` without a word)."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            return next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{path}: not a readable CSV file ({_one_line(exc)})") from exc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def header_problem(path: str | Path) -> str | None:
    """Why a CSV's header cannot be read as the columns the registry describes (None: it can): a name given to
    more than one column, or a header that parses as one column while it holds another separator (the file is
    refused, not re-read with that separator: a `;` file usually writes decimals with a comma too)."""
    names = header_fields(path)
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    dup = [f"{name} ({n} times)" for name, n in counts.items() if n > 1]
    if dup:
        return (f"{path}: the header names more than one column the same: {', '.join(dup)}; give each column a "
                "distinct name (a reader would silently rename the copies, e.g. to NAME.1)")
    if len(names) == 1:
        found = {d: names[0].count(d) for d in OTHER_DELIMITERS if d in names[0]}
        if found:
            sep = max(found, key=lambda d: found[d])
            shown = "\\t" if sep == "\t" else sep
            return (f"{path}: the header reads as one comma-separated column but holds {found[sep]} "
                    f"{OTHER_DELIMITERS[sep]}(s) ('{shown}'): the file looks {OTHER_DELIMITERS[sep]}-separated; "
                    "save it comma-separated (with '.' as the decimal mark) and run again")
    return None


def read_raw(path: str | Path, usecols: list[str] | None = None) -> pd.DataFrame:
    """Read a raw data file: a user's CSV (numbers stay numbers, labels stay text, never coerced wholesale), or the
    Parquet file a rule of the workflow wrote (GENERATED_RAW, types as written). A missing file, a header naming
    two columns the same and a file separated by something other than commas are refused in one line."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"raw data file not found: {path}")
    if not path.is_file():
        raise DataError(f"raw data file {path} is not a file")
    if path.suffix == ".parquet":
        from edm_ars.core.frames import frame_columns, read_frame

        if usecols is None:
            return read_frame(path)
        columns, wanted = frame_columns(path), set(usecols)
        absent = [c for c in usecols if c not in columns]
        if absent:
            raise DataError(f"{path}: columns not in the data: {absent}")
        return read_frame(path, columns=[c for c in columns if c in wanted])  # in the file's order, as a CSV's
    problem = header_problem(path)
    if problem:
        raise DataError(problem)
    try:
        header = pd.read_csv(path, nrows=0)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a readable CSV file ({_one_line(exc)})") from exc
    if usecols is not None:
        absent = [c for c in usecols if c not in header.columns]
        if absent:
            raise DataError(f"{path}: columns not in the data: {absent}")
    try:
        # in blocks of rows first: reading the whole file at once (low_memory=False) holds every field of every
        # column as text before converting, over 4 kB a row for the 182 columns of the generated data even when
        # only 26 are used; a column whose blocks infer different types (numbers in one, text in another:
        # pandas' DtypeWarning) would come out as mixed objects, so then the file is read again whole, as before
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pd.errors.DtypeWarning)
            frame = pd.read_csv(path, usecols=usecols, low_memory=True)
        for w in caught:
            if not issubclass(w.category, pd.errors.DtypeWarning):
                warnings.warn(w.message, w.category, stacklevel=2)  # any other warning of the reader is kept
        if any(issubclass(w.category, pd.errors.DtypeWarning) for w in caught):
            del frame
            frame = pd.read_csv(path, usecols=usecols, low_memory=False)
        return frame
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{path}: malformed CSV ({_one_line(exc)})") from exc


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def recode_sentinels(frame: pd.DataFrame, reg: Registry) -> tuple[pd.DataFrame, dict[str, int]]:
    """Replace numeric reserve codes and text missing labels by NaN; count them per column."""
    codes, labels = sentinels(reg)
    code_list = sorted(codes)
    code_text = {str(int(c)) for c in codes} | {f"{c:.1f}" for c in codes}
    out = {}
    counts: dict[str, int] = {}
    for col in frame.columns:
        s = frame[col]
        if pd.api.types.is_numeric_dtype(s):
            mask = s.isin(code_list)
        else:
            text = s.astype("string").str.strip()
            mask = text.isin(list(labels) + sorted(code_text)).fillna(False).astype(bool)
        n = int(mask.sum())
        if n:
            counts[col] = n
            s = s.mask(mask)
        out[col] = s
    return pd.DataFrame(out, index=frame.index), counts
