"""The heartbeat of a long run: a line every :data:`EVERY` seconds (at least every
:data:`PROMISE`) naming the run's current public stage.

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

**A line never waits on the run's own thread** (issue #42: "progress at least every
10 s", :data:`PROMISE`). A Python thread cannot keep that promise: it needs the
interpreter's lock, and a long C call holds it — measured on a describe of 2·10^5 groups,
the cyclic garbage collector's full passes over the run's live objects (started inside a
block's unpickling or the spool's pickling), which grow with the live objects; at 10^6
groups on a machine at load 18 on 2 cores a line came 8 s late (docs/results.md §5.3d).
So when the lines go to a real stream (:class:`StreamLines`: the command's stderr, a
job's stdout), they are written by a small clock process (``python -I -S -c``
:data:`CLOCK`, no dprect import, in a process group of its own so a Ctrl-C reaches the
run only): it writes each line on its own schedule to the stream's file descriptor, and
the run's thread only sends it the current stage and count (at most every
:data:`REFRESH` s, when they changed). A run busy in a long C call then shows a stage a
few seconds old, on time; the clock process ends when its input closes — the run's end,
or the run's process dying. Where no such process can start (no file descriptor behind
the stream, e.g. a captured test stream), the thread writes the lines itself, as before.
:data:`EVERY` is 4 s below the promise, the margin for a loaded machine: at load 10–14 on
2 cores the clock process was once 1 s late and its line 3 s more in reaching the reader
(docs/results.md §5.3d).

The thread waits on an event (``wait(every)`` returns True once the run ended), so it
stops as soon as the run does; tests call :meth:`Heartbeat.beat`, or give their own
``wait`` and ``clock`` (the thread then writes the lines itself) — nothing depends on
real time.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import IO

from dprect.engines.progress import current

#: the promise (issue #42, docs/operations.md): a line at least every this many seconds
PROMISE = 10.0
#: seconds between two heartbeat lines (the command line's and the jobs'): 4 s below
#: :data:`PROMISE`, the margin for a loaded machine (module notes)
EVERY = 6.0
#: seconds between two looks of the run's thread at its stage for the clock process
REFRESH = 0.5

#: how every heartbeat line starts (after the command's ``dprect: `` or a job's
#: ``[prog] ``): what marks it as progress, never an error or a result
MARK = "still running ("

#: the clock process (module notes): argv = every, the run's start on the monotonic
#: clock (one clock for every process of the machine), the head of a line (the stream's
#: prefix and :data:`MARK`); stdin = the current stage text, one line per change (EOF:
#: the run ended); stdout = the stream. The k-th line is due at k × every from the start,
#: as :meth:`Heartbeat.run`; each line is ``HEAD S s): STAGE`` in one write.
CLOCK = """\
import os, select, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
every, started, head = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
text, rest, due, inp = b"starting", b"", started + every, sys.stdin.fileno()
try:
    while True:
        if select.select([inp], [], [], max(0.0, due - time.monotonic()))[0]:
            chunk = os.read(inp, 65536)
            if not chunk:
                break
            *lines, rest = (rest + chunk).split(b"\\n")
            text = lines[-1] if lines else text
            continue
        now = time.monotonic()
        os.write(1, b"%s%.0f s): %s\\n" % (head.encode(), now - started, text))
        due = due + every if due + every > now else now + every
except (OSError, KeyboardInterrupt):
    pass
"""


class StreamLines:
    """An ``emit`` that prints ``PREFIX LINE`` on a stream of :mod:`sys` (``stderr`` for
    the command, ``stdout`` for a job), looked up at each line (a test's capture is
    honoured). Its :meth:`fileno` lets :class:`Heartbeat` hand the lines to the clock
    process (module notes)."""

    def __init__(self, stream: str, prefix: str) -> None:
        self.stream, self.prefix = stream, prefix

    def __call__(self, line: str) -> None:
        print(f"{self.prefix}{line}", file=getattr(sys, self.stream), flush=True)

    def fileno(self) -> int | None:
        """The stream's file descriptor (flushed first), None without one."""
        stream = getattr(sys, self.stream)
        try:
            stream.flush()
            return int(stream.fileno())
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation too
            return None


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
        self._alone = wait is None and clock is time.monotonic  # may use the clock process
        self._wait = wait or self._stop.wait
        self._stage = "starting"
        self._started = clock()
        self._thread: threading.Thread | None = None
        self._clock_process: subprocess.Popen[bytes] | None = None

    def stage(self, text: str) -> None:
        """The run's current stage (public text only)."""
        self._stage = text

    def tracking(self, progress: Callable[[str], None]) -> Callable[[str], None]:
        """``progress`` that also makes each of its lines the current stage."""

        def both(text: str) -> None:
            self.stage(text)
            progress(text)

        return both

    def text(self) -> str:
        """``STAGE[, LABEL D/T UNIT]`` (e.g. ``, mechanism 3/16 blocks``): what a line
        says after its seconds."""
        step = current()
        return self._stage if step is None else f"{self._stage}, {step}"

    def line(self) -> str:
        """``still running (S s): STAGE[, LABEL D/T UNIT]``."""
        return f"{MARK}{self._clock() - self._started:.0f} s): {self.text()}"

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

    def feed(self, process: subprocess.Popen[bytes]) -> None:
        """The thread's loop with a clock process: every :data:`REFRESH` s, the stage and
        count sent to it when they changed (it writes the lines)."""
        sent = None
        pipe: IO[bytes] | None = process.stdin
        while pipe is not None:
            text = self.text().replace("\n", " ")
            if text != sent:
                try:
                    pipe.write(text.encode(errors="backslashreplace") + b"\n")
                    pipe.flush()
                except (OSError, ValueError):  # the clock process is gone: no more lines
                    return
                sent = text
            if self._stop.wait(REFRESH):
                return

    def _start_clock(self) -> subprocess.Popen[bytes] | None:
        """The clock process writing the lines to ``emit``'s stream, or None (no file
        descriptor, or no process could start: the thread writes them)."""
        if not (self._alone and isinstance(self._emit, StreamLines)):
            return None
        fd = self._emit.fileno()
        if fd is None:
            return None
        try:
            return subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", CLOCK, repr(self._every),
                 repr(self._started), self._emit.prefix + MARK],
                stdin=subprocess.PIPE, stdout=fd, stderr=subprocess.DEVNULL,
                process_group=0)
        except (OSError, ValueError):
            return None

    def __enter__(self) -> Heartbeat:
        self._started = self._clock()
        process = self._clock_process = self._start_clock()
        self._thread = threading.Thread(
            target=self.run if process is None else self.feed,
            args=() if process is None else (process,), name="dprect-heartbeat",
            daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        process, self._clock_process = self._clock_process, None
        if process is not None:  # its input closed: it ends (no line after the run's)
            with contextlib.suppress(OSError, ValueError):
                if process.stdin is not None:
                    process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


__all__ = ["CLOCK", "EVERY", "MARK", "PROMISE", "REFRESH", "Heartbeat", "StreamLines"]
