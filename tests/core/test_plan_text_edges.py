"""The plan's text at extreme but valid options (s51-plan): large planned counts print in
scientific notation past LARGE_COUNT (never below the count needed), the columns stay
apart, the JSON record keeps the exact numbers and stays strict JSON."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from fractions import Fraction

import pytest
from cli_run import run

from dprect.core.expectation import (
    LARGE_COUNT,
    Expectation,
    count_text,
    empty_explanation,
    positives_needed,
)

#: no run of digits (thousands separators included) this long in any plan text
LONGEST_NUMBER = len(f"{LARGE_COUNT - 1:,}")


def _longest_number(text: str) -> int:
    return max((len(m) for m in re.findall(r"[\d,.]+", text)), default=0)


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("value,shown,up", [
    (0, "0", "0"), (999, "999", "999"), (1234567, "1,234,567", "1,234,567"),
    (LARGE_COUNT - 1, "999,999,999,999,999", "999,999,999,999,999"),
    (LARGE_COUNT, "1e+15", "1e+15"), (10**30, "1e+30", "1e+30"),
    (123_456_789_012_345_678, "1.23e+17", "1.24e+17"),
    (999_600_000_000_000_000, "1e+18", "1e+18"),
    (13503.4, "13,503", "13,504"), (2.6517449885331422e28, "2.65e+28", "2.66e+28"),
])
def test_count_text(value, shown, up):
    assert count_text(value) == shown and count_text(value, up=True) == up


def test_a_count_needed_is_never_shown_below_itself():
    for n in (positives_needed(1e10, 1e-300), positives_needed(7.3, 5e-324), 10**301 + 1):
        text = count_text(n, up=True)
        assert Decimal(text) >= n and len(text) <= 9


def test_the_fit_sentences_print_a_huge_count_short():
    """`dprect fit`'s expectation line and its empty-rectangle explanation."""
    need = positives_needed(1782.0, 1e-300)
    e = Expectation("composition", 1782.0, 1e-300, need, 10**21)
    for line in (e.sentence(), *empty_explanation(e)):
        assert _longest_number(line) <= LONGEST_NUMBER, line
    assert "N >= 1.79e+303 positives" in e.sentence()
    assert "the estimated 1e+21 positives" in e.sentence()


@pytest.mark.parametrize("extra", [
    ["--target-share", "1e-300"], ["--target-share", "5e-324"],
    ["--positives", str(10**30)], ["--positives", str(10**15), "--target-share", "1e-300"],
])
def test_plan_text_at_a_tiny_target_share_or_a_huge_estimate(capsys, extra):
    argv = ["plan", "--dims", "2", "--epsilon", "1e3", "--delta", "1e-300", *extra]
    code, out, err = run(argv, capsys)
    assert code == 0 and err == ""
    assert _longest_number(out) <= LONGEST_NUMBER, out
    head = next(line for line in out.splitlines() if "outside (expected)" in line)
    assert re.search(r"outside \(expected\) +N for <=", head)  # the columns stay apart
    code, out, err = run([*argv, "--json"], capsys)
    record = _strict_json(out)
    sizing = record["expectation"]
    for name, e in sizing["methods"].items():  # the exact numbers, not the text's
        assert isinstance(e["positives_needed"], int)
        assert e["positives_needed"] == positives_needed(e["outside"], sizing["target_share"])
        share = Fraction(e["outside"]) / e["positives_needed"]  # within positives_needed's
        assert share <= Fraction(sizing["target_share"]) * (1 + Fraction(1, 10**9)), name


def test_the_box_line_at_a_huge_estimate(capsys):
    """The quantile box's aim and its overshoot bound at N = 10^30, ε = 1000: the aim
    short, the bound (e^-(a*t) far below the float range) not printed as "<= 0"."""
    code, out, err = run(["plan", "--dims", "1", "--epsilon", "1e3", "--delta", "1e-6",
                          "--positives", str(10**30)], capsys)
    assert code == 0 and err == ""
    line = next(x for x in out.splitlines() if x.startswith("  quantiles: "))
    assert "aims at 2e+28 clipped rows (at N = 1e+30;" in line
    assert "probability < 1e-300 (K more steps" in line and "<= 0 " not in line
    assert _longest_number(out) <= LONGEST_NUMBER


def test_ordinary_plans_print_as_before(capsys):
    code, out, _ = run(["plan", "--dims", "4", "--epsilon", "1", "--delta", "1e-6",
                        "--positives", "200000"], capsys)
    assert code == 0
    rows = {line.split()[0].lstrip("*"): line for line in out.splitlines()
            if re.match(r"[ *](randmargins|composition|quantiles) +[\d,]+ ", line)}
    assert set(rows) == {"randmargins", "composition", "quantiles"}
    for line in rows.values():  # the widths of before: 13 + 20 + 24 + 24
        assert len(line) == 81 and math.isfinite(float(line[13:33].replace(",", "")))


@pytest.mark.parametrize("eps", ["0.01", "1e-4"])
def test_an_unaimed_sides_widening_prints_short(capsys, eps):
    """At a tiny ε the unaimed box's sides overshoot by hundreds of steps: the widening,
    2^(steps/4) − 1 (up to 2^1000), printed in scientific notation, not 300 digits."""
    code, out, err = run(["plan", "--dims", "1", "--epsilon", eps, "--delta", "1e-6",
                          "--positives", "1", "--method", "quantiles"], capsys)
    assert code == 0 and err == ""
    assert re.search(r"a bound about \d\.\d\de\+\d+% farther", out)
    assert _longest_number(out) <= LONGEST_NUMBER
