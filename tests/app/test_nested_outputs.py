"""An output never lies inside, or around, what a run reads or the ledger it charges: the
input's folder (a Parquet folder, the Delta table a data file belongs to), the ledger's
folder, or another output's folder. Such an output would corrupt the ledger (a stray file
in ``_delta_log``) or change the input (an extra Parquet file in its folder is read as data
next time). Each is refused before anything is read or reserved — one line naming the two
options and paths, exit 2, nothing written, no ledger row — on the command line and in a
job; an output file beside a single input file, and outputs in sibling folders, still run.
Paths are compared resolved (a symlink into the ledger is inside it)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from cli_run import job_argv, messages, run
from pin_data import FEATURES, cli_args, write_parquet

from dprect.core.errors import ParameterError
from dprect.engines.grouped import NumpyGroupedRoute
from dprect.release.ledger import Ledger
from dprect.release.sinks import check_distinct

REPO = Path(__file__).resolve().parents[2]
COMMON = ["--columns", "x,y", "--epsilon", "4", "--coverage", "0.9", "--seed", "7"]


def _table(n: int = 2000) -> pa.Table:
    gen = np.random.default_rng(0)
    return pa.table({"x": gen.normal(10.0, 2.0, n), "y": gen.exponential(50.0, n)})


def _listing(folder: Path) -> list[str]:
    """Every file under ``folder`` with its size: what a refused run must leave alone."""
    return sorted(f"{p.relative_to(folder)}:{p.stat().st_size}" for p in folder.rglob("*")
                  if p.is_file())


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """``data/t.csv`` (one file), ``data/pq`` (a Parquet folder of two files), ``data/dt``
    (a Delta table) and an initialised ledger ``ledger``."""
    from deltalake import write_deltalake

    data = tmp_path / "data"
    (data / "pq").mkdir(parents=True)
    table = _table()
    pcsv.write_csv(table, data / "t.csv")
    pq.write_table(table.slice(0, 1000), data / "pq" / "part-0.parquet")
    pq.write_table(table.slice(1000), data / "pq" / "part-1.parquet")
    write_deltalake(str(data / "dt"), table)
    Ledger(tmp_path / "ledger").init()
    return tmp_path


def _delta_file(place: Path) -> Path:
    return next((place / "data" / "dt").glob("*.parquet"))


def _bounds(place: Path, source: Path, *outputs: str, ledger: Path | None = None,
            fmt: str | None = None) -> list[str]:
    argv = ["bounds", "--input", str(source), *COMMON, *outputs,
            "--ledger", str(ledger or place / "ledger"), "--dataset", "ds"]
    return [*argv, "--format", fmt] if fmt else argv


def _refused(place: Path, argv: list[str], capsys: pytest.CaptureFixture[str],
             ledger: Path | None = None) -> str:
    ledger = ledger or place / "ledger"
    before = _listing(place)
    code, out, err = run(argv, capsys)
    lines = messages(err)
    assert code == 2 and len(lines) == 1, (code, out, err)
    assert "plan:" not in out  # refused before the plan is printed and the input read
    assert _listing(place) == before  # nothing written: no output, no ledger file
    assert Ledger(ledger).events("ds") == []  # no ledger row
    return lines[0]


def test_an_output_inside_the_ledger_folder_is_refused(place: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    stray = place / "ledger" / "_delta_log" / "x.json"
    line = _refused(place, _bounds(place, place / "data" / "t.csv", "--output", str(stray)),
                    capsys)
    assert f"--output {str(stray)!r} lies inside --ledger {str(place / 'ledger')!r}" in line


def test_a_symlink_into_the_ledger_is_inside_it(place: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (place / "link").symlink_to(place / "ledger" / "_delta_log")
    line = _refused(place, _bounds(place, place / "data" / "t.csv", "--output",
                                   str(place / "link" / "x.json")), capsys)
    assert "lies inside --ledger" in line


@pytest.mark.parametrize("option,name", [("--table", "extra.parquet"),
                                         ("--output", "out.json")])
def test_an_output_inside_a_folder_input_is_refused(place: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    option: str, name: str) -> None:
    folder = place / "data" / "pq"
    inside = folder / name
    args = [option, str(inside)] + (["--output", str(place / "b.json")]
                                    if option != "--output" else [])
    line = _refused(place, _bounds(place, folder, *args), capsys)
    assert f"{option} {str(inside)!r} lies inside --input {str(folder)!r}" in line


def test_an_output_inside_the_delta_table_of_a_file_input_is_refused(
        place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _delta_file(place)
    out = place / "data" / "dt" / "out.json"
    line = _refused(place, _bounds(place, source, "--output", str(out), fmt="parquet"),
                    capsys)
    assert (f"--output {str(out)!r} lies inside the folder table "
            f"{str(place / 'data' / 'dt')!r} of --input {str(source)!r}") in line


def test_an_output_folder_around_the_ledger_is_refused(place: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """A Delta ``--table`` that already holds a bounds table, with a ledger made inside
    it later: overwriting (and a later vacuum of) the table would put the ledger at risk."""
    table = place / "out"
    code, _, err = run(["bounds", "--input", str(place / "data" / "t.csv"), *COMMON,
                        "--output", str(place / "first.json"), "--table", str(table)],
                       capsys)
    assert code == 0, err
    ledger = table / "ledger"
    Ledger(ledger).init()
    line = _refused(place, _bounds(place, place / "data" / "t.csv", "--output",
                                   str(place / "b.json"), "--table", str(table),
                                   ledger=ledger), capsys, ledger)
    assert f"--table {str(table)!r} contains --ledger {str(ledger)!r}" in line


def test_an_output_inside_another_outputs_folder_is_refused(
        place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = place / "out"
    inside = table / "b.json"
    line = _refused(place, _bounds(place, place / "data" / "t.csv", "--output", str(inside),
                                   "--table", str(table)), capsys)
    assert f"--output {str(inside)!r} lies inside --table {str(table)!r}" in line


def test_a_fit_refuses_a_plot_inside_its_input_folder(
        place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fit (and every product) shares the check: its plot in a Parquet folder input."""
    folder = place / "fit_in"
    folder.mkdir()
    write_parquet(folder)
    plot = folder / "r.png"
    line = _refused(place, [*cli_args(folder, place / "r.json", "--plot", str(plot)),
                            "--ledger", str(place / "ledger"), "--dataset", "ds"], capsys)
    assert f"--plot {str(plot)!r} lies inside --input {str(folder)!r}: outputs must lie " \
        "apart from the input's folder, the ledger and each other" in line


@pytest.mark.parametrize("option,classes", [("--output", False), ("--plot", False),
                                            ("--output", True)])
def test_a_fit_refuses_an_output_at_its_truth_sidecar(
        place: Path, capsys: pytest.CaptureFixture[str], option: str, classes: bool) -> None:
    """The plot's ``--truth`` sidecar is read, so it is one of the run's inputs: an
    output at its path (which would overwrite it) is refused (the sidecar named ``.png``
    so that ``--plot`` may point at it); beside a class list ``--truth`` itself is
    refused (s50-fitedge: a classes' plot draws no truth)."""
    data = write_parquet(place)
    truth = place / ("truth.png" if option == "--plot" else "truth.json")
    truth.write_text(json.dumps({"features": FEATURES, "true_lower": [-10.0] * len(FEATURES),
                                 "true_upper": [10.0] * len(FEATURES)}))
    outputs = {"--output": str(place / "r.json"), "--plot": str(place / "r.png"),
               option: str(truth)}
    extra = ["--classes", "0,1"] if classes else []
    line = _refused(place, [*cli_args(data, Path(outputs["--output"]), "--plot",
                                      outputs["--plot"], "--truth", str(truth), *extra),
                            "--ledger", str(place / "ledger"), "--dataset", "ds"], capsys)
    assert (f"{option} and --truth are the same path" in line if not classes
            else "--truth draws the true rectangle of one fit" in line)


def test_the_job_refuses_an_output_inside_its_input_folder(
        place: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "jobs"))
    import aggregate as job

    folder = place / "data" / "pq"
    argv = job_argv(REPO / "conf" / "aggregate.yaml", f"input={folder}", "format=parquet",
                    "columns=[x]", "group_by=null", "groups=null",
                    f"output={folder / 'job.json'}", "table=null",
                    f"ledger={place / 'ledger'}", "dataset=ds", "seed=7")
    before = _listing(place)
    capsys.readouterr()
    assert job.main(argv, route=NumpyGroupedRoute()) == 2
    captured = capsys.readouterr()
    lines = messages(captured.err)
    assert len(lines) == 1 and f"aggregate.output {str(folder / 'job.json')!r} lies inside " \
        f"aggregate.input {str(folder)!r}" in lines[0], captured
    assert _listing(place) == before
    assert Ledger(place / "ledger").events("ds") == []


def test_outputs_beside_a_file_input_and_in_sibling_folders_still_run(
        place: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = place / "data"
    code, _, err = run(_bounds(place, data / "t.csv", "--output", str(data / "out.json"),
                               "--table", str(data / "out.csv")), capsys)
    assert code == 0, err
    assert (data / "out.json").is_file() and (data / "out.csv").is_file()
    # siblings sharing a name's start: pq / pq_out, ledger / ledger_b.json
    code, _, err = run(_bounds(place, data / "pq", "--output", str(place / "ledger_b.json"),
                               "--table", str(data / "pq_out" / "b.parquet")), capsys)
    assert code == 0, err
    assert (place / "ledger_b.json").is_file() and (data / "pq_out" / "b.parquet").is_file()
    assert len(Ledger(place / "ledger").events("ds")) > 0


def test_paths_compared_resolved_and_by_kind(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself: a glob's folder is the input's, a ``file:`` URL is its path, a
    path on another machine nests with nothing, relative paths are made absolute."""
    (tmp_path / "d").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParameterError, match=r"lies inside the folder '.*d' of --input"):
        check_distinct([("--output", str(tmp_path / "d" / "o.parquet"))],
                       [("--input", str(tmp_path / "d" / "*.parquet"))])
    with pytest.raises(ParameterError, match="lies inside --input"):
        check_distinct([("--output", "d/o.json")], [("--input", f"file://{tmp_path}/d")])
    with pytest.raises(ParameterError, match="contains --ledger"):
        check_distinct([("--table", ".")], [], ("--ledger", "d"))
    check_distinct([("--output", "d/o.json")], [("--input", "s3a://bucket/d")])
    check_distinct([("--output", "d/o.json")], [("--input", "d/t.csv")], ("--ledger", "l"))
