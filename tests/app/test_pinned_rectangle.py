"""The rectangle of a fixed seed on a slice of the demo data: dprect.fit and ``dprect fit``
(numpy). First pinned before the restructure (issue 11); pinned after accounting v2, issue
#12 (the planner's new per-round ε changes every draw; same data, same seed)."""

from __future__ import annotations

import json

import pytest
from pin_data import (
    FEATURES,
    FIT,
    GRID,
    PIN_AUTO,
    PIN_RANDMARGINS,
    assert_pinned,
    cli_args,
    demo_slice,
    write_parquet,
)

import dprect
from dprect.app.cli import main


@pytest.mark.parametrize("method,pin", [("auto", PIN_AUTO), ("randmargins", PIN_RANDMARGINS)])
def test_api_fit_pinned(method, pin):
    X, y = demo_slice()
    with pytest.warns(UserWarning, match="fixed seed"):
        result = dprect.fit(X, y, grid=GRID, features=FEATURES, method=method, **FIT)
    assert_pinned(result.to_json(), pin)


def test_cli_numpy_pinned(tmp_path):
    out = tmp_path / "result.json"
    assert main(cli_args(write_parquet(tmp_path), out)) == 0
    assert_pinned(json.loads(out.read_text()), PIN_AUTO)


def test_cli_numpy_randmargins_pinned(tmp_path):
    out = tmp_path / "result.json"
    assert main(cli_args(write_parquet(tmp_path), out, "--method", "randmargins")) == 0
    assert_pinned(json.loads(out.read_text()), PIN_RANDMARGINS)
