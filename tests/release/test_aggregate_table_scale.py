"""The grouped-aggregate table at scale (docs/operations.md, "The table at scale"): one row
per (group, column) in the public groups' order, a Delta table never partitioned by group
(10^6 groups would be 10^6 folders), its rows in few files and row groups."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from dprect.core.statistic import QUERY
from dprect.release.aggregate_table import table_sink
from dprect.release.sinks import Release


def _record(groups: int) -> dict:
    """A describe record of ``groups`` groups × 2 columns (count and mean released)."""
    plan = {"statistics": ["count", "mean"], "rows_needed": 10,
            "rows_needed_by": {"x": 10, "y": 10}}
    rows = [{"group": f"g{g:05d}", "column": c, "lower": 0.0, "upper": 1.0,
             "count": float(g), "count_low": g - 1.0, "count_high": g + 1.0,
             "mean": 0.5, "mean_low": 0.4, "mean_high": 0.6}
            for g in range(groups) for c in ("x", "y")]
    return {"method": "describe", "columns": ["x", "y"],
            "groups": [f"g{g:05d}" for g in range(groups)], "plan": plan,
            "privacy": {"epsilon": 1.0, "delta": 0.0}, "results": rows}


def test_a_delta_table_of_many_groups_is_one_unpartitioned_file(tmp_path: Path) -> None:
    pytest.importorskip("deltalake")
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    groups = 20_000
    path = tmp_path / "t"
    sink = table_sink("--table", str(path), QUERY, ("count", "mean"))
    sink.check()
    assert sink.prepare(Release(_record(groups), "r", datetime.now(UTC)))().endswith(
        "(Delta)")
    table = DeltaTable(str(path))
    assert table.metadata().partition_columns == []
    files = table.file_uris()
    assert len(files) == 1 and [p.name for p in path.iterdir() if p.is_dir()] == [
        "_delta_log"]
    meta = pq.ParquetFile(files[0]).metadata
    assert meta.num_rows == 2 * groups and meta.num_row_groups == 1
    read = pq.read_table(files[0], columns=["group", "column"]).to_pylist()
    assert read[:3] == [{"group": "g00000", "column": "x"}, {"group": "g00000", "column": "y"},
                        {"group": "g00001", "column": "x"}]  # the public order


def test_a_parquet_table_is_one_file_in_row_groups(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``--table PATH.parquet``: one Parquet file, the layout's columns and types, rows in
    the public groups' order, cut into row groups of ROW_GROUP_ROWS rows; a folder at
    the path is refused by the check, before anything is read or reserved."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprect.core.errors import ParameterError
    from dprect.release import aggregate_table

    monkeypatch.setattr(aggregate_table, "ROW_GROUP_ROWS", 1000)  # 2 x 1,500 rows
    path = tmp_path / "t.parquet"
    sink = table_sink("--table", str(path), QUERY, ("count", "mean"))
    assert isinstance(sink, aggregate_table.FileTableSink) and sink.kind == "Parquet"
    sink.check()
    line = sink.prepare(Release(_record(1500), "r", datetime.now(UTC)))()
    assert line == f"describe table written to {path} (Parquet)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == 3000 and [meta.row_group(i).num_rows
                                      for i in range(meta.num_row_groups)] == [1000] * 3
    table = pq.read_table(path)
    assert table.schema.names == list(sink.layout.names)
    assert table.schema.field("count").type == pa.float64()
    assert table.schema.field("below_row_need").type == pa.bool_()
    assert table.column("group").to_pylist()[:4] == ["g00000", "g00000", "g00001", "g00001"]
    assert table.column("sum").null_count == 3000  # not asked: null
    (tmp_path / "dir.parquet").mkdir()
    with pytest.raises(ParameterError, match="--table"):
        table_sink("--table", str(tmp_path / "dir.parquet"), QUERY).check()
