"""Every product's options are declared once (issue #22): the budget options in the
requests of dprect/core/request.py, the shared run options and each product's own in
dprect/app/options.py; the command line and the jobs' config keys are generated from
them."""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

import pytest

from dprect.app.cli import build_parser
from dprect.app.jobs_support import Option, request_options, run_options
from dprect.app.options import AGGREGATE_UNSET, RUN_OPTIONS
from dprect.app.products import COMMANDS
from dprect.app.products import PRODUCTS as REGISTRY
from dprect.core.request import option_specs

ROOT = Path(__file__).resolve().parents[2]
# generated from the product registry (dprect/app/products.py): every product with a command
PRODUCTS = {name: REGISTRY[name].request for name in COMMANDS}
OWN = {name: REGISTRY[name].options for name in COMMANDS}
JOBS = {name: REGISTRY[name].job for name in COMMANDS}


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def _actions(name: str) -> dict[str, argparse.Action]:
    return {a.dest: a for a in _subparser(name)._actions}


def _job_options(product: str) -> dict[str, Option]:
    options: dict[str, Option] = importlib.import_module(JOBS[product]).OPTIONS
    return options


@pytest.fixture(autouse=True)
def _jobs_on_path(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "jobs"))


@pytest.mark.parametrize("product", sorted(PRODUCTS))
def test_the_budget_options_come_from_the_request(product: str) -> None:
    actions, job = _actions(product), _job_options(product)
    unset = AGGREGATE_UNSET if product == "aggregate" else ()
    generated = request_options(PRODUCTS[product], unset)
    for spec in option_specs(PRODUCTS[product]):
        action = actions[spec.name]
        assert spec.help in (action.help or "")
        if spec.choices:
            assert tuple(action.choices or ()) == spec.choices
        if spec.name in unset:  # None unless given; the help names the default
            assert action.default is None and job[spec.name].default is None
            assert f"(default {spec.plain_default})" in (action.help or "")
        elif spec.kind == "label":  # None unless given, on both fronts (s40-edges item 2)
            assert action.default is None and job[spec.name].default is None
            assert f"(default {spec.plain_default})" in job[spec.name].help
        elif not spec.required:
            assert action.default == spec.plain_default
        assert job[spec.name] == generated[spec.name]


def test_the_aggregates_beta_is_worded_for_every_mechanism() -> None:
    """``dprect aggregate --beta`` (and the job's ``aggregate.beta``) bounds the describe
    query's and the quantiles' statements too, as ``dprect describe --beta`` says; it
    read "failure probability of the coverage statement, per group" (the preset
    ``bounds``' wording) whatever the statistics asked."""
    want = next(s.help for s in option_specs(PRODUCTS["describe"]) if s.name == "beta")
    for product in ("aggregate", "describe"):
        cli, job = _actions(product)["beta"].help or "", _job_options(product)["beta"].help
        assert cli.startswith(want) and job.startswith(want)
    assert "coverage statement" in (_actions("bounds")["beta"].help or "")


def test_describes_statistics_help_names_what_it_takes() -> None:
    """``dprect describe --statistics`` (and the job's ``describe.statistics``) names every
    statistic describe accepts — variance and std as well (the help said "among count,
    sum, mean" while both were taken) — and each it names is taken."""
    from dprect.core.aggregates import SPREAD, STATISTICS, plan_describe

    cli, job = _actions("describe")["statistics"].help or "", _job_options(
        "describe")["statistics"].help
    named = ", ".join(STATISTICS + SPREAD)
    assert f"among {named} " in cli and f"among {named} " in job
    for s in STATISTICS + SPREAD:
        assert s in plan_describe(1.0, 1, statistics=(s,)).statistics


@pytest.mark.parametrize("product", sorted(PRODUCTS))
def test_the_run_options_come_from_one_table(product: str) -> None:
    actions, job = _actions(product), _job_options(product)
    shared = run_options()
    for o in RUN_OPTIONS:
        action = actions[o.name]
        assert o.spelled in action.option_strings and action.help == o.cli_help
        assert action.default == o.default and bool(action.required) == o.required
        if not o.cli_only:
            assert job[o.name].default == shared[o.name].default
            assert job[o.name].kind == shared[o.name].kind


@pytest.mark.parametrize("product", sorted(PRODUCTS))
def test_a_products_own_options_come_from_its_table(product: str) -> None:
    actions, job = _actions(product), _job_options(product)
    generated = run_options(options=OWN[product])
    for o in OWN[product]:
        action = actions[o.name]
        assert o.spelled in action.option_strings and action.help == o.cli_help
        assert action.default == o.default and bool(action.required) == o.required
        assert tuple(action.choices or ()) == (o.choices or ())
        assert job[o.name].default == generated[o.name].default
        assert job[o.name].kind == generated[o.name].kind
    # nothing else: every flag of the product's parser is a shared, request, own or
    # session option (or the parser's own switches)
    declared = {o.name for o in (*RUN_OPTIONS, *OWN[product])} | {
        s.name for s in option_specs(PRODUCTS[product])}
    extra = set(actions) - declared - {"help", "master", "remote", "plan_only"}
    assert not extra, extra
    assert set(job) - declared == set()


def test_the_spark_strategies_are_the_engines() -> None:
    pytest.importorskip("pyspark")
    from dprect.app.options import SPARK_STRATEGIES
    from dprect.engines.spark.engine import STRATEGIES

    assert tuple(SPARK_STRATEGIES) == tuple(STRATEGIES)


def test_no_shared_option_is_spelled_out_again() -> None:
    cli = (ROOT / "dprect" / "app" / "cli.py").read_text()
    for o in (*RUN_OPTIONS, *(o for own in OWN.values() for o in own),
              *(s for kind in PRODUCTS.values() for s in option_specs(kind))):
        flag = getattr(o, "spelled", "--" + o.name.replace("_", "-"))
        # the products' parsers (the budget commands administer the ledger)
        assert not re.search(rf'\b(fit|b|d|spark|outputs|groups)\.add_argument\("{flag}"',
                             cli), flag
    for job in JOBS.values():
        text = (ROOT / "jobs" / f"{job}.py").read_text()
        keys = {o.name for o in (*RUN_OPTIONS, *(o for own in OWN.values() for o in own))} \
            | {s.name for kind in PRODUCTS.values() for s in option_specs(kind)}
        for key in keys:
            assert not re.search(rf'^\s+"{key}": Option\(', text, re.M), (job, key)


def test_the_strategys_old_spellings_still_read() -> None:
    """The Spark strategy was once called a plan: ``--plan`` and the job key
    ``spark_plan`` still read, as ``--strategy`` and ``strategy`` (one of them only)."""
    from dprect.app.jobs_support import ConfigError, section_values

    parse = build_parser().parse_args
    base = ["fit", "--input", "t.csv", "--features", "a", "--label", "y", "--epsilon", "1",
            "--delta", "0", "--output", "o.json"]
    assert parse([*base, "--plan", "pass"]).strategy == "pass"
    assert parse([*base, "--strategy", "collect"]).strategy == "collect"
    job = _job_options("fit")
    assert section_values({"fit": {"spark_plan": "rounds"}}, "fit", job)["strategy"] == "rounds"
    with pytest.raises(ConfigError, match="not both"):
        section_values({"fit": {"spark_plan": "rounds", "strategy": "pass"}}, "fit", job)


def test_a_switch_is_off_unless_given() -> None:
    """A flag option's default is False wherever it is declared (issue #41: set once by
    RunOption, not per flag): on the command line and in a job's config keys alike; a
    flag declared on by default is refused."""
    from dprect.app.options import SELECTION_OPTIONS, RunOption

    flags = [o for o in (*RUN_OPTIONS, *SELECTION_OPTIONS) if o.kind == "flag"]
    assert {o.name for o in flags} >= {"quiet", "select_groups"}
    for o in flags:
        assert o.default is False
        assert run_options(options=(o,))[o.name].default is False
    assert RunOption("x", "flag", "a switch").default is False
    with pytest.raises(ValueError, match="off by default"):
        RunOption("x", "flag", "a switch", default=True)


@pytest.mark.parametrize("product", sorted(PRODUCTS))
def test_a_jobs_help_names_its_keys_not_the_command_lines_flags(product: str) -> None:
    """A job's ``--help`` lists its config keys in its own words: an option's help that
    names another option by its flag (``--select-groups``) names the job's key
    (``describe.select_groups``), and a phrase about a command-line-only flag
    (``--plan-only``, ``--engine``) is the command line's alone — no ``(required unless
    --plan-only) (required)`` in a job, which has no ``--plan-only``."""
    from dprect.app.jobs_support import build_parser as job_parser

    module = importlib.import_module(JOBS[product])
    section, job = module.SECTION, module.OPTIONS
    epilog = job_parser(module.PROG, "", section, job).epilog or ""
    lines = [line for line in epilog.splitlines() if line.startswith(f"  {section}.")]
    assert len(lines) == len(job)
    for line in lines:
        assert not re.findall(r"(?<![\w-])--[a-z][\w-]*", line), line
        for key in re.findall(rf"\b{section}\.(\w+)", line):
            assert key in job, (line, key)
    # the command line keeps its notes, the flags' own words
    actions = _actions(product)
    assert ("(required unless --plan-only)" in (actions["output"].help or "")) == (
        "plan_only" in actions)
    assert "--engine spark" in (actions["input"].help or "")


_TABLE = ["--input", "t.csv", "--columns", "a", "--epsilon", "1", "--output", "o.json"]


@pytest.mark.parametrize("argv", [
    ["fit", "--input", "t.csv", "--features", "a", "--label", "y", "--epsilon", "1",
     "--delta", "0", "--output", "o.json", "--bogus"],
    ["aggregate", *_TABLE, "--statistics", "mean", "--bogus", "1"],
    ["budget", "show", "d", "--ledger", "l", "--bogus"]])
def test_an_unrecognized_argument_points_at_its_commands_help(argv: list[str],
                                                              capsys) -> None:
    """``unrecognized arguments`` is the error of the subcommand it was given to, and
    points at that subcommand's help (which lists what it takes), exit 2."""
    command = "dprect " + " ".join(argv[:2] if argv[0] == "budget" else argv[:1])
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{command}: error: unrecognized arguments: --bogus")
    assert err.endswith(f"(see {command} --help)")


@pytest.mark.parametrize(("argv", "meant"), [
    (["fit", "--input", "t.csv", "--features", "a", "--label", "y", "--epsilon", "1",
      "--delta", "0", "--output", "o.json", "--invalid_rows", "error", "--positive_label=2"],
     "--invalid-rows, --positive-label"),
    (["describe", *_TABLE, "--plan_only"], "--plan-only"),
    (["budget", "set-cap", "d", "--ledger", "l", "--epsilon", "1", "--delta", "0",
      "--cap_epsilon", "2"], None)])
def test_an_option_spelled_with_underscores_is_named_with_its_dashes(
        argv: list[str], meant: str | None, capsys) -> None:
    """A config key's spelling on the command line (``--invalid_rows``) is refused as
    before, and the line names the flag meant when the command takes it with dashes
    (budget set-cap has no --cap-epsilon: no hint)."""
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "unrecognized arguments: --" in err and "\n" not in err
    hint = f"(options are spelled with dashes: {meant}) (see dprect "
    assert (hint in err) if meant else ("spelled with dashes" not in err), err
