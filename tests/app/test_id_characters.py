"""A run id or a dataset id holding a control or format character (a newline, a tab, NUL,
ESC, U+202E, a zero width: Unicode Cc and Cf, and the line separators) is refused before
the ledger is read or written: one line naming the option and the character's code point
— never the character — exit 2, no ledger row. Such an id would go into a ledger row, a
results-table row and every line naming the run (a newline splits ``run id ...`` in two,
U+202E reverses what follows it). The command line, a job and the Python API alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import messages, run
from golden_cases import INPUT

from dprect.core.errors import ParameterError
from dprect.release.budget import PrivacyBudget
from dprect.release.ledger import Ledger

#: each hidden character, its code point as the refusal names it
HIDDEN = {"newline": ("\n", "U+000A"), "tab": ("\t", "U+0009"), "nul": ("\x00", "U+0000"),
          "escape": ("\x1b", "U+001B"), "rtl override": ("\u202e", "U+202E"),
          "zero width": ("\u200b", "U+200B"), "line separator": ("\u2028", "U+2028")}

AGGREGATE = ["aggregate", "--input", str(INPUT), "--columns", "x,y", "--statistics",
             "count", "--epsilon", "1"]


def _said(option: str, code: str) -> str:
    return (f"{option} holds a control or format character ({code}, character 4); give an "
            "id of visible characters")


@pytest.mark.parametrize("option", ["--dataset", "--run-id"])
@pytest.mark.parametrize("hidden", list(HIDDEN))
def test_the_command_line_refuses_a_hidden_character_in_an_id_before_the_ledger(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str,
        hidden: str) -> None:
    char, code = HIDDEN[hidden]
    ledger = tmp_path / "ledger"
    Ledger(ledger).init()
    ids = {"--dataset": "ds", "--run-id": "r1"}
    ids[option] = "abc" + char + "def"
    out = tmp_path / "r.json"
    status, printed, err = run([*AGGREGATE, "--output", str(out), "--ledger", str(ledger),
                                *(a for kv in ids.items() for a in kv)], capsys)
    assert status == 2 and printed == "", (printed, err)
    assert messages(err) == [f"dprect: error: {_said(option, code)}"]
    assert char not in err.rstrip("\n")
    assert Ledger(ledger).datasets() == [] and not out.exists()


def test_a_fit_refuses_a_hidden_dataset_id_naming_its_row_without_a_ledger(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without a ledger a fit's dataset id names its results-table row: refused alike."""
    from pin_data import cli_args, write_parquet

    data = write_parquet(tmp_path)
    status, printed, err = run(cli_args(data, tmp_path / "r.json", "--results-table",
                                        str(tmp_path / "results"), "--dataset",
                                        "abc\u202edef"), capsys)
    assert status == 2 and printed == ""
    assert messages(err) == [f"dprect: error: {_said('--dataset', 'U+202E')}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [data.name]


def test_budget_set_cap_refuses_a_hidden_dataset_id(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger"
    Ledger(ledger).init()
    status, printed, err = run(["budget", "set-cap", "abc\ndef", "--epsilon", "1", "--delta",
                                "0", "--ledger", str(ledger)], capsys)
    assert status == 2 and printed == ""
    assert messages(err) == [f"dprect: error: {_said('dataset', 'U+000A')}"]
    assert Ledger(ledger).datasets() == []


def test_a_job_refuses_a_hidden_run_id_before_spark_and_the_ledger(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A job's run id from its config (a YAML string with an escape, ``"abc\\tdef"``) is
    refused naming its key, before Spark starts."""
    import _common
    import aggregate
    import yaml

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark started")

    monkeypatch.setattr(_common, "job_spark", started)
    ledger = tmp_path / "ledger"
    Ledger(ledger).init()
    cfg = tmp_path / "job.yaml"
    cfg.write_text(yaml.safe_dump({"aggregate": {
        "input": str(INPUT), "format": "csv", "columns": ["x", "y"], "statistics": ["count"],
        "epsilon": 1.0, "output": str(tmp_path / "r.json"), "ledger": str(ledger),
        "dataset": "ds", "run_id": "abc\tdef"}}))
    capsys.readouterr()
    status = aggregate.main(["--config", str(cfg)])
    printed, err = capsys.readouterr()
    assert status == 2 and printed == "", (printed, err)
    assert messages(err) == [f"aggregate: error: {_said('aggregate.run_id', 'U+0009')}"]
    assert Ledger(ledger).datasets() == [] and not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("hidden", ["newline", "nul", "rtl override"])
def test_the_python_api_refuses_a_hidden_character_in_an_id(tmp_path: Path,
                                                             hidden: str) -> None:
    char, code = HIDDEN[hidden]
    ledger = Ledger(tmp_path / "ledger")
    ledger.init()
    bad = "abc" + char + "def"
    with pytest.raises(ParameterError) as refused:
        PrivacyBudget.ledger(str(tmp_path / "ledger"), bad)
    assert str(refused.value) == _said("dataset", code)
    charge = {"epsilon": 1.0, "delta": 0.0, "method": "m", "features": ["x"],
              "bound": "b", "neighbouring": "add-remove"}
    for dataset, run_id, what in ((bad, "r1", "dataset"), ("ds", bad, "run id")):
        with pytest.raises(ParameterError) as refused:
            ledger.reserve(dataset, run_id, **charge)  # type: ignore[arg-type]
        assert str(refused.value) == _said(what, code) and char not in str(refused.value)
    with pytest.raises(ParameterError) as refused:
        ledger.set_cap(bad, 1.0, 0.0)
    assert str(refused.value) == _said("dataset", code)
    assert ledger.datasets() == []
    # a visible id with spaces and any script is fine
    ledger.set_cap("régions du nord", 1.0, 0.0)
    assert ledger.datasets() == ["régions du nord"]
