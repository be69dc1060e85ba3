"""benchmarks/small_tables.py's acceptance arithmetic and the real peers' runner
(benchmarks/peers/run_boxes.py) without the peer libraries: a peer's boxes scored on known
rows (a failed call and a crossed pair are empty boxes), the best peer and the verdict of
issue #44 in one cell."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import run_boxes
import small_tables as st

from dprect.core.domains import FloatOrder, Grid


def _table() -> SimpleNamespace:
    X = np.array([[1.0, 5.0], [2.0, 6.0], [3.0, 7.0], [4.0, 8.0], [9.0, 9.0]])
    return SimpleNamespace(domains=[FloatOrder(), Grid(0.0, 10.0, 10)], X=X,
                           y=np.array([True, True, True, False, False]))


def test_a_peer_box_is_scored_in_its_key_space() -> None:
    t = _table()
    # axis 0 by value, axis 1 by grid index (5.0 -> 5, 6.0 -> 6, 7.0 -> 7, 8.0 -> 8)
    whole = {"lo": [1.0, 5.0], "hi": [4.0, 8.0]}  # every positive, 1 of 2 negatives
    part = {"lo": [1.5, 5.0], "hi": [4.0, 7.0]}  # 2 of 3 positives, no negative
    crossed = {"lo": [3.0, 5.0], "hi": [2.0, 8.0]}  # empty
    failed = {"lo": [None, 5.0], "hi": [None, 8.0]}  # the library raised
    got = st.peer_cell(t, [whole, part, crossed, failed])
    assert got["fn"] == pytest.approx((0 + 1 / 3 + 1 + 1) / 4)
    assert got["fp"] == pytest.approx((0.5 + 0 + 0 + 0) / 4)
    assert got["balanced"] == pytest.approx((got["fn"] + got["fp"]) / 2)
    assert got["empty_runs"] == 1 and got["failed_runs"] == 1


def _cell(auto: tuple[float, float], **peers: tuple[float, float]) -> dict:
    def score(fn: float, fp: float) -> dict:
        return {"fn": fn, "fp": fp, "balanced": (fn + fp) / 2}
    return {"auto": score(*auto), "quantiles": score(0.1, 0.0), "planned_quantiles": 0.11,
            **{p: score(*v) for p, v in peers.items()}}


def test_the_verdict_of_a_cell() -> None:
    c = _cell((0.1, 0.3), opendp=(0.2, 0.3), diffprivlib=(0.0, 0.5), pydp=(0.4, 0.0))
    st.judge(c, ["opendp", "diffprivlib", "pydp"])
    assert c["best_peer"] == "pydp" and c["pass"]  # 0.2 ≤ 0.2 + 0.02
    c = _cell((0.1, 0.3), opendp=(0.2, 0.3), diffprivlib=(0.0, 0.5), pydp=(0.2, 0.0))
    st.judge(c, ["opendp", "diffprivlib", "pydp"])
    assert c["best_peer"] == "pydp" and not c["pass"]  # 0.2 > 0.1 + 0.02
    c = _cell((1.0, 0.0), opendp=(0.99, 0.0))  # auto empty, the peer is not: fails
    st.judge(c, ["opendp"])
    assert c["auto_empty_where_peer_not"] and not c["pass"]
    c = _cell((1.0, 0.0), opendp=(1.0, 0.0))  # both empty: passes
    st.judge(c, ["opendp"])
    assert not c["auto_empty_where_peer_not"] and c["pass"]
    assert c["plan_calibrated"]  # |0.11 − 0.1| ≤ 0.02
    # auto with a stated target_miss (the auto-aimed column) gets its own verdict
    c = _cell((0.1, 0.3), opendp=(0.2, 0.3), pydp=(0.2, 0.0))
    c["auto-aimed"] = {"fn": 0.1, "fp": 0.1, "balanced": 0.1}
    st.judge(c, ["opendp", "pydp"])
    assert not c["pass"] and c["pass_aimed"] and not c["auto-aimed_empty_where_peer_not"]


def test_a_library_error_is_a_missing_pair() -> None:
    def boom(*_: object) -> tuple[float, float]:
        raise RuntimeError("Can't find a candidate to return")
    assert run_boxes.released(boom, np.zeros(3), {}, 0.01, 0.1) == (None, None)
    assert run_boxes.released(lambda *_: (1.0, 2.0), np.zeros(3), {}, 0.01, 0.1) == (1.0, 2.0)


def test_small_tables_get_their_own_trials_and_a_standard_error() -> None:
    small = SimpleNamespace(y=np.array([True] * (st.SMALL_POSITIVES - 1) + [False]))
    large = SimpleNamespace(y=np.ones(st.SMALL_POSITIVES, dtype=bool))
    assert st.trials_for(small, 20, 200) == 200 and st.trials_for(large, 20, 200) == 20
    assert st.trials_for(small, 20, None) == 20
    # per run (FN + FP)/2 = 0.1, 0.3: sd 0.1414, se 0.1
    assert st._se([0.2, 0.2], [0.0, 0.4]) == pytest.approx(0.1)
    assert st._se([0.2], [0.0]) == 0.0
    c = _cell((0.1, 0.3), opendp=(0.2, 0.3))
    c["auto"]["se"], c["opendp"]["se"] = 0.03, 0.04
    st.judge(c, ["opendp"])
    assert c["auto_margin"] == pytest.approx(-0.05) and c["auto_margin_se"] == pytest.approx(0.05)


def test_a_peer_s_cached_run_is_the_exact_file_else_one_holding_every_table(
        tmp_path, monkeypatch) -> None:
    """small_tables._cached: the file of exactly these tables (its name as before s31:
    the peer, α, the runs and the CRC of the names joined by '+'), else the first file of
    the same runs holding every asked table, else None."""
    import json
    import zlib

    monkeypatch.setattr(st, "CACHE", tmp_path)
    exact = st._cache_file("opendp", 20, ["iris", "wine"])
    assert exact == tmp_path / f"opendp-a{st.ALPHA:g}-runs20-{zlib.crc32(b'iris+wine'):08x}.json"
    assert st._cached("opendp", 20, ["iris"]) is None
    more = st._cache_file("opendp", 20, ["iris", "wine", "cars"])
    more.write_text(json.dumps({"boxes": {"iris": {}, "wine": {}, "cars": {}}}))
    assert st._cached("opendp", 20, ["iris", "wine"]) == more
    assert st._cached("opendp", 200, ["iris"]) is None and st._cached("pydp", 20, ["iris"]) is None
    assert st._cached("opendp", 20, ["iris", "adult"]) is None
    exact.write_text(json.dumps({"boxes": {"iris": {}}}))  # the exact file first
    assert st._cached("opendp", 20, ["iris", "wine"]) == exact
