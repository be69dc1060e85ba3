"""A test-only entry to ``jobs/fit_rectangle.py`` that pauses right after its reservation.

    python tests/spark/fault_fit_job.py --config CFG

It wraps :meth:`dprect.release.ledger.Ledger.reserve`: once a new reservation is
committed, it prints :data:`PAUSE_MARKER` and waits to be killed (a replayed run id,
whose reservation holds a result, is not paused). Then it runs the job's ``main`` as
``spark-submit`` would. Production code knows nothing of this.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PAUSE_MARKER = "dprect-fault: paused after reserve"


def pause_after_reserve() -> None:
    from dprect.release.ledger import Ledger

    reserve = Ledger.reserve

    def reserve_then_pause(self: Ledger, *args: Any, **kwargs: Any) -> Any:
        reservation = reserve(self, *args, **kwargs)
        if reservation.previous_result is None:
            print(PAUSE_MARKER, flush=True)
            sys.stderr.flush()
            while True:  # wait to be killed
                time.sleep(1)
        return reservation

    Ledger.reserve = reserve_then_pause  # type: ignore[method-assign]


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "jobs"))
    pause_after_reserve()
    import fit_rectangle

    from dprect.app.jobs_support import exit_now

    exit_now(fit_rectangle.main(sys.argv[1:]))
