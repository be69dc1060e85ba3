"""Inputs that carry a sentinel string in their cells, rows and bytes, and the runner that
puts them through every command of the CLI (issue #40, "one reading rule for messages").

Shared by the numpy engine's test (tests/app/test_no_data_in_input_errors.py) and the
Spark engine's (tests/spark/test_no_data_in_input_errors_spark.py). Each input holds
the sentinel where a reader's own message would quote it: a text cell in a numeric column,
a text label, a malformed CSV row, a file's bytes, a column of another type in one file of
a multi-file folder. The assertion: the sentinel is in no stdout, stderr, output file or
ledger file, and each run exits 0 (values read by the reading rule) or 2 (a schema or
format refusal) — never with a traceback.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dprect.release.ledger import Ledger
from tests.cli_run import messages

SENTINEL = "SENTINEL-q7Zx"
#: values of well-formed rows (a number in a read column, a group and label value of no
#: listed group), planted where a run reads them (s39-edges): like the sentinel, never
#: in a message, an output or the ledger. 7777.25 needs 15 bits of mantissa, so it is on
#: no grid these runs release (FloatBins(12), -4:4:16); a noisy sum printing it would
#: need a draw within 0.005 of it (noise scale in the thousands): about 1e-6 a run
PLANTED = ("7777.25", "SECRET_KEY_123")
N = 40


def _good(n: int = N) -> dict[str, object]:
    gen = np.random.default_rng(7)
    return {"x": gen.normal(size=n), "z": gen.normal(size=n),
            "y": (np.arange(n) % 2).astype(np.int64)}


def garbage() -> bytes:
    gen = random.Random(5)
    noise = bytes(gen.randrange(256) for _ in range(400))
    return noise[:60] + SENTINEL.encode() + noise[60:] + b"\n" + SENTINEL.encode()


def _csv(path: Path, rows: list[list[object]]) -> Path:
    path.write_text("\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return path


def _good_rows(n: int = N) -> list[list[object]]:
    g = _good(n)
    return [[round(float(a), 4), round(float(b), 4), int(c)]
            for a, b, c in zip(g["x"], g["z"], g["y"], strict=True)]  # type: ignore[call-overload]


def build(root: Path, *, delta: bool = False) -> dict[str, tuple[Path, str | None]]:
    """Every sentinel input under ``root``: name -> (path, format given or None)."""
    out: dict[str, tuple[Path, str | None]] = {}
    g = _good()

    text_x = [f"{SENTINEL} 123-45-6789" if i == 3 else "1.5" for i in range(N)]
    pq.write_table(pa.table({**g, "x": text_x}), root / "text_cell.parquet")
    out["parquet: text cell in a numeric column"] = (root / "text_cell.parquet", None)

    text_y = [SENTINEL if i == 5 else str(i % 2) for i in range(N)]
    pq.write_table(pa.table({**g, "y": text_y}), root / "text_label.parquet")
    out["parquet: text label"] = (root / "text_label.parquet", None)

    rows = _good_rows()
    rows[7][0] = SENTINEL
    out["csv: text cell in a numeric column"] = (
        _csv(root / "text_cell.csv", [["x", "z", "y"], *rows]), None)
    rows = _good_rows()
    rows[9][2] = SENTINEL
    out["csv: text label"] = (_csv(root / "text_label.csv", [["x", "z", "y"], *rows]), None)
    rows = _good_rows()
    rows[4] = [58.59, 2.43, 1, f"{SENTINEL}@example.com"]
    out["csv: malformed row"] = (_csv(root / "malformed.csv", [["x", "z", "y"], *rows]),
                                 None)

    planted_x = [7777.25 if i == 6 else float(v) for i, v in enumerate(g["x"])]
    planted_y = [PLANTED[1] if i % 9 == 4 else str(i % 2) for i in range(N)]
    pq.write_table(pa.table({**g, "x": planted_x, "y": planted_y}), root / "planted.parquet")
    out["parquet: planted value and group"] = (root / "planted.parquet", None)
    rows = _good_rows()
    for i, row in enumerate(rows):
        row[0] = 7777.25 if i == 6 else row[0]
        row[2] = PLANTED[1] if i % 9 == 4 else row[2]
    out["csv: planted value and group"] = (
        _csv(root / "planted.csv", [["x", "z", "y"], *rows]), None)

    (root / "garbage.parquet").write_bytes(garbage())
    out["parquet: garbage bytes"] = (root / "garbage.parquet", None)
    (root / "garbage.csv").write_bytes(garbage())
    out["csv: garbage bytes"] = (root / "garbage.csv", None)

    for name, other in [("renamed", {"x_renamed": g["x"], "z": g["z"], "y": g["y"]}),
                        ("text", {**g, "x": text_x}),
                        ("garbage", None)]:
        folder = root / f"folder_{name}"
        folder.mkdir()
        pq.write_table(pa.table(g), folder / "part-0.parquet")
        if other is None:
            (folder / "part-1.parquet").write_bytes(garbage())
        else:
            pq.write_table(pa.table(other), folder / "part-1.parquet")
        out[f"parquet folder: {name} file"] = (folder, "parquet")

    if delta:
        from deltalake import write_deltalake

        write_deltalake(str(root / "delta_text_cell"), pa.table({**g, "x": text_x}))
        out["delta: text cell in a numeric column"] = (root / "delta_text_cell", "delta")
        write_deltalake(str(root / "delta_text_label"), pa.table({**g, "y": text_y}))
        out["delta: text label"] = (root / "delta_text_label", "delta")
        write_deltalake(str(root / "delta_garbage"), pa.table(g))
        next((root / "delta_garbage").glob("*.parquet")).write_bytes(garbage())
        out["delta: garbage data file"] = (root / "delta_garbage", "delta")
    return out


def commands(path: Path, fmt: str | None, out: Path) -> dict[str, list[str]]:
    """fit, fit with a class list, bounds (grouped by the label column: a public list of
    groups) and describe on ``path``, writing under ``out``."""
    source = ["--input", str(path), *(["--format", fmt] if fmt else [])]
    fit = ["fit", *source, "--features", "x,z", "--epsilon", "1", "--delta", "1e-6",
           "--grid=-4:4:16"]
    return {
        "fit": [*fit, "--label", "y", "--output", str(out / "fit.json")],
        "classes": [*fit, "--label", "y", "--classes", "0,1",
                    "--output", str(out / "classes.json")],
        "bounds": ["bounds", *source, "--columns", "x,z", "--epsilon", "1",
                   "--group-by", "y", "--groups", "0,1", "--output", str(out / "bounds.json")],
        "describe": ["describe", *source, "--columns", "x,z", "--epsilon", "1",
                     "--output", str(out / "describe.json")],
    }


def _ledger_text(ledger: Path) -> str:
    """Every ledger file's content: Parquet files as their rows (they are compressed),
    others as their bytes."""
    parts = []
    for file in sorted(p for p in ledger.rglob("*") if p.is_file()):
        if file.suffix == ".parquet":
            parts.append(str(pq.read_table(file).to_pylist()))
        else:
            parts.append(file.read_bytes().decode("utf-8", "replace"))
    return "\n".join(parts)


def run_all(run: Callable[[list[str]], tuple[int, str, str]], root: Path,
            inputs: dict[str, tuple[Path, str | None]], engine: list[str]
            ) -> dict[tuple[str, str, bool], tuple[int, str]]:
    """Every command on every input, without and with a ledger (``budget init`` first):
    asserts the sentinel is nowhere and the exit code is 0 or 2; returns
    (input, command, ledger) -> (exit code, stderr)."""
    ledger = root / "ledger"
    code, _, err = run(["budget", "init", "--ledger", str(ledger)])
    assert code == 0, err
    seen: dict[tuple[str, str, bool], tuple[int, str]] = {}
    for i, (name, (path, fmt)) in enumerate(inputs.items()):
        for with_ledger in (False, True):
            out = root / f"out-{i}-{int(with_ledger)}"
            out.mkdir()
            for command, argv in commands(path, fmt, out).items():
                dataset = f"ds{i}-{command}"
                extra = (["--ledger", str(ledger), "--dataset", dataset, "--run-id",
                          f"r{i}-{command}"] if with_ledger else [])
                code, stdout, stderr = run([*argv, *engine, *extra])
                where = (name, command, with_ledger)
                assert code in (0, 2), (where, code, stderr)
                assert "Traceback" not in stderr, (where, stderr)
                for token in (SENTINEL, *PLANTED):
                    assert token not in stdout and token not in stderr, (where, token)
                if code == 2:
                    lines = messages(stderr)
                    assert len(lines) == 1, (where, stderr)
                    assert not any(out.iterdir()), (where, "a refused run wrote a file")
                    if with_ledger:  # refused before anything was reserved
                        assert Ledger(ledger).events(dataset) == [], where
                seen[where] = (code, stderr)
            for file in (p for p in out.rglob("*") if p.is_file()):
                data = file.read_bytes()
                for token in (SENTINEL, *PLANTED):
                    assert token.encode() not in data, (name, file, token)
    text = _ledger_text(ledger)
    assert all(token not in text for token in (SENTINEL, *PLANTED))
    return seen


__all__ = ["PLANTED", "SENTINEL", "build", "commands", "garbage", "run_all"]
