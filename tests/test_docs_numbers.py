"""Numbers the docs print are the numbers the code prints (issue #21).

Each check regenerates a printout or a figure from the code and looks for it, written as the
docs write it, in the doc: a planner constant or sizing change that moves a number makes
this test fail until the docs are updated.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import cache
from pathlib import Path

import pytest

import dprect
from dprect.core.bounds import BoundsRequest, plan_bounds
from dprect.core.planner import AUTO_MARGIN

ROOT = Path(__file__).resolve().parent.parent
ALGORITHM = (ROOT / "docs" / "algorithm.md").read_text(encoding="utf-8")
PRIVACY = (ROOT / "docs" / "privacy.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
G32 = dprect.Grid(0.0, 1.0, 2**32)


@cache
def predictions(d: int) -> tuple[float, float, str]:
    """(RandMargins, composition, chosen) at (1, 1e-6), β = 1e-4, 2^32-point grids, at
    N = ∞ and the full ε (the docs' tables: without auto's private count, which plans the
    candidates at ε − ε/1000 where it is spent)."""
    p = dprect.plan(epsilon=1.0, delta=1e-6, domains=[G32] * d, auto_count=False)
    return (p.candidates["randmargins"].predicted_misclassified,
            p.candidates["composition"].predicted_misclassified, p.chosen.method)


def _n(x: float) -> str:
    return f"{round(x):,}"


def test_the_bounds_printout_in_algorithm_md_is_the_codes() -> None:
    p = plan_bounds(BoundsRequest(1.0), [dprect.FloatBins(12), dprect.FloatBins(12),
                                         dprect.IntegerRange(0, 120)], rows=10**6)
    block = "\n".join("    " + line if line else ""
                      for line in p.table(["income", "balance", "age"]).splitlines())
    assert block in ALGORITHM


def test_the_prediction_table_in_algorithm_md() -> None:
    rm128, comp128, _ = predictions(128)
    cells = [_n(min(predictions(8)[:2])), _n(min(predictions(16)[:2])),
             f"{_n(rm128)} (RandMargins) / {_n(comp128)}", _n(min(predictions(256)[:2])),
             _n(min(predictions(1024)[:2]))]
    assert "| predicted | " + " | ".join(cells) + " |" in ALGORITHM
    chosen = ["RandMargins" if predictions(d)[2] == "randmargins" else "composition"
              for d in (8, 16, 128, 256, 1024)]
    assert "| chosen | " + " | ".join(chosen) + " |" in ALGORITHM


def test_the_ratio_tables_in_algorithm_md_and_readme() -> None:
    ds = (8, 16, 64, 128, 192, 256, 512, 1024)
    ratios = {d: f"{predictions(d)[0] / predictions(d)[1]:.2f}" for d in ds}
    assert "| ratio | " + " | ".join(ratios[d] for d in ds) + " |" in ALGORITHM
    for d in (128, 256, 512, 1024):
        assert f"| {d} | ≈ {ratios[d]}" in README
    low = f"≈ {min(ratios[d] for d in (8, 16, 64))}–{max(ratios[d] for d in (8, 16, 64))}"
    assert f"| ≤ 64 | {low} (composition is chosen) |" in README


def _first(predicate, lo: int, hi: int) -> int:
    """The smallest d in [lo, hi] where predicate holds (it holds from there on)."""
    assert not predicate(lo) and predicate(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if predicate(mid) else (mid, hi)
    return hi


@pytest.mark.slow
def test_the_crossover_and_autos_switch_as_the_docs_state() -> None:
    crossover = _first(lambda d: predictions(d)[0] < predictions(d)[1], 64, 256)
    switch = _first(lambda d: predictions(d)[0] <= (1 - AUTO_MARGIN) * predictions(d)[1],
                    64, 256)
    assert f"From about d = {crossover} on (the crossover" in _flat(ALGORITHM)
    assert f"`auto` switches at d = {switch}" in _flat(ALGORITHM)
    assert f"RandMargins is predicted better from d = {crossover} on, and `method auto` " \
           f"chooses it from d = {switch}" in _flat(README)
    assert f"predicted better from d = {crossover} on, and `auto`" in _flat(PRIVACY)
    tied = ", ".join(_n(predictions(d)[0]) for d in (8, 16, 128)) + \
        f" and {_n(predictions(1024)[0])}"
    assert f"its predictions become {tied} at these d" in _flat(PRIVACY)


@pytest.mark.slow
def test_the_crossover_with_the_continuity_declaration_as_the_docs_state() -> None:
    """Issue #24: with every feature declared continuous (no tie bits) on 2^32 grids at
    (1, 10^-6), the predicted crossover; acceptance: at most 90."""
    from dprect.core.crossover import crossover
    from dprect.core.request import PlanRequest

    declared = crossover(PlanRequest(epsilon=1.0, delta=1e-6), [G32], declared=True)
    undeclared = crossover(PlanRequest(epsilon=1.0, delta=1e-6), [G32], declared=False)
    assert declared is not None and declared <= 90
    assert undeclared == _first(lambda d: predictions(d)[0] < predictions(d)[1], 64, 256)
    assert f"with every feature declared, RandMargins is predicted better from d = " \
           f"{declared} on" in _flat(ALGORITHM)
    assert f"d = {undeclared} without the declaration and d = {declared} with every " \
           f"feature declared" in _flat(ALGORITHM)
    assert f"from d = {declared} on with every feature declared continuous" in _flat(README)


def _flat(text: str) -> str:
    """The text with every run of white space as one space (lines are wrapped)."""
    return " ".join(text.split())


def test_auto_margin_as_documented() -> None:
    assert f"(`AUTO_MARGIN` = {AUTO_MARGIN:.2f})" in _flat(ALGORITHM)
    assert f"at most {1 - AUTO_MARGIN:g} times the baseline's" in _flat(ALGORITHM)


def test_the_describe_grids_in_privacy_md_are_the_codes() -> None:
    """§11 states the centre grid and the search grid (the candidates' bins) and that they
    are one grid, which is what lets an engine read the rows once: a change of either
    constant fails here until the proof is updated."""
    from dprect.core.tail_bounds import CENTRE_BITS, SEARCH_BITS

    assert f"public grid `FloatBins({CENTRE_BITS})`" in PRIVACY
    assert f"U_k = the largest float of the `FloatBins({SEARCH_BITS})` bin" in PRIVACY
    assert f"`FloatBins({SEARCH_BITS})` bin, the search grid" in PRIVACY
    assert SEARCH_BITS == CENTRE_BITS  # "the search grid is the centre grid"


OPERATIONS = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")


def test_the_heartbeats_period_as_the_docs_and_the_help_state() -> None:
    """The heartbeat's period and promise (dprect/app/heartbeat.py) as README.md,
    operations.md, architecture.md and ``--quiet``'s help state them: a change of either
    constant fails here until the docs are updated (the help is built from them)."""
    from dprect.app.heartbeat import EVERY, PROMISE
    from dprect.app.options import ENGINE_OPTIONS

    assert f"A run longer than {EVERY:g} s prints a line on stderr every {EVERY:g} s (at " \
           f"least every {PROMISE:g} s" in _flat(README)
    assert f"A run that takes longer than {EVERY:g} s writes, every {EVERY:g} s, one line " \
           f"naming its stage — at least every {PROMISE:g} s" in _flat(OPERATIONS)
    architecture = _flat((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert f"a line every {EVERY:g} s (`EVERY`, under the {PROMISE:g} s `PROMISE`)" \
        in architecture
    quiet = next(o for o in ENGINE_OPTIONS if o.name == "quiet")
    assert f"longer than {EVERY:g} s names its current stage every {EVERY:g} s (at least " \
           f"every {PROMISE:g} s" in quiet.help


def test_the_plan_printout_and_the_ns_in_the_readme(capsys: pytest.CaptureFixture[str]) -> None:
    """README.md's "How many positives do I need?": the table ``dprect plan --dims 7
    --positives 200`` prints, the N of composition on the 1024-bin grid at d = 7 and 3, and
    the chosen method's share at N = 200 as the prose rounds it."""
    from tests.cli_run import run

    code, out, _ = run(["plan", "--epsilon", "1", "--delta", "1e-6", "--dims", "7",
                        "--positives", "200"], capsys)
    assert code == 0
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("method         outside"))
    table = lines[start:start + 5]
    assert "\n".join(table) in README
    share = dprect.plan(epsilon=1.0, delta=1e-6, dims=7, positives=200).to_json()[
        "expectation"]["methods"]["quantiles"]["share"]
    assert table[-1].startswith("*quantiles")
    assert f"leave about {share:.1%} of them outside" in _flat(README)
    for d, phrase in ((7, "instead of the float order: {} for composition"),
                      (3, "(3 instead of 7 on that grid: {})")):
        n = dprect.plan(epsilon=1.0, delta=1e-6, dims=d, grid=dprect.Grid(0, 100, 1024),
                        positives=200).to_json()["expectation"]["methods"]["composition"][
            "positives_needed"]
        assert phrase.format(f"{n:,}") in _flat(README)


def test_describes_split_and_row_needs_as_the_readme_states() -> None:
    """README.md's describe section: the per-column split (centre, sides, query and the
    query's sum/count), the rows the centre's 5% needs and ``rows_needed`` at ε = 1 for one
    column, and the runaway bound 79 steps past the data (dprect/core/aggregates.py)."""
    from dprect.core import aggregates
    from dprect.core.aggregates import plan_describe

    text = _flat(README)
    c, s, q = aggregates.CENTRE_SHARE, aggregates.SIDES_SHARE, 1 - aggregates.CENTRE_SHARE \
        - aggregates.SIDES_SHARE
    assert f"Per column ε/d is split: {c:.0%} the centre, {s:.0%} the two sides" in text
    assert f"{q:.0%} the query ({aggregates.SUM_SHARE:.0%} of it the clamped sum, " \
           f"{1 - aggregates.SUM_SHARE:.0%} the count;" in text
    p = plan_describe(1.0, 1)
    assert f"a group below what the centre's {c:.0%} needs ({p.centre_rows:,} rows at ε = 1, " \
           f"one column)" in text
    assert f"in the plan's JSON and printout: {p.rows_needed} at ε = 1, one column" in text
    steps = aggregates.RUNAWAY_STEPS[1]
    assert f"a bound {steps} steps" in text and p.runaway(steps) < 2e-17
    assert "probability below 2·10⁻¹⁷" in text


def test_the_fits_plan_and_empty_lines_in_operations_md(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """operations.md's "How many positives a run needs": the line a fit prints before it
    reads (the section's command with ``--positives 50000``) and an empty rectangle's
    explanation, as the command prints them (20 positives: composition's rectangle is
    empty whatever the draws)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.cli_run import run

    rows = np.random.default_rng(0)
    path = tmp_path / "few.parquet"
    pq.write_table(pa.table({"age": rows.integers(18, 90, 1000).astype(float),
                             "income": rows.lognormal(10, 1, 1000),
                             "churned": (np.arange(1000) < 20).astype(int)}), path)
    code, out, _ = run(["fit", "--input", str(path), "--features", "age,income", "--label",
                        "churned", "--epsilon", "1", "--delta", "1e-6", "--grid",
                        "age=0:120:1024,income=0:1e6:1048576", "--positives", "50000",
                        "--method", "composition", "--seed", "1",
                        "--output", str(tmp_path / "r.json")], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] in OPERATIONS and "50,000" in lines[0]
    empty = [ln for ln in lines if ln.startswith(("the rectangle is empty", "to need fewer"))]
    assert len(empty) == 2 and all(ln in OPERATIONS for ln in empty)


def test_the_quantiles_and_autos_count_shares_as_privacy_md_states() -> None:
    """privacy.md §11a (the quantiles' count and small-split centre shares, their ε_each,
    the default grid and its size) and §13 (auto's count shares and the scale's grid), and
    the README's grid of 5-significant-digit decimals, as the code has them."""
    from dprect.core import auto_count, planner, quantiles
    from dprect.core.decimal_grid import DecimalGrid

    text = _flat(PRIVACY)
    count, centre = quantiles.COUNT_SHARE, quantiles.SMALL_CENTRE_SHARE
    assert f"ε_n = `COUNT_SHARE` ({count:.0%}) of the column's ε" in text
    assert f"ε_each = {1 - count:.2f}·ε_col/m; below it the centre takes " \
           f"`SMALL_CENTRE_SHARE` ({centre:.1%}) and the quantiles ε_each = " \
           f"{1 - count - centre:.3f}·ε_col/m" in text
    digits = quantiles.QUANTILE_DIGITS
    assert quantiles.QUANTILE_GRID == "decimal"
    assert f"The default grid is `DecimalGrid({digits})`" in text
    assert f"with at most {digits} significant digits" in text
    assert f"M = {DecimalGrid(digits).size:,}" in text
    assert f"a grid of every {digits}-significant-digit decimal" in _flat(README)
    share, boxed = auto_count.AUTO_COUNT_SHARE, planner.QUANTILES_COUNT_SHARE
    assert share.numerator == boxed.numerator == 1
    assert f"with ε_c = ε_ar/{share.denominator}" in text
    assert f"or ε_c = ε_ar/{boxed.denominator} when composition is the N = ∞ choice" in text
    assert f"ε/{share.denominator} when RandMargins would be chosen at N = ∞, else " \
           f"ε/{boxed.denominator}" in _flat(README)


def test_the_selections_constants_as_privacy_md_and_the_readme_state() -> None:
    """privacy.md §18 (the selection's bits, the exp margin, the longest table) and the
    class cap README.md and operations.md quote, as the code has them."""
    from fractions import Fraction

    from dprect.core import group_selection
    from dprect.core.labels import MAX_CLASSES

    text = _flat(PRIVACY)
    bits = group_selection.SELECTION_BITS
    assert f"`randbits({bits}) < P_k`: probability P_k/2^{bits} exactly" in text
    assert group_selection.EXP_MARGIN == Fraction(1, 10**30)
    assert "pushed out by a relative 10^−30: `EXP_MARGIN`" in text
    assert f"`MAX_ALWAYS` = {group_selection.MAX_ALWAYS:,}" in text
    assert f"At most {MAX_CLASSES} classes a run (`MAX_CLASSES`)" in _flat(README)
    assert f"at most `MAX_CLASSES` = {MAX_CLASSES} classes" in _flat(OPERATIONS)


def test_the_variances_constants_as_privacy_md_states() -> None:
    """privacy.md §17: the squares' share of the query, the sum's share of the rest, the
    squares' fixed-point bits and the interval's number of events."""
    from dprect.core import aggregates, describe_stats, variance

    text = _flat(PRIVACY)
    assert f"ε_Q = `SQUARES_SHARE`·ε_q ({aggregates.SQUARES_SHARE:g} of the query's share)" \
        in text
    assert f"(ε_S = {aggregates.SUM_SHARE:g} of it)" in text
    assert f"k = 2^{variance.SQUARE_FRACTION_BITS} (`SQUARE_FRACTION_BITS`" in text
    assert f"cut into two words of {describe_stats.SQUARE_WORD} bits" in text
    assert f"`SPREAD_PARTS` = {variance.SPREAD_PARTS} is the number of events" in text


def test_the_statistics_the_docs_list_are_the_registrys() -> None:
    """README.md's "Any statistics, one charge" names every statistic of the registry
    (dprect/core/statistic.py), and operations.md's aggregate section every one that is
    not a quantile: the lists are hand-kept, so a statistic added to the registry fails
    here until they name it."""
    from dprect.core.statistic import STATISTICS

    readme = README.split("**Any statistics, one charge: `dprect aggregate`.**", 1)[1]
    readme = readme.split("```", 1)[0]
    missing = [name for name in STATISTICS if f"`{name}`" not in readme]
    assert not missing, f"README.md's aggregate paragraph does not name {missing}"
    section = OPERATIONS.split("### Any statistics per group: the aggregate", 1)[1]
    section = section.split("```", 1)[0]
    quantiles = {name for name in STATISTICS if name == "median" or name[1:].isdigit()}
    missing = [name for name in STATISTICS if name not in quantiles
               and f"`{name}`" not in section]
    assert not missing, f"operations.md's aggregate section does not name {missing}"


def test_autos_box_rule_as_the_readme_states() -> None:
    """README.md's `method` entry: the aimed box's default aim a side and the dimensions it
    holds for (min(AIM_SIDE_SHARE, AIM_TOTAL_SHARE/(2d)) of N), and auto's allowance for
    the box's extra miss (AUTO_BOX_RELATIVE × the other choice's, AUTO_BOX_EXCESS × N)."""
    from dprect.core.planner import AUTO_BOX_EXCESS, AUTO_BOX_RELATIVE
    from dprect.core.quantile_box import AIM_SIDE_SHARE, AIM_TOTAL_SHARE

    d = max(d for d in range(1, 64) if AIM_TOTAL_SHARE / (2 * d) >= AIM_SIDE_SHARE)
    assert f"the aimed box ({float(AIM_SIDE_SHARE):.0%} of N a side at d ≤ {d})" \
        in _flat(README)
    assert AUTO_BOX_RELATIVE == 1.0
    assert f"by at most min(that choice's miss, {AUTO_BOX_EXCESS:.0%} of N)" in _flat(README)


def test_the_contests_and_the_boxs_constants_as_privacy_md_states() -> None:
    """privacy.md §19's gate and shares (CONTEST_RATIO, CONTEST_PRICE, the negatives' and
    the selection's 1/100) and §16's default aim (AIM_SIDE_SHARE, AIM_TOTAL_SHARE) and
    centre bins (quantile_box.CENTRE_BITS), as the code has them."""
    from fractions import Fraction

    from dprect.core import contest, quantile_box

    text = _flat(PRIVACY)
    assert f"the box predicted to miss at most {contest.CONTEST_RATIO:g} times " \
           f"composition's positives, and the split costing each candidate at most " \
           f"{contest.CONTEST_PRICE:.0%} of N" in text
    negatives, select = contest.CONTEST_NEGATIVES_SHARE, contest.CONTEST_SELECT_SHARE
    assert negatives.numerator == select.numerator == 1
    assert f"1/b⁻ ≤ ε_ar/{negatives.denominator}, ε_s ≤ ε_ar/{select.denominator}" in text
    side, total = quantile_box.AIM_SIDE_SHARE, quantile_box.AIM_TOTAL_SHARE
    assert side == Fraction(1, 50) and total == Fraction(1, 4)
    assert "α = min(1/50, (1/4)/R)" in text
    bins = 1 << quantile_box.CENTRE_BITS
    assert f"bitlen(m − 1) − {quantile_box.CENTRE_BITS}) (at most {bins:,} bins" in text


#: "`NAME` = VALUE" in a doc: a constant quoted with its value (1 − `NAME` = V: its
#: complement); VALUE a whole number (commas allowed), a decimal, a/b, 2^k, 10^k or N%
QUOTED = re.compile(r"(1 − )?`([A-Z][A-Z0-9_]{3,})` = ((?:2|10)\^-?\d+|"
                    r"\d[\d,]*(?:\.\d+)?(?:/\d+)?%?)")


def _quoted_value(text: str) -> Fraction:
    if "^" in text:
        base, power = text.split("^")
        return Fraction(int(base)) ** int(power)
    if text.endswith("%"):
        return Fraction(text[:-1].replace(",", "")) / 100
    return Fraction(text.replace(",", ""))


def _module_constants(names: set[str]) -> dict[str, list[object]]:
    """The values of ``names`` in every module of dprect/ that assigns them at its top
    level (a name defined in several modules has several values), read from the module."""
    import ast
    import importlib

    out: dict[str, list[object]] = {}
    for path in sorted((ROOT / "dprect").rglob("*.py")):
        assigned = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AnnAssign) else [])
            assigned.update(t.id for t in targets if isinstance(t, ast.Name))
        wanted = assigned & names
        if wanted:
            module = importlib.import_module(".".join(
                path.relative_to(ROOT).with_suffix("").parts))
            for name in wanted:
                out.setdefault(name, []).append(getattr(module, name))
    return out


def test_every_constant_quoted_with_its_value_is_the_codes() -> None:
    """Each "`NAME` = VALUE" in README.md and docs/ (but results.md, a record of past
    runs) names a module constant of dprect/ that has that value: a changed constant, or
    a renamed one, fails here until the docs follow."""
    quotes = [(path.name, m) for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
              if path.name != "results.md"
              for m in QUOTED.finditer(_flat(path.read_text(encoding="utf-8")))]
    assert len(quotes) >= 15, "the pattern is out of date"
    constants = _module_constants({m.group(2) for _, m in quotes})
    for doc, m in quotes:
        name, want = m.group(2), _quoted_value(m.group(3))
        assert name in constants, f"{doc} quotes {name}, which no module defines"
        values = [Fraction(v) for v in constants[name] if isinstance(v, (int, float, Fraction))]
        if m.group(1):
            values = [1 - v for v in values]
        assert any(abs(float(v - want)) <= 1e-12 * max(1.0, abs(float(want))) for v in values), \
            f"{doc}: `{name}` = {m.group(3)}, the code: {constants[name]}"


def test_the_bounds_rows_in_the_readme_are_the_plans() -> None:
    """README.md's "How many rows" for private bounds: T, the floor k and the rows from
    which the coverage share binds at ε = 1, coverage 0.999, two FloatBins(12) columns."""
    p = plan_bounds(BoundsRequest(1.0), [dprect.FloatBins(12)] * 2)
    t, k = p.rank_error[0], p.floor_rows[0]
    rows = int(k / p.alpha)
    assert f"two columns: T ≈ {round(t)}, k = {k}, and the coverage share α·n takes over " \
           f"from about {rows:,} rows (k/α)" in _flat(README)
