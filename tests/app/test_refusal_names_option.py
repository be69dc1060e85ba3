"""A refusal names the option in the words of the interface it came through: on the
command line its flag (``--interval-level``), in a job's configuration its key
(``aggregate.interval_level``), in the Python API its keyword (``interval_level``).

The core's checks name a parameter by its Python name and carry it as
:attr:`~dprect.core.errors.ParameterError.parameter`; the command line and the jobs spell
it in their own words (:func:`dprect.app.spine.in_words`). Before, a bad value of an option
the core checks printed the Python name on the command line (``dprect aggregate ...
--interval-level 1.5``: "interval_level must be a number in (0, 1)") and in a job.

Every option of every product command the registry generates is given values a check
may refuse (numpy engine, ``--plan-only`` where the command has it, an input that does
not exist: nothing is read or written)."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest
from cli_run import job_argv, messages, run

from dprect.app.cli import build_parser
from dprect.app.products import COMMANDS
from dprect.app.spine import option_names

#: each command's required options, valid; the input does not exist
BASE = {
    "fit": ["--features", "x,y", "--label", "l", "--epsilon", "1", "--delta", "1e-6",
            "--output", "{tmp}/f.json"],
    "aggregate": ["--columns", "x", "--statistics", "mean", "--epsilon", "1",
                  "--plan-only"],
    "bounds": ["--columns", "x", "--epsilon", "1", "--plan-only"],
    "describe": ["--columns", "x", "--epsilon", "1", "--plan-only"],
}
#: values some check refuses: out of (0, 1) and of > 0, not a number, tiny, a repeat, a
#: grid of a column no run has
BAD = ("-1", "1.5", "nan", "1e-300", "x,x", "z=float")
#: options whose value is a path or where Spark runs, not a parameter a check refuses
SKIP = {"-h", "--input", "--engine", "--master", "--remote"}


def _flags(command: str) -> list[str]:
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ ==
               "_SubParsersAction")
    return [a.option_strings[0] for a in sub.choices[command]._actions
            if a.option_strings and a.nargs != 0 and a.option_strings[0] not in SKIP]


CASES = [(command, flag) for command in COMMANDS for flag in _flags(command)]


def _python_name(line: str, prefix: str) -> str | None:
    """The run option a refusal names by its Python name: the message's first word
    (``interval_level must be ...``), or an underscored option name anywhere bare. "input
    '...' does not exist" names the table read, in words, as every front end does."""
    names = option_names() - {"input"}
    text = line.removeprefix(prefix)
    first = re.match(r"([a-z_]+)[ :]", text)
    if first and first.group(1) in names:
        return first.group(1)
    return next((w for w in re.findall(r"(?<![-\w.])([a-z]+(?:_[a-z]+)+)(?!\w)", text)
                 if w in names), None)


def test_every_product_command_has_options_to_try() -> None:
    assert set(BASE) == set(COMMANDS)
    assert {"--interval-level", "--query-epsilon", "--beta"} <= set(_flags("aggregate"))


@pytest.mark.parametrize(("command", "flag"), CASES, ids=[f"{c}{f}" for c, f in CASES])
def test_a_refused_option_is_named_by_its_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, flag: str) -> None:
    base = [a.format(tmp=tmp_path) for a in BASE[command]]
    if flag in base:  # the option's own valid value goes: the bad one replaces it
        at = base.index(flag)
        del base[at:at + 2]
    for bad in BAD:
        code, _, err = run([command, "--input", str(tmp_path / "absent.parquet"), *base,
                            flag, bad], capsys)
        lines = messages(err)
        if code != 2 or not lines or not lines[-1].startswith("dprect: error: "):
            continue  # accepted (nothing was there to read), or argparse's own usage line
        named = _python_name(lines[-1], "dprect: error: ")
        assert named is None, (bad, lines[-1])


@pytest.mark.parametrize("extra", [["--method", "randmargins"], ["--method", "quantiles"],
                                   ["--classes", "a,b"]],
                         ids=["randmargins", "quantiles", "classes"])
def test_a_refusal_naming_several_options_names_each_by_its_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]) -> None:
    """``--target-miss`` a run cannot use, or without the N it needs: the message names
    ``--method`` and ``--positives`` as well, each by its flag."""
    code, _, err = run(["fit", "--input", str(tmp_path / "absent.parquet"),
                        *[a.format(tmp=tmp_path) for a in BASE["fit"]], "--target-miss",
                        "0.1", *extra], capsys)
    (line,) = messages(err)
    assert code == 2 and line.startswith("dprect: error: --target-miss "), line
    assert "--positives" in line or "--method=" in line, line
    assert _python_name(line, "dprect: error: ") is None, line


@pytest.mark.parametrize(("key", "bad", "says"), [
    ("interval_level", "1.5", "must be a number in (0, 1), got 1.5"),
    ("query_epsilon", "0", "must be a finite number > 0, got 0.0"),
    ("beta", "2", "must be a number in the open interval (0, 1), got 2.0"),
])
def test_a_jobs_refused_option_is_named_by_its_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, bad: str,
        says: str) -> None:
    import aggregate

    code = aggregate.main(job_argv(
        None, f"aggregate.input={tmp_path / 'absent.parquet'}", "aggregate.columns=[x]",
        "aggregate.statistics=mean", "aggregate.epsilon=1",
        f"aggregate.output={tmp_path / 'a.json'}", f"aggregate.{key}={bad}"))
    err = capsys.readouterr().err
    assert code == 2 and messages(err) == [f"aggregate: error: aggregate.{key} {says}"], err
    assert list(tmp_path.iterdir()) == []


def test_the_api_keeps_its_keyword() -> None:
    from dprect.core.errors import ParameterError
    from dprect.core.intervals import check_level

    with pytest.raises(ParameterError, match=r"^interval_level must be a number in "
                                             r"\(0, 1\), got 1\.5$") as refused:
        check_level(1.5)
    assert refused.value.parameter == "interval_level"
    # an error that crosses a process (a Spark task's) keeps its class and its option
    from dprect.app.jobs_support import ConfigError

    for error in (refused.value, ConfigError(" is required", parameter="epsilon")):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == str(error)
        assert again.spelled(lambda p: f"--{p}") == error.spelled(lambda p: f"--{p}")
