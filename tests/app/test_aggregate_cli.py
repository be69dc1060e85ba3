"""``dprect aggregate --statistics ...`` and ``jobs/aggregate.py`` on the numpy engine: the
one grouped-aggregate product whose presets are ``dprect bounds`` and ``dprect describe``
(issue #41, point 3). The Spark run is tests/spark/test_aggregate_spark.py.

* every golden case of the presets (tests/golden_cases.py), run as ``aggregate`` with the
  preset's statistics, reproduces the preset's recorded output for the seed: the result
  JSON, the table and the printed lines (so the general form IS the presets' product);
* ``--statistics`` takes the names of the statistics registry, and its help lists them
  (generated: no list kept by hand);
* a bad ``--statistics`` — an unknown name, a name twice, none, two mechanisms whose
  outputs collide, a bad option of a mixed run, an option of a mechanism not asked —
  ends with one line on stderr and exit code 2, with nothing written and nothing
  reserved in the ledger;
* the job runs from conf/aggregate.yaml (here on the numpy route) and writes the
  command's result.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import job_argv, messages, run
from golden_cases import CASES, GOLDEN, INPUT, SEED, check, stable

from dprect.app.cli import build_parser
from dprect.core.statistic import STATISTICS
from dprect.engines.grouped import NumpyGroupedRoute
from dprect.release.ledger import Ledger

REPO = Path(__file__).resolve().parents[2]


def _as_aggregate(command: str, args: list[str]) -> list[str]:
    """A preset's arguments as ``aggregate``'s: its statistics spelled out."""
    if command == "bounds":
        return [*args, "--statistics", "coverage"]
    out, asked = [], "count,sum,mean"
    it = iter(args)
    for a in it:
        if a == "--statistics":
            asked = next(it)
        else:
            out.append(a)
    statistics = "bounds" if asked == "none" else f"bounds,{asked}"
    return [*out, "--statistics", statistics]


@pytest.mark.parametrize("name", sorted(CASES))
def test_aggregate_reproduces_every_presets_golden_output(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    command, args = CASES[name]
    out, table = tmp_path / f"{name}.json", tmp_path / f"{name}.csv"
    code, printed, err = run(["aggregate", "--input", str(INPUT),
                              *_as_aggregate(command, args), "--seed", SEED, "--output",
                              str(out), "--table", str(table)], capsys)
    assert code == 0, err
    check(GOLDEN / f"{name}.json", {
        "result": stable(json.loads(out.read_text())),
        "table": table.read_text().splitlines(),
        "printed": printed.replace(str(tmp_path), "<tmp>").splitlines()})


def test_the_statistics_choices_are_the_registrys() -> None:
    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices
               and "aggregate" in a.choices).choices["aggregate"]
    help_text = next(a.help for a in sub._actions if a.dest == "statistics") or ""
    for name in STATISTICS:
        assert repr(name) in help_text


BAD = [
    (["--statistics", "p42"], "must be among"),  # no such statistic
    (["--statistics", "count,count"], "twice"),
    (["--statistics", " , "], "--statistics"),  # refused by the parser: no name
    (["--statistics", "count,,mean"], "--statistics: an empty name"),  # was skipped
    # a mixed list runs (tests/app/test_mixed_cli.py), but not with colliding outputs
    (["--statistics", "count,coverage"], "both release 'lower'"),
    (["--statistics", "coverage,mean"], "both release 'lower'"),
    (["--statistics", "mean,median,p90", "--delta", "1e-6"], "--delta"),  # pure
    (["--statistics", "count,mean", "--delta", "1e-6"], "--delta"),  # pure (s39-edges a)
    (["--statistics", "median", "--delta", "1e-6"], "--delta"),
    (["--statistics", "mean,median", "--plot", "p.png"], "--plot"),
    (["--statistics", "median,p90,mean", "--rows", "1000"], "--rows"),  # coverage's
    (["--statistics", "coverage,median", "--query-epsilon", "0.5"], "--query-epsilon"),
    (["--statistics", "coverage", "--query-epsilon", "0.5"], "--query-epsilon"),
    (["--statistics", "coverage", "--plot", "p.png"], "--plot"),
    (["--statistics", "count", "--grid", "float"], "--grid"),
    (["--statistics", "mean", "--rows", "1000"], "--rows"),
    # an explicit option no asked statistic reads is refused, not ignored (its default
    # stays silent: every other row here runs with --coverage unset)
    (["--statistics", "count,mean", "--coverage", "0.99"], "--coverage"),
    (["--statistics", "median,p90", "--coverage", "0.99"], "--coverage"),
    (["--statistics", "mean,median", "--coverage", "0.99"], "--coverage"),
]


@pytest.mark.parametrize(("extra", "message"), BAD)
def test_bad_statistics_one_line_exit_2_nothing_written_nothing_reserved(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
        message: str) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    extra = [str(tmp_path / e) if e.endswith(".png") else e for e in extra]
    code, out, err = run(["aggregate", "--input", str(INPUT), "--columns", "x,y",
                          "--epsilon", "1", "--output", str(tmp_path / "r.json"), "--table",
                          str(tmp_path / "r.csv"), "--ledger", str(ledger), "--dataset",
                          "ds", *extra], capsys)
    assert code == 2, (out, err)
    lines = messages(err)
    assert len(lines) == 1 and lines[0].startswith("dprect"), err
    assert message in lines[0] and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger"]  # nothing written
    assert Ledger(str(ledger)).runs("ds") == []  # nothing reserved


def test_a_preset_refuses_the_other_mechanisms_record_under_its_run_id(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    common = ["--input", str(INPUT), "--columns", "x", "--epsilon", "1", "--ledger",
              str(ledger), "--dataset", "ds", "--run-id", "r1"]
    code, _, err = run(["aggregate", *common, "--statistics", "coverage", "--output",
                        str(tmp_path / "a.json")], capsys)
    assert code == 0, err
    code, _, err = run(["describe", *common, "--output", str(tmp_path / "d.json")], capsys)
    assert code == 2 and "private bounds, not DP aggregates (describe)" in err, err
    assert not (tmp_path / "d.json").exists()
    code, out, err = run(["bounds", *common, "--output", str(tmp_path / "b.json")], capsys)
    assert code == 0 and "released before" in out, err  # the preset replays the record
    assert (tmp_path / "b.json").read_text() == (tmp_path / "a.json").read_text()


def test_the_job_runs_from_its_conf_and_writes_the_commands_result(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "jobs"))
    import aggregate as job

    argv = job_argv(REPO / "conf" / "aggregate.yaml", f"input={INPUT}", "format=csv",
                    "columns=[x,y]", "group_by=g", "groups=[a,b,c]",
                    f"output={tmp_path / 'job.json'}", f"table={tmp_path / 'job.csv'}",
                    f"seed={SEED}")
    capsys.readouterr()
    assert job.main(argv, route=NumpyGroupedRoute()) == 0
    assert "[aggregate] plan: " in capsys.readouterr().out
    code, _, err = run(["aggregate", "--input", str(INPUT), "--columns", "x,y",
                        "--statistics", "count,mean", "--group-by", "g", "--groups",
                        "a,b,c", "--epsilon", "1", "--seed", SEED, "--output",
                        str(tmp_path / "cli.json"), "--table", str(tmp_path / "cli.csv")],
                       capsys)
    assert code == 0, err
    assert (tmp_path / "job.json").read_text() == (tmp_path / "cli.json").read_text()
    assert (tmp_path / "job.csv").read_text() == (tmp_path / "cli.csv").read_text()


def test_a_registered_statistic_of_an_unwired_mechanism_is_offered_and_refused_in_one_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A statistic added to the registry is offered by ``--statistics`` with no edit here;
    until its mechanism has a front end and a record (aggregate_flow.FRONTS,
    aggregate_record.SHAPES) a run of it is a parameter error, not a traceback."""
    from dprect.app.aggregate_flow import asked_mechanisms
    from dprect.app.options import statistics_choices
    from dprect.core.errors import ParameterError
    from dprect.core.statistic import QUERY, Mechanism, Statistic

    histogram = Statistic("histogram", Mechanism("histogram", QUERY.column_spec), (),
                          ("histogram",))
    monkeypatch.setitem(STATISTICS, "histogram", histogram)
    assert "'histogram'" in statistics_choices()
    with pytest.raises(ParameterError, match="cannot be run by this command yet"):
        asked_mechanisms("histogram")


def test_the_job_gives_the_quantiles_its_interval_level(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The job's ``interval_level`` reaches the quantiles' rank errors (recorded in the
    plan and the rows), as the command line's ``--interval-level`` does."""
    monkeypatch.syspath_prepend(str(REPO / "jobs"))
    import aggregate as job

    argv = job_argv(REPO / "conf" / "aggregate.yaml", f"input={INPUT}", "format=csv",
                    "columns=[x]", "statistics=median", "group_by=g", "groups=[a,b,c]",
                    "interval_level=0.8", f"output={tmp_path / 'job.json'}", f"seed={SEED}")
    assert job.main(argv, route=NumpyGroupedRoute()) == 0
    record = json.loads((tmp_path / "job.json").read_text())
    assert record["plan"]["interval_level"] == 0.8
    assert any(row["median_rank_error"] == record["plan"]["rank_error_at_level"]
               for row in record["results"])
    code, _, err = run(["aggregate", "--input", str(INPUT), "--columns", "x",
                        "--statistics", "median", "--group-by", "g", "--groups", "a,b,c",
                        "--interval-level", "0.8", "--epsilon",
                        "1", "--seed", SEED, "--output", str(tmp_path / "cli.json")], capsys)
    assert code == 0, err
    assert (tmp_path / "job.json").read_text() == (tmp_path / "cli.json").read_text()


def test_the_job_refuses_a_coverage_no_asked_statistic_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``coverage`` key set in a section asking for the count and the mean is refused
    in one line (exit 2, nothing written), not ignored; its default stays silent (the
    conf's own run, which leaves it unset, is the job test above)."""
    monkeypatch.syspath_prepend(str(REPO / "jobs"))
    import aggregate as job

    argv = job_argv(REPO / "conf" / "aggregate.yaml", f"input={INPUT}", "format=csv",
                    "columns=[x]", "statistics=[count,mean]", "coverage=0.99",
                    f"output={tmp_path / 'job.json'}", f"seed={SEED}")
    capsys.readouterr()
    assert job.main(argv, route=NumpyGroupedRoute()) == 2
    err = capsys.readouterr().err
    lines = messages(err)
    assert len(lines) == 1 and "coverage" in lines[0] and "Traceback" not in err, err
    assert not (tmp_path / "job.json").exists()


@pytest.mark.parametrize("command", [["aggregate", "--statistics", "count,mean"], ["bounds"],
                                     ["describe"]])
def test_a_group_column_among_the_columns_is_named_by_its_options(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    # "also listed as a column to bound" was wrong for every product but bounds: the
    # refusal names the two options the user gave
    code, out, err = run([*command, "--input", str(INPUT), "--columns", "x,y",
                          "--group-by", "y", "--groups", "1,2", "--epsilon", "1",
                          "--output", str(tmp_path / "r.json")], capsys)
    lines = messages(err)
    assert code == 2 and len(lines) == 1 and out == "", (out, err)
    assert lines[0] == ("dprect: error: the group column 'y' (--group-by) is also listed "
                        "in --columns"), lines
    assert list(tmp_path.iterdir()) == []


def test_a_jobs_group_column_among_its_columns_is_named_by_its_keys(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "jobs"))
    import aggregate as job

    argv = job_argv(REPO / "conf" / "aggregate.yaml", f"input={INPUT}", "format=csv",
                    "columns=[x,y]", "group_by=y", "groups=[a,b]",
                    f"output={tmp_path / 'job.json'}")
    capsys.readouterr()
    assert job.main(argv, route=NumpyGroupedRoute()) == 2
    lines = messages(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].endswith(
        "the group column 'y' (aggregate.group_by) is also listed in aggregate.columns"), lines
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("engine", ["numpy", pytest.param("spark", marks=pytest.mark.spark)])
def test_group_columns_joined_by_a_comma_are_said_to_be_one_option(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str) -> None:
    # a user grouping by two columns as SQL does: the option takes one column, and the
    # refusal says so (it named a missing column 'g,y' only)
    code, out, err = run(["aggregate", "--input", str(INPUT), "--columns", "x",
                          "--statistics", "count", "--group-by", "g,y", "--groups", "c",
                          "--epsilon", "1", "--engine", engine,
                          "--output", str(tmp_path / "r.json")], capsys)
    lines = messages(err)
    assert code == 2 and len(lines) == 1 and "result" not in out, (out, err)
    assert lines[0].endswith("('g,y' names columns of the input joined by commas: a run "
                             "takes one group column and one label column — make one "
                             "column of them first)"), lines
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["aggregate", "--statistics", "bounds"],
                                     ["aggregate", "--statistics", "bounds,median"],
                                     ["describe", "--statistics", "none"],
                                     ["aggregate", "--statistics", "bounds", "--plan-only"]])
def test_the_bounds_alone_without_a_query_epsilon_name_the_option(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    """The query's bounds with no count, sum or mean aim at ``--query-epsilon``; without
    it the command said the core's words, "bounds alone (statistics=()) need
    query_epsilon", naming neither option as the user spells it."""
    out = tmp_path / "o.json"
    code, _, err = run([*command, "--input", str(INPUT), "--columns", "x", "--epsilon",
                        "1", "--output", str(out)], capsys)
    assert code == 2 and messages(err) == [
        "dprect: error: the bounds alone need --query-epsilon: the epsilon your sum or "
        "mean will spend per column, which the bounds are aimed at"], err
    assert not out.exists()


def test_the_job_names_its_key_for_the_bounds_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "jobs"))
    import aggregate as job

    argv = job_argv(REPO / "conf" / "aggregate.yaml", f"input={INPUT}", "format=csv",
                    "columns=[x]", "statistics=bounds", "group_by=null", "groups=null",
                    "table=null", f"output={tmp_path / 'job.json'}")
    capsys.readouterr()
    assert job.main(argv, route=NumpyGroupedRoute()) == 2
    assert messages(capsys.readouterr().err) == [
        "aggregate: error: the bounds alone need aggregate.query_epsilon: the epsilon your "
        "sum or mean will spend per column, which the bounds are aimed at"]
