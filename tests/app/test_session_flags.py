"""Where Spark runs is declared once (dprect.app.session_options): ``--master`` and
``--remote`` on ``dprect fit`` and ``dprect bounds``, ``spark.master`` and
``spark.remote`` in the jobs' configuration. No Spark needed."""

from __future__ import annotations

import pytest

from dprect.app.cli import build_parser, main
from dprect.app.jobs_support import SPARK_OPTIONS
from dprect.app.session_options import SESSION_OPTIONS

FIT = ["fit", "--input", "t.parquet", "--features", "a", "--label", "y", "--epsilon", "1",
       "--delta", "1e-6", "--output", "out.json"]
BOUNDS = ["bounds", "--input", "t.parquet", "--columns", "a", "--epsilon", "1",
          "--output", "out.json"]


def test_every_session_option_is_a_flag_of_fit_and_bounds_and_a_job_key() -> None:
    assert set(SESSION_OPTIONS) == {"master", "remote"}
    parser = build_parser()
    for command in (FIT, BOUNDS):
        for key in SESSION_OPTIONS:
            args = parser.parse_args([*command, f"--{key}", "x"])
            assert getattr(args, key) == "x"
    for key, option in SESSION_OPTIONS.items():
        assert SPARK_OPTIONS[key].kind == "str"
        assert SPARK_OPTIONS[key].help.startswith(option.help)


@pytest.mark.parametrize("command", [FIT, BOUNDS])
def test_master_and_remote_are_exclusive(command: list[str], tmp_path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main([*command, "--engine", "spark", "--master", "local[1]",
              "--remote", "sc://127.0.0.1:15002"])
    assert stop.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize("command", [FIT, BOUNDS])
def test_remote_needs_the_spark_engine(command: list[str], tmp_path, monkeypatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*command, "--remote", "sc://127.0.0.1:15002"]) == 2
    assert "--remote needs --engine spark" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()
