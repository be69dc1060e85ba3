"""The budget ledger: caps, idempotent run ids, fail-closed charges, race freedom."""

from __future__ import annotations

import multiprocessing as mp
import time

import pytest

from dprect.ledger import Budget, BudgetExceededError, Ledger, LedgerError

REQ = {"method": "randmargins", "features": ["a", "b"], "bound": "test bound",
       "neighbouring": "add-remove"}


def test_spend_is_the_sum_of_reservations(tmp_path):
    led = Ledger(tmp_path / "ledger")
    assert led.spent("ds") == Budget(0.0, 0.0) and led.cap("ds") is None
    led.reserve("ds", "r1", epsilon=0.5, delta=1e-7, **REQ)
    led.reserve("ds", "r2", epsilon=0.25, delta=2e-7, **REQ)
    led.reserve("other", "r1", epsilon=3.0, delta=1e-6, **REQ)
    spent = led.spent("ds")
    assert spent.epsilon == pytest.approx(0.75) and spent.delta == pytest.approx(3e-7)
    assert [r.status for r in led.runs("ds")] == ["reserved", "reserved"]


def test_cap_blocks_and_nothing_is_charged(tmp_path):
    led = Ledger(tmp_path / "ledger")
    led.set_cap("ds", 1.0, 1e-6)
    led.reserve("ds", "r1", epsilon=0.6, delta=1e-7, **REQ)
    with pytest.raises(BudgetExceededError, match="cap exceeded for dataset 'ds'"):
        led.reserve("ds", "r2", epsilon=0.6, delta=1e-7, **REQ)
    assert [r.run_id for r in led.runs("ds")] == ["r1"]
    led.reserve("ds", "r3", epsilon=0.4, delta=1e-7, **REQ)  # exactly fills the cap
    # a config cap stricter than the ledger's applies too
    led2 = Ledger(tmp_path / "ledger2")
    with pytest.raises(BudgetExceededError):
        led2.reserve("ds", "r1", epsilon=2.0, delta=1e-7, cap=Budget(1.0, 1e-6), **REQ)


def test_released_run_id_is_idempotent(tmp_path):
    led = Ledger(tmp_path / "ledger")
    led.reserve("ds", "r1", epsilon=0.5, delta=1e-7, **REQ)
    result = {"method": "randmargins", "lower": [1.0], "upper": [2.0]}
    assert led.release("ds", "r1", result) == result
    again = led.reserve("ds", "r1", epsilon=0.5, delta=1e-7, **REQ)
    assert again.already_released and again.previous_result == result and not again.new_charge
    assert led.spent("ds").epsilon == pytest.approx(0.5)
    # a second release of the same run id returns the first one's result
    assert led.release("ds", "r1", {"method": "other"}) == result


def test_failed_run_id_is_retried_under_one_charge(tmp_path):
    led = Ledger(tmp_path / "ledger")
    led.reserve("ds", "r1", epsilon=0.5, delta=1e-7, **REQ)
    led.fail("ds", "r1", "boom")
    assert led.run("ds", "r1").status == "failed"
    retry = led.reserve("ds", "r1", epsilon=0.5, delta=1e-7, **REQ)
    assert not retry.new_charge and not retry.already_released
    assert led.spent("ds").epsilon == pytest.approx(0.5)
    with pytest.raises(LedgerError, match="cannot ask for more"):
        led.reserve("ds", "r1", epsilon=0.9, delta=1e-7, **REQ)


def test_not_a_ledger(tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake

    write_deltalake(tmp_path / "t", pa.table({"x": [1]}))
    with pytest.raises(LedgerError, match="not a dprect ledger"):
        Ledger(tmp_path / "t").spent("ds")


def _reserve_at(path: str, i: int, start: float) -> str:
    while time.time() < start:
        time.sleep(0.001)
    try:
        Ledger(path).reserve("ds", f"run-{i}", epsilon=1.0, delta=1e-7,
                             cap=Budget(5.0, 1e-6), **REQ)
        return "reserved"
    except BudgetExceededError:
        return "refused"


def test_concurrent_reservations_never_overspend(tmp_path):
    path = str(tmp_path / "ledger")
    ctx = mp.get_context("spawn")
    with ctx.Pool(8) as pool:
        start = time.time() + 3.0  # let every worker import first
        outcomes = pool.starmap(_reserve_at, [(path, i, start) for i in range(8)])
    assert sorted(outcomes) == ["refused"] * 3 + ["reserved"] * 5
    assert len(Ledger(path).runs("ds")) == 5
