"""``dprect ARGV`` run in the test's own process, as the command-line tests use it."""

from __future__ import annotations

import os
import re

import pytest

from dprect.app.cli import main
from dprect.app.heartbeat import MARK

#: a heartbeat line (dprect/app/heartbeat.py): the command's ``dprect: `` or a job's
#: ``[prog] ``, then the mark and the seconds. A run that reaches the spine on a loaded
#: machine may show one on stderr after 10 s: progress, not an error.
HEARTBEAT = re.compile(r"^(dprect: |\[[^\]]+\] )" + re.escape(MARK) + r"\d+ s\): ")


def messages(text: str) -> list[str]:
    """The non-blank lines of a run's stderr (or a job's stdout) but its heartbeat lines,
    for tests that count lines or expect none; every other line is kept."""
    return [ln for ln in text.splitlines() if ln.strip() and not HEARTBEAT.match(ln)]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``dprect ARGV`` in this process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code  # type: ignore[assignment]
    out, err = capsys.readouterr()
    return code, out, err


def job_argv(config: str | os.PathLike[str] | None, *settings: str) -> list[str]:
    """A job's command line: ``--config CONFIG`` (none when None), then ``--set ITEM``
    for each setting ``KEY=VALUE``, in order (a later one wins, as on a real command
    line)."""
    argv = [] if config is None else ["--config", str(config)]
    for item in settings:
        argv += ["--set", item]
    return argv
