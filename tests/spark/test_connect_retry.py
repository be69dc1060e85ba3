"""The bounded retry policy of the Spark Connect sessions dprect opens
(dprect/engines/spark/connect_retry.py), on pyspark's own retry loop with a recorded
clock: no server needed (tests/spark/test_connect_lost.py kills a real one)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

grpc = pytest.importorskip("grpc")
retries = pytest.importorskip("pyspark.sql.connect.client.retries")

from dprect.engines.spark.connect_retry import (  # noqa: E402
    CONNECT_RETRY_SECONDS,
    BoundedRetries,
    server_lost,
    stop_connect_session,
)


class Unavailable(grpc.RpcError):
    """What the Connect client gets from a server that stopped answering."""

    def code(self) -> object:
        return grpc.StatusCode.UNAVAILABLE

    def trailing_metadata(self) -> None:  # no server-given delay
        return None


def _waits(policy: BoundedRetries) -> list[float]:
    """The waits (seconds) of one call that always fails as a lost server does."""
    waits: list[float] = []
    with pytest.raises(Unavailable):
        for attempt in retries.Retrying([policy], sleep=waits.append):
            with attempt:
                raise Unavailable()
    return waits


def test_a_lost_server_is_retried_about_a_minute_then_every_call_tried_once() -> None:
    policy = BoundedRetries()
    waits = _waits(policy)
    jitter = 0.5 * len(waits)  # pyspark's, at most 0.5 s on a wait of 2 s or more
    assert CONNECT_RETRY_SECONDS - 5 <= sum(waits) <= CONNECT_RETRY_SECONDS + jitter
    assert max(waits) <= 5.5 and sum(waits[:3]) < 2  # a short blip is retried soon
    assert policy.lost
    assert _waits(policy) == []  # the next call (the session's release) is tried once


def test_a_blip_is_ridden_out_and_the_server_not_taken_as_lost() -> None:
    policy = BoundedRetries()
    failures = iter([Unavailable(), Unavailable(), None])
    for attempt in retries.Retrying([policy], sleep=lambda _: None):
        with attempt:
            failure = next(failures)
            if failure is not None:
                raise failure
    assert not policy.lost


def _session(policy: BoundedRetries) -> SimpleNamespace:
    """A stand-in Connect session: its client's policies, and whether it was stopped
    with retries left."""
    client = SimpleNamespace(get_retry_policies=lambda: [policy])
    session = SimpleNamespace(client=client, stopped_with=None)
    session.stop = lambda: setattr(session, "stopped_with", policy.max_retries)
    return session


def test_an_interrupted_run_stops_its_session_without_retries() -> None:
    policy = BoundedRetries()
    session = _session(policy)
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        stop_connect_session(session)
    assert session.stopped_with == 0 and server_lost(session)


def test_a_run_that_ended_well_releases_its_session_with_retries() -> None:
    policy = BoundedRetries()
    session = _session(policy)
    stop_connect_session(session)
    assert session.stopped_with == policy.max_retries > 0 and not server_lost(session)
