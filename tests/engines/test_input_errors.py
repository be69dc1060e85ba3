"""The reading rule's pieces (issue #40): :mod:`dprect.engines.input_errors` maps a
library's failure to a message from the path, format, schema and options only, and
:mod:`dprect.engines.file_schemas` reads each file's schema (no row) and refuses files
that disagree on a column read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dprect.core.errors import InputDataError, ParameterError
from dprect.engines.file_schemas import (
    check_agreement,
    check_types,
    csv_header,
    data_files,
    folder_schemas,
    footer_schema,
    spark_type_name,
    spark_unreadable,
    type_text,
    unlike_type,
)
from dprect.engines.input_errors import (
    LISTED_NAMES,
    column_names,
    input_error,
    missing_columns,
    reading,
    unreadable_input,
)

SECRET = "SECRET-cell-4411"


def test_a_library_error_is_mapped_without_its_text() -> None:
    with pytest.raises(InputDataError) as caught, \
            reading("t.csv", "csv", (pa.ArrowInvalid,), columns=["x", "y"]):
        raise pa.ArrowInvalid(f"CSV parse error: Expected 3 columns, got 4: 1,2,3,{SECRET}")
    message = str(caught.value)
    assert SECRET not in message and "got 4" not in message
    assert message.startswith("cannot read 't.csv' as csv (reading column(s) 'x', 'y'): ")
    assert "withheld" in message and caught.value.__cause__ is None


def test_own_errors_pass_and_others_are_not_caught() -> None:
    with pytest.raises(ParameterError, match="mine"), reading("t", "parquet", (OSError,)):
        raise ParameterError("mine")
    with pytest.raises(KeyError), reading("t", "parquet", (OSError,)):
        raise KeyError(SECRET)


@pytest.mark.parametrize("error", [PermissionError, FileNotFoundError, IsADirectoryError])
def test_a_file_that_cannot_be_opened_is_not_called_malformed(error) -> None:
    """Root reads any file, so a permission denied is raised here as pyarrow raises it:
    the file cannot be opened, which says nothing of its content (it was said to be
    "not a well-formed CSV file")."""
    with pytest.raises(InputDataError) as caught, reading(
            "t.csv", "csv", (OSError,), problem=lambda _e: "not parquet", columns=["x"]):
        raise error(13, f"Permission denied {SECRET}")
    assert str(caught.value) == str(unreadable_input("t.csv", "csv"))
    assert str(caught.value).startswith("cannot read 't.csv' as csv: a file of it cannot "
                                        "be opened (")
    assert SECRET not in str(caught.value) and caught.value.__cause__ is None


def test_a_problem_is_told_by_public_facts_only() -> None:
    with pytest.raises(InputDataError) as caught, reading(
            "d", "delta", (ValueError,), problem=lambda e: f"error {type(e).__name__}"):
        raise ValueError(SECRET)
    assert str(caught.value).startswith("cannot read 'd' as delta: error ValueError;")
    assert SECRET not in str(input_error("p", "parquet"))
    wide = str(input_error("p", "parquet", columns=[f"f{i}" for i in range(1000)]))
    assert "'f9' and 990 more)" in wide and "'f10'" not in wide


def test_column_lists_hide_names_that_are_not_plain_text() -> None:
    assert column_names(["a", "b c"]) == "'a', 'b c'"
    assert column_names([]) == "no columns"
    shown = column_names(["x", f"\x00\x9f{SECRET}", "y" * 101])
    assert SECRET not in shown and shown == "'x', 2 name(s) not shown (not plain text)"
    wide = column_names([f"f{i}" for i in range(LISTED_NAMES + 7)] + ["\x00"])
    assert wide.endswith(f"'f{LISTED_NAMES - 1}' and 7 more, 1 name(s) not shown (not plain "
                         "text)") and f"'f{LISTED_NAMES}'" not in wide


def test_a_missing_column_names_the_input_where_there_is_a_path() -> None:
    assert str(missing_columns("in/t.csv", ["p", "q"], ["a", "b"])) == (
        "input 'in/t.csv' has no column(s) 'p', 'q'; it has 'a', 'b'")
    assert str(missing_columns(None, ["p"], [])) == "the input has no column(s) 'p'; it has " \
                                                     "no columns"
    said = str(missing_columns("t.csv", [f"{SECRET}\x00"], ["a"]))
    assert SECRET not in said and "1 name(s) not shown" in said


def test_arrow_types_are_named_as_spark_names_the_column_it_reads() -> None:
    """Spark 4's names of the columns it reads from such Parquet columns
    (tests/spark/test_schema_refusals_spark.py compares the two engines' refusals)."""
    named = {pa.date32(): "date", pa.date64(): "date", pa.large_string(): "string",
             pa.timestamp("us", tz="UTC"): "timestamp", pa.timestamp("ms"): "timestamp_ntz",
             pa.timestamp("s", tz="Europe/Berlin"): "timestamp",
             pa.dictionary(pa.int32(), pa.string()): "string", pa.bool_(): "boolean",
             pa.binary(3): "binary", pa.large_binary(): "binary", pa.int8(): "tinyint",
             pa.int64(): "bigint", pa.uint32(): "bigint", pa.uint64(): "decimal(20,0)",
             pa.float32(): "float", pa.decimal128(5, 2): "decimal(5,2)",
             pa.large_list(pa.float64()): "array<double>", pa.time64("us"): "time",
             pa.map_(pa.string(), pa.int32()): "map<string,int>",
             pa.struct([("a", pa.int64()), ("b", pa.list_(pa.date32()))]):
                 "struct<a:bigint,b:array<date>>"}
    assert {t: spark_type_name(t) for t in named} == named


def test_types_are_read_as_readers_give_them() -> None:
    assert type_text(pa.dictionary(pa.int32(), pa.string())) == "string"
    assert type_text(pa.large_string()) == "string"
    assert type_text(pa.large_binary()) == "binary"
    assert type_text(pa.float64()) == "double" and type_text(pa.int32()) == "int32"


def test_data_files_are_listed_as_spark_and_pyarrow_list_them(tmp_path: Path) -> None:
    for rel in ["a.parquet", "_SUCCESS", ".a.parquet.crc", "day=1/b.parquet",
                "_delta_log/0.json", ".hidden/c.parquet"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"")
    assert [p.relative_to(tmp_path).as_posix() for p in data_files(tmp_path)] == \
        ["a.parquet", "day=1/b.parquet"]


def test_parquet_files_must_agree_on_the_columns_read(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1.0], "y": [1], "s": ["a"]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": [SECRET], "y": [1], "s": [2]}), tmp_path / "b.parquet")
    schemas = folder_schemas(tmp_path, "parquet")
    check_agreement("t", schemas, ["y", "part"])  # s differs but is not read; part: no file
    with pytest.raises(InputDataError) as caught:
        check_agreement("t", schemas, ["y", "x"])
    message = str(caught.value)
    assert SECRET not in message
    assert message.startswith("the files of 't' disagree on column 'x': it is double in "
                              "'a.parquet' but string in 'b.parquet'")


def test_a_column_missing_from_one_file_is_refused() -> None:
    schemas = [("a", {"y": "int64"}), ("b", {"x": "double", "y": "int64"})]
    with pytest.raises(InputDataError, match="column 'x': it is double in 'b' but absent "
                                             "from 'a'"):
        check_agreement("t", schemas, ["x"])


def test_csv_headers_must_agree_on_the_places_of_the_columns_read(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text(f"x,y\n1,{SECRET}\n")
    (tmp_path / "b.csv").write_text("x,y,z\n2,0,1\n")
    (tmp_path / "c.csv").write_text("y,x\n0,3\n")
    assert csv_header(tmp_path / "a.csv") == {"x": "header field 1", "y": "header field 2"}
    check_agreement("t", folder_schemas(tmp_path, "csv")[:2], ["x", "y"])
    with pytest.raises(InputDataError, match=r"column 'x': it is header field 1 in 'a\.csv' "
                                             r"but header field 2 in 'c\.csv'"):
        check_agreement("t", folder_schemas(tmp_path, "csv"), ["x", "y"])


def test_a_damaged_file_is_named_without_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "a.parquet").write_bytes(b"PAR1" + SECRET.encode() + b"PAR1")
    with pytest.raises(InputDataError) as caught:
        folder_schemas(tmp_path, "parquet")
    assert SECRET not in str(caught.value) and "a.parquet' as parquet" in str(caught.value)


def test_types_the_engines_would_read_otherwise() -> None:
    """A duration (Spark: bigint, no unit) and the types Spark's Parquet reader cannot
    read, nested ones too, are named; every type both engines read alike is not."""
    unlike = [pa.duration("us"), pa.float16(), pa.timestamp("ns"),
              pa.timestamp("ns", tz="UTC"), pa.time32("ms"), pa.time64("ns"),
              pa.decimal256(40, 2), pa.list_(pa.float16()),
              pa.struct([("a", pa.int64()), ("b", pa.time64("us"))]),
              pa.map_(pa.string(), pa.timestamp("ns")),
              pa.dictionary(pa.int32(), pa.float16())]
    alike = [pa.float32(), pa.timestamp("us"), pa.timestamp("ms", tz="UTC"), pa.date32(),
             pa.decimal128(38, 2), pa.decimal256(20, 2), pa.uint64(), pa.null(),
             pa.list_(pa.int64()), pa.large_binary(), pa.binary(3),
             pa.map_(pa.string(), pa.int32()), pa.dictionary(pa.int32(), pa.string())]
    assert [t for t in unlike if unlike_type(t) is None] == []
    assert [t for t in alike if unlike_type(t) is not None] == []
    assert spark_unreadable(pa.duration("s")) is None  # read, as a bigint


def test_a_legacy_int96_timestamp_is_no_nanosecond_timestamp(tmp_path: Path) -> None:
    """Arrow reads Parquet's INT96 timestamps (old Spark and Impala files, which Spark
    reads) as nanoseconds unless told otherwise: the footer is read with them in
    microseconds and, as Spark reads INT96, in UTC: such a column is not refused as one
    Spark cannot read, and is a ``timestamp`` (not ``timestamp_ntz``) on both engines."""
    import datetime as dt

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"t": [dt.datetime(2024, 5, 1)], "x": [1.0]}), path,
                   use_deprecated_int96_timestamps=True)
    schema = footer_schema(path)
    assert schema.field("t").type == pa.timestamp("us", tz="UTC")
    check_types(path, schema, ["t", "x"])  # not refused here
    with pytest.raises(InputDataError, match="of type timestamp\\[ns\\], which Spark"):
        check_types(path, pa.schema([("t", pa.timestamp("ns"))]), ["t"])
