"""Groups found privately on Spark (docs/privacy.md §18): the key counts of the Spark
route (a ``groupBy`` count in the executors) equal the numpy route's for string and
numeric group columns (nulls and NaN no key, integers and their doubles one key), and for
a seed the kept keys and the whole release are the same on both engines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import run

from dprect.core.domains import FloatBins
from dprect.core.request import Source
from dprect.core.statistic import COVERAGE
from dprect.engines.grouped import NumpyGroupedRoute


def _table(tmp_path: Path) -> Path:
    """Keys of 1 … 60 rows (so many are kept with a probability strictly between 0 and 1
    at (0.5, 1e-3): N = 28), a string and a numeric group column with nulls and a NaN."""
    rng = np.random.default_rng(7)
    sizes = {i: 1 + (i * 7) % 60 for i in range(80)}
    ids = np.repeat(np.array(list(sizes)), list(sizes.values()))
    rng.shuffle(ids)
    words = [None if i == 3 else f"key{i}" for i in ids]
    numbers = [None if i == 5 else (float("nan") if i == 6 else float(i) * 0.5)
               for i in ids]
    path = tmp_path / "keys.parquet"
    pq.write_table(pa.table({"s": pa.array(words, pa.string()),
                             "n": pa.array(numbers, pa.float64()),
                             "x": rng.normal(size=len(ids))}), path, row_group_size=500)
    return path


def test_spark_counts_the_keys_numpy_counts(spark, tmp_path: Path) -> None:
    from dprect.engines.spark.grouped_route import SparkGroupedRoute

    path = _table(tmp_path)
    spec = COVERAGE.spec([FloatBins()], ())
    for column in ("s", "n"):
        source = Source(str(path), ["x"], group_by=column)
        with NumpyGroupedRoute().open(source, None, spec, lambda _: None) as prepared:
            numpy_counts = prepared.key_counts()
        with SparkGroupedRoute(lambda: (spark, False)).open(
                source, None, spec, lambda _: None) as prepared:
            spark_counts = prepared.key_counts()
        assert spark_counts == numpy_counts
        # s: key 3 is null; n: key 5 is null and key 6 NaN — no key
        assert len(numpy_counts) == {"s": 79, "n": 78}[column]
    assert numpy_counts["3.5"] == 1 + 49 % 60 and "2.5" not in numpy_counts


@pytest.mark.parametrize(("column", "listed"), [
    ("s", ()), ("n", ()),
    # a public list beside the selection: a key of 1 row, one of 8, one absent; numbers
    # as the user writes them ("1.0" names key 1)
    ("s", ("key0", "key1", "nothere")), ("n", ("1.0", "0.5", "99"))])
def test_the_same_keys_and_release_on_both_engines_for_a_seed(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str,
        listed: tuple[str, ...]) -> None:
    path = _table(tmp_path)
    outputs = {}
    public = ["--groups", ",".join(listed)] if listed else []
    for engine in ("numpy", "spark"):
        out, table = tmp_path / f"{engine}.json", tmp_path / f"{engine}.csv"
        code, _, err = run(["aggregate", "--statistics", "count,mean", "--input", str(path),
                            "--columns", "x", "--epsilon", "1", "--group-by", column,
                            *public, "--select-groups", "--selection-epsilon", "0.5",
                            "--selection-delta", "1e-3", "--seed", "9", "--engine", engine,
                            "--output", str(out), "--table", str(table), "--quiet"], capsys)
        assert code == 0, err
        outputs[engine] = (json.loads(out.read_text()), table.read_text())
    assert outputs["spark"] == outputs["numpy"]
    kept = outputs["numpy"][0]["groups"]
    assert 20 < len(kept) < 78  # some keys of few rows dropped, the large ones kept
    assert kept[:len(listed)] == list(listed)  # every listed group, first
    assert len(set(kept)) == len(kept)


def test_a_selection_that_keeps_no_key_is_an_ordinary_run_on_both_engines(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Whether a key passes the threshold depends on the data: a selection that keeps
    none (keys of one row each; a group column of Arrow's null type, no key at all) is an
    ordinary run, charged, with the same result for a seed on both engines — Spark's pass
    refused it after the reservation ("a group column needs the public list of group
    values"), a refusal that depended on the rows."""
    from dprect.release.ledger import Ledger

    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"z": np.linspace(0, 1, 30), "k": pa.array(range(30)),
                             "none": pa.nulls(30)}), path)
    for group in ("k", "none"):
        results = {}
        for engine in ("numpy", "spark"):
            out = tmp_path / f"{group}-{engine}.json"
            dataset = f"{group}-{engine}"
            code, _, err = run(["aggregate", "--input", str(path), "--columns", "z",
                                "--statistics", "count,mean", "--epsilon", "1",
                                "--group-by", group, "--select-groups",
                                "--selection-epsilon", "0.5", "--selection-delta", "1e-9",
                                "--engine", engine, "--output", str(out), "--seed", "5",
                                "--quiet", "--ledger", str(ledger), "--dataset", dataset],
                               capsys)
            assert code == 0, (group, engine, err)
            results[engine] = json.loads(out.read_text())
            assert len(Ledger(str(ledger)).events(dataset)) > 0  # charged, as any run
        assert results["numpy"]["group_selection"]["groups_kept"] == 0
        assert results["spark"] == results["numpy"], group


@pytest.mark.parametrize("command", ["aggregate", "fit"])
def test_keys_that_are_not_utf8_are_read_alike_on_both_engines(
        spark, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    """A Parquet string column holding bytes that are not UTF-8: Spark reads each bad
    sequence as one U+FFFD; the numpy engine raised UnicodeDecodeError after the
    reservation (tests/app/test_text_keys_not_utf8.py) and now reads them as Spark does —
    the same keys, classes and bytes for a seed."""
    from tests.app.test_text_keys_not_utf8 import SELECT, bad_text_table

    path = bad_text_table(tmp_path / "t.parquet", "y", rows=3000)
    asked = (["aggregate", "--columns", "x", "--statistics", "count,mean", "--group-by",
              "y", "--epsilon", "1"] if command == "aggregate" else
             ["fit", "--features", "x,z", "--label", "y", "--grid=-4:4:16", "--epsilon",
              "1", "--delta", "1e-6"])
    outputs = {}
    for engine in ("numpy", "spark"):
        out = tmp_path / f"{engine}.json"
        code, _, err = run([*asked, "--input", str(path), *SELECT, "--seed", "3",
                            "--engine", engine, "--output", str(out), "--quiet"], capsys)
        assert code == 0, err
        outputs[engine] = out.read_bytes()
    assert outputs["spark"] == outputs["numpy"]
    assert "\ufffdbad" in json.loads(outputs["numpy"])["groups" if command == "aggregate"
                                                       else "classes"]
