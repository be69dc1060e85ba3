"""What a run leaves when its outputs or its ledger cannot be written, or it is stopped
while writing (session 40's audit as a non-root user): one line, a documented exit code,
no staged or partial file, and the ledger as docs/operations.md ("Failure and partial
outputs") says. The test suite runs as root, which writes anywhere, so each test says
what it simulates: a write that fails (monkeypatched, with the operating system's error
number) or a permission root would bypass (``os.access`` monkeypatched)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import messages, run
from sink_table import sink_table

from dprect.release.ledger import Ledger

_table = sink_table


def _files(folder):
    """Every file and folder under ``folder`` (hidden ones too), relative."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


DESCRIBE = ["describe", "--columns", "f0,f1", "--group-by", "g", "--groups", "a,b",
            "--epsilon", "1", "--seed", "3"]


def test_an_interrupt_while_publishing_leaves_no_staged_file(tmp_path, capsys,
                                                             monkeypatch):
    """Ctrl-C (or SIGTERM, an interrupt too) after the files are staged and before they
    are renamed into place: exit 130, one line, and no temporary file left beside the
    outputs — the release is recorded, and re-running the run id publishes every output.
    (Simulated: the first rename raises KeyboardInterrupt. Before, publish removed staged
    files on an error only, and ``.r.json.XXXX.tmp`` stayed.)"""
    import dprect.release.sinks as sinks

    data = _table(tmp_path)
    led = tmp_path / "ledger"
    Ledger(led).init()
    out = tmp_path / "out"
    argv = [*DESCRIBE, "--input", str(data), "--output", str(out / "r.json"),
            "--table", str(out / "t.csv"), "--plot", str(out / "p.png"),
            "--ledger", str(led), "--dataset", "ds", "--run-id", "r1"]
    real = sinks.commit_staged

    def interrupted(tmp, path):
        raise KeyboardInterrupt

    monkeypatch.setattr(sinks, "commit_staged", interrupted)
    code, _, err = run(argv, capsys)
    assert code == 130 and messages(err) == ["dprect: interrupted"], err
    assert not out.exists(), _files(out)  # nor the folder the run made for them
    assert [e["event"] for e in Ledger(led).events("ds")] == ["reserve", "release"]

    monkeypatch.setattr(sinks, "commit_staged", real)
    code, printed, err = run(argv, capsys)
    assert code == 0 and "was released before" in printed, err
    assert _files(out) == ["p.png", "r.json", "t.csv"]


#: per output: the command's arguments (without --output) and the option and file name of
#: the output made read-only (``--output`` itself, or another beside a good --output)
READ_ONLY = {
    "fit JSON": (["fit", "--features", "f0,f1", "--label", "label", "--grid", "0:10:1024",
                  "--epsilon", "1", "--delta", "1e-6", "--seed", "3"], "--output", "r.json"),
    "fit PNG": (["fit", "--features", "f0,f1", "--label", "label", "--grid", "0:10:1024",
                 "--epsilon", "1", "--delta", "1e-6", "--seed", "3"], "--plot", "r.png"),
    "describe CSV": (DESCRIBE, "--table", "t.csv"),
    "describe PNG": (DESCRIBE, "--plot", "d.png"),
}


@pytest.mark.parametrize("output", sorted(READ_ONLY))
def test_a_read_only_output_file_is_refused_before_the_charge(tmp_path, capsys, monkeypatch,
                                                              output):
    """An existing output file its owner made read-only (mode 0444) is refused like an
    unwritable folder: one line naming the option and "read-only", exit 2, nothing
    reserved, the file untouched. (Before, the check probed the folder only, and the
    rename that commits an output replaced the read-only file.) Simulated as a non-root
    user sees it: root's ``os.access`` says every file is writable, so the test's answers
    follow the file's mode bits."""
    import os
    import stat

    import dprect.release.files as files

    def as_a_user(path, mode, **kwargs):
        if mode & os.W_OK and os.path.isfile(path):
            return bool(os.stat(path).st_mode & stat.S_IWUSR)
        return True

    monkeypatch.setattr(files.os, "access", as_a_user)
    args, option, name = READ_ONLY[output]
    data = _table(tmp_path)
    led = tmp_path / "ledger"
    Ledger(led).init()
    out = tmp_path / "out"
    out.mkdir()
    kept = out / name
    kept.write_bytes(b"yesterday's result\n")
    kept.chmod(0o444)
    outputs = ["--output", str(kept)] if option == "--output" else \
        ["--output", str(out / "other.json"), option, str(kept)]
    before = _files(tmp_path)
    code, printed, err = run([*args, "--input", str(data), *outputs, "--ledger", str(led),
                              "--dataset", "ds"], capsys)
    assert code == 2 and printed == "", (code, printed, err)
    lines = messages(err)
    assert len(lines) == 1 and lines[0].startswith(f"dprect: error: {option} "), err
    assert "the file is read-only" in lines[0], lines[0]
    assert Ledger(led).events("ds") == []
    assert kept.read_bytes() == b"yesterday's result\n"
    assert _files(tmp_path) == before


def test_outputs_get_the_umask_s_permissions_or_keep_their_own(tmp_path, capsys):
    """A new output is readable as any file the user creates (``0o666 & ~umask``: 0644
    under umask 022), not owner-only; a rewritten one keeps its mode. (Before, every
    output had the 0600 of the temporary file it was renamed from, so a result written
    for a team was unreadable by it.)"""
    import os
    import stat

    data = _table(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "t.csv").write_text("old\n")
    (out / "t.csv").chmod(0o640)
    mask = os.umask(0o022)
    try:
        code, _, err = run([*DESCRIBE, "--input", str(data), "--output", str(out / "r.json"),
                            "--table", str(out / "t.csv"), "--plot", str(out / "p.png")],
                           capsys)
    finally:
        os.umask(mask)
    assert code == 0, err
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()}
    assert modes == {"r.json": 0o644, "p.png": 0o644, "t.csv": 0o640}, modes


def _full_disk_for(monkeypatch, events):
    """The ledger's event files cannot be written for rows of ``events`` (simulated: a
    full disk, ENOSPC, raised by pyarrow's writer with a text of its own that must not be
    shown); returns the list of events refused."""
    import errno

    import pyarrow.parquet as pq

    real, refused = pq.write_table, []

    def write_table(table, where, *args, **kwargs):
        event = table.column("event")[0].as_py() if "event" in table.column_names else None
        if event in events:
            refused.append(event)
            with open(where, "wb") as fh:  # a part of the file, as a full disk leaves it
                fh.write(b"PAR1")
            raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] "
                                        "library text")
        return real(table, where, *args, **kwargs)

    monkeypatch.setattr(pq, "write_table", write_table)
    return refused


FIT = ["fit", "--features", "f0,f1", "--label", "label", "--grid", "0:10:1024",
       "--epsilon", "1", "--delta", "1e-6", "--seed", "3"]


def test_a_ledger_that_cannot_take_the_reservation_charges_nothing(tmp_path, capsys,
                                                                  monkeypatch):
    """The reservation's row cannot be written (a full disk): one line naming the ledger,
    the operating system's reason and "nothing was charged", exit 2; no event, no output,
    no part of the event file left. (Before, the line was pyarrow's own text, "[Errno 28]
    Error writing bytes to file. Detail: …", and a job ended as an internal error.)"""
    data = _table(tmp_path)
    led = tmp_path / "ledger"
    Ledger(led).init()
    before = _files(led)
    refused = _full_disk_for(monkeypatch, {"reserve"})
    code, _, err = run([*FIT, "--input", str(data), "--output", str(tmp_path / "o" / "r.json"),
                        "--ledger", str(led), "--dataset", "ds"], capsys)
    assert refused == ["reserve"] and code == 2, err
    assert messages(err) == [f"dprect: error: cannot write the budget ledger at {led} "
                             "(No space left on device); nothing was charged"], err
    assert Ledger(led).events("ds") == []
    assert [f for f in _files(led) if f != "_dprect_results"] == \
        [f for f in before if f != "_dprect_results"]
    assert not (tmp_path / "o").exists()


def test_a_ledger_that_cannot_take_the_release_keeps_the_charge_and_a_retry_uses_it(
        tmp_path, capsys, monkeypatch):
    """The release's row cannot be written (the disk filled during the run): one line
    saying the run stays charged and nothing was released, exit 2, no output; the run is
    ``reserved`` (charged, as a killed run's), and re-running the run id
    once the ledger can be written runs it under that one charge. (Before, pyarrow's own
    text.)"""
    data = _table(tmp_path)
    led = tmp_path / "ledger"
    Ledger(led).init()
    out = tmp_path / "o" / "r.json"
    argv = [*FIT, "--input", str(data), "--output", str(out), "--ledger", str(led),
            "--dataset", "ds", "--run-id", "r1"]
    refused = _full_disk_for(monkeypatch, {"release", "fail"})
    code, _, err = run(argv, capsys)
    assert refused == ["release"] and code == 2, err
    (line,) = messages(err)
    assert line.startswith(f"dprect: error: cannot write the budget ledger at {led} "
                           "(No space left on device); the run stays charged (reserved) "
                           "and nothing was released"), line
    assert "library text" not in line and not out.exists()
    assert Ledger(led).run("ds", "r1").status == "reserved"

    monkeypatch.undo()
    code, _, err = run(argv, capsys)
    assert code == 0, err
    assert [e["event"] for e in Ledger(led).events("ds")] == ["reserve", "release"]
    assert out.exists()


#: per Delta output: the command's arguments and the option naming the table
DELTA_OUTPUTS = {
    "describe --table": (DESCRIBE, "--table"),
    "fit --results-table": (FIT, "--results-table"),
}


@pytest.mark.parametrize("output", sorted(DELTA_OUTPUTS))
def test_a_failed_first_delta_commit_leaves_no_folder_and_the_replay_publishes(
        tmp_path, capfd, monkeypatch, output):
    """A new Delta output whose write fails on a full disk after its data file (delta-rs:
    a part file written, no commit, a native thread's panic on file descriptor 2, an
    error whose only errno is "(os error 28)" in its text): one line on stderr, "no output
    was written (No space left on device)", exit 2, no table folder left; the replay of the
    run id then writes every output. (Before, the folder of part files stayed — and the
    replay was refused: "is a folder that is not empty and holds no Delta table" — the
    panic's lines reached stderr, and the reason was "(OSError)".) Simulated: delta-rs's
    write replaced by one failing that way."""
    import os
    import uuid

    import deltalake

    from dprect.app.cli import main

    args, option = DELTA_OUTPUTS[output]
    data = _table(tmp_path)
    led = tmp_path / "ledger"
    Ledger(led).init()
    table = tmp_path / "lake" / "t"
    argv = [*args, "--input", str(data), "--output", str(tmp_path / "o" / "r.json"),
            option, str(table), "--ledger", str(led), "--dataset", "ds", "--run-id", "r1"]
    real = deltalake.write_deltalake

    def full_disk(path, *a, **k):
        where = os.fspath(path)
        os.makedirs(os.path.join(where, "_delta_log"), exist_ok=True)
        with open(os.path.join(where, f"part-00000-{uuid.uuid4()}.parquet"), "wb") as fh:
            fh.write(b"PAR1")
        os.write(2, b"thread 'tokio-rt-worker' panicked at buffered.rs:369:41:\n")
        raise OSError("Generic LocalFileSystem error: Unable to copy data to file: "
                      "No space left on device (os error 28)")

    monkeypatch.setattr(deltalake, "write_deltalake", full_disk)
    capfd.readouterr()
    assert main(argv) == 2
    err = capfd.readouterr().err
    (line,) = messages(err)
    assert line.startswith("dprect: error: no output was written (No space left on "
                           "device); the result is released"), err
    assert not (tmp_path / "lake").exists(), _files(tmp_path / "lake")  # nor its parent
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "o" / "r.json").exists()

    monkeypatch.setattr(deltalake, "write_deltalake", real)
    assert main(argv) == 0, capfd.readouterr().err
    assert "was released before" in capfd.readouterr().out
    assert (table / "_delta_log").is_dir() and (tmp_path / "o" / "r.json").exists()
    assert [e["event"] for e in Ledger(led).events("ds")] == ["reserve", "release"]


def test_a_failed_publish_removes_the_folders_it_made_and_only_those(tmp_path, capsys,
                                                                    monkeypatch):
    """Outputs in folders that do not exist yet, the first rename failing (a full disk):
    exit 2, "no output was written", and the folders the run made for its outputs are
    gone — but not a folder that was there before (empty), nor one the run made that
    another writer put a file in meanwhile (nor that folder's parents). The replay then
    writes every output. (Before, ``out/a/b/`` and ``out/c/`` stayed, empty: "nothing
    written" left folders.) Simulated: the rename raises ENOSPC after a file appears."""
    import errno

    import dprect.release.sinks as sinks

    data = _table(tmp_path)
    led = tmp_path / "ledger"
    Ledger(led).init()
    out, kept = tmp_path / "out", tmp_path / "kept"
    kept.mkdir()
    argv = [*DESCRIBE, "--input", str(data), "--output", str(out / "a" / "b" / "r.json"),
            "--table", str(out / "c" / "t.csv"), "--plot", str(kept / "p.png"),
            "--ledger", str(led), "--dataset", "ds", "--run-id", "r1"]
    real = sinks.commit_staged

    def full_disk(tmp, path):
        (out / "a" / "other.txt").write_text("another writer's\n")
        raise OSError(errno.ENOSPC, "library text")

    monkeypatch.setattr(sinks, "commit_staged", full_disk)
    code, _, err = run(argv, capsys)
    assert code == 2, err
    (line,) = messages(err)
    assert line.startswith("dprect: error: no output was written (No space left on "
                           "device)"), line
    assert _files(out) == ["a", "a/other.txt"]  # b/ and c/ removed; a/ holds a file
    assert kept.is_dir() and _files(kept) == []

    monkeypatch.setattr(sinks, "commit_staged", real)
    code, printed, err = run(argv, capsys)
    assert code == 0 and "was released before" in printed, err
    assert _files(out) == ["a", "a/b", "a/b/r.json", "a/other.txt", "c", "c/t.csv"]
    assert _files(kept) == ["p.png"]


def test_a_partly_published_run_keeps_the_folders_of_what_it_wrote(tmp_path, capsys,
                                                                   monkeypatch):
    """The second rename fails: the output renamed first stays (the error says 1 of 2
    was written), with the folders it is in; the folder made for the other one, left
    empty, is removed. Simulated: the second rename raises ENOSPC."""
    import errno

    import dprect.release.sinks as sinks

    data = _table(tmp_path)
    out = tmp_path / "out"
    argv = [*DESCRIBE, "--input", str(data), "--output", str(out / "j" / "r.json"),
            "--table", str(out / "t" / "deep" / "t.csv")]
    real, renamed = sinks.commit_staged, []

    def second_fails(tmp, path):
        if renamed:
            raise OSError(errno.ENOSPC, "library text")
        renamed.append(Path(path))
        real(tmp, path)

    monkeypatch.setattr(sinks, "commit_staged", second_fails)
    code, _, err = run(argv, capsys)
    assert code == 2, err
    (line,) = messages(err)
    assert "1 of 2 outputs were written and the others not (No space left" in line, line
    (written,) = renamed
    shown = {"j/r.json": ["j", "j/r.json"], "t/deep/t.csv": ["t", "t/deep", "t/deep/t.csv"]}
    assert _files(out) == shown[str(written.relative_to(out))]
