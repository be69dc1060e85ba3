"""Where a released result goes: the result JSON (every product), and a fit's Delta results
table and PNG (the bounds table: :mod:`dprect.release.bounds_table`).

Every output is a :class:`Sink` with two steps, in the order of a guarded run
(:mod:`dprect.release.guarded`):

* :meth:`Sink.check` — before anything is read or reserved: the location can be written
  (its path only; for the results table, that it is absent or a Delta table with the
  results schema). Nothing is created.
* :meth:`Sink.prepare` — after the release, from the *recorded* result: render the output
  in memory and return the write (or None when there is nothing to write, e.g. the results
  table already holds this run id's row). :func:`publish` prepares every sink first and
  writes only then, so a rendering failure writes nothing; each write is atomic.

:func:`output_sinks` builds the sinks the command line and the fit job share;
:func:`check_distinct` refuses two outputs (or an output and the input or the ledger) at
one path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from dprect.core.errors import ParameterError
from dprect.core.result import FitResult
from dprect.release.files import check_output_path, write_atomic

#: a prepared write: it writes and returns the line that says where
Write = Callable[[], str]


@dataclass(frozen=True)
class Release:
    """A released result as the sinks publish it, whatever the product: the recorded
    JSON (what the ledger holds, or the run's own without a ledger) and the run. A sink
    reads what it needs from the record (a fit's sinks: :func:`fit_result`)."""

    record: dict[str, Any]
    run_id: str
    started_at: datetime


def fit_result(release: Release) -> FitResult:
    """A fit's result, read from its released record (the fit's sinks only)."""
    return FitResult.from_json(release.record)


class Sink(Protocol):
    """One output of a run (any product)."""

    @property
    def name(self) -> str:
        """How messages name the output (``--output``, ``fit.plot``)."""
        ...

    @property
    def path(self) -> str:
        """Its location."""
        ...

    def check(self) -> None:
        """Refuse a location that cannot be written (before anything is reserved)."""
        ...

    def prepare(self, release: Release) -> Write | None:
        """Render the output in memory; the returned call writes it."""
        ...


@dataclass(frozen=True)
class FileSink:
    """An output file, checked by its path and written atomically."""

    name: str
    path: str

    def check(self) -> None:
        check_output_path(self.path, self.name)

    def _writer(self, data: bytes | str, what: str) -> Write:
        def write() -> str:
            write_atomic(self.path, data)
            return f"{what} written to {self.path}"

        return write


@dataclass(frozen=True)
class JsonSink(FileSink):
    """The result JSON, exactly as recorded (:meth:`FitResult.to_json`)."""

    def prepare(self, release: Release) -> Write:
        return self._writer(json.dumps(release.record, indent=2, allow_nan=False) + "\n",
                            "result")


@dataclass(frozen=True)
class PngSink(FileSink):
    """A PNG of the rectangle's 2-D projections (:mod:`dprect.release.plotting`), with the
    true rectangle when ``truth`` names a synthetic-data sidecar for these features."""

    title: str = ""
    truth: str | None = None

    def check(self) -> None:
        from dprect.core.extras import require

        require("plot", "the rectangle plot")
        super().check()

    def prepare(self, release: Release) -> Write:
        from dprect.release.plotting import render_png

        result = fit_result(release)
        truth = read_truth(self.truth, result.features)
        return self._writer(render_png(result,
                                       true_lower=truth[0] if truth else None,
                                       true_upper=truth[1] if truth else None,
                                       title=self.title), "plot")


@dataclass(frozen=True)
class ResultsTableSink:
    """One row per run id in a Delta results table (:mod:`dprect.release.results_table`):
    re-publishing a released run does not add a second row. Written natively by the
    running SparkSession when it has Delta (the Spark jobs with the delta-spark jars), else
    by delta-rs (:func:`dprect.release.results_table.delta_session`)."""

    name: str
    path: str
    dataset: str
    extra_parameters: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        from dprect.release.results_table import check_results_table

        check_output_path(self.path, self.name, folder=True)
        check_results_table(self.path)

    def prepare(self, release: Release) -> Write | None:
        from dprect.release.results_table import append_result, has_run, result_row

        if has_run(self.path, release.run_id):
            return None
        row = result_row(fit_result(release), run_id=release.run_id, dataset=self.dataset,
                         started_at=release.started_at,
                         extra_parameters=self.extra_parameters)

        def write() -> str:
            version = append_result(self.path, row)
            return f"row appended to results table {self.path} (Delta version {version})"

        return write


def check_distinct(named: Sequence[tuple[str, str | None]]) -> None:
    """Refuse two of the named locations (outputs, the input, the ledger) at one path;
    the message names the first pair (``--output and --ledger are the same path``)."""
    seen: dict[str, str] = {}
    for name, path in named:
        if path is None:
            continue
        key = str(Path(path).resolve())
        if key in seen:
            raise ParameterError(f"{seen[key]} and {name} are the same path")
        seen[key] = name


def publish(sinks: Sequence[Sink], release: Release) -> list[str]:
    """Render every output, then write them in order; returns the lines saying where."""
    writes = [w for w in (s.prepare(release) for s in sinks) if w is not None]
    return [write() for write in writes]


def output_sinks(name: Callable[[str], str], *, output: str | None, plot: str | None = None,
                 results_table: str | None = None, truth: str | None = None,
                 dataset: str | None = None, input_path: str = "",
                 input_settings: dict[str, Any] | None = None) -> list[Sink]:
    """The sinks a fit was asked for: ``output`` (JSON), ``plot`` (PNG, titled by the
    dataset or the input's name), ``results_table`` (one row, under ``dataset`` or the
    input path, with the public ``input_settings``). ``name`` spells a key as the caller
    does (``--results-table``, ``fit.results_table``)."""
    sinks: list[Sink] = []
    if output is not None:
        sinks.append(JsonSink(name("output"), output))
    if plot is not None:
        sinks.append(PngSink(name("plot"), plot, title=dataset or Path(input_path).name,
                             truth=truth))
    if results_table is not None:
        sinks.append(ResultsTableSink(name("results_table"), results_table,
                                      dataset=dataset or input_path,
                                      extra_parameters=dict(input_settings or {})))
    return sinks


def read_truth(path: str | os.PathLike[str] | None, features: Sequence[str]
               ) -> tuple[list[float], list[float]] | None:
    """The true rectangle from a synthetic-data sidecar (public), in ``features`` order;
    None when there is no sidecar or it does not describe these features."""
    if path is None or not Path(path).is_file():
        return None
    try:
        truth = json.loads(Path(path).read_text())
        index = {name: j for j, name in enumerate(truth["features"])}
        lower = [float(truth["true_lower"][index[f]]) for f in features]
        upper = [float(truth["true_upper"][index[f]]) for f in features]
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    return lower, upper


__all__ = ["FileSink", "JsonSink", "PngSink", "Release", "ResultsTableSink", "Sink", "Write",
           "check_distinct", "fit_result", "output_sinks", "publish", "read_truth"]
