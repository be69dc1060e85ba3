"""What a run leaves when its outputs or its ledger cannot be written, or it is stopped
while writing (session 40's audit as a non-root user): one line, a documented exit code,
no staged or partial file, and the ledger as docs/operations.md ("Failure and partial
outputs") says. The test suite runs as root, which writes anywhere, so each test says
what it simulates: a write that fails (monkeypatched, with the operating system's error
number) or a permission root would bypass (``os.access`` monkeypatched)."""

from __future__ import annotations

from cli_run import messages, run

from dprect.release.ledger import Ledger


def _table(folder):
    """A small table every product reads: columns f0, f1, a 0/1 label, a group g."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    gen = np.random.default_rng(40)
    n = 3000
    x = gen.uniform(0, 10, (n, 2))
    y = ((x > 2) & (x < 7)).all(axis=1).astype(np.int64)
    path = folder / "t.parquet"
    pq.write_table(pa.table({"f0": x[:, 0], "f1": x[:, 1], "label": y,
                             "g": np.where(gen.random(n) < 0.5, "a", "b")}), path)
    return path


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
    assert not out.exists() or _files(out) == [], _files(out)
    assert [e["event"] for e in Ledger(led).events("ds")] == ["reserve", "release"]

    monkeypatch.setattr(sinks, "commit_staged", real)
    code, printed, err = run(argv, capsys)
    assert code == 0 and "was released before" in printed, err
    assert _files(out) == ["p.png", "r.json", "t.csv"]
