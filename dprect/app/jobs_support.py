"""Plumbing shared by the Spark jobs in ``jobs/``: configuration, exit codes, reporting.

No pyspark import here: the jobs import Spark themselves, and this module stays usable (and
testable) without a JVM.

Configuration
-------------
A job reads one YAML file (``--config conf/local.yaml``) with a section per job
(``generate``, ``fit``, ``evaluate``) and a shared ``spark`` section, then applies
command-line overrides ``--set KEY=VALUE`` in order:

* ``KEY`` is a dotted path from the top of the file (``fit.epsilon``, ``spark.master``);
  a key that does not start with a section name is read inside the job's own section
  (``--set epsilon=0.5`` in the fit job means ``fit.epsilon``). Below ``spark.conf`` the
  rest of the key is one Spark property (``--set spark.conf.spark.driver.memory=2g``).
* ``VALUE`` is read as one YAML value: ``0.5`` is a number, ``[a, b]`` a list, ``null``
  nothing, anything else a string. A key that takes text keeps a number as it was
  written (``010``, ``1.10``, ``20261202``: not YAML's 8 and 1.1), in a file or here; so
  do group values and labels (``groups: [010]``, ``positive_label: 010``), read against
  their column's type as the command line's ``--groups 010`` and ``--positive-label 010``.
  A key that takes a number refuses an integer written with a leading zero (``seed: 010``,
  YAML's octal 8 but the command line's 10), naming the key.

Each section is checked against the job's table of :class:`Option` s: an unknown key (a
typo) or a value of the wrong type is an error naming the key, before Spark starts. A
key given twice in one mapping (a second ``epsilon:``, a second ``fit:`` section) is an
error naming both lines: YAML itself would keep the last without a word.

Exit codes (:func:`run_job`)
----------------------------
``0`` success; ``2`` bad configuration, parameters or input (any :class:`DprectError`, a
missing file); ``3`` Spark itself failed; ``1`` an unexpected internal error; ``130``
interrupted. Every failure prints exactly one line ``<job>: error: ...`` on stderr and no
traceback (set ``DPRECT_DEBUG=1`` to see the traceback of an unexpected error).

The line never carries a value from the data: a Spark error is described by
:func:`dprect.engines.spark.source.spark_message` (its condition, not its text), and an unexpected
error by its type only. Under ``spark-submit`` the Python driver's stderr is merged into
spark-submit's stdout (Spark's ``PythonRunner``), so the line is written to spark-submit's
own stderr instead (:func:`report_error`).
"""

from __future__ import annotations

import argparse
import codecs
import math
import os
import re
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from dprect.app.failures import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_SPARK,
    describe_failure,
    one_line,
    report_error,
    sigterm_interrupts,
)
from dprect.app.options import (
    GROUP_OPTIONS,
    OLD_KEYS,
    RUN_OPTIONS,
    RunOption,
    comma_entries,
)
from dprect.app.products import COMMANDS, PRODUCTS
from dprect.app.session_options import SESSION_OPTIONS
from dprect.core.errors import ParameterError
from dprect.core.labels import LabelText
from dprect.core.request import FitRequest, option_specs

if TYPE_CHECKING:
    from dprect.app.spine import Reporter

T = TypeVar("T")

#: the config sections: the session's, the data generator's, the evaluation's and one per
#: product with a command (:data:`dprect.app.products.COMMANDS`)
SECTIONS = ("spark", "generate", "evaluate", *COMMANDS)



class ConfigError(ParameterError):
    """The configuration file or an override is unusable (the message names the key)."""


class Option(NamedTuple):
    """One key of a config section: its default, its kind and a line of help.

    Kinds: ``str``, ``int``, ``float`` (an integer written with a leading zero refused
    for both: :func:`_check_not_octal`), ``bool``, ``str_list`` (a list of names, or one
    comma-separated string), ``float_list``, ``values`` (a list of single values, each
    number as written, or one comma-separated string: the groups), ``label`` and
    ``labels`` (a positive label, a class list's entries: :func:`config_label`),
    ``properties`` (a mapping of names to single values, returned as strings) and
    ``any``. A default of None makes the key optional (None is then accepted for it).
    """

    default: Any
    kind: str
    help: str


Schema = Mapping[str, Option]

# The shared ``spark`` section: how a job builds its SparkSession.
# ``master`` and ``remote`` are generated from dprect.app.session_options (the CLI's
# --master and --remote come from the same table); a ``remote`` wins over ``master``.
SPARK_OPTIONS: dict[str, Option] = {
    **{key: Option(None, "str", option.help + ("; spark.master is then ignored"
                                               if key == "remote" else ""))
       for key, option in SESSION_OPTIONS.items()},
    "app_name": Option(None, "str", "application name (default: the job's name)"),
    "log_level": Option("ERROR", "str", "Spark log level once the session is up"),
    "conf": Option({}, "properties", "extra Spark properties, e.g. "
                                     "spark.sql.shuffle.partitions: 8"),
}


def _yaml() -> Any:
    """PyYAML, which the jobs' configuration needs (the 'jobs' extra)."""
    from dprect.core.extras import require

    require("jobs", "the jobs' YAML configuration")
    import yaml

    return yaml


# -- loading ------------------------------------------------------------------------------
def load_config(path: str | os.PathLike[str] | None, overrides: Sequence[str] = (),
                *, section: str) -> dict[str, Any]:
    """The configuration document: the YAML file (if any) with ``overrides`` applied.

    Raises :class:`ConfigError` for a missing file or a folder, an unreadable file, a
    mapping that gives one key twice (:func:`_load_yaml`), a document that is not a mapping
    of sections, an unknown section or a malformed override.
    """
    doc: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if p.is_dir():
            raise ConfigError(f"config file {str(path)!r} is a folder: give the YAML file "
                              "itself (e.g. conf/local.yaml)")
        if not p.is_file():
            raise ConfigError(f"config file {str(path)!r} does not exist")
        text = _config_text(path, p.read_bytes())
        try:
            loaded = _load_yaml(text)
        except _KeyTwiceError as twice:
            where = (f"line {twice.first}" if twice.first == twice.again
                     else f"lines {twice.first} and {twice.again}")
            raise ConfigError(f"config file {str(path)!r} gives one key twice ({where}): "
                              "YAML would keep the last silently; give each key, and "
                              "each section, once") from None
        except _yaml().YAMLError as exc:
            raise ConfigError(f"config file {str(path)!r} is not valid YAML"
                              f"{_yaml_where(exc, text)}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {str(path)!r} must hold a mapping of sections "
                              f"({', '.join(SECTIONS)})")
        doc = loaded
    for item in overrides:
        apply_override(doc, item, section=section)
    for name, value in doc.items():
        if name not in SECTIONS:
            raise ConfigError(f"unknown config section {name!r}; sections are "
                              f"{', '.join(SECTIONS)}")
        if value is not None and not isinstance(value, dict):
            raise ConfigError(f"config section {name!r} must be a mapping, got {value!r}")
    return doc


#: the byte-order marks a config file may start with (those PyYAML reads): its codec, its name
_MARKS = ((codecs.BOM_UTF8, "utf-8", "UTF-8"), (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
          (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"))


def _config_text(path: str | os.PathLike[str], data: bytes) -> str:
    """A config file's bytes as text: UTF-8, or UTF-16 after its byte-order mark, as
    PyYAML reads them (a mark at the start left out). Bytes that are not such text are
    refused naming the file, the encoding and the line of the first byte that is not
    (counted from the newlines before it), never the decoder's text."""
    codec, name, body = "utf-8", "UTF-8", data
    for mark, marked, called in _MARKS:
        if data.startswith(mark):
            codec, name, body = marked, called, data[len(mark):]
            break
    try:
        return body.decode(codec)
    except UnicodeDecodeError as bad:
        lines_before = body[:bad.start].decode(codec, errors="replace").count("\n")
        raise ConfigError(f"config file {str(path)!r} is not {name} text (line "
                          f"{lines_before + 1}): save it as UTF-8") from None


class _KeyTwiceError(Exception):
    """A mapping of the config gives one key twice: the 1-based lines of both."""

    def __init__(self, first: int, again: int) -> None:
        super().__init__(first, again)
        self.first, self.again = first, again


class _WrittenInt(int):
    """A YAML integer that keeps the text it was written as (:attr:`text`; its repr, so
    a message shows the value as written)."""

    text: str

    def __repr__(self) -> str:
        return self.text


class _WrittenFloat(float):
    """A YAML float that keeps the text it was written as (:attr:`text`; its repr, so
    a message shows the value as written)."""

    text: str

    def __repr__(self) -> str:
        return self.text


def plain(value: Any) -> Any:
    """``value`` with every number read from YAML (:class:`_WrittenInt`,
    :class:`_WrittenFloat`) made a plain ``int`` or ``float`` again, lists and mappings
    through."""
    if isinstance(value, bool):
        return value
    if isinstance(value, _WrittenInt):
        return int(value)
    if isinstance(value, _WrittenFloat):
        return float(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    return value


def _as_text(value: Any) -> str:
    """A scalar as text: a number read from YAML as it was written (``010``, not 8)."""
    return str(getattr(value, "text", value))


def _load_yaml(data: bytes | str) -> Any:
    """``yaml.safe_load`` that refuses a mapping giving one key twice (:class:`_KeyTwiceError`)
    and keeps each number's text (:class:`_WrittenInt`, :class:`_WrittenFloat`).

    PyYAML keeps the last of two equal keys without a word, so a second ``epsilon:``
    further down a section, or a second ``fit:`` section appended to a file, would
    silently replace the first (every key of a replaced section lost). Keys merged in
    with ``<<`` may be overridden, as YAML means them to be. A number's text is what a
    key that takes text gets (:func:`_check_kind`): YAML reads ``010`` as 8, ``1.10`` as
    1.1 and ``1_000`` as 1000, so a dataset id written ``010`` would be charged as
    another dataset than the command line's ``--dataset 010``."""
    yaml = _yaml()

    class Loader(yaml.SafeLoader):  # type: ignore[name-defined]
        def construct_yaml_int(self, node: Any) -> Any:
            number = _WrittenInt(super().construct_yaml_int(node))
            number.text = str(node.value)
            return number

        def construct_yaml_float(self, node: Any) -> Any:
            number = _WrittenFloat(super().construct_yaml_float(node))
            number.text = str(node.value)
            return number

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=True)
                    line = key_node.start_mark.line
                    try:
                        if key in seen:
                            raise _KeyTwiceError(seen[key] + 1, line + 1)
                        seen[key] = line
                    except TypeError:  # an unhashable key: PyYAML's own error follows
                        continue
            return super().construct_mapping(node, deep=deep)

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    Loader.add_constructor("tag:yaml.org,2002:float", Loader.construct_yaml_float)
    return yaml.load(data, Loader=Loader)  # a SafeLoader


def _yaml_where(exc: BaseException, text: str) -> str:
    """Where PyYAML stopped, as ``" (line L, column C)"`` (1-based integers from the
    error's mark), or ``" (line L)"`` for a character YAML does not allow (a control
    character: its position in ``text``), or ``""``: the message is built from the path
    and these numbers only, never from the parser's text, which quotes the file's lines
    (the charter's reading rule; tests/test_no_library_text.py)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line, column = getattr(mark, "line", None), getattr(mark, "column", None)
    if type(line) is int and type(column) is int:
        return f" (line {line + 1}, column {column + 1})"
    position = getattr(exc, "position", None)  # yaml.reader.ReaderError's, in ``text``
    if mark is None and type(position) is int and 0 <= position <= len(text):
        lines_before = text.count("\n", 0, position)
        return f" (line {lines_before + 1})"
    return ""


def apply_override(doc: dict[str, Any], item: str, *, section: str) -> None:
    """Apply one ``KEY=VALUE`` override to ``doc`` in place (see the module docstring)."""
    if "=" not in item:
        raise ConfigError(f"override {item!r} must look like KEY=VALUE")
    key, text = item.split("=", 1)
    parts = [p.strip() for p in key.strip().split(".")]
    if not parts or any(not p for p in parts):
        raise ConfigError(f"override {item!r} has an empty key")
    if parts[0] not in SECTIONS:
        parts = [section, *parts]
    if parts[:2] == ["spark", "conf"] and len(parts) > 3:
        parts = [*parts[:2], ".".join(parts[2:])]  # one Spark property, dots and all
    try:
        value = _load_yaml(text) if text.strip() else None
    except (_yaml().YAMLError, _KeyTwiceError):
        value = text
    node = doc
    for p in parts[:-1]:
        child = node.get(p)
        if child is None:
            child = node[p] = {}
        if not isinstance(child, dict):
            raise ConfigError(f"override {item!r}: {p!r} is not a mapping")
        node = child
    node[parts[-1]] = value


def section_values(doc: Mapping[str, Any], section: str, schema: Schema) -> dict[str, Any]:
    """The keys of ``section`` checked against ``schema``, with defaults filled in.

    Raises :class:`ConfigError` naming the first unknown key or ill-typed value.
    """
    raw = dict(doc.get(section) or {})
    for old, new in OLD_KEYS.items():  # a renamed key, in its old spelling
        if old in raw and old not in schema and new in schema:
            if new in raw:
                raise ConfigError(f"give {section}.{new} or its old spelling "
                                  f"{section}.{old}, not both")
            raw[new] = raw.pop(old)
    unknown = sorted(set(raw) - set(schema))
    if unknown:
        raise ConfigError(f"unknown key {section}.{unknown[0]}; {section} accepts "
                          f"{', '.join(sorted(schema))}")
    out: dict[str, Any] = {}
    for key, opt in schema.items():
        value = raw.get(key, opt.default)
        out[key] = _check_kind(f"{section}.{key}", value, opt)
    return out


def check_value(name: str, value: Any, opt: Option) -> Any:
    """One config value checked against its :class:`Option` as :func:`section_values`
    checks a section's (a job taking a key from another section's raw values): refused
    with a :class:`ConfigError` naming ``name``, else the value as the key takes it."""
    return _check_kind(name, value, opt)


def _check_kind(name: str, value: Any, opt: Option) -> Any:
    if value is None:
        return None
    kind = opt.kind
    if kind == "str":
        if isinstance(value, bool | dict | list):
            raise ConfigError(f"{name} must be a string, got {value!r}")
        # a number read from YAML as written: 010, not 8; 1.10, not 1.1 (:func:`_load_yaml`)
        return _as_text(value)
    if kind in ("int", "float"):
        _check_not_octal(name, value)
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name} must be an integer, got {plain(value)!r}")
        return int(value)
    if kind == "float":
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ConfigError(f"{name} must be a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{name} must be a number, got {value!r}")
        if not math.isfinite(float(value)):
            raise ConfigError(f"{name} must be finite, got {value!r}")
        return float(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{name} must be true or false, got {value!r}")
        return value
    if kind == "str_list":
        if isinstance(value, str):
            value = comma_entries(value, "name", f"{name}: ")
        if not isinstance(value, list) or not value or not all(
                isinstance(v, str | int) and not isinstance(v, bool) for v in value):
            raise ConfigError(f"{name} must be a non-empty list of names, got {value!r}")
        return [_as_text(v) for v in value]
    if kind == "float_list":
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{name} must be a non-empty list of numbers, got {value!r}")
        return [_check_kind(f"{name}[{i}]", v, Option(None, "float", ""))
                for i, v in enumerate(value)]
    if kind == "values":  # the group values: text, as --groups gives them
        if isinstance(value, list):
            return [_as_text(v) if isinstance(v, int | float) and not isinstance(v, bool)
                    else plain(v) for v in value]
        return plain(value)  # a string is split by the product; else refused there
    if kind == "label":
        return config_label(value)
    if kind == "labels":  # a comma-separated string is split by the job (config_labels)
        return [config_label(v) for v in value] if isinstance(value, list) else plain(value)
    if kind == "properties":
        if not isinstance(value, dict):
            raise ConfigError(f"{name} must be a mapping of property -> value, got {value!r}")
        for key, item in value.items():
            if isinstance(item, dict | list) or item is None:
                raise ConfigError(f"{name}.{key} must be a single value, got {item!r}")
        return {_as_text(k): str(v).lower() if isinstance(v, bool) else _as_text(v)
                for k, v in value.items()}
    return plain(value)


#: an integer YAML 1.1 reads as octal: a leading zero (``010`` is 8)
_OCTAL = re.compile(r"[-+]?0[0-7_]+")
#: an integer with a leading zero and an 8 or a 9, which YAML keeps as text (``08``)
_ZERO_TEXT = re.compile(r"[-+]?0[0-9_]*[89][0-9_]*")


def _check_not_octal(name: str, value: Any) -> None:
    """Refuse a number key written as an integer with a leading zero (``seed: 010``,
    ``--set epsilon=010``): YAML reads it as octal (8), the command line's ``--seed 010``
    as 10 — ambiguous, so neither is guessed; ``08``, which YAML keeps as text, is refused
    the same way (an integer key called it no integer, a number key read 8). Decided from
    the text written only."""
    if isinstance(value, _WrittenInt) and _OCTAL.fullmatch(value.text):
        raise ConfigError(f"{name} is written {value.text}, an integer with a leading zero, "
                          f"which YAML reads as octal ({int(value)}): write it without the "
                          "leading zero")
    if isinstance(value, str) and _ZERO_TEXT.fullmatch(value):  # 08: text to YAML
        raise ConfigError(f"{name} is written {value}, an integer with a leading zero: "
                          "write it without the leading zero")


# -- command line -------------------------------------------------------------------------
#: a flag spelled otherwise than ``--name-with-dashes`` → its config key
_SPELLED = {o.spelled: o.name for p in PRODUCTS.values() for o in (*RUN_OPTIONS, *p.options)}
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def job_text(text: str, section: str, schema: Schema) -> str:
    """A help line in a job's words: each flag the options' help names (``--epsilon``,
    ``--select-groups``) becomes the job's config key (``describe.epsilon``,
    ``describe.select_groups``) when the section has that key; others stay as they are
    (a test checks no flag is left in a job's help)."""

    def key(match: re.Match[str]) -> str:
        name = _SPELLED.get(match[0], match[0][2:].replace("-", "_"))
        return f"{section}.{name}" if name in schema else match[0]

    return _FLAG.sub(key, text)


class _JobParser(argparse.ArgumentParser):
    """argparse, as a job needs it: a mistake on the command line (an unknown option, a
    stray word, ``--config`` without its file) is ONE line ``<job>: error: ... (see
    <job> --help)`` where the job's other errors go (:func:`report_error`: under
    spark-submit, spark-submit's own stderr, not the driver's stdout) and exit code 2,
    never the usage dump. With ``allow_abbrev=False``: spark-submit's ``--conf
    KEY=VALUE`` placed after the job's file is an unknown option, not ``--config``."""

    def error(self, message: str) -> Any:
        report_error(f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)")
        self.exit(EXIT_BAD_INPUT)


class _OneConfig(argparse.Action):
    """``--config FILE``, refused when given twice (argparse would keep the last file
    silently and the first one's every key would be dropped)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error("--config is given twice; give one file, and change single keys "
                         "with --set KEY=VALUE")
        setattr(namespace, self.dest, values)


def build_parser(prog: str, description: str, section: str, schema: Schema
                 ) -> argparse.ArgumentParser:
    """The job's argument parser: ``--config``, repeatable ``--set``, and a help text
    listing every key of the job's section (its help in the job's words,
    :func:`job_text`) and of ``spark`` with its default."""
    lines = [f"{section}.{k} (default {o.default!r}): {job_text(o.help, section, schema)}"
             for k, o in schema.items()]
    lines += [f"spark.{k} (default {o.default!r}): {o.help}" for k, o in SPARK_OPTIONS.items()]
    epilog = ("configuration keys (set them in the YAML file or with --set KEY=VALUE; a key "
              f"without a section prefix means {section}.KEY):\n  " + "\n  ".join(lines)
              + "\n\nexit codes: 0 ok, 2 bad configuration or input, 3 Spark failed, "
                "1 internal error, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM)")
    parser = _JobParser(prog=prog, description=description, epilog=epilog,
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        allow_abbrev=False)
    parser.add_argument("--config", default=None, metavar="FILE", action=_OneConfig,
                        help="YAML configuration (e.g. conf/local.yaml)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override one configuration key (repeatable)")
    return parser


def check_config_apart(config: str | os.PathLike[str] | None,
                       outputs: Sequence[tuple[str, str | None]]) -> None:
    """Refuse, before Spark starts or the ledger is read, an output (``outputs``: its key
    and path) at the job's own ``--config`` file — the same path, a link to it — or one
    that contains it (a folder the job replaces): the job would overwrite, or delete,
    its configuration once it had run (under a ledger, charged). The message names the
    key and the paths only (:func:`dprect.release.sinks.check_distinct`, the config
    named ``--config`` among the inputs)."""
    if config is None:
        return
    from dprect.release.sinks import check_distinct

    check_distinct([(name, path) for name, path in outputs if path is not None],
                   [("--config", os.fspath(config))])


def job_main(prog: str, description: str, section: str, schema: Schema,
             body: Callable[[dict[str, Any], str | None], int | None],
             argv: Sequence[str] | None = None) -> int:
    """A job's whole entry point: parse ``--config`` and ``--set`` (:func:`build_parser`),
    then run ``body(doc, config)`` on the loaded configuration (:func:`load_config`;
    ``config``: the ``--config`` file, None without one, for
    :func:`check_config_apart`) under :func:`run_job` — every failure one line on
    stderr and an exit code. The ``spark`` section is checked first
    (:data:`SPARK_OPTIONS`): its typo is refused before the job prints or checks
    anything, not once a run has read its ledger and printed its run id and opens its
    session."""
    args = build_parser(prog, description, section, schema).parse_args(argv)
    quiet_library_logs()

    def checked() -> int | None:
        doc = load_config(args.config, args.overrides, section=section)
        section_values(doc, "spark", SPARK_OPTIONS)
        return body(doc, args.config)

    return run_job(prog, checked, lambda key: f"{section}.{key}")


def run_job(prog: str, body: Callable[[], int | None],
            name: Callable[[str], str] | None = None) -> int:
    """Run ``body`` and turn any failure into one line on stderr (:func:`report_error`)
    and an exit code (an interrupt, SIGINT: ``<prog>: interrupted`` and 130; SIGTERM,
    raised as an interrupt inside: ``<prog>: terminated`` and 143). With ``name`` (a
    job's config keys: ``aggregate.interval_level``) a core refusal of an option names
    its key (:func:`dprect.app.spine.in_words`)."""
    try:
        with sigterm_interrupts():
            code = body()
        return EXIT_OK if code is None else int(code)
    except SystemExit:
        raise
    except BaseException as exc:  # every failure becomes one line
        from dprect.release.guarded import interrupt_in

        stop = interrupt_in(exc)
        if stop is None and name is not None:
            from dprect.app.spine import in_words

            exc = in_words(exc, name)
        code, message = describe_failure(exc if stop is None else stop)
        if code == EXIT_INTERNAL and os.environ.get("DPRECT_DEBUG"):
            traceback.print_exc()
        if stop is not None:  # SIGINT (or raised in its clean-up): as the command line says
            report_error(f"{prog}: {message}")
        else:
            report_error(f"{prog}: error: {message}")
        return code


def quiet_library_logs() -> None:
    """py4j reports an interrupted call through the ``logging`` module's root logger
    (``logging.exception``: a traceback on stderr, set up by ``basicConfig`` when the
    root logger has no handler), and could quote what it was sending. A run prints its
    own lines, never a library's log: give the root logger a handler that drops them
    (a root logger the caller configured is left alone)."""
    import logging

    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def exit_now(code: int) -> None:
    """End the process with ``code`` right away, after flushing stdout and stderr.

    A job's last act: it skips the interpreter's teardown, where delta-rs's native
    threads can, rarely, abort the process ("terminate called without an active
    exception") and so replace the job's exit code with 134. Call it only after the
    Spark session is stopped and every output is written. The temporary folders a
    library was given (:mod:`dprect.core.leftovers`) are removed first: ``os._exit``
    skips ``atexit``.
    """
    from dprect.core.leftovers import remove_now

    remove_now()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def step(prog: str, message: str) -> None:
    """Print a progress line at once, so a long step says what runs."""
    print(f"[{prog}] {message}", flush=True)


# -- the fit request in a config section ------------------------------------------------------
_OPTION_KINDS = {"float": "float", "choice": "str", "label": "label", "labels": "labels",
                 "names": "str_list"}


def request_options(kind: type[Any] = FitRequest, unset: Sequence[str] = ()
                    ) -> dict[str, Option]:
    """The config keys of a request (:func:`dprect.core.request.option_specs`): their
    defaults, allowed values and help are the request's; a key named in ``unset`` is
    None unless set (the request's default then fills in; the help still names it), and
    so is a positive label, as on the command line (a label given is refused beside a
    class list even when it equals the default: :func:`dprect.app.flow.fit_settings`)."""
    options = {}
    for spec in option_specs(kind):
        text = spec.help
        if spec.choices:
            text += f" (one of {', '.join(spec.choices)})"
        if spec.kind == "label":
            text += "; text, and a number as written (010 is '010'), is read against the " \
                    "column's type, as on the command line (quote yes/no/on/off, which " \
                    "YAML reads as booleans)"
        left_none = spec.name in unset or spec.kind == "label"
        if left_none:
            text += f" (default {spec.plain_default})"
        options[spec.name] = Option(None if left_none else spec.plain_default,
                                    _OPTION_KINDS[spec.kind], text)
    return options


def run_options(required: Sequence[str] = (),
                options: Sequence[RunOption] = RUN_OPTIONS) -> dict[str, Option]:
    """Run options (:mod:`dprect.app.options`: the shared ones by default, or a product's)
    as config keys, but those the command line alone has (a job's engine is Spark, its
    master is ``spark.master``); ``required`` names the keys the job requires (checked by
    the job)."""
    kinds = {"str": "str", "int": "int", "float": "float", "choice": "str",
             "names": "str_list", "count": "int", "spec": "any", "values": "values",
             "flag": "bool"}
    out = {}
    for o in options:
        if o.cli_only:
            continue
        text = o.help + (f" ({o.old_key}: its old spelling)" if o.old_key else "") \
            + (" (required)" if o.name in required else "")
        if o.choices:
            text += f" (one of {', '.join(o.choices)})"
        text += {"spec": "; in a config also a mapping column -> spec",
                 "values": "; in a config also a list of values"}.get(o.kind, "")
        out[o.name] = Option(o.default, kinds[o.kind], text)
    return out


def config_label(value: object) -> object:
    """A positive label from a config, as the command line's ``--positive-label`` reads
    it: a string, or a number YAML read, is text (:class:`LabelText`) — the number as it
    was written (``010`` is '010', not YAML's 8; ``1.50`` is '1.50') — read against the
    label column's type (``"1"`` is 1 for a numeric column, ``010`` is 10 there and '010'
    for a string column); a boolean (YAML's ``true``, ``yes``) as it is; anything else is
    left to the request's check."""
    if isinstance(value, str):
        return LabelText(value)
    if isinstance(value, _WrittenInt | _WrittenFloat):
        return LabelText(value.text)
    return plain(value)


def config_labels(value: object, name: str) -> object:
    """A class list from a config (the key ``name``): a YAML list (each entry as
    :func:`config_label` reads it) or a comma-separated string of text labels, split as
    the command line's ``--classes`` is (:func:`~dprect.app.options.comma_entries`: an
    empty entry refused with the same text, naming the key); None stays None (anything
    else is refused by the request's own check)."""
    if isinstance(value, str):
        return [LabelText(t) for t in comma_entries(value, "class", f"{name}: ")]
    if isinstance(value, list):
        return [config_label(v) for v in value]
    return plain(value)


# -- a product's section -------------------------------------------------------------------
def table_options(columns: Sequence[RunOption], kind: type[Any],
                  own: Sequence[RunOption], unset: Sequence[str] = ()) -> dict[str, Option]:
    """The config keys of a grouped-table product's job (bounds, describe), in its
    command's order: ``input`` (required), the ``columns``, the groups, the request's
    budget keys (``kind``: :func:`request_options`, ``unset`` None unless set), then the
    product's ``own`` keys and outputs (``output`` required)."""
    return {**run_options(required=("input",)), **run_options(("columns",), columns),
            **run_options(options=GROUP_OPTIONS), **request_options(kind, unset),
            **run_options(("output",), own)}


def require_keys(cfg: Mapping[str, Any], section: str, keys: Sequence[str]) -> None:
    """Refuse the first of ``keys`` the section leaves unset (null)."""
    for key in keys:
        if cfg[key] is None:
            raise ConfigError(f"{section}.{key} is required")


def config_grid(value: object, section: str, what: str) -> str | None:
    """``grid`` from a config: a string as it is, or a mapping ``what`` -> spec (a
    feature's, a column's) in the --grid spelling (``name=SPEC,...``)."""
    if isinstance(value, dict):
        return ",".join(f"{name}={spec}" for name, spec in value.items())
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{section}.grid must be a string or a mapping {what} -> spec, "
                          f"got {value!r}")
    return value


def check_groups(value: object, section: str) -> None:
    """``groups`` from a config: a list of single values or one comma-separated string
    (the values themselves are read against the group column by the product)."""
    if value is not None and not isinstance(value, str) and not (
            isinstance(value, list) and all(isinstance(v, str | int | float | bool)
                                            for v in value)):
        raise ConfigError(f"{section}.groups must be a list of values or a comma-separated "
                          f"string, got {value!r}")


def table_settings(cfg: Mapping[str, Any], section: str,
                   build: Callable[[dict[str, Any], Callable[[str], str]], T]) -> T:
    """A grouped-table product's settings from its job's section: ``input``, ``columns``,
    ``epsilon`` and ``output`` required, ``grid`` (where the product has one) and
    ``groups`` read as :func:`config_grid` and :func:`check_groups` do, in that order; then
    ``build`` (the product's settings function) checks the rest, naming keys
    ``section.key``."""
    require_keys(cfg, section, ("input", "columns", "epsilon", "output"))
    values = dict(cfg)
    if "grid" in cfg:
        values["grid"] = config_grid(cfg["grid"], section, "column")
    check_groups(cfg["groups"], section)
    return build(values, lambda key: f"{section}.{key}")


def job_reporter(prog: str, section: str, quiet: bool = False) -> Reporter:
    """How a job reports a fit (:class:`dprect.app.spine.Reporter`): every line as a step
    ``[prog] ...``, options named by their config keys (``fit.seed``); the progress steps
    and the heartbeat (:mod:`dprect.app.heartbeat`) too, unless ``quiet`` (the section's
    ``quiet`` key)."""
    from dprect.app.heartbeat import StreamLines
    from dprect.app.spine import Reporter, silent

    def say(message: str) -> None:
        step(prog, message)

    def name(key: str) -> str:
        return f"{section}.{key}"

    if quiet:
        return Reporter(say=say, progress=silent, name=name)
    # the heartbeat's lines are steps too (``[prog] ...``, :func:`step`)
    return Reporter(say=say, progress=say, name=name, tick=StreamLines("stdout", f"[{prog}] "))


__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_SPARK",
    "SECTIONS",
    "SPARK_OPTIONS",
    "ConfigError",
    "Option",
    "apply_override",
    "build_parser",
    "check_config_apart",
    "check_groups",
    "check_value",
    "config_grid",
    "config_label",
    "config_labels",
    "describe_failure",
    "exit_now",
    "job_main",
    "job_reporter",
    "job_text",
    "load_config",
    "plain",
    "quiet_library_logs",
    "report_error",
    "request_options",
    "require_keys",
    "run_job",
    "run_options",
    "section_values",
    "step",
    "table_options",
    "table_settings",
]
