"""benchmarks/quantile_groups.py's arithmetic on known rows, without the data or the peers:
the two rank errors (a tie's run is exact for the interval one, its midpoint for the other),
the share inside the range, the bands and the band summary's counts."""

from __future__ import annotations

import numpy as np
import pytest
import quantile_groups as qg


def test_rank_errors_and_the_range_on_a_tied_cell() -> None:
    x = np.array([1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 9.0])  # n = 10
    # 2.0 holds ranks [1, 9]: exact for p10, p50 and p90 under the interval rule
    got = qg.score(x, [[2.0, 2.0, 2.0]])
    assert [q["median"] for q in got] == [0.0, 0.0, 0.0]
    # the midpoint of its run is rank 5/10: 0.4 from p10 and p90, exact for the median
    assert [q["midpoint_median"] for q in got] == pytest.approx([0.4, 0.0, 0.4])
    # 0.5 lies below every row (rank 0), 100 above (rank 10), 9.0 is the maximum
    got = qg.score(x, [[0.5, 9.0, 100.0], [1.0, 9.0, 9.0]])
    assert [q["worst"] for q in got] == pytest.approx([0.1, 0.4, 0.1])
    assert [q["median"] for q in got] == pytest.approx([0.05, 0.4, 0.05])
    assert [q["inside"] for q in got] == [0.5, 1.0, 0.5]
    # a non-finite release counts as the whole range of ranks, and outside
    got = qg.score(x, [[float("nan"), 2.0, float("inf")]])
    assert got[0]["median"] == 1.0 and got[0]["inside"] == 0.0
    # 10⁴× off: outside the range and past 10⁴·9 or, all rows positive, under 10⁻⁴·1
    assert [qg.far(x, v) for v in (90_001.0, -90_001.0, 90_000.0, 1e-5, 0.0, -1e-3,
                                   5.0, float("inf"))] == [
        True, True, False, True, True, False, False, True]
    # a cell reaching 0 or straddling it has no magnitude too small to be near it
    assert not qg.far(np.array([0.0, 1.0]), -1e-300)
    assert not qg.far(np.array([-3.0, 1.0]), 1e-300)
    assert qg.far(np.array([-3.0, -1.0]), 1e-300) and qg.far(np.array([-3.0, 1.0]), 1e5)


def test_bands_and_the_summary_counts() -> None:
    assert [qg.band_of(n) for n in (29, 999, 1000, 4999, 5000)] == [
        "< 1,000", "< 1,000", "1,000–4,999", "1,000–4,999", "≥ 5,000"]

    def cell(group: str, rows: int, mine: list[float], peer: list[float],
             flagged: float) -> dict:
        def s(errs: list[float]) -> list[dict[str, float]]:
            return [{"median": e, "worst": 2 * e, "inside": 1.0 if e < 0.1 else 0.0,
                     "far": 1.0 if e > 0.4 else 0.0}
                    for e in errs]
        return {"group": group, "column": "c", "rows": rows, "band": qg.band_of(rows),
                "flagged": flagged, "dprect": s(mine), "opendp": s(peer)}

    rows = [cell("a", 30, [0.5, 0.0, 0.2], [0.1, 0.0, 0.3], 1.0),
            cell("b", 800, [0.01, 0.02, 0.03], [0.02, 0.02, 0.01], 0.5),
            cell("c", 9000, [0.0, 0.0, 0.0], [0.01, 0.01, 0.01], 0.0)]
    bands = {b["band"]: b for b in qg.summarise(rows, ["opendp"])}
    assert set(bands) == {"< 1,000", "≥ 5,000", "all"}  # an empty band is left out
    small = bands["< 1,000"]
    assert small["cells"] == 2 and small["quantile_cells"] == 6
    assert small["rows"] == [30, 800] and small["groups"] == ["a", "b"]
    # a tie counts for dprect: a's 0.0 and 0.2, b's 0.01 and 0.02 (0.02 = 0.02)
    assert small["dprect_at_most_opendp"] == 4
    assert small["dprect"]["median"] == pytest.approx(0.025)
    assert small["dprect"]["worst_median"] == 0.5 and small["dprect"]["worst_run"] == 1.0
    assert small["dprect"]["inside"] == pytest.approx(4 / 6)
    assert small["dprect"]["far"] == pytest.approx(1 / 6)
    assert small["flagged"] == 0.75
    assert bands["all"]["dprect_at_most_opendp"] == 7 and bands["all"]["cells"] == 3
