"""Nothing is charged for an output that cannot be delivered (s49-word's sweep): each of
these was charged on main, then failed to write ("no output was written … the result is
released"), the budget spent for nothing:

* a file output whose path ends as a folder's (``o.json/``, ``o.json/.``): the proof of
  the location read it as ``o.json`` (pathlib drops the ending), the write opened it as
  given;
* a ``--table`` Delta folder holding a table of the same column names but a NOT NULL
  column (the commit refuses the empty cells of a statistic not asked) — or of another
  type, which delta-rs took by casting the floats to text;
* a ``--table`` or ``--results-table`` Delta table with a CHECK constraint its rows
  broke;
* a ``--table`` Delta table made append-only (``delta.appendOnly``): the overwrite never
  commits, nor would the replay main's message offered;
* a ``--results-table`` of a reader feature delta-rs cannot read (deletion vectors): the
  look-up of the run id failed after the charge as an internal error (exit 1).

Each is now refused in one line, exit 2, before the ledger is touched, nothing written.
The cases the sweep tried that held are in the branch's report."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import messages, run
from golden_cases import INPUT

from dprect.release.ledger import Ledger

AGGREGATE = ["aggregate", "--input", str(INPUT), "--columns", "x,y", "--group-by", "g",
             "--groups", "a,b", "--epsilon", "1", "--statistics", "mean,count"]
FIT = ["fit", "--input", str(INPUT), "--features", "x,y", "--label", "g",
       "--positive-label", "a", "--epsilon", "1", "--delta", "0"]
#: the describe table's columns (a run of mean,count), as a Delta schema may hold them
COLUMNS = ["group", "column", "lower", "upper", "count", "count_low", "count_high", "sum",
           "sum_low", "sum_high", "mean", "mean_low", "mean_high", "below_row_need"]


def _refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
             message: str) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run([*argv, "--ledger", str(ledger), "--dataset", "ds"], capsys)
    assert code == 2, (out, err)
    lines = messages(err)
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in err, err
    assert "released" not in err  # refused, not charged and then failed
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    assert Ledger(str(ledger)).runs("ds") == []  # nothing reserved, nothing spent


@pytest.mark.parametrize("ending", ["/", "/.", "//"])
@pytest.mark.parametrize("command", ["aggregate", "describe", "fit"])
def test_a_file_output_ending_as_a_folder_is_refused_before_the_charge(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str,
        ending: str) -> None:
    argv = {"aggregate": AGGREGATE, "fit": FIT,
            "describe": ["describe", "--input", str(INPUT), "--columns", "x",
                         "--epsilon", "1"]}[command]
    output = str(tmp_path / "r.json") + ending
    _refused(tmp_path, capsys, [*argv, "--output", output],
             f"--output {output!r} ends as a folder path does")


def _delta_table(path: Path, not_null: bool, text: bool) -> None:
    pa = pytest.importorskip("pyarrow")
    deltalake = pytest.importorskip("deltalake")

    def kind(name: str) -> object:
        return pa.string() if text or name in ("group", "column") else \
            pa.bool_() if name == "below_row_need" else pa.float64()

    schema = pa.schema([pa.field(n, kind(n), nullable=not not_null) for n in COLUMNS])
    row = {n: ["a"] if kind(n) == pa.string() else [True] if kind(n) == pa.bool_()
           else [1.0] for n in COLUMNS}
    deltalake.write_deltalake(str(path), pa.table(row, schema=schema))


@pytest.mark.parametrize(("not_null", "text", "said"), [
    (True, False, "is NOT NULL string"),  # its first column: 'group'
    (False, True, "column 'lower' is string, not the describe table's nullable double"),
])
def test_a_delta_table_of_the_same_names_but_other_columns_is_refused_before_the_charge(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], not_null: bool, text: bool,
        said: str) -> None:
    table = tmp_path / "t"
    _delta_table(table, not_null, text)
    _refused(tmp_path, capsys, [*AGGREGATE, "--output", str(tmp_path / "r.json"),
                                "--table", str(table)], said)


def test_a_delta_table_the_run_wrote_before_is_overwritten(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The check reads the schema delta-rs reads back (text as large_string or
    string_view): a table of the run's own layout is still overwritten."""
    deltalake = pytest.importorskip("deltalake")
    table = tmp_path / "t"
    for name in ("a.json", "b.json"):
        code, _, err = run([*AGGREGATE, "--output", str(tmp_path / name), "--table",
                            str(table)], capsys)
        assert code == 0, err
    assert deltalake.DeltaTable(str(table)).version() == 1


@pytest.mark.parametrize("product", ["aggregate", "fit"])
def test_a_delta_table_with_check_constraints_is_refused_before_the_charge(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], product: str) -> None:
    """A CHECK constraint (``delta.constraints.<name>``) refuses a commit whose rows break
    it — which depends on the released values — so main charged the run, then failed to
    write ("DeltaError"). An aggregate's ``--table`` and a fit's ``--results-table`` are
    now refused by the table's properties (public), before the charge."""
    deltalake = pytest.importorskip("deltalake")
    table = tmp_path / "t"
    if product == "aggregate":
        argv = [*AGGREGATE, "--output", str(tmp_path / "r.json"), "--table", str(table)]
    else:
        argv = [*FIT, "--output", str(tmp_path / "r.json"), "--results-table", str(table)]
    code, _, err = run([*argv, "--seed", "1"], capsys)  # the table, made by dprect
    assert code == 0, err
    (tmp_path / "r.json").unlink()
    column = "count" if product == "aggregate" else "epsilon"
    deltalake.DeltaTable(str(table)).alter.add_constraint({"kept": f"{column} > -1"})
    _refused(tmp_path, capsys, argv, "is a Delta table with CHECK constraints (kept)")


def test_an_append_only_delta_table_is_refused_before_the_charge(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deltalake = pytest.importorskip("deltalake")
    table = tmp_path / "t"
    argv = [*AGGREGATE, "--output", str(tmp_path / "r.json"), "--table", str(table)]
    code, _, err = run(argv, capsys)  # the table, made by dprect
    assert code == 0, err
    (tmp_path / "r.json").unlink()
    deltalake.DeltaTable(str(table)).alter.set_table_properties({"delta.appendOnly": "true"})
    _refused(tmp_path, capsys, argv, "is an append-only Delta table (delta.appendOnly)")


def test_a_results_table_delta_rs_cannot_read_is_refused_before_the_charge(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deltalake = pytest.importorskip("deltalake")
    table = tmp_path / "t"
    argv = [*FIT, "--output", str(tmp_path / "r.json"), "--results-table", str(table)]
    code, _, err = run(argv, capsys)  # the table, made by dprect
    assert code == 0, err
    (tmp_path / "r.json").unlink()
    deltalake.DeltaTable(str(table)).alter.set_table_properties(
        {"delta.enableDeletionVectors": "true"})
    _refused(tmp_path, capsys, argv, "cannot read results table")
