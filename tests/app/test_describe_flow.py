"""``dprect describe`` and ``jobs/describe.py`` on the numpy engine: DP count, sum and mean
per public group and column, as a product on the run spine (issue #23, item 2).

Properties checked (small tables; the Spark route is another module's and is not run
here):

* the command writes the result JSON (guarantee, public plan, per (group, column) lower,
  upper, count, sum, mean), the table as CSV and as Delta (the same rows), and a PNG; the
  result is ``dprect.describe``'s for the same seed (one set of row rules);
* ``--plan-only`` prints the budget split and the guarantee and touches nothing;
* a run over 1 public group and over 50 costs the same ONE charge in the ledger (the
  plan's guarantee), a released run id is replayed without spending, and another
  product's record under the run id is refused (both ways) with nothing written;
* bad input ends with one line on stderr, exit code 2, nothing written, nothing reserved;
* the job runs from conf/describe.yaml (here on the numpy route) and writes the command's
  result; its options are the declared ones.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from cli_run import job_argv, messages, run

import dprect
from dprect.app.jobs_support import load_config, section_values
from dprect.core.aggregates import plan_describe
from dprect.engines.grouped import NumpyGroupedRoute
from dprect.release.ledger import Ledger

REPO = Path(__file__).resolve().parents[2]
N = 4000
SEED = 5
EPS = ["--epsilon", "2", "--seed", str(SEED)]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _table(n: int = N, seed: int = 0, groups: int | None = None) -> pa.Table:
    gen = np.random.default_rng(seed)
    y = gen.exponential(50.0, n)
    y[::97] = np.nan
    if groups is None:
        g = gen.choice(["a", "b", "zz"], n, p=[0.45, 0.45, 0.10])  # zz: not listed
    else:
        g = np.array([f"g{i}" for i in gen.integers(0, groups, n)])
    return pa.table({"x": gen.normal(10.0, 2.0, n), "y": y,
                     "k": gen.integers(-20, 20, n), "g": g,
                     "s": np.array(["v"] * n)})


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("describe_cli")
    table = _table()
    pq.write_table(table, d / "t.parquet")
    pcsv.write_csv(table, d / "t.csv")
    pq.write_table(_table(groups=50), d / "many.parquet")
    return d


def describe_argv(data: Path, tmp: Path, *extra: str, table: str = "t.parquet",
                  output: str = "describe.json") -> list[str]:
    return ["describe", "--input", str(data / table), "--columns", "x,y", *EPS,
            "--output", str(tmp / output), *extra]


GROUPED = ["--group-by", "g", "--groups", "a,b,c"]


def test_cli_writes_json_csv_and_png_and_matches_the_api(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(describe_argv(data, tmp_path, *GROUPED, "--table",
                                       str(tmp_path / "d.csv"), "--plot",
                                       str(tmp_path / "d.png"), table="t.csv"), capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("plan: DP count, sum, mean for 2 column(s) in each of 3")
    assert any("budget split" in ln for ln in lines[:3])
    record = json.loads((tmp_path / "describe.json").read_text())
    assert record["method"] == "describe" and record["groups"] == ["a", "b", "c"]
    plan = plan_describe(2.0, 2)
    assert record["privacy"] == plan.guarantee.to_json()
    assert record["plan"]["per_column"]["sum_epsilon"] == plan.sum_epsilon
    rows = record["results"]
    assert [(r["group"], r["column"]) for r in rows] == [
        (g, c) for g in ("a", "b", "c") for c in ("x", "y")]
    assert all(set(r) == {"group", "column", "lower", "upper", "count", "count_low",
                          "count_high", "sum", "sum_low", "sum_high", "mean", "mean_low",
                          "mean_high", "below_row_need"} for r in rows)
    assert "zz" not in json.dumps(record)  # an unlisted group is never reported
    # group a, column x: about 1,800 rows around 10
    truth = _table().filter(pa.compute.equal(_table().column("g"), "a"))
    a_x = rows[0]
    assert a_x["lower"] < 10.0 < a_x["upper"]
    assert abs(a_x["mean"] - np.mean(truth.column("x"))) < 0.5
    assert abs(a_x["count"] - truth.num_rows) < 100
    # the API: the same rows and draws for the seed (one set of row rules)
    with pytest.warns(UserWarning, match="NOT private"):
        api = dprect.describe(_table(), ["x", "y"], group_by="g", groups=["a", "b", "c"],
                              epsilon=2.0, seed=SEED)
    assert [[r[k] for k in ("lower", "upper", "count", "sum", "mean")] for r in rows] == [
        [r[k] for k in ("lower", "upper", "count", "sum", "mean")] for r in api.rows()]
    with open(tmp_path / "d.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == ["group", "column", "lower", "upper", "count", "count_low",
                              "count_high", "sum", "sum_low", "sum_high", "mean",
                              "mean_low", "mean_high", "below_row_need"]
    assert [float(t["mean"]) for t in table] == [r["mean"] for r in rows]
    assert (tmp_path / "d.png").read_bytes().startswith(PNG_MAGIC)
    assert f"plot written to {tmp_path / 'd.png'}" in out


def test_delta_table_holds_the_csv_rows(data: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from deltalake import DeltaTable

    code, _, err = run(describe_argv(data, tmp_path, "--table", str(tmp_path / "delta"),
                                     "--statistics", "count,mean"), capsys)
    assert code == 0, err
    rows = json.loads((tmp_path / "describe.json").read_text())["results"]
    got = DeltaTable(str(tmp_path / "delta")).to_pyarrow_table().to_pylist()
    assert [(r["group"], r["column"]) for r in got] == [(None, "x"), (None, "y")]
    assert [r["mean"] for r in got] == [r["mean"] for r in rows]
    assert all(r["sum"] is None for r in got)  # not asked: a null, not a number


@pytest.mark.parametrize("statistics", ["count,mean,variance", "std", "bounds"])
def test_the_printed_split_adds_up_to_the_columns_epsilon(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], statistics: str) -> None:
    """The plan's budget split names each part's share of a column's epsilon as it is:
    with a sum of squares the count's and the squares' shares are 6.5% and 32.5% (printed
    6% and 32%, adding up to 99%, before), the bounds alone 1/7 and 6/7."""
    extra = ["--query-epsilon", "0.5"] if statistics == "bounds" else []
    code, out, err = run(["aggregate", "--input", str(tmp_path / "absent.parquet"),
                          "--columns", "x,y,z", "--statistics", statistics, "--epsilon", "1",
                          *extra, "--plan-only"], capsys)
    assert code == 0, err
    (line,) = [ln for ln in out.splitlines() if "budget split" in ln]
    shares = [float(v) for v in re.findall(r" ([0-9.]+)%", line)]
    assert len(shares) >= 2 and sum(shares) == pytest.approx(100.0, abs=0.15), line


def test_plan_only_prints_the_split_and_touches_nothing(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["describe", "--input", str(tmp_path / "absent.parquet"),
                          "--columns", "x,y,z", "--epsilon", "1", "--plan-only"], capsys)
    assert code == 0, err
    plan = plan_describe(1.0, 3)
    assert "budget split: epsilon" in out and "centre 5%, sides 30%, count 13%, sum 52%" in out
    assert f"count eps {plan.count_epsilon:.6g}, clamped sum eps {plan.sum_epsilon:.6g}" in out
    assert "charged once" in out and "re-derived by the independent check" in out
    assert list(tmp_path.iterdir()) == []


def _charged(ledger: Path, dataset: str) -> tuple[float, int]:
    status = Ledger(str(ledger)).status(dataset, runs=True)
    runs = status.runs or []
    assert all(r.method == "describe" for r in runs)
    return status.spent.epsilon, len(runs)


def test_one_charge_whatever_the_number_of_groups(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    many = ",".join(f"g{i}" for i in range(50))
    for dataset, groups in (("one", "g0"), ("fifty", many)):
        code, _, err = run(describe_argv(data, tmp_path, "--group-by", "g", "--groups",
                                         groups, "--ledger", str(ledger), "--dataset",
                                         dataset, "--run-id", "r1", table="many.parquet",
                                         output=f"{dataset}.json"), capsys)
        assert code == 0, err
    fifty = json.loads((tmp_path / "fifty.json").read_text())
    assert len(fifty["results"]) == 100
    guarantee = plan_describe(2.0, 2).guarantee
    assert _charged(ledger, "one") == _charged(ledger, "fifty") == (guarantee.epsilon, 1)
    # the same run id again: the recorded result, nothing spent, the input never read
    code, out, err = run(describe_argv(data, tmp_path, "--group-by", "g", "--groups", many,
                                       "--ledger", str(ledger), "--dataset", "fifty",
                                       "--run-id", "r1", table="absent.parquet",
                                       output="again.json"), capsys)
    assert code == 0, err
    assert "released before" in out and "nothing was spent" in out
    assert (tmp_path / "again.json").read_text() == (tmp_path / "fifty.json").read_text()
    assert _charged(ledger, "fifty") == (guarantee.epsilon, 1)


def test_another_products_record_is_refused_both_ways(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    at = ["--ledger", str(ledger), "--dataset", "ds"]
    assert run(["bounds", "--input", str(data / "t.parquet"), "--columns", "x", "--epsilon",
                "1", "--output", str(tmp_path / "b.json"), *at, "--run-id", "rb"],
               capsys)[0] == 0
    assert run(describe_argv(data, tmp_path, *at, "--run-id", "rd"), capsys)[0] == 0
    spent = Ledger(str(ledger)).status("ds").spent.epsilon
    refusals = [
        describe_argv(data, tmp_path, *at, "--run-id", "rb", "--table",
                      str(tmp_path / "x.csv"), output="x.json"),
        ["bounds", "--input", str(data / "t.parquet"), "--columns", "x", "--epsilon", "1",
         "--output", str(tmp_path / "x.json"), *at, "--run-id", "rd"],
        ["fit", "--input", str(data / "t.parquet"), "--features", "x,y", "--label", "k",
         "--epsilon", "1", "--delta", "1e-6", "--output", str(tmp_path / "x.json"), *at,
         "--run-id", "rd"],
    ]
    for argv in refusals:
        code, _, err = run(argv, capsys)
        assert code == 2 and "another kind of run" in err, err
        assert len(messages(err)) == 1
        assert not (tmp_path / "x.json").exists() and not (tmp_path / "x.csv").exists()
    assert Ledger(str(ledger)).status("ds").spent.epsilon == spent


BAD = [
    (["--columns", "x,nope"], "t.parquet", "no column"),
    (["--columns", "s"], "t.parquet", "must be numeric"),
    (["--columns", "x", "--group-by", "k", "--groups", "a,b"], "t.parquet", "not a number"),
    (["--group-by", "g"], "t.parquet", "PUBLIC list"),
    (["--group-by", "g", "--groups", "a,a"], "t.parquet", "listed twice"),
    # an empty entry was skipped (the API read "" as a value): refused (s39-edges b)
    (["--group-by", "g", "--groups", "a,,b"], "t.parquet", "--groups: an empty value"),
    (["--group-by", "g", "--groups", "a,b,"], "t.parquet", "--groups: an empty value"),
    (["--group-by", "k", "--groups", "1, ,2"], "t.parquet", "--groups: an empty value"),
    # s39-edges2: --columns and --statistics skipped an empty entry silently
    (["--columns", "x,,y"], "t.parquet", "--columns: an empty name"),
    (["--statistics", "count,,mean"], "t.parquet", "--statistics: an empty name"),
    (["--statistics", "max"], "t.parquet", "statistics"),
    (["--statistics", "none"], "t.parquet", "--query-epsilon"),
    (["--statistics", "sum", "--plot", "p.png"], "t.parquet", "must include count and mean"),
    (["--epsilon", "0"], "t.parquet", "epsilon"),
    # every mechanism is pure: a delta would be neither used nor charged (s39-edges a)
    (["--delta", "1e-6"], "t.parquet", "--delta: the count, sum, mean and their bounds are "
     "pure"),
    (["--format", "delta"], "t.parquet", "needs --engine spark"),
    (["--where", "x > 0"], "t.parquet", "needs --engine spark"),
    (["--columns", "x,g", "--group-by", "g", "--groups", "a"], "t.parquet", "also listed"),
    ([], "missing.parquet", "does not exist"),
]


@pytest.mark.parametrize(("extra", "table", "message"), BAD)
def test_bad_input_one_line_exit_2_nothing_written_nothing_reserved(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
        table: str, message: str) -> None:
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    argv = describe_argv(data, tmp_path, "--table", str(tmp_path / "d.csv"), "--ledger",
                         str(ledger), "--dataset", "ds", table=table)
    extra = [str(tmp_path / e) if e.endswith(".png") else e for e in extra]
    code, out, err = run([*argv, *extra], capsys)
    assert code == 2, (out, err)
    lines = messages(err)
    assert len(lines) == 1 and message in lines[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger"]  # nothing written
    assert Ledger(str(ledger)).runs("ds") == []  # nothing reserved


# -- the job --------------------------------------------------------------------------------
@pytest.fixture
def job() -> ModuleType:
    """jobs/describe.py (on the tests' pythonpath; it imports pyspark, not Spark's JVM)."""
    import describe as job_module

    return job_module


def _demo_like(path: Path) -> None:
    """A table shaped as the demo's (f0..f3 and a 0/1 label), as conf/describe.yaml reads."""
    gen = np.random.default_rng(3)
    n = 3000
    pq.write_table(pa.table({**{f"f{j}": gen.normal(j, 1.0, n) for j in range(4)},
                             "label": gen.integers(0, 2, n)}), path)


def test_job_runs_from_the_conf_and_writes_the_commands_result(
        job: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _demo_like(tmp_path / "demo.parquet")
    outputs = [f"input={tmp_path / 'demo.parquet'}", f"output={tmp_path / 'job.json'}",
               f"table={tmp_path / 'job.csv'}", f"plot={tmp_path / 'job.png'}",
               f"seed={SEED}"]
    capsys.readouterr()
    argv = job_argv(REPO / "conf" / "describe.yaml", *outputs)
    assert job.main(argv, route=NumpyGroupedRoute()) == 0
    out = capsys.readouterr().out
    assert "[describe] plan: " in out and "describe table written" in out
    code, _, err = run(["describe", "--input", str(tmp_path / "demo.parquet"), "--columns",
                        "f0,f1,f2,f3", "--group-by", "label", "--groups", "0,1",
                        "--epsilon", "1", "--seed", str(SEED), "--output",
                        str(tmp_path / "cli.json")], capsys)
    assert code == 0, err
    assert (tmp_path / "job.json").read_text() == (tmp_path / "cli.json").read_text()
    assert (tmp_path / "job.csv").read_text().startswith(
        "group,column,lower,upper,count,count_low,count_high,sum,sum_low,sum_high,mean,"
        "mean_low,mean_high,below_row_need\n")
    assert (tmp_path / "job.png").read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize(("overrides", "message"), [
    ("columns=[f0, nope]", "no column"),
    ("groups=null", "PUBLIC list"),
    ("epsilom=1", "unknown key describe.epsilom"),
    ("statistics=[max]", "statistics"),
])
def test_job_bad_input_one_line_exit_2_nothing_written(
        job: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str], overrides: str,
        message: str) -> None:
    _demo_like(tmp_path / "demo.parquet")
    argv = job_argv(REPO / "conf" / "describe.yaml", f"input={tmp_path / 'demo.parquet'}",
                    f"output={tmp_path / 'job.json'}", f"table={tmp_path / 'job.csv'}",
                    f"plot={tmp_path / 'job.png'}", overrides)
    capsys.readouterr()
    assert job.main(argv, route=NumpyGroupedRoute()) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("describe: error: "), err
    assert message in lines[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.parquet"]


def test_job_help_lists_every_key_and_the_conf_is_valid(
        job: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        job.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for key in job.OPTIONS:
        assert f"describe.{key} " in out, key
    doc = load_config(REPO / "conf" / "describe.yaml", [], section="describe")
    settings = job.settings(section_values(doc, "describe", job.OPTIONS))
    assert settings.groups == ["0", "1"] and settings.source.group_by == "label"
    assert settings.plan.guarantee == plan_describe(1.0, 4).guarantee
    local = load_config(REPO / "conf" / "local.yaml", [], section="generate")
    assert settings.source.path == local["generate"]["output"]
    assert settings.source.columns == local["fit"]["features"]


def test_a_dataset_id_without_a_ledger_titles_the_plot(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--dataset`` without ``--ledger`` is refused where it would name nothing
    (s39-edges), but a plot is titled by it, as before that refusal (s39-review): the run
    is accepted with ``--plot`` and refused without it, nothing written then."""
    code, _out, err = run(describe_argv(data, tmp_path, "--dataset", "sales", "--plot",
                                       str(tmp_path / "d.png")), capsys)
    assert code == 0, err
    assert (tmp_path / "d.png").exists()
    code, _out, err = run(describe_argv(data, tmp_path, "--dataset", "sales",
                                       output="other.json"), capsys)
    assert code == 2 and "give a ledger path (--ledger) too" in err, err
    assert not (tmp_path / "other.json").exists()
