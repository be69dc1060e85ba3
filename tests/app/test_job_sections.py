"""The product jobs' config sections read through one set of checks
(:mod:`dprect.app.jobs_support`: ``require_keys``, ``config_grid``, ``check_groups``,
``table_settings``): the first refusal, its wording (``section.key``) and what a mapping
or a list in YAML becomes are the same in every job. No Spark: the jobs are imported (they
import pyspark, not its JVM) and only their settings are built.
"""

from __future__ import annotations

from types import ModuleType

import describe
import fit_rectangle
import private_bounds
import pytest

from dprect.app.aggregate_flow import bounds_domains
from dprect.app.jobs_support import ConfigError, config_grid, section_values
from dprect.core.errors import ParameterError

TABLE_JOBS = [private_bounds, describe]


def _section(job: ModuleType, **values: object) -> dict[str, object]:
    base = {"input": "t.csv", "columns": ["a", "b"], "epsilon": 1.0, "output": "o.json"}
    return section_values({job.SECTION: {**base, **values}}, job.SECTION, job.OPTIONS)


@pytest.mark.parametrize("job", TABLE_JOBS, ids=lambda j: j.SECTION)
def test_a_missing_key_is_refused_first_and_named_by_its_section(job: ModuleType) -> None:
    cfg = _section(job, groups=[{"x": 1}])  # bad groups, but a key is missing first
    for key in ("input", "columns", "epsilon", "output"):
        with pytest.raises(ConfigError, match=rf"^{job.SECTION}\.{key} is required$"):
            job.settings({**cfg, key: None})
    with pytest.raises(ConfigError, match=rf"^{job.SECTION}\.groups must be a list of "
                                          r"values or a comma-separated string"):
        job.settings(cfg)


@pytest.mark.parametrize("job", TABLE_JOBS, ids=lambda j: j.SECTION)
def test_groups_from_a_yaml_list_or_a_string_are_the_same(job: ModuleType) -> None:
    listed = job.settings(_section(job, group_by="g", groups=[1, 2, "x"]))
    spelled = job.settings(_section(job, group_by="g", groups="1,2,x"))
    assert listed.groups == spelled.groups == ["1", "2", "x"]


@pytest.mark.parametrize("job", TABLE_JOBS, ids=lambda j: j.SECTION)
def test_a_list_spelled_with_an_empty_entry_is_refused_as_on_the_command_line(
        job: ModuleType) -> None:
    """``--set columns=a,,b`` (s39-edges2): skipped silently before; refused by the
    command line's own check (options.comma_entries), naming the key."""
    assert _section(job, columns="a, b")["columns"] == ["a", "b"]
    for spelled in ("a,,b", "a,b,", " "):
        with pytest.raises(ParameterError, match=rf"^{job.SECTION}\.columns: an empty name "):
            _section(job, columns=spelled)


@pytest.mark.parametrize("job", TABLE_JOBS, ids=lambda j: j.SECTION)
def test_a_public_list_beside_the_selection_is_kept_in_the_job_too(job: ModuleType) -> None:
    """docs/privacy.md §18: ``groups`` with ``select_groups: true`` — the listed groups
    and the selection both, one composed guarantee (the CLI's values, the same checks)."""
    both = job.settings(_section(job, group_by="g", groups=[1, "x"], select_groups=True,
                                 selection_epsilon=0.5, selection_delta=1e-6))
    alone = job.settings(_section(job, group_by="g", select_groups=True,
                                  selection_epsilon=0.5, selection_delta=1e-6))
    assert both.groups == ["1", "x"] and alone.groups is None
    assert both.selection is not None and both.guarantee == alone.guarantee


def test_a_public_class_list_beside_the_selection_is_kept_in_the_fit_job() -> None:
    """docs/privacy.md §18: the fit job's ``classes`` with ``select_groups: true`` — the
    listed classes and the selection both, the selection's composed charge (the CLI's
    values and checks: tests/app/test_class_lists_combined.py)."""
    from dprect.app.classes_flow import ClassesProduct

    base = {"input": "t.csv", "features": ["a"], "label": "y", "epsilon": 1.0,
            "delta": 1e-6, "output": "o.json", "select_groups": True,
            "selection_epsilon": 0.5, "selection_delta": 1e-6}

    def product(**values: object) -> ClassesProduct:
        cfg = section_values({"fit": {**base, **values}}, "fit", fit_rectangle.OPTIONS)
        return ClassesProduct(fit_rectangle.settings(cfg))

    both, alone = product(classes=[1, "x"]), product()
    assert both.names == ["1", "x"] and alone.names == []
    assert both.settings.selection is not None
    assert both.charge().guarantee == alone.charge().guarantee


def test_a_bounds_grid_mapping_is_the_grid_string_and_is_checked_before_groups() -> None:
    mapped = private_bounds.settings(_section(private_bounds,
                                              grid={"a": "0:10:64", "b": "floatbins:8"}))
    assert mapped.domains == bounds_domains("a=0:10:64,b=floatbins:8", ["a", "b"])
    assert mapped.domains != bounds_domains(None, ["a", "b"])
    with pytest.raises(ConfigError, match=r"^bounds\.grid must be a string or a mapping "
                                          r"column -> spec, got \[1\]$"):
        private_bounds.settings(_section(private_bounds, grid=[1], groups=[{"x": 1}]))


def test_describe_has_no_grid_and_the_fit_names_features() -> None:
    assert "grid" not in describe.OPTIONS and "grid" in private_bounds.OPTIONS
    with pytest.raises(ConfigError, match=r"^fit\.grid must be a string or a mapping "
                                          r"feature -> spec, got 3$"):
        config_grid(3, "fit", "feature")
    cfg = section_values({"fit": {"features": ["a"], "label": "y", "epsilon": 1.0,
                                  "delta": 0.0, "output": "o.json"}}, "fit",
                         fit_rectangle.OPTIONS)
    with pytest.raises(ConfigError, match=r"^fit\.input is required$"):
        fit_rectangle.settings(cfg)


def test_a_negative_fit_seed_is_refused_with_the_settings() -> None:
    """``fit.seed: -1`` is refused with the other settings, before Spark starts and
    before the ledger (s50-fitedge: on main the fit's settings took it unchecked and the
    run charged its ledger before the noise refused it)."""
    cfg = section_values({"fit": {"input": "t.csv", "features": ["a"], "label": "y",
                                  "epsilon": 1.0, "delta": 0.0, "output": "o.json",
                                  "seed": -1}}, "fit", fit_rectangle.OPTIONS)
    with pytest.raises(ParameterError, match=r"^fit\.seed must be a non-negative integer, "
                                             r"got -1$"):
        fit_rectangle.settings(cfg)
