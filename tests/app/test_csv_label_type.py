"""A fractional positive label on CSV input (s40-edges item 4; docs/privacy.md §8, "Not
protected"): the refusal reads the label column's type, and a CSV column's type is what
the inference saw in its values — whole numbers make it an integer column, which refuses
``--positive-label 0.5``; one row of ``2.5`` makes it a float column, which takes it. The
refusal says where the type comes from and names the column and the label given, never
a row's value."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import messages, run

from dprect.core.errors import ParameterError
from dprect.core.labels import TYPE_SOURCE
from dprect.engines.bounds_input import resolve_groups

SENTINEL = 918273  # a label value of the rows: never in a message


def _csv(path: Path, labels: list[str]) -> Path:
    rows = [f"{i % 7}.5,{i % 5}.25,{lab}" for i, lab in enumerate(labels)]
    path.write_text("a,b,y\n" + "\n".join(rows) + "\n")
    return path


def _fit(path: Path, out: Path) -> list[str]:
    return ["fit", "--input", str(path), "--features", "a,b", "--label", "y",
            "--epsilon", "1", "--delta", "1e-6", "--grid", "0:10:64",
            "--positive-label", "0.5", "--output", str(out), "--seed", "1"]


@pytest.mark.filterwarnings("ignore:this run used a fixed seed")
def test_the_csv_refusal_depends_on_what_inference_saw_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = [str(SENTINEL if i % 3 else 0) for i in range(300)]
    out = tmp_path / "r.json"
    code, _, err = run(_fit(_csv(tmp_path / "whole.csv", whole), out), capsys)
    assert code == 2 and len(messages(err)) == 1, err
    line = messages(err)[0]
    assert "the label column 'y' holds integers" in line and "'0.5'" in line
    assert TYPE_SOURCE in line and "inferred from its values" in TYPE_SOURCE
    assert str(SENTINEL) not in line and not out.exists()
    # one fractional row: a float column, which takes the label (the data decided)
    code, _, err = run(_fit(_csv(tmp_path / "one.csv", [*whole[:-1], "2.5"]), out), capsys)
    assert code == 0 and out.exists(), err


def test_a_fractional_group_value_says_where_the_type_comes_from() -> None:
    with pytest.raises(ParameterError) as refused:
        resolve_groups(["1", "2.5"], "numeric", "k", integral=True)
    assert str(refused.value) == ("the group column 'k' holds integers: group value "
                                  f"'2.5' is not one ({TYPE_SOURCE})")


def test_a_decimal_label_of_scale_0_holds_integers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Parquet decimal(10,0) label column holds integers only (as Spark's engine reads
    it, and Parquet's uint64, which Spark reads as decimal(20,0)): a fractional label is
    refused from the schema, as for an integer column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"a": [0.5, 1.5, 2.5, 3.5], "b": [1.25, 2.25, 3.25, 4.25],
                             "y": pa.array([0, 1, 0, 1], pa.decimal128(10, 0))}), path)
    out = tmp_path / "r.json"
    code, _, err = run(_fit(path, out), capsys)
    assert code == 2 and len(messages(err)) == 1, err
    assert "the label column 'y' holds integers" in messages(err)[0] and not out.exists()
