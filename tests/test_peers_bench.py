"""benchmarks/peers_real.py's plumbing, without the peer libraries: the runners' JSON-lines
format (parsed, checked, resumed) and the comparison's arithmetic on known inputs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import peer_common as pc
import peers_compare as cmp
import pytest


def _line(peer: str, column: str, eps: float, runs: list[dict]) -> str:
    return json.dumps({"peer": peer, "library": "lib", "version": "1", "table": "t",
                       "column": column, "epsilon": eps, "seconds": 0.1, "runs": runs})


def _run(mean: float | None, total: float | None, lower: float | None = None,
         upper: float | None = None) -> dict:
    return pc.run_record(mean, total, lower, upper)


def test_runner_lines_are_parsed_the_last_one_wins_and_a_cut_line_is_skipped(
        tmp_path: Path) -> None:
    out = tmp_path / "peer.jsonl"
    cell = pc.Cell("t", "x", 1.0, "x.npy", "x.parquet", 3)
    pc.append(str(out), "p", "lib", "1", cell, [_run(1.0, 3.0)], 0.5)
    pc.append(str(out), "p", "lib", "1", cell, [_run(2.0, 6.0, -1.0, 4.0)], 0.5)
    with open(out, "a") as fh:
        fh.write(_line("p", "y", 1.0, [])[:30])  # a stopped run's half line
    rows = pc.parse_lines(out.read_text())
    assert len(rows) == 1
    assert rows[0]["runs"] == [{"mean": 2.0, "sum": 6.0, "lower": -1.0, "upper": 4.0}]
    assert pc.done_cells(str(out)) == {"p/t/x/1"}


def test_a_run_with_wrong_keys_or_a_non_number_is_refused() -> None:
    with pytest.raises(ValueError, match="keys"):
        pc.parse_lines(_line("p", "x", 1.0, [{"mean": 1.0, "sum": 2.0}]))
    bad = {"mean": "1.0", "sum": 2.0, "lower": None, "upper": None}
    with pytest.raises(ValueError, match="not a number"):
        pc.parse_lines(_line("p", "x", 1.0, [bad]))


def test_a_non_finite_release_is_recorded_as_null() -> None:
    assert pc.run_record(math.inf, math.nan, None, 2) == {
        "mean": None, "sum": None, "lower": None, "upper": 2.0}


def test_relative_rmse_on_known_values() -> None:
    assert cmp.relative_rmse([1.0, 3.0], 2.0) == pytest.approx(0.5)  # errors ±1
    assert cmp.relative_rmse([2.0, 2.0, 5.0], 2.0) == pytest.approx(math.sqrt(3.0) / 2)
    assert cmp.relative_rmse([None, 4.0], 4.0) == pytest.approx(math.sqrt(0.5))  # null → 0
    assert cmp.relative_rmse([1e300, -1e300], 1.0) == pytest.approx(1e300)  # no overflow
    assert cmp.relative_rmse([1.0], 1.0) == 0.0


def test_clipped_rows_per_side() -> None:
    x = np.array([-5.0, 0.0, 1.0, 1.0, 2.0, 9.0])
    assert cmp.clipped_per_side(x, 0.0, 1.0) == (1, 2)  # values at a bound are kept
    assert cmp.clipped_per_side(x, -10.0, 10.0) == (0, 0)


def test_comparison_picks_the_best_peer_and_the_ratio() -> None:
    values = np.array([1.0, 2.0, 3.0, 4.0])  # mean 2.5, sum 10
    col = {"table": "t", "column": "x", "n": 4, "true_sum": 10.0, "synthetic": False}
    cells = [json.loads(_line(p, "x", 1.0, runs)) for p, runs in (
        ("dprect", [_run(2.5, 10.0, 1.0, 3.0), _run(3.0, 11.0, 2.0, 4.0)]),
        ("google", [_run(2.0, 9.0), _run(3.0, 11.0)]),
        ("opendp-q0.01", [_run(5.0, 10.0, 0.0, 5.0), _run(None, None, 0.0, 5.0)]),
    )]
    rows = cmp.compare_cells([col], cells, lambda c: values)
    (row,) = rows
    ms = row["methods"]
    assert ms["dprect"]["rel_rmse_mean"] == pytest.approx(math.sqrt(0.125) / 2.5)
    assert ms["google"]["rel_rmse_mean"] == pytest.approx(0.5 / 2.5)
    assert ms["opendp-q0.01"]["failures"] == 1
    assert row["best_peer_mean"] == "google"
    assert row["ratio_mean"] == pytest.approx(math.sqrt(0.125) / 0.5)
    assert row["best_peer_sum"] == "google"  # errors ±1 beat opendp's 0 and −10
    assert ms["dprect"]["clipped_low_mean"] == pytest.approx(0.5)  # (0 + 1)/2 below
    assert ms["dprect"]["clipped_high_mean"] == pytest.approx(0.5)  # (1 + 0)/2 above
    assert ms["dprect"]["width_median"] == pytest.approx(2.0)
    assert "clipped_low_mean" not in ms["google"]  # bounds not exposed
    (s,) = cmp.summary(rows)
    assert s["at_most_best_mean"] == 1 and s["columns"] == 1


def test_the_markdown_table_marks_a_cell_with_fewer_runs_than_the_protocol() -> None:
    """A peer cell kept from a shorter run (e.g. 20 of 100) carries its run count in the
    docs table; a cell with the protocol's runs does not."""
    values = np.array([1.0, 2.0, 3.0, 4.0])
    col = {"table": "t", "column": "x", "n": 4, "true_sum": 10.0, "synthetic": False}
    cells = [json.loads(_line("dprect", "x", 1.0, [_run(2.5, 10.0, 1.0, 4.0)] * 3)),
             json.loads(_line("google", "x", 1.0, [_run(2.0, 9.0)] * 3)),
             json.loads(_line("tumult", "x", 1.0, [_run(3.0, 11.0, 1.0, 4.0)] * 2))]
    rows = cmp.compare_cells([col], cells, lambda c: values)
    table = cmp.markdown({"runs": 3, "rows": rows}, 1.0)
    last = table.splitlines()[-1]
    assert "0.2 (2)" in last  # tumult: 2 runs of 3
    assert "**0.2**" in last and "(3)" not in last  # google: the protocol's 3 runs


def test_the_tumult_stand_in_is_used_only_where_the_real_runs_are_missing() -> None:
    values = np.array([1.0, 3.0])
    cols = [{"table": "t", "column": c, "n": 2, "true_sum": 4.0} for c in ("x", "y")]
    runs = [_run(2.0, 4.0, 1.0, 3.0)]
    cells = [json.loads(_line("tumult", "x", 1.0, runs)),
             json.loads(_line(cmp.STANDIN, "x", 1.0, runs)),
             json.loads(_line(cmp.STANDIN, "y", 1.0, runs))]
    x, y = cmp.compare_cells(cols, cells, lambda c: values)
    assert set(x["methods"]) == {"tumult"}
    assert set(y["methods"]) == {cmp.STANDIN}


def test_the_clipping_check_on_known_runs() -> None:
    """Issue #23: ≤ 1/(2ε_q) + 20/ε_b rows per side in ≥ 95% of runs (ε_q the sum's ε,
    ε_b the bounds' ε per column), on columns of more than 1,000 rows, no runaway."""
    assert cmp.clip_limit(0.4, 0.5) == pytest.approx(1.25 + 40.0)
    ok = np.array([[0, 41]] * 19 + [[0, 46]])  # 19 of 20 within 41.25 on the high side
    assert cmp.clip_check(ok, 5000, 0, 0.4, 0.5)["passes"] is True
    bad = np.array([[0, 41]] * 18 + [[0, 46]] * 2)  # 90%: fails
    check = cmp.clip_check(bad, 5000, 0, 0.4, 0.5)
    assert check["passes"] is False and check["share_high"] == pytest.approx(0.9)
    assert cmp.clip_check(ok, 5000, 1, 0.4, 0.5)["passes"] is False  # a runaway bound
    assert cmp.clip_check(bad, 1000, 0, 0.4, 0.5)["passes"] is None  # ≤ 1,000 rows


def test_dprect_describe_runs_carry_the_check_on_a_small_synthetic_column() -> None:
    """dprect's side (peers_dprect) on a 3,000-row heavy tail: the runs are
    dprect.describe's own for each seed, its cell states the plan's ε_q and ε_b, and the
    comparison writes the clipping check (which passes on it)."""
    import warnings

    import peers_dprect as pdp
    from evidence_common import seeded_runs_allowed

    import dprect
    x = np.sort(np.random.default_rng(4).pareto(2.0, 3000) + 1.0)
    with seeded_runs_allowed(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = pdp.runs_describe(x, 1.0, list(range(20)))
        direct = dprect.describe(x.reshape(-1, 1), ["x"], epsilon=1.0, seed=3).cells[0][0]
    assert (runs[3]["mean"], runs[3]["lower"], runs[3]["upper"]) == (
        direct.mean, direct.lower, direct.upper)
    plan = pdp.describe_plan_epsilons(1.0)
    p = dprect.core.aggregates.plan_describe(1.0, 1)
    assert plan == {"query_sum_epsilon": p.sum_epsilon, "bounds_epsilon": p.bounds_epsilon}
    cell = {"peer": "dprect", "table": "t", "column": "x", "epsilon": 1.0, "runs": runs,
            "plan": plan}
    col = {"table": "t", "column": "x", "n": len(x), "true_sum": float(x.sum())}
    (row,) = cmp.compare_cells([col], [cell], lambda c: x)
    check = row["methods"]["dprect"]["clip_check"]
    assert check["limit"] == pytest.approx(1 / (2 * p.sum_epsilon) + 20 / p.bounds_epsilon)
    assert check["passes"] is True and min(check["share_low"], check["share_high"]) >= 0.95
