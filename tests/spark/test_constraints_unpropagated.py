"""The prefetch pass is planned without Catalyst's constraint propagation (issue #43).

The pass's filter is one OR over every order's threshold, and the pass ships every
feature under an alias; with propagation on, ``Project.getAllValidConstraints`` copies
that filter once per alias, 2^d copies (planning 2.2 s at d = 8, 42.4 s at d = 12 on
the shared machine). :func:`~dprect.engines.spark.session.constraints_unpropagated` turns
it off while the pass is planned and run, and puts the session's setting back.
"""

from __future__ import annotations

import numpy as np
import pytest

from dprect import Grid

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

KEY = "spark.sql.constraintPropagation.enabled"


@pytest.mark.parametrize("before", [None, "true", "false"])
def test_the_setting_is_put_back(spark, before):
    from dprect.engines.spark.session import constraints_unpropagated

    if before is None:
        spark.conf.unset(KEY)
    else:
        spark.conf.set(KEY, before)
    try:
        with constraints_unpropagated(spark):
            assert spark.conf.get(KEY) == "false"
        assert spark.conf.get(KEY, None) == before
        with pytest.raises(RuntimeError), constraints_unpropagated(spark):
            raise RuntimeError("inside")
        assert spark.conf.get(KEY, None) == before
    finally:
        spark.conf.unset(KEY)


@pytest.mark.parametrize("direct", [True, False])
def test_the_pass_is_planned_without_propagation(make_frame, monkeypatch, direct):
    """Whichever step the pass takes (its rows collected whole, or topped in the
    workers), its query runs with propagation off; the session's setting is unset after."""
    from dprect.engines.spark import prefetch
    from dprect.engines.spark.engine import SparkEngine

    names = [f"x{j}" for j in range(4)]
    gen = np.random.default_rng(3)
    X = gen.normal(size=(2000, 4))
    y = (gen.uniform(size=2000) < 0.6).astype(int)
    df = make_frame(X, names, y=y, partitions=2)
    seen: list[str | None] = []
    for step in ("_collect_within_shares", "_top_in_workers"):
        real = getattr(prefetch, step)

        def spy(*args, _real=real, **kwargs):
            seen.append(df.sparkSession.conf.get(KEY, None))
            return _real(*args, **kwargs)

        monkeypatch.setattr(prefetch, step, spy)
    monkeypatch.setattr(prefetch, "PRUNE_MIN_ROWS", 1)
    if not direct:
        monkeypatch.setattr(prefetch, "DIRECT_CELLS", 1)
    df.sparkSession.conf.unset(KEY)
    with SparkEngine(df, [Grid(-10.0, 10.0, 2**16)] * 4, names, strategy="prefetch",
                     prefix=10, size_hint=1200, positive="y = 1") as eng:
        eng.prepare()
    assert seen and set(seen) == {"false"}
    assert len(seen) == (1 if direct else 2)
    assert df.sparkSession.conf.get(KEY, None) is None
