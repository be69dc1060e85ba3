"""Round one of a block whose every cell takes an anchored smaller split (a block of tiny
groups, issue #42) makes its lists a group at a time (aggregates._anchored_only): the
very BlockDraws the general path makes — every field by repr, the pools — for a seed,
on blocks of tiny groups (the shortcut taken), of groups with centres of their own and of
the plan's own split (not taken), on both block kinds."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dprect.core import aggregates
from dprect.core.aggregates import describe_block, plan_describe
from dprect.core.column_block import ColumnBlock
from dprect.core.describe_stats import BinBlock, BinStatistics, bin_statistics
from dprect.core.randomness import RandomSource
from tests.column_cells import joined_columns


def _bins(seed: int, groups: int, columns: int, rows: int
          ) -> dict[tuple[int, int], BinStatistics]:
    gen = np.random.default_rng(seed)
    out = {}
    for j in range(columns):
        shift, scale = gen.normal(0.0, 50.0), [0.01, 1.0, 300.0][j % 3]
        for g in range(groups):
            n = int(gen.poisson(rows)) if g % 5 else 0
            if n:
                out[(g, j)] = bin_statistics(shift + scale * gen.standard_normal(n))
    return out


@pytest.mark.parametrize("rows", [3, 1500, 8000])
@pytest.mark.parametrize("kind", ["bins", "columns"])
def test_a_block_of_anchored_cells_draws_what_the_general_path_draws(
        monkeypatch: pytest.MonkeyPatch, rows: int, kind: str) -> None:
    groups, columns = 40, 3
    plan = plan_describe(1.0, columns)
    bins = _bins(rows, groups, columns, rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seeds = RandomSource(seed=rows).stream_seeds(groups)

    def block() -> aggregates.CellBlock:
        return (BinBlock(bins, groups, columns) if kind == "bins"
                else ColumnBlock(joined_columns(bins, groups, columns)))

    taken = []
    real = aggregates._anchored_only
    monkeypatch.setattr(aggregates, "_anchored_only",
                        lambda *a: taken.append(real(*a)) or taken[-1])
    got = describe_block(plan, block(), seeds)
    monkeypatch.setattr(aggregates, "_anchored_only", lambda *a: False)
    want = describe_block(plan, block(), seeds)
    assert taken == [rows == 3]  # the shortcut on the tiny groups' block alone
    for name in ("cells", "tiers", "centres", "counts", "resume", "means"):
        assert repr(getattr(got, name)) == repr(getattr(want, name)), name
        rows_of = getattr(got, name)
        if name != "resume":  # a list a group, none shared
            assert len({id(r) for r in rows_of}) == groups
    assert got.pooled.keys() == want.pooled.keys()
    for j, (keys, counts) in want.pooled.items():
        assert got.pooled[j][0].tolist() == keys.tolist()
        assert got.pooled[j][1].tolist() == counts.tolist()
