"""read_source: Parquet (partitioned), CSV, Delta through deltalake (time travel, partition
columns), refusal of Delta features the fallback cannot read, and clear errors."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dprect.core.errors import InputDataError, ParameterError
from dprect.engines.spark.source import check_fallback_readable, detect_format, read_source

deltalake = pytest.importorskip("deltalake")


def _rows(df, *cols):
    return sorted(tuple(r) for r in df.select(*cols).collect())


def test_parquet_partitioned_and_where(spark, tmp_path):
    table = pa.table({"x": [1.0, 2.0, 3.0, 4.0], "y": [1, 0, 1, 1],
                      "day": ["2024-01-01", "2024-01-01", "2024-01-02", "2024-01-03"]})
    pq.write_to_dataset(table, tmp_path / "pq", partition_cols=["day"])
    df = read_source(spark, tmp_path / "pq")
    assert set(df.columns) == {"x", "y", "day"}
    assert _rows(df, "x", "y") == [(1.0, 1), (2.0, 0), (3.0, 1), (4.0, 1)]
    kept = read_source(spark, str(tmp_path / "pq"), where="day >= '2024-01-02'")
    assert _rows(kept, "x") == [(3.0,), (4.0,)]
    with pytest.raises(InputDataError, match="row filter"):
        read_source(spark, tmp_path / "pq", where="nosuchcolumn > 1")
    with pytest.raises(InputDataError, match="row filter"):
        read_source(spark, tmp_path / "pq", where="x >>> (")


def test_csv(spark, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,label\n1.5,2,1\n-0.25,3,0\n")
    assert detect_format(spark, str(path)) == "csv"
    df = read_source(spark, path)
    assert dict(df.dtypes) == {"a": "double", "b": "int", "label": "int"}
    assert _rows(df, "a", "b", "label") == [(-0.25, 3, 0), (1.5, 2, 1)]


def test_missing_path_and_bad_arguments(spark, tmp_path):
    with pytest.raises(InputDataError, match="does not exist"):
        read_source(spark, tmp_path / "nothing.parquet")
    (tmp_path / "f.csv").write_text("a\n1\n")
    with pytest.raises(ParameterError, match="Delta version"):
        read_source(spark, tmp_path / "f.csv", version=1)
    with pytest.raises(ParameterError, match="format"):
        read_source(spark, tmp_path / "f.csv", format="orc")
    with pytest.raises(ParameterError, match="not both"):
        read_source(spark, tmp_path / "f.csv", format="delta", version=0, timestamp="2024-01-01")


def test_not_a_delta_table(spark, tmp_path):
    pq.write_table(pa.table({"x": [1.0]}), tmp_path / "plain.parquet")
    (tmp_path / "folder").mkdir()
    pq.write_table(pa.table({"x": [1.0]}), tmp_path / "folder" / "part.parquet")
    for path in (tmp_path / "plain.parquet", tmp_path / "folder"):
        with pytest.raises(InputDataError, match="not a Delta table"):
            read_source(spark, path, format="delta")


def test_delta_versions_timestamps_and_partitions(spark, tmp_path):
    path = str(tmp_path / "delta")
    v0 = pa.table({"x": [1.0, 2.0, 3.0], "y": [1, 0, 1], "p": ["01", "a b/c", None]})
    deltalake.write_deltalake(path, v0, partition_by=["p"])
    time.sleep(1.2)
    between = dt.datetime.now(dt.UTC)
    time.sleep(1.2)
    v1 = pa.table({"x": [4.0], "y": [1], "p": ["01"]})
    deltalake.write_deltalake(path, v1, mode="append", partition_by=["p"])

    assert detect_format(spark, path) == "delta"
    latest = read_source(spark, path)
    assert dict(latest.dtypes)["p"] == "string"  # '01' is not read as the integer 1
    assert _rows(latest, "x", "y", "p") == [(1.0, 1, "01"), (2.0, 0, "a b/c"),
                                            (3.0, 1, None), (4.0, 1, "01")]
    old = read_source(spark, path, version=0)
    assert _rows(old, "x") == [(1.0,), (2.0,), (3.0,)]
    at = read_source(spark, path, timestamp=between.isoformat())
    assert _rows(at, "x") == [(1.0,), (2.0,), (3.0,)]
    assert _rows(read_source(spark, path, timestamp=dt.datetime.now(dt.UTC)), "x")[-1] == (4.0,)
    assert _rows(read_source(spark, path, where="p = '01'"), "x") == [(1.0,), (4.0,)]
    with pytest.raises(InputDataError, match="version 7"):
        read_source(spark, path, version=7)
    with pytest.raises(InputDataError, match="no version at or before"):
        read_source(spark, path, timestamp="2001-01-01T00:00:00Z")
    with pytest.raises(ParameterError, match="ISO-8601"):
        read_source(spark, path, timestamp="yesterday")


def _without_native_delta(monkeypatch):
    """Read through delta-rs even when the test session has the Delta jars (native Delta
    reads these tables; the fallback path must refuse what it cannot read)."""
    from dprect.engines.spark import source

    monkeypatch.setattr(source, "has_delta_extension", lambda spark: False)


@pytest.mark.parametrize("feature,configuration", [
    ("column mapping", {"delta.columnMapping.mode": "name"}),
    ("deletion vectors", {"delta.enableDeletionVectors": "true"}),
])
def test_delta_column_mapping_and_deletion_vectors_are_refused(spark, tmp_path, monkeypatch,
                                                               feature, configuration):
    _without_native_delta(monkeypatch)  # the delta-rs path is what refuses
    path = str(tmp_path / "t")
    deltalake.write_deltalake(path, pa.table({"x": [1.0], "y": [1]}),
                              configuration=configuration)
    with pytest.raises(InputDataError, match=feature):
        read_source(spark, path)


def test_delta_unknown_reader_feature_in_the_log_is_refused(spark, tmp_path, monkeypatch):
    """A tiny table whose protocol action is edited to declare a reader feature."""
    _without_native_delta(monkeypatch)  # the delta-rs path is what refuses
    path = tmp_path / "tw"
    deltalake.write_deltalake(str(path), pa.table({"x": [1.0], "y": [1]}))
    log = path / "_delta_log" / "00000000000000000000.json"
    actions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    for action in actions:
        if "protocol" in action:
            action["protocol"] = {"minReaderVersion": 3, "minWriterVersion": 7,
                                  "readerFeatures": ["typeWidening"],
                                  "writerFeatures": ["typeWidening"]}
    log.write_text("".join(json.dumps(a) + "\n" for a in actions))
    with pytest.raises(InputDataError, match="typeWidening"):
        read_source(spark, str(path))


def test_protocol_checks_name_the_feature():
    class Proto:
        def __init__(self, reader, features=None):
            self.min_reader_version = reader
            self.reader_features = features

    check_fallback_readable(Proto(1), {}, "t")
    check_fallback_readable(Proto(3, ["timestampNtz", "vacuumProtocolCheck"]), {}, "t")
    for proto, config, word in [
        (Proto(2), {}, "reader version 2"), (Proto(4), {}, "reader version 4"),
        (Proto(3, ["deletionVectors"]), {}, "deletion vectors"),
        (Proto(3, ["columnMapping"]), {"delta.columnMapping.mode": "id"}, "column mapping"),
        (Proto(3, ["variantType", "typeWidening"]), {}, "typeWidening, variantType"),
    ]:
        with pytest.raises(InputDataError, match=word):
            check_fallback_readable(proto, config, "t")


def test_delta_empty_table_keeps_its_schema(spark, tmp_path):
    path = str(tmp_path / "empty")
    deltalake.write_deltalake(path, pa.table({"x": pa.array([], pa.float64()),
                                              "y": pa.array([], pa.int64())}))
    df = read_source(spark, Path(path), format="delta")
    assert dict(df.dtypes) == {"x": "double", "y": "bigint"}
    assert df.count() == 0


def test_csv_read_as_parquet_is_a_clear_input_error(spark, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("x,y\n0.5,1\n2.0,0\n")
    with pytest.raises(InputDataError) as caught:
        read_source(spark, path, format="parquet")
    message = str(caught.value)
    assert message.startswith(f"cannot read {str(path)!r} as parquet: it is not a Parquet file")
    assert "FAILED_READ_FILE" in message and "csv format" in message
    assert "calling o" not in message and "found [" not in message  # no Py4J, no bytes
    other = tmp_path / "t.data"
    other.write_text("x,y\n0.5,1\n")
    with pytest.raises(InputDataError, match="give its format"):
        read_source(spark, other)  # detected as parquet from the name


def test_parquet_read_as_csv_is_said_to_look_like_parquet(spark, tmp_path):
    # Spark's CSV reader takes a Parquet file's bytes as a header: the refusal says what
    # the file looks like (its first bytes, Parquet's magic number), not "no column 'x'"
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [0.5, 2.0], "y": [1, 0]}), path)
    with pytest.raises(InputDataError) as caught:
        read_source(spark, path, format="csv", columns=["x", "y"])
    message = str(caught.value)
    assert message.startswith(f"cannot read {str(path)!r} as csv"), message
    assert "so it looks like a Parquet file (--format parquet" in message, message
    assert read_source(spark, path, columns=["x", "y"]).count() == 2


def test_a_bad_file_found_when_the_rows_are_read_is_an_input_error(spark, tmp_path):
    from dprect.engines.spark.fit import prepare_fit

    folder = tmp_path / "pq"
    folder.mkdir()
    pq.write_table(pa.table({"x": [0.5, 0.7], "y": [1, 0]}), folder / "part-0.parquet")
    (folder / "part-1.parquet").write_text("x,y\n0.5,1\n")  # not Parquet at all
    with pytest.raises(InputDataError) as caught:  # at the read, or at the first action
        df = read_source(spark, folder)
        prepare_fit(df, features=["x"], label="y", epsilon=1.0, delta=1e-6)
    message = str(caught.value)
    assert "FAILED_READ_FILE" in message and "found [" not in message, message


def test_a_file_gone_when_the_rows_are_read_is_said_to_be_gone(spark, tmp_path):
    """A Parquet file removed after the read was planned: Spark's FAILED_READ_FILE of a
    file it cannot open (FILE_NOT_EXIST) gets the fix of a file gone, not of a file in
    another format or damaged."""
    from dprect.engines.spark.fit import prepare_fit

    folder = tmp_path / "pq"
    folder.mkdir()
    for part in range(2):
        pq.write_table(pa.table({"x": [0.5, 0.7], "y": [1, 0]}),
                       folder / f"part-{part}.parquet")
    df = read_source(spark, folder, columns=["x", "y"])
    (folder / "part-1.parquet").unlink()
    with pytest.raises(InputDataError) as caught:
        prepare_fit(df, features=["x"], label="y", epsilon=1.0, delta=1e-6)
    message = str(caught.value)
    assert "FAILED_READ_FILE.FILE_NOT_EXIST" in message, message
    assert "cannot be opened: it was removed, moved or replaced by a folder" in message
    assert "not damaged" not in message


def test_a_type_spark_cannot_read_is_named_where_no_footer_is_read_first(spark, tmp_path):
    """Spark's Parquet reader reads no float16 (halffloat) column, used or not. A local
    file or folder has its footer read first (an unused such column is left out of
    Spark's read); a glob pattern (or a remote path) is read by Spark alone, whose
    refusal names the type's error and what to do — not "not a Parquet file, or damaged;
    fix: check the row filter"."""
    import numpy as np

    path = tmp_path / "h.parquet"
    pq.write_table(pa.table({"x": [1.0, 2.0], "h": np.array([1, 2], np.float16)}), path)
    assert read_source(spark, path, columns=["x"]).columns == ["x"]
    with pytest.raises(InputDataError) as caught:
        read_source(spark, str(tmp_path / "h.*"), columns=["x"])
    message = str(caught.value)
    assert ("it holds a column of a Parquet type Spark cannot read (Spark error "
            "PARQUET_TYPE_ILLEGAL") in message
    assert "such as float16" in message and "store such a column as another type" in message
    assert "damaged" not in message and "row filter" not in message


def test_a_row_filter_reads_the_columns_spark_can_read_beside_one_it_cannot(spark, tmp_path):
    """An input holding a column Spark's reader cannot read (a timestamp in nanoseconds,
    pandas' default), unused, is read with the schema of its other columns: a row filter
    on any of them, a partition column included, resolves and filters."""
    import datetime as dt

    folder = tmp_path / "t"
    for part in (1, 2):
        (folder / f"k={part}").mkdir(parents=True)
        pq.write_table(pa.table({
            "x": [0.5, 1.5, 2.5], "s": ["a", "b", "a"],
            "ts": pa.array([dt.datetime(2024, 5, 1)] * 3, pa.timestamp("ns"))}),
            folder / f"k={part}" / "part-0.parquet")
    df = read_source(spark, folder, columns=["x"], where="s = 'a' AND k = 2")
    assert df.columns == ["x", "s", "k"]
    assert sorted(r["x"] for r in df.collect()) == [0.5, 2.5]


def test_header_only_csv_says_its_columns_have_no_type(spark, tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("x,y\n")
    with pytest.raises(InputDataError) as caught:
        read_source(spark, path)
    message = str(caught.value)
    assert "it has a header but no rows, so column(s) 'x', 'y' have no type" in message
    assert "Parquet or Delta" in message
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(InputDataError, match="the file is empty"):
        read_source(spark, tmp_path / "empty.csv")
    words = tmp_path / "words.csv"  # all strings, but rows: read; the checks judge the types
    words.write_text("x,y\na,b\n")
    assert dict(read_source(spark, words).dtypes) == {"x": "string", "y": "string"}
