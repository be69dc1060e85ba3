"""NON-PRIVATE evaluation of a learned rectangle on labelled data — synthetic or public only.

    spark-submit jobs/evaluate_rectangle.py --config conf/local.yaml

Reads a result JSON and a labelled table and reports EXACT counts: rows, positives, false
negatives (positives outside the rectangle), false positives (negatives inside) and the
error rate, plus the learned rectangle beside the true one when a synthetic-data sidecar
is given, and the privacy the fit spent. Exact counts are not private: this job is for
synthetic or public data only, and it says so loudly on every run and in its output file.

Keys not set in ``evaluate`` fall back to ``fit``'s (input, format, where, version,
timestamp, label, result = fit.output, truth), so one config file serves both jobs.
An ``output`` at the path of the result, the sidecar or the job's own ``--config`` file,
or inside the input's folder, is refused before anything is read (it would overwrite what
the job reads), and so is one that cannot be written (a folder, a path under a file, a
folder without write permission: the sinks' check,
:func:`~dprect.release.files.check_output_path`), so a long scan never ends in a write
that fails.
Membership uses the result's grid semantics (:meth:`FitResult.contains`), as a Spark
column expression — the table is scanned once and never collected.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from _common import inside_rectangle, spark_session
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql import types as T  # noqa: N812

from dprect.app.jobs_support import (
    ConfigError,
    Option,
    check_config_apart,
    check_value,
    config_label,
    exit_now,
    job_main,
    section_values,
    step,
)
from dprect.core.errors import InputDataError
from dprect.core.labels import check_label_value, resolve_positive_label
from dprect.core.request import FitRequest
from dprect.core.result import FitResult
from dprect.engines.spark.checks import integral_type, label_equals, label_kind
from dprect.release.files import check_output_path, write_atomic
from dprect.release.sinks import check_distinct, read_truth

PROG = "evaluate_rectangle"
SECTION = "evaluate"
BANNER = ("NON-PRIVATE EVALUATION: exact counts on labelled data. For synthetic or public "
          "data only — never publish these numbers for data you are protecting.")

OPTIONS: dict[str, Option] = {
    "input": Option(None, "str", "labelled table (default fit.input)"),
    "format": Option(None, "str", "parquet, csv or delta (default fit.format)"),
    "where": Option(None, "str", "Spark SQL filter (default fit.where)"),
    "version": Option(None, "int", "Delta version (default fit.version)"),
    "timestamp": Option(None, "str", "Delta timestamp (default fit.timestamp)"),
    "label": Option(None, "str", "label column (default fit.label)"),
    "positive_label": Option(None, "label", "label of the positive rows (default "
                                            "fit.positive_label, else 1); others are negatives"),
    "result": Option(None, "str", "result JSON to evaluate (default fit.output)"),
    "truth": Option(None, "str", "synthetic sidecar with the true rectangle (default "
                                 "fit.truth)"),
    "output": Option(None, "str", "where to write the evaluation JSON (optional)"),
}
_FROM_FIT = {"input": "input", "format": "format", "where": "where", "version": "version",
             "timestamp": "timestamp", "label": "label", "result": "output",
             "truth": "truth", "positive_label": "positive_label"}


def settings(doc: dict[str, Any]) -> dict[str, Any]:
    """The evaluate section with unset keys taken from ``fit``; required keys checked."""
    cfg = section_values(doc, SECTION, OPTIONS)
    fit = doc.get("fit") or {}
    for key, fit_key in _FROM_FIT.items():
        if cfg[key] is None and fit.get(fit_key) is not None:  # checked as its own key
            cfg[key] = check_value(f"fit.{fit_key}", fit[fit_key], OPTIONS[key])
    for key in ("input", "label", "result"):
        if cfg[key] is None:
            raise ConfigError(f"evaluate.{key} is required (or set fit.{_FROM_FIT[key]})")
    if cfg["positive_label"] is None:
        cfg["positive_label"] = FitRequest.positive_label  # the fit's default
    check_label_value(cfg["positive_label"])
    return cfg


def check_apart(doc: dict[str, Any], cfg: dict[str, Any]) -> None:
    """Refuse, before anything is read, an evaluation output at the path of what the job
    reads (the result JSON, the truth sidecar: it would overwrite them) or inside the
    input's folder (table) — :func:`~dprect.release.sinks.check_distinct`, the fit's own
    check — and one that cannot be written (:func:`~dprect.release.files.check_output_path`,
    the sinks' check: nothing is left behind). A key taken from ``fit`` is named as ``fit``
    spells it."""
    given = doc.get(SECTION) or {}

    def name(key: str) -> str:
        return f"{SECTION}.{key}" if given.get(key) is not None else f"fit.{_FROM_FIT[key]}"

    if cfg["output"] is not None:
        check_distinct([(f"{SECTION}.output", cfg["output"])],
                       [(name(key), cfg[key]) for key in ("input", "result", "truth")])
        check_output_path(cfg["output"], f"{SECTION}.output")


def load_result(path: str) -> FitResult:
    """A result JSON written by the fit job."""
    p = Path(path)
    if not p.is_file():
        raise InputDataError(f"result file {path!r} does not exist")
    try:
        return FitResult.from_json(json.loads(p.read_text()))
    except (ValueError, KeyError, TypeError):  # their text can quote the file: not shown
        raise InputDataError(f"{path!r} is not a dprect result JSON (a fit's record, as "
                             f"fit.output writes it)") from None


def confusion(df: DataFrame, result: FitResult, label: str,
              positive_label: object = FitRequest.positive_label) -> dict[str, int]:
    """Exact confusion counts in one scan (NON-PRIVATE). Rows whose label equals
    ``positive_label`` are positives, every other row (null included) a negative — the
    fit's own rule."""
    missing = [c for c in [*result.features, label] if c not in df.columns]
    if missing:
        raise InputDataError(f"the table has no column(s) {', '.join(map(repr, missing))}")
    kind = label_kind(df.schema[label].dataType, label)
    label_type = df.schema[label].dataType  # compared as the fit compares it
    value = resolve_positive_label(config_label(positive_label), kind, label,
                                   integral=integral_type(label_type),
                                   single=isinstance(label_type, T.FloatType))
    is_positive = F.coalesce(F.expr(label_equals(label, kind, value)), F.lit(False))
    inside = inside_rectangle(result)

    def count(cond: Any) -> Any:
        return F.sum(F.when(cond, 1).otherwise(0))

    row = df.agg(
        F.count(F.lit(1)).alias("rows"),
        count(is_positive).alias("positives"),
        count(~is_positive).alias("negatives"),
        count(is_positive & ~inside).alias("false_negatives"),
        count(~is_positive & inside).alias("false_positives"),
    ).first()
    assert row is not None  # a global aggregate has exactly one row
    return {k: int(row[k] or 0) for k in row.asDict()}


def report(result: FitResult, counts: dict[str, int],
           truth: tuple[list[float], list[float]] | None) -> dict[str, Any]:
    """Print the comparison and return it as a JSON-ready dict."""
    rows, pos, neg = counts["rows"], counts["positives"], counts["negatives"]
    fn, fp = counts["false_negatives"], counts["false_positives"]
    error = (fn + fp) / max(rows, 1)
    width = max(8, *(len(f) for f in result.features))
    print("=" * 88)
    print(BANNER)
    print("=" * 88)
    head = f"{'feature':<{width}}  {'true lower':>12} {'learned lower':>14}  "
    head += f"{'true upper':>12} {'learned upper':>14}"
    print(head)
    for j, f in enumerate(result.features):
        tl = f"{truth[0][j]:.4f}" if truth else "?"
        tu = f"{truth[1][j]:.4f}" if truth else "?"
        print(f"{f:<{width}}  {tl:>12} {result.lower[j]:>14.4f}  {tu:>12} "
              f"{result.upper[j]:>14.4f}")
    g = result.privacy
    if g is None:
        print("privacy spent: none — the result is NOT private")
    else:
        print(f"privacy spent: ({g.epsilon:.6g}, {g.delta:.3g})-DP, {g.neighbouring} "
              f"neighbours [{g.bound}]; method {result.method}")
    if result.seeded:
        print("WARNING: the result comes from a seeded run (not private)")
    print(f"rows {rows:,}: positives {pos:,}, negatives {neg:,}")
    print(f"false negatives (positives outside): {fn:,} ({fn / max(pos, 1):.4%} of positives)")
    print(f"false positives (negatives inside):  {fp:,} ({fp / max(neg, 1):.4%} of negatives)")
    print(f"error (misclassified / rows): {error:.6f}")
    print("=" * 88, flush=True)
    learned = result.to_json()  # infinite bounds become "inf" / "-inf"
    out: dict[str, Any] = {"warning": BANNER, **counts, "error": error,
                           "features": result.features, "learned_lower": learned["lower"],
                           "learned_upper": learned["upper"],
                           "privacy": None if g is None else g.to_json(),
                           "method": result.method, "seeded": result.seeded}
    if truth:
        out["true_lower"], out["true_upper"] = truth
    return out


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    """Entry point; ``spark`` lets tests pass a running session (it is not stopped)."""

    def body(doc: dict[str, Any], config: str | None) -> None:
        from dprect.engines.spark.source import read_source

        cfg = settings(doc)
        check_config_apart(config, [(f"{SECTION}.output", cfg["output"])])
        check_apart(doc, cfg)
        result = load_result(cfg["result"])
        truth = read_truth(cfg["truth"], result.features)
        print(f"[{PROG}] NON-PRIVATE: this job prints exact counts (synthetic or public "
              "data only)", file=sys.stderr, flush=True)
        with spark_session(doc, PROG, spark) as session:
            step(PROG, f"scanning {cfg['input']} (exact, non-private counts)")
            df = read_source(session, cfg["input"], format=cfg["format"], where=cfg["where"],
                             version=cfg["version"], timestamp=cfg["timestamp"],
                             columns=[*result.features, cfg["label"]])
            counts = confusion(df, result, cfg["label"], cfg["positive_label"])
        out = report(result, counts, truth)
        if cfg["output"] is not None:
            write_atomic(cfg["output"], json.dumps(out, indent=2, allow_nan=False) + "\n")
            step(PROG, f"evaluation written to {cfg['output']}")

    return job_main(PROG, "NON-PRIVATE evaluation of a result on labelled (synthetic or "
                          "public) data.", SECTION, OPTIONS, body, argv)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
