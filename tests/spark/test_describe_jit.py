"""describe's compiled per-row step (engines/spark/describe_jit.py) gives the numpy step's
lists exactly: every (group, search bin) with its row count and significand sum, on
values of both signs, subnormals, −0.0, the largest floats and many binades; too wide a
table is declined (None); the kernel uses it for large chunks only, and not when the
installed module is another version."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sorted_lists import summed, to_blob

from dprect.core.describe_stats import DROPPED_BITS, significands, square_words
from dprect.core.statistic import QUERY
from dprect.engines.spark import describe_jit
from dprect.engines.spark import statistics as spark_describe
from dprect.engines.spark.statistics import chunk_counts

GRID = spark_describe.SEARCH_GRID
SPECIALS = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -2.2250738585072014e-308,
            2.225073858507201e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1.0,
            -1.0, 0.1, -3.0e-7]


def _numpy_lists(x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, ...]:
    gg, b, n, s = chunk_counts(g, GRID.encode(x), significands(x.view(np.int64)))
    assert s is not None
    order = np.lexsort((b, gg))
    return gg[order], b[order], n[order], s[order]


def _spy(monkeypatch: pytest.MonkeyPatch, module: Any, name: str,
         seen: Callable[..., Any]) -> list[Any]:
    """Replace ``module.name`` by a spy that calls it and records ``seen(*args)`` of each
    call in the list returned."""
    calls: list[Any] = []
    real = getattr(module, name)

    def spy(*args: Any) -> Any:
        calls.append(seen(*args))
        return real(*args)

    monkeypatch.setattr(module, name, spy)
    return calls


def _compiled(x: np.ndarray, g: np.ndarray, groups: int, limit: int = 1 << 22,
              word: int = 0):
    """describe_jit.column_words of one word: (group, bin, count, sum), or None."""
    got = describe_jit.column_words(x, g, groups, GRID.shift, GRID.size // 2,
                                    DROPPED_BITS, limit, (word,))
    return None if got is None else (*got[:3], got[3][0])


@pytest.mark.parametrize("shape", ["normal", "cross", "binades", "negative", "one value"])
def test_the_compiled_step_equals_the_numpy_step(shape):
    rs = np.random.default_rng(len(shape))
    n = 30_000
    x = {"normal": rs.normal(50.0, 10.0, n),
         "cross": rs.normal(0.5, 4.0, n),
         "binades": rs.normal(0.0, 1.0, n) * 10.0 ** rs.integers(-12, 12, n),
         "negative": -rs.exponential(30.0, n),
         "one value": np.full(n, 7.25)}[shape]
    if shape != "one value":
        x[:len(SPECIALS)] = SPECIALS
    groups = 37
    g = rs.integers(0, groups, n).astype(np.int32)
    got = _compiled(x, g, groups)
    assert got is not None
    want = _numpy_lists(x, g)
    for name, a, b in zip(("group", "bin", "count", "sum"), got, want, strict=True):
        assert np.array_equal(a, b), name
        assert a.dtype.kind == b.dtype.kind, name


@pytest.mark.parametrize("word", [1, 2])
def test_the_compiled_step_sums_the_square_words_as_numpy_does(word, monkeypatch):
    """A variance's word columns (the high and the low 30-bit word of each squared
    significand, square_words) are counted by the compiled step too: the same lists as
    numpy's, on values of both signs, subnormals, the largest floats, many binades —
    and the kernel's column_lists takes that step for a large chunk."""
    rs = np.random.default_rng(20 + word)
    n = spark_describe.JIT_ROWS
    x = rs.normal(0.0, 1.0, n) * 10.0 ** rs.integers(-12, 12, n)
    x[:len(SPECIALS)] = SPECIALS
    groups = 29
    g = rs.integers(0, groups, n).astype(np.int32)
    got = _compiled(x, g, groups, word=word)
    assert got is not None
    gg, b, c, s = chunk_counts(g, GRID.encode(x),
                               square_words(significands(x.view(np.int64)))[word - 1])
    assert s is not None
    order = np.lexsort((b, gg))
    for name, a, want in zip(("group", "bin", "count", "sum"), got,
                             (gg[order], b[order], c[order], s[order]), strict=True):
        assert np.array_equal(a, want), name
    calls = _spy(monkeypatch, describe_jit, "column_words", lambda *a: list(a[-1]))
    kernel = spark_describe.column_lists(g, x, groups, GRID, True, word=word)
    assert calls == [[word]]
    again = np.lexsort((kernel[1], kernel[0]))
    for a, want in zip((v[again] for v in kernel), got, strict=True):
        assert np.array_equal(a, want)


def test_a_table_too_wide_is_declined_and_the_kernel_counts_with_numpy(monkeypatch):
    """Groups far more than the chunk's rows (past SPARSE_GROUPS_PER_ROW and the dense
    limit): neither compiled step runs, numpy counts — the same lists."""
    rs = np.random.default_rng(4)
    x = rs.normal(0.0, 1.0, 500) * 10.0 ** rs.integers(-300, 300, 500)
    groups = describe_jit.SPARSE_GROUPS_PER_ROW * 500 + 1
    g = rs.integers(0, groups, 500).astype(np.int32)
    assert _compiled(x, g, groups, limit=1000) is None
    monkeypatch.setattr(spark_describe, "JIT_ROWS", 1)
    monkeypatch.setattr(spark_describe, "JIT_CELLS", 1000)
    got = spark_describe.column_lists(g, x, groups, GRID, True)
    order = np.lexsort((got[1], got[0]))
    for a, b in zip((v[order] for v in got), _numpy_lists(x, g), strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("shape", ["tiny groups", "skewed", "binades"])
@pytest.mark.parametrize("words", [(0,), (0, 1, 2)])
def test_many_groups_are_counted_group_by_group_as_numpy_counts_them(shape, words,
                                                                     monkeypatch):
    """Issue #42: a dense (group, bin) table too large (10^6 groups of ~10 rows) — the
    rows placed group by group (_sparse_bins: a counting sort on the group, each group's
    rows sorted by bin, by insertion or past _INSERTION_ROWS by a sort) give numpy's
    lists exactly, in (group, bin) order, every word from one encoding; and the kernel's
    column_lists takes that step (the dense one declines it first)."""
    rs = np.random.default_rng(len(shape) + len(words))
    n = 40_000
    if shape == "tiny groups":  # ~3 rows a group, some groups empty
        groups = 13_000
        g = rs.integers(0, groups, n)
        x = rs.normal(50.0, 10.0, n)
    elif shape == "skewed":  # a few groups past the insertion's size, many of one row
        groups = 9_000
        g = np.where(rs.random(n) < 0.5, rs.integers(0, 40, n), rs.integers(0, groups, n))
        x = rs.normal(0.5, 4.0, n)
    else:
        groups = 5_000
        g = rs.integers(0, groups, n)
        x = rs.normal(0.0, 1.0, n) * 10.0 ** rs.integers(-300, 300, n)
    x[:len(SPECIALS)] = SPECIALS
    g = g.astype(np.int32)
    assert np.bincount(g).max() > describe_jit._INSERTION_ROWS or shape != "skewed"
    limit = 1 << 12  # the dense table declined
    dense = describe_jit.compiled()
    assert dense is not None
    assert not dense(x.view(np.int64), g.astype(np.int64), groups, GRID.shift,
                     GRID.size // 2, DROPPED_BITS, limit, np.array(words))[0]
    got = describe_jit.column_words(x, g, groups, GRID.shift, GRID.size // 2,
                                    DROPPED_BITS, limit, words)
    assert got is not None
    m = significands(x.view(np.int64))
    for at, word in enumerate(words):
        added = m if word == 0 else square_words(m)[word - 1]
        gg, b, c, s = chunk_counts(g, GRID.encode(x), added)
        assert s is not None
        order = np.lexsort((b, gg))
        for name, a, want in zip(("group", "bin", "count", "sum"),
                                 (*got[:3], got[3][at]),
                                 (gg[order], b[order], c[order], s[order]), strict=True):
            assert np.array_equal(a, want), name
            assert a.dtype.kind == want.dtype.kind, name
    made = _spy(monkeypatch, describe_jit, "compile_kernel", lambda fn, *_: fn.__name__)
    monkeypatch.setattr(spark_describe, "JIT_ROWS", 1)
    monkeypatch.setattr(spark_describe, "JIT_CELLS", limit)
    kernel = spark_describe.column_lists(g, x, groups, GRID, True)
    assert made == ["_two_sided_bins", "_sparse_bins"]
    for a, want in zip(kernel, (*got[:3], got[3][0]), strict=True):
        assert np.array_equal(a, want)


def test_the_kernel_uses_the_compiled_step_for_large_chunks_of_its_own_version(monkeypatch):
    calls = _spy(monkeypatch, describe_jit, "column_words", lambda values, *_: len(values))
    rs = np.random.default_rng(5)
    small, large = rs.normal(size=100), rs.normal(size=spark_describe.JIT_ROWS)
    for x in (small, large):
        g = rs.integers(0, 3, len(x)).astype(np.int32)
        got = spark_describe.column_lists(g, x, 3, GRID, True)  # in any order
        order = np.lexsort((got[1], got[0]))
        for a, b in zip((v[order] for v in got), _numpy_lists(x, g), strict=True):
            assert np.array_equal(a, b)
    assert calls == [spark_describe.JIT_ROWS]
    monkeypatch.setattr(describe_jit, "VERSION", spark_describe.JIT_VERSION + 1)
    g = rs.integers(0, 3, len(large)).astype(np.int32)
    spark_describe.column_lists(g, large, 3, GRID, True)
    assert calls == [spark_describe.JIT_ROWS]  # another version: not called


def test_the_compiled_merge_equals_the_sorting_one():
    """A running total and a chunk's lists, merged in one linear pass, equal the sort of
    their concatenation summed by key (spark/describe._merge); a list whose keys do not
    strictly increase is declined (None), and the kernel sorts instead."""
    rs = np.random.default_rng(8)
    for trial in range(60):
        lists = []
        for _ in range(2):
            size = int(rs.integers(0, 400))
            k = np.unique(rs.integers(0, 1 + int(rs.integers(1, 800)), size))
            n = rs.integers(1, 1 << 20, len(k))
            s = rs.integers(-(1 << 40), 1 << 40, len(k))
            lists.append((k, n, s))
        got = describe_jit.merge_sorted(lists[0], lists[1])
        want = summed(lists)
        assert got is not None
        for a, b in zip(got, want, strict=True):
            assert np.array_equal(a, b), trial
    k = np.array([3, 1, 2])
    assert describe_jit.merge_sorted((k, k, k), (k[:0], k[:0], k[:0])) is None
    twice = np.array([1, 1, 2])
    assert describe_jit.merge_sorted((k[:0], k[:0], k[:0]), (twice, twice, twice)) is None
    assert spark_describe._words_into(None, (k, k, [k]))[0].tolist() == [1, 2, 3]


def test_a_partition_gives_the_same_blobs_compiled_or_not(monkeypatch):
    """partial_bins over many chunks (compiled step and linear merges, or numpy's sorts)
    and many key ranges: the same blobs, byte for byte."""
    import pyarrow as pa

    rs = np.random.default_rng(21)
    n = 40_000
    batches = [pa.RecordBatch.from_pydict({
        "a": rs.normal(3.0, 4.0, n), "b": rs.lognormal(1.0, 2.0, n),
        "g": rs.integers(0, 5, n)}) for _ in range(3)]
    monkeypatch.setattr(spark_describe, "CHUNK_VALUES", 2 * 9_000)  # 9,000 rows a chunk
    monkeypatch.setattr(spark_describe, "JIT_ROWS", 4_096)

    def blobs() -> list[tuple[int, bytes]]:
        out = spark_describe.partial_bins(iter(batches), ["a", "b"], "g", "numeric",
                                          list(range(5)), 5, 7,
                                          QUERY.spec([GRID, GRID]))
        return [(b.column(0)[0].as_py(), b.column(1)[0].as_py()) for b in out]

    compiled = blobs()
    monkeypatch.setattr(spark_describe, "_jit", lambda: None)
    assert blobs() == compiled
    assert len(compiled) == 7


@pytest.mark.parametrize("span", [5, 1 << 40, 1 << 62])
def test_the_sorted_count_sums_each_group_and_key(span):
    """The kernel's sorted count (chunk_counts past its dense tables: _count, one int64
    key (group, key) sorted when it fits, else a lexsort) gives every (group, key) pair
    with its row count and exact sum, as a dictionary does."""
    rs = np.random.default_rng(span % 97)
    n = 20_000
    g = rs.integers(0, 300, n).astype(np.int32)
    keys = rs.integers(0, span, n, dtype=np.int64) if span < 1 << 62 else \
        rs.choice(np.array([0, 1 << 61, (1 << 62) + 5, (1 << 63) - 1], dtype=np.int64), n)
    values = rs.integers(-(1 << 30) + 1, 1 << 30, n)
    gg, kk, counts, sums = spark_describe._count(g, keys, values)
    want: dict[tuple[int, int], list[int]] = {}
    for a, b, v in zip(g.tolist(), keys.tolist(), values.tolist(), strict=True):
        cell = want.setdefault((a, b), [0, 0])
        cell[0] += 1
        cell[1] += v
    assert sums is not None
    assert list(zip(gg.tolist(), kk.tolist(), strict=True)) == sorted(want)
    assert [[c, s] for c, s in zip(counts.tolist(), sums.tolist(), strict=True)] == \
        [want[cell] for cell in sorted(want)]


def test_every_word_from_one_encoding_equals_each_word_counted_alone():
    """column_words sums the significands and both square words in the same loops (one
    encoding of each value): the pairs, counts and each word's sums are those of the
    one-word step, and of numpy's, for every order of the words asked."""
    rs = np.random.default_rng(31)
    n = 20_000
    x = rs.normal(0.0, 1.0, n) * 10.0 ** rs.integers(-12, 12, n)
    x[:len(SPECIALS)] = SPECIALS
    groups = 23
    g = rs.integers(0, groups, n).astype(np.int32)
    m = significands(x.view(np.int64))
    for words in ([0, 1, 2], [2, 0], [1]):
        got = describe_jit.column_words(x, g, groups, GRID.shift, GRID.size // 2,
                                        DROPPED_BITS, 1 << 22, words)
        assert got is not None
        assert len(got[3]) == len(words)
        for word, word_sums in zip(words, got[3], strict=True):
            alone = _compiled(x, g, groups, word=word)
            assert alone is not None
            added = m if word == 0 else square_words(m)[word - 1]
            gg, b, c, s = chunk_counts(g, GRID.encode(x), added)
            order = np.lexsort((b, gg))
            for a, one, want in zip((*got[:3], word_sums), alone,
                                    (gg[order], b[order], c[order], s[order]), strict=True):
                assert np.array_equal(a, one)
                assert np.array_equal(a, want)


def test_a_column_with_squares_is_encoded_once_a_chunk(monkeypatch):
    """A variance's column is three kernel columns (its significands, the squares' high
    and low words) on one grid: the kernel counts them in ONE compiled call a chunk, and
    its blobs are byte for byte those of numpy's step for each word."""
    import pyarrow as pa

    rs = np.random.default_rng(32)
    n = 30_000
    batches = [pa.RecordBatch.from_pydict({
        "a": rs.normal(3.0, 4.0, n), "b": -rs.lognormal(1.0, 2.0, n),
        "g": rs.integers(0, 6, n)}) for _ in range(2)]
    monkeypatch.setattr(spark_describe, "CHUNK_VALUES", 2 * 10_000)  # 10,000 rows a chunk
    monkeypatch.setattr(spark_describe, "JIT_ROWS", 4_096)
    spec = QUERY.spec([GRID, GRID], ["count", "variance"])
    assert all(c.squares for c in spec.columns)
    kernel, layout = spark_describe.virtual_columns(spec)
    calls = _spy(monkeypatch, describe_jit, "column_words", lambda *a: list(a[-1]))

    def blobs() -> list[tuple[int, bytes]]:
        out = spark_describe.partial_bins(iter(batches), ["a", "b"], "g", "numeric",
                                          list(range(6)), 6, 5, kernel, layout)
        return [(b.column(0)[0].as_py(), b.column(1)[0].as_py()) for b in out]

    compiled = blobs()
    # each batch is one chunk (30,000 rows ≥ 10,000), each column's chunk one call
    assert calls == [[0, 1, 2]] * (2 * len(batches))
    monkeypatch.setattr(spark_describe, "_jit", lambda: None)
    assert blobs() == compiled


def _merge_words(lists: list[tuple[np.ndarray, ...]]) -> Any:
    """describe_jit.merge_words of (key, count, sum) lists, each of one word."""
    return describe_jit.merge_words([(k, n, (s,)) for k, n, s in lists])


def test_the_one_pass_merge_of_many_lists_equals_the_sorting_one(monkeypatch):
    """A range's partial lists (one or more per partition) merged compiled (windows of
    sorted words) equal the sort of their concatenation summed by key, for any number
    of lists, empty ones and keys shared by several; a list whose keys do not strictly
    increase is declined (None); the range's merge calls it once."""
    rs = np.random.default_rng(9)
    for trial in range(80):
        lists = []
        for _ in range(int(rs.integers(1, 18))):
            size = int(rs.integers(0, 300))
            k = np.unique(rs.integers(0, 1 + int(rs.integers(1, 900)), size))
            lists.append((k, rs.integers(1, 1 << 20, len(k)),
                          rs.integers(-(1 << 40), 1 << 40, len(k))))
        got = _merge_words(lists)
        want = summed(lists)
        assert got is not None
        for a, b in zip((*got[:2], got[2][0]), want, strict=True):
            assert np.array_equal(a, b), trial
    k = np.array([1, 3, 2])
    ok = (np.array([1, 2]),) * 3
    assert _merge_words([ok, (k, k, k)]) is None
    twice = np.array([1, 1, 2])
    assert _merge_words([(twice, twice, twice), ok]) is None
    calls = _spy(monkeypatch, describe_jit, "merge_words", len)
    parts = [(np.arange(i, 40, 3, dtype=np.int64), np.ones(len(range(i, 40, 3)), np.int64),
              np.full(len(range(i, 40, 3)), i, np.int64)) for i in range(5)]
    keys, counts, sums = spark_describe._merge_words([(k, n, [v]) for k, n, v in parts])
    assert calls == [5]
    for a, b in zip((keys, counts, sums[0]), summed(parts), strict=True):
        assert np.array_equal(a, b)


def test_the_one_pass_merge_of_several_words_equals_the_sort_word_by_word():
    """A family's lists — keys and counts shared by several sum words (a variance's
    significands and its squares' two words) — merged in one pass equal each word's
    lists merged apart (the sort of their concatenation summed by key): the same keys and
    counts for every word, each word's sums its own."""
    rs = np.random.default_rng(12)
    for trial in range(60):
        words = int(rs.integers(1, 4))
        lists = []
        for _ in range(int(rs.integers(1, 20))):
            k = np.unique(rs.integers(0, 1 + int(rs.integers(1, 2000)),
                                      int(rs.integers(0, 400))))
            lists.append((k, rs.integers(1, 1 << 20, len(k)),
                          [rs.integers(-(1 << 40), 1 << 40, len(k)) for _ in range(words)]))
        got = describe_jit.merge_words(lists)
        assert got is not None
        for x in range(words):
            want = summed([(k, n, s[x]) for k, n, s in lists])
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
            assert np.array_equal(got[2][x], want[2]), trial
        if len(lists) >= 2:  # a running total and a chunk: the linear merge, the same
            two = describe_jit.merge_two(lists[0], lists[1])
            want2 = describe_jit.merge_words(lists[:2])
            assert two is not None and want2 is not None
            for a, b in zip((two[0], two[1], *two[2]), (want2[0], want2[1], *want2[2]),
                            strict=True):
                assert np.array_equal(a, b), trial
    k = np.array([1, 3, 2])
    ok = np.array([1, 2])
    assert describe_jit.merge_words([(ok, ok, [ok, ok]), (k, k, [k, k])]) is None
    assert describe_jit.merge_two((ok, ok, [ok, ok]), (k, k, [k, k])) is None


def test_the_windowed_merge_of_any_number_of_lists_equals_the_sort(monkeypatch):
    """A range's partial lists (from one to about 40 at 10^7 rows) are merged by windows
    of sorted words (each entry's key offset in its window with its index, numpy's sort a
    window, the runs read once; two lists in one linear pass): the same keys, counts and
    every word's sums as the sort of the concatenation — with windows of a few entries
    or of every entry, keys spanning a few values or 2^61 (the windows' width clamped so
    a word fits an int64), empty lists among them; and a list whose keys do not
    strictly increase is refused (None), wherever it stands."""
    ran: list[int] = []
    real = describe_jit._windowed
    monkeypatch.setattr(describe_jit, "_windowed",
                        lambda *a: (ran.append(1), real(*a))[1])
    rs = np.random.default_rng(41)
    for trial in range(120):
        monkeypatch.setattr(describe_jit, "WINDOW_ENTRIES",
                            int(rs.choice([1, 7, 1 << 18])))
        words = int(rs.integers(1, 4))
        span = int(rs.choice([3, 5000, 1 << 40, 1 << 61]))
        lists = []
        for _ in range(int(rs.choice([rs.integers(1, 8), rs.integers(8, 45)]))):
            size = int(rs.integers(0, 600)) if rs.random() < 0.9 else 0
            k = np.unique(rs.integers(0, span, size)) + int(rs.integers(0, 1 << 20))
            lists.append((k, rs.integers(1, 1 << 20, len(k)),
                          [rs.integers(-(1 << 40), 1 << 40, len(k)) for _ in range(words)]))
        ran.clear()
        got = describe_jit.merge_words(lists)
        assert got is not None and ran == ([] if len(lists) == 2 else [1]), trial
        for x in range(words):
            want = summed([(k, n, s[x]) for k, n, s in lists])
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
            assert np.array_equal(got[2][x], want[2]), trial
    ok = np.array([1, 2])
    bad = np.array([1, 3, 3])
    for many in ([(ok, ok, [ok])] * 2, [(ok, ok, [ok])] * 9):
        assert describe_jit.merge_words([*many, (bad, bad, [bad])]) is None
        assert describe_jit.merge_words([(bad, bad, [bad]), *many]) is None


def test_the_windowed_merge_refuses_keys_outside_its_windows_before_writing_them():
    """The windows are sized from the lists' first and last keys, which bound a list's
    keys only where they increase: a list whose middle key runs past every last key (or
    below the least first key) is refused — None, as the heap refuses it — before its
    window is counted (no write past the windows' table: the kernel's plain-Python body
    raises IndexError there); and keys spanning more than 2^63 (key − low past int64) are
    declined (None), and merged by the caller's sort, the same lists (two lists, merged
    in one linear pass, at any span)."""
    one = np.ones(2, dtype=np.int64)
    ok = np.array([0, 10], dtype=np.int64)
    for bad in ([5, 10**6, 7], [5, -(10**6), 7]):
        k = np.array(bad, dtype=np.int64)
        keys = np.concatenate([k, ok])
        got = describe_jit._window_words(keys, np.array([0, 3, 5], dtype=np.int64), 0, 0, 11,
                                         3)
        assert got[0] is False and len(got[1]) == 0, bad
        many = [(ok, one, [one])] * 8
        assert describe_jit.merge_words([(k, np.ones(3, dtype=np.int64), [k]), *many]) is None
    ends = np.array([-(1 << 63), 0, (1 << 63) - 1], dtype=np.int64)
    lists = [(ends, np.full(3, i + 1, dtype=np.int64), [np.full(3, i, dtype=np.int64)])
             for i in range(9)]
    assert describe_jit.merge_words(lists) is None
    two = describe_jit.merge_words(lists[:2])  # two lists: the linear pass, any span
    assert two is not None and two[0].tolist() == ends.tolist()
    assert two[1].tolist() == [3] * 3 and two[2][0].tolist() == [1] * 3
    got = spark_describe._merge_words(lists)
    total = sum(range(9))
    assert got[0].tolist() == ends.tolist()
    assert got[1].tolist() == [total + len(lists)] * 3
    assert got[2][0].tolist() == [total] * 3


def test_a_partitions_blobs_split_each_columns_sums_once(monkeypatch):
    """The ranges' blobs of a partition: each kernel column's sums are split into their two
    words once (not once per range), each row written once, narrowed, into the codec's
    input — the blobs read back to the column's lists, range by range."""
    rs = np.random.default_rng(33)
    keys = np.unique(rs.integers(0, 10_000, 4_000)).astype(np.int64)
    sums = rs.integers(-(1 << 40), 1 << 40, len(keys))
    acc = [(keys, rs.integers(1, 9, len(keys)), [sums])]
    limits = [np.array([0, 2_000, 4_000, 6_000, 8_000, 10_000], dtype=np.int64)]
    split = _spy(monkeypatch, spark_describe, "sum_words", len)
    out = list(spark_describe.range_blobs(acc, limits, 5))
    assert split == [len(keys)]
    assert [b.column(0)[0].as_py() for b in out] == [0, 1, 2, 3, 4]
    got = [spark_describe.from_blob(b.column(1)[0].as_buffer()) for b in out]
    for i, want in enumerate((keys, acc[0][1], sums)):
        assert np.array_equal(np.concatenate([g[i] for g in got]), want)


def test_a_blob_read_for_a_key_range_is_the_whole_blob_cut_there():
    """from_blob given (first, end) decodes the counts and sums of those keys only: the
    same lists as the whole blob's entries in that range (empty, whole, inside, past
    either end; sums past int64 too); a block's cells read so are those of the whole
    block: tests/spark/test_pass_size.py."""
    rs = np.random.default_rng(34)
    for big in (False, True):
        keys = np.unique(rs.integers(0, 50_000, 6_000)).astype(np.int64)
        counts = rs.integers(1, 1 << 20, len(keys))
        if big:  # past EXACT_ROWS: such sums come back as Python integers
            counts[::7] = 1 << 40
        # a sum of n rows' significands: |sum| < n·2^30
        sums = np.array([n * m for n, m in zip(counts.tolist(), rs.integers(
            -(1 << 29), 1 << 29, len(keys)).tolist(), strict=True)], dtype=object)
        if not big:
            sums = sums.astype(np.int64)
        blob = to_blob(keys, counts, sums).buffers()[2]
        whole = spark_describe.from_blob(blob)
        for first, end in [(0, 0), (-5, 60_000), (1_000, 20_000), (49_000, 90_000),
                           (int(keys[3]), int(keys[3]) + 1)]:
            got = spark_describe.from_blob(blob, (first, end))
            cut = (whole[0] >= first) & (whole[0] < end)
            for a, b in zip(got, (w[cut] for w in whole), strict=True):
                assert np.array_equal(a, b)


@pytest.mark.parametrize("bits", [True, False])
def test_the_compiled_packed_count_equals_numpys(bits, monkeypatch):
    """A chunk's packed count (the quantiles' decimal cells with their at-value bit, or
    pairs without values) made and read compiled (describe_jit.packed_count: the words in
    one loop, numpy's sort, the runs in one pass) gives numpy's _packed_count exactly —
    pairs, order, dtypes, counts and bit sums — on groups with no rows, runs of one
    pair, one group and keys at both ends of the span; _count uses it from JIT_ROWS
    pairs, of its own version only."""
    rs = np.random.default_rng(41 + bits)
    cases = []
    for n, groups, span in [(20_000, 300, 1 << 40), (5_000, 1, 7), (3_000, 1000, 50),
                            (2, 4, 1), (70_000, 17, (1 << 62) // 17 - 1)]:
        g = rs.integers(0, groups, n).astype(np.int32)
        g[0] = groups - 1  # the last group: its pairs' words reach (groups)·span − 1
        keys = rs.integers(0, span, n, dtype=np.int64) - 123
        keys[:2] = (-123, span - 124)
        at = rs.integers(0, 2, n).astype(np.int64) if bits else None
        cases.append((g, keys, at))
    for g, keys, at in cases:
        low = int(keys.min())
        span = int(keys.max()) - low + 1
        want = spark_describe._packed_count(g.astype(np.int64) * span + (keys - low), span,
                                            low, at)
        got = describe_jit.packed_count(g, keys, low, span, at)
        assert got is not None
        for a, b in zip(got, want, strict=True):
            if b is None:
                assert a is None
                continue
            assert a.dtype == b.dtype and np.array_equal(a, b)
    calls = _spy(monkeypatch, describe_jit, "packed_count", lambda group, *_: len(group))
    g, keys, at = cases[-1]
    spark_describe._count(g[:100], keys[:100], None if at is None else at[:100])
    assert calls == []  # a small chunk: numpy's
    got = spark_describe._count(g, keys, at)
    assert calls == [len(g)]
    monkeypatch.setattr(describe_jit, "VERSION", spark_describe.JIT_VERSION + 1)
    assert all(np.array_equal(a, b) for a, b in zip(spark_describe._count(g, keys, at)[:3],
                                                     got[:3], strict=True))
    assert calls == [len(g)]  # another version: not called


def test_the_compiled_packed_count_leaves_negative_groups_to_numpy():
    """describe_jit.packed_count follows the groups up from 0 along the sorted words, so
    a chunk with a negative group is not its to count: None, and _count gives numpy's
    lists (floor division: the negative groups first, each pair its own)."""
    rs = np.random.default_rng(7)
    n = spark_describe.JIT_ROWS + 10
    g = rs.integers(-3, 5, n).astype(np.int32)
    keys = rs.integers(0, 40, n, dtype=np.int64)
    at = rs.integers(0, 2, n).astype(np.int64)
    assert describe_jit.packed_count(g, keys, 0, 40, at) is None
    assert describe_jit.packed_count(g[g >= 0], keys[g >= 0], 0, 40, at[g >= 0]) is not None
    low = int(keys.min())
    span = int(keys.max()) - low + 1
    want = spark_describe._packed_count(g.astype(np.int64) * span + (keys - low), span, low,
                                        at)
    got = spark_describe._count(g, keys, at)
    assert int(want[0].min()) == -3
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_the_row_steps_are_the_numpy_encoding_and_stay_plain_python():
    """The steps both bin kernels call compiled (_decode, _word: jit.compile_kernel's
    ``calls``) give, run as plain Python, each value's FloatBins(SEARCH_BITS) bin, its
    truncated significand and its square's words as numpy does — and compiling the
    kernels leaves them plain functions in the module (the kernels are compiled over a
    copy of its globals)."""
    rs = np.random.default_rng(12)
    x = np.concatenate([SPECIALS, rs.normal(0.0, 1.0, 300) * 10.0 ** rs.integers(-300, 300, 300)])
    bits = x.view(np.int64)
    assert describe_jit.compiled() is not None
    step = describe_jit._decode
    assert type(step) is type(_numpy_lists) and type(describe_jit._word) is type(_numpy_lists)
    got = [step(int(b), GRID.shift, GRID.size // 2, DROPPED_BITS) for b in bits.tolist()]
    m = significands(bits)
    assert [k for _, k, _ in got] == GRID.encode(x).tolist()
    assert [v for _, _, v in got] == m.tolist()
    assert [bool(n) for n, _, _ in got] == (GRID.encode(x) < GRID.size // 2).tolist()
    hi, lo = square_words(m)
    for word, want in ((0, m), (1, hi), (2, lo)):
        assert [describe_jit._word(v, word) for v in m.tolist()] == want.tolist()
