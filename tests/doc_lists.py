"""The docs' lists of options, statistics' columns and outputs, generated from the
registry or checked against it (the charter: "lists of products, options and sinks are
generated from one registry"; "docs that match the code").

A list in README.md, docs/operations.md, the Makefile, jobs/aggregate.py's docstring or
conf/aggregate.yaml's comments sits between two markers (an HTML comment in Markdown and
the docstring, a ``#`` comment in the Makefile and the config), of one of two kinds:

* ``list:NAME`` — generated: the text between the markers is :data:`RENDER` [NAME]'s,
  rendered from the requests (:mod:`dprect.core.request`), the run options
  (:mod:`dprect.app.options`, through the jobs' config keys), the record shapes
  (:mod:`dprect.release.aggregate_record`) or the demo's configs. ``python
  tests/doc_lists.py`` rewrites every such block; tests/test_doc_lists.py fails, with the
  expected text, when one differs.
* ``names:NAME`` — prose, checked: every option of :data:`NAMES` [NAME] is mentioned
  (a bullet ``**name**``, a flag ``--name``, or ``name`` in backticks), no bullet or flag
  names an option the registry does not have, and a default the prose states
  (``(default X)``, ```X` (default``) is the registry's.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: the files whose lists are generated or checked (a job's docstring and its config's
#: comments keep checked ones)
FILES = ("README.md", "docs/operations.md", "Makefile", "jobs/aggregate.py",
         "conf/aggregate.yaml")
#: a block: ``<!-- list:NAME -->`` … ``<!-- /list:NAME -->`` (or ``# list:NAME`` lines)
BLOCK = re.compile(r"(?:<!-- |# )(list|names):([\w-]+)(?: -->)?(.*?)"
                   r"(?:<!-- |# )/\1:\2(?: -->)?", re.S)
#: the config keys that name an output of a job (its ``output`` and a product's sinks)
OUTPUT_KEYS = ("output", "results_table", "table", "plot")


@dataclass(frozen=True)
class Block:
    """One marked list: its ``kind`` (``list`` or ``names``), its ``name``, the text
    between its markers (``body``) and the file it is in (``path``)."""

    kind: str
    name: str
    body: str
    path: str


def blocks(path: str) -> Iterator[Block]:
    """The marked lists of the file ``path`` (relative to the repository)."""
    text = (ROOT / path).read_text(encoding="utf-8")
    for m in BLOCK.finditer(text):
        yield Block(m[1], m[2], m[3], path)


# -- generated lists ---------------------------------------------------------------------------
@cache
def job_options(product: str) -> dict[str, Any]:
    """A product job's config keys (``jobs/<job>.py``'s ``OPTIONS``, generated from the
    registry), by the product's name."""
    from dprect.app.products import PRODUCTS

    if str(ROOT / "jobs") not in sys.path:
        sys.path.insert(0, str(ROOT / "jobs"))
    options: dict[str, Any] = importlib.import_module(str(PRODUCTS[product].job)).OPTIONS
    return options


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def keys_text(product: str) -> str:
    """The ``Keys`` bullet of a grouped product's section in docs/operations.md: every
    config key of its job, in the job's order, its default where it has one."""
    items = []
    for key, option in job_options(product).items():
        notes = ["required"] if option.help.endswith("(required)") else []
        if option.default is not None and option.default is not False and option.default != {}:
            notes.append(f"default {_shown(option.default)}")
        items.append(f"`{key}`" + (f" ({', '.join(notes)})" if notes else ""))
    from dprect.app.options import RUN_OPTIONS

    other = [f"`{o.name}` is `{o.spelled}`" for o in RUN_OPTIONS
             if o.spelled != "--" + o.name.replace("_", "-") and o.name in job_options(product)]
    text = (f"**Keys** of `{product}` (generated from the registry; `--help` lists them with "
            "their help; the command's flags are the same names with dashes, `--group-by` "
            f"for `group_by`, but {', '.join(other)}): {', '.join(items)}.")
    return textwrap.fill(text, 90, initial_indent="* ", subsequent_indent="  ",
                         break_on_hyphens=False, break_long_words=False)


def request_keys(kind_name: str) -> str:
    """A request's budget keys (:func:`dprect.core.request.option_specs`), in its order."""
    from dprect.core import request

    return ", ".join(f"`{s.name}`" for s in request.option_specs(getattr(request, kind_name)))


def table_columns_text() -> str:
    """The grouped table's columns, mechanism by mechanism (:data:`SHAPES`): those every
    run of the mechanism has (a statistic not asked leaves its columns empty), and where
    an ``on_ask`` statistic's go when it is asked."""
    from dprect.core.statistic import STATISTICS, outputs
    from dprect.release.aggregate_record import SHAPES

    parts = []
    for method, shape in SHAPES.items():
        columns = [f"`{c}`" for c in shape.table_columns(())]
        asked = [s for s in STATISTICS.values() if s.mechanism is shape.mechanism and s.on_ask]
        if asked:
            extra = "; ".join(", ".join(f"`{o}`" for o in s.outputs) for s in asked)
            where = len(columns) - len(shape.flags)
            columns.insert(where, f"then only for a statistic asked ({extra})")
        assert len(outputs(shape.mechanism)) + 2 + len(shape.flags) == len(
            shape.table_columns(()))
        parts.append(f"`{method}`: {', '.join(columns)}")
    text = ("The table's columns (generated from the record shapes): " + "; ".join(parts)
            + ". A statistic of the mechanism that was not asked leaves its columns empty "
            "(nulls in Parquet and Delta), so presets and runs of other statistics write "
            "one schema.")
    return textwrap.fill(text, 90, initial_indent="* ", subsequent_indent="  ",
                         break_on_hyphens=False, break_long_words=False)


def shape_columns(method: str) -> str:
    """The table columns of a run of one mechanism (``method``: its record shape's)."""
    from dprect.release.aggregate_record import SHAPES

    return ", ".join(SHAPES[method].table_columns(()))


def demo_outputs() -> str:
    """The Makefile's ``DEMO_OUTPUTS``: every output key (:data:`OUTPUT_KEYS`) of the
    sections the demo's jobs run with, in the demo's order (read from its recipe and the
    configs it passes)."""
    import yaml

    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    conf = re.search(r"^DEMO_CONF\s*:?=\s*(\S+)", make, re.M)
    recipe = make.split("\ndemo: ", 1)[1].split("\n\n", 1)[0]
    paths = []
    for job, config in re.findall(r"jobs/(\w+)\.py --config (\S+)", recipe):
        config = config.replace("$(DEMO_CONF)", conf[1] if conf else "")
        source = (ROOT / "jobs" / f"{job}.py").read_text(encoding="utf-8")
        section = re.search(r'^SECTION = "(\w+)"', source, re.M)
        values = yaml.safe_load((ROOT / config).read_text())[section[1] if section else job]
        paths += [values[k] for k in values if k in OUTPUT_KEYS and values[k]]
    return "DEMO_OUTPUTS := " + " ".join(paths)


def statistics_text() -> str:
    """The statistics a run may ask for, mechanism by mechanism, as ``--help`` gives them
    (:func:`dprect.app.options.statistics_choices`), in backticks."""
    from dprect.app.options import statistics_choices

    return statistics_choices().replace("'", "`")


#: every generated list, by its marker's name
RENDER: dict[str, Callable[[], str]] = {
    "keys-aggregate": lambda: keys_text("aggregate"),
    "keys-bounds": lambda: keys_text("bounds"),
    "keys-describe": lambda: keys_text("describe"),
    "fit-budget-keys": lambda: request_keys("FitRequest"),
    "table-columns": table_columns_text,
    "columns-bounds": lambda: shape_columns("bounds"),
    "statistics": statistics_text,
    "demo-outputs": demo_outputs,
}


# -- checked prose -----------------------------------------------------------------------------
def fit_api_options() -> dict[str, Any]:
    """``dprect.fit``'s options: its keyword parameters and the request's fields (the
    options it takes as keywords), each with its default."""
    import dprect
    from dprect.core.request import FitRequest, option_specs

    out = {s.name: s.plain_default for s in option_specs(FitRequest)}
    for name, p in inspect.signature(dprect.fit).parameters.items():
        if p.kind is p.KEYWORD_ONLY:
            out[name] = p.default
    return out


def fit_outputs() -> dict[str, Any]:
    """A fit's outputs: its run options' (:data:`dprect.app.options.FIT_OUTPUTS`)."""
    from dprect.app.options import FIT_OUTPUTS

    return {o.name: o.default for o in FIT_OUTPUTS}


def statistics() -> dict[str, Any]:
    """The registry's statistics (:data:`dprect.core.statistic.STATISTICS`), no defaults."""
    from dprect.core.statistic import STATISTICS

    return dict.fromkeys(STATISTICS)


#: every checked list: the options (or statistics) it must mention, with their defaults
NAMES: dict[str, Callable[[], dict[str, Any]]] = {
    "fit-api-options": fit_api_options,
    "fit-outputs": fit_outputs,
    "statistics-named": statistics,
    "statistics-job": statistics,
    "statistics-conf": statistics,
}


def every_option() -> set[str]:
    """Every option of any front end: the run options, the products' own, the requests'
    fields and ``dprect.fit``'s keywords (a bullet or flag naming none of them is stale)."""
    from dprect.app.options import RUN_OPTIONS
    from dprect.app.products import PRODUCTS
    from dprect.core import request

    names = {o.name for p in PRODUCTS.values() for o in (*RUN_OPTIONS, *p.options)}
    names |= {s.name for kind in (request.PlanRequest, request.FitRequest,
                                  request.BoundsRequest) for s in request.option_specs(kind)}
    return names | set(fit_api_options())


def _same(stated: str, default: Any) -> bool:
    try:
        return float(stated) == float(default)
    except (TypeError, ValueError):
        return stated == str(default)


def names_problems(name: str, body: str, known: dict[str, Any] | None = None) -> list[str]:
    """What is wrong with the prose ``body`` of the checked list ``name``: options of
    ``known`` (default: :data:`NAMES` [name]'s) not mentioned, bullets or flags naming no
    option (:func:`every_option`), defaults stated otherwise than ``known``'s."""
    known = NAMES[name]() if known is None else known
    anywhere = every_option() | set(known)
    heads = re.findall(r"^\* \*\*([a-z_]+)\*\*", body, re.M)
    flags = [f[2:].replace("-", "_") for f in re.findall(r"`(--[a-z][\w-]*)", body)]
    plain = re.findall(r"`(\w+)=?`", body)
    problems = [f"{n} is not mentioned" for n in known if n not in {*heads, *flags, *plain}]
    problems += [f"{n} names no option" for n in dict.fromkeys([*heads, *flags])
                 if n not in anywhere]
    for bullet in re.split(r"^\* ", body, flags=re.M):
        head = re.match(r"\*\*(\w+)\*\*", bullet)
        stated = re.search(r"`([^`]+)` \(default|\(default ([^);,]+)", bullet)
        if head and stated and head[1] in known:
            value = stated[1] or stated[2]
            if not _same(value.strip(), known[head[1]]):
                problems.append(f"{head[1]}: default {value.strip()}, the registry's "
                                f"{known[head[1]]}")
    return problems


def regenerate(path: str) -> bool:
    """Rewrite the generated lists of ``path``; whether anything changed."""
    file = ROOT / path
    text = file.read_text(encoding="utf-8")

    def fill(m: re.Match[str]) -> str:
        if m[1] != "list":
            return m[0]
        inline = "\n" not in m[3]
        body = RENDER[m[2]]()
        inner = body if inline else f"\n{body}\n"
        start, end = m[0][:m.start(3) - m.start()], m[0][m.end(3) - m.start():]
        return start + inner + end

    new = BLOCK.sub(fill, text)
    if new != text:
        file.write_text(new, encoding="utf-8")
    return new != text


def rendered(block: Block) -> str:
    """What the generated ``block``'s body must be (inline, or one line a marker each)."""
    body = RENDER[block.name]()
    return body if "\n" not in block.body else f"\n{body}\n"


if __name__ == "__main__":
    for changed in [p for p in FILES if regenerate(p)]:
        print(f"regenerated {changed}")
