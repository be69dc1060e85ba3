"""``dprect aggregate --statistics p25,median,p75`` on a column whose DECLARED type is
integral — a Parquet integer, a decimal(…, 0) — releases whole numbers (the record, the
table), the plan records which columns are (``integral``), and a double column beside
them is not snapped. The same values in a CSV file are not snapped: a CSV column's type
is inferred from its values, so using it would make the release depend on them
(docs/privacy.md §11a, "Integer columns")."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from cli_run import run

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

COLUMNS = ["n", "d", "x"]
#: half the rows at 3, half at 4: the median lies anywhere in [3, 4] (10,001 candidates)
VALUES = [3] * 1000 + [4] * 1000
ARGS = ["--columns", ",".join(COLUMNS), "--statistics", "p25,median,p75", "--epsilon", "6",
        "--seed", "3"]


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """The same rows as Parquet (n int64, d decimal(10,0), x double) and as CSV."""
    parquet, text = folder / "t.parquet", folder / "t.csv"
    pq.write_table(pa.table({"n": pa.array(VALUES, pa.int64()),
                             "d": pa.array(VALUES, pa.decimal128(10, 0)),
                             "x": pa.array(np.array(VALUES, dtype=np.float64))}), parquet)
    with text.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows([v, v, v] for v in VALUES)
    return parquet, text


def released(path: Path, tmp: Path, capsys: pytest.CaptureFixture[str],
             engine: str = "numpy", extra: tuple[str, ...] = ()
             ) -> tuple[dict, list[dict[str, str]]]:
    """One run's record and table rows."""
    out, table = tmp / f"{path.stem}-{engine}.json", tmp / f"{path.stem}-{engine}.csv"
    code, _, err = run(["aggregate", "--input", str(path), *ARGS, *extra, "--engine", engine,
                        "--output", str(out), "--table", str(table)], capsys)
    assert code == 0, err
    with table.open() as f:
        return json.loads(out.read_text()), list(csv.DictReader(f))


def values_of(rows: list[dict], column: str) -> list[float]:
    row = next(r for r in rows if r["column"] == column)
    return [float(row[s]) for s in ("p25", "median", "p75")]


def test_parquet_integer_and_decimal_columns_release_integer_quantiles_csv_not(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parquet, text = write_inputs(tmp_path)
    record, table = released(parquet, tmp_path, capsys)
    assert record["plan"]["integral"] == [True, True, False]
    for column in ("n", "d"):
        for rows in (record["results"], table):
            got = values_of(rows, column)
            assert all(v.is_integer() for v in got) and got == sorted(got), (column, got)
            assert 3.0 <= got[1] <= 4.0
    # the double column beside them: the float release (its median inside (3, 4))
    assert not float(values_of(record["results"], "x")[1]).is_integer()
    # the same values in CSV: no column is integral (types inferred from the values)
    record, table = released(text, tmp_path, capsys)
    assert "integral" not in record["plan"]
    medians = [values_of(rows, c)[1] for rows in (record["results"], table)
               for c in COLUMNS]
    assert not any(float(m).is_integer() for m in medians)


def test_a_mixed_run_snaps_its_quantiles_of_integer_columns(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--statistics mean,median``: the quantiles' part of a mixed run is snapped too;
    the mean is another mechanism's and stays as drawn."""
    parquet, _ = write_inputs(tmp_path)
    out = tmp_path / "mixed.json"
    code, _, err = run(["aggregate", "--input", str(parquet), "--columns", "n,x",
                        "--statistics", "mean,median", "--epsilon", "6", "--seed", "3",
                        "--output", str(out)], capsys)
    assert code == 0, err
    rows = {r["column"]: r for r in json.loads(out.read_text())["results"]}
    assert float(rows["n"]["median"]).is_integer()
    assert not float(rows["x"]["median"]).is_integer()
