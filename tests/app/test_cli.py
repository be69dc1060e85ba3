"""The dprect command line: fit and plan; bad parameters, paths or schemas → exit 2 with
nothing written; nothing refused for the rows' values (labels, no rows, no positives);
outputs checked before anything is read or reserved, and the run id of a ledger run
printed."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from cli_run import messages, run

from dprect.app.cli import main
from dprect.release.ledger import Ledger


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    gen = np.random.default_rng(1)
    n = 5000
    X = gen.uniform(0, 10, (n, 2))
    y = ((X > 2) & (X < 7)).all(axis=1).astype(np.int64)
    t = pa.table({"a": X[:, 0], "b": X[:, 1], "label": y, "name": ["r"] * n})
    folder = tmp_path_factory.mktemp("cli")
    pq.write_table(t, folder / "data.parquet")
    pcsv.write_csv(t, folder / "data.csv")
    bad = t.set_column(2, "label", pa.array(np.where(np.arange(n) == 7, 3, y)))
    pq.write_table(bad, folder / "bad_label.parquet")
    return folder


@pytest.mark.parametrize("name", ["data.parquet", "data.csv"])
def test_fit_writes_result_json(table, tmp_path, name, capsys):
    out = tmp_path / "result.json"
    code = main(["fit", "--input", str(table / name), "--features", "a,b", "--label", "label",
                 "--epsilon", "1", "--delta", "1e-6", "--grid", "0:10:65536", "--seed", "3",
                 "--output", str(out)])
    assert code == 0
    js = json.loads(out.read_text())
    assert js["features"] == ["a", "b"] and len(js["lower"]) == 2
    assert {"epsilon", "delta", "neighbouring", "bound"} <= set(js["privacy"])
    assert js["version"] and js["parameters"]["chosen"] in ("randmargins", "composition",
                                                            "quantiles")
    assert "seeded" in capsys.readouterr().out


def test_same_seed_same_json_across_formats(table, tmp_path):
    outs = []
    for name in ("data.parquet", "data.csv"):
        out = tmp_path / f"{name}.json"
        main(["fit", "--input", str(table / name), "--features", "a,b", "--label", "label",
              "--epsilon", "1", "--delta", "1e-6", "--seed", "5", "--output", str(out)])
        outs.append(json.loads(out.read_text()))
    assert outs[0]["lower"] == outs[1]["lower"] and outs[0]["upper"] == outs[1]["upper"]


@pytest.mark.parametrize("args,message", [
    (["--input", "missing.parquet"], "does not exist"),
    (["--features", "a,zzz"], "no column"),
    (["--features", "a,name"], "must be numeric"),
    (["--positive-label", "yes please"], "must be a number"),
    (["--epsilon", "0"], "epsilon"),
    (["--delta", "2"], "delta"),
    (["--grid", "5:1:10"], "lower must be < upper"),
    (["--features", "a,label"], "also listed as a feature"),
    (["--features", "a,a"], "listed twice"),
    # s39-edges: an empty class was skipped
    (["--classes", "0,,1"], "--classes: an empty class"),
    (["--classes", "0,1,"], "--classes: an empty class"),
    # s39-edges2: every list option refuses an empty entry alike (options.comma_entries);
    # --features skipped it silently
    (["--features", "a,,b"], "--features: an empty name"),
    (["--features", "a,b,"], "--features: an empty name"),
    (["--features", " "], "--features: an empty name"),
])
def test_bad_input_exit_2_and_nothing_written(table, tmp_path, args, message, capsys):
    out = tmp_path / "result.json"
    base = {"--input": "data.parquet", "--features": "a,b", "--label": "label",
            "--epsilon": "1", "--delta": "1e-6"}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = value
    if base["--input"] != "missing.parquet":
        base["--input"] = str(table / base["--input"])
    argv = ["fit", *[x for kv in base.items() for x in kv], "--output", str(out)]
    if "--grid" in args:
        argv += ["--grid", args[args.index("--grid") + 1]]
    code, _, err = run(argv, capsys)  # an argparse refusal exits (SystemExit 2)
    assert code == 2 and message in err and "Traceback" not in err
    assert len(messages(err)) == 1
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_plan_table_and_json(capsys):
    assert main(["plan", "--epsilon", "1", "--delta", "1e-6", "--dims", "128",
                 "--grid", "0:1:4294967296"]) == 0
    text = capsys.readouterr().out
    assert "randmargins" in text and "composition" in text and "chosen" in text
    assert main(["plan", "--epsilon", "1", "--delta", "1e-6", "--features", "a,b", "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["chosen"] == "composition" and set(js["predictions"]) == {
        "randmargins", "composition", "quantiles"}  # the box: auto's candidate at its count


def test_console_script_and_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "dprect", "plan", "--epsilon", "1", "--delta",
                          "1e-6", "--dims", "2"], capture_output=True, text=True)
    assert out.returncode == 0 and "chosen" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "dprect", "plan", "--epsilon", "-1", "--delta",
                          "1e-6", "--dims", "2"], capture_output=True, text=True)
    assert bad.returncode == 2 and "epsilon" in bad.stderr and "Traceback" not in bad.stderr


# -- no refusal that depends on row values ---------------------------------------------------
FIT = ["--features", "a,b", "--label", "label", "--epsilon", "1", "--delta", "1e-6",
       "--grid", "0:10:1024"]


def _shape(node):
    """A JSON value's structure: keys and value types, not values."""
    if isinstance(node, dict):
        return {k: _shape(v) for k, v in node.items()}
    if isinstance(node, list):
        return ["list", len(node)]
    return type(node).__name__ if not isinstance(node, float | int) or isinstance(
        node, bool) else "number"


def test_label_values_no_rows_no_positives_are_ordinary_runs(table, tmp_path, capsys):
    """A label other than 0/1, a table without positives, one with a single positive and
    one without rows all exit 0 with a result of the same schema."""
    t = pq.read_table(table / "data.parquet")
    n = t.num_rows
    no_pos = t.set_column(2, "label", pa.array(np.zeros(n, np.int64)))
    one_pos = pa.concat_tables([no_pos, pa.table({
        "a": [5.0], "b": [5.0], "label": pa.array([1], pa.int64()), "name": ["r"]})])
    tables = {"no_pos": no_pos, "one_pos": one_pos, "empty": t.slice(0, 0),
              "bad_label": pq.read_table(table / "bad_label.parquet")}
    shapes = {}
    for name, tab in tables.items():
        pq.write_table(tab, tmp_path / f"{name}.parquet")
        out = tmp_path / f"{name}.json"
        code = main(["fit", "--input", str(tmp_path / f"{name}.parquet"), *FIT,
                     "--output", str(out), "--positives", "1000"])  # one method, one schema
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert messages(captured.err) == []  # the heartbeat is progress, not an error
        shapes[name] = _shape(json.loads(out.read_text()))
    assert shapes["no_pos"] == shapes["one_pos"] == shapes["empty"] == shapes["bad_label"]


def test_header_only_csv_is_refused_by_its_missing_types(tmp_path, capsys):
    """A header-only CSV has no column types (CSV types are inferred from rows): refused
    with the Spark engine's message, nothing written; a typed empty Parquet file fits."""
    (tmp_path / "h.csv").write_text("a,b,label\n")
    out = tmp_path / "h.json"
    assert main(["fit", "--input", str(tmp_path / "h.csv"), *FIT, "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(messages(err)) == 1
    assert "has a header but no rows" in err and "'a'" in err
    assert not out.exists()
    empty = pa.table({"a": pa.array([], pa.float64()), "b": pa.array([], pa.float64()),
                      "label": pa.array([], pa.int64())})
    pq.write_table(empty, tmp_path / "e.parquet")
    assert main(["fit", "--input", str(tmp_path / "e.parquet"), *FIT, "--output", str(out),
                 "--method", "composition"]) == 0  # (auto would release the box: #44)
    assert json.loads(out.read_text())["empty"] is True


@pytest.mark.parametrize("text", [b"", b"\n", b"\r\n\r\n", b"\xef\xbb\xbf"])
def test_an_empty_csv_file_is_refused_as_empty_as_spark_says(tmp_path, capsys, text):
    """A CSV file with no header row (no bytes, line ends only, a byte-order mark only)
    is refused saying so, as the Spark engine says it (source._check_csv_rows): pyarrow
    calls it malformed, and the numpy engine said "it is not a well-formed CSV file"."""
    (tmp_path / "e.csv").write_bytes(text)
    out = tmp_path / "e.json"
    assert main(["fit", "--input", str(tmp_path / "e.csv"), *FIT, "--output", str(out)]) == 2
    err = messages(capsys.readouterr().err)
    assert err == [f"dprect: error: cannot read {str(tmp_path / 'e.csv')!r} as csv: the file "
                   "is empty (no header row, so no columns)"]
    assert not out.exists()


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """One table, its labels spelled as strings, booleans, numbers (with nulls)."""
    gen = np.random.default_rng(7)
    n = 3000
    X = gen.uniform(0, 10, (n, 2))
    inside = ((X > 2) & (X < 7)).all(axis=1)
    nulls = np.arange(n) % 5 == 0  # nulls spread everywhere, positives among them
    folder = tmp_path_factory.mktemp("labels")
    cols = {"a": X[:, 0], "b": X[:, 1]}

    def spell(name, yes, no, kind):
        labels = [None if z else (yes if i else no)
                  for i, z in zip(inside, nulls, strict=True)]
        pq.write_table(pa.table({**cols, "label": pa.array(labels, kind)}),
                       folder / f"{name}.parquet")

    spell("strings", "churned", "stayed", pa.string())
    spell("booleans", True, False, pa.bool_())
    spell("numbers", 1, 0, pa.int64())
    spell("sevens", 7, 3, pa.int32())
    pq.write_table(pa.table({**cols, "label": inside & ~nulls}), folder / "reference.parquet")
    return folder


@pytest.mark.parametrize(("name", "extra"), [
    ("strings", ["--positive-label", "churned"]),
    ("booleans", []),  # default 1 = true
    ("booleans", ["--positive-label", "true"]),
    ("booleans", ["--positive-label", "yes"]),
    ("numbers", []),
    ("numbers", ["--positive-label", "1.0"]),
    ("sevens", ["--positive-label", "7"]),
])
def test_positive_label_selects_the_same_rows(labelled, tmp_path, name, extra, capsys):
    """Nulls and other labels are negatives: every spelling learns from the same rows as
    the reference table (a boolean column without nulls)."""
    def run(table, *more):
        out = tmp_path / f"{table}.json"
        code = main(["fit", "--input", str(labelled / f"{table}.parquet"), *FIT,
                     "--seed", "4", "--output", str(out), *more])
        assert code == 0, capsys.readouterr().err
        return json.loads(out.read_text())

    want = run("reference")
    got = run(name, *extra)
    assert (got["lower"], got["upper"]) == (want["lower"], want["upper"])
    assert not want["empty"]


@pytest.mark.parametrize(("name", "extra", "message"), [
    ("strings", [], "holds strings, but the positive label"),  # default 1 on strings
    ("numbers", ["--positive-label", "churned"], "numeric: the positive label"),
    ("booleans", ["--positive-label", "2"], "boolean: the positive label"),
    # a fraction on an integer column matches no row: refused, not an empty rectangle for
    # the budget (s39-edges c); a float column takes it (the numbers' 1.0 above reads 1)
    ("numbers", ["--positive-label", "0.5"], "holds integers: the positive label"),
    ("sevens", ["--positive-label", "7.25"], "holds integers: the positive label"),
    ("sevens", ["--classes", "3,7.5"], "holds integers: the positive label"),
])
def test_label_type_mismatch_is_refused_from_the_schema(labelled, tmp_path, name, extra,
                                                        message, capsys):
    out = tmp_path / "never.json"
    ledger = tmp_path / "ledger"
    assert main(["budget", "init", "--ledger", str(ledger)]) == 0
    code = main(["fit", "--input", str(labelled / f"{name}.parquet"), *FIT,
                 "--output", str(out), "--ledger", str(ledger), "--dataset", "ds", *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(messages(err)) == 1, err
    assert not out.exists()
    assert Ledger(str(ledger)).runs("ds") == []  # nothing reserved


def test_invalid_rows_error_is_documented_outside_the_guarantee(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "OUTSIDE the privacy guarantee" in text and "--positive-label" in text


# -- outputs checked first; the run id printed -------------------------------------------------
def _init_ledger(path, capsys):
    assert main(["budget", "init", "--ledger", str(path)]) == 0, capsys.readouterr().err
    capsys.readouterr()


@pytest.mark.parametrize("where", ["missing input", "folder", "under a file", "ledger"])
def test_bad_output_is_refused_before_reading_or_reserving(table, tmp_path, where, capsys):
    from dprect.release.ledger import Ledger

    ledger = tmp_path / "ledger"
    _init_ledger(ledger, capsys)
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "a_folder").mkdir()
    output = {"missing input": tmp_path / "a_folder",
              "folder": tmp_path / "a_folder",
              "under a file": tmp_path / "a_file" / "result.json",
              "ledger": ledger}[where]
    source = tmp_path / "missing.parquet" if where == "missing input" \
        else table / "data.parquet"
    code = main(["fit", "--input", str(source), *FIT, "--output", str(output),
                 "--ledger", str(ledger), "--dataset", "ds", "--run-id", "r-bad"])
    captured = capsys.readouterr()
    lines = messages(captured.err)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("dprect: error: --output")
    assert captured.out == ""  # nothing ran: no run id, no result
    assert Ledger(ledger).events("ds") == []  # no reservation, nothing spent
    assert (tmp_path / "a_file").read_text() == "x"


def test_ledger_runs_print_their_run_id(table, tmp_path, capsys):
    import re

    from dprect.release.ledger import Ledger

    ledger = tmp_path / "ledger"
    _init_ledger(ledger, capsys)
    base = ["fit", "--input", str(table / "data.parquet"), *FIT, "--ledger", str(ledger),
            "--dataset", "ds"]
    assert main([*base, "--output", str(tmp_path / "a.json")]) == 0  # a generated run id
    out = capsys.readouterr().out
    match = re.search(r"^run id ([0-9a-f]{32}) ", out, re.MULTILINE)
    assert match, out
    assert [r.run_id for r in Ledger(ledger).runs("ds")] == [match.group(1)]
    assert out.index("run id") < out.index("result written")
    assert main([*base, "--run-id", "nightly-1", "--output", str(tmp_path / "b.json")]) == 0
    assert "run id nightly-1 " in capsys.readouterr().out
    # a replay prints it too
    assert main([*base, "--run-id", "nightly-1", "--output", str(tmp_path / "c.json")]) == 0
    assert "run id nightly-1 " in capsys.readouterr().out


def test_missing_output_folders_are_still_created(table, tmp_path, capsys):
    out = tmp_path / "new" / "deeper" / "r.json"
    assert main(["fit", "--input", str(table / "data.parquet"), *FIT, "--output",
                 str(out)]) == 0
    assert json.loads(out.read_text())["features"] == ["a", "b"]


def test_huge_integers_are_rounded_not_refused(tmp_path, capsys):
    """An int64 value beyond ±2^53 is read as the nearest double (as Spark casts it), in a
    feature and in the label: no value can make the command fail."""
    n = 50
    pq.write_table(pa.table({
        "a": pa.array([2**60 + 1 if i == 3 else i for i in range(n)], pa.int64()),
        "b": pa.array(np.linspace(0, 9, n)),
        "label": pa.array([2**62 + 1 if i == 7 else i % 2 for i in range(n)], pa.int64())}),
        tmp_path / "huge.parquet")
    out = tmp_path / "huge.json"
    code = main(["fit", "--input", str(tmp_path / "huge.parquet"), *FIT, "--output", str(out)])
    assert code == 0, capsys.readouterr().err
    assert json.loads(out.read_text())["features"] == ["a", "b"]


def test_unexpected_error_is_one_line_without_its_text(monkeypatch, capsys):
    """An internal error's text could quote data: the CLI names its type only, exit 1."""
    import dprect.app.cli as cli

    def boom(args):
        raise RuntimeError("row value SECRET-VALUE-42")

    monkeypatch.setattr(cli, "_cmd_plan", boom)
    monkeypatch.delenv("DPRECT_DEBUG", raising=False)
    assert cli.main(["plan", "--epsilon", "1", "--delta", "1e-6", "--dims", "2"]) == 1
    captured = capsys.readouterr()
    assert "SECRET" not in captured.out + captured.err
    assert captured.err.count("\n") == 1 and "RuntimeError" in captured.err


# -- how many positives a run needs (issue #13) -------------------------------------------------
def test_plan_positives_prints_the_share_and_the_positives_needed(capsys):
    import dprect

    argv = ["plan", "--epsilon", "1", "--delta", "1e-6", "--dims", "7"]
    expected = dprect.plan(epsilon=1, delta=1e-6, dims=7)
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "N for <= 5% outside" in text and "share at N" not in text  # no estimate
    for name, c in expected.candidates.items():
        needed = math.ceil(c.predicted_misclassified / 0.05 - 1e-6)
        assert re.search(rf"^[ *]{name} +[\d,]+ +{needed:,}$", text, re.M), text
    assert main([*argv, "--positives", "200"]) == 0
    text = capsys.readouterr().out
    assert "share at N = 200" in text
    assert re.search(r"^ composition .* 100%$", text, re.M), text  # 13,503 expected > 200
    assert re.search(r"^\*quantiles ", text, re.M), text  # so auto takes the box (#44)
    assert main([*argv, "--positives", "1e6", "--target-share", "0.01", "--json"]) == 0
    js = json.loads(capsys.readouterr().out)["expectation"]
    assert js["positives"] == 1_000_000 and js["target_share"] == 0.01
    comp = js["methods"]["composition"]
    assert comp["share"] == pytest.approx(comp["outside"] / 1e6)
    assert comp["positives_needed"] == math.ceil(comp["outside"] / 0.01 - 1e-6)
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--positives N" in help_text and "--target-share S" in help_text
    assert "nothing is read from the data" in help_text


@pytest.mark.parametrize("extra,message", [
    (["--positives", "0"], "--positives must be an integer >= 1"),
    (["--target-share", "1.5"], "--target-share must be a number in the open interval"),
])
def test_bad_estimates_exit_2(table, tmp_path, extra, message, capsys):
    assert main(["plan", "--epsilon", "1", "--delta", "1e-6", "--dims", "2", *extra]) == 2
    assert message in capsys.readouterr().err
    out = tmp_path / "r.json"
    assert main(["fit", "--input", str(table / "data.parquet"), *FIT, "--output", str(out),
                 *extra]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == "" and not out.exists()


def test_fit_prints_the_plans_expectation_before_it_runs(table, tmp_path, capsys):
    import dprect
    from dprect.core.planner import predicted_at

    out = tmp_path / "r.json"
    assert main(["fit", "--input", str(table / "data.parquet"), *FIT, "--output", str(out),
                 "--positives", "1200"]) == 0
    captured = capsys.readouterr()
    assert messages(captured.err) == []
    lines = captured.out.splitlines()
    the_plan = dprect.plan(epsilon=1, delta=1e-6, dims=2, grid="0:10:1024", positives=1200)
    chosen = the_plan.chosen
    # the quantile box's expectation at N is its prediction at N (its aim is a share of N)
    outside = the_plan.expectation().outside
    assert outside == (predicted_at(chosen, 1200) if chosen.method == "quantiles"
                       else chosen.predicted_misclassified)
    needed = math.ceil(outside / 0.05 - 1e-6)
    assert lines[0] == (
        f"the plan ({chosen.method}) expects about {outside:,.0f} "
        f"positives outside the rectangle; for at most 5% outside it needs about "
        f"N >= {needed:,} positives; at the estimated 1,200 positives that is "
        f"{100 * min(1.0, outside / 1200):.3g}%"), lines[0]
    assert lines[1].startswith("method: ")  # then the run's own output
    js = json.loads(out.read_text())
    assert js["parameters"]["expectation"]["positives"] == 1200
    assert not js["empty"] and "rectangle is empty" not in captured.out


def test_an_empty_result_explains_itself(tmp_path, capsys):
    """20 positives at epsilon = 0.5: the released rectangle is empty, and the output says
    what the plan expected and what to change — on stdout, exit 0, nothing on stderr."""
    gen = np.random.default_rng(2)
    n = 400
    X = gen.uniform(0, 10, (n, 2))
    y = (np.arange(n) < 20).astype(np.int64)
    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "label": y}), tmp_path / "t.parquet")
    out = tmp_path / "r.json"
    code = main(["fit", "--input", str(tmp_path / "t.parquet"), "--features", "a,b",
                 "--label", "label", "--epsilon", "0.5", "--delta", "1e-6", "--grid",
                 "0:10:1024", "--output", str(out), "--method", "composition"])  # auto: box
    captured = capsys.readouterr()
    assert code == 0 and messages(captured.err) == []
    assert json.loads(out.read_text())["empty"] is True
    lines = captured.out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("the rectangle is empty"))
    assert "expected about" in lines[start] and "N >= " in lines[start]
    for what in ("--epsilon", "--grid", "--features", "more positive rows"):
        assert what in lines[start + 1]
    assert lines[start + 2].startswith("result written")
    assert lines[0].startswith("the plan (")  # the expectation came first


# -- argparse errors, negative values, help text ---------------------------------------------
@pytest.mark.parametrize("argv,where", [
    (["fit", "--bogus"], "dprect fit"),
    (["fit", "--epsilon"], "dprect fit"),
    (["plan", "--epsilon", "x", "--delta", "0", "--dims", "2"], "dprect plan"),
    (["budget", "show"], "dprect budget show"),
    (["nope"], "dprect"),
])
def test_an_argparse_error_is_one_line_and_exit_2(argv, where, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"{where}: error: "), err
    assert f"(see {where} --help)" in err and "usage:" not in err


def test_an_abbreviated_option_is_refused_not_completed(table, tmp_path, capsys):
    # argparse would take --see for --seed and --jso for --json: a scheduled command
    # line would change its meaning the day an option sharing the prefix is added
    out = tmp_path / "r.json"
    for argv, where in (
            (["fit", "--input", str(table / "data.parquet"), "--features", "a,b", "--label",
              "label", "--epsilon", "1", "--delta", "1e-6", "--output", str(out),
              "--see", "3"],
             "dprect fit"),
            (["plan", "--epsilon", "1", "--delta", "1e-6", "--dims", "1", "--jso"],
             "dprect plan"),
            (["budget", "show", "d", "--ledger", str(tmp_path / "ledger"), "--js"],
             "dprect budget show")):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        captured = capsys.readouterr()
        assert stop.value.code == 2 and captured.out == "", captured.out
        assert captured.err.count("\n") == 1, captured.err
        assert captured.err.startswith(f"{where}: error: "), captured.err
        assert "unrecognized arguments: " in captured.err, captured.err
    assert not out.exists() and not (tmp_path / "ledger").exists()


@pytest.mark.parametrize("argv,where,unknown,required", [
    (["fit", "--input", "t.parquet", "--features", "a", "--label", "y", "--epsilon", "1",
      "--delta", "0", "--output_file", "r.json"], "dprect fit", "--output_file", "--output"),
    (["bounds", "--input", "t.parquet", "--column", "a", "--epsilon=1", "--output=r.json"],
     "dprect bounds", "--column", "--columns"),
    (["budget", "init", "--ledger-path=l"], "dprect budget init", "--ledger-path=l",
     "--ledger"),
    (["--bogus"], "dprect", "--bogus", "command"),
])
def test_a_misspelled_option_is_named_before_the_required_one_it_left_out(
        argv, where, unknown, required, tmp_path, monkeypatch, capsys):
    # users fix one thing at a time: "required: --output" alone hides the real mistake
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"{where}: error: unrecognized arguments: {unknown}; "
                          "the following arguments are required: "), err
    assert required in err.split("required: ", 1)[1] and f"(see {where} --help)" in err
    assert list(tmp_path.iterdir()) == []


def test_a_jobs_option_is_taken_only_in_full(capsys):
    from dprect.app.jobs_support import build_parser

    parser = build_parser("fit_rectangle", "a job", "fit", {})
    assert parser.parse_args(["--config", "c.yaml"]).config == "c.yaml"
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["--conf", "c.yaml"])
    assert stop.value.code == 2 and "unrecognized arguments: --conf" in capsys.readouterr().err


def test_negative_numbers_are_option_values(capsys):
    # a grid below zero is a value, not an unknown option
    assert main(["plan", "--epsilon", "1", "--delta", "1e-6", "--dims", "1",
                 "--grid", "-8:8:65536"]) == 0
    assert "chosen" in capsys.readouterr().out
    # a negative delta reaches the parameter check: its own message, not "expected one
    # argument" and a usage dump
    for value in ("-1e-6", "-.5", "-2"):
        assert main(["plan", "--epsilon", "1", "--delta", value, "--dims", "1"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--delta must be a number in [0, 1)" in err, err


def test_help_renders_percent_signs(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["plan", "--help"])
    text = capsys.readouterr().out
    assert stop.value.code == 0 and "(default 5%)" in " ".join(text.split())
    assert "%%" not in text


# -- Ctrl-C and a closed stdout ---------------------------------------------------------------
def _dprect(*argv: str, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "dprect", *argv], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


#: ``python -c PAUSED_RUN MARKER ARGV…``: ``dprect ARGV…`` whose describe mechanism
#: (drawn whole, or streamed block by block to the sinks) first touches MARKER (the budget
#: is reserved, the statistics read) and sleeps, so that a test's interrupt lands inside
#: the guarded release whatever the machine's speed
PAUSED_RUN = """
import pathlib, signal, sys, time
# as a command started at a terminal: a test runner started as a background job of a
# non-interactive shell has SIGINT ignored, and a child inherits that
signal.signal(signal.SIGINT, signal.default_int_handler)
import dprect.engines.grouped
from dprect.core.statistic import QUERY, RUNS
real, marker = RUNS[QUERY.name], pathlib.Path(sys.argv[1])
def paused(*args, **kwargs):
    marker.touch()
    time.sleep(600)
    return real.draw(*args, **kwargs)
RUNS[QUERY.name] = real._replace(draw=paused)
streamed = dprect.engines.grouped.stream_query  # a run whose blocks stream to the sinks
def paused_stream(*args, **kwargs):
    marker.touch()
    time.sleep(600)
    return streamed(*args, **kwargs)
dprect.engines.grouped.stream_query = paused_stream
sys.argv = ["dprect", *sys.argv[2:]]
from dprect.app.cli import run
run()
"""


@pytest.fixture(scope="module")
def slow_table(tmp_path_factory):
    """A describe of 3,000 groups × 2 columns (more than ``PARALLEL_CELLS`` cells: a run
    whose mechanism would go to the driver's worker processes)."""
    gen = np.random.default_rng(2)
    n = 300_000
    folder = tmp_path_factory.mktemp("slow")
    pq.write_table(pa.table({"a": gen.normal(0, 1, n), "b": gen.normal(5, 2, n),
                             "g": gen.integers(0, 3000, n)}), folder / "t.parquet")
    return folder / "t.parquet"


def _paused_describe(slow_table, tmp_path):
    """``dprect describe`` of the slow table under a new ledger, in a session of its own,
    paused where its mechanism would start (after the reservation and the pass, so an
    interrupt lands there on a fast machine too, not after the release): the process,
    the ledger and the output path."""
    import time

    from dprect.release.ledger import Ledger

    ledger = tmp_path / "ledger"
    assert main(["budget", "init", "--ledger", str(ledger)]) == 0
    out = tmp_path / "out.json"
    marker = tmp_path / "reserved"
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSED_RUN, str(marker), "describe", "--input",
         str(slow_table), "--columns", "a,b", "--epsilon", "1", "--group-by", "g",
         "--groups", ",".join(map(str, range(3000))), "--output", str(out),
         "--ledger", str(ledger), "--dataset", "d"],
        text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    led = Ledger(ledger)
    deadline = time.monotonic() + 120
    while proc.poll() is None and not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists() and led.runs("d"), "the run did not reach its mechanism"
    return proc, led, out


def test_sigint_is_one_line_exit_130_and_the_ledger_consistent(slow_table, tmp_path, capsys):
    """Ctrl-C at a terminal (SIGINT to the whole process group, the driver's workers
    too) once the run has reserved its budget: one line ``dprect: interrupted``, exit 130,
    no traceback from any process, no result, and a ledger that either withdrew the
    charge (cancelled: no noise drawn yet) or kept it (failed: noise may have been
    drawn) — never a run left ``reserved``."""
    import os
    import signal


    proc, led, out = _paused_describe(slow_table, tmp_path)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, (stdout, stderr)
    # a loaded machine may have shown the heartbeat first: progress, not an error
    lines = messages(stderr)
    assert lines == ["dprect: interrupted"] and "Traceback" not in stderr, stderr
    assert not out.exists()
    (run,) = led.runs("d")
    spent = led.spent("d")
    assert run.status in ("cancelled", "failed")
    assert spent.epsilon == (0.0 if run.status == "cancelled" else pytest.approx(run.epsilon))
    led.verify(full=True)


def test_sigterm_is_an_interrupt_one_line_exit_143_and_the_ledger_consistent(
        slow_table, tmp_path):
    """SIGTERM — a scheduler stopping the run, to the main process only — once the run
    has reserved its budget ends it as a Ctrl-C does: one line ``dprect: terminated``,
    exit 143, no result, and the ledger's run cancelled (no noise drawn) or failed (noise
    may have been drawn), never left ``reserved``. (Before, SIGTERM killed the process
    where it stood: exit -15, the run left reserved — charged even when nothing had been
    drawn — and, during the publishing, a staged temporary file left beside the output.)"""
    import os
    import signal


    proc, led, _ = _paused_describe(slow_table, tmp_path)
    os.kill(proc.pid, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 143, (proc.returncode, stdout, stderr)
    assert messages(stderr) == ["dprect: terminated"] and "Traceback" not in stderr, stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger", "reserved"]
    (run,) = led.runs("d")
    assert run.status in ("cancelled", "failed")
    led.verify(full=True)


def test_sigterm_raises_terminated_inside_and_the_handler_is_restored():
    """:func:`sigterm_interrupts` turns SIGTERM into :class:`Terminated` (an interrupt:
    a :class:`KeyboardInterrupt`) inside, and puts the previous handler back after; the
    line and code of a terminated run are ``terminated`` and 143."""
    import os
    import signal

    from dprect.app.failures import Terminated, describe_failure, sigterm_interrupts

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated), sigterm_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs as kill returns
        pytest.fail("SIGTERM did not interrupt")
    assert signal.getsignal(signal.SIGTERM) == before
    assert isinstance(Terminated(), KeyboardInterrupt)
    assert describe_failure(Terminated()) == (143, "terminated")
    assert describe_failure(KeyboardInterrupt()) == (130, "interrupted")


def test_sigterm_cancels_the_running_spark_jobs(monkeypatch):
    """With a SparkContext active, SIGTERM cancels its jobs before it raises (as
    pyspark's SIGINT handler does): a job left running went on writing a Delta output's
    data files after the failed commit's folder was cleaned (seen as user walker: a
    ``part-….parquet`` left in the results table's folder). Simulated: a stand-in
    ``pyspark`` module whose active context counts its cancels."""
    import os
    import signal
    import types

    from dprect.app.failures import Terminated, sigterm_interrupts

    cancelled = []
    context = types.SimpleNamespace(cancelAllJobs=lambda: cancelled.append(1))
    fake = types.SimpleNamespace(SparkContext=types.SimpleNamespace(
        _active_spark_context=context))
    monkeypatch.setitem(sys.modules, "pyspark", fake)
    with pytest.raises(Terminated), sigterm_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)
        pytest.fail("SIGTERM did not interrupt")
    assert cancelled == [1]


def test_a_closed_stdout_ends_quietly_and_the_run_completes(table, tmp_path):
    """``dprect ... | head -1``, the reader gone before the first write: no "Broken pipe"
    line, the usual exit code, and a ledger run completes (its result written, its
    release recorded) rather than dying between the ledger and the output."""
    plan = _dprect("plan", "--epsilon", "1", "--delta", "1e-6", "--dims", "3")
    plan.stdout.close()
    assert plan.wait(timeout=60) == 0 and plan.stderr.read() == ""

    ledger = tmp_path / "ledger"
    assert main(["budget", "init", "--ledger", str(ledger)]) == 0
    out = tmp_path / "r.json"
    fit = _dprect("fit", "--input", str(table / "data.parquet"), *FIT, "--output", str(out),
                  "--ledger", str(ledger), "--dataset", "d", "--run-id", "r1")
    fit.stdout.close()
    assert fit.wait(timeout=120) == 0
    err = fit.stderr.read()  # a loaded machine may show the heartbeat: progress only
    assert messages(err) == [], err
    from dprect.release.ledger import Ledger

    assert out.exists() and Ledger(ledger).run("d", "r1").status == "released"


# -- many cells: a few summary lines ------------------------------------------------------------
@pytest.mark.parametrize("groups", [25, 26])
def test_many_cells_print_a_summary_not_a_line_per_cell(tmp_path, groups, capsys):
    """Up to LISTED_CELLS (50) cells (groups x columns), stdout holds a line per (group,
    column); beyond, a few lines — the cells, the statistics, the charge, the flags' count
    and the outputs holding every cell — with no released value; every cell is still in
    the outputs."""
    from dprect.app.aggregate_flow import LISTED_CELLS

    assert LISTED_CELLS == 50
    gen = np.random.default_rng(4)
    pq.write_table(pa.table({"x": gen.normal(0, 1, 5000), "y": gen.normal(0, 1, 5000),
                             "g": np.arange(5000) % groups}), tmp_path / "t.parquet")
    out, table = tmp_path / "out.json", tmp_path / "t.csv"
    for command, statistics, flag in (("describe", "bounds, count, sum, mean",
                                       "below_row_need"),
                                      ("bounds", "coverage", None),
                                      ("aggregate", "p10, median", "below_row_need")):
        extra = ["--statistics", "median,p10"] if command == "aggregate" else []
        assert main([command, "--input", str(tmp_path / "t.parquet"), "--columns", "x,y",
                     "--epsilon", "1", "--group-by", "g", "--seed", "1", *extra,
                     "--groups", ",".join(map(str, range(groups))), "--output", str(out),
                     "--table", str(table), "--quiet"]) == 0
        lines = [ln for ln in capsys.readouterr().out.splitlines()
                 if not ln.startswith("plan: ")]
        cells = 2 * groups
        per_cell = [ln for ln in lines if ln.startswith("group ")]
        record = json.loads(out.read_text())
        assert len(record.get("results", record.get("bounds"))) == cells
        if cells <= LISTED_CELLS:
            assert len(per_cell) == cells and not any(
                ln.startswith(("released ", "not listed")) for ln in lines), lines
            continue
        assert per_cell == [], lines
        assert lines[:2] == [
            f"released {cells} cells: {groups} group(s) x 2 column(s), statistics "
            f"{statistics}",
            "guarantee (1, 0)-DP, add-remove, charged once for every group (disjoint "
            "rows: parallel composition)"], lines
        rest = lines[2:]
        if flag is not None:
            marked = sum(1 for r in record["results"] if r[flag])
            assert rest.pop(0) == (f"{marked} of {cells} cells flagged {flag} (fewer rows "
                                   "released than the plan needs: their values may be "
                                   "far off)")
        assert rest[0] == (f"not listed here (more than 50 cells): every cell is in "
                           f"--output {out} and --table {table}")
        assert rest[1:] == [f"result written to {out}",
                            f"{record['method']} table written to {table}"]


def test_a_summary_stays_a_few_lines_however_many_groups(tmp_path, capsys):
    """stdout of a run of thousands of groups (and of a mixed run): no more lines than of
    a run just past the threshold — the plan and the summary never list the groups."""
    gen = np.random.default_rng(6)

    def stdout(groups: int, statistics: str) -> list[str]:
        path = tmp_path / f"t{groups}.parquet"
        pq.write_table(pa.table({"x": gen.normal(0, 1, 4 * groups),
                                 "g": np.arange(4 * groups) % groups}), path)
        (tmp_path / "groups.txt").write_text("\n".join(map(str, range(groups))) + "\n")
        assert main(["aggregate", "--statistics", statistics, "--input", str(path),
                     "--columns", "x", "--epsilon", "1", "--group-by", "g",
                     "--groups-file", str(tmp_path / "groups.txt"), "--seed", "1",
                     "--output", str(tmp_path / "o.json"), "--quiet"]) == 0
        return capsys.readouterr().out.splitlines()

    for statistics in ("count,mean", "mean,median"):
        few, many = stdout(51, statistics), stdout(1500, statistics)
        assert len(many) == len(few) <= 30, many


def test_a_job_section_takes_quiet():
    """--quiet is declared once (app/options.py): the jobs' sections take ``quiet`` too,
    and a quiet job reporter has no progress steps and no heartbeat."""
    from dprect.app.jobs_support import job_reporter, run_options
    from dprect.app.spine import silent

    assert run_options()["quiet"].kind == "bool" and run_options()["quiet"].default is False
    loud, quiet = job_reporter("p", "describe"), job_reporter("p", "describe", quiet=True)
    assert loud.tick is not None and loud.progress is not silent
    assert quiet.tick is None and quiet.progress is silent


def test_an_interrupted_job_is_one_line_and_exit_130(capsys):
    from dprect.app.jobs_support import run_job

    def body():
        raise KeyboardInterrupt

    assert run_job("describe", body) == 130
    assert capsys.readouterr().err == "describe: interrupted\n"


def test_a_terminated_job_is_one_line_and_exit_143(capsys):
    from dprect.app.failures import Terminated
    from dprect.app.jobs_support import run_job

    def body():
        raise Terminated

    assert run_job("describe", body) == 143
    assert capsys.readouterr().err == "describe: terminated\n"


def test_an_error_in_an_interrupts_clean_up_ends_as_an_interrupt(monkeypatch, capsys):
    """A library that raises its own error while it cleans up after Ctrl-C (pyspark: the
    cancelled job) still ends the command with one line ``dprect: interrupted``, 130."""
    from dprect.app import cli
    from dprect.core.errors import InputDataError

    def cancelled(args):
        try:
            raise KeyboardInterrupt
        finally:
            raise InputDataError("Spark failed while counting: SPARK_JOB_CANCELLED")

    monkeypatch.setattr(cli, "_cmd_plan", cancelled)
    assert main(["plan", "--epsilon", "1", "--delta", "0", "--dims", "1"]) == 130
    assert capsys.readouterr().err == "dprect: interrupted\n"


@pytest.mark.parametrize("epsilon", ["1e9", "1e300", "inf", "nan"])
def test_extreme_epsilon_is_a_result_or_one_line(tmp_path, capsys, epsilon):
    """A huge ε (issue #40: ``describe --epsilon 1e9`` was an internal MemoryError, 1e300
    an int64 overflow and a float overflow) gives a result on every command, in bounded
    memory; inf and nan are refused in one line, exit 2, nothing written."""
    from cli_run import run

    gen = np.random.default_rng(2)
    n = 600
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": gen.normal(5, 1, n), "b": gen.normal(5, 1, n),
                             "y": gen.integers(0, 2, n)}), path)
    common = ["--input", str(path), "--epsilon", epsilon, "--seed", "1"]
    fit = ["--features", "a,b", "--label", "y", "--grid", "0:10:256", "--delta", "1e-6"]
    commands = {"describe": ["describe", "--columns", "a,b"],
                "bounds": ["bounds", "--columns", "a,b"],
                "fit": ["fit", *fit, "--positive-label", "1"],
                "classes": ["fit", *fit, "--classes", "0,1"]}
    finite = math.isfinite(float(epsilon))
    for name, argv in commands.items():
        out = tmp_path / f"{name}.json"
        code, _, err = run([*argv, *common, "--output", str(out)], capsys)
        if finite:
            assert code == 0, (name, err)
            assert out.exists() and json.loads(out.read_text())
        else:
            assert code == 2 and "Traceback" not in err, (name, err)
            assert len(err.strip().splitlines()) == 1 and "epsilon" in err, (name, err)
            assert not out.exists()
