"""The quantiles of an in-memory table through ``dprect.aggregate`` are snapped to
integers where the command line's are: a column whose DECLARED type is integral (a numpy
or pandas integer dtype, pandas' nullable ``Int64``, a pyarrow integer or decimal(…, 0)
type, an integer matrix) has its quantiles released as integers; a float column, a
column of Python objects (read value by value) and a float matrix do not — decided from
the type only. The same table as Parquet through ``dprect aggregate`` and as a pandas
DataFrame or a pyarrow Table through the API, with the same seed, release the same
values, with and without groups, alone and in a mixed run (docs/privacy.md §11a,
"Integer columns")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_run import run

import dprect

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")

#: half the rows at 3, half at 4: the median lies anywhere in [3, 4] (10,001 candidates)
VALUES = [3] * 1000 + [4] * 1000
GROUPS = ["a", "b"]
QUANTILES = ["p25", "median", "p75"]


def frame() -> pd.DataFrame:
    """n int64, x float64 (the same values) and the group g of each row."""
    return pd.DataFrame({"n": np.array(VALUES, dtype=np.int64),
                         "x": np.array(VALUES, dtype=np.float64),
                         "g": [GROUPS[i % 2] for i in range(len(VALUES))]})


def cli_rows(tmp: Path, capsys: pytest.CaptureFixture[str], statistics: list[str],
             grouped: bool) -> list[dict]:
    """The CLI's released rows for the frame written as Parquet."""
    parquet, out = tmp / "t.parquet", tmp / f"out-{len(statistics)}-{grouped}.json"
    pq.write_table(pa.Table.from_pandas(frame(), preserve_index=False), parquet)
    groups = ["--group-by", "g", "--groups", ",".join(GROUPS)] if grouped else []
    code, _, err = run(["aggregate", "--input", str(parquet), "--columns", "n,x",
                        "--statistics", ",".join(statistics), "--epsilon", "6", "--seed",
                        "3", *groups, "--output", str(out)], capsys)
    assert code == 0, err
    return json.loads(out.read_text())["results"]


def api_rows(data: object, statistics: list[str], grouped: bool,
             columns: list[str] | None = None) -> list[dict]:
    groups = {"group_by": "g", "groups": GROUPS} if grouped else {}
    return dprect.aggregate(data, columns or ["n", "x"], statistics=statistics,
                            epsilon=6.0, seed=3, **groups).rows()


def values(rows: list[dict], column: str, statistics: list[str]) -> list[list[float]]:
    """Per group, the column's released statistics as floats."""
    return [[float(r[s]) for s in statistics] for r in rows if r["column"] == column]


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("statistics", [QUANTILES, ["mean", "median"]])
def test_the_api_snaps_an_integer_column_as_the_cli_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], statistics: list[str],
        grouped: bool) -> None:
    cli = cli_rows(tmp_path, capsys, statistics, grouped)
    median = statistics.index("median")
    n, x = values(cli, "n", statistics), values(cli, "x", statistics)
    assert n and all(v[median].is_integer() for v in n)
    assert not all(v[median].is_integer() for v in x)  # the float column: not snapped
    df = frame()
    for data in (df, pa.Table.from_pandas(df, preserve_index=False)):
        rows = api_rows(data, statistics, grouped)
        assert values(rows, "n", statistics) == n
        assert values(rows, "x", statistics) == x


def test_the_declared_type_decides_never_the_values() -> None:
    """Nullable Int64, uint8, a decimal(…, 0) and an integer matrix are integral; a column
    of Python ints (dtype object, read value by value) and a float matrix are not."""
    df = frame()
    snapped = values(api_rows(df, QUANTILES, False), "n", QUANTILES)
    floats = df.assign(n=df["n"].astype(np.float64))  # the first column's float release
    drawn = values(api_rows(floats, QUANTILES, False), "n", QUANTILES)
    assert snapped != drawn and all(v.is_integer() for v in snapped[0])
    cases = ((snapped, [pd.Series(VALUES, dtype="Int64"), pd.Series(VALUES, dtype=np.uint8)]),
             (drawn, [pd.Series(VALUES, dtype=object)]))
    for expected, columns in cases:
        for series in columns:
            got = api_rows(pd.DataFrame({"n": series, "x": df["x"]}), QUANTILES, False)
            assert values(got, "n", QUANTILES) == expected, series.dtype
    decimal = pa.table({"n": pa.array(VALUES, pa.decimal128(10, 0)),
                        "x": pa.array(df["x"].to_numpy())})
    assert values(api_rows(decimal, QUANTILES, False), "n", QUANTILES) == snapped
    matrix = np.array(VALUES, dtype=np.int64).reshape(-1, 1).repeat(2, axis=1)
    assert values(api_rows(matrix, QUANTILES, False), "n", QUANTILES) == snapped
    assert values(api_rows(matrix.astype(np.float64), QUANTILES, False), "n",
                  QUANTILES) == drawn
