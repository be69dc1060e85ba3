"""What a run asks for: the budget and the fit options, typed and validated once.

This module is the one place where every option of a plan or a fit has its allowed values
(the :class:`~enum.StrEnum` s below) and its default (the field defaults of
:class:`PlanRequest` and :class:`FitRequest`). Everything else reads them from here:
:func:`dprect.plan` and :func:`dprect.fit` build a request from their keyword arguments,
the command line's choices and defaults and the fit job's option table are generated from
:func:`option_specs`, and the planner and the engines take the request (or the plan made
from it) instead of loose strings.

* :class:`PlanRequest` — the budget: ε, δ, method, β, accounting, shape, margin law,
  neighbouring. All the planner needs besides the features' domains.
* :class:`FitRequest` — a :class:`PlanRequest` plus the options of reading a table:
  the invalid-row policy and the positive label.
* :class:`BoundsRequest` — a private-bounds run: ε, δ, coverage, β, neighbouring and
  the level of its noise intervals (:mod:`dprect.core.intervals`; as
  :class:`DescribeRequest`'s).

A request is frozen and valid from the moment it exists: the constructor accepts an enum
member or its string value and raises :class:`~dprect.core.errors.ParameterError` naming
the option otherwise (strings become enum members, numbers become floats). Nothing here
looks at data.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Self, TypedDict, TypeVar, get_type_hints

from dprect.core.errors import ParameterError
from dprect.core.intervals import DEFAULT_LEVEL, check_level
from dprect.core.labels import LabelText, PositiveLabel, check_classes, check_label_value
from dprect.core.validation import check_delta, check_epsilon, check_open_unit, repeat_at


class Choice(enum.StrEnum):
    """An option with a fixed set of values (each member's value is its spelling)."""

    @classmethod
    def parse(cls, value: object, name: str) -> Self:
        """The member spelled ``value`` (or ``value`` itself); :class:`ParameterError`
        naming the option and its values otherwise."""
        if isinstance(value, str):
            try:
                return cls(value)
            except ValueError:
                pass
        raise ParameterError(f"{name} must be one of {', '.join(cls.values())}; got {value!r}")

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """The allowed spellings, in order."""
        return tuple(m.value for m in cls)


class Method(Choice):
    """``auto``: the planner runs both methods' plans and keeps the smaller predicted
    error; ``randmargins``; ``composition`` (the baseline)."""

    AUTO = "auto"
    RANDMARGINS = "randmargins"
    COMPOSITION = "composition"
    #: per-feature private bounds aimed at a target of clipped rows (issue #44,
    #: :mod:`dprect.core.quantile_box`)
    QUANTILES = "quantiles"


class Accounting(Choice):
    """How RandMargins' privacy is accounted: ``refined`` (docs/privacy.md) or ``paper``
    (the paper's statement, with its Laplace margin law)."""

    REFINED = "refined"
    PAPER = "paper"


class Shape(Choice):
    """``general`` rectangles (2d rounds) or the paper's ``origin``-anchored class
    (d rounds)."""

    GENERAL = "general"
    ORIGIN = "origin"


class MarginLawName(Choice):
    """RandMargins' margin law: ``staircase`` or ``laplace``."""

    STAIRCASE = "staircase"
    LAPLACE = "laplace"


class Neighbouring(Choice):
    """The neighbouring relation of the guarantee."""

    ADD_REMOVE = "add-remove"
    REPLACE_ONE = "replace-one"


class InvalidRows(Choice):
    """Rows with a null, NaN or ±inf feature: ``drop`` them (row-local, inside the
    guarantee) or refuse the table (``error``: a data-dependent refusal, OUTSIDE the
    privacy guarantee)."""

    DROP = "drop"
    ERROR = "error"


#: the help of ``interval_level`` (the one option of both products' noise intervals)
INTERVAL_HELP = ("stated level of the noise interval released with each statistic "
                 "(post-processing: no budget)")


def _help(text: str) -> dict[str, str]:
    """A request field's one-line help (the CLI's and the job's), as field metadata."""
    return {"help": text}


_set = object.__setattr__  # frozen dataclasses normalise their fields in __post_init__

#: The smallest ε a run accepts (a run's total ε, and describe's ``query_epsilon``).
#: Below it no table carries a signal — describe's plan needs more than 10^15 rows per
#: group, a fit's interior point far more values per round than its limit — and the
#: floats of a plan and a release (1/ε; noise of scale 1/ε times a bound near the float
#: range) leave the float range as ε nears 10^-300. A smaller ε is refused when the
#: request is made, before anything is read or reserved (docs/operations.md, "Bad input").
MIN_EPSILON = 1e-12


def check_run_epsilon(value: object, name: str = "epsilon") -> float:
    """A run's ε: finite, > 0 (:func:`~dprect.core.validation.check_epsilon`) and at
    least :data:`MIN_EPSILON`; :class:`ParameterError` naming the option otherwise."""
    eps = check_epsilon(value, name)
    if eps < MIN_EPSILON:
        raise ParameterError(f" must be at least {MIN_EPSILON:g} (no table has the rows "
                             f"to carry a signal below it), got {value!r}", parameter=name)
    return eps


@dataclass(frozen=True)
class PlanRequest:
    """The budget of a run: everything the planner needs besides the domains."""

    epsilon: float = field(metadata=_help("total epsilon of the run (required)"))
    delta: float = field(metadata=_help(
        "total delta of the run (required; 0 for pure DP: composition, or RandMargins "
        "with k = R)"))
    method: Method = field(default=Method.AUTO, metadata=_help(
        "auto (the smaller predicted error), randmargins, composition or quantiles (per-"
        "feature private bounds aimed at a target miss: degrades gracefully on small "
        "tables)"))
    beta: float = field(default=1e-4, metadata=_help("failure target of the whole run"))
    accounting: Accounting = field(default=Accounting.REFINED, metadata=_help(
        "refined or paper (the paper's statement)"))
    shape: Shape = field(default=Shape.GENERAL, metadata=_help(
        "general (2d rounds) or origin (the paper's origin-anchored class)"))
    margin_law: MarginLawName = field(default=MarginLawName.STAIRCASE, metadata=_help(
        "RandMargins' margin law: staircase or laplace"))
    neighbouring: Neighbouring = field(default=Neighbouring.ADD_REMOVE, metadata=_help(
        "add-remove or replace-one (by group privacy)"))
    continuous: tuple[str, ...] = field(default=(), metadata=_help(
        "features declared free of ties (no two rows share a value): RandMargins gives "
        "them no tie bits, hence smaller windows. A utility assumption only: the privacy "
        "guarantee holds whether or not it is true"))
    target_miss: float = field(default=0.0, metadata=_help(
        "the quantiles method's target share of positives outside the rectangle, in "
        "[0, 1): each side aims at the larger of target_miss*N/(sides) clipped rows and "
        "the default aim, min(1/50, 1/(4*sides)) of N where N and epsilon allow it, N your "
        "--positives or auto's private count; a larger target trades positives outside "
        "for a tighter box"))

    def __post_init__(self) -> None:
        _set(self, "epsilon", check_run_epsilon(self.epsilon))
        _set(self, "delta", check_delta(self.delta, "delta"))
        _set(self, "beta", check_open_unit(self.beta, "beta"))
        for f in dataclasses.fields(self):
            if isinstance(f.default, Choice):
                _set(self, f.name, type(f.default).parse(getattr(self, f.name), f.name))
        _set(self, "continuous", check_names(self.continuous, "continuous"))
        _set(self, "target_miss", check_delta(self.target_miss, "target_miss"))  # [0, 1)

    def budget(self) -> PlanRequest:
        """The budget alone (a :class:`FitRequest` without its reading options)."""
        return PlanRequest(**{f.name: getattr(self, f.name)
                              for f in dataclasses.fields(PlanRequest)})

    def to_json(self) -> dict[str, Any]:
        """The budget as plain JSON values, in the order of a plan's ``request``."""
        out: dict[str, Any] = {
            "epsilon": self.epsilon, "delta": self.delta, "beta": self.beta,
            "method": self.method.value, "accounting": self.accounting.value,
            "shape": self.shape.value, "margin_law": self.margin_law.value,
            "neighbouring": self.neighbouring.value}
        if self.continuous:  # absent when empty: requests without it print as before
            out["continuous"] = list(self.continuous)
        if self.target_miss:  # likewise
            out["target_miss"] = self.target_miss
        return out


def check_names(value: object, name: str) -> tuple[str, ...]:
    """A list of feature names: None (none), one comma-separated string, or a sequence of
    strings; each named once."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ParameterError(f" must be a list of feature names, got {value!r}",
                             parameter=name)
    names = tuple(str(v) for v in value)
    if (i := repeat_at(list(names))) is not None:
        raise ParameterError(f" names feature {names[i]!r} twice", parameter=name)
    return names


@dataclass(frozen=True)
class FitRequest(PlanRequest):
    """A fit's request: the budget and how the table's rows are read."""

    invalid_rows: InvalidRows = field(default=InvalidRows.DROP, metadata=_help(
        "rows with a null, NaN or infinite feature: drop them (row-local, costs no "
        "privacy) or refuse the table (error: a refusal that depends on the data, OUTSIDE "
        "the privacy guarantee)"))
    positive_label: PositiveLabel | LabelText = field(default=1, metadata=_help(
        "label of the positive rows, read against the label column's type: a number, "
        "true/false (or yes/no) or a string; every other row, null labels included, is a "
        "negative"))
    classes: tuple[PositiveLabel | LabelText, ...] | None = field(default=None, metadata=_help(
        "the PUBLIC list of classes (never read from the data): one rectangle per class, "
        "all for ONE charge (the classes' rows are disjoint: parallel composition); a "
        "class's negatives are every other row, unlisted classes and null labels included; "
        "replaces the positive label"))

    def __post_init__(self) -> None:
        super().__post_init__()
        _set(self, "positive_label", check_label_value(self.positive_label))
        if self.classes is not None:
            _set(self, "classes", tuple(check_classes(self.classes)))
            if not is_default_label(self.positive_label):
                raise label_beside_classes()

    def for_class(self, value: PositiveLabel | LabelText) -> FitRequest:
        """This request with ``value`` as the positive label and no class list: one
        class's run."""
        return dataclasses.replace(self, classes=None, positive_label=value)


def label_beside_classes() -> ParameterError:
    """The refusal of a positive label given beside a class list: the request's (a label
    other than the default itself, :func:`is_default_label`) and the fronts' that know a
    label was given even when it equals the default (app.flow.fit_settings: the command
    line's ``--positive-label``, the fit job's ``fit.positive_label``)."""
    return ParameterError("give classes or a positive label, not both (each class is the "
                          "positive label of its own rectangle)")


def is_default_label(value: object) -> bool:
    """Whether ``value`` is the positive label's default itself (the int 1): the option
    left out, which is all a class list or a private selection of classes may come with
    (each class is the positive label of its own rectangle). A label given as text (the
    command line's ``--positive-label 1``) or of another type (``1.0``, ``True``) is a
    label given, and refused beside them alike (FitRequest, app.flow.fit_selection)."""
    default = next(f.default for f in dataclasses.fields(FitRequest)
                   if f.name == "positive_label")
    return value == default and type(value) is type(default)


#: the coverage is read as a fraction with a denominator at most this (α's at most twice it)
COVERAGE_DENOMINATOR = 10**6


def coverage_alpha(coverage: float) -> Fraction:
    """α = (1 − coverage)/2 as an exact rational.

    The coverage is read as its shortest decimal spelling (0.999 → 999/1000), or, if that
    needs a denominator above :data:`COVERAGE_DENOMINATOR`, as the closest fraction with
    one at most that. A coverage that rounds to 0 or 1 is refused."""
    cov = check_open_unit(coverage, "coverage")
    exact = Fraction(repr(cov))
    if exact.denominator > COVERAGE_DENOMINATOR:
        exact = exact.limit_denominator(COVERAGE_DENOMINATOR)
    if not 0 < exact < 1:
        raise ParameterError(f" must be in (0, 1) at a resolution of "
                             f"1/{COVERAGE_DENOMINATOR:,}, got {coverage!r}",
                             parameter="coverage")
    return (1 - exact) / 2


#: what β bounds in a run of any aggregate statistic (the coverage statement of ``dprect
#: bounds`` is one of them)
ACCURACY_BETA_HELP = "failure probability of the accuracy statements, per group and column"


@dataclass(frozen=True)
class AggregateRequest:
    """The fields both aggregate requests share (:class:`DescribeRequest`,
    :class:`BoundsRequest`), validated on construction: ε, δ, β, the neighbouring relation
    (a :class:`Neighbouring` member, a ``str``) and the intervals' level."""

    epsilon: float = field(metadata=_help("total epsilon of the run, charged once "
                                          "(required)"))
    delta: float = field(default=0.0, metadata=_help("total delta of the run (0: pure DP)"))
    beta: float = field(default=1e-3, metadata=_help(ACCURACY_BETA_HELP))
    neighbouring: Neighbouring = field(default=Neighbouring.ADD_REMOVE, metadata=_help(
        "add-remove or replace-one (by group privacy)"))
    interval_level: float = field(default=DEFAULT_LEVEL, metadata=_help(INTERVAL_HELP))

    def __post_init__(self) -> None:
        _set(self, "epsilon", check_run_epsilon(self.epsilon))
        _set(self, "delta", check_delta(self.delta, "delta"))
        _set(self, "beta", check_open_unit(self.beta, "beta"))
        _set(self, "neighbouring", Neighbouring.parse(self.neighbouring, "neighbouring"))
        _set(self, "interval_level", check_level(self.interval_level))


@dataclass(frozen=True)
class BoundsRequest(AggregateRequest):
    """The public parameters of a private-bounds run (:mod:`dprect.core.bounds`).

    ``coverage``: the target share of rows inside [lower, upper] per column; each side
    targets α = (1 − coverage)/2 clipped rows (:func:`coverage_alpha`). ``beta``: the
    failure probability of the coverage statement (per group; the whole run when
    ungrouped)."""

    beta: float = field(default=1e-3, metadata=_help(
        "failure probability of the coverage statement, per group"))
    coverage: float = field(default=0.999, metadata=_help(
        "share of each column's values the bounds aim to cover"))

    def __post_init__(self) -> None:
        super().__post_init__()
        _set(self, "coverage", check_open_unit(self.coverage, "coverage"))
        coverage_alpha(self.coverage)

    @property
    def alpha(self) -> Fraction:
        """α = (1 − coverage)/2, exactly (:func:`coverage_alpha`)."""
        return coverage_alpha(self.coverage)

    def to_json(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "coverage": self.coverage,
                "beta": self.beta, "neighbouring": self.neighbouring.value,
                "interval_level": self.interval_level}


@dataclass(frozen=True)
class StatisticsRequest(BoundsRequest):
    """The options of ``dprect aggregate`` and its job (``--help``, the config keys):
    :class:`BoundsRequest`'s fields — ``coverage`` is read by the coverage mechanism only
    — with ``beta`` worded for every mechanism the run may draw (the describe query's and
    the quantiles' statements as well as the coverage statement)."""

    beta: float = field(default=1e-3, metadata=_help(ACCURACY_BETA_HELP))


@dataclass(frozen=True)
class DescribeRequest(AggregateRequest):
    """The public parameters of a DP aggregates run (:mod:`dprect.core.aggregates`). Every
    mechanism there is pure (the guarantee is (ε, 0)), so ``delta`` is 0: a δ > 0 would be
    neither used nor charged, and is refused (as the quantiles' and a run of several
    mechanisms' are) rather than accepted as if spent; ``beta`` is the failure probability
    of the plan's accuracy statements (per group and column)."""

    delta: float = field(default=0.0, metadata=_help(
        "0 (the default) or left out: every mechanism is pure, (epsilon, 0)-DP; a delta "
        "> 0 is refused"))

    def __post_init__(self) -> None:
        super().__post_init__()
        check_pure(self.delta, "delta", "the count, sum, mean and their bounds")


def check_pure(delta: object, name: str, what: str) -> None:
    """Refuse a δ other than None or 0 for a run whose mechanisms are all pure (``what``
    names them): it would be neither used nor charged, so accepting it would let a run
    appear to spend a δ it does not. A δ that is no δ at all (outside [0, 1)) is refused
    as such first. Parameters only."""
    if delta is None:
        return
    if check_delta(delta, name) != 0:
        raise ParameterError(f"{name}: {what} are pure (epsilon, 0)-DP: delta is not used "
                             "and not charged; leave it unset or 0")


class BudgetOptions(TypedDict, total=False):
    """:class:`PlanRequest`'s fields as keyword arguments (``epsilon`` and ``delta`` are
    required; the others default as the request says)."""

    epsilon: float
    delta: float
    method: Method | str
    beta: float
    accounting: Accounting | str
    shape: Shape | str
    margin_law: MarginLawName | str
    neighbouring: Neighbouring | str
    continuous: Sequence[str] | str | None
    target_miss: float


class FitOptions(BudgetOptions, total=False):
    """:class:`FitRequest`'s fields as keyword arguments."""

    invalid_rows: InvalidRows | str
    positive_label: PositiveLabel | LabelText


def utc_timestamp(timestamp: str | dt.datetime | dt.date) -> dt.datetime:
    """A Delta snapshot's time as a zone-aware timestamp; a date is its midnight and a
    zone-less value is UTC. Text that is not ISO-8601 is refused (:class:`Source` checks
    it with the other settings, before any engine starts)."""
    if isinstance(timestamp, dt.datetime):
        value = timestamp
    elif isinstance(timestamp, dt.date):
        value = dt.datetime(timestamp.year, timestamp.month, timestamp.day)
    elif isinstance(timestamp, str):
        text = timestamp.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ParameterError(
                f"Delta timestamp {timestamp!r} is not an ISO-8601 date or time "
                "(e.g. 2024-05-01T12:00:00Z)") from None
    else:
        raise ParameterError(f"Delta timestamp must be a string or datetime, got {timestamp!r}")
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def check_snapshot(version: object, timestamp: str | dt.datetime | dt.date | None
                   ) -> dt.datetime | None:
    """A Delta snapshot's settings checked: a version (an integer >= 0) or a timestamp
    (:func:`utc_timestamp`), not both; returns the timestamp as a zone-aware time (None
    without one). Parameters only (:class:`Source` checks them before any engine
    starts)."""
    if version is not None and timestamp is not None:
        raise ParameterError("give a Delta version or a timestamp, not both")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)
                                or version < 0):
        raise ParameterError(f"Delta version must be an integer >= 0, got {version!r}")
    return None if timestamp is None else utc_timestamp(timestamp)


@dataclass(frozen=True)
class Source:
    """The table a run reads, for every product: where, how, and which columns (public
    settings only).

    ``columns`` are the numeric columns the run reads (a fit's features, the columns
    bounds are drawn for); ``label`` is a fit's label column, ``group_by`` the column of
    a run's public groups (bounds); ``format``: parquet, csv or delta (None: from the
    path); ``where`` a row filter, ``version``/``timestamp`` a Delta snapshot (the Spark
    engine's). The names are checked here: at least one column, none twice, neither the
    label nor the group column among them. A fit's messages call the columns features."""

    path: str
    columns: list[str]
    label: str | None = None
    group_by: str | None = None
    format: str | None = None
    where: str | None = None
    version: int | None = None
    timestamp: str | None = None

    def __post_init__(self) -> None:
        names = [str(f) for f in self.columns]
        fit = self.label is not None
        if not names:
            raise ParameterError("give at least one feature column" if fit else
                                 "give at least one column to bound")
        if any(not n.strip() for n in names) or (fit and not str(self.label).strip()):
            # a config's [x, ''] (the command line drops empty entries): refused here,
            # before any engine starts, not by the reader once Spark is up
            what = "a feature or the label" if fit else "a column"
            raise ParameterError(f"{what} is named by an empty name")
        if (i := repeat_at(names)) is not None:
            raise ParameterError(f"{'feature' if fit else 'column'} {names[i]!r} is listed "
                                 "twice")
        if fit and self.label in names:
            raise ParameterError(f"the label column {self.label!r} is also listed as a "
                                 "feature")
        if self.group_by is not None and self.group_by in names:
            raise ParameterError(f"the group column {self.group_by!r} is also listed among "
                                 "the columns")
        check_snapshot(self.version, self.timestamp)  # now, before any engine starts
        object.__setattr__(self, "columns", names)

    @property
    def features(self) -> list[str]:
        """A fit's name for :attr:`columns`."""
        return self.columns

    @property
    def fit_label(self) -> str:
        """A fit's label column (a fit's source always has one)."""
        if self.label is None:
            raise ParameterError("a fit needs a label column")
        return self.label

    def read_columns(self) -> list[str]:
        """Every column a run reads: the numeric ones, then the label or the group
        column."""
        return [*self.columns, *(c for c in (self.label, self.group_by) if c is not None)]

    def settings(self) -> dict[str, Any]:
        """How the table is read, as the results table records it."""
        return {"format": self.format, "where": self.where, "version": self.version,
                "timestamp": self.timestamp}


R = TypeVar("R", bound=PlanRequest)


def make_request(kind: type[R], request: R | None, options: Mapping[str, Any],
                 caller: str | None = None) -> R:
    """``request`` itself, or a new ``kind`` built from keyword ``options`` (not both).

    A missing ε or δ, or an unknown option, is a :class:`TypeError` as for any call,
    naming ``caller`` (the public function the keywords were given to, e.g.
    ``dprect.fit``; default the request's class) and the keyword, as Python names a
    function's own keywords (:func:`keyword_error`)."""
    if request is None:
        if (error := keyword_error(kind, options, caller or kind.__name__)) is not None:
            raise error
        return kind(**options)
    if options:
        raise ParameterError(f"give a request or the options {', '.join(options)}, not both")
    if not isinstance(request, kind):
        raise ParameterError(f"request must be a {kind.__name__}, got "
                             f"{type(request).__name__}")
    return request


def keyword_error(kind: type[Any], options: Mapping[str, Any], caller: str
                  ) -> TypeError | None:
    """The :class:`TypeError` of keyword ``options`` that do not build a ``kind`` (an
    unknown keyword first, then the required ones missing), worded as Python words a
    call's — ``dprect.fit() got an unexpected keyword argument 'epsilonn'``, ``...
    missing 2 required keyword arguments: 'epsilon' and 'delta'`` — naming ``caller``,
    not the request's ``__init__``; None when they build one. From the keywords' names
    only."""
    fields = [f for f in dataclasses.fields(kind) if f.init]
    names = {f.name for f in fields}
    if unknown := [k for k in options if k not in names]:
        return TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
    missing = [f.name for f in fields if f.name not in options
               and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if not missing:
        return None
    quoted = [repr(m) for m in missing]
    listed = quoted[0] if len(quoted) == 1 else \
        f"{', '.join(quoted[:-1])} and {quoted[-1]}"
    plural = "s" if len(missing) > 1 else ""
    return TypeError(f"{caller}() missing {len(missing)} required keyword "
                     f"argument{plural}: {listed}")


T = TypeVar("T")


def request_from(kind: type[T], values: Mapping[str, Any]) -> T:
    """A ``kind`` from the entries of ``values`` that name its fields (a front end's
    parsed arguments or config section); other entries are ignored."""
    names = {f.name for f in dataclasses.fields(kind)}  # type: ignore[arg-type]
    return kind(**{k: v for k, v in values.items() if k in names})


@dataclass(frozen=True)
class OptionSpec:
    """One request field as the command line and the job config present it."""

    name: str  # the field and config key; the flag is --name-with-dashes
    default: Any  # dataclasses.MISSING when required
    choices: tuple[str, ...] | None
    kind: str  # "float", "choice", "label" (a positive label: a number, bool or text) or
    # "labels" (a list of them, or none), "names" (a list of feature names;
    # comma-separated on the command line)
    help: str

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING

    @property
    def plain_default(self) -> Any:
        """The default as a plain value (an enum member's spelling); None if required."""
        if self.required or self.default == ():
            return None
        return self.default.value if isinstance(self.default, Choice) else self.default


def option_specs(kind: type[Any] = FitRequest) -> tuple[OptionSpec, ...]:
    """The fields of a request type (:class:`PlanRequest`, :class:`FitRequest`,
    :class:`BoundsRequest`) with their defaults, allowed values and help."""
    hints = get_type_hints(kind)
    specs = []
    for f in dataclasses.fields(kind):
        choices = f.default.values() if isinstance(f.default, Choice) else None
        specs.append(OptionSpec(
            f.name, f.default, choices,
            "choice" if choices else "float" if hints[f.name] is float
            else "names" if hints[f.name] == tuple[str, ...]
            else "labels" if f.default is None else "label",
            f.metadata["help"]))
    return tuple(specs)


__all__ = [
    "ACCURACY_BETA_HELP",
    "COVERAGE_DENOMINATOR",
    "Accounting",
    "BoundsRequest",
    "BudgetOptions",
    "Choice",
    "DescribeRequest",
    "FitOptions",
    "FitRequest",
    "InvalidRows",
    "MarginLawName",
    "Method",
    "Neighbouring",
    "OptionSpec",
    "PlanRequest",
    "Shape",
    "Source",
    "StatisticsRequest",
    "check_pure",
    "check_snapshot",
    "coverage_alpha",
    "is_default_label",
    "label_beside_classes",
    "make_request",
    "option_specs",
    "request_from",
    "utc_timestamp",
]
