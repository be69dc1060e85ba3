"""Spark SQL text for the engine's column expressions.

Why text: every call of a ``pyspark.sql.functions`` builder or Column operator is a round
trip to the JVM (1–5 ms each on local Spark, measured), and a fit's predicates have
hundreds of nodes; :func:`pyspark.sql.functions.expr`, ``DataFrame.where(str)`` and
``DataFrame.selectExpr`` parse a whole expression in one round trip (≈ 0.6 ms). The
parsed expressions are the same Catalyst trees the builders make (``CAST``, ``+``, ``/``,
``floor``, comparisons), so results do not change.

Everything here returns text; nothing touches Spark. Names are quoted with backticks
(:func:`ident`) and numbers are written so that Spark reads back exactly the same value
(:func:`literal`), so no data value or column name can change an expression's meaning.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["all_of", "any_of", "as_double", "finite", "ident", "literal", "seen"]


def ident(name: str) -> str:
    """A column name quoted for Spark, so dots, spaces and backticks are taken literally."""
    return "`" + name.replace("`", "``") + "`"


def literal(x: float | int) -> str:
    """An exact Spark literal: an int as a BIGINT, a float as a DOUBLE.

    Doubles are written as ``CAST('<repr>' AS DOUBLE)``: Python's ``repr`` is the shortest
    string that reads back to the same float, Spark parses it with Java's correctly rounded
    ``Double.parseDouble`` (``inf``, ``-inf`` and ``nan`` are read as such), and constant
    folding turns the cast into a literal before any row is seen.
    """
    if isinstance(x, bool):
        raise TypeError("a boolean is not a numeric literal")
    if isinstance(x, int):
        return f"CAST({int(x)} AS BIGINT)"
    value = float(x)
    text = "nan" if math.isnan(value) else repr(value)
    return f"CAST('{text}' AS DOUBLE)"


def as_double(name: str) -> str:
    """Column ``name`` read as a double (the float64 the numpy engine sees)."""
    return f"CAST({ident(name)} AS DOUBLE)"


def finite(name: str, floating: bool) -> str:
    """True where column ``name`` holds a finite number, null where it is null.

    Floating columns: ``abs(x) < inf`` (Spark orders NaN above +inf, so NaN fails); other
    numeric types cannot hold NaN or ±inf. Kept this small on purpose (see
    :mod:`dprect.engines.spark.checks` on generated-code size).
    """
    if floating:
        return f"(abs({ident(name)}) < {literal(math.inf)})"
    return f"({ident(name)} IS NOT NULL)"


def seen(condition: str) -> str:
    """An aggregate: 1 when ``condition`` holds on some row, else 0 (0 on no rows)."""
    return f"coalesce(max(CASE WHEN {condition} THEN 1 ELSE 0 END), 0)"


def any_of(terms: Iterable[str]) -> str:
    """The disjunction of boolean SQL terms (at least one)."""
    return "(" + " OR ".join(f"({t})" for t in _nonempty(terms)) + ")"


def all_of(terms: Iterable[str]) -> str:
    """The conjunction of boolean SQL terms (at least one)."""
    return "(" + " AND ".join(f"({t})" for t in _nonempty(terms)) + ")"


def _nonempty(terms: Iterable[str]) -> list[str]:
    out = list(terms)
    if not out:
        raise ValueError("an empty list of SQL terms")
    return out
