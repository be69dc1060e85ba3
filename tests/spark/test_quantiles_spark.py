"""The quantiles on the Spark engine (issue #41): the one ``mapInArrow`` pass counts the
QUANTILES spec — the rows per decimal cell and the rows at each cell's value — cell for
cell as the numpy primitive does, so the released quantiles are identical for a seed."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from engine_cells import assert_same_cells, both_engines

from dprect.core.quantile_release import plan_statistics
from dprect.core.randomness import RandomSource
from dprect.core.statistic import QUANTILES, SEARCH_GRID
from dprect.engines.grouped import draw_quantiles


def test_spark_quantiles_equal_numpys(spark, tmp_path: Path):
    gen = np.random.default_rng(41)
    n = 4000
    a = np.round(gen.normal(0, 30, n), 1)
    a[::11] = np.nan
    b = np.concatenate([np.full(n // 2, 65_000.0), gen.uniform(0, 5e5, n - n // 2)])
    b[::7] = np.inf
    g = gen.choice(["p", "q", "unlisted"], n)
    listed = ["q", "p", "empty"]
    spec = QUANTILES.spec([SEARCH_GRID] * 2)
    got, want = both_engines(spark, tmp_path / "t.parquet", {"a": a, "b": b, "g": g},
                             ["a", "b"], spec, listed)
    assert_same_cells(got, want)
    assert want[(1, 1)].at_value is not None
    assert int(want[(1, 1)].at_value.sum()) > 0  # the ties at 65,000 are cell values
    plan = plan_statistics(["p10", "median", "p90"], 1.0, 2)
    released = [draw_quantiles(plan, cells, listed, ["a", "b"], RandomSource(7)).rows()
                for cells in (got, want)]
    assert released[0] == released[1]


def _integral_inputs(folder: Path) -> tuple[Path, Path]:
    """Groups of whole numbers, half at k and half at k + 1 (a median anywhere in
    [k, k + 1]), as Parquet — n int32, d decimal(12,0), x double — and as CSV."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    gen = np.random.default_rng(48)
    g = np.repeat([f"g{i}" for i in range(6)], 400)
    base = np.repeat(np.arange(-3, 3), 400)
    v = base + gen.integers(0, 2, len(base))
    parquet, text = folder / "ints.parquet", folder / "ints.csv"
    pq.write_table(pa.table({"g": g, "n": pa.array(v, pa.int32()),
                             "d": pa.array(v.tolist(), pa.decimal128(12, 0)),
                             "x": v.astype(np.float64)}), parquet, row_group_size=700)
    with text.open("w") as f:
        f.write("g,n,d,x\n" + "".join(f"{a},{b},{b},{b}\n" for a, b in zip(g, v, strict=True)))
    return parquet, text


def _integral_run(route: Any, path: Path, out: Path) -> dict[str, Any]:
    from dprect.app.aggregate_flow import aggregate_settings, run_aggregate_flow
    from dprect.app.spine import Reporter

    settings = aggregate_settings({
        "input": str(path), "columns": ["n", "d", "x"], "group_by": "g",
        "groups": [f"g{i}" for i in range(6)], "statistics": "p25,median,p75",
        "epsilon": 6.0, "seed": 9, "output": str(out / "r.json"),
        "table": str(out / "t.csv")})
    out.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_aggregate_flow(settings, route, Reporter(say=lambda _: None, show=lambda _: None))
    return json.loads((out / "r.json").read_text())


@pytest.mark.parametrize("executors", [False, True])
def test_spark_releases_the_integer_quantiles_numpy_does(spark, tmp_path: Path,
                                                         monkeypatch, executors):
    """A Parquet int and decimal(12,0) column: numpy and Spark (the driver's draws and
    the executors') release the same bytes, whole numbers for those two and the float
    release for the double column; the CSV of the same values is snapped by neither."""
    from dprect.engines.grouped import NumpyGroupedRoute
    from dprect.engines.spark import executor_draws
    from dprect.engines.spark.grouped_route import SparkGroupedRoute

    monkeypatch.setattr(executor_draws, "EXECUTOR_CELLS", 1 if executors else 10 ** 12)
    parquet, text = _integral_inputs(tmp_path)
    for path in (parquet, text):
        records = {}
        for name, route in (("numpy", NumpyGroupedRoute()),
                            ("spark", SparkGroupedRoute(lambda: (spark, False)))):
            where = tmp_path / f"{path.suffix[1:]}-{name}"
            records[name] = _integral_run(route, path, where)
        for f in ("r.json", "t.csv"):
            assert (tmp_path / f"{path.suffix[1:]}-spark" / f).read_bytes() == \
                (tmp_path / f"{path.suffix[1:]}-numpy" / f).read_bytes()
        rows = records["spark"]["results"]
        assert len(rows) == 18
        whole = {c: all(float(r[s]).is_integer() for r in rows if r["column"] == c
                        for s in ("p25", "median", "p75")) for c in ("n", "d", "x")}
        if path == parquet:
            assert records["spark"]["plan"]["integral"] == [True, True, False]
            assert whole == {"n": True, "d": True, "x": False}
        else:
            assert "integral" not in records["spark"]["plan"]
            assert whole == {"n": False, "d": False, "x": False}
