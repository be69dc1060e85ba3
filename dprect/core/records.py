"""Frozen records made many times a cell, made quicker (issue #42).

A frozen dataclass's generated ``__init__`` sets each field through
``object.__setattr__`` — one call a field, because its own ``__setattr__`` refuses every
assignment. A describe run makes several such records a (group, column) (the released
:class:`~dprect.core.aggregates.Cell`, the cell's :class:`~dprect.core.cell_draws.
CellDraw`, its statistics), and those calls were about 8% of the mechanism's CPU a cell
(py-spy, 3,000 groups × 4 columns, kernels loaded).

:func:`quick_init` gives such a class an ``__init__`` with the very signature (the same
parameters, order, defaults and annotations) that sets the instance's whole ``__dict__``
in ONE ``object.__setattr__`` call. Nothing else of the class changes: it stays frozen
(``__setattr__`` and ``__delattr__`` still refuse), its fields, ``__eq__``, ``__hash__``,
``__repr__``, pickling and ``dataclasses.replace`` are the dataclass's own, and an
instance holds the same attributes with the same values as the generated ``__init__``
would give it (tests/core/test_records.py compares the two on every class it is used
on). Only a class whose generated ``__init__`` that one call reproduces qualifies: frozen,
its ``__init__`` generated (not ``init=False``), no ``__post_init__``, slots or
``InitVar``/``ClassVar`` pseudo-fields, and every field an ``__init__`` parameter taken
by position or keyword (not ``init=False``, not ``kw_only`` — the generated ``__init__``
takes those by keyword only, after the others) without a ``default_factory``, named
neither ``self`` nor ``_set`` (the new ``__init__``'s own names). Anything else is
refused, with a TypeError naming the class (and the field), when the class is
defined.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

_T = TypeVar("_T")


def quick_init(cls: type[_T]) -> type[_T]:
    """``cls`` (a frozen dataclass) with its ``__init__`` setting ``__dict__`` at once
    (module notes); refused (TypeError) where that would not be the same instance."""
    if not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise TypeError(f"quick_init needs a frozen dataclass, got {cls!r}")
    name = cls.__qualname__
    if not cls.__dataclass_params__.init:  # type: ignore[attr-defined]
        raise TypeError(f"quick_init cannot keep {name}'s own __init__ (init=False)")
    if hasattr(cls, "__post_init__") or hasattr(cls, "__slots__"):
        raise TypeError(f"quick_init cannot keep {name}'s __post_init__ or slots")
    fields = dataclasses.fields(cls)
    pseudo = sorted(set(getattr(cls, "__dataclass_fields__", {}))
                    - {f.name for f in fields})
    if pseudo:
        raise TypeError(f"quick_init cannot keep {name}.{pseudo[0]}, an InitVar or "
                        "ClassVar pseudo-field")
    params, defaults = [], {}
    for f in fields:
        why = _refused(f)
        if why:
            raise TypeError(f"quick_init cannot keep {name}.{f.name}: {why}")
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            defaults[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
    body = ", ".join(f"{f.name!r}: {f.name}" for f in fields)
    source = (f"def __init__(self, {', '.join(params)}):\n"
              f"    _set(self, '__dict__', {{{body}}})\n")
    namespace: dict[str, Any] = {}
    exec(source, {"_set": object.__setattr__, **defaults}, namespace)
    init = namespace["__init__"]
    made = cls.__init__
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = made.__doc__
    init.__annotations__ = dict(made.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


#: the names the one-call ``__init__`` itself uses: its instance and its setter
_OWN_NAMES = frozenset({"self", "_set"})


def _refused(f: dataclasses.Field[Any]) -> str:
    """Why the one-call ``__init__`` cannot take field ``f`` as the dataclass's own
    ``__init__`` does ("" where it can)."""
    if not f.init:
        return "init=False (not an __init__ parameter)"
    if f.kw_only:
        return "kw_only (a keyword-only __init__ parameter)"
    if f.default_factory is not dataclasses.MISSING:
        return "a default_factory (a fresh default per instance)"
    if f.name in _OWN_NAMES:
        return "a name the one-call __init__ uses itself"
    return ""


__all__ = ["quick_init"]
