"""What every engine's prepared run shares: a context manager that, when the run ends,
releases what the engine holds (cached rows) and then runs ``on_close`` (e.g. stops a
Spark session started for this run) — even when the release fails."""

from __future__ import annotations

from collections.abc import Callable
from typing import Self


class PreparedRun:
    """Base of a table read and checked with its engine ready (a route's ``open``)."""

    def __init__(self, on_close: Callable[[], None] | None = None) -> None:
        self.on_close = on_close

    def release(self) -> None:
        """Release what the engine holds (nothing, unless a subclass says otherwise)."""

    def close(self) -> None:
        try:
            self.release()
        finally:
            if self.on_close is not None:
                self.on_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["PreparedRun"]
