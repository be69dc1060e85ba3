"""quick_init (dprect/core/records.py): the quicker __init__ of the frozen records a
describe cell makes gives the very instance the dataclass's own __init__ gives (issue #42)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import random
import re
from dataclasses import KW_ONLY, dataclass, field
from typing import ClassVar

import numpy as np
import pytest

from dprect.core.aggregates import Cell
from dprect.core.cell_draws import CellDraw
from dprect.core.describe_stats import BinStatistics, CellStatistics
from dprect.core.records import quick_init

QUICK = [Cell, CellDraw, CellStatistics, BinStatistics]


def _twin(cls: type) -> type:
    """The same dataclass as ``cls`` with the generated (slow) __init__."""
    return dataclasses.make_dataclass(
        cls.__name__, [(f.name, f.type, field(default=f.default, compare=f.compare,
                                              repr=f.repr))
                       if f.default is not dataclasses.MISSING else (f.name, f.type)
                       for f in dataclasses.fields(cls)], frozen=True)


@pytest.mark.parametrize("cls", QUICK)
def test_quick_classes_use_the_one_call_init(cls: type) -> None:
    # fails where the class keeps the dataclass's own __init__ (a setattr a field)
    assert "_set" in cls.__init__.__code__.co_names
    assert cls.__init__.__code__.co_names.count("_set") == 1


@pytest.mark.parametrize("cls", QUICK)
def test_same_signature_as_the_dataclass_init(cls: type) -> None:
    ours, theirs = inspect.signature(cls.__init__), inspect.signature(_twin(cls).__init__)
    assert [(p.name, p.default, p.kind) for p in ours.parameters.values()] == \
        [(p.name, p.default, p.kind) for p in theirs.parameters.values()]
    assert cls.__init__.__annotations__ == _twin(cls).__init__.__annotations__


@pytest.mark.parametrize("cls", QUICK)
def test_same_instance_as_the_dataclass_init(cls: type) -> None:
    twin, gen = _twin(cls), random.Random(4)
    fields = dataclasses.fields(cls)
    required = [f for f in fields if f.default is dataclasses.MISSING]
    for _ in range(20):
        # every count of the defaulted fields given, positionally and by keyword
        given = len(required) + gen.randrange(len(fields) - len(required) + 1)
        args = [object() if gen.random() < 0.5 else gen.random() for _ in range(given)]
        ours, theirs = cls(*args), twin(*args)
        assert vars(ours) == vars(theirs)
        assert list(vars(ours)) == [f.name for f in fields]
        kw = {f.name: a for f, a in zip(fields, args, strict=False)}
        assert vars(cls(**kw)) == vars(theirs)


def test_released_cell_behaves_as_before() -> None:
    cell = Cell(1.0, 2.0, 3.0, 4.0, 5.0, (("count", 1.0, 5.0),))
    assert cell == Cell(1.0, 2.0, 3.0, 4.0, 5.0, (("count", 1.0, 5.0),))
    assert hash(cell) == hash(Cell(1.0, 2.0, 3.0, 4.0, 5.0, (("count", 1.0, 5.0),)))
    assert repr(cell) == ("Cell(lower=1.0, upper=2.0, count=3.0, sum=4.0, mean=5.0, "
                          "intervals=(('count', 1.0, 5.0),), variance=None, std=None)")
    assert pickle.loads(pickle.dumps(cell)) == cell
    assert dataclasses.replace(cell, std=1.5).std == 1.5
    assert dataclasses.asdict(cell)["intervals"] == (("count", 1.0, 5.0),)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cell.lower = 0.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del cell.upper  # type: ignore[misc]
    with pytest.raises(TypeError):
        Cell(1.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Cell(1.0, 2.0, nope=3)  # type: ignore[call-arg]


def test_statistics_compare_as_declared() -> None:
    z = np.zeros(0, dtype=np.int64)
    a = CellStatistics(z, z, z)
    assert a.streams is None and a.squares is None
    assert repr(a) == repr(_twin(CellStatistics)(z, z, z))


def test_refuses_what_it_cannot_keep() -> None:
    @dataclass
    class Mutable:
        a: int

    @dataclass(frozen=True)
    class Post:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True)
    class Factory:
        a: list[int] = field(default_factory=list)

    @dataclass(frozen=True)
    class NoInit:
        a: int = field(default=0, init=False)

    @dataclass(frozen=True)
    class Var:
        a: int
        b: ClassVar[int] = 1

    @dataclass(frozen=True, slots=True)
    class Slots:
        a: int

    for cls, why in ((Mutable, "needs a frozen dataclass"), (Post, "Post's __post_init__"),
                     (Factory, "Factory.a: a default_factory"), (NoInit, "NoInit.a: init=False"),
                     (Var, "Var.b, an InitVar or ClassVar"),
                     (Slots, "Slots's __post_init__ or slots"),
                     (int, "needs a frozen dataclass")):
        with pytest.raises(TypeError, match=re.escape(why)):
            quick_init(cls)  # type: ignore[type-var]


@dataclass(frozen=True)
class _KeywordField:
    a: int
    b: int = field(default=0, kw_only=True)


@dataclass(frozen=True)
class _KeywordFirst:  # the generated __init__ is (self, b, *, a=0)
    a: int = field(default=0, kw_only=True)
    b: int = 1


@dataclass(frozen=True)
class _KeywordMarker:
    a: int
    _: KW_ONLY
    b: int


@dataclass(frozen=True, kw_only=True)
class _KeywordClass:
    a: int


@dataclass(frozen=True, init=False)
class _OwnInit:
    a: int

    def __init__(self, a: str) -> None:
        object.__setattr__(self, "a", int(a))


@dataclass(frozen=True)
class _SelfNamed:
    self: int


@dataclass(frozen=True)
class _SetNamed:
    _set: int


@pytest.mark.parametrize(("cls", "named"), [
    (_KeywordField, "_KeywordField.b: kw_only"), (_KeywordFirst, "_KeywordFirst.a: kw_only"),
    (_KeywordMarker, "_KeywordMarker.b: kw_only"), (_KeywordClass, "_KeywordClass.a: kw_only"),
    (_OwnInit, "_OwnInit's own __init__"), (_SelfNamed, "_SelfNamed.self: a name"),
    (_SetNamed, "_SetNamed._set: a name")])
def test_refuses_fields_it_would_take_otherwise(cls: type, named: str) -> None:
    """Keyword-only fields (the generated __init__ takes them by keyword only, after the
    others), a class's own __init__, and the one-call __init__'s own names: refused when
    the class is defined, naming the class and the field — not an __init__ that takes a
    keyword-only field by position, a SyntaxError, or an instance set by the wrong call."""
    before = cls.__init__
    with pytest.raises(TypeError, match=re.escape(f"quick_init cannot keep {named}")):
        quick_init(cls)
    assert cls.__init__ is before

