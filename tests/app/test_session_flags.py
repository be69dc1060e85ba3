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
AGGREGATE = ["aggregate", "--input", "t.parquet", "--columns", "a", "--statistics", "median",
             "--epsilon", "1", "--output", "out.json"]
DESCRIBE = ["describe", "--input", "t.parquet", "--columns", "a", "--epsilon", "1",
            "--output", "out.json"]
#: URLs that name no Spark Connect server, and what the refusal says of each: port 0 was
#: read as "no port" (Spark's default 15002), an empty --remote as no --remote at all (a
#: classic session), a port past 65535 as "not a number"
NOT_CONNECT_URLS = [("sc://", "looks like sc://HOST:PORT"), ("http://x", "looks like sc://"),
                    ("", "looks like sc://"), ("sc://:15002", "looks like sc://"),
                    ("sc://127.0.0.1:0", "must be a number from 1 to 65535"),
                    ("sc://127.0.0.1:99999", "must be a number from 1 to 65535"),
                    ("sc://127.0.0.1:x", "must be a number from 1 to 65535")]


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


@pytest.mark.parametrize("command", [FIT, BOUNDS, AGGREGATE, DESCRIBE], ids=lambda c: c[0])
def test_a_remote_that_is_not_a_connect_url_is_refused_first_naming_the_option(
        command: list[str], tmp_path, monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Checked with the other options: before the plan is printed, a session opened or the
    input (absent here) read; one line naming --remote, exit 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    for url, says in NOT_CONNECT_URLS:
        assert main([*command, "--engine", "spark", "--remote", url]) == 2, url
        out, err = capsys.readouterr()
        assert out == "" and err.splitlines() == [err.strip()], url
        assert err.startswith("dprect: error: --remote: ") and says in err, (url, err)
    assert not (tmp_path / "out.json").exists()


def test_a_jobs_spark_remote_that_is_not_a_connect_url_is_refused_naming_the_key(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    import fit_rectangle

    # an empty value is YAML's null there: no spark.remote (the CLI's "" is refused)
    for url, says in [(url, says) for url, says in NOT_CONNECT_URLS if url]:
        code = fit_rectangle.main([
            "--set", "fit.input=t.parquet", "--set", "fit.features=[a]",
            "--set", "fit.label=y", "--set", "fit.epsilon=1", "--set", "fit.delta=0",
            "--set", f"fit.output={tmp_path / 'out.json'}", "--set", f"spark.remote={url}"])
        assert code == 2, url
        err = capsys.readouterr().err
        assert "fit_rectangle: error: spark.remote: " in err and says in err, (url, err)
    assert not (tmp_path / "out.json").exists()


def test_a_refused_remote_is_shown_without_its_parameters(
        tmp_path, monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A Connect URL's parameters (``;token=...``) can hold a credential: the refusal
    shows the URL up to them."""
    monkeypatch.chdir(tmp_path)
    for url in ("sc://127.0.0.1:99999/;token=SECRET-TOKEN",
                "http://x/;user_id=u;token=SECRET-TOKEN"):
        assert main([*BOUNDS, "--engine", "spark", "--remote", url]) == 2
        err = capsys.readouterr().err
        assert "SECRET-TOKEN" not in err and url.split(";")[0] + ";...'" in err, err
