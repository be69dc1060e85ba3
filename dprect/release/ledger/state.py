"""The state a checkpoint records: every dataset's spend (in both relations), cap and runs
after a prefix of events, its text (compared as text with a re-derivation), and the rules
that fold one event into it (see "Spend" and "Checkpoints" in
:mod:`dprect.release.ledger`)."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from dprect.release.ledger.caps import ADD_REMOVE, RELATIONS, REPLACE_ONE, relation_image
from dprect.release.ledger.errors import RESTORE, LedgerError
from dprect.release.ledger.records import RunRecord
from dprect.release.ledger.run_index import RunIndex, bucket_of, dataset_buckets, run_bucket

STATE_HEADER = "dprect ledger state 3"
#: the older state formats (the runs inside the checkpoint row, in buckets per dataset):
#: header → buckets per dataset. Read, re-derived in, and replaced by the next checkpoint.
OLD_FORMATS = {"dprect ledger state 1": 16, "dprect ledger state 2": 1024}
#: the format checkpoints are written in (tests write the older ones, to read them back)
_WRITE_FORMAT = STATE_HEADER


@contextlib.contextmanager
def _readable() -> Iterator[None]:
    """Parsing a part of a checkpoint's state read on demand (after the chain and the
    newest checkpoint were verified): a part that cannot be parsed is damage, one line."""
    try:
        yield
    except (ValueError, KeyError, TypeError, IndexError, AssertionError):
        raise LedgerError(f"the budget ledger is damaged: a checkpoint's state cannot be "
                          f"read; nothing was charged or released — {RESTORE}") from None


Runs = dict[str, dict[str, Any]]  # run id → run (short keys: see State.apply)


class DatasetState:
    """One dataset's cap and spend (its line of a checkpoint's state, parsed on first
    use) and its runs (in the state's shared run index)."""

    def __init__(self, name: str, index: RunIndex, head: str | None = None) -> None:
        self.name, self.index, self.key = name, index, _name_json(name)
        self.head_text = head  # JSON [cap, spent]; None once changed
        self._cap: list[Any] | None = None  # [epsilon, delta, relation]
        self._spent: dict[str, list[float] | None] = {ADD_REMOVE: [0.0, 0.0],
                                                      REPLACE_ONE: [0.0, 0.0]}
        self._head_parsed = head is None

    def _head(self) -> None:
        if not self._head_parsed:
            assert self.head_text is not None
            with _readable():
                self._cap, self._spent = json.loads(self.head_text)
                assert isinstance(self._spent, dict)
            self._head_parsed = True

    def head(self) -> str:
        if self.head_text is None:
            self.head_text = _canonical([self.cap, self.spent])
        return self.head_text

    @property
    def cap(self) -> list[Any] | None:
        self._head()
        return self._cap

    @cap.setter
    def cap(self, value: list[Any] | None) -> None:
        self._head()
        self._cap, self.head_text = value, None

    @property
    def spent(self) -> dict[str, list[float] | None]:
        self._head()
        return self._spent

    def add_spent(self, target: str, value: list[float] | None) -> None:
        self._head()
        self._spent[target], self.head_text = value, None

    def get(self, run_id: str) -> dict[str, Any] | None:
        """The run (a new dict: change it with :meth:`put`), None if there is none."""
        bucket = self.index.bucket(run_bucket(self.name, run_id))
        text = bucket.get(self.key, {}).get(json.dumps(run_id))
        if text is None:
            return None
        with _readable():
            run = json.loads(text)
            assert isinstance(run, dict)
        return run

    def put(self, run_id: str, run: dict[str, Any]) -> None:
        self.index.change(run_bucket(self.name, run_id)).setdefault(self.key, {})[
            json.dumps(run_id)] = _canonical(run)

    def runs(self) -> Runs:
        """Every run of the dataset (reads its :data:`DATASET_SPAN` buckets)."""
        out: Runs = {}
        with _readable():
            for k in dataset_buckets(self.name):
                for run_id, text in self.index.bucket(k).get(self.key, {}).items():
                    out[json.loads(run_id)] = json.loads(text)
        return out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


@functools.lru_cache(maxsize=65536)
def _name_json(name: str) -> str:
    return json.dumps(name)


@functools.lru_cache(maxsize=65536)
def _name_of(name_json: str) -> str:
    name = json.loads(name_json)
    if not isinstance(name, str):
        raise ValueError("a dataset name is not a string")
    return name


def referenced(texts: Iterable[str]) -> set[str]:
    """The run-index digests that the states ``texts`` (format 3) name."""
    out: set[str] = set()
    for text in texts:
        if text.startswith(STATE_HEADER + "\n"):
            out.update(line.split("\t", 1)[1] for line in text.split("\n")[1:]
                       if line and not line.startswith('"'))
    return out


class State:
    """Every dataset's spend (in both relations), cap and runs after a prefix of events.

    Its text (a checkpoint row's ``result``, format 3) is a header line, then per dataset
    (in name order) a line ``name (JSON) TAB h TAB [cap, spent] (JSON)``, then per
    non-empty run bucket (in order) a line ``bucket TAB SHA-256 of the bucket's file``.
    A re-derived state is written out the same way and compared as text, so two states
    are equal exactly when their totals are and every bucket's content is (by its hash).
    Formats 1 and 2 held the runs inline (per dataset, in 16 or 1,024 buckets of its
    own); a state parsed from them holds every run in memory and can write them back."""

    def __init__(self, root: str, datasets: dict[str, DatasetState] | None = None,
                 index: RunIndex | None = None) -> None:
        self.index = index or RunIndex(root)
        self.datasets = datasets or {}

    @classmethod
    def parse(cls, text: str, root: str) -> State:
        header, _, body = text.partition("\n")
        state = cls(root)
        lines = body.split("\n") if body else []
        if header == STATE_HEADER:
            for line in lines:
                if line.startswith('"'):
                    name_json, key, head = line.split("\t", 2)
                    if key != "h":
                        raise ValueError("a dataset's line holds no totals")
                    name = _name_of(name_json)
                    state.datasets[name] = DatasetState(name, state.index, head)
                else:
                    k, digest = line.split("\t")
                    state.index.digests[int(k)] = digest
            return state
        if header not in OLD_FORMATS:
            raise ValueError("a checkpoint of an unknown format")
        for line in lines:
            if not line:
                continue  # format 2 separates the datasets' blocks by an empty line
            name_json, key, rest = line.split("\t", 2)
            name = _name_of(name_json)
            if key == "h":
                state.datasets[name] = DatasetState(name, state.index, rest)
                continue
            ds = state.datasets[name]  # a block starts with its totals
            runs = json.loads(rest)
            if not isinstance(runs, dict):
                raise ValueError("a run bucket is not an object")
            for run_id, run in runs.items():
                ds.put(run_id, run)
        return state

    def text(self, header: str | None = None) -> str:
        """The state in format ``header`` (default: the format checkpoints are written
        in); format 3 settles the run index (the changed buckets' digests)."""
        header = header or _WRITE_FORMAT
        names = sorted(self.datasets)
        if header == STATE_HEADER:
            digests = self.index.settle()
            return "\n".join([header, *(
                f"{_name_json(n)}\th\t{self.datasets[n].head()}" for n in names), *(
                f"{k}\t{digests[k]}" for k in sorted(digests))])
        buckets = OLD_FORMATS[header]
        blocks = [header]
        for name in names:
            ds, nj = self.datasets[name], _name_json(name)
            groups: dict[int, Runs] = {}
            for run_id, run in ds.runs().items():
                groups.setdefault(bucket_of(run_id, buckets), {})[run_id] = run
            blocks.append("\n".join([f"{nj}\th\t{ds.head()}", *(
                f"{nj}\t{k}\t{_canonical(groups[k])}" for k in sorted(groups))]))
        return ("\n" if buckets == OLD_FORMATS["dprect ledger state 1"] else "\n\n"
                ).join(blocks)

    def equals(self, text: str) -> bool:
        """Whether ``text`` (a checkpoint's) records this state (compared in the
        checkpoint's own format, named by its header)."""
        header = text.split("\n", 1)[0]
        if header != STATE_HEADER and header not in OLD_FORMATS:
            return False
        return self.text(header) == text

    def of(self, dataset: str) -> DatasetState:
        return self.datasets.get(dataset) or DatasetState(dataset, self.index)

    def apply(self, row: dict[str, Any]) -> None:
        """Fold one event into the state (the same rules the reads always used)."""
        event, name = row["event"], row["dataset"]
        if event in ("init", "checkpoint") or name is None:
            return
        ds = self.datasets.get(name)
        if ds is None:
            ds = self.datasets[name] = DatasetState(name, self.index)
        if event == "cap":
            ds.cap = [row["epsilon"], row["delta"], row["neighbouring"] or ADD_REMOVE]
            return
        run_id = row["run_id"]
        if run_id is None:
            return
        run = ds.get(run_id)
        if event == "reserve":
            relation = row["neighbouring"] or ADD_REMOVE
            for target in RELATIONS:
                total = ds.spent[target]
                image = relation_image(row["epsilon"], row["delta"], relation, target)
                ds.add_spent(target, None if total is None or image is None else
                             [total[0] + image[0], total[1] + image[1]])
            if run is None or run["s"] == "cancelled":
                at = row["recorded_at"]
                ds.put(run_id, {
                    "s": "reserved", "e": row["epsilon"], "d": row["delta"], "n": relation,
                    "v": row["version"], "m": row["method"],
                    "f": json.loads(row["features"] or "[]"), "r": None,
                    "t": None if at is None else at.isoformat()})
        elif run is not None:
            if event == "release" and run["s"] != "released":
                ds.put(run_id, {**run, "s": "released", "r": row["version"]})
            elif event == "fail" and run["s"] == "reserved":
                ds.put(run_id, {**run, "s": "failed"})
            elif event == "cancel" and run["s"] == "reserved":
                for target in RELATIONS:  # withdraw exactly what its reserve row added
                    total = ds.spent[target]
                    image = relation_image(run["e"], run["d"], run["n"], target)
                    ds.add_spent(target, None if total is None or image is None else
                                 [max(0.0, total[0] - image[0]),
                                  max(0.0, total[1] - image[1])])
                ds.put(run_id, {**run, "s": "cancelled"})


def run_record(run_id: str, run: dict[str, Any], result: dict[str, Any] | None = None
               ) -> RunRecord:
    at = run["t"]
    return RunRecord(run_id=run_id, status=run["s"], epsilon=run["e"], delta=run["d"],
                     method=run["m"], features=list(run["f"]), result=result,
                     reserved_at=None if at is None else datetime.fromisoformat(at),
                     reserved_version=run["v"], neighbouring=run["n"],
                     released_version=run["r"])
