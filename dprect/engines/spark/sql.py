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
Those two and :func:`as_double` live in the core (:mod:`dprect.core.sql_text`), because a
domain writes its own encoding as SQL (:meth:`dprect.core.domains.Domain.sort_sql`); they
are re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from dprect.core.sql_text import as_double, ident, literal

__all__ = ["all_of", "any_of", "as_double", "finite", "ident", "literal", "seen"]


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
