"""The continuity declaration (issue #24, point 2) on every front end: ``--continuous`` on
the command line and the job key ``continuous``, both generated from the request's option
specs; ``dprect plan`` prints the crossover with and without the declaration."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dprect
from dprect.app.cli import main
from dprect.app.jobs_support import request_options
from dprect.core.request import FitRequest, PlanRequest, option_specs

pytestmark = pytest.mark.filterwarnings("ignore:this run used a fixed seed")


def test_the_option_is_generated_from_the_request():
    spec = {s.name: s for s in option_specs(PlanRequest)}["continuous"]
    assert spec.kind == "names" and spec.plain_default is None
    assert request_options(FitRequest)["continuous"].kind == "str_list"
    assert PlanRequest(epsilon=1, delta=0, continuous="a, b").continuous == ("a", "b")
    assert PlanRequest(epsilon=1, delta=0, continuous=None).continuous == ()
    assert "continuous" not in PlanRequest(epsilon=1, delta=0).to_json()  # as before


def test_plan_with_continuous_features(capsys):
    args = ["plan", "--epsilon", "1", "--delta", "1e-6", "--features", "a,b,c",
            "--grid", "0:1:4294967296", "--method", "randmargins", "--json"]
    assert main([*args, "--continuous", "b,c"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["request"]["continuous"] == ["b", "c"]
    bits = {(r["axis"], r["side"]): r.get("tie_bits", 0) for r in js["plan"]["rounds"]}
    assert bits[(0, "lo")] > 0 and bits[(1, "lo")] == bits[(2, "hi")] == 0
    assert js["crossover"]["every_feature_declared"] == 75
    assert js["crossover"]["without_declaration"] == 121
    assert main([*args[:-1], "--continuous", "b"]) == 0
    assert "crossover" in capsys.readouterr().out.splitlines()[-1]


def test_an_unknown_continuous_feature_is_a_usage_error(capsys):
    assert main(["plan", "--epsilon", "1", "--delta", "1e-6", "--features", "a,b",
                 "--continuous", "z"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "continuous" in err and "Traceback" not in err


def test_fit_takes_the_declaration():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    y = np.ones(3000, dtype=int)
    grid = dprect.Grid(-6, 6, 2**20)
    a = dprect.fit(X, y, grid=grid, epsilon=4, delta=1e-6, method="randmargins", seed=1,
                   features=["a", "b", "c"], continuous=["a", "b", "c"])
    rounds = a.parameters["plan"]["rounds"]
    assert all("tie_bits" not in r for r in rounds)
    assert a.parameters["request"]["continuous"] == ["a", "b", "c"]


def test_the_fit_command_plans_with_the_declaration(tmp_path, capsys):
    """``dprect fit --continuous`` reaches the one plan of the fit flow (by name)."""
    from pin_data import FEATURES, cli_args, write_parquet

    data = write_parquet(tmp_path)
    out = tmp_path / "r.json"
    assert main(cli_args(data, out, "--method", "randmargins", "--continuous",
                         FEATURES[0])) == 0
    js = json.loads(out.read_text())
    rounds = js["parameters"]["plan"]["rounds"]
    assert js["parameters"]["request"]["continuous"] == [FEATURES[0]]
    assert all("tie_bits" not in r for r in rounds if r["axis"] == 0)
    assert any("tie_bits" in r for r in rounds if r["axis"] == 1)
