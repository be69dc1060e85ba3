"""``dprect.PrivacyBudget``: a budget the Python API shares across calls — it charges each
release and refuses one past its cap before anything is computed.

Every call of the Python API that releases something (``dprect.fit``, ``dprect.fit(...,
classes=)``, ``dprect.bounds``, ``dprect.describe``, ``RectangleClassifier.fit``) is an
(ε, δ)-DP release of its own. Given ``budget=``, a call plans from public inputs, then
**charges** the plan's guarantee to the budget, and only then reads the private part of the
data and draws noise; a charge that would take the spend past the cap raises
:class:`~dprect.release.ledger.BudgetExceededError` and nothing is computed.

**Spend.** The spend is the sum of the charges' (ε, δ): basic composition (Dwork & Roth
2014, Thm 3.16, docs/privacy.md §14), which holds for any adaptively chosen sequence of
releases on the same rows. It is compared with the cap in the cap's neighbouring relation:
an add/remove charge counts under a replace-one cap as its group-privacy image (2ε, (1 +
e^ε)δ); a replace-one charge implies nothing under add/remove and is refused by an
add/remove cap (the ledger's rule, :func:`dprect.release.ledger.Ledger.reserve`, reused
here). A charge is never refunded: a call that fails after its charge stays charged (fail
closed), as in the ledger.

**Two backings.**

* in memory (``PrivacyBudget(epsilon, delta)``): the charges live in the object, guarded
  by a lock (threads may share it). It refuses to be pickled, so a budget cannot be copied
  silently into another process (``n_jobs`` > 1 with a process backend): use the ledger
  there;
* the Delta ledger (``PrivacyBudget.ledger(path, dataset, ...)``): each charge is a
  ``reserve`` of a fresh run id in :mod:`dprect.release.ledger` (race-free across
  processes; its cap and the optional cap given here both hold), released with the
  call's result JSON or recorded as ``fail`` with the error's type only.

**Shared by reference.** scikit-learn's ``clone`` deep-copies an estimator's parameters;
``copy.deepcopy`` and ``copy.copy`` of a budget return the budget itself, so every clone of
a :class:`~dprect.app.classifier.RectangleClassifier` (cross-validation folds, a grid
search's candidates, the final refit) charges the same budget.

**Same data.** :meth:`PrivacyBudget.seen` keeps a keyed hash (HMAC-SHA256 under a random
key drawn when the budget is made and never shown) of each training set it is given, and
tells whether the same bytes were given before. The digests cannot be inverted or compared
with anything outside this process without the key; the only thing they reveal is whether
two of the caller's own inputs are byte-identical — which the caller holding them can see
anyway.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

import numpy as np

from dprect.core.accounting import ADD_REMOVE, Guarantee
from dprect.core.errors import ParameterError
from dprect.core.validation import check_epsilon, check_id_text, check_open_unit
from dprect.release.ledger import (
    Budget,
    BudgetExceededError,
    Cap,
    Ledger,
    check_neighbouring,
    relation_image,
)
from dprect.release.ledger.caps import TOLERANCE  # the ledger's relative slack at the cap


class PrivacyBudgetWarning(UserWarning):
    """A release spends budget the caller may not expect: a classifier fitted again on
    the same data (each fit is a new (ε, δ) release)."""


@dataclass(frozen=True)
class Spend:
    """One charge of an in-memory budget: its guarantee and what it was for."""

    guarantee: Guarantee
    what: str


class _Ticket:
    """A charge in progress: :meth:`record` the released result (the ledger stores it)."""

    def __init__(self, budget: PrivacyBudget, run_id: str | None) -> None:
        self._budget, self.run_id = budget, run_id

    def record(self, result: Any) -> None:
        self._budget._record(self.run_id, result)


def _result_json(result: Any) -> dict[str, Any]:
    for name in ("to_json", "to_dict"):
        method = getattr(result, name, None)
        if callable(method):
            out = method()
            if isinstance(out, dict):
                return out
    return {"method": type(result).__name__}


class PrivacyBudget:
    """A privacy budget (ε, δ) shared by the Python API's calls (module docstring).

    Parameters
    ----------
    epsilon, delta : the cap: the most the calls charged to this budget may spend in
        total (basic composition). ``None`` for both: no cap of its own — the spend is
        only counted (a ledger's own cap still holds).
    neighbouring : the relation the cap is stated in (``add-remove``, default, or
        ``replace-one``).

    Pass it as ``budget=`` to :func:`dprect.fit`, :func:`dprect.bounds`,
    :func:`dprect.describe` or ``dprect.RectangleClassifier(..., budget=)``. ``spent``
    and ``remaining`` report the totals; ``charges`` the in-memory list.
    """

    def __init__(self, epsilon: float | None = None, delta: float | None = None, *,
                 neighbouring: str = ADD_REMOVE) -> None:
        relation = check_neighbouring(neighbouring)
        if (epsilon is None) != (delta is None):
            raise ParameterError("give both the cap's epsilon and delta, or neither")
        self.cap: Cap | None = None
        if epsilon is not None and delta is not None:
            self.cap = Cap(check_epsilon(epsilon, "budget epsilon"),
                           check_open_unit(delta, "budget delta"), relation)
        self.neighbouring = relation
        self._ledger: Ledger | None = None
        self.dataset: str | None = None
        self._charges: list[Spend] = []
        self._lock = threading.Lock()
        self._key = os.urandom(32)
        self._digests: set[bytes] = set()

    @classmethod
    def ledger(cls, path: str, dataset: str, epsilon: float | None = None,
               delta: float | None = None, *, neighbouring: str = ADD_REMOVE
               ) -> PrivacyBudget:
        """A budget backed by the Delta ledger at ``path`` (made by ``dprect budget
        init``): each charge reserves a new run id for ``dataset``; the ledger's cap and
        the cap given here (if any) both hold."""
        budget = cls(epsilon, delta, neighbouring=neighbouring)
        if not dataset:
            raise ParameterError("a ledger-backed budget needs a dataset id")
        check_id_text(dataset, "dataset")  # before the ledger is read
        ledger = Ledger(str(path))
        ledger.status(dataset)  # a missing or damaged ledger is refused now, not at a charge
        budget._ledger, budget.dataset = ledger, dataset
        return budget

    # -- shared by reference, never copied ---------------------------------------------------
    def __copy__(self) -> PrivacyBudget:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> PrivacyBudget:
        return self

    def __reduce__(self) -> Any:
        if self._ledger is None:
            raise ParameterError("an in-memory PrivacyBudget cannot be copied to another "
                                 "process (its charges would be lost): run with n_jobs=1 or "
                                 "use PrivacyBudget.ledger(...)")
        cap = self.cap
        return (_ledger_budget, (self._ledger.path, self.dataset,
                                 None if cap is None else cap.epsilon,
                                 None if cap is None else cap.delta,
                                 self.neighbouring))

    # -- the totals --------------------------------------------------------------------------
    @property
    def charges(self) -> list[Spend]:
        """The in-memory charges, in order (empty for a ledger-backed budget)."""
        with self._lock:
            return list(self._charges)

    def spent(self) -> Budget | None:
        """The total spend in the cap's relation (None: unbounded there — replace-one
        charges under an add/remove cap)."""
        if self._ledger is not None:
            assert self.dataset is not None
            return self._ledger.spent(self.dataset, self.neighbouring)
        with self._lock:
            return self._sum(self._charges, self.neighbouring)

    def remaining(self) -> Budget | None:
        """The cap minus the spend (None without a cap of its own)."""
        spent = self.spent()
        if self.cap is None:
            return None
        if spent is None:
            return Budget(0.0, 0.0)
        return Budget(max(self.cap.epsilon - spent.epsilon, 0.0),
                      max(self.cap.delta - spent.delta, 0.0))

    @staticmethod
    def _sum(charges: Sequence[Spend], relation: str) -> Budget | None:
        eps = delta = 0.0
        for c in charges:
            image = relation_image(c.guarantee.epsilon, c.guarantee.delta,
                                   c.guarantee.neighbouring, relation)
            if image is None:
                return None
            eps, delta = eps + image[0], delta + image[1]
        return Budget(eps, delta)

    # -- charging ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def charge(self, guarantee: Guarantee, what: str, features: Sequence[str] = ()
               ) -> Iterator[_Ticket]:
        """Charge ``guarantee`` (a plan's, made from public inputs only) for a release
        named ``what``; refused with :class:`BudgetExceededError` past the cap, before the
        body runs. The body computes the result and records it on the yielded ticket (a
        ledger stores it). A body that raises stays charged (a ledger records its error's
        type only, never its text)."""
        if self._ledger is None:
            self._charge_memory(guarantee, what)
            yield _Ticket(self, None)
            return
        assert self.dataset is not None
        run_id = uuid4().hex
        self._ledger.reserve(self.dataset, run_id, epsilon=guarantee.epsilon,
                             delta=guarantee.delta, method=what, features=list(features),
                             bound=guarantee.bound, neighbouring=guarantee.neighbouring,
                             cap=self.cap)
        try:
            yield _Ticket(self, run_id)
        except BaseException as exc:
            self._ledger.fail(self.dataset, run_id,
                              f"{type(exc).__name__} (its message is not recorded)")
            raise

    def _charge_memory(self, guarantee: Guarantee, what: str) -> None:
        with self._lock:
            cap = self.cap
            if cap is not None:
                if relation_image(1.0, 0.0, guarantee.neighbouring, cap.neighbouring) is None:
                    raise ParameterError(
                        f"the budget's cap is stated under {cap.neighbouring} neighbours, "
                        f"and a {guarantee.neighbouring} guarantee implies nothing under "
                        f"{cap.neighbouring}: run with neighbouring {cap.neighbouring}")
                total = self._sum([*self._charges, Spend(guarantee, what)], cap.neighbouring)
                assert total is not None  # every charge is checked against the relation
                if total.epsilon > cap.epsilon * (1 + TOLERANCE) or \
                        total.delta > cap.delta * (1 + TOLERANCE):
                    spent = self._sum(self._charges, cap.neighbouring)
                    assert spent is not None
                    raise BudgetExceededError(
                        f"privacy budget cap exceeded: spent (epsilon={spent.epsilon:g}, "
                        f"delta={spent.delta:g}) + this release ({what}: "
                        f"epsilon={guarantee.epsilon:g}, delta={guarantee.delta:g}) > cap "
                        f"({cap.epsilon:g}, {cap.delta:g}); nothing was computed")
            self._charges.append(Spend(guarantee, what))

    def _record(self, run_id: str | None, result: Any) -> None:
        if self._ledger is not None and run_id is not None:
            assert self.dataset is not None
            self._ledger.release(self.dataset, run_id, _result_json(result))

    # -- same data ---------------------------------------------------------------------------
    def digest(self, *arrays: object) -> bytes:
        """The keyed hash (HMAC-SHA256, this budget's secret key) of arrays' bytes."""
        return keyed_digest(self._key, *arrays)

    def seen(self, digest: bytes) -> bool:
        """Whether ``digest`` was given before (and remember it: one step, so fits
        sharing the budget in threads each see the other's data)."""
        with self._lock:
            if digest in self._digests:
                return True
            self._digests.add(digest)
            return False

    def forget(self, digest: bytes) -> None:
        """Forget ``digest``, remembered by :meth:`seen` for a fit that was then refused
        (it released nothing: its data fitted again is no repeat)."""
        with self._lock:
            self._digests.discard(digest)


def keyed_digest(key: bytes, *arrays: object) -> bytes:
    """HMAC-SHA256 under ``key`` of each array's shape, dtype and bytes (an object array
    by each value's type and text): equal for byte-identical inputs, and without the key
    it tells nothing of them."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for a in arrays:
        arr = np.asarray(a) if hasattr(a, "dtype") else np.asarray(a, dtype=object)
        mac.update(repr((arr.shape, str(arr.dtype))).encode())
        if arr.dtype.kind == "O":
            for v in arr.ravel():
                mac.update(type(v).__name__.encode() + b"\x00" + str(v).encode() + b"\x01")
        else:
            mac.update(np.ascontiguousarray(arr).tobytes())
    return mac.digest()


def _ledger_budget(path: str, dataset: str, epsilon: float | None, delta: float | None,
                   neighbouring: str) -> PrivacyBudget:
    return PrivacyBudget.ledger(path, dataset, epsilon, delta, neighbouring=neighbouring)


@contextlib.contextmanager
def charged(budget: PrivacyBudget | None, guarantee: Guarantee, what: str,
            features: Sequence[str] = ()) -> Iterator[_Ticket | None]:
    """:meth:`PrivacyBudget.charge` when a budget is given; nothing otherwise."""
    if budget is None:
        yield None
        return
    if not isinstance(budget, PrivacyBudget):
        raise ParameterError(f"budget must be a dprect.PrivacyBudget, got "
                             f"{type(budget).__name__}")
    with budget.charge(guarantee, what, features) as ticket:
        yield ticket


def record(ticket: _Ticket | None, result: Any) -> Any:
    """Record ``result`` on ``ticket`` (if any) and return it."""
    if ticket is not None:
        ticket.record(result)
    return result


__all__ = ["PrivacyBudget", "PrivacyBudgetWarning", "Spend", "charged", "keyed_digest",
           "record"]
