"""The heartbeat of a long run: a line at least every :data:`EVERY` seconds naming the
run's current public stage.

A describe of thousands of groups or a Spark pass takes minutes, and a run would be
silent between its plan and its result. :class:`Heartbeat` runs around the read, the
compute and the publication of every run (:func:`dprect.app.spine.run_release`); its
background thread writes, every ``every`` seconds, one line: the seconds since the run
started, the stage the run announced last (its progress lines: "reading PATH",
"counting 2 column(s) in 3000 group(s)", "describing 2 column(s) in 3000 group(s)",
"writing the outputs") and, while a long step runs in this process, how far it has got
(:func:`dprect.engines.progress.current`): the numpy engine's cells counted, the describe
mechanism's blocks of groups done (``mechanism 12/64 blocks``), the coverage or quantile
mechanism's cells drawn (``mechanism 51234/200000 cells``).

Every part is public: a stage names paths, options and the numbers of listed groups and
columns; the blocks are cut from those numbers and the machine's processors, never from
the data, and a unit is counted whatever the data hold. No count, size or value of the
data is ever printed. (The time a run takes is visible to whoever runs it, with or
without a heartbeat.)

The thread waits on an event (``wait(every)`` returns True once the run ended), so it
stops as soon as the run does; tests call :meth:`Heartbeat.beat`, or give their own
``wait`` and ``clock`` — nothing depends on real time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

from dprect.engines.progress import current

#: seconds between two heartbeat lines (the command line's and the jobs')
EVERY = 10.0

#: how every heartbeat line starts (after the command's ``dprect: `` or a job's
#: ``[prog] ``): what marks it as progress, never an error or a result
MARK = "still running ("


class Heartbeat:
    """Writes :meth:`line` on ``emit`` every ``every`` seconds while entered (a context
    manager: the thread starts on entry and is stopped and joined on exit). ``stage``
    sets the stage the line names; :meth:`tracking` wraps a progress function so that
    each of its lines becomes the stage."""

    def __init__(self, emit: Callable[[str], None], every: float = EVERY, *,
                 clock: Callable[[], float] = time.monotonic,
                 wait: Callable[[float], bool] | None = None) -> None:
        self._emit, self._every, self._clock = emit, every, clock
        self._stop = threading.Event()
        self._wait = wait or self._stop.wait
        self._stage = "starting"
        self._started = clock()
        self._thread: threading.Thread | None = None

    def stage(self, text: str) -> None:
        """The run's current stage (public text only)."""
        self._stage = text

    def tracking(self, progress: Callable[[str], None]) -> Callable[[str], None]:
        """``progress`` that also makes each of its lines the current stage."""

        def both(text: str) -> None:
            self.stage(text)
            progress(text)

        return both

    def line(self) -> str:
        """``still running (S s): STAGE[, LABEL D/T UNIT]`` (e.g. ``, mechanism 3/16
        blocks``)."""
        text = f"{MARK}{self._clock() - self._started:.0f} s): {self._stage}"
        step = current()
        return text if step is None else f"{text}, {step}"

    def beat(self) -> None:
        """Write one line now."""
        self._emit(self.line())

    def run(self) -> None:
        """The thread's loop: a line every ``every`` seconds until the run ends, on a
        schedule from the start (the k-th line due at k × ``every``), so the time a line
        takes to make — a loaded machine, another thread holding the interpreter — does
        not add up from line to line; after a stall longer than a period the next line is
        due ``every`` seconds after the late one."""
        due = self._started + self._every
        while not self._wait(max(0.0, due - self._clock())):
            self.beat()
            now = self._clock()
            due = due + self._every if due + self._every > now else now + self._every

    def __enter__(self) -> Heartbeat:
        self._started = self._clock()
        self._thread = threading.Thread(target=self.run, name="dprect-heartbeat",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


__all__ = ["EVERY", "MARK", "Heartbeat"]
