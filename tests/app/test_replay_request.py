"""A released run id is replayed only for the request it released: the whole public
request, not only its (ε, δ), relation and columns (dprect/app/spine.py
``public_request``, compared by dprect/release/guarded.py at replay).

* an aggregate asking for fewer groups, or fewer statistics, than the run id released is
  refused — one line naming the option and both values, exit 2, nothing written, nothing
  spent — where it republished the released groups and statistics;
* a fit with another grid or shape under a released run id is refused likewise;
* the same request (other outputs) still replays, and so does a preset asking for the
  query an aggregate released (``describe`` is ``aggregate --statistics
  bounds,count,sum,mean``);
* a result recorded without a request (an older ledger's) replays on the (ε, δ) and
  columns alone.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run
from golden_cases import INPUT

from dprect.core.accounting import Guarantee
from dprect.release.guarded import REQUEST_KEY, LedgerSettings, released_result
from dprect.release.ledger import Ledger

REFUSED = ("dprect: error: run id r1 was released with other parameters ({}); use a new "
           "run id, or the released run's parameters to publish its result again")


def _ledger(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    return ["--ledger", str(ledger), "--dataset", "ds", "--run-id", "r1"]


def _aggregate(tmp_path: Path, out: str, *extra: str) -> list[str]:
    return ["aggregate", "--input", str(INPUT), "--columns", "x,y", "--epsilon", "2",
            "--group-by", "g", "--output", str(tmp_path / out), *extra]


def _refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
             out: str, said: str) -> None:
    spent = Ledger(tmp_path / "ledger").status("ds").spent
    code, printed, err = run(argv, capsys)
    lines = messages(err)
    assert code == 2 and len(lines) == 1, (code, printed, err)
    assert lines[0] == REFUSED.format(said), lines[0]
    assert not (tmp_path / out).exists()
    assert Ledger(tmp_path / "ledger").status("ds").spent == spent
    assert len(Ledger(tmp_path / "ledger").runs("ds")) == 1


@pytest.mark.parametrize(("released", "asked", "said"), [
    (["--groups", "a,b,c", "--statistics", "count,mean"],
     ["--groups", "a,b", "--statistics", "count,mean"], "groups a, b, c, this run a, b"),
    (["--groups", "a,b", "--statistics", "count,mean"],
     ["--groups", "a,b", "--statistics", "count"], "statistics count, mean, this run count"),
])
def test_an_aggregate_asking_for_less_than_its_run_id_released_is_refused(
        released: list[str], asked: list[str], said: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    common = _ledger(tmp_path, capsys)
    code, _, err = run(_aggregate(tmp_path, "first.json", *released, *common), capsys)
    assert code == 0, err
    spent = Ledger(tmp_path / "ledger").status("ds").spent
    code, _, err = run(_aggregate(tmp_path, "other.json", *asked, *common), capsys)
    lines = messages(err)
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(REFUSED.split("(")[0] + "(" + said), lines[0]
    assert not (tmp_path / "other.json").exists()
    assert Ledger(tmp_path / "ledger").status("ds").spent == spent
    assert len(Ledger(tmp_path / "ledger").runs("ds")) == 1
    # the released request itself, to other outputs, still replays: nothing spent
    code, printed, err = run(_aggregate(tmp_path, "again.json", *released, *common), capsys)
    assert code == 0 and "released before" in printed, err
    assert (tmp_path / "again.json").read_text() == (tmp_path / "first.json").read_text()
    assert Ledger(tmp_path / "ledger").status("ds").spent == spent


def test_a_preset_replays_the_query_an_aggregate_released(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = _ledger(tmp_path, capsys)
    code, _, err = run(_aggregate(tmp_path, "first.json", "--groups", "a,b,c",
                                  "--statistics", "bounds,count,sum,mean", *common), capsys)
    assert code == 0, err
    describe = ["describe", "--input", str(INPUT), "--columns", "x,y", "--epsilon", "2",
                "--group-by", "g", "--groups", "a,b,c", *common]
    code, printed, err = run([*describe, "--output", str(tmp_path / "d.json")], capsys)
    assert code == 0 and "released before" in printed, err
    assert (tmp_path / "d.json").read_text() == (tmp_path / "first.json").read_text()
    code, printed, err = run([*describe, "--statistics", "count", "--output",
                              str(tmp_path / "d2.json")], capsys)
    assert code == 2 and "released with other parameters (" in err, err
    assert not (tmp_path / "d2.json").exists()


def _fit(tmp_path: Path, grid: str, out: str, common: list[str], *extra: str
         ) -> list[str]:
    data = tmp_path / "t.parquet"
    if not data.exists():
        rng = np.random.default_rng(3)
        pq.write_table(pa.table({"a": rng.uniform(0, 10, 400), "b": rng.uniform(0, 10, 400),
                                 "label": rng.integers(0, 2, 400)}), data)
    return ["fit", "--input", str(data), "--features", "a,b", "--label", "label",
            "--epsilon", "1", "--delta", "1e-7", "--grid", grid, "--output",
            str(tmp_path / out), *common, *extra]


@pytest.mark.parametrize(("grid", "extra", "said"), [
    ("0:20:1024", [], "grid 0:10:1024, this run 0:20:1024"),
    ("0:10:1024", ["--shape", "origin"], "shape general, this run origin"),
])
def test_a_fit_with_another_option_under_a_released_run_id_is_refused(
        grid: str, extra: list[str], said: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    common = _ledger(tmp_path, capsys)
    code, _, err = run(_fit(tmp_path, "0:10:1024", "first.json", common), capsys)
    assert code == 0, err
    _refused(tmp_path, capsys, _fit(tmp_path, grid, "other.json", common, *extra),
             "other.json", said)
    code, printed, err = run(_fit(tmp_path, "0:10:1024", "again.json", common), capsys)
    assert code == 0 and "released before" in printed, err
    assert (tmp_path / "again.json").read_text() == (tmp_path / "first.json").read_text()


def test_a_result_recorded_without_a_request_replays_on_its_charge(tmp_path: Path) -> None:
    """An older ledger's released row has no request: the replay compares its (ε, δ),
    relation and columns, as before; with a request recorded, a differing one is refused."""
    ledger = Ledger(tmp_path / "ledger")
    ledger.init()
    g = Guarantee(1.0, 0.0, "add-remove", "bound")
    settings = LedgerSettings(str(tmp_path / "ledger"), "ds", "r1")
    for run_id, result in (("r1", {"method": "composition"}),
                           ("r2", {"method": "composition", REQUEST_KEY: {"grid": "a"}})):
        ledger.reserve("ds", run_id, epsilon=1.0, delta=0.0, method="composition",
                       features=["x"], bound="bound", neighbouring="add-remove")
        ledger.release("ds", run_id, result)
    assert released_result(settings, g, ["x"], request={"grid": "b"}) == {
        "method": "composition"}
    other = LedgerSettings(str(tmp_path / "ledger"), "ds", "r2")
    assert released_result(other, g, ["x"], request={"grid": "a"}) is not None
    with pytest.raises(Exception, match=r"\(grid a, this run b\)"):
        released_result(other, g, ["x"], request={"grid": "b"})


def test_a_bounds_run_with_another_grid_names_the_grid(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A domain is recorded by its public parameters (``to_json``), not by its type: a
    replay asking another float grid is refused naming ``grid`` and both sizes (it named a
    derived ``plan.rank_error``), and the recorded request holds no object by its type."""
    common = _ledger(tmp_path, capsys)
    bounds = ["bounds", "--input", str(INPUT), "--columns", "x,y", "--epsilon", "1", *common]
    code, _, err = run([*bounds, "--output", str(tmp_path / "first.json")], capsys)
    assert code == 0, err
    recorded = Ledger(tmp_path / "ledger").runs("ds")[0].result[REQUEST_KEY]
    assert "<" not in json.dumps(recorded), recorded
    spent = Ledger(tmp_path / "ledger").status("ds").spent
    code, _, err = run([*bounds, "--grid", "floatbins:10", "--output",
                        str(tmp_path / "other.json")], capsys)
    lines = messages(err)
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(REFUSED.split("(")[0] + "(grid.bits 12, this run 10; "), lines[0]
    assert not (tmp_path / "other.json").exists()
    assert Ledger(tmp_path / "ledger").status("ds").spent == spent


@pytest.mark.parametrize("extra", [
    ["--method", "quantiles"], ["--classes", "0,1"], ["--grid", "float"]])
def test_a_fit_records_its_request_by_public_values(
        extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every field of a fit's recorded request is a public value (no object said by its
    type, no function), whatever its method, classes and grid."""
    common = _ledger(tmp_path, capsys)
    argv = _fit(tmp_path, "0:10:1024", "first.json", common)
    if "--grid" in extra:
        argv = argv[:argv.index("--grid")] + argv[argv.index("--grid") + 2:]
    code, _, err = run([*argv, *extra], capsys)
    assert code == 0, err
    recorded = Ledger(tmp_path / "ledger").runs("ds")[0].result[REQUEST_KEY]
    assert "<" not in json.dumps(recorded), recorded


def test_an_aggregate_records_its_request_by_public_values(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Likewise an aggregate of every statistic family (bounds, describe's, quantiles,
    variance)."""
    common = _ledger(tmp_path, capsys)
    code, _, err = run(_aggregate(tmp_path, "first.json", "--groups", "a,b", "--statistics",
                                  "bounds,count,sum,mean,variance,median,p90", *common), capsys)
    assert code == 0, err
    recorded = Ledger(tmp_path / "ledger").runs("ds")[0].result[REQUEST_KEY]
    assert "<" not in json.dumps(recorded), recorded



def test_a_request_recorded_with_type_names_still_replays(tmp_path: Path) -> None:
    """A row recorded before domains and functions were recorded by their public values
    (``"<FloatBins>"``, a mechanism's ``"column_spec": "<function>"``) still replays the
    same request, and is still refused another (its plan differs); a text option that
    looks like a type name is compared as text."""
    ledger = Ledger(tmp_path / "ledger")
    ledger.init()
    g = Guarantee(1.0, 0.0, "add-remove", "bound")
    old = {"grid": "<FloatBins>", "label": "<A>", "plan": {"bits": 12},
           "mechanisms": [{"column_spec": "<function>", "name": "bounds"}]}
    ledger.reserve("ds", "r1", epsilon=1.0, delta=0.0, method="bounds", features=["x"],
                   bound="bound", neighbouring="add-remove")
    ledger.release("ds", "r1", {"method": "bounds", REQUEST_KEY: old})
    settings = LedgerSettings(str(tmp_path / "ledger"), "ds", "r1")
    asked = {"grid": {"bits": 12, "type": "floatbins"}, "label": "<A>", "plan": {"bits": 12},
             "mechanisms": [{"name": "bounds"}]}
    assert released_result(settings, g, ["x"], request=asked) is not None
    with pytest.raises(Exception, match=r"\(plan.bits 12, this run 10\)"):
        released_result(settings, g, ["x"], request={**asked, "plan": {"bits": 10}})
    with pytest.raises(Exception, match=r"\(label <A>, this run <B>\)"):
        released_result(settings, g, ["x"], request={**asked, "label": "<B>"})


@pytest.mark.parametrize("late", ["reserve", "release"])
def test_another_request_released_in_between_is_not_published(
        late: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Another attempt of the run id, with another request, releases after this one's
    plan-time check: the ledger hands its result back at the reservation, or at the
    release if it came while this one computed. That result is refused as at plan time
    (it was published as this run's, exit 0), and nothing is written."""
    import dprect.app.spine as spine

    common = _ledger(tmp_path, capsys)
    code, _, err = run(_aggregate(tmp_path, "first.json", "--groups", "a,b,c",
                                  "--statistics", "count,mean", *common), capsys)
    assert code == 0, err
    ledger = Ledger(tmp_path / "ledger")
    released = ledger.runs("ds")[0].result
    monkeypatch.setattr(spine, "released_result", lambda *a, **k: None)  # checked too soon
    if late == "release":  # the reservation found it reserved, the release released
        monkeypatch.setattr(Ledger, "reserve", _reserved_before(Ledger.reserve))
        monkeypatch.setattr(Ledger, "release", lambda self, ds, run_id, ours: released)
    code, _, err = run(_aggregate(tmp_path, "other.json", "--groups", "a,b", "--statistics",
                                  "count,mean", *common), capsys)
    lines = messages(err)
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(REFUSED.split("(")[0] + "(groups a, b, c, this run a, b"), \
        lines[0]
    assert not (tmp_path / "other.json").exists()


def _reserved_before(reserve: Any) -> Any:
    """``Ledger.reserve`` as the retry of a reserved run id sees it: no result yet."""
    def reserved(self: Ledger, *args: Any, **kwargs: Any) -> Any:
        got = reserve(self, *args, **kwargs)
        return dataclasses.replace(got, previous_result=None)
    return reserved
