"""One worker process of the driver's pool (:mod:`dprect.engines.driver_pool`).

Started as ``python -c BOOT``: it reads the parent's ``sys.path`` (a pickle on standard
input, so it imports what the parent imports, zipped ``--py-files`` included), then serves
tasks until its input ends — each a pickle of (function, arguments), answered on the
original standard output by a pickle of (True, result) or (False, the exception). The
process's own standard output is pointed at its standard error first, so that nothing a
library prints can mix with the answers. It ignores SIGINT from its first statement on: a
Ctrl-C at a terminal reaches the whole process group, and the parent alone answers it
(one line, exit 130) and ends its workers (:mod:`dprect.engines.driver_pool`) — a worker
never prints a traceback of it. It never imports the parent's ``__main__`` (a
user's script runs once, in the parent, guarded or not).
"""

from __future__ import annotations

import importlib
import os
import pickle
import sys
from typing import IO

#: what the parent runs with ``python -c``
BOOT = ("import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        "import pickle, sys; sys.path[:0] = pickle.load(sys.stdin.buffer); "
        "from dprect.engines.driver_worker import serve; serve()")


def warm(module: str) -> None:
    """Import ``module``: what the parent sends first, so that the import overlaps its
    work (a worker is started only for a large run)."""
    importlib.import_module(module)


def serve(tasks: IO[bytes] | None = None, answers: IO[bytes] | None = None) -> None:
    """Answer every task on ``tasks`` (standard input) on ``answers`` (the process's
    standard output, kept aside before it is pointed at standard error)."""
    if answers is None:
        answers = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    source = sys.stdin.buffer if tasks is None else tasks
    while True:
        try:
            fn, args = pickle.load(source)
        except EOFError:
            return
        try:
            answer: tuple[bool, object] = (True, fn(*args))
        except Exception as error:  # the parent raises it: the same error as on its thread
            answer = (False, error)
        try:
            pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
            answers.flush()
        except BrokenPipeError:  # the parent is gone or closed the pool: nothing to say
            return


__all__ = ["BOOT", "serve", "warm"]
