"""One test of an empty value (:func:`dprect.core.validation.is_blank`, s40-edges item 3):
a listed group value (``app.groups.check_no_empty_group``), a class and a positive label
(``core.labels``) and an entry of a comma-separated option (``app.options.comma_entries``)
are refused exactly when it says so — each front in its own words, naming no value."""

from __future__ import annotations

import inspect

import pytest

from dprect.app import groups, options
from dprect.app.groups import check_no_empty_group
from dprect.app.options import EmptyEntryError, comma_entries
from dprect.core import labels
from dprect.core.errors import ParameterError
from dprect.core.labels import LabelText, check_classes, check_label_value
from dprect.core.validation import is_blank

#: white space of several kinds (str.strip's), and look-alikes that are not white space
BLANK = ["", " ", "\t", "\n", "   ", "\u3000", "\xa0", "\u2028"]
NOT_BLANK = ["a", " a ", "0", "\u200b", "\u200ba", "-"]


def test_the_predicate_marks_white_space_only() -> None:
    assert [is_blank(t) for t in BLANK] == [True] * len(BLANK)
    assert [is_blank(t) for t in NOT_BLANK] == [False] * len(NOT_BLANK)
    assert not any(is_blank(v) for v in (None, 0, 0.0, False, b"", b" ", []))


def _refusal(check) -> str | None:
    try:
        check()
    except ParameterError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("text", BLANK + NOT_BLANK, ids=repr)
def test_every_front_refuses_what_the_predicate_marks_in_its_own_words(text: str) -> None:
    said = {
        "group": _refusal(lambda: check_no_empty_group(["g", text], "--groups")),
        "label": _refusal(lambda: check_label_value(text)),
        "label text": _refusal(lambda: check_label_value(LabelText(text))),
        "class": _refusal(lambda: check_classes(["zz", LabelText(text)])),
        "entry": _refusal(lambda: comma_entries(f"x,{text}", "name", "--features: ")),
    }
    if not is_blank(text):
        assert said == dict.fromkeys(said), said
        return
    assert said["group"] == ("--groups holds an empty group value (e.g. 'a,,b' or a comma "
                             "at an end): list only non-empty values")
    assert said["label"] == said["label text"] == ("the positive label is empty or blank: "
                                                   "give a label value")
    assert said["class"] is not None and said["class"].startswith(
        "the list of classes holds an empty class")
    assert said["entry"] is not None and said["entry"].startswith("--features: an empty name")
    with pytest.raises(EmptyEntryError):  # argparse's type error too
        comma_entries(text, "name")


@pytest.mark.parametrize(("module", "function"), [
    (groups, "check_no_empty_group"), (options, "comma_entries"), (labels, "_blank")])
def test_each_front_asks_the_one_predicate(module: object, function: str) -> None:
    """No front spells its own test of an empty text (three did: ``not v.strip()``,
    ``not all(entries)``, ``not text.strip()``)."""
    source = inspect.getsource(getattr(module, function))
    assert "is_blank" in source and module.is_blank is is_blank  # type: ignore[attr-defined]
    for own in ("not v.strip()", "not all(", "not text.strip()"):
        assert own not in source, own
