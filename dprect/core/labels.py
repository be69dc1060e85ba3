"""The positive label: what it may be, and how it reads against a label column's type.

A positive label is a number, a string or a boolean, or :class:`LabelText` (text from a
command line or a config file, read against the column's type). Every decision here
depends on the label and the column's *type* (its schema) only, never on a row's value.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import numpy as np

from dprect.core.errors import ParameterError
from dprect.core.validation import is_blank

#: what a label column can hold, read from its type (its schema), never from its values
LABEL_KINDS = ("numeric", "boolean", "string", "null", "any")
_TRUE_WORDS = frozenset({"1", "true", "t", "yes", "y"})
_FALSE_WORDS = frozenset({"0", "false", "f", "no", "n"})

#: a positive label as a caller gives it
PositiveLabel = bool | int | float | str


@dataclass(frozen=True)
class LabelText:
    """A positive label given as text (the command line, a config string): it is read
    against the label column's type by :func:`resolve_positive_label` — ``yes``/``true``
    is 1 for a numeric column and true for a boolean one; a string column takes the text
    as it is."""

    text: str


def check_label_value(value: object) -> PositiveLabel | LabelText:
    """A positive label must be a number, a string or a boolean (or :class:`LabelText`);
    a number must be finite; a text must not be empty or blank (an empty CSV cell is
    null to Spark's reader and "" to Arrow's: the engines would not agree on it, as
    for an empty group or class). Checked without any data."""
    if _blank(value):
        raise ParameterError("the positive label is empty or blank: give a label value")
    if isinstance(value, LabelText | bool | str):
        return value
    if isinstance(value, numbers.Real):
        if not math.isfinite(float(value)):
            raise ParameterError(f"the positive label must be finite, got {value!r}")
        return value  # type: ignore[return-value]
    raise ParameterError("the positive label must be a number, a string or a boolean, "
                         f"got {type(value).__name__}")


def _blank(value: object) -> bool:
    """Whether ``value`` is an empty or blank text, a str or :class:`LabelText`'s
    (:func:`~dprect.core.validation.is_blank`)."""
    return is_blank(value.text if isinstance(value, LabelText) else value)


def _describe(value: object) -> str:
    kind = ("a boolean" if isinstance(value, bool) else "a string" if isinstance(value, str)
            else "a number")
    return f"{value!r} ({kind})"


def resolve_positive_label(value: object, kind: str, column: str, *, integral: bool = False,
                           single: bool = False) -> bool | float | int | str | None:
    """The positive label as a value comparable with a label column of ``kind`` (one of
    :data:`LABEL_KINDS`, from the column's *type*), in the column's own type: for a
    numeric column an exact int if its type holds integers (``integral``, from its
    schema: an integer type or a decimal of scale 0), else a float (compared as float64;
    a float32 column's — ``single``, from its schema — rounded to its nearest float32 as
    a group value is, ties to even, and None past float32's range: no row holds it; the
    column's values are widened exactly, so ``0.1`` names the rows of float32(0.1)); a
    bool for a
    boolean column, a str for a string one. None for a column of the null type (it holds
    no value, so no row is positive). A number with a fraction for a column of an
    integer type, which no row can hold, is refused: it would fit on no positive row and
    spend the budget for an empty rectangle (as a fractional group value is refused,
    :func:`dprect.engines.bounds_input.resolve_groups`); an integer beyond the type's
    range is kept, a label no row holds (as any label no row holds).

    Compatible pairs: numeric column and a number or a boolean (true is 1); boolean column
    and a boolean, or the number 0 or 1; string column and a string. Text
    (:class:`LabelText`) is parsed against the column's type. Anything else is refused
    with :class:`ParameterError` — a decision from the schema and the parameter only.
    """
    read = _resolve(value, kind, column, integral)
    if single and kind == "numeric" and not integral and isinstance(read, float):
        return _nearest_float32(read)
    return read


def _nearest_float32(number: float) -> float | None:
    """``number``'s nearest float32 (ties to even) as the float64 it widens to; None
    past float32's range (no float32 row holds it; :func:`resolve_positive_label`)."""
    with np.errstate(over="ignore"):
        rounded = float(np.float32(number))
    return rounded if math.isfinite(rounded) else None


def _resolve(value: object, kind: str, column: str, integral: bool
             ) -> bool | float | int | str | None:
    """:func:`resolve_positive_label` before a float32 column's rounding."""
    value = check_label_value(value)
    spelling = "positive label (--positive-label / positive_label)"
    if kind == "null":
        return None
    if isinstance(value, LabelText):
        text = value.text.strip()
        word = text.lower()
        if kind in ("string", "any"):
            return value.text
        if kind == "boolean":
            if word in _TRUE_WORDS:
                return True
            if word in _FALSE_WORDS:
                return False
            raise ParameterError(
                f"the label column {column!r} is boolean: the {spelling} must be true or "
                f"false (or yes/no, 1/0), got {value.text!r}")
        if word in _TRUE_WORDS - {"1"}:
            return _typed(1.0, integral)
        if word in _FALSE_WORDS - {"0"}:
            return _typed(0.0, integral)
        try:
            number = float(text)
        except ValueError:
            raise ParameterError(
                f"the label column {column!r} is numeric: the {spelling} must be a number "
                f"(or true/false), got {value.text!r}") from None
        if not math.isfinite(number):
            raise ParameterError(f"the {spelling} must be finite, got {value.text!r}")
        if integral:  # the text's own integer, not its float64's
            return _exact(text, column, spelling, value.text)
        return _typed(number, integral)
    if kind == "any":
        return value
    if kind == "numeric":
        if isinstance(value, str):
            raise ParameterError(
                f"the label column {column!r} is numeric, but the {spelling} is "
                f"{_describe(value)}; give a number")
        if integral and isinstance(value, numbers.Integral):
            return int(value)
        return _typed(_whole(float(value), integral, column, spelling, value), integral)
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if not isinstance(value, str) and float(value) in (0.0, 1.0):
            return float(value) == 1.0
        raise ParameterError(
            f"the label column {column!r} is boolean, but the {spelling} is "
            f"{_describe(value)}; give true or false")
    if kind == "string":
        if isinstance(value, str):
            return value
        raise ParameterError(
            f"the label column {column!r} holds strings, but the {spelling} is "
            f"{_describe(value)}; give the label as a string")
    raise ParameterError(f"unknown label column kind {kind!r}")


#: where the type read by a refusal of a fractional value comes from — said in the
#: message, as a CSV column's type depends on the data (docs/privacy.md §8, "Not protected")
TYPE_SOURCE = ("the column's type is its schema's; a CSV file's is inferred from its "
               "values: give Parquet or Delta for a declared type")


def _whole(number: float, integral: bool, column: str, spelling: str, given: object
           ) -> float:
    """``number``, refused if it has a fraction and the column holds integers (the
    message names the column, the label given and :data:`TYPE_SOURCE`, never a row)."""
    if integral and not number.is_integer():
        raise ParameterError(f"the label column {column!r} holds integers: the {spelling} "
                             f"{given!r} is not one (no row could match it; {TYPE_SOURCE})")
    return number


def _typed(number: float, integral: bool) -> float | int:
    """A whole or any finite ``number`` in the column's type: an int for a column of an
    integer type, else the float itself."""
    return int(number) if integral else number


#: an integer label for a column of an integer type is kept exact up to this decimal
#: exponent (past every integer type's range and decimal(38,0)'s: it matches no row)
_LARGEST_EXPONENT = 40


def _exact(text: str, column: str, spelling: str, given: object) -> int:
    """A label's text for a column of an integer type, as its exact integer (refused
    with a fraction, as :func:`_whole` refuses it)."""
    try:
        exact = Decimal(text.strip().replace("_", ""))
    except InvalidOperation:
        exact = Decimal(float(text.strip()))
    if exact != exact.to_integral_value():
        _whole(0.5, True, column, spelling, given)
    if exact.adjusted() > _LARGEST_EXPONENT:
        exact = Decimal(10) ** (_LARGEST_EXPONENT + 1)  # no row holds it either way
    return int(exact)


#: the most classes one run takes (a plot, a table row and a run per class)
MAX_CLASSES = 256


def label_key(value: object) -> str:
    """A class's name in a result (its JSON key): the label as text, spelled as a command
    line gives it (``true``/``false``, a number's shortest spelling, a string as is)."""
    if isinstance(value, LabelText):
        return value.text
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        f = float(value)
        return str(int(f)) if f.is_integer() and abs(f) < 2**53 else repr(f)
    return str(value)


def check_classes(classes: object) -> list[PositiveLabel | LabelText]:
    """The PUBLIC list of classes, checked without data: a non-empty sequence (not a
    string) of labels (:func:`check_label_value`), at most :data:`MAX_CLASSES`, no class
    twice (compared by :func:`label_key`), and no two classes that a label column of any
    type reads as the same value (``1`` and ``true``, ``"1"`` and ``"1.0"``): the classes'
    rows must be disjoint whatever the column's type, or the one charge would not hold.
    Two classes given as text (:class:`LabelText`: the command line's, a job config's) are
    read against the column's type, so their pair is checked where that type is known —
    by the engines, from the schema, before anything is charged
    (:func:`check_class_pairs` with the column's kind), the refusal naming that kind."""
    if classes is None or isinstance(classes, str | bytes | LabelText):
        raise ParameterError("classes must be a list of labels (the PUBLIC list of classes)")
    try:
        listed = list(classes)  # type: ignore[call-overload]
    except TypeError:
        raise ParameterError("classes must be a list of labels (the PUBLIC list of "
                             "classes)") from None
    if not listed:
        raise ParameterError("the list of classes is empty")
    if len(listed) > MAX_CLASSES:
        raise ParameterError(f"at most {MAX_CLASSES} classes in one run")
    if any(map(_blank, listed)):
        # as an empty listed group is (dprect.app.groups.check_no_empty_group): 'a,,b'
        # was skipped on the command line but read as a class from a list (checked before
        # each class as a label, whose own refusal of an empty label names no class)
        raise ParameterError("the list of classes holds an empty class (e.g. 'a,,b' or a "
                             "comma at an end): list only non-empty classes")
    values = [check_label_value(v.item() if isinstance(v, np.generic) else v)
              for v in listed]
    keys = [label_key(v) for v in values]
    seen: set[str] = set()
    for k in keys:
        if k in seen:
            raise ParameterError(f"class {k!r} is listed twice")
        seen.add(k)
    check_class_pairs(values, texts=False)
    return values


def check_class_pairs(values: Sequence[object], kind: str | None = None,
                      column: str = "label", *, integral: bool = False,
                      single: bool = False, texts: bool = True) -> None:
    """Refuse two classes that a label column of ``kind`` (from its schema; ``integral``:
    its type holds integers only) reads as one label — ``yes`` and ``true`` on a boolean
    column, ``1`` and ``1.0`` on a numeric one, two numbers of one nearest float32 on a
    float32 column (``single``) — naming the column and its kind: the
    classes' rows must be disjoint, or the one charge would not hold. ``kind`` None: every
    kind a column can have (numbers compared as float64, which an integer type's exact
    integers only separate further), the message naming the first kind that reads the
    pair as one; ``texts`` False leaves a pair of two :class:`LabelText` to the check
    with the column's kind. A class that ``kind`` cannot read is left to its own
    refusal. Decided from the list and the column's type only."""
    kinds = ("numeric", "boolean", "string", "any") if kind is None else (kind,)
    if "null" in kinds:
        return  # no row is any class's
    for each in kinds:
        read: dict[object, object] = {}
        for v in values:
            try:
                r = resolve_positive_label(v, each, column,
                                           integral=integral and kind is not None,
                                           single=single and kind is not None)
            except ParameterError:
                continue  # this class cannot be read against that type (refused there)
            if r is None:
                continue  # past float32's range: no row is this class's
            same = r if kind is not None and each == "numeric" and integral \
                else float(r) if isinstance(r, bool | int | float) else r
            if same in read:
                first = read[same]
                if not texts and isinstance(first, LabelText) and isinstance(v, LabelText):
                    continue
                where = f"a {each} column" if kind is None \
                    else f"the label column {column!r} ({_KIND_NAMES.get(each, each)}" \
                    + (", float32: a number read as its nearest float32)" if single
                       and each == "numeric" and not integral else ")")
                raise ParameterError(f"classes {label_key(first)!r} and {label_key(v)!r} "
                                     f"name the same label of {where}; list each label "
                                     "once")
            read[same] = v


#: a label column's kind as a refusal names it
_KIND_NAMES = {"numeric": "a numeric column", "boolean": "a boolean column",
               "string": "a string column", "any": "an untyped column"}


__all__ = [
    "LABEL_KINDS",
    "MAX_CLASSES",
    "TYPE_SOURCE",
    "LabelText",
    "PositiveLabel",
    "check_class_pairs",
    "check_classes",
    "check_label_value",
    "label_key",
    "resolve_positive_label",
]
