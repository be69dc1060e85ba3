"""The variance and standard deviation of a query cell (issue #41 point 4;
dprect/core/variance.py, docs/privacy.md §17):

* the per-bin sums of squared significands are exact (two 30-bit words) and reach the
  (interval, exponent) statistics as the sums do; the exact clamped sum of squares about
  the bounds' midpoint equals a row-by-row rational reference;
* its integer form moves by at most 2^K — and by about 2^K for a row at a bound — when a
  row is added (the sensitivity the plan and the check state);
* the split: ε_Q = SQUARES_SHARE·ε_q only when a variance or std is asked, the drawn
  noises spend ε; the check refuses a wrong clip, a noise drawn for nothing or missing;
* the bounds and every draw before the sum-of-squares noise are those of the same run
  without it, for a seed; the variance tracks the clamped values' variance over seeded
  runs (and would not without the (μ̂ − m)² correction: power);
* the numpy engine's primitive counts the squares only when asked, and its route gives
  the arrays' result; the record and table carry variance and std only when asked
  (Spark = numpy: tests/spark/test_variance_spark.py).
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from cli_run import run
from golden_cases import INPUT
from seeded_source import seeded as _seeded

from dprect.core.aggregates import SQUARES_SHARE, plan_describe, run_describe
from dprect.core.describe_stats import (
    CellStatistics,
    bin_statistics,
    cell_grid,
    statistics_of_cells,
    truncated_value,
)
from dprect.core.guarantee_check import GuaranteeCheckError, check_describe_plan
from dprect.core.statistic import QUERY, SEARCH_GRID, outputs
from dprect.core.variance import (
    SQUARE_FRACTION_BITS,
    _clamped_sums,
    midpoint_and_half,
    released_squares,
    released_variance,
)
from dprect.engines.grouped import draw_query, grouped_statistics

K = 1 << SQUARE_FRACTION_BITS


def centred_squares(stats: CellStatistics, lower_step: int, upper_step: int,
                    lower: float, upper: float) -> Fraction:
    """Q = Σ (clamp(x̃, L, U) − m)² exactly, for L = the lower candidate ``lower_step``
    and U = the upper one ``upper_step`` (their values ``lower``, ``upper``): a row
    below L or above U adds h², a row between adds (x̃ − m)², summed as
    Σx̃² − 2m·Σx̃ + n·m² from the exact sums per (interval, exponent). A cell without
    rows (a listed group with none) has Q = 0, with or without its squares counted.
    Moved here, with :func:`integer_squares`, from dprect/core/variance.py, whose release
    computes R in integers (``released_squares``): the rationals it must equal."""
    m, h = midpoint_and_half(lower, upper)
    if not len(stats.keys):  # no rows: nothing to sum, whether squares were counted
        return Fraction(0) * h
    outside, n_mid, base, first, second = _clamped_sums(stats, lower_step, upper_step)
    if not n_mid:
        return outside * h * h
    sum_x = _scaled(first, base)
    sum_x2 = _scaled(second, 2 * base)
    return outside * h * h + sum_x2 - 2 * m * sum_x + n_mid * m * m


def _scaled(acc: int, exponent: int) -> Fraction:
    return Fraction(acc, 1 << -exponent) if exponent < 0 else Fraction(acc << exponent)


def integer_squares(centred: Fraction, lower: float, upper: float,
                    sensitivity: int = 1 << SQUARE_FRACTION_BITS) -> int:
    """R = ⌊Q·k/h² + 1/2⌋ (0 when h = 0): a row moves Q by at most h², so R by at most
    k (docs/privacy.md §17, Lemma V1)."""
    _, h = midpoint_and_half(lower, upper)
    if h <= 0:
        return 0
    q = centred * int(sensitivity) / (h * h) + Fraction(1, 2)
    return q.numerator // q.denominator


def _reference(values: np.ndarray, lower: float, upper: float) -> Fraction:
    """Σ (clamp(x̃, L, U) − m)² row by row in rationals."""
    m = (Fraction(lower) + Fraction(upper)) / 2
    x = np.clip(truncated_value(values), lower, upper)
    return sum(((Fraction(float(v)) - m) ** 2 for v in x), Fraction(0))


def _cell(values: np.ndarray, centre: float):
    bins = {(0, 0): bin_statistics(values, squares=True)}
    return statistics_of_cells(bins, {(0, 0): centre}, 1, 1)[(0, 0)]


@pytest.mark.parametrize("seed", range(4))
def test_the_clamped_sum_of_squares_is_exact(seed: int):
    rs = np.random.default_rng(seed)
    x = np.r_[rs.normal(3.0, 2.0, 400), rs.exponential(50.0, 50), -1e6, 7e7,
              rs.uniform(-1e-3, 1e-3, 30), 0.0, -0.0]
    centre = 3.0
    stats = _cell(x, centre)
    grid = cell_grid(centre)
    for a, b in ((0, 0), (5, 9), (40, 60), (200, 260)):
        lo, hi = float(grid.lower[a]), float(grid.upper[b])
        assert centred_squares(stats, a, b, lo, hi) == _reference(x, lo, hi)


@pytest.mark.parametrize("seed", range(3))
def test_the_released_integer_squares_are_the_fractions(seed: int):
    """:func:`released_squares` (Python integers) is ``integer_squares(centred_squares
    (…))`` (Fractions) on every step pair of cells from tiny to huge values, one row,
    ±0.0, rows all outside or all inside the bounds, L = U and several sensitivities; a
    cell without rows gives 0 and one counted without squares raises, as the Fractions
    do."""
    rs = np.random.default_rng(10 + seed)
    cells = [
        np.r_[rs.normal(3.0, 2.0, 300), rs.exponential(50.0, 40), -1e6, 7e7, 0.0, -0.0],
        rs.uniform(-1e-300, 1e-300, 50), np.array([5.0]), rs.lognormal(0.0, 6.0, 200),
        np.r_[np.full(30, 1e300), np.full(30, -1e300)], rs.normal(-4e-5, 1e-6, 100)]
    for x in cells:
        centre = float(np.median(x))
        stats = _cell(x, centre)
        grid = cell_grid(centre)
        reach = min(len(grid.lower), len(grid.upper))
        steps = [*range(0, reach, max(1, reach // 12)), reach - 1]
        for a in steps:
            for b in steps:
                lo, hi = float(grid.lower[a]), float(grid.upper[b])
                for k in (K, 1, 3, 1 << 45):
                    want = integer_squares(centred_squares(stats, a, b, lo, hi), lo, hi, k)
                    assert released_squares(stats, a, b, lo, hi, k) == want, (a, b, k)
        lo = float(grid.lower[0])
        assert released_squares(stats, 0, 0, lo, lo) == 0  # h = 0
    empty = CellStatistics.empty()
    assert released_squares(empty, 0, 0, -1.0, 1.0) == 0 == \
        integer_squares(centred_squares(empty, 0, 0, -1.0, 1.0), -1.0, 1.0)
    plain = dataclasses.replace(_cell(np.ones(3), 1.0), squares=None)
    for made in (released_squares, centred_squares):
        with pytest.raises(ValueError, match="without squares"):
            made(plain, 0, 0, -1.0, 1.0)


def test_squares_past_int64_stay_exact():
    # 2^34 rows' worth of M² ≈ 2^60 each can't be an int64: many rows of one large value
    x = np.full(20_000, np.nextafter(2.0, 0.0))  # M = 2^30 − 1
    b = bin_statistics(x, squares=True)
    assert int(b.squares[0]) == 20_000 * ((1 << 30) - 1) ** 2


def test_the_integer_sum_of_squares_moves_by_at_most_its_clip():
    """What the plan states as the per-row clip (and the check charges for) is what a
    row moves the released integer by."""
    k = plan_describe(1.0, 1, statistics=("variance",)).squares_sensitivity
    assert k == K
    rs = np.random.default_rng(5)
    base = rs.normal(0.0, 4.0, 300)
    for lo, hi in ((-5.0, 5.0), (-1.0, 9.5), (0.0, 1e-3), (-1e300, 1e300)):
        q0 = integer_squares(_reference(base, lo, hi), lo, hi, K)
        moved = [abs(integer_squares(_reference(np.r_[base, e], lo, hi), lo, hi, K) - q0)
                 for e in (lo, hi, (lo + hi) / 2, 1e308, -1e308, 0.0, 5e-324,
                           np.nextafter(hi, np.inf))]
        assert max(moved) <= K
        assert max(moved) >= K - 1  # a row at a bound adds h²: the clip is tight


def test_the_split_and_the_check():
    plain = plan_describe(2.0, 3, statistics=("count", "mean"))
    spread = plan_describe(2.0, 3, statistics=("count", "mean", "variance"))
    assert plain.squares_scale is None and plain.squares_epsilon == 0
    eps_q = plain.count_epsilon + plain.sum_epsilon
    assert spread.squares_epsilon == pytest.approx(SQUARES_SHARE * eps_q, rel=1e-12)
    assert spread.count_epsilon + spread.sum_epsilon == pytest.approx(
        (1 - SQUARES_SHARE) * eps_q, rel=1e-12)
    assert spread.squares_scale == Fraction(K) / Fraction(spread.squares_epsilon)
    # the check re-derives the whole ε from the samplers' scales, the squares included
    assert spread.check is not None
    assert spread.check.epsilon == pytest.approx(2.0, rel=1e-8)
    assert spread.check.details["per_column"]["sum of squares"] == pytest.approx(
        spread.squares_epsilon, rel=1e-12)
    assert plan_describe(1.0, 1, statistics=("std",)).squares_scale is not None
    # the sampler's noise half the scale the stated guarantee accounts for: refused
    with pytest.raises(GuaranteeCheckError):
        check_describe_plan(dataclasses.replace(
            spread, squares_epsilon=2 * spread.squares_epsilon))
    # a squares noise with no variance asked (ε spent on nothing released), or missing
    with pytest.raises(GuaranteeCheckError):
        check_describe_plan(dataclasses.replace(spread, statistics=("count", "mean")))
    with pytest.raises(GuaranteeCheckError):
        check_describe_plan(dataclasses.replace(plain, statistics=("count", "variance")))


def test_every_draw_before_the_squares_noise_is_the_plain_runs():
    rs = np.random.default_rng(3)
    x = rs.normal(10.0, 3.0, 3000)
    asked = ("count", "mean")
    a = run_describe(plan_describe(2.0, 1, statistics=asked), {(None, 0): x}, [None],
                     ["x"], _seeded(4)).cells[0][0]
    b = run_describe(plan_describe(2.0, 1, statistics=(*asked, "variance", "std")),
                     {(None, 0): x}, [None], ["x"], _seeded(4)).cells[0][0]
    assert (a.lower, a.upper) == (b.lower, b.upper)  # centre and sides: the same draws
    assert a.variance is None and b.variance is not None
    assert b.std == pytest.approx(np.sqrt(b.variance), rel=1e-15)


def test_the_variance_tracks_the_clamped_values_variance():
    """Over 20 seeded runs on a skewed column (exponential, 20,000 rows, ε = 4) the
    released variance is within 6% of the clamped values' population variance; the same
    check refuses the estimator without the (μ̂ − m)² term (power: it misses every time,
    the midpoint lying far from the mean on a skewed column)."""
    rs = np.random.default_rng(11)
    x = rs.exponential(5.0, 20_000)
    plan = plan_describe(4.0, 1, statistics=("count", "mean", "variance"))
    good = bad = 0
    for seed in range(20):
        cell = run_describe(plan, {(None, 0): x}, [None], ["x"], _seeded(seed)).cells[0][0]
        c = np.clip(x, cell.lower, cell.upper)
        truth = c.var()
        m = (cell.lower + cell.upper) / 2
        good += abs(cell.variance - truth) <= 0.06 * truth
        uncorrected = cell.variance + (cell.mean - m) ** 2
        bad += abs(uncorrected - truth) <= 0.06 * truth
    assert good == 20 and bad == 0


def test_released_variance_is_clipped_to_the_bounds_range():
    # a huge noisy sum of squares: at most h²; a negative one: 0
    assert released_variance(10**40, 100, 0.0, -2.0, 2.0) == (4.0, 2.0)
    assert released_variance(-(10**40), 100, 0.0, -2.0, 2.0) == (0.0, 0.0)
    top = released_variance(10**400, 1, 0.0, -1e308, 1e308)
    assert np.isfinite(top[0]) and np.isfinite(top[1])


def test_the_numpy_engine_counts_squares_only_when_asked_and_matches_the_arrays():
    rs = np.random.default_rng(2)
    n = 4000
    group = rs.integers(0, 3, n)
    cols = [rs.normal(0, 1, n), rs.exponential(2, n)]
    assert QUERY.spec([SEARCH_GRID] * 2, ("count", "mean")).columns[0].squares is False
    spec = QUERY.spec([SEARCH_GRID] * 2, ("count", "std"))
    assert all(c.squares for c in spec.columns)
    cells = grouped_statistics(cols, group, 3, spec)
    plan = plan_describe(1.0, 2, statistics=("count", "variance", "std"))
    got = draw_query(plan, cells, ["a", "b", "c"], ["x", "y"], _seeded(8))
    want = run_describe(plan, {(g, j): cols[j][group == i] for i, g in enumerate("abc")
                               for j in range(2)}, ["a", "b", "c"], ["x", "y"], _seeded(8))
    assert got.cells == want.cells
    assert all(c.variance is not None for row in got.cells for c in row)


def test_the_record_and_table_carry_variance_only_when_asked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert "variance" not in outputs(QUERY)
    assert outputs(QUERY, ("variance", "std"))[-6:] == (
        "variance", "variance_low", "variance_high", "std", "std_low", "std_high")
    out, table = tmp_path / "r.json", tmp_path / "r.csv"
    code, _, err = run(["aggregate", "--input", str(INPUT), "--columns", "x,y",
                        "--statistics", "bounds,count,variance,std", "--epsilon", "2",
                        "--seed", "7", "--output", str(out), "--table", str(table)], capsys)
    assert code == 0, err
    rows = json.loads(out.read_text())["results"]
    assert all(r["variance_low"] <= r["variance"] <= r["variance_high"] for r in rows)
    assert all(r["std"] == pytest.approx(np.sqrt(r["variance"])) for r in rows)
    assert all(r["std_low"] == pytest.approx(np.sqrt(r["variance_low"]))
               and r["std_high"] == pytest.approx(np.sqrt(r["variance_high"])) for r in rows)
    assert table.read_text().splitlines()[0].endswith(
        ",variance,variance_low,variance_high,std,std_low,std_high,below_row_need")


def test_the_python_aggregate_releases_variance_and_a_spec_without_squares_is_refused():
    import pandas as pd

    import dprect
    from dprect.core.errors import ParameterError

    x = np.random.default_rng(0).normal(5.0, 2.0, 5000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = dprect.aggregate(pd.DataFrame({"x": x}), ["x"], epsilon=1.0, seed=1,
                               statistics=["bounds", "count", "variance", "std"])
    row = got.rows()[0]
    assert abs(row["variance"] - x.var()) < 0.1 * x.var()
    plan = plan_describe(1.0, 1, statistics=("variance",))
    plain = grouped_statistics([x], np.zeros(len(x), dtype=np.int32), 1,
                               QUERY.spec([SEARCH_GRID], ("count",)))
    with pytest.raises(ParameterError, match="squares"):  # before any draw
        draw_query(plan, plain, [None], ["x"], _seeded(1))
