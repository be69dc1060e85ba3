"""The exact law of private group selection (docs/privacy.md §18) as the tests' oracle:
which keys a seeded run keeps, computed from the law itself, not from dprect's code."""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from dprect.core.group_selection import SELECTION_BITS, SelectionPlan
from dprect.core.randomness import RandomSource


def expected_kept(plan: SelectionPlan, counts: Mapping[str, int], seed: int) -> list[str]:
    """The keys of ``counts`` in the order of their text, each kept iff it has at least
    N (``plan.always``) rows or ``randbits(B) < P_k`` (``plan.keep[k − 1]``), drawn from
    the one stream of the run's seeded source in that order: the law of a key of k rows is
    P_k/2^B."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        stream = RandomSource.stream(RandomSource(seed=seed).stream_seeds(1)[0])
    return [k for k in sorted(counts) if counts[k] >= plan.always
            or stream.randbits(SELECTION_BITS) < plan.keep[counts[k] - 1]]
