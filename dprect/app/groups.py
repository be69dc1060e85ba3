"""A run's groups: the PUBLIC list of group values, given by the user (``--groups`` or a
file, a config list), never read from the data — the set of values a column holds is
itself a fact about the data (one row can add a value), so releasing "the groups found"
as they are would not be differentially private. Groups are disjoint sets of rows, so a
product run per group composes in parallel: one charge for the whole list.

Without a public list, ``--select-groups`` finds the groups privately
(:func:`group_selection`: the optimal partition selection of
:mod:`dprect.core.group_selection`, at ``--selection-epsilon`` and ``--selection-delta``,
composed with the statistics in one charge; docs/privacy.md §18). The two combine
(``--groups a,b,c --select-groups``): every listed group is released whatever its rows
(public: no selection, no δ), and the selection runs over the OTHER keys of the data only
(:meth:`~dprect.app.table_product.GroupedPrepared.listed_keys` names the keys it leaves
out) — one charge of (ε + ε_s, δ + δ_s) whatever the numbers of listed and kept groups.
The same selection finds the classes of ``fit --select-groups``
(:mod:`dprect.app.classes_flow`): both flows plan it here (:func:`group_selection`), print
it (:func:`selection_lines`), check and record its composition with their own guarantee
(:func:`checked_composition`, :func:`selected_record`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dprect.core.accounting import Guarantee
from dprect.core.errors import ParameterError
from dprect.core.group_selection import (
    SelectionPlan,
    composed,
    plan_selection,
    selection_json,
)
from dprect.core.guarantee_check import check_selected_run
from dprect.core.request import Neighbouring
from dprect.core.validation import is_blank, repeat_at
from dprect.release.sinks import check_public_read


def split_groups(text: str | Sequence[Any]) -> list[str]:
    """Group values from ``--groups`` (comma-separated) or a config list, as text; an
    empty entry (``a,,b``, a trailing comma) is kept, for :func:`check_no_empty_group` to
    refuse."""
    if isinstance(text, str):
        return [t.strip() for t in text.split(",")]
    return [str(v).strip() if not isinstance(v, bool) else str(v).lower() for v in text]


def check_no_empty_group(values: Sequence[str], where: str) -> None:
    """Refuse an empty (or blank) listed group value, wherever the list comes from (the
    command line, a config, the Python API): it was silently skipped from ``a,,b`` but
    read as a value from a list, and an empty CSV cell is null (no group) on both engines,
    so no row could be in it. The list alone is read."""
    if any(map(is_blank, values)):
        raise ParameterError(f"{where} holds an empty group value (e.g. 'a,,b' or a comma "
                             "at an end): list only non-empty values")


def read_groups_file(path: str) -> list[str]:
    """The group values of a file: one per line, surrounding blanks stripped, blank lines
    skipped (UTF-8; a byte-order mark at its start — what Excel's and Notepad's "UTF-8"
    files begin with — is not part of the first value, which would otherwise match no
    row and be released, and charged, as a group without rows)."""
    p = Path(path)
    if not p.is_file():
        raise ParameterError(f"groups file {path!r} does not exist or is not a file")
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ParameterError(f"cannot read groups file {path!r}: it is not UTF-8 text; "
                             "save it as UTF-8, one group value per line") from None
    except OSError as exc:
        raise ParameterError(f"cannot read groups file {path!r}: {type(exc).__name__}"
                             ) from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def public_groups(group_by: str | None, groups: str | Sequence[Any] | None,
                  groups_file: str | None, name: Callable[[str], str] = str,
                  select: bool = False, input: str | None = None) -> list[str] | None:
    """The public list of group values (None without a group column, or when every group
    is found privately: ``select`` without a list). The list must be given — by
    ``groups`` or ``groups_file``, not both — unless the groups are found privately, and
    is never read from the data: the set of values a column holds is itself
    data-dependent. With ``select`` a list is the groups released whatever their rows,
    the selection finding the others (docs/privacy.md §18). A ``groups_file`` that is the
    ``input`` (the data's path), or lies inside its folder (table), is refused before it is
    read (:func:`~dprect.release.sinks.check_public_read`): its lines would be rows."""
    given = groups is not None and (not isinstance(groups, str) or groups.strip())
    if select:
        if group_by is None or not str(group_by).strip():
            raise ParameterError(f"{name('select_groups')} needs {name('group_by')}")
        if not given and groups_file is None:
            return None
    if group_by is None:
        if given or groups_file is not None:
            raise ParameterError(f"{name('groups')} / {name('groups_file')} need "
                                 f"{name('group_by')}")
        return None
    if not str(group_by).strip():
        raise ParameterError(f"{name('group_by')} is an empty column name")
    if given and groups_file is not None:
        raise ParameterError(f"give {name('groups')} or {name('groups_file')}, not both")
    if not given and groups_file is None:
        raise ParameterError(
            f"{name('group_by')} needs the PUBLIC list of group values: {name('groups')} "
            f"v1,v2,... or {name('groups_file')} FILE (the values present in the data are "
            f"data-dependent, so they are never read from it as they are), or "
            f"{name('select_groups')} to find them privately")
    if groups_file is not None:
        if not str(groups_file).strip():  # the current folder, to the operating system
            raise ParameterError(f"{name('groups_file')} is an empty path; give the file "
                                 "of group values, one per line")
        check_public_read(name("groups_file"), groups_file, name("input"), input)
        values = read_groups_file(groups_file)
        where = f"groups file {groups_file!r}"
    else:
        assert groups is not None
        values = split_groups(groups)
        where = name("groups")
    if not values or values == [""]:
        raise ParameterError(f"the list of group values ({where}) is empty")
    check_no_empty_group(values, where)
    if (i := repeat_at(values)) is not None:
        raise ParameterError(f"group value {values[i]!r} is listed twice ({where}): "
                             "list each value once")
    return values


def group_selection(values: Mapping[str, Any], name: Callable[[str], str] = str
                    ) -> SelectionPlan | None:
    """The private group selection a run asks for (``select_groups`` with
    ``selection_epsilon``, ``selection_delta``, under the run's ``neighbouring``), planned
    and checked from public inputs; None without ``select_groups`` (its budget options are
    then refused)."""
    if not values.get("select_groups"):
        for key in ("selection_epsilon", "selection_delta"):
            if values.get(key) is not None:
                raise ParameterError(f"{name(key)} needs {name('select_groups')}")
        return None
    return plan_selection(values.get("selection_epsilon"), values.get("selection_delta"),
                          values.get("neighbouring") or Neighbouring.ADD_REMOVE,
                          (name("selection_epsilon"), name("selection_delta")))


def selection_lines(statistics: Guarantee, selection: SelectionPlan,
                    what: str = "the statistics", listed: int = 0,
                    noun: str = "group(s)") -> list[str]:
    """A run with groups (or classes: ``noun``) found privately: the selection's plan
    (threshold, p_k for a few k), both lists when a public one is given with it
    (``listed`` keys), then the composition with ``what`` runs on the kept keys
    (docs/privacy.md §18)."""
    g = composed(statistics, selection)
    both = [f"plan: {listed} listed {noun} released whatever their rows (public: no "
            "selection, no delta spent on them); every OTHER key of the data found "
            "privately: released only if kept by the selection"] if listed else []
    return [*selection.lines(), *both,
            f"plan: the selection, then {what} on the kept keys only "
            f"(({statistics.epsilon:.6g}, {statistics.delta:.3g})-DP for any set of keys): "
            f"guarantee ({g.epsilon:.6g}, {g.delta:.3g})-DP, {g.neighbouring} (adaptive "
            "composition), charged once whatever the number of keys"]


def checked_composition(statistics: Guarantee, selection: SelectionPlan, listed: int = 0
                        ) -> Guarantee:
    """The run's one charge after a private selection (:func:`composed`), with ``listed``
    public groups beside it, re-derived by the independent check
    (:func:`check_selected_run`) before anything is read."""
    run = composed(statistics, selection)
    check_selected_run(statistics, selection, run, listed)
    return run


def selected_record(record: Mapping[str, Any], statistics: Guarantee,
                    selection: SelectionPlan, kept: int, listed: int = 0,
                    past_cap: int = 0) -> tuple[Guarantee, dict[str, Any]]:
    """A released record after a private selection of ``kept`` keys: the run's composed
    ``privacy``, the statistics' own (``statistics_privacy``) and the ``group_selection``
    (:func:`~dprect.core.group_selection.selection_json`); with the run's guarantee."""
    run = composed(statistics, selection)
    return run, {**record, "privacy": run.to_json(),
                 "statistics_privacy": statistics.to_json(),
                 "group_selection": selection_json(selection, kept, listed, past_cap)}


__all__ = ["check_no_empty_group", "checked_composition", "group_selection", "public_groups",
           "read_groups_file", "selected_record", "selection_lines", "split_groups"]
