"""The product registry (issue #41): every product of the run spine once, and what is
generated from it instead of kept by hand — the refusal of another product's record
under a reused run id (:func:`foreign`), the jobs' config sections
(:data:`dprect.app.jobs_support.SECTIONS`), the command line's product subcommands
(:func:`dprect.app.cli.build_parser` and its dispatch), the options tests' tables
(tests/app/test_options_declared_once.py) and docs/architecture.md's product list (a test
checks the list against the registry: a bullet a product, its name and summary).

A new product is one :class:`ProductInfo` here (with its flow, its record and, where it
has them, its command and its job). A preset of a product (``bounds`` and ``describe``,
presets of ``aggregate``) is a row with ``preset_of``: its own command, job and options,
its product's records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dprect.app.options import (
    AGGREGATE_OPTIONS,
    BOUNDS_OPTIONS,
    DESCRIBE_OPTIONS,
    FIT_OPTIONS,
    RunOption,
)
from dprect.core.classes import is_classes_record
from dprect.core.request import BoundsRequest, DescribeRequest, FitRequest, StatisticsRequest
from dprect.release.aggregate_record import is_aggregate_record


@dataclass(frozen=True)
class ProductInfo:
    """One product: ``name`` (its ``dprect`` subcommand and its jobs' config section when
    it has them), what its released record is (``record``), how a record of it is
    recognised (``recognise``; None: the rectangle's, any record no other product
    recognises), the request type its budget options come from (``request``) and its own
    run options (``options``: app/options.py's rows; both empty for a product run
    through another's command), its command (``command``: the ``dprect`` subcommand, or None
    when it runs through another's), its job (``job``: jobs/<job>.py, or None) and one
    line for the docs (``summary``)."""

    name: str
    record: str
    recognise: Callable[[Mapping[str, Any]], bool] | None
    request: type | None
    options: tuple[RunOption, ...]
    command: bool
    job: str | None
    summary: str
    preset_of: str | None = None


PRODUCTS: dict[str, ProductInfo] = {p.name: p for p in (
    ProductInfo("fit", "a rectangle", None, FitRequest, FIT_OPTIONS, True, "fit_rectangle",
                "one private axis-aligned rectangle around a table's positives "
                "(`FitProduct`, app/flow.py)"),
    ProductInfo("classes", "one rectangle per class", is_classes_record, None, (), False,
                None,
                "one rectangle per class of a label column, run through `fit --classes` "
                "(`ClassesProduct`, app/classes_flow.py)"),
    ProductInfo("aggregate", "DP aggregates", is_aggregate_record, StatisticsRequest,
                AGGREGATE_OPTIONS, True, "aggregate",
                "any statistics of the registry (core/statistic.py) per public group and "
                "column, drawn by one mechanism or several in one charge (`AggregateProduct`, "
                "app/aggregate_flow.py)"),
    ProductInfo("bounds", "DP aggregates", None, BoundsRequest, BOUNDS_OPTIONS, True,
                "private_bounds",
                "preset of `aggregate --statistics coverage`: private clamping bounds per "
                "public group and column", "aggregate"),
    ProductInfo("describe", "DP aggregates", None, DescribeRequest, DESCRIBE_OPTIONS, True,
                "describe",
                "preset of `aggregate --statistics bounds,count,sum,mean`: DP count, sum "
                "and mean per public group and column with bounds aimed at the query",
                "aggregate"),
)}

#: the products with a ``dprect`` subcommand (and a job section), in the registry's order
COMMANDS = tuple(p.name for p in PRODUCTS.values() if p.command)


def product_of(record: Mapping[str, Any]) -> ProductInfo:
    """The product a released record belongs to (the rectangle's when no other
    recognises it)."""
    own = [p for p in PRODUCTS.values() if p.preset_of is None]
    for p in own:
        if p.recognise is not None and p.recognise(record):
            return p
    return next(p for p in own if p.recognise is None)


def foreign(name: str, record: Mapping[str, Any]) -> str | None:
    """None when ``record`` is product ``name``'s own, else what it is instead (the
    refusal of a reused run id: "DP aggregates, not a rectangle")."""
    own, found = PRODUCTS[name], product_of(record)
    own = PRODUCTS[own.preset_of] if own.preset_of is not None else own
    return None if found is own else f"{found.record}, not {own.record}"


__all__ = ["COMMANDS", "PRODUCTS", "ProductInfo", "foreign", "product_of"]
