"""The typed request (issue 11): one frozen, validated object for the budget and the fit
options, whose allowed values and defaults live in :mod:`dprect.core.request` only — the
command line's choices and defaults and the fit job's option table are generated from it,
and no other module spells a default or a list of allowed values."""

from __future__ import annotations

import argparse
import ast
import dataclasses
from pathlib import Path

import pytest

from dprect.app.cli import build_parser
from dprect.app.jobs_support import request_options
from dprect.core.errors import ParameterError
from dprect.core.labels import LabelText
from dprect.core.planner import plan
from dprect.core.request import (
    Choice,
    FitRequest,
    Method,
    Neighbouring,
    PlanRequest,
    Source,
    make_request,
    option_specs,
)

REPO = Path(__file__).resolve().parents[2]
CHOICES = {spec.name: spec for spec in option_specs() if spec.choices}


def test_request_is_frozen_typed_and_validated():
    r = FitRequest(epsilon=1, delta=1e-6, method="randmargins", neighbouring="replace-one")
    assert r.method is Method.RANDMARGINS and r.neighbouring is Neighbouring.REPLACE_ONE
    assert isinstance(r.epsilon, float) and r.positive_label == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.epsilon = 2.0  # type: ignore[misc]
    assert r.budget() == PlanRequest(epsilon=1, delta=1e-6, method="randmargins",
                                     neighbouring="replace-one")
    for bad, message in [({"epsilon": 0}, "epsilon must be"),
                         ({"delta": 1.5}, "delta must be"),
                         ({"beta": 0}, "beta must be"),
                         ({"method": "best"}, "method must be one of auto, randmargins, "
                                              "composition, quantiles; got 'best'"),
                         ({"shape": "square"}, "shape must be one of general, origin"),
                         ({"margin_law": 3}, "margin_law must be one of"),
                         ({"invalid_rows": "skip"}, "invalid_rows must be one of drop, error"),
                         ({"positive_label": float("nan")}, "positive label must be finite"),
                         ({"positive_label": [1]}, "positive label must be a number"),
                         # an empty label: "" to Arrow's CSV reader, null to Spark's
                         ({"positive_label": ""}, "positive label is empty"),
                         ({"positive_label": LabelText(" ")}, "positive label is empty")]:
        with pytest.raises(ParameterError, match=message):
            FitRequest(**{"epsilon": 1.0, "delta": 1e-6, **bad})


def test_make_request_takes_a_request_or_options_not_both():
    r = PlanRequest(epsilon=1, delta=1e-6)
    assert make_request(PlanRequest, r, {}) is r
    assert make_request(PlanRequest, None, {"epsilon": 1, "delta": 1e-6}) == r
    with pytest.raises(ParameterError, match="not both"):
        make_request(PlanRequest, r, {"beta": 0.1})
    with pytest.raises(TypeError):
        make_request(PlanRequest, None, {"epsilon": 1})  # delta is required
    with pytest.raises(ParameterError, match="must be a FitRequest"):
        make_request(FitRequest, r, {})


def test_plan_takes_the_request_or_its_fields():
    from dprect.app.api import resolve_domains

    domains = resolve_domains("0:1:1024", ["a", "b"])
    by_request = plan(FitRequest(epsilon=1, delta=1e-6, positive_label=LabelText("y")),
                      domains=domains)
    by_fields = plan(epsilon=1, delta=1e-6, domains=domains)
    assert by_request.to_json() == by_fields.to_json()
    assert by_fields.request["method"] == "auto" and type(by_fields.request["method"]) is str


def test_source_checks_the_names():
    with pytest.raises(ParameterError, match="listed twice"):
        Source("t.parquet", ["a", "a"], "y")
    with pytest.raises(ParameterError, match="also listed as a feature"):
        Source("t.parquet", ["a", "y"], "y")
    with pytest.raises(ParameterError, match="at least one feature"):
        Source("t.parquet", [], "y")
    # an empty name (a config's [x, '']; the command line drops empty entries) is
    # refused with the settings, before an engine starts (s39-edges: the bounds job
    # started Spark, then refused the column)
    for bad in (dict(columns=["a", ""]), dict(columns=["a", " "], label="y"),
                dict(columns=["a"], label="")):
        with pytest.raises(ParameterError, match="empty name"):
            Source("t.parquet", **bad)  # type: ignore[arg-type]


def test_source_checks_a_delta_snapshot_before_any_engine_starts(tmp_path, capsys):
    """A Delta snapshot's time that is not ISO-8601, a negative version, or both a
    version and a time are refused with the settings (the Spark jobs check every
    parameter before Spark starts), and the command refuses them in one line with nothing
    started, read or written."""
    from cli_run import messages

    from dprect.app.cli import main

    with pytest.raises(ParameterError, match="'yesterday' is not an ISO-8601"):
        Source("t", ["a"], timestamp="yesterday")
    assert Source("t", ["a"], timestamp="2024-05-01T12:00:00Z").timestamp is not None
    with pytest.raises(ParameterError, match="integer >= 0, got -1"):
        Source("t", ["a"], version=-1)
    with pytest.raises(ParameterError, match="a version or a timestamp, not both"):
        Source("t", ["a"], version=0, timestamp="2024-05-01")
    code = main(["aggregate", "--input", "missing_table", "--format", "delta", "--columns",
                 "x", "--statistics", "mean", "--epsilon", "1", "--engine", "spark",
                 "--delta-timestamp", "yesterday", "--output", str(tmp_path / "o.json")])
    err = capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert code == 2 and messages(err) == [
        "dprect: error: Delta timestamp 'yesterday' is not an ISO-8601 date or time "
        "(e.g. 2024-05-01T12:00:00Z)"], err


def _actions(parser: argparse.ArgumentParser, command: str) -> dict[str, argparse.Action]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a for a in sub.choices[command]._actions}


@pytest.mark.parametrize("command,kind", [("fit", FitRequest), ("plan", PlanRequest)])
def test_cli_choices_and_defaults_are_the_requests(command, kind):
    actions = _actions(build_parser(), command)
    for spec in option_specs(kind):
        action = actions[spec.name]
        assert action.required == spec.required
        if spec.choices:
            assert tuple(action.choices) == spec.choices == type(spec.default).values()
            assert action.default == spec.default.value
        elif spec.kind == "float" and not spec.required:
            assert action.default == spec.default
    assert "invalid_rows" not in actions if kind is PlanRequest else True


def test_job_options_are_the_requests():
    import fit_rectangle

    generated = request_options()
    assert set(generated) == {spec.name for spec in option_specs(FitRequest)}
    for name, option in generated.items():
        assert fit_rectangle.OPTIONS[name] == option
    assert fit_rectangle.OPTIONS["method"].default == Method.AUTO.value
    assert fit_rectangle.OPTIONS["epsilon"].default is None  # required


# -- no other module spells a default or the allowed values --------------------------------
FIELDS = {spec.name for spec in option_specs()}
VALUES = {name: set(spec.choices) for name, spec in CHOICES.items()}


#: the request module itself, and the privacy audit, whose delta is a statistical test's
#: (an observed (epsilon, delta) pair), not a run's budget
NOT_SCANNED = {Path("dprect/core/request.py"), Path("dprect/core/audit.py")}


def _sources() -> list[Path]:
    files = sorted((REPO / "dprect").rglob("*.py")) + sorted((REPO / "jobs").glob("*.py"))
    return [p for p in files if p.relative_to(REPO) not in NOT_SCANNED]


def _literal(node: ast.expr | None) -> bool:
    """A constant default other than None (``"auto"``, ``1e-4``, ``1``)."""
    return isinstance(node, ast.Constant) and node.value is not None


def test_defaults_and_allowed_values_live_in_the_request_module_only():
    problems = []
    for path in _sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        where = path.relative_to(REPO)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                positional = [*args.posonlyargs, *args.args]
                pairs = list(zip(positional[len(positional) - len(args.defaults):],
                                 args.defaults, strict=True))
                pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults,
                                                 strict=True)]
                for arg, default in pairs:
                    if arg.arg in FIELDS and _literal(default):
                        problems.append(f"{where}:{node.lineno} {node.name}({arg.arg}="
                                        f"{ast.unparse(default)})")  # type: ignore[arg-type]
            if isinstance(node, ast.Tuple | ast.List | ast.Set):
                texts = {e.value for e in node.elts
                         if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                for name, values in VALUES.items():
                    if len(texts & values) >= 2:
                        problems.append(f"{where}:{node.lineno} the values of {name}: "
                                        f"{ast.unparse(node)}")
    assert problems == [], "\n".join(problems)


def test_every_choice_is_a_str_enum_of_the_request_module():
    for spec in CHOICES.values():
        enum_type = type(spec.default)
        assert issubclass(enum_type, Choice) and enum_type.__module__ == "dprect.core.request"
