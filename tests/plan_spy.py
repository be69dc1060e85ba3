"""Count the calls of the one planning function, :func:`dprect.core.planner.plan`,
wherever a module holds it (``from dprect.core.planner import plan`` binds a copy)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest


def count_plans(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Replace ``plan`` everywhere by a spy for the rest of the test; returns the list
    the spy appends one entry (the budget asked for) to per call."""
    import dprect.app.flow  # noqa: F401 — the callers, imported before the spy is set
    import dprect.core.planner as planner

    original = getattr(planner.plan, "spied", planner.plan)
    calls: list[dict[str, Any]] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        made = original(*args, **kwargs)
        calls.append(made.request)
        return made

    spy.spied = original  # type: ignore[attr-defined]
    for module in list(sys.modules.values()):
        for attr, value in list(getattr(module, "__dict__", {}).items()):
            if value is original or (isinstance(value, types.FunctionType)
                                     and getattr(value, "spied", None) is original):
                monkeypatch.setattr(module, attr, spy)
    return calls
