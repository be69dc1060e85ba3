"""The listed groups resolved against a group column's kind
(dprect/engines/bounds_input.py ``resolve_groups``): the lists resolved in C's loops
(``_distinct_values``, issue #42) give the very values of the item-by-item walk, and a
list that walk refuses is refused with its message; ``repeat_at``'s set shortcut finds
the same first repeat."""

from __future__ import annotations

import math
from typing import Any

import pytest

from dprect.core.errors import ParameterError
from dprect.core.validation import repeat_at
from dprect.engines import bounds_input

LISTS = [
    ["1", "2.5", "-0", "0.1", " 7 ", "1e3", "1_000.5", "-1e-310", "+4", "9007199254740993"],
    ["a", "b", "A", " a", "1", "1.0"],
    [str(i) for i in range(5000)],
    [],
    ["1", "1.0"], ["0", "-0.0"], ["x", "x"], ["1", "nan"], ["inf"], ["2", "two"],
    ["true", "yes"], ["1", "", "2"],
]


def _walked(groups: list[str], kind: str, monkeypatch: pytest.MonkeyPatch,
            integral: bool = False) -> Any:
    """The item-by-item walk's answer: its values, or its refusal's message."""
    with monkeypatch.context() as m:
        m.setattr(bounds_input, "_distinct_values", lambda *a: None)
        return _answer(groups, kind, integral)


def _answer(groups: list[str], kind: str, integral: bool = False) -> Any:
    try:
        return bounds_input.resolve_groups(groups, kind, "g", integral=integral)
    except ParameterError as exc:
        return str(exc)


@pytest.mark.parametrize("integral", [False, True])
@pytest.mark.parametrize("kind", ["numeric", "string", "boolean", "null"])
def test_the_fast_lists_are_the_walks_values(kind: str, integral: bool,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The same values or the same refusal either way — for a column of an integer type
    (``integral``) too, where a number with a fraction is refused."""
    for groups in LISTS:
        fast = _answer(groups, kind, integral)
        walked = _walked(groups, kind, monkeypatch, integral)
        assert fast == walked, (kind, groups)
        if isinstance(fast, list):  # the same values, type and sign included
            assert [(type(v), math.copysign(1, v) if isinstance(v, float) else v)
                    for v in fast] == [(type(v), math.copysign(1, v)
                                        if isinstance(v, float) else v) for v in walked]
    assert _answer(["-0"], "numeric") == [0.0]
    assert "holds integers" in _answer(["1", "2.5"], "numeric", integral=True)
    assert math.copysign(1, _answer(["-0"], "numeric")[0]) == 1.0


def test_repeat_at_finds_the_first_repeat() -> None:
    assert repeat_at([]) is None and repeat_at(["a", "b"]) is None
    assert repeat_at(["a", "b", "c", "b", "a"]) == 3
    assert repeat_at(iter([1, 2, 1.0])) == 2  # a generator, equal values
    assert repeat_at(x for x in "abca") == 3
    with pytest.raises(TypeError):
        repeat_at([[1], [1]])
