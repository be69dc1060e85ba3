"""Where the executor route's blocks sit (issue #42): the merge's shuffle partitioned by
BLOCK RANGE, a public function of the block's number, so that the merged blocks — and
what each phase makes of them, partition for partition — lie in runs of consecutive
blocks that never cross a wave (:mod:`dprect.engines.spark.executor_draws`).

The blocks 0 … B − 1 are drawn in waves of W blocks (the last may be shorter); there are
⌈B / W⌉ waves, each cut into m partitions of at most s = ⌈V / m⌉ blocks, V = min(W, B) the
longest wave:

    partition(b) = ⌊b / W⌋ · m + ⌊(b mod W) / s⌋,    P = ⌈B / W⌉ · m partitions,

with m = min(V, ⌈c / ⌈B / W⌉⌉) for c = :data:`PARTITIONS_PER_CORE` × the session's cores,
so the merge and describe's phase 1 (which read those partitions as they are) run about
min(B, c) tasks or more, and a wave spans whole partitions. ``partition`` is
non-decreasing in b (runs of consecutive blocks) and maps the blocks of wave w onto
partitions w·m … w·m + m − 1 only (b mod W < V ≤ s·m). A partition of a short last wave
may be empty.

Why: before, the merge's exchange was a hash of the block, the kept merged blocks were
shuffled again to join the blocks' seeds and names, and the streamed waves' input was
staged once more cut by wave (a range repartition: one sampling job) and cut again a block
a partition once a wave (another sampling job each) — the merged blocks moved three times
and more beside the pass's own shuffle (docs/results.md §5.3c, s34). By block range, the
seeds and names travel in the merge's own exchange (one row a block, unioned with the
pass's), phase 1 reads the merged partitions with no exchange, and a wave's ``where`` on
its blocks skips every kept batch outside its partitions (in-memory partition pruning on
the block's least and largest value, ``spark.sql.inMemoryColumnarStorage.partitionPruning``,
on by default); the wave is then cut a block a task by ``repartitionById`` on the block's
place in its wave — no sampling job, and each block moved once in all the waves.

Only public numbers go in: the number of blocks, the wave and the cores. Where a block sits
changes nothing its task draws (each group from its own stream)."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812

#: the merge and phase 1 read at least about this many partitions per core of the session
PARTITIONS_PER_CORE = 4


@dataclass(frozen=True)
class BlockRanges:
    """``blocks`` blocks in waves of ``wave``, each wave cut into ``per_wave`` partitions
    of at most :attr:`size` blocks (module notes)."""

    blocks: int
    wave: int
    per_wave: int

    @classmethod
    def of(cls, blocks: int, wave: int, cores: int) -> BlockRanges:
        """The ranges of ``blocks`` blocks drawn in waves of ``wave`` on ``cores`` cores:
        ``per_wave`` = min(V, ⌈c / waves⌉), c = :data:`PARTITIONS_PER_CORE` · cores."""
        if blocks < 1 or wave < 1 or cores < 1:
            raise ValueError("block ranges need blocks, wave and cores >= 1 (an internal "
                             "invariant)")
        target = PARTITIONS_PER_CORE * cores
        return cls(blocks, wave, min(blocks, wave,
                                     -(-target // cls.waves_of(blocks, wave))))

    @staticmethod
    def waves_of(blocks: int, wave: int) -> int:
        return -(-blocks // wave)

    @property
    def waves(self) -> int:
        return self.waves_of(self.blocks, self.wave)

    @property
    def size(self) -> int:
        """The most blocks a partition holds: ⌈V / m⌉, V = min(W, B)."""
        return -(-min(self.wave, self.blocks) // self.per_wave)

    @property
    def partitions(self) -> int:
        """P = waves · m."""
        return self.waves * self.per_wave

    def partition(self, block: int) -> int:
        """The partition of block ``block`` (module notes)."""
        return block // self.wave * self.per_wave + block % self.wave // self.size

    def column(self, block: str) -> Column:
        """:meth:`partition` of the non-negative int column ``block``, as Spark computes it
        (integer ``DIV``; an int, for ``repartitionById``)."""
        b = f"`{block}`"
        return F.expr(f"CAST(({b} DIV {self.wave}) * {self.per_wave} "
                      f"+ ({b} % {self.wave}) DIV {self.size} AS INT)")


__all__ = ["PARTITIONS_PER_CORE", "BlockRanges"]
