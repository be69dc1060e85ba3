"""PipelineDP 0.3.1's partition selection for the group-selection benchmark (issue #42;
driven by ``benchmarks/group_selection_peers.py`` inside the ``pipelinedp`` virtual
environment, ``make bench-peers-venvs``).

``pipeline_dp.partition_selection.create_partition_selection_strategy`` with the
library's default strategy, ``TRUNCATED_GEOMETRIC`` (the optimal selection of Desfontaines
et al. 2022, in PyDP's C++), at the same (ε, δ) as dprect, one partition per privacy unit
(``max_partitions_contributed=1``: every row is one unit in one group, as in dprect's
relation). Per case: the exact expected number of keys kept (``probability_of_keep``
summed over the keys' sizes) and the kept count of ``runs`` independent runs (the
library's generator takes no seed); for reference the expected count of its
``LAPLACE_THRESHOLDING`` (a thresholded Laplace count, not optimal) at the same (ε, δ).

Usage: ``python run_partition_selection.py MANIFEST OUT`` (JSON in, JSON out).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    import pipeline_dp
    from pipeline_dp import partition_selection

    manifest = json.loads(Path(sys.argv[1]).read_text())
    out = []
    for case in manifest["cases"]:
        strategy = partition_selection.create_partition_selection_strategy(
            pipeline_dp.PartitionSelectionStrategy.TRUNCATED_GEOMETRIC,
            float(case["epsilon"]), float(case["delta"]), 1)
        sizes = [int(n) for n in case["sizes"]]
        expected = sum(strategy.probability_of_keep(n) for n in sizes)
        laplace = partition_selection.create_partition_selection_strategy(
            pipeline_dp.PartitionSelectionStrategy.LAPLACE_THRESHOLDING,
            float(case["epsilon"]), float(case["delta"]), 1)
        kept = [sum(1 for n in sizes if strategy.should_keep(n))
                for _ in range(int(manifest["runs"]))]
        out.append({"name": case["name"], "epsilon": case["epsilon"],
                    "delta": case["delta"], "expected": expected, "kept": kept,
                    "laplace_expected": sum(laplace.probability_of_keep(n) for n in sizes)})
    Path(sys.argv[2]).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
