"""The quantiles through the seam (issue #41): the QUANTILES mechanism's spec counts the
rows per decimal cell and the rows at each cell's value (the numpy primitive equals the
core's reference per cell), its statistics come from the registry, and
``dprect.aggregate`` releases them per (group, column) in one charge — charged to a
budget like describe — with no crash on the diffprivlib #107 column."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_run import messages, run
from golden_cases import INPUT

import dprect
from dprect.app.describe import aggregate
from dprect.core.errors import ParameterError
from dprect.core.intervals import BELOW_ROW_NEED
from dprect.core.quantile_release import plan_statistics, statistic_names
from dprect.core.quantiles import plan_quantiles, quantile_statistics, rank_error
from dprect.core.statistic import (
    QUANTILE_STATISTICS,
    QUANTILES,
    SEARCH_GRID,
    STATISTICS,
    ColumnSpec,
    cell_bins,
    outputs,
)
from dprect.engines.grouped import grouped_statistics
from dprect.release.ledger import Ledger
from dprect.release.ledger.errors import BudgetExceededError


def test_the_spec_counts_what_the_quantiles_read():
    gen = np.random.default_rng(2)
    x = np.concatenate([np.round(gen.normal(0, 30, 2000), 1), np.full(300, 7.0),
                        [0.0, -0.0, 5e-324, -5e-324, 1e300, -1e300]])
    spec = QUANTILES.spec([SEARCH_GRID])
    cell = cell_bins(x, spec.columns[0])
    want = quantile_statistics(x, plan_quantiles([0.5], 1.0))
    got = cell.quantile_statistics()
    for a, b in ((got.keys, want.keys), (got.counts, want.counts),
                 (got.at_value, want.at_value)):
        assert np.array_equal(a, b)
    assert cell.sums is None and int(got.at_value.sum()) > 2000  # one-decimal values
    with pytest.raises(ParameterError):
        cell_bins(x, ColumnSpec(SEARCH_GRID, True)).quantile_statistics()
    with pytest.raises(ParameterError):  # rows at a value need the decimal grid
        ColumnSpec(SEARCH_GRID, False, True)
    group = gen.integers(-1, 2, len(x)).astype(np.int32)
    cells = grouped_statistics([x], group, 3, spec)
    for g in range(3):
        part = x[group == g]
        ref = cell_bins(part, spec.columns[0])
        assert np.array_equal(cells[(g, 0)].at_value, ref.at_value)
    assert len(cells[(2, 0)].keys) == 0


def test_the_registry_lists_the_quantiles():
    names = [s.name for s in QUANTILE_STATISTICS]
    assert {"median", "p10", "p90"} <= set(names)
    assert all(STATISTICS[n].mechanism is QUANTILES for n in names)
    assert outputs(QUANTILES) == tuple(o for n in names for o in (n, f"{n}_rank_error"))
    qs = [s.quantile for s in QUANTILE_STATISTICS]
    assert qs == sorted(qs) and STATISTICS["median"].quantile == 0.5
    plan = plan_statistics(["p90", "median", "p10"], 1.0, 2)
    assert statistic_names(plan) == ("p10", "median", "p90") and plan.columns == 2
    with pytest.raises(ParameterError):
        plan_statistics(["mean"], 1.0, 1)


def _table(n: int = 6000):
    pd = pytest.importorskip("pandas")
    gen = np.random.default_rng(11)
    return pd.DataFrame({"a": np.round(gen.lognormal(3, 1, n), 2),
                         "b": np.round(gen.normal(0, 5, n), 1),
                         "g": gen.choice(["x", "y", "z"], n)})


def test_aggregate_releases_quantiles_per_group_in_one_charge():
    df = _table()
    budget = dprect.PrivacyBudget(3.0, 1e-6)
    r = aggregate(df, statistics=["p90", "median", "p10"], epsilon=2.0, group_by="g",
                  groups=["x", "y", "z", "w"], seed=4, budget=budget)
    assert r.statistics == ("p10", "median", "p90")
    rows = r.rows()
    assert len(rows) == 8 and set(rows[0]) == {
        "group", "column", "p10", "median", "p90", BELOW_ROW_NEED,
        "p10_rank_error", "median_rank_error", "p90_rank_error"}
    assert r.guarantee.epsilon == 2.0 and r.guarantee.delta == 0.0
    spent = budget.spent()
    assert spent is not None and spent.epsilon == pytest.approx(2.0)
    for row in rows:
        assert row["p10"] <= row["median"] <= row["p90"]
        if row["group"] == "w":
            assert row[BELOW_ROW_NEED] is True  # no rows: below rows_needed
            assert row["median_rank_error"] is None  # small split: no statement
            continue
        assert row["median_rank_error"] == r.plan.interval_rank_error
        x = np.sort(df[(df.g == row["group"])][row["column"]].to_numpy())
        for q, name in ((0.1, "p10"), (0.5, "median"), (0.9, "p90")):
            assert rank_error(x, row[name], q) <= 0.05
    again = aggregate(df, statistics=["p10", "median", "p90"], epsilon=2.0, group_by="g",
                      groups=["x", "y", "z", "w"], seed=4)
    assert again.rows() == rows  # the order asked does not matter; the seed does
    d = r.to_dict()
    assert d["plan"]["rows_needed"] > 0 and d["privacy"]["epsilon"] == 2.0
    with pytest.raises(BudgetExceededError):  # past the budget's cap: refused
        aggregate(df, statistics=["median"], epsilon=2.0, seed=1, budget=budget)


def test_aggregate_refuses_mixed_mechanisms_and_foreign_options():
    df = _table(100)
    for bad in (dict(statistics=["coverage", "mean"]), dict(statistics=["median"], delta=1e-6),
                dict(statistics=["median"], query_epsilon=0.5),
                dict(statistics=["median"], coverage=0.9)):
        with pytest.raises(ParameterError):
            aggregate(df, epsilon=1.0, columns=["a"], **bad)


def test_ties_of_diffprivlib_107_do_not_crash():
    """800,000 copies of 65,000 and 200,000 uniform in [0, 500,000] through the seam:
    the p10 and the median are 65,000 exactly, the p90 within the rank bound."""
    gen = np.random.default_rng(107)
    x = np.concatenate([np.full(800_000, 65_000.0), gen.uniform(0, 500_000, 200_000)])
    r = aggregate(x.reshape(-1, 1), statistics=["p10", "median", "p90"], epsilon=1.0,
                  seed=5)
    (row,) = r.rows()
    assert row["p10"] == row["median"] == 65_000.0
    assert rank_error(np.sort(x), row["p90"], 0.9) <= r.plan.rank_bound(1e-6) / len(x)
    assert row[BELOW_ROW_NEED] is False


@pytest.mark.parametrize("statistics", ["median", "p1,median"])
def test_the_plan_says_what_a_groups_row_need_is_for(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], statistics: str) -> None:
    """The printed row need says what it promises (each quantile inside the data's range)
    and that it grows toward 0 or 1 — the p1 needs far more rows than the median, and its
    flag marks the median of the same cell too; it read only "a group needs about N rows"."""
    code, out, err = run(["aggregate", "--input", str(tmp_path / "absent.parquet"),
                          "--columns", "x", "--statistics", statistics, "--epsilon", "1",
                          "--plan-only"], capsys)
    assert code == 0, err
    (line,) = [ln for ln in out.splitlines() if "needs about" in ln]
    plan = plan_statistics(statistics.split(","), 1.0, 1)
    assert f"needs about {plan.rows_needed():,} rows" in line
    assert "for each quantile to lie within its data's range" in line
    assert "nearer a quantile is to 0 or 1" in line and "all its quantiles" in line


def test_the_cli_runs_the_quantiles_records_and_replays(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``dprect aggregate --statistics p10,median,p90``: the plan printed (with its
    rows_needed), one charge in the ledger under the method ``quantiles``, the record's
    rows and the table's columns from the registry (every quantile column, the flag), and
    the same run id replays the record; a bad mix is one line and exit 2."""
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    args = ["aggregate", "--input", str(INPUT), "--columns", "x,y", "--group-by", "g",
            "--groups", "a,b,c", "--statistics", "p90,median,p10", "--epsilon", "1",
            "--ledger", str(ledger), "--dataset", "ds", "--run-id", "q1", "--output",
            str(tmp_path / "q.json"), "--table", str(tmp_path / "q.csv")]
    code, out, err = run(args, capsys)
    assert code == 0, err
    assert "private quantiles p10, median, p90" in out and "rows" in out
    record = json.loads((tmp_path / "q.json").read_text())
    assert record["method"] == "quantiles" and len(record["results"]) == 6
    assert record["plan"]["rows_needed"] > 0 and record["privacy"]["epsilon"] == 1.0
    header = (tmp_path / "q.csv").read_text().splitlines()[0].split(",")
    assert header == ["group", "column", *outputs(QUANTILES), BELOW_ROW_NEED]
    runs = Ledger(str(ledger)).runs("ds")
    assert len(runs) == 1
    code, out, err = run(args, capsys)  # the same run id: the record is replayed
    assert code == 0 and "released before" in out, err
    assert json.loads((tmp_path / "q.json").read_text()) == record
    assert len(Ledger(str(ledger)).runs("ds")) == 1
    # a mixed list runs (tests/app/test_mixed_cli.py) unless its outputs collide
    code, _, err = run([*args[:-4], "--statistics", "median,mean,coverage", "--run-id",
                        "q2"], capsys)
    assert code == 2 and len(messages(err)) == 1 and "both release" in err
