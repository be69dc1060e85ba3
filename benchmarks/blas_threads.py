"""numpy's BLAS on one thread in a benchmark, as in Spark's Python workers (Spark sets
``OMP_NUM_THREADS`` to the task's cores there): on two threads a dot product of the
intervals' count law spins for milliseconds (5x the draws' CPU in aggregate_pass_profile).

``os.environ.setdefault("OMP_NUM_THREADS", "1")`` alone takes effect only if numpy (its
OpenBLAS) is not loaded yet: a wrapper that imported numpy before ``runpy``-running a
script kept OpenBLAS on every core (docs/results.md, "Intervals without BLAS", s39). So
:func:`pin_blas_threads` sets the variables (for a numpy loaded later and for child
processes: Spark's local workers) and limits a BLAS already loaded through
``threadpoolctl`` when it is installed. Call it at the top of a script, before its
imports that load numpy (tests/test_bench_threads.py checks the order in every benchmark
that pins)."""

from __future__ import annotations

import os

#: the variables OpenBLAS, MKL and OpenMP read when they load (OpenBLAS prefers its own)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def pin_blas_threads() -> int:
    """Pin BLAS to ``OMP_NUM_THREADS`` threads (1 unless the caller's environment sets
    it): every variable of :data:`THREAD_VARIABLES` unset in the environment is set to
    it, and a BLAS already loaded is limited to it by ``threadpoolctl`` (if installed;
    else a note on stderr when numpy is already loaded). Returns the number."""
    threads = os.environ.setdefault("OMP_NUM_THREADS", "1")
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import sys

        if "numpy" in sys.modules:
            print("blas_threads: numpy was loaded before the pin and threadpoolctl is not "
                  "installed: BLAS keeps its threads", file=sys.stderr)
        return int(threads)
    threadpool_limits(int(threads), user_api="blas")  # a BLAS loaded already, if any
    return int(threads)
