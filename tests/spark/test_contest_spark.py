"""``auto``'s contest on Spark (issue #44, s34): the count, both fits, the negatives' count
and the selection draw in the numpy engine's order, and the tally is one aggregation over
the rows (partial counts per partition, never a row collected) equal to the numpy tally —
so every strategy returns :func:`dprect.fit`'s rectangle and choice for a seed."""

from __future__ import annotations

import warnings

import pytest

import dprect
from dprect.core.domains import IntegerRange
from dprect.engines.contest_tally import numpy_tally
from dprect.engines.spark.contest_tally import spark_tally
from dprect.engines.spark.fit import fit_dataframe
from tests.fit_cases import contest_table

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _table(separable: bool):
    """tests/core/test_contest.py's table, a few NaN rows (dropped)."""
    return contest_table(separable, nan_rows=(5, 7000))


@pytest.mark.parametrize("separable", [False, True])
def test_every_strategy_returns_the_numpy_contest(make_frame, separable):
    X, y = _table(separable)
    grid = IntegerRange(0, 255)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.fit(X, y, epsilon=4.0, delta=1e-6, seed=3, grid=grid,
                          features=["x0"])
        df = make_frame(X, ["x0"], y=y, partitions=3)
        got = [fit_dataframe(df, features=["x0"], label="y", epsilon=4.0, delta=1e-6,
                             seed=3, grid=grid, strategy=s)
               for s in ("collect", "pass", "prefetch", "rounds", "auto")]
    assert want.parameters["contest"]["runs"] is True
    assert want.method == ("composition" if separable else "quantiles")
    for g in got:
        assert g.parameters["contest_chose"] == want.parameters["contest_chose"]
        assert (g.method, g.lower_index, g.upper_index) == (
            want.method, want.lower_index, want.upper_index)
        assert g.parameters["positives_noisy"] == want.parameters["positives_noisy"]


def test_the_spark_tally_is_the_numpy_tally(make_frame):
    X, y = _table(False)
    doms = [IntegerRange(0, 255)]
    df = make_frame(X, ["x0"], y=y, partitions=4)
    rects = [((100,), (150,)), ((0,), (255,)), ((200,), (10,))]
    assert spark_tally(df, ["x0"], "(y = 1) AND abs(x0) < double('inf')", doms)(rects) \
        == numpy_tally(X, y == 1, doms)(rects)
