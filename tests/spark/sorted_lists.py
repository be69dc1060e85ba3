"""The Spark kernel's sorted (key, count, sum) lists as the tests make and sum them: a
blob of one list (:func:`to_blob`) and the sort of several lists' concatenation summed by
key (:func:`summed`), the reference every merge of the kernel equals. Moved here from
``dprect/engines/spark/statistics.py`` when the kernel no longer called them (issue #41)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dprect.core.describe_stats import sum_by_key, sum_words
from dprect.engines.spark.statistics import Family, Lists, _binary, _joined, _segment


def to_blob(keys: np.ndarray, counts: np.ndarray, sums: np.ndarray) -> Any:
    """Sorted (key, count, sum) lists as one Arrow ``binary`` array of one value
    (``from_blob`` reads it back): one segment of keys, counts and each sum's two int64
    words (``sum_words``: a sum past int64, a key of 2^33 rows or more, travels exactly),
    compressed."""
    keys = np.asarray(keys, dtype=np.int64)
    if not len(keys):
        return _binary(b"")
    family = Family(0, (0,), int(keys[0]))
    return _binary(_segment([family], [(keys, np.asarray(counts, dtype=np.int64),
                                        [sum_words(sums)], None, None)]))


def summed(parts: Sequence[Lists]) -> Lists:
    """Partial (key, count, sum) lists summed by key (sorted): their concatenation
    sorted."""
    keys, n, sums = _joined(parts)
    return sum_by_key(keys, sums, n)
