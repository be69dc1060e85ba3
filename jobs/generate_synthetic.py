"""Generate PUBLIC synthetic labelled data with a hidden true rectangle, on Spark.

    spark-submit jobs/generate_synthetic.py --config conf/local.yaml [--set rows=100000]

Distributed: rows come from ``spark.range`` and every value is a column expression of the
row id and the seed (a 64-bit hash mapped to [0, 1)), so the data is the same for the same
seed whatever the cluster or the number of partitions. Row i is positive with probability
``positive_rate``; a positive is uniform inside the true rectangle, a negative is uniform
on the span [lower, upper] of every feature except one random axis, where it lies outside
the rectangle — so the labels are exactly "inside the true rectangle" (realizable data).

Output: ``output`` as Parquet partitioned by ``part`` (contiguous id ranges, one file per
part), or a Delta table (the same files, committed with delta-rs: no Delta jars needed).
The data appears at ``output`` only when complete (written beside it, then renamed). The
sidecar JSON ``truth`` (default ``<output>.truth.json``) records the true rectangle, the
span and the counts; this is synthetic data, so it may say how many positives it holds.
A sidecar at ``output``'s path or inside its folder, and an ``output`` or sidecar at the
job's own ``--config`` file (or a data folder holding it), are refused before Spark
starts.
"""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

from _common import spark_session
from _truth import true_rectangle
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from dprect.app.jobs_support import (
    ConfigError,
    Option,
    check_config_apart,
    exit_now,
    job_main,
    section_values,
    step,
)
from dprect.release.files import check_not_special, write_atomic
from dprect.release.sinks import check_distinct

PROG = "generate_synthetic"
SECTION = "generate"
LABEL = "label"
PART = "part"

OPTIONS: dict[str, Option] = {
    "output": Option(None, "str", "where to write the data (required)"),
    "format": Option("parquet", "str", "parquet or delta"),
    "rows": Option(1_000_000, "int", "number of rows n"),
    "features": Option(4, "int", "number of features d (named f0, f1, ...)"),
    "positive_rate": Option(0.3, "float", "probability that a row is positive"),
    "seed": Option(1, "int", "seed of the (public) synthetic data"),
    "lower": Option(-100.0, "float", "lower end of every feature's span"),
    "upper": Option(100.0, "float", "upper end of every feature's span"),
    "true_lower": Option(None, "float_list", "true rectangle's lower bounds "
                                             "(default: drawn from the seed)"),
    "true_upper": Option(None, "float_list", "true rectangle's upper bounds"),
    "parts": Option(8, "int", "number of partitions / files (the 'part' column)"),
    "truth": Option(None, "str", "sidecar JSON path (default <output>.truth.json)"),
    "overwrite": Option(True, "bool", "replace existing data at output"),
}


def feature_names(dims: int) -> list[str]:
    """Column names of the generated features."""
    return [f"f{j}" for j in range(dims)]


def _unit(seed: int, tag: int) -> Column:
    """A uniform double in [0, 1) from (seed, tag, id): 53 bits of xxhash64."""
    h = F.xxhash64(F.lit(seed), F.lit(tag), F.col("id"))
    return h.bitwiseAND(F.lit((1 << 53) - 1)).cast("double") / F.lit(float(1 << 53))


def synthetic_frame(spark: SparkSession, *, rows: int, dims: int, positive_rate: float,
                    seed: int, lower: float, upper: float, true_lower: list[float],
                    true_upper: list[float], parts: int) -> DataFrame:
    """The synthetic table: columns f0…f{d−1} (double), ``label`` (int 0/1), ``part``."""
    positive = _unit(seed, -1) < F.lit(positive_rate)
    bad_axis = F.floor(_unit(seed, -2) * F.lit(dims))
    cols = []
    for j, name in enumerate(feature_names(dims)):
        u = _unit(seed, j)
        tl, tu = true_lower[j], true_upper[j]
        inside = F.lit(tl) + u * F.lit(tu - tl)
        anywhere = F.lit(lower) + u * F.lit(upper - lower)
        left, right = tl - lower, upper - tu
        v = u * F.lit(left + right)  # position in [lower, tl) ∪ (tu, upper]
        outside = F.when(v < F.lit(left), F.lit(lower) + v).otherwise(F.lit(upper) - (v - left))
        value = (F.when(positive, inside)
                 .when(bad_axis == F.lit(j), outside)
                 .otherwise(anywhere))
        cols.append(value.alias(name))
    part = F.floor(F.col("id") * F.lit(parts) / F.lit(rows)).cast("int").alias(PART)
    return (spark.range(0, rows, numPartitions=parts)
            .select(*cols, positive.cast("int").alias(LABEL), part))


def truth_path(cfg: dict[str, Any]) -> Path:
    """Where the sidecar goes: ``truth``, by default ``<output>.truth.json``."""
    return Path(cfg["truth"] or f"{cfg['output']}.truth.json")


def _check(cfg: dict[str, Any]) -> None:
    if not cfg["output"]:
        raise ConfigError("generate.output is required (where to write the data)")
    # the sidecar apart from the data: at its path, or inside its folder (read as data)
    check_distinct([("generate.output", cfg["output"]),
                    ("generate.truth", str(truth_path(cfg)))])
    # never a device or a pipe: replacing existing data would unlink /dev/null itself
    check_not_special(cfg["output"], "generate.output", folder=True)
    check_not_special(truth_path(cfg), "generate.truth")
    if cfg["format"] not in ("parquet", "delta"):
        raise ConfigError(f"generate.format must be parquet or delta, got {cfg['format']!r}")
    if cfg["rows"] < 1 or cfg["features"] < 1 or cfg["parts"] < 1:
        raise ConfigError("generate.rows, generate.features and generate.parts must be >= 1")
    if cfg["parts"] > cfg["rows"]:
        raise ConfigError("generate.parts must not exceed generate.rows")
    if not 0.0 < cfg["positive_rate"] < 1.0:
        raise ConfigError(f"generate.positive_rate must be in (0, 1), got {cfg['positive_rate']}")
    if not cfg["lower"] < cfg["upper"]:
        raise ConfigError("generate.lower must be < generate.upper")
    given = [cfg["true_lower"] is not None, cfg["true_upper"] is not None]
    if any(given) and not all(given):
        raise ConfigError("give both generate.true_lower and generate.true_upper, or neither")
    if all(given):
        d = cfg["features"]
        if len(cfg["true_lower"]) != d or len(cfg["true_upper"]) != d:
            raise ConfigError(f"generate.true_lower/true_upper need {d} values each")
        for j, (lo, hi) in enumerate(zip(cfg["true_lower"], cfg["true_upper"], strict=True)):
            if not cfg["lower"] < lo <= hi < cfg["upper"]:
                raise ConfigError(f"true rectangle of f{j} must lie strictly inside "
                                  f"({cfg['lower']}, {cfg['upper']}), got [{lo}, {hi}]")


def _commit_delta(path: Path) -> None:
    """Turn the Parquet folder at ``path`` into a Delta table in place (delta-rs)."""
    import pyarrow as pa
    from deltalake import Schema, convert_to_deltalake

    for junk in [*path.rglob("_SUCCESS"), *path.rglob(".*.crc")]:
        junk.unlink()
    convert_to_deltalake(str(path), partition_by=Schema.from_arrow(pa.schema([(PART, pa.int32())])),
                         partition_strategy="hive")


def generate(cfg: dict[str, Any], spark: SparkSession) -> dict[str, Any]:
    """Write the data and the sidecar; return the sidecar's content."""
    _check(cfg)
    dims = cfg["features"]
    if cfg["true_lower"] is None:
        true_lower, true_upper = true_rectangle(dims, cfg["lower"], cfg["upper"], cfg["seed"])
    else:
        true_lower, true_upper = cfg["true_lower"], cfg["true_upper"]
    out = Path(cfg["output"])
    sidecar = truth_path(cfg)
    if out.exists() and not cfg["overwrite"]:
        raise ConfigError(f"{out} exists and generate.overwrite is false")
    tmp = out.with_name(f".{out.name}.tmp-{uuid.uuid4().hex[:8]}")
    df = synthetic_frame(spark, rows=cfg["rows"], dims=dims,
                         positive_rate=cfg["positive_rate"], seed=cfg["seed"],
                         lower=cfg["lower"], upper=cfg["upper"], true_lower=true_lower,
                         true_upper=true_upper, parts=cfg["parts"])
    step(PROG, f"writing {cfg['rows']:,} rows x {dims} features as {cfg['format']} "
               f"({cfg['parts']} parts) to {out}")
    try:
        df.write.mode("error").partitionBy(PART).parquet(str(tmp))
        positives = spark.read.parquet(str(tmp)).where(F.col(LABEL) == 1).count()
        if cfg["format"] == "delta":
            step(PROG, "committing the files as a Delta table (delta-rs)")
            _commit_delta(tmp)
        if out.exists():
            shutil.rmtree(out) if out.is_dir() else out.unlink()
        tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    names = feature_names(dims)
    truth = {
        "description": "PUBLIC synthetic data generated by dprect (labels = inside the "
                       "true rectangle); counts below are of synthetic rows",
        "path": str(out),
        "format": cfg["format"],
        "rows": cfg["rows"],
        "positives": positives,
        "features": names,
        "label": LABEL,
        "partition_column": PART,
        "positive_rate": cfg["positive_rate"],
        "seed": cfg["seed"],
        "span_lower": [cfg["lower"]] * dims,
        "span_upper": [cfg["upper"]] * dims,
        "true_lower": list(true_lower),
        "true_upper": list(true_upper),
    }
    write_atomic(sidecar, json.dumps(truth, indent=2) + "\n")
    step(PROG, f"done: {positives:,} positives of {cfg['rows']:,} rows; "
               f"truth written to {sidecar}")
    return truth


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    """Entry point; ``spark`` lets tests pass a running session (it is not stopped)."""

    def body(doc: dict[str, Any], config: str | None) -> None:
        cfg = section_values(doc, SECTION, OPTIONS)
        _check(cfg)
        check_config_apart(config, [("generate.output", cfg["output"]),
                                    ("generate.truth", str(truth_path(cfg)))])
        with spark_session(doc, PROG, spark) as session:
            generate(cfg, session)

    return job_main(PROG, "Generate public synthetic data with a hidden rectangle.",
                    SECTION, OPTIONS, body, argv)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
