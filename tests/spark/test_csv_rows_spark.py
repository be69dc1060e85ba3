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
