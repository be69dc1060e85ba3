"""For the same seed, numpy and every Spark strategy (`rounds`, `prefetch`, `collect`, `pass`)
return the same rectangle.

Design note §7: engines only answer windows and cuts, so the output must be identical —
ties, duplicate rows, a remaining set that runs dry, Grid / IntegerRange / FloatOrder
domains, several partitions, and prefetch lists too short to answer (fallback jobs).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dprect
from dprect import FloatOrder, Grid, IntegerRange
from dprect.engines.spark.fit import fit_dataframe

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

POOL = [-3.0, -1.25, -0.0, 0.0, 0.5, 0.5000000000000001, 2.0, 7.75, 9.999]


def _domain(kind: str):
    return {"grid": Grid(-2.0, 8.0, 12), "fine": Grid(-4.0, 10.0, 2**20),
            "int": IntegerRange(-2, 9), "float": FloatOrder()}[kind]


def _same(a, b) -> None:
    assert a.lower_index == b.lower_index
    assert a.upper_index == b.upper_index
    assert a.lower == b.lower
    assert a.upper == b.upper
    assert a.method == b.method


def _fit_all(make_frame, X, y, domains, *, epsilon, method, seed, partitions=None,
             prefix_rows=None, **kw):
    names = [f"x{j}" for j in range(X.shape[1])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = dprect.fit(X, y, grid=domains, epsilon=epsilon, delta=1e-6, method=method,
                          seed=seed, features=names, **kw)
        df = make_frame(X, names, y=y, partitions=partitions)
        got = [fit_dataframe(df, features=names, label="y", grid=domains,
                             epsilon=epsilon, delta=1e-6, method=method, seed=seed,
                             strategy=plan, prefix_rows=prefix_rows, **kw)
               for plan in ("rounds", "prefetch", "collect", "pass")]
    for g in got:
        _same(g, want)
    return want


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_engines_agree(make_frame, data):
    dims = data.draw(st.integers(1, 3), label="dims")
    kinds = data.draw(st.lists(st.sampled_from(["grid", "fine", "int", "float"]),
                               min_size=dims, max_size=dims), label="domains")
    n = data.draw(st.integers(1, 70), label="rows")
    value = st.one_of(st.sampled_from(POOL),
                      st.floats(-5.0, 12.0, allow_nan=False, allow_infinity=False))
    rows = data.draw(st.lists(st.lists(value, min_size=dims, max_size=dims),
                              min_size=n, max_size=n), label="X")
    X = np.array(rows, dtype=np.float64).reshape(n, dims)
    copies = data.draw(st.integers(0, 3), label="duplicated")
    if copies:
        X = np.concatenate([X] + [X[: max(1, n // 3)]] * copies)
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=len(X), max_size=len(X)),
                           label="y"))
    _fit_all(make_frame, X, y, [_domain(k) for k in kinds],
             epsilon=data.draw(st.sampled_from([0.5, 5.0, 60.0]), label="epsilon"),
             method=data.draw(st.sampled_from(["randmargins", "composition"]), label="method"),
             seed=data.draw(st.integers(0, 2**32 - 1), label="seed"),
             partitions=data.draw(st.sampled_from([None, 1, 3, 5]), label="partitions"),
             prefix_rows=data.draw(st.sampled_from([None, 1, 5]), label="prefix_rows"))


def test_agree_inside_the_data(make_frame):
    """Enough positives that every window lies inside the data (no pads), heavy ties."""
    gen = np.random.default_rng(11)
    n = 4000
    X = np.column_stack([np.round(gen.normal(3, 2, n), 1), gen.normal(0, 1, n)])
    y = (gen.random(n) < 0.8).astype(int)
    for seed in (1, 2):
        result = _fit_all(make_frame, X, y, [Grid(-5.0, 11.0, 160), FloatOrder()],
                          epsilon=30.0, method="randmargins", seed=seed, partitions=4)
        assert not result.empty


def test_agree_when_the_remaining_set_runs_dry(make_frame):
    """Three positives, large margins: most windows are pads."""
    X = np.array([[1.0, 2.0], [1.0, 2.0], [3.0, -1.0], [0.0, 0.0], [5.0, 5.0]])
    y = np.array([1, 1, 1, 0, 0])
    for seed in range(3):
        _fit_all(make_frame, X, y, [FloatOrder(), Grid(-2.0, 6.0, 8)], epsilon=1.0,
                 method="randmargins", seed=seed, partitions=2)


def test_agree_on_other_plans(make_frame):
    """The origin shape, the paper's accounting and the Laplace law, no positives at all."""
    gen = np.random.default_rng(5)
    X = gen.normal(size=(300, 2))
    y = (gen.random(300) < 0.5).astype(int)
    _fit_all(make_frame, X, y, [FloatOrder(), Grid(-3.0, 3.0, 64)], epsilon=3.0,
             method="randmargins", seed=9, shape="origin")
    _fit_all(make_frame, X, y, [Grid(-3.0, 3.0, 64)] * 2, epsilon=3.0, method="randmargins",
             seed=9, accounting="paper")
    _fit_all(make_frame, X, np.zeros(300, dtype=int), [Grid(-3.0, 3.0, 64)] * 2,
             epsilon=3.0, method="auto", seed=4)
