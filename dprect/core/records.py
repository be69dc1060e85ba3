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
on). Only classes without ``__post_init__``, ``InitVar``, ``default_factory``, init-less
fields or slots qualify; anything else is refused when the class is defined.
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
    if hasattr(cls, "__post_init__") or hasattr(cls, "__slots__"):
        raise TypeError(f"quick_init cannot keep {cls.__name__}'s __post_init__ or slots")
    fields = dataclasses.fields(cls)
    every = {f.name for f in getattr(cls, "__dataclass_fields__", {}).values()}
    if every != {f.name for f in fields}:  # an InitVar or ClassVar pseudo-field
        raise TypeError(f"quick_init cannot keep {cls.__name__}'s InitVar or ClassVar "
                        "fields")
    params, defaults = [], {}
    for f in fields:
        if not f.init or f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"quick_init cannot keep {cls.__name__}.{f.name}'s "
                            "default factory or init=False")
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


__all__ = ["quick_init"]
