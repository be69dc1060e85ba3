"""Temporary folders a run makes for a library (Spark SQL's warehouse of a local session
dprect starts, spark-submit's included: :mod:`dprect.engines.spark.session`) and removes
when its process ends.

:func:`remove_at_exit` names one; :func:`remove_now` removes every one named so far. It
runs at the interpreter's exit (``atexit``) and is called by the two ends that skip the
interpreter's teardown, and so ``atexit`` — the console script's
(:func:`dprect.app.cli.run`) and a job's (:func:`dprect.app.jobs_support.exit_now`), which
end with ``os._exit`` (delta-rs's native threads can abort a normal teardown)."""

from __future__ import annotations

import atexit
import shutil
import threading

_FOLDERS: list[str] = []
_LOCK = threading.Lock()


def remove_at_exit(folder: str) -> None:
    """Remove ``folder`` (and what it holds) when the process ends (:func:`remove_now`)."""
    with _LOCK:
        _FOLDERS.append(folder)


def remove_now() -> None:
    """Remove every folder :func:`remove_at_exit` named (one already gone is skipped)."""
    with _LOCK:
        folders = list(_FOLDERS)
        _FOLDERS.clear()
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


atexit.register(remove_now)

__all__ = ["remove_at_exit", "remove_now"]
