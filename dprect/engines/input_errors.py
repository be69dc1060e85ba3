"""The one reading rule for input-error messages: built from the path, the format, the
schema (column names and types) and the options only — never from a library's text.

Every reader of an input table reports a failure through :func:`input_error` (or the
:func:`reading` block, which maps the library's exceptions to it): the numpy engine's
pyarrow reader (:mod:`dprect.engines.arrow_input`), the per-file schemas of a multi-file
input (:mod:`dprect.engines.file_schemas`), and the Spark engine's Parquet, CSV and Delta
readers (:mod:`dprect.engines.spark.source`, whose ``problem`` is the Spark error's
condition, named by :func:`dprect.engines.spark.source.spark_message` without its text).

Why never the library's text: it quotes the data. pyarrow's CSV parser prints the row it
fails on (``Expected 3 columns, got 4: 58.59,2.43,1,alice@example.com``), its casts print
the cell (``Failed to parse string: 'SSN 123-45-6789'``), a file that is not in the format
read has its bytes echoed, and a Delta log's commit holds statistics (column minima and
maxima) that a JSON error can quote. So the message says what the file must be, by
format, and what was asked of it (the columns read) — a public statement whatever the
file holds. The kind of failure is told only by the exception's class or a Spark error's
condition, both public, never by its text.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from dprect.core.errors import DprectError, InputDataError

#: what a readable input of each format is: the message of a read that failed says it
EXPECTED = {
    "csv": ("it is not a well-formed CSV file: a header row, then rows with as many "
            "fields as the header, each column's values of one type, in UTF-8"),
    "parquet": "it is not a Parquet file (or a folder of Parquet files), or it is damaged",
    "delta": ("it is not a readable Delta table, or its _delta_log or data files are "
              "damaged"),
}
#: the first bytes of every Parquet file (its format's magic number, not data)
PARQUET_MAGIC = b"PAR1"
#: the most columns read that :func:`input_error` names (a wide fit reads thousands)
SHOWN_COLUMNS = 10
#: the longest column name a message shows (:func:`column_names`)
NAME_CHARS = 100
#: the most column names :func:`column_names` lists (one line, whatever the table's width)
LISTED_NAMES = 50
#: the largest CSV file :func:`blank_csv` reads to tell that it has no header row
BLANK_BYTES = 4096
#: the end of every such message: why the reader's own text is not shown
WITHHELD = "the reader's message is withheld as it can quote the data"


def input_error(path: str | os.PathLike[str], fmt: str, *, problem: str | None = None,
                columns: Sequence[str] = ()) -> InputDataError:
    """The error for an input ``path`` that cannot be read as ``fmt``: one line naming the
    path, the format, what such an input must be (:data:`EXPECTED`), ``problem`` when the
    caller can name it from public facts (a Spark error condition, an exception class,
    the schema) and the ``columns`` read (an option); a file read as CSV that starts as
    every Parquet file does (:func:`starts_as_parquet`) is said to look like Parquet.
    Nothing else goes in: the library's exception text is never an argument."""
    what = problem or EXPECTED.get(fmt, f"it cannot be read as {fmt}")
    if fmt == "csv" and starts_as_parquet(path):
        what += ("; it starts with Parquet's magic number PAR1, so it looks like a Parquet "
                 "file (--format parquet, or format: parquet in a job's config)")
    read = f" (reading column(s) {column_names(columns, SHOWN_COLUMNS)})" if columns else ""
    return InputDataError(f"cannot read {os.fspath(path)!r} as {fmt}{read}: {what}; "
                          f"{WITHHELD}")


#: the error classes of a file that cannot be opened (removed, replaced by a folder or
#: not readable by this process after the input was listed): :func:`unreadable_input`
UNOPENED = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)


def unreadable_input(path: str | os.PathLike[str], fmt: str) -> InputDataError:
    """The error for an input ``path`` a file of which cannot be opened once listed (it
    was removed, moved or replaced by a folder, or this process may not read it), on
    either engine: the path and the format only — whatever the file holds, it is not
    said to be malformed."""
    return InputDataError(
        f"cannot read {os.fspath(path)!r} as {fmt}: a file of it cannot be opened (it was "
        "removed, moved or replaced by a folder after the input was listed, or this "
        "process may not read it): check the input's files and run again")


def starts_as_parquet(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a local file whose first bytes are :data:`PARQUET_MAGIC` — the
    file format's public marker, the same for every Parquet file whatever its rows (an
    unreadable path or a folder: False)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(PARQUET_MAGIC)) == PARQUET_MAGIC
    except (OSError, ValueError):
        return False


def column_names(names: Sequence[str], most: int = LISTED_NAMES) -> str:
    """A table's column names as a message lists them (``'a', 'b'``), the first ``most``
    of them (then how many more: a wide table has thousands). A name
    that is not plain printable text of at most :data:`NAME_CHARS` characters is counted,
    not shown: a file of another kind read as CSV has its first bytes as its header, and
    those are data, not a schema."""
    shown = [n for n in names if n.isprintable() and 0 < len(n) <= NAME_CHARS]
    hidden = len(names) - len(shown)
    text = ", ".join(map(repr, shown[:most]))
    if len(shown) > most:
        text += f" and {len(shown) - most} more"
    if hidden:
        text += f"{', ' if shown else ''}{hidden} name(s) not shown (not plain text)"
    return text or "no columns"


def missing_columns(path: str | os.PathLike[str] | None, missing: Sequence[str],
                    present: Sequence[str]) -> InputDataError:
    """Columns a run reads that the input lacks, on either engine: names the input's path
    (``None``: a table passed in, not read from a path — "the input"), the ``missing``
    names and the ``present`` ones (:func:`column_names`, schema only). A missing name
    that is present names joined by commas (``--group-by origin,dest``) is said to be one:
    a group or label option takes one column."""
    where = "the input" if path is None else f"input {os.fspath(path)!r}"
    joined = [m for m in missing if "," in m
              and all(part.strip() in present for part in m.split(","))]
    hint = "" if not joined else (
        f" ({column_names(joined[:1])} names columns of the input joined by commas: a run "
        "takes one group column and one label column — make one column of them first)")
    return InputDataError(f"{where} has no column(s) {column_names(missing)}; it has "
                          f"{column_names(present)}{hint}")


def not_numeric(name: str, type_text: str) -> InputDataError:
    """A feature or a column to aggregate whose type is not numeric, on either engine:
    names the column and its type (schema only) and what such a column can be instead."""
    return InputDataError(
        f"column {name!r} must be numeric, but its type is {type_text}: features and "
        "columns to aggregate take numbers (a text column can be the label or the group "
        "column; a CSV column is text when any of its cells is not a number)")


def not_label_kind(role: str, name: str, type_text: str) -> InputDataError:
    """A label or group column (``role``) whose type holds no label kind (numbers,
    booleans, strings), on either engine: names the column and its type (schema only)."""
    return InputDataError(f"the {role} column {name!r} must hold numbers, booleans or "
                          f"strings, but its type is {type_text}")


def type_not_read(path: str | os.PathLike[str], name: str, type_text: str, why: str
                  ) -> InputDataError:
    """A column read whose type the engines do not read alike (a duration, a type Spark's
    Parquet reader cannot read), on either engine, whatever its use: names the input, the
    column, its type and ``why`` with what to do (schema only)."""
    return InputDataError(f"column {name!r} of input {os.fspath(path)!r} is of type "
                          f"{type_text}, {why}; a column the run does not read may keep "
                          "any type")


def repeated_column(path: str | os.PathLike[str], name: str, times: int) -> InputDataError:
    """A Parquet column whose name the footer gives more than one column, on either
    engine: names the input, the column and how many (schema only)."""
    return InputDataError(
        f"input {os.fspath(path)!r} has {times} columns named {name!r}: give each column "
        "its own name (Parquet readers refuse a file with two columns of one name)")


def csv_empty(path: str | os.PathLike[str]) -> InputDataError:
    """A CSV file with no header row (no bytes, or only line ends), on either engine."""
    return InputDataError(f"cannot read {os.fspath(path)!r} as csv: the file is empty (no "
                          "header row, so no columns)")


def blank_csv(path: Path) -> bool:
    """Whether the local file at ``path`` holds no header row: no bytes but a UTF-8
    byte-order mark and line ends (pyarrow's reader calls such a file malformed; Spark's
    finds no columns). Files of more than :data:`BLANK_BYTES` bytes are not looked at."""
    if path.stat().st_size > BLANK_BYTES:
        return False
    with path.open("rb") as handle:
        return not handle.read().removeprefix(b"\xef\xbb\xbf").strip(b"\r\n")


def csv_without_rows(path: str | os.PathLike[str], names: Sequence[str]) -> InputDataError:
    """A CSV file with a header and no rows (its columns have no type: CSV types are
    inferred from the rows), on either engine."""
    return InputDataError(
        f"cannot read {os.fspath(path)!r} as csv: it has a header but no rows, so column(s) "
        f"{column_names(names)} have no type (CSV types are inferred from the rows); give a "
        "file with rows, or the table in a typed format (Parquet or Delta), where an empty "
        "table keeps its schema")


def csv_name_twice(path: str | os.PathLike[str], first: str, second: str, at: int,
                   again: int) -> InputDataError:
    """A CSV header that gives one name (``first``, at field ``at``; ``second`` at field
    ``again``, equal ignoring case) to two fields, on either engine: header only."""
    return InputDataError(
        f"cannot read {os.fspath(path)!r} as csv: its header fields {at} and {again} have "
        f"one name ({column_names(list(dict.fromkeys([first, second])))}; names are "
        "compared ignoring case, as Spark's CSV reader compares them): give each column "
        "of the header its own name")


@contextmanager
def reading(path: str | os.PathLike[str], fmt: str,
            errors: tuple[type[BaseException], ...], *,
            problem: Callable[[BaseException], str | None] | None = None,
            columns: Sequence[str] = ()) -> Iterator[None]:
    """A reading step: an exception of ``errors`` raised inside becomes
    :func:`input_error` (``problem(exc)`` may name it from public facts only); dprect's
    own errors pass unchanged. A file that cannot be opened (:data:`UNOPENED`, among
    ``errors``) is :func:`unreadable_input`, never said to be malformed. The library's
    exception is not chained (``from None``), so no traceback or log prints its text
    either."""
    try:
        yield
    except DprectError:
        raise
    except errors as exc:
        if isinstance(exc, UNOPENED):
            raise unreadable_input(path, fmt) from None
        said = problem(exc) if problem is not None else None
        raise input_error(path, fmt, problem=said, columns=columns) from None


__all__ = ["BLANK_BYTES", "EXPECTED", "LISTED_NAMES", "NAME_CHARS", "PARQUET_MAGIC",
           "SHOWN_COLUMNS", "UNOPENED", "WITHHELD",
           "blank_csv", "column_names", "csv_empty", "csv_name_twice", "csv_without_rows",
           "input_error",
           "missing_columns", "not_label_kind", "not_numeric", "reading", "repeated_column",
           "starts_as_parquet", "type_not_read", "unreadable_input"]
