"""The heartbeat (dprect/app/heartbeat.py): a line every EVERY seconds naming the run's
public stage — driven by a fake clock and a fake wait, never by real time."""

from __future__ import annotations

import ctypes
import io
import os
import re
import sys

import pytest

from dprect.app.heartbeat import EVERY, PROMISE, Heartbeat, StreamLines


class FakeTime:
    """A clock that moves only when the heartbeat waits: ``waits`` waits, each of the
    requested seconds, then the run ends."""

    def __init__(self, waits: int) -> None:
        self.now, self.left, self.asked = 100.0, waits, []

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.asked.append(seconds)
        if self.left == 0:
            return True
        self.left -= 1
        self.now += seconds
        return False


def test_a_line_every_interval_naming_the_stage() -> None:
    lines: list[str] = []
    fake = FakeTime(waits=3)
    beat = Heartbeat(lines.append, clock=fake.clock, wait=fake.wait)
    seen: list[str] = []
    beat.tracking(seen.append)("reading t.parquet")
    assert seen == ["reading t.parquet"]  # the wrapped progress still gets its line
    with beat:
        pass
    assert fake.asked == [EVERY] * 4
    assert lines == [f"still running ({s:.0f} s): reading t.parquet"
                     for s in (EVERY, 2 * EVERY, 3 * EVERY)]


def test_the_lines_keep_their_schedule_when_a_line_is_slow_to_make() -> None:
    """The k-th line is due at k × EVERY from the start: a line that takes 3 s to make
    (a loaded machine) shortens the next wait instead of adding up; after a stall longer
    than a period the next line is due EVERY after the late one."""
    fake = FakeTime(waits=4)
    slow = [3.0, 3.0, EVERY + 5.0, 0.0]

    def emit(line: str) -> None:
        fake.now += slow.pop(0)

    with Heartbeat(emit, clock=fake.clock, wait=fake.wait):
        pass
    assert fake.asked == [EVERY, EVERY - 3.0, EVERY - 3.0, EVERY, EVERY]


def test_the_period_is_below_the_promise() -> None:
    """Issue #42's promise, a line at least every 10 s (docs/operations.md), with a
    margin of 4 s: the schedule's period is below it, and the command's and the jobs' heartbeat
    use that period."""
    from dprect.app.spine import Reporter

    assert PROMISE == 10.0
    assert EVERY <= PROMISE - 4.0  # the margin: heartbeat.py's notes, results.md §5.3d
    assert Reporter().every == EVERY


class _PollFd(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int), ("events", ctypes.c_short), ("revents", ctypes.c_short)]


def test_lines_come_while_the_main_thread_holds_the_interpreter(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines of a heartbeat on a real stream are written by the clock process, so they
    come on time while the run's thread holds the interpreter in a long C call (a garbage
    collection over millions of objects, docs/results.md §5.3d): here the test's thread
    waits for the lines in libc's ``poll`` and ``read`` called through ``ctypes.PyDLL``,
    which keep the interpreter's lock — a heartbeat thread of this process could write
    nothing until the call returns (the poll then ends on its 60 s limit: the test fails
    instead of hanging). Three lines are counted, each ``PREFIX still running (S s):
    STAGE``; the clock process has ended once the heartbeat exits."""
    read_end, write_end = os.pipe()
    stream = os.fdopen(write_end, "w")
    monkeypatch.setattr(sys, "stderr", stream)
    libc = ctypes.PyDLL(None)  # its calls do not release the interpreter's lock
    buffer = ctypes.create_string_buffer(4096)
    got = b""
    with Heartbeat(StreamLines("stderr", "t: "), every=0.05) as beat:
        beat.stage("drawing")
        process = beat._clock_process
        while got.count(b"\n") < 3:
            ready = _PollFd(read_end, 1, 0)  # POLLIN
            assert libc.poll(ctypes.byref(ready), 1, 60_000) == 1, "no line in 60 s"
            n = libc.read(read_end, buffer, len(buffer))
            assert n > 0
            got += buffer.raw[:n]
    assert process is not None and process.returncode is not None  # ended with the run
    stream.close()
    os.close(read_end)
    for line in got.decode().splitlines():
        assert re.fullmatch(r"t: still running \(\d+ s\): (starting|drawing)", line), line


def test_the_clock_process_shows_the_stage_and_its_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's thread sends the stage and the step's count to the clock process when
    they change: its lines name them (read until one does; no timing asserted)."""
    from dprect.engines import progress

    read_end, write_end = os.pipe()
    stream = os.fdopen(write_end, "w")
    monkeypatch.setattr(sys, "stderr", stream)
    with os.fdopen(read_end, "rb") as lines, Heartbeat(StreamLines("stderr", "t: "),
                                                        every=0.05) as beat:
        beat.stage("describing 1 column(s) in 9 group(s)")
        with progress.counting(9, "mechanism", "blocks") as tick:
            tick()
            for line in lines:
                assert line.startswith(b"t: still running (")
                if line.endswith(b"in 9 group(s), mechanism 1/9 blocks\n"):
                    break
    stream.close()


def test_a_stream_without_a_file_descriptor_is_written_by_the_thread() -> None:
    """A captured stream (no file descriptor) has no clock process: the heartbeat's thread
    writes the lines, as with a test's fake clock."""
    lines = StreamLines("stdout", "[job] ")
    captured = io.StringIO()
    old, sys.stdout = sys.stdout, captured
    try:
        assert lines.fileno() is None
        lines("still running (8 s): x")
    finally:
        sys.stdout = old
    assert captured.getvalue() == "[job] still running (8 s): x\n"


def test_the_mechanism_blocks_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    from dprect.engines import driver_pool

    lines: list[str] = []
    beat = Heartbeat(lines.append, clock=lambda: 0.0)
    beat.stage("describing 2 column(s) in 3 group(s)")
    with driver_pool.block_mapper(3, 2) as (mapper, parts):
        assert parts == 1
        results = mapper(lambda x: (beat.beat(), x)[1], [7])
        beat.beat()
        assert list(results) == [7]
        beat.beat()
        # the second round (the small groups' cells: aggregates.describe_blocks)
        assert list(mapper(lambda x: x, [8])) == [8]
        beat.beat()
    beat.beat()
    assert lines == [
        "still running (0 s): describing 2 column(s) in 3 group(s), mechanism 0/2 blocks",
        "still running (0 s): describing 2 column(s) in 3 group(s), mechanism 0/2 blocks",
        "still running (0 s): describing 2 column(s) in 3 group(s), mechanism 1/2 blocks",
        "still running (0 s): describing 2 column(s) in 3 group(s), mechanism 2/2 blocks",
        "still running (0 s): describing 2 column(s) in 3 group(s)"]


PUBLIC = re.compile(r"still running \(\d+ s\): (starting|checking the budget ledger|"
                    r"reading the input|reading \S+|"
                    r"(counting|describing|bounding|drawing the quantiles of) "
                    r"\d column\(s\) in \d+ group\(s\)|writing the outputs)"
                    r"(, (mechanism )?\d+/\d+ (blocks|cells))?")


def test_a_run_beats_at_every_stage_and_never_prints_a_value(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A describe through the CLI with a heartbeat that beats at each stage change (so no
    timing is involved): every line is one of the public stages, none holds a number of
    the data; ``--quiet`` makes no heartbeat at all."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprect.app import spine
    from dprect.app.cli import main

    made: list[Heartbeat] = []
    lines: list[str] = []

    class EveryStage(Heartbeat):
        def __init__(self, emit, every):  # type: ignore[no-untyped-def]
            assert every == EVERY
            super().__init__(lambda line: (emit(line), lines.append(line)),
                             every, wait=lambda seconds: True)
            made.append(self)

        def stage(self, text: str) -> None:
            super().stage(text)
            self.beat()

    monkeypatch.setattr(spine, "Heartbeat", EveryStage)
    values = np.random.default_rng(3).normal(1234.5, 10.0, 3000)
    pq.write_table(pa.table({"x": values, "g": np.arange(3000) % 3}), tmp_path / "t.parquet")
    argv = ["describe", "--input", str(tmp_path / "t.parquet"), "--columns", "x",
            "--epsilon", "1", "--group-by", "g", "--groups", "0,1,2", "--seed", "1"]
    assert main([*argv, "--output", str(tmp_path / "a.json")]) == 0
    err = capsys.readouterr().err
    assert len(made) == 1 and len(lines) >= 3
    assert [ln.split(": ", 1)[1].split(",")[0] for ln in lines[:1]] == ["reading the input"]
    assert any("describing" in ln for ln in lines) and "writing the outputs" in lines[-1]
    for line in lines:
        assert PUBLIC.fullmatch(line), line
        assert f"dprect: {line}" in err  # on stderr
    assert main([*argv, "--output", str(tmp_path / "b.json"), "--quiet"]) == 0
    assert len(made) == 1  # no heartbeat under --quiet


def test_the_tests_line_filter_drops_the_heartbeat_and_nothing_else() -> None:
    """tests/cli_run.py ``messages``: the line counts of CLI and job tests skip the
    heartbeat's lines (a loaded machine may print one after 10 s) and keep every other
    line — an error that merely mentions the mark included."""
    from cli_run import messages

    fake = FakeTime(waits=1)
    beat = Heartbeat(lambda _: None, clock=fake.clock, wait=fake.wait)
    beat.stage("reading t.parquet")
    fake.now += 12
    cli_line, job_line = f"dprect: {beat.line()}", f"[fit_rectangle] {beat.line()}"
    errors = ["dprect: error: cannot read 'still running (1 s): x.csv' as csv",
              "fit_rectangle: error: still running (1 s): no", "dprect: interrupted",
              f"  {cli_line}"]
    text = "\n".join([cli_line, errors[0], "", job_line, *errors[1:]]) + "\n"
    assert messages(text) == errors
    assert messages("") == []


def test_a_step_counts_its_units_and_ends_however_it_ends() -> None:
    """dprect/engines/progress.py: ``counted_cells`` counts each cell looked up (a missing
    one too) as the step's cells; the step ends on an exception as on return."""
    from dprect.engines import progress

    assert progress.current() is None
    cells = {(0, 0): "a", (1, 0): "b"}
    with progress.counted_cells(cells, 3) as counted:
        assert progress.current() == "mechanism 0/3 cells"
        assert counted.get((0, 0)) == "a" and counted[(1, 0)] == "b"
        assert counted.get((2, 0), "none") == "none"
        assert progress.current() == "mechanism 3/3 cells"
        assert len(counted) == 2 and list(counted) == list(cells)
    assert progress.current() is None
    with pytest.raises(KeyError), progress.counting(4, "", "cells") as tick:
        tick()
        assert progress.current() == "1/4 cells"
        raise KeyError
    assert progress.current() is None


@pytest.mark.parametrize(("statistics", "verb", "unit"), [
    ("coverage", "bounding", "cells"), ("median,p90", "drawing the quantiles of", "cells"),
    ("count,mean", "describing", "blocks")])
def test_every_mechanism_shows_how_far_it_has_got(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        statistics: str, verb: str, unit: str) -> None:
    """A grouped run of each mechanism through the CLI, its heartbeat beating at every
    unit a step counts (no timing involved): the numpy engine's count shows its cells
    counted of groups × columns, and the mechanism its cells (coverage, quantiles) or
    blocks (describe) done of all — public numbers only, on stderr."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprect.app import spine
    from dprect.app.cli import main
    from dprect.engines import progress

    lines: list[str] = []
    made: list[Heartbeat] = []

    class AtEveryUnit(Heartbeat):
        def __init__(self, emit, every):  # type: ignore[no-untyped-def]
            super().__init__(lambda line: (emit(line), lines.append(line)), every,
                             wait=lambda seconds: True)
            made.append(self)

    step_one = progress.STEP.one

    def one() -> None:
        step_one()
        made[-1].beat()

    monkeypatch.setattr(spine, "Heartbeat", AtEveryUnit)
    monkeypatch.setattr(progress.STEP, "one", one)
    groups, rows = 7, 2100
    gen = np.random.default_rng(5)
    pq.write_table(pa.table({"x": gen.normal(50, 10, rows), "y": gen.normal(0, 1, rows),
                             "g": np.arange(rows) % groups}), tmp_path / "t.parquet")
    assert main(["aggregate", "--statistics", statistics, "--input",
                 str(tmp_path / "t.parquet"), "--columns", "x,y", "--epsilon", "1",
                 "--group-by", "g", "--groups", ",".join(map(str, range(groups))),
                 "--seed", "1", "--output", str(tmp_path / "a.json")]) == 0
    err = capsys.readouterr().err
    cells = groups * 2
    shape = f"2 column(s) in {groups} group(s)"
    counted = [ln for ln in lines if f"counting {shape}, " in ln]
    assert counted[-1].endswith(f", {cells}/{cells} cells"), lines
    assert len(counted) == cells  # one line per cell counted, each a step further
    drawn = [ln.split(", ")[-1] for ln in lines if f"{verb} {shape}, " in ln]
    assert drawn and drawn[-1].startswith("mechanism ") and drawn[-1].endswith(unit)
    done, total = drawn[-1].split()[1].split("/")
    assert done == total and (unit == "blocks" or int(total) == cells), drawn
    for line in lines:
        assert PUBLIC.fullmatch(line), line
        assert f"dprect: {line}" in err


def test_a_polled_step_reads_its_count_when_asked_and_caps_it() -> None:
    """dprect/engines/progress.py ``polled``: units done elsewhere (the Spark executor
    route's blocks) are read from a function at each line, never past the total, in the
    same format as a counted step; the step ends on an exception as on return."""
    from dprect.engines import progress

    done = [0]
    with progress.polled(16, "mechanism", "blocks", lambda: done[0]):
        assert progress.current() == "mechanism 0/16 blocks"
        done[0] = 5
        assert progress.current() == "mechanism 5/16 blocks"
        done[0] = 40  # a task run twice counts twice: capped
        assert progress.current() == "mechanism 16/16 blocks"
    assert progress.current() is None
    with pytest.raises(KeyError), progress.polled(2, "", "blocks", lambda: 1):
        raise KeyError
    assert progress.current() is None
    with progress.counting(3, "", "cells") as tick:  # a counted step after: not polled
        tick()
        assert progress.current() == "1/3 cells"
