"""Where a Spark run executes: the one declaration of the session options.

``--master URL`` (a classic session: this process starts or joins a Spark driver) and
``--remote sc://HOST:PORT`` (a Spark Connect session: the driver is a server elsewhere,
this process holds only a gRPC client) are declared here once. The ``dprect fit`` and
``dprect bounds`` command lines (:func:`add_session_arguments`) and the jobs' ``spark``
section (:data:`dprect.app.jobs_support.SPARK_OPTIONS`) are generated from
:data:`SESSION_OPTIONS`, so a new option appears in all three. No pyspark import here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NamedTuple

from dprect.core.validation import check_connect_url


class SessionOption(NamedTuple):
    """One way of naming where Spark runs: the metavar and the help shared by the flag
    (``--<key>``) and the jobs' config key (``spark.<key>``)."""

    metavar: str
    help: str


#: the session options, in the order the help lists them; at most one may be given
SESSION_OPTIONS: dict[str, SessionOption] = {
    "master": SessionOption(
        "URL", "Spark master URL for a classic session (default local[2]; spark-submit "
               "--master wins in the jobs)"),
    "remote": SessionOption(
        "sc://HOST:PORT", "Spark Connect server to run on instead of a local driver "
                          "(needs the 'connect' extra; the server's own configuration "
                          "holds Java options, logging and jars: docs/operations.md)"),
}


def add_session_arguments(group: argparse._ActionsContainer, *, note: str = "") -> None:
    """Add ``--master`` and ``--remote`` (mutually exclusive) to a parser or group;
    ``note`` is appended to each help line (e.g. ``" (--engine spark)"``)."""
    exclusive = group.add_mutually_exclusive_group()
    for key, option in SESSION_OPTIONS.items():
        exclusive.add_argument(f"--{key}", default=None, metavar=option.metavar,
                               help=option.help + note)


def session_flags() -> tuple[tuple[str, str], ...]:
    """``(attribute, flag)`` of every session option (for "needs --engine spark")."""
    return tuple((key, f"--{key}") for key in SESSION_OPTIONS)


def chosen(values: object) -> dict[str, str | None]:
    """The session options' values from an argparse namespace or a mapping."""
    get = values.get if isinstance(values, dict) else lambda k: getattr(values, k, None)
    return {key: get(key) for key in SESSION_OPTIONS}


def check_session_options(values: object, name: Callable[[str], str]) -> None:
    """Refuse a given ``remote`` that is not a Spark Connect URL (``sc://HOST[:PORT]``,
    port 1 to 65535; an empty text too, which would otherwise mean no server), naming it
    as ``name(key)`` (``--remote``, ``spark.remote``): with the other options, before the
    plan is printed, a session opened or anything read or reserved."""
    remote = chosen(values)["remote"]
    if remote is not None:
        check_connect_url(remote, name("remote"))


__all__ = ["SESSION_OPTIONS", "SessionOption", "add_session_arguments",
           "check_session_options", "chosen", "session_flags"]
