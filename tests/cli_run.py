"""``dprect ARGV`` run in the test's own process, as the command-line tests use it."""

from __future__ import annotations

import pytest

from dprect.app.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``dprect ARGV`` in this process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code  # type: ignore[assignment]
    out, err = capsys.readouterr()
    return code, out, err
