"""A describe block runs with Python's cyclic garbage collector paused
(aggregates.collector_paused: a third of a many-groups block's CPU went to full
collections), and the collector is left as it was — on after a block, off if it was
off, on again after a block that raised; the blocks stay picklable for a process pool."""

from __future__ import annotations

import gc
import pickle
from typing import ClassVar

import numpy as np
import pytest

from dprect.core import aggregates
from dprect.core.aggregates import describe_block, finish_small, plan_describe
from dprect.core.describe_stats import BinBlock, bin_statistics


class _Spy(BinBlock):
    seen: ClassVar[list[bool]] = []

    def centre_histograms(self) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        _Spy.seen.append(gc.isenabled())
        return super().centre_histograms()


def _block() -> _Spy:
    gen = np.random.default_rng(1)
    return _Spy({(g, 0): bin_statistics(gen.normal(0, 1, 50)) for g in range(3)}, 3, 1)


def test_a_block_runs_without_the_collector_and_restores_it() -> None:
    plan = plan_describe(1.0, 1)
    _Spy.seen.clear()
    assert gc.isenabled()
    describe_block(plan, _block(), [1, 2, 3])
    assert _Spy.seen == [False] and gc.isenabled()
    gc.disable()
    try:
        describe_block(plan, _block(), [1, 2, 3])
        assert not gc.isenabled()  # left off, as it was
    finally:
        gc.enable()


def test_the_collector_comes_back_after_a_block_that_raises() -> None:
    with pytest.raises(aggregates.ParameterError):
        describe_block(plan_describe(1.0, 1), _block(), [1])  # too few seeds
    assert gc.isenabled()


def test_the_blocks_pickle_as_themselves() -> None:
    for fn in (describe_block, finish_small):
        assert pickle.loads(pickle.dumps(fn)) is fn
