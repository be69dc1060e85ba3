"""The Spark jobs: generator, fit (JSON + results-table row + PNG), evaluation, and how
bad input ends a job — one clear line, a non-zero exit code, and nothing written.

Most tests call a job's ``main(argv, spark)`` in this process with the shared session;
two run the real ``spark-submit`` to check that exit codes and messages survive it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from cli_run import job_argv

REPO = Path(__file__).resolve().parents[2]

import evaluate_rectangle  # noqa: E402
import fit_rectangle  # noqa: E402
import generate_synthetic  # noqa: E402

from dprect.app.api import resolve_domains  # noqa: E402
from dprect.app.jobs_support import (  # noqa: E402
    EXIT_BAD_INPUT,
    SPARK_OPTIONS,
    ConfigError,
    apply_override,
    load_config,
    section_values,
)
from dprect.core.planner import plan  # noqa: E402
from dprect.core.result import FitResult  # noqa: E402
from dprect.release.results_table import SCHEMA, read_results  # noqa: E402
from dprect.release.sinks import PngSink  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FEATURES = ["f0", "f1", "f2"]


# -- configuration ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["local.yaml", "standalone.yaml", "docker.yaml"])
def test_example_configs_are_valid_for_every_job(name: str) -> None:
    for module in (generate_synthetic, fit_rectangle, evaluate_rectangle):
        doc = load_config(REPO / "conf" / name, [], section=module.SECTION)
        section_values(doc, module.SECTION, module.OPTIONS)
    doc = load_config(REPO / "conf" / name, [], section="fit")
    fit_cfg = section_values(doc, "fit", fit_rectangle.OPTIONS)
    fit = fit_rectangle.settings({**fit_cfg, "results_table": None})  # paths: target machine
    domains = resolve_domains(fit.grid, fit.source.features)
    plan(fit.request, domains=domains)
    gen = section_values(doc, "generate", generate_synthetic.OPTIONS)
    # the plot's truth sidecar is the one the generate job writes on the target machine
    # (checked as a sidecar when the fit runs): the other checks here, on this one
    truth = gen["truth"] or f"{gen['output']}.truth.json"
    assert fit_cfg.get("truth") in (None, truth)
    for sink in fit.sinks:
        (dataclasses.replace(sink, truth=None) if isinstance(sink, PngSink) else sink).check()
    assert len(domains) == gen["features"] == len(fit_cfg["features"])
    assert fit_cfg["input"] == gen["output"]


def test_overrides_address_sections_and_parse_yaml_values() -> None:
    doc: dict = {"fit": {"epsilon": 1.0}}
    apply_override(doc, "epsilon=0.25", section="fit")
    apply_override(doc, "spark.conf.spark.sql.shuffle.partitions=3", section="fit")
    apply_override(doc, "features=[a, b]", section="fit")
    assert doc["fit"]["epsilon"] == 0.25 and doc["fit"]["features"] == ["a", "b"]
    assert doc["spark"]["conf"] == {"spark.sql.shuffle.partitions": 3}
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        apply_override(doc, "epsilon", section="fit")
    with pytest.raises(ConfigError, match=r"unknown key fit\.epsilom"):
        section_values({"fit": {"epsilom": 1}}, "fit", fit_rectangle.OPTIONS)
    with pytest.raises(ConfigError, match=r"fit\.epsilon must be a number"):
        section_values({"fit": {"epsilon": "much"}}, "fit", fit_rectangle.OPTIONS)


def _product_without_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """A product job (fit, aggregate, ...) may not open its session: a refusal comes
    first."""
    import _common

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark started")

    monkeypatch.setattr(_common, "job_spark", started)


@pytest.mark.parametrize("twice", ["key", "section"])
def test_a_key_given_twice_in_a_config_is_refused_naming_both_lines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        twice: str) -> None:
    """PyYAML keeps the last of two equal keys silently: a second ``epsilon:`` would
    charge and release at ε 8 in a file that reads ε 1 at the top, and a second ``fit:``
    section would drop every key of the first. Either is refused in one line naming the
    file and both lines, before Spark starts; nothing is written."""
    _product_without_spark(monkeypatch)
    out = tmp_path / "out"
    fit = {"input": str(tmp_path / "data"), "features": ["f0"], "label": "label",
           "grid": "0:1:16", "epsilon": 1.0, "delta": 1e-6,
           "output": str(out / "result.json")}
    text = yaml.safe_dump({"fit": fit}, sort_keys=False, default_flow_style=None)
    if twice == "key":
        text += "  epsilon: 8.0\n"
        lines = f"lines {list(fit).index('epsilon') + 2} and {len(fit) + 2}"
    else:
        text += "fit:\n  epsilon: 8.0\n"
        lines = f"lines 1 and {len(fit) + 2}"
    cfg = tmp_path / "job.yaml"
    cfg.write_text(text)
    code = fit_rectangle.main(["--config", str(cfg)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_BAD_INPUT and len(err) == 1, err
    assert err[0] == (f"fit_rectangle: error: config file {str(cfg)!r} gives one key twice "
                      f"({lines}): YAML would keep the last silently; give each key, and "
                      "each section, once")
    assert not out.exists()
    # keys merged in with << may be overridden (YAML's meaning), and two sections may
    # hold equal keys
    cfg.write_text("fit:\n  <<: {epsilon: 1.0}\n  epsilon: 2.0\n  output: a.json\n"
                   "evaluate:\n  output: b.json\n")
    assert load_config(cfg, [], section="fit") == {
        "fit": {"epsilon": 2.0, "output": "a.json"}, "evaluate": {"output": "b.json"}}


def test_help_lists_every_key(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        fit_rectangle.main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for key in fit_rectangle.OPTIONS:
        assert f"fit.{key} " in text
    assert "--set KEY=VALUE" in text and "exit codes" in text


@pytest.mark.parametrize("argv, said", [
    (["conf/local.yaml"], "unrecognized arguments: conf/local.yaml"),
    # spark-submit's --conf put after the job's file: not an abbreviation of --config
    (["--conf", "spark.sql.shuffle.partitions=8"],
     "unrecognized arguments: --conf spark.sql.shuffle.partitions=8"),
    (["--config"], "argument --config: expected one argument"),
    (["--config", "conf/local.yaml", "--config", "conf/docker.yaml"],
     "--config is given twice; give one file, and change single keys with --set KEY=VALUE"),
])
def test_a_command_line_mistake_is_one_line_and_exit_2(
        argv: list[str], said: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A job's command line is refused as its config is: one line ``<job>: error: ...``
    (no usage dump), exit code 2, before Spark starts — where the job reports its other
    errors (report_error; under spark-submit the driver's stderr is its stdout). argparse
    took ``--conf`` for ``--config`` (a prefix) and kept the last of two ``--config``."""
    _product_without_spark(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        fit_rectangle.main(argv)
    out, err = capsys.readouterr()
    assert exc.value.code == EXIT_BAD_INPUT and out == ""
    assert err.splitlines() == [f"fit_rectangle: error: {said} (see fit_rectangle --help)"]


def test_a_config_that_is_a_folder_is_refused_as_a_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``--config`` given a folder (``conf`` for ``conf/local.yaml``) was said not to
    exist: it is named a folder, in one line, exit 2, before Spark starts."""
    _product_without_spark(monkeypatch)
    (tmp_path / "local.yaml").write_text("fit:\n  epsilon: 1.0\n")
    code = fit_rectangle.main(["--config", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT and out == "", out
    assert err.splitlines() == [
        f"fit_rectangle: error: config file {str(tmp_path)!r} is a folder: give the YAML "
        "file itself (e.g. conf/local.yaml)"]
    assert [p.name for p in tmp_path.iterdir()] == ["local.yaml"]


@pytest.mark.parametrize("body, said", [
    (b"fit:\n  epsilon: 1.0\n  dataset: caf\xe9\n", "is not UTF-8 text (line 3): save it as "
                                                     "UTF-8"),
    (b"\xfe\xff\x00f\x00:\x00\n\xd8\x00", "is not UTF-16 text (line 2): save it as UTF-8"),
    (b"fit:\n  epsilon: 1.0\x07\n", "is not valid YAML (line 2)"),
])
def test_a_config_that_is_not_utf8_text_is_refused_naming_the_file_and_line(
        body: bytes, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A config file in Latin-1 (or broken UTF-16) was "not valid YAML", with no position:
    it is one line naming the file, that it is not UTF-8 (UTF-16) text and the line of the
    first byte that is not; a control character YAML does not allow is placed by its
    line too. Never the decoder's or the parser's text (which quotes the file); before
    Spark starts, nothing written."""
    _product_without_spark(monkeypatch)
    cfg = tmp_path / "job.yaml"
    cfg.write_bytes(body)
    code = fit_rectangle.main(["--config", str(cfg)])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT and out == "", out
    assert err.splitlines() == [f"fit_rectangle: error: config file {str(cfg)!r} {said}"]
    assert [p.name for p in tmp_path.iterdir()] == ["job.yaml"]
    # UTF-8 with a byte-order mark at its start (Notepad's "UTF-8") and UTF-16 with its
    # mark are read, as PyYAML reads them
    for encoding in ("utf-8-sig", "utf-16"):
        cfg.write_bytes("fit:\n  dataset: café\n".encode(encoding))
        assert load_config(cfg, section="fit") == {"fit": {"dataset": "café"}}


def test_a_typo_in_the_spark_section_is_refused_before_the_run_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``spark`` section is checked with the job's own: its typo (``loglevel``) ends
    the job in one line before it prints a plan or a run id, reads the ledger or checks
    its outputs — it was found only when the run opened its session, after printing its
    run id (and an engine route given in place of Spark's never read it)."""
    import aggregate
    from cli_run import run
    from golden_cases import INPUT

    from dprect.release.ledger import Ledger

    _product_without_spark(monkeypatch)
    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    argv = job_argv(REPO / "conf" / "aggregate.yaml", "spark.loglevel=ERROR",
                    f"input={INPUT}", "format=csv", "columns=[x,y]", "group_by=g",
                    "groups=[a,b,c]", f"output={tmp_path / 'out' / 'r.json'}",
                    f"table={tmp_path / 'out' / 'r.csv'}", f"ledger={ledger}",
                    "dataset=ds", "run_id=r1")
    capsys.readouterr()
    code = aggregate.main(argv)
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT and out == "", out
    assert err.splitlines() == [
        "aggregate: error: unknown key spark.loglevel; spark accepts "
        f"{', '.join(sorted(SPARK_OPTIONS))}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger"]
    assert Ledger(str(ledger)).runs("ds") == []


@pytest.mark.parametrize("job, key, at", [
    ("fit_rectangle", "fit.output", "config"),
    ("fit_rectangle", "fit.output", "link to config"),
    ("aggregate", "aggregate.output", "config"),
    ("generate_synthetic", "generate.output", "config"),
    ("generate_synthetic", "generate.truth", "config"),
    ("generate_synthetic", "generate.output", "config's folder"),
    ("evaluate_rectangle", "evaluate.output", "config"),
])
def test_an_output_at_the_jobs_own_config_file_is_refused_before_spark_starts(
        job: str, key: str, at: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An output key naming the job's own ``--config`` file (or a link to it, or a folder
    the job replaces that holds it) would have the job overwrite — or, for the
    generator's data folder, delete — its configuration after the run, under a ledger
    after charging. It is refused in one line, exit 2, before Spark starts and before
    the ledger is read: no row, nothing written, the config file as it was."""
    import _common
    import aggregate
    from golden_cases import INPUT

    from dprect.release.ledger import Ledger

    module = {"fit_rectangle": fit_rectangle, "aggregate": aggregate,
              "generate_synthetic": generate_synthetic,
              "evaluate_rectangle": evaluate_rectangle}[job]

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark started")

    monkeypatch.setattr(_common, "job_spark", started)
    ledger = tmp_path / "ledger"
    Ledger(ledger).init()
    if job == "evaluate_rectangle":  # a result to evaluate: the job gets as far as Spark
        from cli_run import run
        from pin_data import cli_args, write_parquet

        (tmp_path / "data").mkdir()
        write_parquet(tmp_path / "data")
        assert run(cli_args(tmp_path / "data", tmp_path / "r.json"), capsys)[0] == 0
    home = tmp_path / "conf"
    home.mkdir()
    cfg = home / "job.yaml"
    target = {"config": cfg, "link to config": tmp_path / "link.yaml",
              "config's folder": home}[at]
    if at == "link to config":
        target.symlink_to(cfg)
    section, name = key.split(".")
    budget = {"ledger": str(ledger), "dataset": "ds", "run_id": "r1"}
    sections = {
        "fit": {"input": str(INPUT), "features": ["x", "y"], "label": "label",
                "grid": "0:1:16", "epsilon": 1.0, "delta": 1e-6,
                "output": str(tmp_path / "r.json"), **budget},
        "aggregate": {"input": str(INPUT), "format": "csv", "columns": ["x", "y"],
                      "statistics": ["count"], "group_by": "g", "groups": ["a", "b"],
                      "epsilon": 1.0, "output": str(tmp_path / "r.json"), **budget},
        "generate": {"output": str(tmp_path / "data"), "rows": 100},
        "evaluate": {"input": str(tmp_path / "data"), "label": "label",
                     "result": str(tmp_path / "r.json")},
    }
    doc = {section: {**sections[section], name: str(target)}}
    cfg.write_text(yaml.safe_dump(doc))
    before = _files(tmp_path)
    capsys.readouterr()
    code = module.main(["--config", str(cfg)])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == EXIT_BAD_INPUT and len(lines) == 1, (out, err)
    said = (f"{key} {str(target)!r} contains --config {str(cfg)!r}" if at == "config's folder"
            else f"{key} and --config are the same path")
    assert lines[0].startswith(f"{job}: error: ") and said in lines[0], lines
    assert _files(tmp_path) == before
    assert Ledger(str(ledger)).runs("ds") == []


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/null"])
@pytest.mark.parametrize("job", ["fit_rectangle", "aggregate", "private_bounds", "describe"])
def test_a_ledger_at_a_device_or_fifo_is_refused_before_spark_starts(
        job: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A job's ``ledger`` key at a FIFO or a link to ``/dev/null`` was read by delta-rs
    once the job ran and called "damaged". It is refused in one line naming the key, the
    path and what it is, exit 2, when the settings are checked: before Spark starts (so
    before the input is read), nothing written, the FIFO never opened."""
    import aggregate
    import describe
    import private_bounds
    from golden_cases import INPUT
    from special_paths import special

    _product_without_spark(monkeypatch)
    module = {"fit_rectangle": fit_rectangle, "aggregate": aggregate,
              "private_bounds": private_bounds, "describe": describe}[job]
    path, said = special(kind, tmp_path)
    budget = {"ledger": str(path), "dataset": "ds", "run_id": "r1"}
    out = str(tmp_path / "r.json")
    section, body = {
        "fit_rectangle": ("fit", {"input": str(INPUT), "features": ["x", "y"],
                                  "label": "label", "grid": "0:1:16", "epsilon": 1.0,
                                  "delta": 1e-6}),
        "aggregate": ("aggregate", {"input": str(INPUT), "format": "csv",
                                    "columns": ["x", "y"], "statistics": ["count"],
                                    "epsilon": 1.0}),
        "private_bounds": ("bounds", {"input": str(INPUT), "format": "csv",
                                      "columns": ["x", "y"], "epsilon": 1.0}),
        "describe": ("describe", {"input": str(INPUT), "format": "csv",
                                  "columns": ["x", "y"], "epsilon": 1.0}),
    }[job]
    cfg = tmp_path / "job.yaml"
    cfg.write_text(yaml.safe_dump({section: {**body, "output": out, **budget}}))
    before = _files(tmp_path)
    capsys.readouterr()
    code = module.main(["--config", str(cfg)])
    printed, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT and printed == "", (printed, err)
    assert err.splitlines() == [
        f"{job}: error: {section}.ledger {str(path)!r} {said}, not a folder: a budget "
        "ledger is a Delta table's folder; give a folder path"]
    assert _files(tmp_path) == before


@pytest.mark.parametrize("item, dataset, run_id", [("dataset=010", "010", None),
                                                    ("dataset=1.10", "1.10", None),
                                                    ("run_id=1_000", "ds", "1_000"),
                                                    ("run_id=20261202", "ds", "20261202")])
def test_a_name_yaml_reads_as_a_number_keeps_its_text(
        item: str, dataset: str, run_id: str | None, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """YAML reads ``010`` as 8, ``1.10`` as 1.1 and ``1_000`` as 1000: a job charged the
    dataset '010' under the name '8' (another dataset to the ledger and its cap than
    ``dprect aggregate --dataset 010`` charges) and took a run id other than the one
    written. A key that takes text keeps the number's text as written — from ``--set``
    and from the file alike; a number key still reads a number."""
    import aggregate
    from cli_run import run
    from golden_cases import INPUT

    from dprect.engines.grouped import NumpyGroupedRoute
    from dprect.release.ledger import Ledger

    ledger = tmp_path / "ledger"
    assert run(["budget", "init", "--ledger", str(ledger)], capsys)[0] == 0
    argv = job_argv(REPO / "conf" / "aggregate.yaml", f"input={INPUT}", "format=csv",
                    "columns=[x,y]", "group_by=g", "groups=[a,b,c]",
                    f"output={tmp_path / 'out' / 'r.json'}",
                    f"table={tmp_path / 'out' / 'r.csv'}", f"ledger={ledger}",
                    "dataset=ds", item)
    capsys.readouterr()
    code = aggregate.main(argv, route=NumpyGroupedRoute())
    assert code == 0, capsys.readouterr().err
    (released,) = Ledger(str(ledger)).runs(dataset)
    assert run_id is None or released.run_id == run_id
    assert all(Ledger(str(ledger)).runs(name) == [] for name in ("8", "1.1")
               if name != dataset)
    config = tmp_path / "numbers.yaml"
    config.write_text("aggregate:\n  dataset: 010\n  run_id: 1.10\n  epsilon: 1.50\n"
                      "  columns: [010, x]\n")
    values = section_values(load_config(str(config), section="aggregate"), "aggregate",
                            aggregate.OPTIONS)
    assert (values["dataset"], values["run_id"], values["columns"]) == (
        "010", "1.10", ["010", "x"])
    assert values["epsilon"] == 1.5 and type(values["epsilon"]) is float


@pytest.mark.parametrize("kind", ["numeric", "string"])
def test_group_values_yaml_reads_as_numbers_are_the_command_lines(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``groups: [010, 8]`` was YAML's [8, 8] ('group value 8 is listed twice'), and
    ``[010]`` alone the group 8 — another group than ``--groups 010``, which a numeric
    group column reads as 10 and a string one as '010'. A group value keeps the number's
    text as written, so the job's run is the command line's, byte for byte."""
    import aggregate
    from cli_run import run

    from dprect.engines.grouped import NumpyGroupedRoute

    data = tmp_path / "t.csv"
    keys = {"numeric": ["8", "10", "0"], "string": ["8", "010", "x"]}[kind]
    data.write_text("x,g\n" + "".join(f"{i % 7},{keys[i % 3]}\n" for i in range(60)))
    config = tmp_path / "job.yaml"
    config.write_text(f"aggregate:\n  input: {data}\n  format: csv\n  columns: [x]\n"
                      "  statistics: [count, mean]\n  group_by: g\n  groups: [010, 8]\n"
                      f"  epsilon: 1.0\n  output: {tmp_path / 'job.json'}\n  seed: 7\n")
    capsys.readouterr()
    assert aggregate.main(job_argv(config), route=NumpyGroupedRoute()) == 0, \
        capsys.readouterr().err
    code, _, err = run(["aggregate", "--input", str(data), "--format", "csv", "--columns",
                        "x", "--statistics", "count,mean", "--group-by", "g", "--groups",
                        "010,8", "--epsilon", "1", "--seed", "7", "--output",
                        str(tmp_path / "cli.json")], capsys)
    assert code == 0, err
    assert (tmp_path / "job.json").read_text() == (tmp_path / "cli.json").read_text()
    record = json.loads((tmp_path / "job.json").read_text())
    assert sorted({str(row["group"]) for row in record["results"]}) == ["010", "8"]


@pytest.mark.parametrize("kind", ["numeric", "string"])
def test_a_positive_label_yaml_reads_as_a_number_is_the_command_lines(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``fit.positive_label: 010`` was YAML's 8: the rows labelled 8 of an integer label
    column, and refused for a string one — where ``--positive-label 010`` is text read
    against the column's type, 10 and '010'. The job reads a number as written, as the
    command line does: the same fit, the same public request in the ledger (the job run
    here on the numpy route, Spark's replaced, to compare it byte for byte); a class
    list's numbers too (``classes: [010, 8]`` is ``--classes 010,8``)."""
    from cli_run import run

    from dprect.app.cli import build_parser, flag
    from dprect.app.flow import fit_settings
    from dprect.app.spine import public_request
    from dprect.core.labels import LabelText, resolve_positive_label
    from dprect.engines.numpy_fit import NumpyRoute
    from dprect.release.ledger import Ledger

    _product_without_spark(monkeypatch)
    monkeypatch.setattr("dprect.engines.spark.fit.SparkRoute", lambda *a: NumpyRoute())
    gen = np.random.default_rng(3)
    labels = {"numeric": pa.array([8, 10, 0] * 200, pa.int64()),
              "string": pa.array(["8", "010", "x"] * 200)}[kind]
    data = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": gen.uniform(0, 10, 600), "b": gen.uniform(0, 10, 600),
                             "label": labels}), data)
    for name in ("job", "cli"):
        assert run(["budget", "init", "--ledger", str(tmp_path / f"{name}-ledger")],
                   capsys)[0] == 0
    config = tmp_path / "job.yaml"
    config.write_text(f"fit:\n  input: {data}\n  features: [a, b]\n  label: label\n"
                      "  positive_label: 010\n  grid: 0:10:1024\n  epsilon: 1.0\n"
                      f"  delta: 1.0e-6\n  seed: 5\n  output: {tmp_path / 'job.json'}\n"
                      f"  ledger: {tmp_path / 'job-ledger'}\n  dataset: t\n  run_id: r1\n")
    capsys.readouterr()
    assert fit_rectangle.main(job_argv(config)) == 0, capsys.readouterr().err
    cli = ["fit", "--input", str(data), "--features", "a,b", "--label", "label",
           "--positive-label", "010", "--grid", "0:10:1024", "--epsilon", "1", "--delta",
           "1e-6", "--seed", "5", "--output", str(tmp_path / "cli.json"), "--ledger",
           str(tmp_path / "cli-ledger"), "--dataset", "t", "--run-id", "r1"]
    code, _, err = run(cli, capsys)
    assert code == 0, err
    assert (tmp_path / "job.json").read_text() == (tmp_path / "cli.json").read_text()
    (job_run,) = Ledger(str(tmp_path / "job-ledger")).runs("t")
    (cli_run,) = Ledger(str(tmp_path / "cli-ledger")).runs("t")
    assert job_run.result is not None and "public_request" in job_run.result
    assert job_run.result == cli_run.result
    # the label the job's section reads, against the column's type: 10, or '010'
    cfg = section_values(load_config(config, section="fit"), "fit", fit_rectangle.OPTIONS)
    request = fit_rectangle.settings(cfg).request
    assert request.positive_label == LabelText("010")
    assert resolve_positive_label(request.positive_label, kind, "label",
                                  integral=True) == {"numeric": 10.0, "string": "010"}[kind]
    # the evaluation takes the fit's label as the fit reads it
    assert evaluate_rectangle.settings(load_config(config, section="evaluate"))[
        "positive_label"] == LabelText("010")
    config.write_text(config.read_text().replace("  positive_label: 010\n",
                                                  "  classes: [010, 8]\n"))
    cfg = section_values(load_config(config, section="fit"), "fit", fit_rectangle.OPTIONS)
    args = build_parser().parse_args([*cli[:7], *cli[9:], "--classes", "010,8"])
    assert public_request(fit_rectangle.settings(cfg)) == public_request(
        fit_settings(vars(args), flag))


@pytest.mark.parametrize("where, key, written, octal", [
    ("file", "seed", "010", 8), ("file", "epsilon", "010", 8), ("set", "seed", "-0_10", -8),
    ("set", "epsilon", "00", 0), ("set", "seed", "08", None), ("file", "seed", "09", None),
    ("file", "epsilon", "08", None)])
def test_a_number_written_with_a_leading_zero_is_refused_naming_the_key(
        where: str, key: str, written: str, octal: int | None, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``seed: 010`` was YAML's octal 8 — silently another seed, or ε, than ``--seed
    010`` (10) on the command line. A key that takes a number, written as an integer with
    a leading zero, is refused in one line naming the key and what to write, from a file
    or ``--set``, before Spark starts — ``08`` too, which YAML keeps as text (the seed
    was "no integer", ε read 8); other spellings still read as numbers."""
    _product_without_spark(monkeypatch)
    out = tmp_path / "out"
    config = tmp_path / "job.yaml"
    section = {"input": str(tmp_path / "t.parquet"), "features": ["a"], "label": "y",
               "grid": "0:1:16", "epsilon": 1.0, "delta": 1e-6, "seed": 3,
               "output": str(out / "r.json")}
    config.write_text(yaml.safe_dump({"fit": section}, sort_keys=False).replace(
        f"  {key}: {section[key]}\n", f"  {key}: {written}\n" if where == "file" else ""))
    argv = job_argv(config, *([f"{key}={written}"] if where == "set" else []))
    code = fit_rectangle.main(argv)
    captured = capsys.readouterr()
    assert code == EXIT_BAD_INPUT and captured.out == "", captured.out
    octal_said = "" if octal is None else f", which YAML reads as octal ({octal})"
    assert captured.err.splitlines() == [
        f"fit_rectangle: error: fit.{key} is written {written}, an integer with a leading "
        f"zero{octal_said}: write it without the leading zero"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.yaml"]
    config.write_text("fit:\n  seed: 10\n  epsilon: 0.50\n  delta: 0x0\n  beta: 01.5\n")
    cfg = section_values(load_config(config, section="fit"), "fit", fit_rectangle.OPTIONS)
    assert (cfg["seed"], cfg["epsilon"], cfg["delta"], cfg["beta"]) == (10, 0.5, 0.0, 1.5)


# -- generator ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def synthetic(spark, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Small generated data shared by the fit and evaluation tests."""
    out = tmp_path_factory.mktemp("synthetic")
    code = generate_synthetic.main(
        job_argv(None, f"output={out / 'data'}", "rows=20000", "features=3", "parts=2",
                 "seed=5", "positive_rate=0.4", "lower=0", "upper=1000"), spark)
    assert code == 0
    truth = json.loads((out / "data.truth.json").read_text())
    return {"dir": out, "data": out / "data", "truth_path": out / "data.truth.json",
            "truth": truth}


def test_generator_writes_partitioned_parquet_and_sidecar(spark, synthetic: dict) -> None:
    truth = synthetic["truth"]
    df = spark.read.parquet(str(synthetic["data"]))
    assert sorted(df.columns) == ["f0", "f1", "f2", "label", "part"]
    assert sorted(p.name for p in synthetic["data"].iterdir() if p.is_dir()) == [
        "part=0", "part=1"]
    rows = df.select(*FEATURES, "label").toArrow()
    X = np.column_stack([rows.column(f).to_numpy() for f in FEATURES])
    y = rows.column("label").to_numpy()
    assert len(y) == truth["rows"] == 20000
    assert int(y.sum()) == truth["positives"]
    assert 0.35 < y.mean() < 0.45  # positive_rate 0.4
    lo, hi = np.array(truth["true_lower"]), np.array(truth["true_upper"])
    inside = ((X >= lo) & (X <= hi)).all(axis=1)
    assert np.array_equal(inside, y == 1)  # labels are exactly "inside the true rectangle"
    assert X.min() >= 0 and X.max() <= 1000
    assert truth["features"] == FEATURES and truth["label"] == "label"
    assert truth["span_lower"] == [0.0] * 3 and truth["span_upper"] == [1000.0] * 3


def test_generator_is_deterministic_and_writes_delta(spark, synthetic: dict,
                                                    tmp_path: Path) -> None:
    from deltalake import DeltaTable

    code = generate_synthetic.main(
        job_argv(None, f"output={tmp_path / 'delta'}", "format=delta", "rows=20000",
                 "features=3", "parts=3", "seed=5", "positive_rate=0.4", "lower=0",
                 "upper=1000"), spark)
    assert code == 0
    table = DeltaTable(str(tmp_path / "delta"))
    assert table.metadata().partition_columns == ["part"]
    data = table.to_pyarrow_table().sort_by([("f0", "ascending")])
    ref = pq.read_table(synthetic["data"]).sort_by([("f0", "ascending")])
    # same seed, other partitioning: the very same rows
    for c in [*FEATURES, "label"]:
        assert data.column(c).to_pylist() == ref.column(c).to_pylist()


def test_generator_rejects_bad_settings(spark, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code = generate_synthetic.main(job_argv(None, f"output={tmp_path / 'x'}",
                                            "positive_rate=1.5"), spark)
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["generate_synthetic: error: generate.positive_rate must be in (0, 1), "
                   "got 1.5"]
    assert not (tmp_path / "x").exists()


def _no_spark(monkeypatch: pytest.MonkeyPatch, module: object) -> None:
    """The job may not start Spark: a refusal comes before its session."""
    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark started")

    monkeypatch.setattr(module, "spark_session", started)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("truth", ["data", "data/truth.json"])
def test_generator_refuses_a_sidecar_at_or_inside_its_data(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        truth: str) -> None:
    """The sidecar written over the data folder, or into it (where a reader of the Parquet
    folder takes it for data), is refused in one line before Spark starts."""
    _no_spark(monkeypatch, generate_synthetic)
    out = tmp_path / "data"
    code = generate_synthetic.main(job_argv(None, f"output={out}", "rows=100",
                                            f"truth={tmp_path / truth}"))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_BAD_INPUT and len(err) == 1, err
    said = ("generate.output and generate.truth are the same path" if truth == "data" else
            f"generate.output {str(out)!r} contains generate.truth {str(tmp_path / truth)!r}")
    assert err[0].startswith("generate_synthetic: error: ") and said in err[0], err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("at", ["result", "truth", "inside input"])
def test_evaluation_refuses_an_output_over_what_it_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        at: str) -> None:
    """``evaluate.output`` at the result JSON or the sidecar (overwritten after the scan
    before), or inside the input's Parquet folder (a file read as data next time), is
    refused in one line before Spark starts; nothing is written."""
    from cli_run import run
    from pin_data import FEATURES as PIN_FEATURES
    from pin_data import cli_args, write_parquet

    _no_spark(monkeypatch, evaluate_rectangle)
    data = tmp_path / "data"
    data.mkdir()
    write_parquet(data)
    result, truth = tmp_path / "result.json", tmp_path / "truth.json"
    code, _, err = run(cli_args(data, result), capsys)
    assert code == 0, err
    truth.write_text(json.dumps({"features": PIN_FEATURES,
                                 "true_lower": [-10.0] * len(PIN_FEATURES),
                                 "true_upper": [10.0] * len(PIN_FEATURES)}))
    output = {"result": result, "truth": truth, "inside input": data / "eval.json"}[at]
    before = _files(tmp_path)
    capsys.readouterr()
    code = evaluate_rectangle.main(
        job_argv(None, f"fit.input={data}", "fit.label=label", f"fit.output={result}",
                 f"evaluate.truth={truth}", f"evaluate.output={output}"))
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_BAD_INPUT and len(lines) == 1, lines
    said = {"result": "evaluate.output and fit.output are the same path",
            "truth": "evaluate.output and evaluate.truth are the same path",
            "inside input": f"evaluate.output {str(output)!r} lies inside fit.input "
                            f"{str(data)!r}"}[at]
    assert lines[0].startswith("evaluate_rectangle: error: ") and said in lines[0], lines
    assert _files(tmp_path) == before


@pytest.mark.parametrize("at", ["a folder", "under a file"])
def test_evaluation_refuses_an_output_it_cannot_write_before_its_scan(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        at: str) -> None:
    """``evaluate.output`` that cannot be written (an existing folder, a path under a
    file) is refused in one line before Spark starts — the sinks' check, as the private
    products make it — not after the whole scan; nothing is written."""
    from cli_run import run
    from pin_data import cli_args, write_parquet

    _no_spark(monkeypatch, evaluate_rectangle)
    data = tmp_path / "data"
    data.mkdir()
    write_parquet(data)
    result = tmp_path / "result.json"
    code, _, err = run(cli_args(data, result), capsys)
    assert code == 0, err
    (tmp_path / "taken").mkdir()
    (tmp_path / "notes").write_text("a file, not a folder\n")
    output = {"a folder": tmp_path / "taken",
              "under a file": tmp_path / "notes" / "eval.json"}[at]
    before = _files(tmp_path)
    capsys.readouterr()
    code = evaluate_rectangle.main(
        job_argv(None, f"fit.input={data}", "fit.label=label", f"fit.output={result}",
                 f"evaluate.output={output}"))
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_BAD_INPUT and len(lines) == 1, lines
    said = {"a folder": "is a folder; give a file path", "under a file": "cannot be written"}
    assert lines[0].startswith(f"evaluate_rectangle: error: evaluate.output {str(output)!r} "
                               f"{said[at]}"), lines
    assert _files(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "data", "notes", "result.json", "taken"]
    assert list((tmp_path / "taken").iterdir()) == []


# -- fit, outputs, evaluation -------------------------------------------------------------
def fit_args(synthetic: dict, out: Path, *extra: str) -> list[str]:
    return [*job_argv(None, f"input={synthetic['data']}", "features=[f0, f1, f2]",
                      "label=label", "grid=0:1000:4096", "epsilon=1.0", "delta=1e-6",
                      "seed=3", "dataset=synthetic-test", f"output={out / 'result.json'}",
                      f"results_table={out / 'results'}", f"plot={out / 'rect.png'}",
                      f"truth={synthetic['truth_path']}"), *extra]


def test_fit_job_end_to_end(spark, synthetic: dict, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    assert fit_rectangle.main(fit_args(synthetic, tmp_path), spark) == 0
    printed = capsys.readouterr().out
    assert "NOT differentially private" in printed  # seeded test run says so

    data = json.loads((tmp_path / "result.json").read_text())
    result = FitResult.from_json(data)
    assert result.features == FEATURES and result.seeded
    assert result.privacy is not None and result.privacy.epsilon <= 1.0 + 1e-9
    truth = synthetic["truth"]
    for j in range(3):
        assert abs(result.lower[j] - truth["true_lower"][j]) < 100
        assert abs(result.upper[j] - truth["true_upper"][j]) < 100
    assert (tmp_path / "rect.png").read_bytes()[:8] == PNG_MAGIC

    table = read_results(tmp_path / "results")
    assert table.num_rows == 1
    assert table.schema.names == SCHEMA.names  # nothing else is recorded
    row = table.to_pylist()[0]
    assert row["dataset"] == "synthetic-test" and row["features"] == FEATURES
    assert row["lower"] == result.lower and row["upper"] == result.upper
    assert row["epsilon"] == result.privacy.epsilon and row["method"] == result.method
    params = json.loads(row["parameters"])
    assert params["seeded"] is True and params["plan"] == result.parameters
    assert len(row["run_id"]) == 32 and row["started_at"].tzinfo is not None

    # a second run appends one more row
    assert fit_rectangle.main(fit_args(synthetic, tmp_path), spark) == 0
    rows = read_results(tmp_path / "results").to_pylist()
    assert len(rows) == 2 and rows[0]["run_id"] != rows[1]["run_id"]

    # non-private evaluation of the same result on the same (synthetic) data
    capsys.readouterr()
    code = evaluate_rectangle.main(
        job_argv(None, f"fit.input={synthetic['data']}", "fit.label=label",
                 f"fit.output={tmp_path / 'result.json'}",
                 f"fit.truth={synthetic['truth_path']}",
                 f"evaluate.output={tmp_path / 'eval.json'}"), spark)
    assert code == 0
    captured = capsys.readouterr()
    assert "NON-PRIVATE EVALUATION" in captured.out and "NON-PRIVATE" in captured.err
    ev = json.loads((tmp_path / "eval.json").read_text())
    assert ev["rows"] == 20000 and ev["positives"] == truth["positives"]
    assert "NON-PRIVATE" in ev["warning"]
    df = spark.read.parquet(str(synthetic["data"])).select(*FEATURES, "label").toArrow()
    X = np.column_stack([df.column(f).to_numpy() for f in FEATURES])
    y = df.column("label").to_numpy() == 1
    inside = result.contains(X)  # the Spark predicate agrees with FitResult.contains
    assert ev["false_negatives"] == int((y & ~inside).sum())
    assert ev["false_positives"] == int((~y & inside).sum())
    assert ev["error"] == pytest.approx((ev["false_negatives"] + ev["false_positives"]) / 20000)


# -- bad input: one line, non-zero exit, nothing written ----------------------------------
@pytest.fixture(scope="module")
def bad_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Small tables each broken in one way."""
    d = tmp_path_factory.mktemp("bad")
    n = 50
    x = np.linspace(0, 1000, n)
    good_label = (np.arange(n) % 2).astype(np.int32)
    tables = {
        "text_feature": pa.table({"f0": x, "f1": [f"v{i}" for i in range(n)], "f2": x,
                                  "label": good_label}),
        "label_not_01": pa.table({"f0": x, "f1": x, "f2": x,
                                  "label": np.where(good_label == 1, 2, 0).astype(np.int32)}),
        "empty": pa.table({"f0": pa.array([], pa.float64()), "f1": pa.array([], pa.float64()),
                           "f2": pa.array([], pa.float64()),
                           "label": pa.array([], pa.int32())}),
    }
    paths = {}
    for name, table in tables.items():
        pq.write_table(table, d / f"{name}.parquet")
        paths[name] = d / f"{name}.parquet"
    paths["not_delta"] = d / "not_delta"
    paths["not_delta"].mkdir()
    pq.write_table(tables["label_not_01"], paths["not_delta"] / "part-0.parquet")
    paths["csv"] = d / "good.csv"
    paths["csv"].write_text("f0,f1,f2,label\n" + "".join(
        f"{v},{v},{v},{c}\n" for v, c in zip(x, good_label, strict=True)))
    paths["header_only"] = d / "header_only.csv"
    paths["header_only"].write_text("f0,f1,f2,label\n")
    return paths


# (no-positive, empty and odd-label tables are ordinary inputs now: issue 10, point 1)
BAD_CASES = {
    "missing column": ([], {"features": "[f0, nope, f2]"}),
    "non-numeric column": (["text_feature"], {}),
    "not a Delta table": (["not_delta"], {"format": "delta"}),
    "CSV read as Parquet": (["csv"], {"format": "parquet"}),
    "header-only CSV": (["header_only"], {}),
}
#: what the one line must say, for some cases
BAD_CASE_MESSAGES = {
    "CSV read as Parquet": ["cannot read", "good.csv' as parquet: it is not a Parquet file",
                            "csv format"],
    "header-only CSV": ["header_only.csv' as csv: it has a header but no rows",
                        "'f0', 'f1', 'f2', 'label' have no type", "Parquet or Delta"],
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input_ends_with_one_line_and_writes_nothing(
        case: str, spark, synthetic: dict, bad_tables: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    table_key, sets = BAD_CASES[case]
    # a results table that already holds one row: a failed run must not add to it
    assert fit_rectangle.main(fit_args(synthetic, tmp_path), spark) == 0
    (tmp_path / "result.json").unlink()
    (tmp_path / "rect.png").unlink()
    capsys.readouterr()

    extra = job_argv(None, *[f"input={bad_tables[t]}" for t in table_key[:1]],
                     *[f"{k}={v}" for k, v in sets.items()])
    code = fit_rectangle.main(fit_args(synthetic, tmp_path, *extra), spark)

    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code != 0 and code == EXIT_BAD_INPUT, err
    assert len(lines) == 1 and lines[0].startswith("fit_rectangle: error: "), err
    assert "Traceback" not in err and "Exception" not in err
    for words in BAD_CASE_MESSAGES.get(case, []):
        assert words in lines[0], lines[0]
    assert not (tmp_path / "result.json").exists()
    assert not (tmp_path / "rect.png").exists()
    assert read_results(tmp_path / "results").num_rows == 1
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_results_path_that_is_not_a_delta_table_is_refused_before_fitting(
        spark, synthetic: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "notes.txt").write_text("not a table")
    code = fit_rectangle.main(fit_args(synthetic, tmp_path), spark)
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "is not a Delta table" in err
    assert not (tmp_path / "result.json").exists()


def test_bad_parameters_fail_before_spark_starts(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # no session is passed and none is needed: the check happens first
    code = fit_rectangle.main(job_argv(None, "input=x", "features=a", "label=y",
                                       "epsilon=-1", "delta=1e-6",
                                       f"output={tmp_path / 'r.json'}"))
    err = capsys.readouterr().err.strip()
    assert code == EXIT_BAD_INPUT
    assert err == "fit_rectangle: error: fit.epsilon must be a finite number > 0, got -1.0"
    assert not (tmp_path / "r.json").exists()


# -- the real spark-submit ----------------------------------------------------------------
def spark_submit(job: str, *args: str, cwd: Path = REPO,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``spark-submit`` of ``job`` (a file under jobs/, or an absolute path) on a
    ``local[1]`` master with conf/spark's configuration, run in ``cwd`` with ``env``'s
    entries over this process's environment."""
    import pyspark

    environment = dict(os.environ)
    environment.update({"SPARK_CONF_DIR": str(REPO / "conf" / "spark"),
                        "PYSPARK_PYTHON": sys.executable,
                        "PYSPARK_DRIVER_PYTHON": sys.executable,
                        "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})})
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    return subprocess.run([str(submit), "--master", "local[1]", str(REPO / "jobs" / job),
                           *args], env=environment, cwd=cwd, capture_output=True,
                          text=True, timeout=400)


@pytest.mark.slow
def test_spark_submit_fit_job(synthetic: dict, tmp_path: Path) -> None:
    cfg = tmp_path / "job.yaml"
    cfg.write_text(yaml.safe_dump({"spark": {"log_level": "ERROR"}}))
    done = spark_submit("fit_rectangle.py", "--config", str(cfg),
                        *fit_args(synthetic, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((tmp_path / "result.json").read_text())["features"] == FEATURES
    assert read_results(tmp_path / "results").num_rows == 1
    assert (tmp_path / "rect.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.slow
def test_spark_submit_bad_input_exit_code_and_one_line(synthetic: dict,
                                                       tmp_path: Path) -> None:
    done = spark_submit("fit_rectangle.py",
                        *fit_args(synthetic, tmp_path, *job_argv(None, "features=[f0, nope]")))
    # spark-submit merges the Python driver's stderr into its stdout; the job writes its
    # error line to spark-submit's own stderr
    output = done.stdout + done.stderr
    assert done.returncode == EXIT_BAD_INPUT, output
    errors = [ln for ln in done.stderr.splitlines() if "error" in ln.lower()]
    assert len(errors) == 1 and errors[0].startswith("fit_rectangle: error: "), output
    assert "nope" in errors[0]
    assert "error" not in done.stdout.lower(), done.stdout
    assert "Traceback" not in output and "Exception" not in output
    assert not (tmp_path / "result.json").exists()
    assert not (tmp_path / "results").exists()


#: a job's session under spark-submit (jobs/_common.py's, as every job gets it), its
#: catalog touched (which makes Spark SQL's warehouse folder), and a job's end
#: (``exit_now``: ``os._exit``, which skips ``atexit``)
WAREHOUSE_JOB = """
import os

from _common import get_spark

from dprect.app.jobs_support import exit_now

spark, owned = get_spark({}, "warehouse")
spark.catalog.listTables()
warehouse = spark.conf.get("spark.sql.warehouse.dir")
print("warehouse", warehouse, os.path.isdir(warehouse.removeprefix("file:")))
spark.stop()
exit_now(0)
"""


@pytest.mark.slow
def test_a_spark_submit_job_keeps_its_warehouse_private_and_removes_it(
        tmp_path: Path) -> None:
    """Under spark-submit (``make demo``), a job whose configuration does not set
    ``spark.sql.warehouse.dir`` keeps Spark SQL's warehouse in a private temporary folder
    and removes it as it ends — session 42 left ``spark-warehouse/`` in the folder the
    demo ran in."""
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    job = tmp_path / "warehouse_job.py"
    job.write_text(WAREHOUSE_JOB)
    path = os.pathsep.join([str(REPO), str(REPO / "jobs"), os.environ.get("PYTHONPATH", "")])
    done = spark_submit(str(job), cwd=cwd, env={"TMPDIR": str(tmp), "PYTHONPATH": path})
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("warehouse ")]
    _, warehouse, existed = line.split()
    assert existed == "True" and "dprect-warehouse-" in warehouse, line
    assert sorted(p.name for p in cwd.iterdir()) == []  # no spark-warehouse/ here
    assert not any(p.name.startswith("dprect-warehouse-") for p in tmp.iterdir())
