"""SQL text for a domain's encoding: exact literals and quoted names (no Spark here).

:meth:`dprect.core.domains.Domain.sort_sql` writes the SQL twin of ``Domain.encode`` with
these helpers, so the knowledge of how a domain encodes a feature stays on the domain's
class while the core never imports pyspark: an engine that runs SQL (the Spark engine)
parses the text. :mod:`dprect.engines.spark.sql` re-exports them beside the helpers only
the Spark engine uses.

Names are quoted with backticks (:func:`ident`) and numbers are written so that Spark
reads back exactly the same value (:func:`literal`), so no data value or column name can
change an expression's meaning.
"""

from __future__ import annotations

import math

__all__ = ["as_double", "ident", "literal"]


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
