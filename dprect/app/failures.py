"""How a run ends when it fails: one line, an exit code, and nothing from the data.

Shared by the ``dprect`` command and the Spark jobs (pyspark-free; no optional
dependency). Exit codes: ``0`` success; ``2`` bad configuration, parameters, schema or
paths (any :class:`~dprect.core.errors.DprectError`, a missing file, an operating-system
error with its number: :func:`os_error_text`); ``3`` Spark itself
failed; ``1`` an unexpected internal error; ``130`` interrupted (SIGINT, Ctrl-C); ``143``
terminated (SIGTERM, a scheduler's stop: :func:`sigterm_interrupts` makes it an interrupt,
so the run ends as after a Ctrl-C — a reservation withdrawn before any noise was drawn,
recorded ``fail`` after; no staged output left — instead of dying where it stands).

The line never carries a value from the data: a Spark error is described by
:func:`dprect.engines.spark.source.spark_message` (its condition, not its text), and an
unexpected error by its type only. Under ``spark-submit`` the Python driver's stderr is
merged into spark-submit's stdout (Spark's ``PythonRunner``), so :func:`report_error`
writes the line to spark-submit's own stderr instead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TextIO

from dprect.core.errors import DprectError

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_SPARK = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, what a shell reports for a process it killed


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread by the handler :func:`sigterm_interrupts`
    installs: an interrupt (everything that handles a Ctrl-C handles it), told apart only
    in the line and the exit code (``terminated``, :data:`EXIT_TERMINATED`)."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM's handler: cancel the running Spark jobs of this process's SparkContext,
    if one is active (as pyspark's own SIGINT handler does: a job left running would go
    on writing, e.g. a Delta output's data files after their folder was cleaned), then
    raise :class:`Terminated`."""
    context = getattr(sys.modules.get("pyspark"), "SparkContext", None)
    active = getattr(context, "_active_spark_context", None)
    if active is not None:
        with contextlib.suppress(Exception):
            active.cancelAllJobs()
    raise Terminated


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Inside, SIGTERM raises :class:`Terminated` in the main thread (elsewhere, or where
    SIGTERM is ignored, nothing changes); the previous handler is restored after."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def one_line(text: str) -> str:
    first = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    return first or "(no message)"


def _is_spark_error(exc: BaseException) -> bool:
    mod = type(exc).__module__ or ""
    return mod.startswith(("pyspark", "py4j"))


def _spark_text(exc: BaseException) -> str:
    """A Spark error in one line without a value from the data: Spark's and Py4J's Java
    errors by their condition (:func:`dprect.engines.spark.source.spark_message`); Py4J's own
    errors (a lost gateway), which hold no data, by their first line."""
    try:
        from dprect.engines.spark.source import SPARK_ERRORS, spark_message
    except ImportError:  # pragma: no cover - pyspark raised it, so pyspark is there
        return type(exc).__name__
    if isinstance(exc, SPARK_ERRORS):
        return spark_message(exc)
    return one_line(str(exc))


def os_error_number(exc: BaseException) -> int | None:
    """An ``OSError``'s error number; None for another exception, or an ``OSError`` made
    without one (``OSError("text")``; two texts put the first where the number goes)."""
    number = getattr(exc, "errno", None) if isinstance(exc, OSError) else None
    return number if isinstance(number, int) and number else None


def os_error_text(exc: OSError) -> str:
    """An operating-system error in one line from its public parts only: its error
    number, the operating system's words for it (:func:`os.strerror`) and the path(s) it
    names — what ``str()`` of Python's own ``OSError`` says — never the raiser's message:
    a library's ``OSError`` (pyarrow's ``ArrowIOError``, delta-rs's I/O errors) carries
    its own text, which can quote what it read. Without an error number, the class."""
    number = os_error_number(exc)
    if number is None:
        return (f"{type(exc).__name__} (no error number; its message is not shown as it "
                "could quote the data)")
    text = f"[Errno {number}] {os.strerror(number)}"
    if exc.filename is not None:
        text += f": {exc.filename!r}"
        if exc.filename2 is not None:
            text += f" -> {exc.filename2!r}"
    return text


def describe_failure(exc: BaseException) -> tuple[int, str]:
    """Exit code and one-line message for an exception that ended a job.

    dprect's own errors keep their message (they name parameters, columns and paths);
    an operating-system error (one with an error number, or a missing or forbidden path)
    is told by its number and path (:func:`os_error_text`), never its text; a Spark
    error is named by its condition (``Spark failed: ...``, exit 3); an unexpected error
    by its type only, since its text could quote data.
    """
    if isinstance(exc, Terminated):
        return EXIT_TERMINATED, "terminated"
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED, "interrupted"
    if isinstance(exc, DprectError):
        return EXIT_BAD_INPUT, one_line(str(exc))
    if os_error_number(exc) is not None or isinstance(
            exc, FileNotFoundError | PermissionError | IsADirectoryError
            | NotADirectoryError):
        return EXIT_BAD_INPUT, os_error_text(exc)  # type: ignore[arg-type]
    if _is_spark_error(exc):
        return EXIT_SPARK, "Spark failed: " + _spark_text(exc)
    return EXIT_INTERNAL, (f"internal error ({type(exc).__name__}); its message is not shown "
                           "as it could quote the data (DPRECT_DEBUG=1 prints the traceback)")


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def stderr_merged_by_spark_submit() -> bool:
    """Whether this process is spark-submit's Python driver (``PYSPARK_GATEWAY_PORT`` is
    set) with its stderr merged into its stdout, as Spark's ``PythonRunner`` starts it."""
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):
        return False
    try:
        return _same_file(os.fstat(1), os.fstat(2))
    except OSError:
        return False


def _print_on_jvm_stderr(line: str) -> bool:
    """Print ``line`` on the stderr of spark-submit's JVM (through the Spark package's
    py4j helper, imported only under spark-submit); False when it cannot."""
    try:
        from dprect.engines.spark.session import print_on_jvm_stderr
    except ImportError:
        return False
    return print_on_jvm_stderr(line)


def error_stream() -> TextIO | None:
    """spark-submit's own stderr opened for appending, on Linux, when this process's
    stderr is merged into its stdout (:func:`stderr_merged_by_spark_submit`): the parent
    JVM's ``/proc/<parent>/fd/2``, unless that is this stdout. Else None."""
    if not sys.platform.startswith("linux") or not stderr_merged_by_spark_submit():
        return None
    try:
        target = f"/proc/{os.getppid()}/fd/2"
        if _same_file(os.stat(target), os.fstat(1)):
            return None
        return open(target, "a", encoding="utf-8")  # the caller closes it
    except OSError:
        return None


def report_error(line: str) -> None:
    """Write one error line where the person who ran the job reads errors.

    Normally :data:`sys.stderr`. Under spark-submit the driver's stderr is merged into
    spark-submit's stdout, so the line goes to spark-submit's own stderr instead: printed
    by its JVM through py4j (in order with Spark's own log lines, and at the right place
    in a file the JVM writes), else appended to the JVM's stderr (:func:`error_stream`),
    else written to :data:`sys.stderr` after all."""
    sys.stdout.flush()
    if stderr_merged_by_spark_submit():
        if _print_on_jvm_stderr(line):
            return
        stream = error_stream()
        if stream is not None:
            try:
                with stream:
                    print(line, file=stream, flush=True)
                return
            except OSError:
                pass
    print(line, file=sys.stderr, flush=True)
