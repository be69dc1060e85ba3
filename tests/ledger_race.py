"""The ledger's race, shared by the ledger tests at every size: many processes reserve at
once against one cap (spawned, so each imports dprect and deltalake on its own)."""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

from dprect.release.ledger import BudgetExceededError, Ledger


def _reserve_when_all_ready(path: str, dataset: str, i: int, barrier: Any, results: Any,
                            request: dict[str, Any]) -> None:
    led = Ledger(path)
    barrier.wait(timeout=120)  # every worker has imported dprect and deltalake
    try:
        led.reserve(dataset, f"run-{i}", epsilon=1.0, delta=1e-7, **request)
        results.put((i, "reserved"))
    except BudgetExceededError:
        results.put((i, "refused"))
    except Exception as exc:  # reported to the test
        results.put((i, f"{type(exc).__name__}: {exc}"))


def race(path: str, dataset: str, request: dict[str, Any], workers: int = 12
         ) -> dict[int, str]:
    """``workers`` processes each reserve ε = 1 as run ``run-i`` at the same moment;
    returns i -> "reserved", "refused" or the unexpected error."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=_reserve_when_all_ready,
                         args=(path, dataset, i, barrier, results, request))
             for i in range(workers)]
    for p in procs:
        p.start()
    try:
        return dict(results.get(timeout=300) for _ in procs)
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
