"""Caps and spends in a stated neighbouring relation (see "Neighbouring relations" in
:mod:`dprect.release.ledger`).

A replacement is a removal then an addition, so by group privacy of size 2 an add/remove
(ε, δ) guarantee is a replace-one (2ε, (1 + e^ε)·δ) guarantee
(:func:`dprect.core.accounting.replace_one`, docs/privacy.md); a replace-one guarantee
implies nothing under add/remove. :func:`relation_image` is that map, which the ledger's
state and the in-memory :class:`dprect.PrivacyBudget` (release/budget.py) both charge by."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dprect.core.errors import ParameterError
from dprect.core.request import Neighbouring

#: the neighbouring relations a cap is stated in (the request module's spellings)
ADD_REMOVE, REPLACE_ONE = Neighbouring.ADD_REMOVE.value, Neighbouring.REPLACE_ONE.value
RELATIONS = Neighbouring.values()


TOLERANCE = 1e-12  # relative slack when comparing float sums with a cap


@dataclass(frozen=True)
class Budget:
    """An (ε, δ) pair: a cap, a spend, or what remains."""

    epsilon: float
    delta: float

    def to_json(self) -> dict[str, float]:
        return {"epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class Cap(Budget):
    """A cap: an (ε, δ) pair and the neighbouring relation it is stated in."""

    neighbouring: str = ADD_REMOVE

    def to_json(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta,
                "neighbouring": self.neighbouring}


def check_neighbouring(value: str | None) -> str:
    """A neighbouring relation's name (None: add-remove)."""
    if value is None:
        return ADD_REMOVE
    if value not in RELATIONS:
        raise ParameterError(f"neighbouring must be one of {', '.join(RELATIONS)}, got "
                             f"{value!r}")
    return value


def relation_image(epsilon: float, delta: float, relation: str, target: str
                   ) -> tuple[float, float] | None:
    """A run's (ε, δ) stated in ``relation``, in the ``target`` relation (None: none).
    Group privacy's δ (1 + e^ε)·δ is 0 for a pure run whatever ε, and infinite (no
    statement) where e^ε overflows: ``math.exp`` raised OverflowError for ε above ~709.78,
    once a run of such an ε was reserved — at every later load of the ledger (every run,
    ``budget show``, ``budget verify``), the ledger unusable."""
    if relation == target:
        return epsilon, delta
    if relation == ADD_REMOVE and target == REPLACE_ONE:  # group privacy of size 2
        if delta == 0:
            return 2 * epsilon, 0.0
        try:
            grown = math.exp(epsilon)
        except OverflowError:
            return 2 * epsilon, math.inf
        return 2 * epsilon, (1 + grown) * delta
    return None  # replace-one implies nothing under add/remove


def as_cap(cap: Budget | None) -> Cap | None:
    if cap is None or isinstance(cap, Cap):
        return cap
    return Cap(cap.epsilon, cap.delta, ADD_REMOVE)
