"""Both engines read a CSV file's rows and header by one rule (docs/operations.md, "CSV";
the numpy side is tests/app/test_csv_rows.py). Spark's CSV reader read line by line and
permissively: a row with an extra field had it dropped, one with a missing field got a
null, a line of spaces was skipped, a quoted line end cut its record into two rows, and a
header naming two fields alike was renamed (x0, x2) — each read where the numpy engine
refused, or read otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from dprect.core.errors import InputDataError
from dprect.engines.arrow_input import read_table
from dprect.engines.spark.source import read_source
from dprect.release.ledger import Ledger
from tests.app.test_csv_rows import MALFORMED
from tests.cli_run import messages, run


def _refusals(spark, path: Path, columns: list[str]) -> tuple[str, str]:
    with pytest.raises(InputDataError) as on_numpy:
        read_table(path, columns)
    with pytest.raises(InputDataError) as on_spark:
        read_source(spark, str(path), columns=columns)
    return str(on_numpy.value), str(on_spark.value)


def test_malformed_rows_and_a_name_given_twice_are_refused_alike(spark, tmp_path: Path
                                                                 ) -> None:
    cases = {**MALFORMED, "twice": "x,g,X\n1.5,a,2\n", "twice_unread": "g,x,y,G\na,1,2,b\n"}
    for case, text in cases.items():
        path = tmp_path / f"{case}.csv"
        path.write_text(text)
        numpy_said, spark_said = _refusals(spark, path, ["x"])
        assert numpy_said == spark_said, case
        assert ("have one name" in numpy_said) == case.startswith("twice"), case


def test_quoted_line_ends_and_empty_lines_are_read_alike(spark, tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('g,x\n"a\nb",1.5\n\n"c",2.5\n"d\r\n",3.5\n\n')
    table = read_table(path, ["g", "x"])
    rows = read_source(spark, str(path), columns=["g", "x"]).collect()
    assert sorted(zip(*table.to_pydict().values(), strict=True)) == sorted(
        (r["g"], r["x"]) for r in rows)
    assert table.column("g").to_pylist() == ["a\nb", "c", "d\r\n"]


def test_a_malformed_row_is_refused_before_the_charge(spark, tmp_path: Path, capsys
                                                      ) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    path = tmp_path / "t.csv"
    path.write_text(MALFORMED["extra"])
    numpy_said, _ = _refusals(spark, path, ["x", "g"])
    code, _, err = run(["aggregate", "--input", str(path), "--columns", "x", "--group-by",
                        "g", "--groups", "a,b", "--statistics", "count", "--epsilon", "1",
                        "--output", str(tmp_path / "r.json"), "--ledger", str(ledger),
                        "--dataset", "ds", "--engine", "spark", "--quiet"], capsys)
    assert code == 2, err
    assert messages(err) == [f"dprect: error: {numpy_said}"]
    assert Ledger(ledger).events("ds") == [] and not (tmp_path / "r.json").exists()


def _unopened(path: Path, how: str) -> None:
    """``path`` made a file that cannot be opened: removed, or replaced by a folder."""
    path.unlink()
    if how == "folder":
        path.mkdir()
        (path / "part.csv").write_text("g,x\na,1.5\n")


@pytest.mark.parametrize("how", ["removed", "folder"])
def test_a_file_that_cannot_be_opened_is_not_called_malformed(
        spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """A file removed (or replaced by a folder) after its header was read: the row check
    (Spark) and pyarrow's read (numpy) cannot open it. Spark's FAILED_READ_FILE was said
    to be a malformed CSV file; both engines now say it cannot be opened, in one line."""
    from dprect.engines import arrow_input
    from dprect.engines.spark import source

    path = tmp_path / "t.csv"
    said = []
    for module, name, read, first in (
            (source, "_check_csv_rows", lambda: read_source(spark, str(path), columns=["x"]),
             True),
            (arrow_input, "csv_header", lambda: read_table(path, ["x"]), False)):
        path.write_text("g,x\na,1.5\nb,2.5\n")
        real = getattr(module, name)

        def gone(*args, real=real, first=first, **kwargs):
            if first:  # the row check, on a file gone after the schema was read
                _unopened(path, how)
            out = real(*args, **kwargs)
            if not first:  # the header read: the file goes before pyarrow reads it
                _unopened(path, how)
            return out

        monkeypatch.setattr(module, name, gone)
        with pytest.raises(InputDataError) as refused:
            read()
        said.append(str(refused.value))
        monkeypatch.undo()
        if path.is_dir():
            (path / "part.csv").unlink()
            path.rmdir()
    assert said[0] == said[1], said
    assert said[0] == (f"cannot read {str(path)!r} as csv: a file of it cannot be opened "
                       "(it was removed, moved or replaced by a folder after the input was "
                       "listed, or this process may not read it): check the input's files "
                       "and run again")
    path.write_text(MALFORMED["extra"])
    numpy_said, spark_said = _refusals(spark, path, ["x"])
    assert numpy_said == spark_said and "not a well-formed CSV file" in spark_said
