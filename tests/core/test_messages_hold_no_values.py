"""No value from the data in the text of an internal check (issue #41, the product's first
promise: a message is built from the schema, the parameters and the paths only).

Each check below guards an invariant whose operand can come from the data — a histogram
key, a count of values, a bin or grid index, a candidate's rank, a sampler's argument
(an exponential mechanism's weight is a count), a label array's row count. Each case
breaks the check with a distinctive number and asserts that the number is not in the
text; putting the value back into any of these messages fails here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dprect.app.api import positive_mask
from dprect.core.bounds import Histogram, bound_pieces
from dprect.core.domains import FloatBins
from dprect.core.interior_point import Pieces, interior_point_pieces
from dprect.core.randomness import RandomSource
from dprect.core.tail_bounds import CandidateStream

#: a number no parameter of the cases below spells
MARK = 987_653


def _histogram_key() -> None:
    hist = Histogram(np.array([3, MARK], dtype=np.int64), np.array([2, 5], dtype=np.int64))
    bound_pieces(hist, 64, Fraction(1, 10), "lower")


def _ip_total() -> None:
    interior_point_pieces(np.zeros(0, dtype=np.uint64), epsilon=1.0, grid_size=8,
                          pad_count=10**19 + MARK, pad_index=0)  # > 2**62


def _grid_point() -> None:
    pieces = Pieces(np.array([0], dtype=np.uint64), np.array([4], dtype=np.uint64),
                    np.array([0], dtype=np.int64), 1.0, 4)
    pieces.point_probability(MARK)


def _bin_index() -> None:
    FloatBins(4).lower_value(MARK)


def _candidate() -> None:
    stream = CandidateStream(0.0, "upper")
    stream.value(stream.count + MARK if stream.complete else 10**9 + MARK)


def _label_rows() -> None:
    positive_mask(np.zeros((MARK, 2)), 1)


def _sampler(call: Callable[[RandomSource], object]) -> Callable[[], None]:
    def run() -> None:
        call(RandomSource())
    return run


#: case -> (the call that breaks the check, a fragment of the check's own message)
CASES: dict[str, tuple[Callable[[], None], str]] = {
    "bounds: histogram key outside the grid": (_histogram_key, "histogram key"),
    "interior point: too many values": (_ip_total, "at most 2**62"),
    "interior point: grid point outside": (_grid_point, "outside the grid"),
    "floatbins: bin index outside": (_bin_index, "bin index"),
    "tail bounds: candidate past the last": (_candidate, "last candidate"),
    "api: labels not 1-D": (_label_rows, "1-D array"),
    "randbelow": (_sampler(lambda r: r.randbelow(-MARK)), "randbelow"),
    "randbits": (_sampler(lambda r: r.randbits(-MARK)), "randbits"),
    "stream_seeds": (_sampler(lambda r: r.stream_seeds(-MARK)), "stream_seeds"),
    "bernoulli": (_sampler(lambda r: r.bernoulli(Fraction(MARK, 7))), "bernoulli"),
    "bernoulli_exp": (_sampler(lambda r: r.bernoulli_exp(Fraction(-MARK))), "bernoulli_exp"),
    "geometric_exp": (_sampler(lambda r: r.geometric_exp(-MARK, 1)), "geometric_exp"),
    "discrete_laplace": (_sampler(lambda r: r.discrete_laplace(Fraction(-MARK))),
                         "discrete_laplace"),
    "discrete_laplace_int": (_sampler(lambda r: r.discrete_laplace_int(-MARK, 1)),
                             "discrete_laplace_int"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_message_does_not_quote_the_value(case: str) -> None:
    call, fragment = CASES[case]
    with pytest.raises(Exception) as caught:  # each check raises its own type
        call()
    text = str(caught.value)
    assert fragment in text, text  # the check meant, not another one on the way
    assert str(MARK) not in text and f"{MARK:,}" not in text, text


def test_the_audit_bound_does_not_quote_its_counts() -> None:
    pytest.importorskip("scipy")
    from dprect.core.audit import clopper_pearson

    with pytest.raises(ValueError) as caught:
        clopper_pearson(MARK, 3, 0.05)
    assert str(MARK) not in str(caught.value)


#: what a message's formatted value may not read: an array's shape (its row count), a
#: histogram's keys or counts, a total of rows, the length of the values read (v, x, rows)
DATA_READS = re.compile(r"\.shape\b|\bkeys\[|\bcounts\b|\.total\b|\blen\((v|x|rows)\)")
ROOT = Path(__file__).resolve().parents[2] / "dprect"


def _messages(tree: ast.AST) -> Iterator[tuple[int, ast.AST]]:
    """Each raised exception and each warn/progress call of a module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            yield node.lineno, node.exc
        elif isinstance(node, ast.Call) and (getattr(node.func, "attr", None) or getattr(
                node.func, "id", None)) in ("warn", "progress", "say"):
            yield node.lineno, node


def test_no_message_formats_a_data_read() -> None:
    """The pattern behind the cases above, over the whole package: no f-string of a
    message formats an expression that reads the data's size or a histogram."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for line, message in _messages(ast.parse(source)):
            for part in ast.walk(message):
                if isinstance(part, ast.FormattedValue):
                    text = ast.get_source_segment(source, part.value) or ""
                    if DATA_READS.search(text):
                        found.append(f"{path.relative_to(ROOT)}:{line}: {text}")
    assert not found, found
