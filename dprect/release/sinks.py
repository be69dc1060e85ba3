"""Where a released result goes: the result JSON (every product), and a fit's Delta results
table and PNG (the grouped aggregates' table: :mod:`dprect.release.aggregate_table`).

Every output is a :class:`Sink` with two steps, in the order of a guarded run
(:mod:`dprect.release.guarded`):

* :meth:`Sink.check` — before anything is read or reserved: the location can be written
  (its path only; for the results table, that it is absent or a Delta table with the
  results schema). Nothing is created.
* :meth:`Sink.check` proves it (:func:`dprect.release.files.check_output_path`: the
  missing folders and a temporary file are made and removed again), so an output that
  cannot be delivered is refused before the charge.
* :meth:`Sink.prepare` — after the release, from the *recorded* result: render the output
  in memory and return its :class:`Write` (or None when there is nothing to write, e.g.
  the results table already holds this run id's row). Rendering never fails on released
  values (a plot draws a value it cannot place as out of view, and says so).

**One read of the rows.** A grouped aggregate's outputs that read its table rows — the
plot, the tables and the run's summary — are fed by one read of them
(:attr:`Release.rows`, :mod:`dprect.release.row_pass`): each adds its reader when
prepared (a table opens its temporary file first: :func:`file_write`'s ``feed``), and
:func:`publish` runs the read before anything is staged; a failed read removes what the
readers wrote, as a failed stage does.

**All or nothing.** :func:`publish` prepares every sink first, then in three steps: (1)
*stage* every file output — its bytes written, synced, to a temporary file beside it;
(2) *commit* the outputs that cannot be staged (a Delta table: one commit is its own
all-or-nothing step; a run has at most one); (3) rename every staged file into place. A
failure in (1) or (2) removes every staged file, so the run leaves no output written and
another missing (an interrupt — SIGINT, or SIGTERM: :mod:`dprect.app.failures` — removes
them too, wherever it lands, before it ends the run), and such a failure also removes the
folders the run made on the way to its outputs (those missing before it published, now
empty: nothing else); only a failure of a rename in (3)
— one rename in a folder already proven writable — can leave a part published, and the
error says so. Every output is rendered from the recorded result, so re-running the same
run id under a ledger (a replay: :mod:`dprect.app.spine`) publishes them all again,
identically, without spending; the Delta results table adds no second row for a run id.

:func:`output_sinks` builds the sinks the command line and the fit job share;
:func:`check_distinct` refuses two outputs (or an output and the input or the ledger) at
one path, and an output inside or around the input's folder (or the folder table its file
belongs to), the ledger's folder or another output; a file a sink reads — a plot's truth
sidecar (:func:`sink_inputs`) — is one of the inputs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, BinaryIO, Protocol
from urllib.parse import unquote, urlparse

from dprect.core.errors import ParameterError
from dprect.core.result import FitResult
from dprect.release.files import (
    Data,
    check_output_path,
    close_staged,
    commit_staged,
    discard_staged,
    failure_reason,
    open_staged,
    removed_if_left_empty,
    stage_file,
)
from dprect.release.record_text import record_chunks
from dprect.release.row_pass import RowPass


def _nothing() -> None:
    """No step (an output that cannot be staged, or has nothing staged to remove)."""


@dataclass
class Write:
    """A prepared output in :func:`publish`'s steps: ``begin`` readies what it reads of
    the record's rows in their one read (``rows``: :class:`~dprect.release.row_pass.RowPass`,
    None when it reads none), ``stage`` writes it where no reader looks (None: it cannot
    be staged — a Delta commit — so ``commit`` does all of it), ``commit`` makes it
    visible and returns the line that says where, ``discard`` removes what ``begin`` and
    ``stage`` wrote. Calling it does all of it at once."""

    commit: Callable[[], str]
    stage: Callable[[], None] | None = None
    discard: Callable[[], None] = _nothing
    begin: Callable[[], None] = _nothing
    rows: RowPass | None = None

    def __call__(self) -> str:
        try:
            self.begin()
            if self.rows is not None:
                self.rows.run()
            if self.stage is not None:
                self.stage()
            return self.commit()
        except BaseException:
            self.discard()
            raise


class Feed(Protocol):
    """What a file written from the record's one read of its rows writes with
    (:func:`file_write`'s ``feed``): each block of table rows, then ``close`` (the file's
    end; the file itself is closed by its owner)."""

    def __call__(self, rows: Sequence[dict[str, Any]]) -> None: ...

    def close(self) -> None: ...


def file_write(path: str, data: Data | None, line: str | Callable[[], str],
               rows: RowPass | None = None, feed: Callable[[BinaryIO], Feed] | None = None
               ) -> Write:
    """The :class:`Write` of a file output: staged to a temporary file beside ``path``
    (its bytes, or written there by ``data`` a piece at a time), committed by renaming it
    into place (:mod:`dprect.release.files`); ``line`` (or what it returns once staged)
    says where. ``rows``: the record's one read of its rows, run before the file is
    staged; with ``feed`` the file is written by that read instead of ``data``: ``begin``
    opens the temporary file and adds ``feed(file)`` to ``rows``, ``stage`` ends it."""
    opened: list[tuple[str, BinaryIO]] = []
    feeds: list[Feed] = []
    staged: list[str] = []

    def begin() -> None:
        if feed is not None and rows is not None:
            opened.append(open_staged(path))
            feeds.append(feed(opened[-1][1]))  # a failure: discard removes the file
            rows.add(feeds[-1])

    def stage() -> None:
        if not opened:
            assert data is not None
            staged.append(stage_file(path, data))
            return
        feeds.pop().close()  # a failure: discard removes the file
        tmp, fh = opened.pop()
        close_staged(tmp, fh)  # synced, or removed if that fails
        staged.append(tmp)

    def commit() -> str:
        commit_staged(staged[-1], path)  # still staged (discarded) if the rename fails
        staged.pop()
        return line if isinstance(line, str) else line()

    def discard() -> None:
        while opened:
            close_staged(*opened.pop(), ok=False)
        while staged:
            discard_staged(staged.pop())

    return Write(commit, stage, discard, begin, rows)


@dataclass(frozen=True)
class Release:
    """A released result as the sinks publish it, whatever the product: the recorded
    JSON (what the ledger holds, or the run's own without a ledger) and the run. A sink
    reads what it needs from the record (a fit's sinks: :func:`fit_result`); a grouped
    aggregate's sinks read its rows from :attr:`rows`, their one read."""

    record: dict[str, Any]
    run_id: str
    started_at: datetime

    @cached_property
    def rows(self) -> RowPass:
        """The one read of the record's table rows every reader of this release shares
        (:mod:`dprect.release.row_pass`)."""
        return RowPass(self.record)


#: where a fit's record names what its rectangle is around (the label column and the
#: positive label, or for a class record the label column; public settings)
LABEL = "label"


def label_entry(column: str | None, positive: object = None) -> dict[str, Any]:
    """A record's ``label`` entry: the label ``column`` and, for one rectangle, the
    ``positive`` label as a result names it (:func:`dprect.core.labels.label_key`)."""
    from dprect.core.labels import label_key

    entry: dict[str, Any] = {"column": column}
    if positive is not None:
        entry["positive"] = label_key(positive)
    return entry


def around(record: dict[str, Any], positive: str | None = None) -> str | None:
    """What a rectangle is around, from its record's ``label`` entry: ``label = 1`` (the
    column and the positive label, or ``positive`` for one class of a class record);
    None for a record made before the entry existed."""
    entry = record.get(LABEL)
    if not isinstance(entry, dict) or entry.get("column") is None:
        return None
    value = entry.get("positive") if positive is None else positive
    return f"{entry['column']} = {value}" if value is not None else str(entry["column"])


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

    def _writer(self, data: Data, what: str) -> Write:
        return file_write(self.path, data, f"{what} written to {self.path}")


@dataclass(frozen=True)
class JsonSink(FileSink):
    """The result JSON, exactly as recorded (:meth:`FitResult.to_json`), laid out by
    :func:`~dprect.release.record_text.record_text` (a large record's long lists one
    compact item per line; spooled rows streamed to the file a block at a time:
    :func:`~dprect.release.record_text.record_chunks`)."""

    def prepare(self, release: Release) -> Write:
        record = release.record

        def write(fh: BinaryIO) -> None:
            for piece in record_chunks(record):
                fh.write(piece.encode())

        return self._writer(write, "result")


def check_png_path(path: str, what: str) -> None:
    """Refuse a plot path whose name does not end in ``.png`` (any case), before anything
    is read or reserved: every plotter writes PNG bytes only (matplotlib's Agg into
    memory), and a ``.jpg`` or ``.pdf`` holding them would be a file no reader of its
    suffix opens. The message is the option and the path."""
    if not str(path).lower().endswith(".png"):
        raise ParameterError(f"{what} writes a PNG: give a path ending in .png, not "
                             f"{str(path)!r}")


@dataclass(frozen=True)
class PngSink(FileSink):
    """A PNG of the rectangle's 2-D projections (:mod:`dprect.release.plotting`), with the
    true rectangle when ``truth`` names a synthetic-data sidecar for these features."""

    title: str = ""
    truth: str | None = None
    truth_name: str = "truth"  # how the front end spells the sidecar's option
    features: tuple[str, ...] = ()  # the run's features: the sidecar must name each

    def check(self) -> None:
        from dprect.core.extras import require

        require("plot", "the rectangle plot")
        check_png_path(self.path, self.name)
        super().check()
        if self.truth is not None:
            check_truth(self.truth, self.truth_name, self.features)

    def prepare(self, release: Release) -> Write:
        from dprect.release.plotting import edge_note, open_sides, render_png

        result = fit_result(release)
        truth = read_truth(self.truth, result.features)
        png = render_png(result, true_lower=truth[0] if truth else None,
                         true_upper=truth[1] if truth else None, title=self.title,
                         around=around(release.record))
        return file_write(self.path, png, f"plot written to {self.path}"
                          + edge_note(open_sides(result)))


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

        return Write(write)


#: the marks of a folder table a file or folder belongs to: a Delta table's log, the
#: marker Spark leaves in a Parquet (or CSV) folder it wrote
_TABLE_MARKS = (("_delta_log", True), ("_SUCCESS", False))
_GLOB = "*?[{"


def _local(path: str) -> Path | None:
    """``path`` as a local path made absolute, its symlinks resolved where they exist
    (a ``file:`` URL read as its path); None for a path with another scheme (``s3a://``:
    not on this machine, so nothing local lies inside it)."""
    parsed = urlparse(path)
    if parsed.scheme == "file":
        return _resolved(unquote(parsed.path))
    if len(parsed.scheme) > 1:
        return None
    return _resolved(path)


def _resolved(path: str) -> Path:
    """``path`` absolute, its symlinks resolved; where they cannot be (a loop, a folder
    that cannot be looked into), absolute as written."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))


def _is_pattern(path: Path) -> bool:
    """Whether Spark reads ``path`` as a glob pattern that does not exist as written."""
    try:
        return any(ch in str(path) for ch in _GLOB) and not path.exists()
    except OSError:
        return True


def _read_extent(path: Path) -> Path:
    """What reading ``path`` depends on: the folder table it belongs to — its nearest
    folder (itself included) holding a Delta log or Spark's ``_SUCCESS`` — else the path
    itself; for a glob pattern (Spark's: a path that does not exist as written), the
    folder before its first pattern part."""
    if _is_pattern(path):
        plain = list(path.parts)
        cut = next(i for i, part in enumerate(plain) if any(ch in part for ch in _GLOB))
        path = Path(*plain[:cut])
    return next((folder for folder in [path, *path.parents] if _table_at(folder)), path)


def _table_at(folder: Path) -> bool:
    """Whether ``folder`` holds a table mark (one that cannot be looked into: no)."""
    try:
        return any((folder / mark).is_dir() if is_dir else (folder / mark).exists()
                   for mark, is_dir in _TABLE_MARKS)
    except OSError:
        return False


@dataclass(frozen=True)
class _Place:
    """One named location of a run (an output, an input, the ledger), resolved."""

    name: str
    given: str
    output: bool
    path: Path | None  # None: not on this machine
    extent: Path | None  # what lies under it belongs to it (an input's folder table)


def _nesting(output: _Place, other: _Place) -> str | None:
    """The refusal when ``output`` lies inside ``other``'s extent or contains it, else
    None (paths not on this machine never nest; one path is the same-path refusal's)."""
    if output.path is None or other.path is None or other.extent is None \
            or output.path == other.path:
        return None
    if output.path != other.extent and output.path.is_relative_to(other.extent):
        kind = "folder table" if _table_at(other.extent) else "folder"
        where = (f"{other.name} {other.given!r}" if other.extent == other.path else
                 f"the {kind} {str(other.extent)!r} of {other.name} {other.given!r}")
        return f"{output.name} {output.given!r} lies inside {where}"
    if other.extent.is_relative_to(output.path):
        return f"{output.name} {output.given!r} contains {other.name} {other.given!r}"
    return None


#: what an empty path's refusal asks for, by the role of the path
_GIVE = {"output": "give the path to write to", "input": "give the table's file or folder",
        "ledger": "give the ledger's folder (made once by `dprect budget init`)"}


def check_distinct(outputs: Sequence[tuple[str, str]],
                   inputs: Sequence[tuple[str, str | None]] = (),
                   ledger: tuple[str, str | None] | None = None) -> None:
    """Refuse two of the named locations (outputs, the inputs, the ledger) at one path —
    the message names the first pair (``--output and --ledger are the same path``) — and
    an output that lies inside, or contains, the ledger's folder, another output, or an
    input's extent: a folder input, or the folder table (a Delta table, a Parquet folder
    Spark wrote) a file input belongs to; a glob's folder. An empty (or blank) path is
    refused first, naming its option: it would be the current folder. Paths are compared
    made absolute, symlinks resolved where they exist; an output file beside a single
    input file is fine. Public: paths and the folders' table marks only, never a row."""
    named = [*((name, path, "output") for name, path in outputs),
             *((name, path, "input") for name, path in inputs),
             *([] if ledger is None else [(*ledger, "ledger")])]
    for name, path, role in named:
        if path is not None and not os.fspath(path).strip():
            # an empty path is the current folder to the operating system: read as a
            # Parquet folder, or as the folder every other output lies inside
            raise ParameterError(f"{name} is an empty path; {_GIVE[role]}")
    seen: dict[str, str] = {}
    places = []
    for name, path, role in named:
        if path is None:
            continue
        key = str(_resolved(path))
        if key in seen:
            raise ParameterError(f"{seen[key]} and {name} are the same path")
        seen[key] = name
        local = _local(os.fspath(path))
        extent = _read_extent(local) if local is not None and role == "input" else local
        places.append(_Place(name, os.fspath(path), role == "output", local, extent))
    for output in places:
        for other in places:
            if output.output and other is not output \
                    and (said := _nesting(output, other)) is not None:
                raise ParameterError(f"{said}: outputs must lie apart from the input's "
                                     "folder, the ledger and each other")


def check_public_read(name: str, path: str, input_name: str, input_path: str | None) -> None:
    """Refuse a file read as PUBLIC (a groups file: its lines are released as group names,
    and a refusal of them quotes a line) that is the input, the same file under another
    name (a hard link), or lies inside the input's extent — a folder input, or the folder
    table its file belongs to (a Delta table's log, whose commit files hold each column's
    minima and maxima; a data file of a CSV or Parquet folder) — BEFORE the file is read:
    its lines would be rows of the data. Public: paths and the folders' table marks only,
    never a byte of either file."""
    if input_path is None or not os.fspath(input_path).strip():
        return
    read, data = _local(os.fspath(path)), _local(os.fspath(input_path))
    if read is None or data is None:
        return
    if read == data:
        raise ParameterError(f"{input_name} and {name} are the same path")
    if _same_file(read, data):
        raise ParameterError(f"{input_name} and {name} are the same file (a hard link)")
    extent = _read_extent(data)
    if read.is_relative_to(extent):
        kind = "folder table" if _table_at(extent) else "folder"
        where = (f"{input_name} {input_path!r}" if extent == data else
                 f"the {kind} {str(extent)!r} of {input_name} {input_path!r}")
        raise ParameterError(f"{name} {path!r} lies inside {where}: a file of public values "
                             "must lie apart from the data")


def _same_file(a: Path, b: Path) -> bool:
    """Whether two existing paths are one file (a hard link); False when either is not
    there."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


class NotPublishedError(ParameterError):
    """The outputs of a released run could not all be written (:func:`publish`). Its
    message says whether none or some were written; under a ledger, re-running the same
    run id publishes them all (a replay) without spending again."""


def publish(sinks: Sequence[Sink], release: Release,
            read: Callable[[], None] = _nothing) -> list[str]:
    """Render every output, then stage, commit and rename them (the module docstring:
    all or nothing); returns the lines saying where, in the sinks' order. The record's
    rows are read once for every output (:attr:`Release.rows`, with what the caller added
    to it), then ``read`` is called (the caller's summary of what was read) before
    anything is staged. A failed write raises :class:`NotPublishedError`; it, or an
    interrupt, also removes the folders the outputs' paths lacked before (made to write
    them) that it leaves empty (:func:`~dprect.release.files.removed_if_left_empty`)."""
    with removed_if_left_empty(s.path for s in sinks):
        return _publish(sinks, release, read)


def _publish(sinks: Sequence[Sink], release: Release, read: Callable[[], None]) -> list[str]:
    """:func:`publish`'s steps."""
    writes = [w for w in (s.prepare(release) for s in sinks) if w is not None]
    staged = [w for w in writes if w.stage is not None]
    again = (f"the result is released: with a ledger, re-running run id {release.run_id} "
             "publishes every output again without spending")
    lines: dict[int, str] = {}

    def failed(exc: Exception) -> NotPublishedError:
        for w in writes:
            w.discard()
        done = (f"{len(lines)} of {len(writes)} outputs were written and the others not"
                if lines else "no output was written")
        return NotPublishedError(f"{done} ({failure_reason(exc)}); {again}")

    try:
        for w in writes:
            w.begin()
        release.rows.run()
    except Exception as exc:
        raise failed(exc) from None
    except BaseException:  # an interrupt (SIGINT, SIGTERM): no staged file is left
        for w in writes:
            w.discard()
        raise
    read()
    try:
        for w in staged:
            assert w.stage is not None
            w.stage()
        for w in writes:
            if w.stage is None:  # a Delta commit: its own all-or-nothing step
                lines[id(w)] = w.commit()
        for w in staged:
            lines[id(w)] = w.commit()
    except Exception as exc:
        raise failed(exc) from None
    except BaseException:
        for w in writes:
            w.discard()
        raise
    return [lines[id(w)] for w in writes]


def output_sinks(name: Callable[[str], str], *, output: str | None, plot: str | None = None,
                 results_table: str | None = None, truth: str | None = None,
                 dataset: str | None = None, input_path: str = "",
                 input_settings: dict[str, Any] | None = None,
                 features: Sequence[str] = ()) -> list[Sink]:
    """The sinks a fit was asked for: ``output`` (JSON), ``plot`` (PNG, titled by the
    dataset or the input's name; its ``truth`` sidecar must name each of the run's
    ``features``), ``results_table`` (one row, under ``dataset`` or the input path, with
    the public ``input_settings``). ``name`` spells a key as the caller does
    (``--results-table``, ``fit.results_table``)."""
    sinks: list[Sink] = []
    if truth is not None and plot is None:
        raise ParameterError(f"{name('truth')} is drawn in the plot: give {name('plot')} "
                             f"too, or leave {name('truth')} out")
    if output is not None:
        sinks.append(JsonSink(name("output"), output))
    if plot is not None:
        sinks.append(PngSink(name("plot"), plot, title=dataset or Path(input_path).name,
                             truth=truth, truth_name=name("truth"),
                             features=tuple(features)))
    if results_table is not None:
        sinks.append(ResultsTableSink(name("results_table"), results_table,
                                      dataset=dataset or input_path,
                                      extra_parameters=dict(input_settings or {})))
    return sinks


def sink_inputs(sinks: Sequence[Sink]) -> list[tuple[str, str | None]]:
    """The named files the sinks themselves read, for :func:`check_distinct` beside the
    run's inputs: a plot's synthetic-data sidecar (``truth``), which an output at its
    path would overwrite."""
    return [(s.truth_name, s.truth) for s in sinks
            if isinstance(s, PngSink) and s.truth is not None]


def check_truth(path: str | os.PathLike[str], what: str,
                features: Sequence[str] = ()) -> None:
    """Refuse, before anything is read, reserved or written, a sidecar ``path`` that is
    not a synthetic-data sidecar — a JSON object whose ``features``, ``true_lower`` and
    ``true_upper`` are lists of one length, the features names and the bounds numbers —
    or that names not every one of the run's ``features`` (the options' names), so that a
    plot asked to draw the truth never silently leaves it out. The message names
    ``what``, the path and the run's features only (a public file, but its text is never
    quoted)."""
    shown = str(path)
    if not Path(path).is_file():
        raise ParameterError(f"{what} {shown!r} does not exist or is not a file")
    try:
        truth = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        truth = None
    shape = isinstance(truth, dict) and all(
        isinstance(truth.get(k), list) for k in ("features", "true_lower", "true_upper"))
    if not shape or not (
            len(truth["features"]) == len(truth["true_lower"]) == len(truth["true_upper"])
            and all(isinstance(f, str) for f in truth["features"])
            and all(isinstance(v, int | float) and not isinstance(v, bool)
                    for v in (*truth["true_lower"], *truth["true_upper"]))):
        raise ParameterError(f"{what} {shown!r} is not a synthetic-data sidecar: a JSON "
                             f"object with lists 'features' (names), 'true_lower' and "
                             f"'true_upper' (numbers) of one length")
    missing = [f for f in features if f not in truth["features"]]
    if missing:
        listed = ", ".join(repr(f) for f in missing)
        raise ParameterError(f"{what} {shown!r} gives no true bounds for the run's "
                             f"feature(s) {listed}: give the sidecar of this table's "
                             f"features, or leave {what} out")


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


__all__ = ["LABEL", "Feed", "FileSink", "JsonSink", "NotPublishedError", "PngSink", "Release",
           "ResultsTableSink", "Sink", "Write", "around", "check_distinct", "check_png_path",
           "check_public_read", "check_truth", "file_write", "fit_result", "label_entry",
           "output_sinks", "publish", "read_truth", "sink_inputs"]
