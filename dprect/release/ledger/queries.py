"""What the ledger reports, from one verified read: a dataset's spend (in the relation its
cap is stated in), its cap, its runs, one run with its released result (re-hashed against
the row before it). See "Neighbouring relations" and "Checkpoints" in
:mod:`dprect.release.ledger`."""

from __future__ import annotations

from typing import Any

from dprect.release.ledger.caps import ADD_REMOVE, REPLACE_ONE, Budget, Cap
from dprect.release.ledger.chain import chain_of
from dprect.release.ledger.errors import DamageError, check_name
from dprect.release.ledger.log import LedgerLog, Snapshot
from dprect.release.ledger.records import DatasetStatus, RunRecord
from dprect.release.ledger.state import DatasetState, run_record
from dprect.release.ledger.stored import resolve


class LedgerQueries(LedgerLog):
    """The ledger's reads: :class:`LedgerLog`'s verified snapshot, summarised."""

    # -- summaries ----------------------------------------------------------------------
    @staticmethod
    def _relation(ds: DatasetState) -> str:
        if ds.cap is not None:
            return ds.cap[2]
        return ADD_REMOVE if ds.spent[ADD_REMOVE] is not None else REPLACE_ONE

    @staticmethod
    def _spent_in(ds: DatasetState, relation: str) -> Budget | None:
        total = ds.spent[relation]
        return None if total is None else Budget(total[0], total[1])

    @staticmethod
    def _cap_of(ds: DatasetState) -> Cap | None:
        return None if ds.cap is None else Cap(ds.cap[0], ds.cap[1], ds.cap[2])

    def status(self, dataset: str, *, runs: bool = False) -> DatasetStatus:
        """Spend and cap of ``dataset`` from one verified read of the ledger; with
        ``runs`` also its runs (which reads the dataset's whole run index; without it no
        run bucket is parsed)."""
        snap = self._load()
        ds = snap.state.of(check_name(dataset, "dataset"))
        relation = self._relation(ds)
        with self._index():
            records = None if not runs else sorted(
                (run_record(k, v) for k, v in ds.runs().items()),
                key=lambda r: r.reserved_version)
        return DatasetStatus(self._spent_in(ds, relation), self._cap_of(ds), records,
                             snap.version, relation, dataset in snap.state.datasets)

    def datasets(self) -> list[str]:
        """The datasets the ledger has events for."""
        return sorted(self._load().state.datasets)

    def spent(self, dataset: str, neighbouring: str | None = None) -> Budget | None:
        """The spend in ``neighbouring`` (default: the relation :meth:`status` uses)."""
        ds = self._load().state.of(check_name(dataset, "dataset"))
        return self._spent_in(ds, neighbouring or self._relation(ds))

    def cap(self, dataset: str) -> Cap | None:
        return self._cap_of(self._load().state.of(check_name(dataset, "dataset")))

    def runs(self, dataset: str) -> list[RunRecord]:
        """Every run of ``dataset`` with its result (reads the whole log)."""
        rows = self.events(dataset)
        results = {r["run_id"]: self._result_of(r["result"]) for r in rows
                   if r["event"] == "release" and r["result"] is not None}
        records = self.status(dataset, runs=True).runs or []
        return [RunRecord(**{**r.__dict__, "result": results.get(r.run_id)})
                for r in records]

    def run(self, dataset: str, run_id: str) -> RunRecord | None:
        snap = self._load()
        return self._run(snap, check_name(dataset, "dataset"), run_id)

    def _run(self, snap: Snapshot, dataset: str, run_id: str) -> RunRecord | None:
        """One run, with its released result (read from its release row)."""
        with self._index():
            run = snap.state.of(dataset).get(run_id)
        if run is None:
            return None
        result = None
        if run["r"] is not None:
            result = self._result_of(self._row_at(snap, run["r"])["result"])
        return run_record(run_id, run, result)

    def _result_of(self, text: str) -> dict[str, Any]:
        """A release row's result: inline, or the stored file its reference names,
        checked against it (a missing or edited file: the ledger is damaged)."""
        try:
            return resolve(self.path, text)
        except DamageError as exc:
            raise self._damaged(str(exc)) from None

    def _row_at(self, snap: Snapshot, version: int) -> dict[str, Any]:
        """The verified row at ``version`` (re-hashed against the row before it)."""
        for row in snap.rows:
            if row["version"] == version:
                return row
        chosen = [f for f in snap.files if f.first <= version and f.last >= version - 1]
        rows = [r for r in self._read(chosen) if version - 1 <= r["version"] <= version]
        if [r["version"] for r in rows] != [version - 1, version] or \
                rows[1]["chain"] != chain_of(rows[0]["chain"], rows[1]):
            raise self._damaged(f"the hash chain breaks at commit version {version} (an "
                                f"edited file?)")
        return rows[1]
