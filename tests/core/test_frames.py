"""Frames between rules (edm_ars.core.frames): Parquet round trips keep types, missing values, categories, column order
and the index; the same frame gives the same bytes; a missing or broken file is named."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from edm_ars.core.errors import DataError
from edm_ars.core.frames import frame_columns, frame_rows, read_column, read_frame, read_labels, write_frame
from edm_ars.data.raw import read_raw


def mixed_frame(n: int = 6) -> pd.DataFrame:
    """Every kind of column the rules pass on, in an order that is not alphabetical."""
    rng = np.random.default_rng(3)
    return pd.DataFrame({
        "z_score": rng.normal(size=n),
        "count": pd.array([1, None, 3, 4, None, 6][:n], dtype="Int64"),
        "region": pd.Categorical(["north", "south", None, "north", "south", "north"][:n],
                                 categories=["south", "north", "west"]),  # "west" is never used
        "grade": pd.Categorical(["low", "high", "low", None, "mid", "high"][:n], categories=["low", "mid", "high"],
                                ordered=True),
        "label": ["a", None, "c", "d", "e", "f"][:n],
        "flag": [True, False, True, True, False, False][:n],
        "maybe": pd.array([True, None, False, True, None, False][:n], dtype="boolean"),
        "nothing": [np.nan] * n,
        "none_at_all": [None] * n,
        "small": np.arange(n, dtype="float32"),
        "code": np.arange(n, dtype="int64") * 7,
    })


def test_a_frame_comes_back_with_its_types_values_and_order(tmp_path):
    frame = mixed_frame()
    write_frame(tmp_path / "f.parquet", frame)
    back = read_frame(tmp_path / "f.parquet")
    pd.testing.assert_frame_equal(back, frame, check_exact=True)
    assert list(back.columns) == list(frame.columns)
    assert str(back["count"].dtype) == "Int64" and back["count"].isna().tolist() == [False, True, False, False, True,
                                                                                       False]
    assert list(back["region"].cat.categories) == ["south", "north", "west"] and not back["region"].cat.ordered
    assert list(back["grade"].cat.categories) == ["low", "mid", "high"] and back["grade"].cat.ordered
    assert back["grade"].max() == "high"  # the order still means something
    assert back["flag"].dtype == bool and str(back["maybe"].dtype) == "boolean" and back["maybe"].isna().sum() == 2
    assert back["nothing"].isna().all() and back["none_at_all"].isna().all()
    assert back["small"].dtype == np.float32 and back["z_score"].tolist() == frame["z_score"].tolist()
    assert isinstance(back.index, pd.RangeIndex) and len(back) == 6


def test_an_index_other_than_the_row_numbers_is_kept(tmp_path):
    frame = mixed_frame().set_index(pd.Index([10, 20, 30, 40, 50, 60], name="student"))
    write_frame(tmp_path / "f.parquet", frame)
    back = read_frame(tmp_path / "f.parquet")
    pd.testing.assert_frame_equal(back, frame)
    assert back.index.name == "student" and frame_columns(tmp_path / "f.parquet") == list(frame.columns)
    sliced = mixed_frame().iloc[[4, 1, 2]]  # a filtered frame keeps its row labels
    write_frame(tmp_path / "s.parquet", sliced)
    assert read_frame(tmp_path / "s.parquet").index.tolist() == [4, 1, 2]


def test_the_same_frame_gives_the_same_bytes(tmp_path):
    write_frame(tmp_path / "a.parquet", mixed_frame())
    write_frame(tmp_path / "b.parquet", mixed_frame().copy())
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    other = mixed_frame()
    other.loc[0, "z_score"] += 1e-12
    write_frame(tmp_path / "c.parquet", other)
    assert (tmp_path / "c.parquet").read_bytes() != (tmp_path / "a.parquet").read_bytes()


def test_some_columns_are_read_in_the_order_asked_and_the_footer_answers_without_rows(tmp_path):
    path = tmp_path / "f.parquet"
    write_frame(path, mixed_frame())
    assert list(read_frame(path, columns=["label", "z_score"]).columns) == ["label", "z_score"]
    assert frame_columns(path) == list(mixed_frame().columns) and frame_rows(path) == 6
    with pytest.raises(DataError, match=r"f\.parquet: columns not in the file: \['absent'\]"):
        read_frame(path, columns=["z_score", "absent"])


def test_one_column_files(tmp_path):
    write_frame(tmp_path / "y.parquet", pd.DataFrame({"Y": [0.0, 1.0, np.nan]}))
    y = read_column(tmp_path / "y.parquet")
    assert y.name == "Y" and y.isna().sum() == 1
    write_frame(tmp_path / "f.parquet", mixed_frame())
    with pytest.raises(DataError, match=r"f\.parquet: expected one column, found 11"):
        read_column(tmp_path / "f.parquet")


def test_labels_read_as_text_with_missing_values_kept(tmp_path):
    frame = pd.DataFrame({"sex": ["Male", None, "Female"], "race": [1.0, 2.0, np.nan],
                          "lunch": pd.array([1, 0, None], dtype="Int64"), "ell": [True, False, True]})
    write_frame(tmp_path / "p.parquet", frame)
    labels = read_labels(tmp_path / "p.parquet")
    assert labels["race"].tolist()[:2] == ["1.0", "2.0"] and labels["lunch"].tolist()[:2] == ["1", "0"]
    assert labels["ell"].tolist() == ["True", "False", "True"]
    assert labels.isna().sum().tolist() == [1, 1, 1, 0]


def test_a_missing_file_is_named(tmp_path):
    for read in (read_frame, read_column, frame_columns, frame_rows):
        with pytest.raises(DataError, match=rf"data file not found: {tmp_path / 'nope.parquet'}"):
            read(tmp_path / "nope.parquet")


def test_a_file_that_is_not_parquet_is_named(tmp_path):
    write_frame(tmp_path / "good.parquet", mixed_frame())
    data = (tmp_path / "good.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])  # a copy cut short
    (tmp_path / "text.parquet").write_text("a,b\n1,2\n")  # a CSV under the wrong name
    (tmp_path / "empty.parquet").write_bytes(b"")
    for name in ("cut", "text", "empty"):
        path = tmp_path / f"{name}.parquet"
        for read in (read_frame, frame_columns):
            with pytest.raises(DataError, match=rf"{path}: not a readable Parquet file \("):
                read(path)


def test_a_column_of_numbers_and_text_is_refused_by_name(tmp_path):
    frame = pd.DataFrame({"ok": [1.0, 2.0], "mixed": pd.Series([1, "two"], dtype=object)})
    with pytest.raises(DataError, match=r"bad\.parquet: column 'mixed' cannot be written as one type"):
        write_frame(tmp_path / "bad.parquet", frame)
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_a_frame_with_two_columns_of_one_name_is_refused(tmp_path):
    frame = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(DataError, match=r"names more than one column the same: \['a'\]"):
        write_frame(tmp_path / "dup.parquet", frame)


def test_the_raw_data_read_from_parquet_as_from_a_csv(tmp_path):
    """read_raw on a workflow-written raw file: the columns asked for in the file's order, as read_csv gives them,
    and an absent column named."""
    frame = mixed_frame()
    write_frame(tmp_path / "raw.parquet", frame)
    frame.to_csv(tmp_path / "raw.csv", index=False)
    wanted = ["label", "code", "z_score"]
    from_parquet = read_raw(tmp_path / "raw.parquet", usecols=wanted)
    from_csv = read_raw(tmp_path / "raw.csv", usecols=wanted)
    assert list(from_parquet.columns) == list(from_csv.columns) == ["z_score", "label", "code"]
    pd.testing.assert_frame_equal(from_parquet, from_csv)
    with pytest.raises(DataError, match=r"raw\.parquet: columns not in the data: \['absent'\]"):
        read_raw(tmp_path / "raw.parquet", usecols=["code", "absent"])
    with pytest.raises(DataError, match="raw data file not found"):
        read_raw(tmp_path / "gone.parquet")
