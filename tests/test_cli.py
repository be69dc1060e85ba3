"""The dprect command line: fit and plan, and bad input → exit 2 with nothing written."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from dprect.cli import main


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
    assert js["version"] and js["parameters"]["chosen"] in ("randmargins", "composition")
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
    (["--input", "bad_label.parquet"], "labels must be 0 or 1"),
    (["--epsilon", "0"], "epsilon"),
    (["--delta", "2"], "delta"),
    (["--grid", "5:1:10"], "lower must be < upper"),
    (["--features", "a,label"], "also listed as a feature"),
    (["--features", "a,a"], "listed twice"),
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
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_plan_table_and_json(capsys):
    assert main(["plan", "--epsilon", "1", "--delta", "1e-6", "--dims", "128",
                 "--grid", "0:1:4294967296"]) == 0
    text = capsys.readouterr().out
    assert "randmargins" in text and "composition" in text and "chosen" in text
    assert main(["plan", "--epsilon", "1", "--delta", "1e-6", "--features", "a,b", "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["chosen"] == "composition" and set(js["predictions"]) == {"randmargins",
                                                                         "composition"}


def test_console_script_and_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "dprect", "plan", "--epsilon", "1", "--delta",
                          "1e-6", "--dims", "2"], capture_output=True, text=True)
    assert out.returncode == 0 and "chosen" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "dprect", "plan", "--epsilon", "-1", "--delta",
                          "1e-6", "--dims", "2"], capture_output=True, text=True)
    assert bad.returncode == 2 and "epsilon" in bad.stderr and "Traceback" not in bad.stderr
