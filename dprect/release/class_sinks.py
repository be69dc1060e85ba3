"""The plot and the results table of a class record (:meth:`ClassesResult.to_json`).

The JSON sink writes a class record as it writes any record; these two read the record as
a :class:`~dprect.core.classes.ClassesResult`:

* :class:`ClassesPngSink` — every class's rectangle in one figure
  (:mod:`dprect.release.class_plot`);
* :class:`ClassesTableSink` — one row per class under the run's id, appended in ONE Delta
  commit (the table's schema is unchanged: the class is named in the row's parameters
  JSON as ``"class"``, the one charge's guarantee is every row's); a re-published run
  adds nothing, nor does a run with no class (a private selection kept none: the JSON
  and the plot say so, and so does this sink's line).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from dprect.core.accounting import Guarantee
from dprect.core.classes import ClassesResult
from dprect.release.sinks import (
    PngSink,
    Release,
    ResultsTableSink,
    Write,
    around,
    file_write,
)


@dataclass(frozen=True)
class ClassesPngSink(PngSink):
    """The PNG of every class's rectangle."""

    def prepare(self, release: Release) -> Write:
        from dprect.release.class_plot import render_classes_png
        from dprect.release.plotting import edge_note, open_sides

        result = ClassesResult.from_json(release.record)
        run = release.record.get("privacy")  # after a private selection: the composed one
        png = render_classes_png(result, title=self.title, label=around(release.record),
                                 privacy=None if run is None else Guarantee(**run))
        sides = sum(open_sides(r) for r in result.results)
        return file_write(self.path, png, f"plot written to {self.path}" + edge_note(sides))


@dataclass(frozen=True)
class ClassesTableSink(ResultsTableSink):
    """One results-table row per class, in one commit."""

    def prepare(self, release: Release) -> Write | None:
        from dprect.release.results_table import append_result, has_run, result_row

        result = ClassesResult.from_json(release.record)
        if has_run(self.path, release.run_id):
            return None
        if not result.classes:  # nothing to append: the line says so, nothing is written
            return Write(lambda: f"no class released: no row appended to results table "
                                 f"{self.path}")
        rows = pa.concat_tables([
            result_row(r, run_id=release.run_id, dataset=self.dataset,
                       started_at=release.started_at,
                       extra_parameters={**self.extra_parameters, "class": c,
                                         "classes": list(result.classes)})
            for c, r in zip(result.classes, result.results, strict=True)])

        def write() -> str:
            version = append_result(self.path, rows)
            return (f"{len(result.classes)} rows appended to results table {self.path} "
                    f"(Delta version {version})")

        return Write(write)


__all__ = ["ClassesPngSink", "ClassesTableSink"]
