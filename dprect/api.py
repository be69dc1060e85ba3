"""The public entry points: :func:`fit` (in-memory), :func:`fit_engine` (any engine) and
:func:`nonprivate_bounding_box` (a non-private reference)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dprect.accounting import ADD_REMOVE
from dprect.algorithms import run_composition, run_nonprivate_bounding_box, run_randmargins
from dprect.domains import Domain, FloatOrder, parse_grid_spec
from dprect.engine import Engine
from dprect.errors import InputDataError, ParameterError
from dprect.numpy_engine import NumpyEngine
from dprect.planner import Plan, plan
from dprect.randomness import RandomSource
from dprect.result import FitResult

GridArg = Domain | Sequence[Domain] | str | None


def resolve_domains(grid: GridArg, features: list[str]) -> list[Domain]:
    """Domains for ``features`` from a Domain (same for all), a list (one per feature), a
    ``--grid`` string, or None (the float-order domain for all)."""
    if grid is None or isinstance(grid, str):
        return parse_grid_spec(grid, features)
    if isinstance(grid, Domain):
        return [grid for _ in features]
    domains = list(grid)
    if len(domains) != len(features):
        raise ParameterError(
            f"grid has {len(domains)} domains but there are {len(features)} features")
    for i, d in enumerate(domains):
        if not isinstance(d, Domain):
            raise ParameterError(f"grid[{i}] must be a Domain, got {d!r}")
    return domains


def feature_names(features: Sequence[str] | None, dims: int) -> list[str]:
    """Feature names (x0, x1, … by default); duplicates are refused."""
    if features is None:
        return [f"x{j}" for j in range(dims)]
    names = [str(f) for f in features]
    if len(names) != dims:
        raise ParameterError(f"features has {len(names)} names but X has {dims} columns")
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ParameterError(f"feature {n!r} is named twice")
        seen.add(n)
    return names


INVALID_ROWS = ("drop", "error")


def positive_rows(X: object, y: object, names: Sequence[str] | None = None,
                  invalid_rows: str = "error") -> np.ndarray:
    """Validate (X, y) and return the positive rows of X as float64.

    Raises :class:`InputDataError` naming the problem: X not 2-D, no feature column,
    non-numeric values, y of the wrong length, labels other than 0/1. Rows with a NaN or
    ±inf feature are refused (``invalid_rows="error"``) or dropped (``"drop"``): dropping
    is row-local — a neighbouring table stays neighbouring — so it costs no privacy.
    Error messages never carry counts or values of the data.
    """
    if invalid_rows not in INVALID_ROWS:
        raise ParameterError(f"invalid_rows must be one of {', '.join(INVALID_ROWS)}; "
                             f"got {invalid_rows!r}")
    try:
        X_arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputDataError(f"X must hold numbers only: {exc}") from None
    if X_arr.ndim != 2:
        raise InputDataError(f"X must be a 2-D array (rows × features), got shape {X_arr.shape}")
    if X_arr.shape[1] == 0:
        raise InputDataError("X has no feature columns")
    y_arr = np.asarray(y)
    if y_arr.ndim != 1 or len(y_arr) != len(X_arr):
        raise InputDataError(
            f"y must be 1-D with one label per row of X ({len(X_arr)}), got shape {y_arr.shape}")
    if y_arr.dtype == bool:
        labels = y_arr
    else:
        try:
            y_num = y_arr.astype(np.float64)
        except (TypeError, ValueError):
            raise InputDataError("labels must be 0 or 1; found non-numeric labels") from None
        if not np.isin(y_num, (0.0, 1.0)).all():
            raise InputDataError("labels must be 0 or 1; the label column holds other values "
                                 "(or nulls)")
        labels = y_num == 1.0
    finite = np.isfinite(X_arr)
    if not finite.all():
        if invalid_rows == "drop":
            keep = finite.all(axis=1)
            return X_arr[labels & keep]
        j = int(np.argmax(~finite.all(axis=0)))
        name = names[j] if names is not None else f"column {j}"
        raise InputDataError(f"feature {name} has null, NaN or infinite values "
                             "(the 'drop' invalid-rows policy drops such rows)")
    return X_arr[labels]


def fit_engine(
    engine: Engine,
    domains: list[Domain],
    features: list[str],
    *,
    epsilon: float,
    delta: float,
    method: str = "auto",
    beta: float = 1e-4,
    accounting: str = "refined",
    shape: str = "general",
    margin_law: str = "staircase",
    neighbouring: str = ADD_REMOVE,
    seed: int | None = None,
    rng: RandomSource | None = None,
    trace: list | None = None,
) -> FitResult:
    """Plan from the budget, run the chosen method on ``engine``, and package the result."""
    the_plan = plan(epsilon=epsilon, delta=delta, domains=domains, beta=beta, method=method,
                    accounting=accounting, shape=shape, margin_law=margin_law,
                    neighbouring=neighbouring)
    if rng is None:
        rng = RandomSource(seed=seed)
    elif seed is not None:
        raise ParameterError("give either seed or rng, not both")
    return run_plan(engine, domains, features, the_plan, rng, trace=trace)


def run_plan(engine: Engine, domains: list[Domain], features: list[str], the_plan: Plan,
             rng: RandomSource, trace: list | None = None) -> FitResult:
    """Run an already-made plan on an engine."""
    chosen = the_plan.chosen
    if chosen.method == "randmargins":
        rect = run_randmargins(engine, domains, chosen, rng, trace=trace)
    else:
        rect = run_composition(engine, domains, chosen, rng, trace=trace)
    lower, upper = rect.to_units(domains)
    return FitResult(
        features=list(features), lower=lower, upper=upper,
        lower_index=list(rect.lo), upper_index=list(rect.hi), domains=list(domains),
        method=chosen.method, privacy=chosen.guarantee,
        parameters=the_plan.to_json(), seeded=rng.seeded,
    )


def _in_memory(X: object, y: object, grid: GridArg, features: Sequence[str] | None
               ) -> tuple[list[str], list[Domain], NumpyEngine]:
    """Validate (X, y), name the features, resolve their domains and load the positives
    into a :class:`NumpyEngine` (shared by :func:`fit` and the bounding box)."""
    X_arr = np.asarray(X)
    names = feature_names(features, X_arr.shape[1]) if X_arr.ndim == 2 else None
    X_pos = positive_rows(X_arr, y, names)  # raises for anything that is not 2-D
    assert names is not None
    domains = resolve_domains(grid, names)
    return names, domains, NumpyEngine.from_features(X_pos, domains)


def fit(
    X: object,
    y: object,
    *,
    grid: GridArg = None,
    epsilon: float,
    delta: float,
    method: str = "auto",
    beta: float = 1e-4,
    seed: int | None = None,
    features: Sequence[str] | None = None,
    accounting: str = "refined",
    shape: str = "general",
    margin_law: str = "staircase",
    neighbouring: str = ADD_REMOVE,
) -> FitResult:
    """Learn an (ε, δ)-DP axis-aligned rectangle around the positive rows of X.

    Parameters
    ----------
    X, y : rows × features array and its 0/1 labels. Only rows with y = 1 are used.
    grid : per-feature public domains (:class:`~dprect.Grid`, :class:`~dprect.IntegerRange`,
        :class:`~dprect.FloatOrder`), one for all, a list, a ``--grid`` string, or None for
        the float-order domain (no bounds needed).
    epsilon, delta : the total budget (ε̃, δ̃).
    method : ``auto`` (the planner picks the smaller predicted error), ``randmargins`` or
        ``composition``.
    beta : failure target of the whole run (any interior-point call missing its input).
    seed : for tests and reproducibility only — a seeded run is not private against anyone
        who knows the seed, and its result says so. Default: OS entropy.
    accounting : ``refined`` (design note §5) or ``paper`` (the paper's statement).
    shape : ``general`` (R = 2d rounds) or ``origin`` (the paper's origin-anchored class).
    neighbouring : ``add-remove`` (default) or ``replace-one`` (via group privacy).
    """
    names, domains, engine = _in_memory(X, y, grid, features)
    return fit_engine(engine, domains, names, epsilon=epsilon, delta=delta, method=method,
                      beta=beta, accounting=accounting, shape=shape, margin_law=margin_law,
                      neighbouring=neighbouring, seed=seed)


def nonprivate_bounding_box(X: object, y: object, *, grid: GridArg = None,
                            features: Sequence[str] | None = None) -> FitResult:
    """The exact bounding box of the positives, on the same grid. **NOT private.**"""
    names, domains, engine = _in_memory(X, y, grid, features)
    rect = run_nonprivate_bounding_box(engine, domains)
    lower, upper = rect.to_units(domains)
    params: dict[str, Any] = {"note": "exact bounding box; no noise, no privacy"}
    return FitResult(list(names), lower, upper, list(rect.lo), list(rect.hi), domains,
                     "nonprivate-bounding-box", None, params, seeded=False)


__all__ = ["FloatOrder", "fit", "fit_engine", "nonprivate_bounding_box", "run_plan"]
