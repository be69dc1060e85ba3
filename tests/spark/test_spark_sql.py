"""The SQL text of the engine's expressions reads back exactly in Spark."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprect.engines.spark import sql

DOUBLES = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300, 0.1, 1.0 / 3.0,
           -58.114608, 2.5000000000000004, 1e15 + 0.5, 2.0**53 + 2, 1.7976931348623157e308,
           math.inf, -math.inf]


def test_double_literals_read_back_bit_for_bit(spark):
    gen = np.random.default_rng(3)
    values = DOUBLES + list(gen.standard_normal(20) * 10.0 ** gen.integers(-300, 300, 20))
    row = spark.range(1).selectExpr(*[f"{sql.literal(v)} AS v{i}"
                                      for i, v in enumerate(values)]).collect()[0]
    got = np.array([row[f"v{i}"] for i in range(len(values))], dtype=np.float64)
    assert np.array_equal(got.view(np.int64), np.array(values).view(np.int64))
    nan = spark.range(1).selectExpr(sql.literal(math.nan)).collect()[0][0]
    assert math.isnan(nan)


def test_integer_literals_and_quoted_names(spark):
    name = "we`ird col.name"
    df = spark.range(3).selectExpr(f"id AS {sql.ident(name)}")
    big = 2**62 + 1
    row = df.selectExpr(f"max({sql.ident(name)}) + {sql.literal(big)} AS s").collect()[0]
    assert row["s"] == big + 2
    assert df.where(sql.all_of([f"{sql.ident(name)} > {sql.literal(0)}",
                                f"{sql.ident(name)} < {sql.literal(2)}"])).count() == 1
    assert df.where(sql.any_of([f"{sql.ident(name)} = {sql.literal(0)}",
                                f"{sql.ident(name)} = {sql.literal(2)}"])).count() == 2


def test_finite_and_seen(spark):
    values = [1.0, math.inf, -math.inf, math.nan, None]
    df = spark.createDataFrame([(v,) for v in values], "x double")
    flags = [r[0] for r in df.selectExpr(sql.finite("x", floating=True)).collect()]
    assert flags == [True, False, False, False, None]
    assert df.selectExpr(sql.seen("x > 0"), sql.seen("x < -1e308")).collect()[0][:] == (1, 1)
    assert df.where("false").selectExpr(sql.seen("x > 0")).collect()[0][0] == 0


def test_bad_arguments():
    with pytest.raises(TypeError):
        sql.literal(True)
    with pytest.raises(ValueError):
        sql.any_of([])
