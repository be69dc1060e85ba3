"""The numpy engine's grouped quantiles streamed to the sinks (issue #42,
engines/grouped.py ``stream_quantiles``): each block of groups handed on in group order
as its last phase is drawn — the first before the last is drawn (phase 1, the counts, own
centres and pools, runs over every block first: docs/privacy.md §11a, Lemma Q5) — and
together the gathered run's cells for a seed (describe's streaming:
tests/engines/test_driver_pool.py)."""

from __future__ import annotations

import numpy as np
from seeded_source import seeded as _seeded

from dprect.core.quantile_release import plan_statistics, release_grouped
from dprect.core.statistic import QUANTILES, SEARCH_GRID
from dprect.engines import grouped
from dprect.engines.grouped import draw_statistics, grouped_statistics


def test_streamed_quantiles_hand_a_block_on_before_the_last_is_drawn(monkeypatch):
    rs = np.random.default_rng(3)
    groups, names = 7, [f"g{i}" for i in range(7)]
    group = rs.integers(-1, groups, 5000)  # -1: a row of no listed group
    values = [rs.normal(10, 3, 5000), rs.exponential(2, 5000)]
    cells = grouped_statistics(values, group, groups, QUANTILES.spec([SEARCH_GRID] * 2))
    plan = plan_statistics(["median", "p90"], 2.0, 2)
    stats = {k: c.quantile_statistics() for k, c in cells.items()}
    want = release_grouped(plan, stats, names, ["x", "y"], _seeded(5))
    monkeypatch.setattr(grouped, "QUANTILE_BLOCK_CELLS", 4)  # 2 groups a block
    events: list[str] = []
    real = grouped.second_phase

    def spy(*args):
        events.append("drawn")
        return real(*args)

    monkeypatch.setattr(grouped, "second_phase", spy)
    got: list = []

    def spool(block):
        events.append("spooled")
        assert block.groups == names[len(got):len(got) + len(block.cells)]
        got.extend(block.cells)

    head = draw_statistics([QUANTILES], plan, cells, names, ["x", "y"], _seeded(5), spool)
    assert head.cells == [] and head.groups == names and head.columns == ["x", "y"]
    assert got == want.cells
    assert events.count("drawn") == 4 and events.count("spooled") == 4
    assert events.index("spooled") < len(events) - 1 - events[::-1].index("drawn")
