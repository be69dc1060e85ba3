"""The product registry (dprect/app/products.py, issue #41): the lists once kept by hand
are generated from it — the command line's product subcommands, the jobs' config
sections, the refusal of another product's record, architecture.md's product list."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from dprect.app.cli import build_parser
from dprect.app.jobs_support import SECTIONS
from dprect.app.products import COMMANDS, PRODUCTS, doc_lines, foreign, product_of

ROOT = Path(__file__).resolve().parents[2]

RECORDS = {
    "fit": {"method": "randmargins", "lower": [0.0], "upper": [1.0]},
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


def test_a_record_is_refused_by_every_other_product_and_named():
    for name, record in RECORDS.items():
        assert product_of(record).name == name
        assert foreign(name, record) is None
        for other in PRODUCTS:
            if other != name:
                said = foreign(other, record)
                assert said == f"{PRODUCTS[name].record}, not {PRODUCTS[other].record}"


def test_the_architecture_doc_lists_the_registrys_products():
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"<!-- products: generated from dprect/app/products.py \(doc_lines\) -->"
                      r"\n(.*?)\n<!-- /products -->", text, re.S)
    assert block is not None
    assert block.group(1).splitlines() == doc_lines()
