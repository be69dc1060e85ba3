"""The Spark path of ``dprect fit --engine spark`` (kept out of the pyspark-free core)."""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from typing import Any

from pyspark import SparkContext
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from dprect.app.cli import positive_label_arg
from dprect.core.domains import Domain
from dprect.core.errors import DprectError, ParameterError
from dprect.core.planner import Plan
from dprect.engines.spark.fit import prepare_fit
from dprect.engines.spark.session import local_session
from dprect.engines.spark.source import read_source
from dprect.release.guarded import LedgerSettings, Outcome, guarded_release


def spark_fit(args: argparse.Namespace, domains: list[Domain], the_plan: Plan,
              settings: LedgerSettings | None, budget: dict[str, Any],
              publish: Callable[[dict[str, Any]], None]) -> Outcome:
    """``dprect fit --engine spark``: start (or reuse) a session, read the input and check
    its schema, then run the guarded release; the session is stopped if this call started
    it. The caller has checked the parameters and the output paths already."""
    if args.delta_version is not None and args.delta_timestamp is not None:
        raise ParameterError("give --delta-version or --delta-timestamp, not both")
    if args.delta_version is not None and args.delta_version < 0:
        raise ParameterError(f"--delta-version must be >= 0, got {args.delta_version}")

    # a session this process already runs (tests, notebooks) is used, and left running
    owned = (SparkSession.getActiveSession() is None
             and SparkContext._active_spark_context is None)
    try:
        spark = local_session(args.master, app_name="dprect-fit")
    except PySparkException as exc:
        raise DprectError(f"cannot start Spark (master {args.master or 'local[2]'}): "
                          f"{str(exc).strip().splitlines()[0]}") from None
    try:
        df = read_source(spark, args.input, format=args.format, where=args.where,
                         version=args.delta_version, timestamp=args.delta_timestamp)
        prepared = prepare_fit(df, features=args.features, label=args.label,
                               domains=domains, spark_plan=args.plan,
                               invalid_rows=args.invalid_rows,
                               positive_label=positive_label_arg(args), **budget)

        def compute():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the seeded warning is printed instead
                return prepared.run(seed=args.seed)

        with prepared:
            return guarded_release(settings, the_plan, args.features, compute, publish)
    finally:
        if owned:
            spark.stop()
