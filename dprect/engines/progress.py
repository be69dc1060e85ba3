"""How far the grouped run's long step in this process has got, for the heartbeat
(:mod:`dprect.app.heartbeat`): units done of all, in public units.

One step runs at a time in a process, and says what it counts: the describe mechanism its
blocks of groups (:mod:`dprect.engines.driver_pool`: ``mechanism 3/16 blocks``), the
coverage and quantile mechanisms their cells (:func:`counted_cells`: ``mechanism
51234/200000 cells``), the numpy engine's count its (group, column) cells
(``51234/200000 cells``, during the stage "counting ..."). The totals are
the public numbers of listed groups and columns (and of the driver's processors for
blocks); a unit is counted when the step reaches it, whatever the data hold — so the
numbers printed are a function of the public shape of the run and of time only (the time
a run takes is visible to whoever runs it, with or without a heartbeat).

A step whose units are done elsewhere — the Spark executor route's blocks, drawn in the
executors (:mod:`dprect.engines.spark.block_progress`) — is :func:`polled`: its done
count is read from a function when the heartbeat asks (capped at the total), and printed
by the same :func:`current`, so both routes' lines read alike (``mechanism 3/16 blocks``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class StepProgress:
    """The step running now (:func:`current`): what it is (``label``), its ``done`` and
    ``total`` units (``unit``), under a lock (the heartbeat reads it from its thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done, self.total = 0, 0
        self.label, self.unit = "", ""
        self.running = False
        self.poll: Callable[[], int] | None = None

    def start(self, total: int, label: str, unit: str,
              poll: Callable[[], int] | None = None) -> None:
        """A step of ``total`` units, counted by :meth:`one` or, with ``poll``, read from
        it (units done elsewhere)."""
        with self.lock:
            self.done, self.total, self.running = 0, total, True
            self.label, self.unit, self.poll = label, unit, poll

    def one(self) -> None:
        with self.lock:
            self.done += 1

    def end(self) -> None:
        with self.lock:
            self.running, self.poll = False, None

    def now(self) -> tuple[int, int, str, str] | None:
        with self.lock:
            if not self.running:
                return None
            done = self.done if self.poll is None else min(self.total, self.poll())
            return done, self.total, self.label, self.unit


#: the step running now in this process
STEP = StepProgress()


def current() -> str | None:
    """``[LABEL ]D/T UNIT`` of the step running now (e.g. ``mechanism 3/16 blocks``,
    ``51234/200000 cells``), None when none runs: public numbers for a progress line."""
    now = STEP.now()
    if now is None:
        return None
    done, total, label, unit = now
    return " ".join(part for part in (label, f"{done}/{total}", unit) if part)


@contextmanager
def counting(total: int, label: str, unit: str) -> Iterator[Callable[[], None]]:
    """A step of ``total`` units: yields the function that counts one done; the step
    ends on exit (however it ends)."""
    STEP.start(total, label, unit)
    try:
        yield STEP.one
    finally:
        STEP.end()


@contextmanager
def polled(total: int, label: str, unit: str, done: Callable[[], int]) -> Iterator[None]:
    """A step of ``total`` units done elsewhere: ``done()`` (a count of public units,
    read when the heartbeat asks, capped at ``total``) says how many; the step ends on
    exit (however it ends)."""
    STEP.start(total, label, unit, done)
    try:
        yield
    finally:
        STEP.end()


class _Ticking(Mapping[K, V]):
    """``cells`` counting each cell looked up (``[key]`` or ``get``; a missing cell too)."""

    def __init__(self, cells: Mapping[K, V], tick: Callable[[], None]) -> None:
        self._cells, self._tick = cells, tick

    def __getitem__(self, key: K) -> V:
        self._tick()
        return self._cells[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._cells)

    def __len__(self) -> int:
        return len(self._cells)


@contextmanager
def counted_cells(cells: Mapping[K, V], total: int, label: str = "mechanism"
                  ) -> Iterator[Mapping[K, V]]:
    """``cells`` for a mechanism that looks each of its ``total`` (group, column) cells
    up once, in its draw order (the coverage and quantile mechanisms: a loop over the
    public groups and columns), counted as the step's ``cells`` (:func:`current`)."""
    with counting(total, label, "cells") as tick:
        yield _Ticking(cells, tick)


__all__ = ["STEP", "StepProgress", "counted_cells", "counting", "current", "polled"]
