"""The product registry (dprect/app/products.py, issue #41): the lists once kept by hand
are generated from it — the command line's product subcommands, the jobs' config
sections, the refusal of another product's record, architecture.md's product list."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from dprect.app.cli import build_parser
from dprect.app.jobs_support import SECTIONS
from dprect.app.products import COMMANDS, PRODUCTS, foreign, product_of

ROOT = Path(__file__).resolve().parents[2]

RECORDS = {
    "fit": {"method": "randmargins", "lower": [0.0], "upper": [1.0]},
    "aggregate": {"method": "bounds", "bounds": [], "columns": ["x"]},
}
#: the records of each mechanism of the aggregate product (today's bounds and describe
#: records, as the ledger holds them)
AGGREGATES = {
    "bounds": {"method": "bounds", "bounds": [], "columns": ["x"]},
    "describe": {"method": "describe", "results": [], "columns": ["x"]},
}


def test_the_subcommands_and_sections_are_the_registrys():
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert [c for c in action.choices if c not in ("plan", "budget")] == list(COMMANDS)
    assert set(COMMANDS) <= set(SECTIONS)
    for name in COMMANDS:
        assert (ROOT / "jobs" / f"{PRODUCTS[name].job}.py").is_file()
    assert {"aggregate", "bounds", "describe"} <= set(COMMANDS)


def _base(name: str) -> str:
    return PRODUCTS[name].preset_of or name


def test_a_record_is_refused_by_every_other_product_and_named():
    for name, record in RECORDS.items():
        assert product_of(record).name == name
        assert foreign(name, record) is None
        for other in PRODUCTS:
            if _base(other) != name:
                said = foreign(other, record)
                assert said == f"{PRODUCTS[name].record}, not {PRODUCTS[_base(other)].record}"


def test_todays_bounds_and_describe_records_are_the_aggregates_and_their_presets():
    """A record written by ``dprect bounds`` or ``dprect describe`` before they became
    presets is recognised as the aggregate product's (so a fit refuses it), and a preset
    of the other mechanism refuses it on the spine, naming both."""
    from dprect.app.aggregate_flow import AggregateProduct, bounds_settings, describe_settings

    for record in AGGREGATES.values():
        assert product_of(record).name == "aggregate"
        assert foreign("aggregate", record) is None
        assert foreign("bounds", record) is None and foreign("describe", record) is None
        assert foreign("fit", record) == "DP aggregates, not a rectangle"
    values = {"input": "t.csv", "columns": ["x"], "epsilon": 1.0, "output": "o.json"}
    as_bounds = AggregateProduct(bounds_settings(values))
    as_describe = AggregateProduct(describe_settings(values))
    assert as_bounds.foreign(AGGREGATES["bounds"]) is None
    assert as_describe.foreign(AGGREGATES["describe"]) is None
    assert as_bounds.foreign(AGGREGATES["describe"]) == (
        "DP aggregates (describe), not private bounds")
    assert as_describe.foreign(AGGREGATES["bounds"]) == (
        "private bounds, not DP aggregates (describe)")
    assert as_describe.foreign(RECORDS["fit"]) == "a rectangle, not DP aggregates"


def test_the_architecture_doc_lists_the_registrys_products():
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"<!-- products: generated from dprect/app/products.py \(PRODUCTS\) -->"
                      r"\n(.*?)\n<!-- /products -->", text, re.S)
    assert block is not None
    assert block.group(1).splitlines() == [f"- `{p.name}`: {p.summary}" for p in PRODUCTS.values()]
