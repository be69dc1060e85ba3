"""A CSV file whose cells hold bytes that are not UTF-8 is read alike on both engines
(docs/operations.md, "CSV"): Spark's CSV reader decodes the file as Java does, each bad
sequence one U+FFFD, where the numpy engine's pyarrow reader typed such a column binary
and refused it as a group or label column — a refusal made by a row's bytes, on one
engine only. The numpy engine now reads such a column as Spark's text
(:func:`dprect.engines.arrow_input.spark_text`); a header that is not UTF-8 is refused on
both, from the path alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dprect.core.errors import InputDataError
from dprect.engines.arrow_input import read_table
from dprect.engines.spark.source import read_source
from tests.cli_run import messages, run

SELECT = ["--select-groups", "--selection-epsilon", "1", "--selection-delta", "1e-6"]
#: cells that are not UTF-8, each with the text Spark reads: Python's own ``replace``
#: reads a surrogate's three-byte form (ED A0 80) as three U+FFFD, Java as one
BAD_CELLS = {
    b"\xffbad": "\ufffdbad", b"\xe2\x82": "\ufffd", b"\xed\xa0\x80": "\ufffd",
    b"\xed\xa0\x80\xed\xb0\x80": "\ufffd\ufffd", b"a\xed\xa0": "a\ufffd",
    b"\xed\xa0z": "\ufffdz", b"\xc0\x80": "\ufffd\ufffd", b"\xf0\x90\x80": "\ufffd",
    b"\xf4\x90\x80\x80": "\ufffd" * 4, b"\xf8\x88\x80\x80\x80": "\ufffd" * 5,
    b"z\xe0\x80\xaf": "z" + "\ufffd" * 3, b"\x80\x80": "\ufffd\ufffd",
    b"\xe2\x82\xac\xff\xfe": "\u20ac\ufffd\ufffd", b'"\xe2\x82"': "\ufffd",
}


def _rows_csv(path: Path, rows: int) -> Path:
    """``g`` keyed ``ok`` or the bytes ``\\xffbad`` (every third row), ``y`` the same
    labels, two numeric columns ``x`` and ``z``."""
    lines = [b"g,x,z,y"]
    for i in range(rows):
        key = b"\xffbad" if i % 3 == 0 else b"ok"
        lines.append(b"%s,%d.5,%d.25,%s" % (key, i % 17 - 8, i % 11 - 5, key))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_bad_bytes_are_read_as_spark_reads_them(spark, tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b"g,n\n" + b"".join(cell + b",%d\n" % i
                                          for i, cell in enumerate(BAD_CELLS)))
    table = read_table(path, ["g", "n"])
    rows = read_source(spark, str(path), columns=["g", "n"]).collect()
    assert table.column("g").to_pylist() == list(BAD_CELLS.values())
    assert sorted((r["g"], r["n"]) for r in rows) == sorted(
        zip(table.column("g").to_pylist(), table.column("n").to_pylist(), strict=True))
    assert str(table.schema.field("g").type) == "string"


def _outputs(tmp_path: Path, capsys, argv: list[str]) -> dict[str, bytes]:
    out = {}
    for engine in ("numpy", "spark"):
        file = tmp_path / f"{engine}.json"
        code, _, err = run([*argv, "--engine", engine, "--output", str(file), "--quiet"],
                           capsys)
        assert code == 0, err
        out[engine] = file.read_bytes()
    return out


def test_a_group_with_a_bad_byte_gives_the_same_bytes(spark, tmp_path: Path, capsys
                                                      ) -> None:
    data = _rows_csv(tmp_path / "t.csv", 900)
    out = _outputs(tmp_path, capsys, [
        "aggregate", "--input", str(data), "--columns", "x", "--statistics", "count,mean",
        "--epsilon", "1", "--group-by", "g", *SELECT, "--seed", "4"])
    assert out["numpy"] == out["spark"]
    assert sorted(json.loads(out["numpy"])["groups"]) == ["ok", "\ufffdbad"]


def test_a_classes_fit_with_a_bad_byte_label_gives_the_same_bytes(spark, tmp_path: Path,
                                                                  capsys) -> None:
    data = _rows_csv(tmp_path / "t.csv", 3000)
    out = _outputs(tmp_path, capsys, [
        "fit", "--input", str(data), "--features", "x,z", "--label", "y", *SELECT,
        "--epsilon", "1", "--delta", "1e-6", "--grid=-9:9:18", "--seed", "6"])
    assert out["numpy"] == out["spark"]
    assert sorted(json.loads(out["numpy"])["classes"]) == ["ok", "\ufffdbad"]


def test_a_bad_byte_in_a_numeric_column_makes_it_text_on_both(spark, tmp_path: Path
                                                               ) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b"g,x\na,1.5\nb,2\xff\n")
    on_numpy = read_table(path, ["x"]).schema.field("x").type
    on_spark = read_source(spark, str(path), columns=["x"]).schema["x"].dataType
    assert (str(on_numpy), on_spark.simpleString()) == ("string", "string")


def test_a_bad_byte_in_a_numeric_column_is_refused_alike(spark, tmp_path: Path, capsys
                                                         ) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b"g,x\n" + b"a,1.5\n" * 50 + b"b,2\xff\n")
    said = {}
    for engine in ("numpy", "spark"):
        code, _, err = run(["aggregate", "--input", str(path), "--columns", "x",
                            "--statistics", "count", "--epsilon", "1", "--group-by", "g",
                            "--groups", "a,b", "--engine", engine, "--output",
                            str(tmp_path / "o.json"), "--quiet"], capsys)
        assert code == 2
        said[engine] = messages(err)
    assert said["numpy"] == said["spark"]
    assert len(said["numpy"]) == 1 and "its type is string" in said["numpy"][0]
    assert "\ufffd" not in said["numpy"][0]


@pytest.mark.parametrize("header", [b"g\xff,x", b"\xed\xa0\x80,x"])
def test_a_header_that_is_not_utf8_is_refused_alike(spark, tmp_path: Path, header: bytes
                                                    ) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(header + b"\na,1.5\n")
    said = []
    for read in (lambda: read_table(path, ["x"]),
                 lambda: read_source(spark, str(path), columns=["x"])):
        with pytest.raises(InputDataError) as refused:
            read()
        said.append(str(refused.value))
    assert said[0] == said[1]
    assert said[0].startswith(f"cannot read {str(path)!r} as csv")
    assert "\ufffd" not in said[0] and "not a well-formed CSV file" in said[0]


def test_a_parquet_keys_bad_bytes_are_decoded_as_spark_decodes_them(spark, tmp_path: Path
                                                                     ) -> None:
    """The same decoding for a Parquet string column's distinct keys (Spark decodes each
    value with Java's String decoder, which takes a surrogate's three bytes as one)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprect.engines.arrow_input import python_values

    cells = pa.array([cell.strip(b'"') for cell in BAD_CELLS], pa.binary()).view(pa.string())
    pq.write_table(pa.table({"g": cells}), tmp_path / "t.parquet")
    on_spark = [r["g"] for r in spark.read.parquet(str(tmp_path / "t.parquet")).collect()]
    assert python_values(cells) == on_spark


def test_the_aggregate_job_on_spark_gives_the_numpy_commands_bytes(
        spark, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """The jobs read a CSV input by the same rule: the aggregate job (Spark) writes the
    numpy command's bytes for a group holding bytes that are not UTF-8."""
    from tests.cli_run import job_argv

    repo = Path(__file__).resolve().parents[2]
    monkeypatch.syspath_prepend(str(repo / "jobs"))
    import aggregate as job

    data = _rows_csv(tmp_path / "t.csv", 900)
    argv = job_argv(repo / "conf" / "aggregate.yaml", f"input={data}", "format=csv",
                    "columns=[x]", "group_by=g", "groups=null", "table=null",
                    "select_groups=true", "selection_epsilon=1", "selection_delta=1e-6",
                    "epsilon=1", f"output={tmp_path / 'job.json'}", "seed=4")
    assert job.main(argv, spark=spark) == 0
    code, _, err = run(["aggregate", "--input", str(data), "--columns", "x", "--statistics",
                        "count,mean", "--epsilon", "1", "--group-by", "g", *SELECT,
                        "--seed", "4", "--quiet", "--output", str(tmp_path / "cli.json")],
                       capsys)
    assert code == 0, err
    assert (tmp_path / "job.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    assert "\ufffdbad" in json.loads((tmp_path / "cli.json").read_text())["groups"]
