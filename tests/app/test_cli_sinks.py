"""``dprect fit`` publishes to the same sinks as the fit job (issue 11): the result JSON,
``--results-table`` (one Delta row per run id) and ``--plot`` (a PNG). Every sink is
checked before anything is read or reserved; a replayed run id re-publishes them all
without reading its input and adds no second row. The seeded-run warning is filtered by
its message and category only."""

from __future__ import annotations

import json
import warnings

import pytest
from pin_data import FIT, cli_args, write_parquet

from dprect.app.cli import main
from dprect.app.spine import seeded_run_quietly
from dprect.release.ledger import Ledger
from dprect.release.results_table import read_results

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_cli_writes_every_sink_and_replays_them(tmp_path, capsys):
    data = write_parquet(tmp_path)
    Ledger(tmp_path / "ledger").init()
    out = tmp_path / "out"
    argv = cli_args(data, out / "r.json", "--results-table", str(out / "results"),
                    "--plot", str(out / "r.png"), "--ledger", str(tmp_path / "ledger"),
                    "--dataset", "demo", "--run-id", "night-1")
    assert main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert printed.index("run id night-1") < printed.index("result written to")
    assert "plot written to" in printed and "row appended to results table" in printed
    result = json.loads((out / "r.json").read_text())
    assert (out / "r.png").read_bytes()[:8] == PNG_MAGIC
    rows = read_results(out / "results").to_pylist()
    assert [(r["run_id"], r["dataset"]) for r in rows] == [("night-1", "demo")]
    assert rows[0]["lower"] == result["lower"]
    assert json.loads(rows[0]["parameters"])["input"]["format"] is None

    # the replay: the input is gone, every output is published again, no second row
    data.unlink()
    (out / "r.json").unlink()
    (out / "r.png").unlink()
    assert main(argv) == 0, capsys.readouterr().err
    assert "was released before" in capsys.readouterr().out
    assert json.loads((out / "r.json").read_text()) == result
    assert (out / "r.png").read_bytes()[:8] == PNG_MAGIC
    assert len(read_results(out / "results").to_pylist()) == 1


@pytest.mark.parametrize("case", ["table is a file", "table not Delta", "plot is a folder",
                                  "plot = output"])
def test_bad_sink_is_refused_before_anything(tmp_path, capsys, case):
    data = write_parquet(tmp_path)
    Ledger(tmp_path / "ledger").init()
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "not_delta").mkdir()
    (tmp_path / "not_delta" / "notes.txt").write_text("x")
    extra, message = {
        "table is a file": (["--results-table", str(tmp_path / "a_file")],
                            "--results-table"),
        "table not Delta": (["--results-table", str(tmp_path / "not_delta")],
                            "is not a Delta table"),
        "plot is a folder": (["--plot", str(tmp_path / "not_delta")], "--plot"),
        "plot = output": (["--plot", str(tmp_path / "r.json")],
                          "--output and --plot are the same path")}[case]
    code = main(cli_args(data, tmp_path / "r.json", *extra, "--ledger",
                         str(tmp_path / "ledger"), "--dataset", "ds"))
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "", captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dprect: error: ") and message in lines[0]
    assert Ledger(tmp_path / "ledger").events("ds") == []
    assert not (tmp_path / "r.json").exists()


def test_seeded_warning_is_filtered_precisely():
    from dprect.core.randomness import RandomSource

    def run():
        RandomSource(seed=FIT["seed"])  # the seeded-run warning: filtered
        warnings.warn("another warning", UserWarning, stacklevel=1)  # kept
        return "done"

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert seeded_run_quietly(run) == "done"
    assert [str(w.message) for w in seen] == ["another warning"]
