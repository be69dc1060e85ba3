"""The run spine (dprect/app/spine.py) on a toy product: the order every product's run
follows, one charge, the replay, the refusal of another product's record — with no
product or engine code involved (issue #22)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_layers import imports_of

from dprect.app.spine import Reporter, run_release
from dprect.core.accounting import Guarantee
from dprect.core.errors import ParameterError
from dprect.release.guarded import Charge, LedgerSettings
from dprect.release.ledger import Ledger
from dprect.release.sinks import JsonSink, Sink

GUARANTEE = Guarantee(0.5, 0.0, "add-remove", "toy")


@dataclass(frozen=True)
class ToySettings:
    sinks: Sequence[Sink]
    ledger: LedgerSettings | None = None
    seed: int | None = None


class ToyPrepared:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def __enter__(self) -> ToyPrepared:
        self.log.append("open")
        return self

    def __exit__(self, *exc: object) -> None:
        self.log.append("close")


@dataclass
class ToyProduct:
    settings: ToySettings
    log: list[str] = field(default_factory=list)
    guarantee: Guarantee = GUARANTEE
    what: str = "this toy is"
    noun: str = "the toy"

    def inputs(self, name: Callable[[str], str]) -> list[tuple[str, str | None]]:
        return [(name("input"), None)]

    def charge(self) -> Charge:
        return Charge(GUARANTEE, "toy", ["x"])

    def foreign(self, record: Mapping[str, Any]) -> str | None:
        return None if record.get("toy") else "not a toy"

    def announce(self) -> list[str]:
        self.log.append("announce")
        return ["plan: a toy"]

    def open(self, route: Any, progress: Callable[[str], None]) -> ToyPrepared:
        self.log.append("read")
        return ToyPrepared(self.log)

    def compute(self, prepared: ToyPrepared, progress: Callable[[str], None]
                ) -> tuple[Guarantee | None, dict[str, Any]]:
        self.log.append("compute")
        return self.guarantee, {"toy": True, "value": 1}

    def summary(self, record: dict[str, Any], name: Callable[[str], str], rows: Any
                ) -> Callable[[], tuple[list[str], list[str]]]:
        self.log.append("summary")
        return lambda: ([f"value {record['value']}"], [])


def _said() -> tuple[Reporter, list[str]]:
    lines: list[str] = []
    return Reporter(say=lines.append, show=lines.append, progress=lines.append), lines


def test_the_order_of_a_run_without_a_ledger(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    product = ToyProduct(ToySettings([JsonSink("--output", str(out))]))
    report, lines = _said()
    outcome = run_release(product, route=None, report=report)
    assert product.log == ["announce", "read", "open", "compute", "summary", "close"]
    assert json.loads(out.read_text()) == {"toy": True, "value": 1} == outcome.result
    assert lines[-2:] == ["value 1", f"result written to {out}"]
    assert not outcome.replayed


def test_one_charge_then_a_replay_reads_nothing(tmp_path: Path) -> None:
    ledger_path = tmp_path / "ledger"
    Ledger(str(ledger_path)).init()
    ledger = LedgerSettings.build(str(ledger_path), "d", "run-1")
    first = ToyProduct(ToySettings([JsonSink("--output", str(tmp_path / "a.json"))],
                                   ledger))
    run_release(first, None, _said()[0])
    assert Ledger(str(ledger_path)).spent("d").epsilon == pytest.approx(0.5)
    again = ToyProduct(ToySettings([JsonSink("--output", str(tmp_path / "b.json"))],
                                   ledger))
    report, lines = _said()
    outcome = run_release(again, None, report)
    assert outcome.replayed and again.log == ["summary"]  # never announced, read or computed
    assert Ledger(str(ledger_path)).spent("d").epsilon == pytest.approx(0.5)
    assert any("was released before" in line for line in lines)


def test_another_products_record_is_refused_before_anything_is_written(tmp_path: Path
                                                                       ) -> None:
    ledger_path = tmp_path / "ledger"
    Ledger(str(ledger_path)).init()
    ledger = LedgerSettings.build(str(ledger_path), "d", "run-1")
    run_release(ToyProduct(ToySettings([], ledger)), None, _said()[0])

    class Other(ToyProduct):
        def foreign(self, record: Mapping[str, Any]) -> str | None:
            return "a toy, not another thing"

    out = tmp_path / "o.json"
    with pytest.raises(ParameterError, match="released by another kind of run"):
        run_release(Other(ToySettings([JsonSink("--output", str(out))], ledger)), None,
                    _said()[0])
    assert not out.exists()


def test_a_result_whose_guarantee_differs_from_the_charge_is_not_released(tmp_path: Path
                                                                          ) -> None:
    ledger_path = tmp_path / "ledger"
    Ledger(str(ledger_path)).init()
    ledger = LedgerSettings.build(str(ledger_path), "d", "run-1")
    out = tmp_path / "r.json"
    product = ToyProduct(ToySettings([JsonSink("--output", str(out))], ledger),
                         guarantee=Guarantee(1.0, 0.0, "add-remove", "toy"))
    with pytest.raises(AssertionError, match="the toy's guarantee differs"):
        run_release(product, None, _said()[0])
    assert not out.exists()
    assert Ledger(str(ledger_path)).run("d", "run-1").status == "failed"


def test_the_spine_and_the_guarded_release_import_no_product() -> None:
    root = Path(__file__).resolve().parents[2]
    products = {"dprect.core.result", "dprect.core.planner", "dprect.core.bounds",
                "dprect.app.flow", "dprect.app.aggregate_flow",
                "dprect.release.aggregate_record"}
    for module in ("dprect/app/spine.py", "dprect/release/guarded.py"):
        imported = imports_of(root / module, root)
        assert imported, module  # the reader sees imports at all
        assert not imported & products, (module, imported & products)
