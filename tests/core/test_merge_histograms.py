"""aggregates.merge_histograms (the pooled centre's histogram: one stable sort, runs of
equal keys reduced) is the sum of the histograms as np.unique's keys and an np.add.at
of the counts make it: sorted unique keys, exact int64 sums, no zero count — empty
parts, repeated keys across and within parts, keys far apart, counts past 2^53."""

from __future__ import annotations

import numpy as np
import pytest

from dprect.core.aggregates import merge_histograms


def _reference(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    keys = np.concatenate([np.zeros(0, np.int64)] + [k for k, _ in parts])
    counts = np.concatenate([np.zeros(0, np.int64)] + [c for _, c in parts])
    unique, where = np.unique(keys, return_inverse=True)
    summed = np.zeros(len(unique), dtype=np.int64)
    np.add.at(summed, where, counts)
    keep = summed > 0
    return unique[keep], summed[keep]


@pytest.mark.parametrize("seed", range(8))
def test_merged_histograms_are_the_summed_counts(seed: int) -> None:
    gen = np.random.default_rng(seed)
    parts = []
    for _ in range(int(gen.integers(0, 40))):
        n = int(gen.choice([0, 1, 3, 20]))
        wide = gen.random() < 0.5
        keys = np.sort(gen.integers(-2**40, 2**40, n) if wide else gen.integers(-5, 6, n))
        counts = gen.integers(0 if gen.random() < 0.2 else 1, 1000, n)
        if n and gen.random() < 0.1:
            counts[0] = 2**55 + 1  # past a float's exact integers
        parts.append((keys.astype(np.int64), counts.astype(np.int64)))
    got, want = merge_histograms(parts), _reference(parts)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype == np.int64
        assert np.array_equal(a, b)


def test_no_histograms_merge_to_an_empty_one() -> None:
    keys, counts = merge_histograms([])
    assert keys.dtype == counts.dtype == np.int64 and not len(keys) and not len(counts)
    keys, counts = merge_histograms([(np.array([3], np.int64), np.array([0], np.int64))])
    assert not len(keys) and not len(counts)
