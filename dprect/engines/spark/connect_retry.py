"""How long a Spark Connect session dprect opens waits on a server that stopped answering.

pyspark's own retry policy (``pyspark.sql.connect.client.retries.DefaultPolicy``) retries
an unavailable server for at least 10 minutes, on every call: a run whose server died
would wait that long at the failing step, as long again to release its server session at
the end, and a Ctrl-C or SIGTERM would wait for those retries before the process exits.
A session dprect opens itself (``--remote``, a job's ``spark.remote``:
:func:`dprect.engines.spark.remote.connect_session`) gets :class:`BoundedRetries`
instead (:func:`bound_retries`): the same errors retried and the same growing waits, but
at most :data:`CONNECT_RETRY_SECONDS` in all, and once a call has used them up the server
is taken as lost and every later call (the session's release, the release of cached rows,
the client's background releases) is tried once only. :func:`stop_connect_session` ends
such a session without waiting on a lost server: after an interrupt (Ctrl-C, SIGTERM) or
a lost server, its release is tried once. A session the user passes in through the Python
API keeps its own policy.

Imported only for a Connect session (it imports pyspark's Connect client, hence gRPC).
"""

from __future__ import annotations

import re
import sys
import warnings
from typing import Any

from pyspark.sql.connect.client.retries import DefaultPolicy, RetryPolicyState

#: at most how long (seconds, waits only: about 60, plus up to 6 of jitter) one call of a
#: dprect-opened Connect session retries a server that does not answer: long enough to
#: ride out a short blip (a restart of the server's network, a busy server), short
#: enough that a lost server ends the run within about a minute instead of pyspark's
#: ten (waits of 0.05, 0.2, 0.8, 3.2 s, then 5 s each: 15 retries)
CONNECT_RETRY_SECONDS = 60
_FIRST_WAIT_MS = 50
_WAIT_GROWTH = 4.0
#: the longest single wait: a call of another thread that is waiting when the retries are
#: given up (:meth:`BoundedRetries.give_up`) ends within it
_LONGEST_WAIT_MS = 5000


def _retries_within(total_ms: int) -> int:
    """The most retries whose waits (without jitter) add up to ``total_ms`` at most."""
    count, wait, spent = 0, float(_FIRST_WAIT_MS), 0.0
    while spent + wait <= total_ms:
        spent += wait
        count += 1
        wait = min(float(_LONGEST_WAIT_MS), wait * _WAIT_GROWTH)
    return count


class BoundedRetries(DefaultPolicy):
    """pyspark's default policy (the same errors retried, the same growing waits and
    jitter) bounded to :data:`CONNECT_RETRY_SECONDS` of waits per call, and a server
    delay it is asked to wait capped at the longest wait. Once a call used its retries up,
    or :meth:`give_up` was called, :attr:`lost` is set and every later attempt (in any
    thread of the client) is the last."""

    def __init__(self) -> None:
        super().__init__(max_retries=_retries_within(CONNECT_RETRY_SECONDS * 1000),
                         initial_backoff=_FIRST_WAIT_MS, backoff_multiplier=_WAIT_GROWTH,
                         max_backoff=_LONGEST_WAIT_MS,
                         max_server_retry_delay=_LONGEST_WAIT_MS)
        self.lost = False

    def give_up(self) -> None:
        """No more retries, for any call of the client, running or to come."""
        self.lost = True
        self.max_retries = 0

    def to_state(self) -> RetryPolicyState:
        return _BoundedState(self)


class _BoundedState(RetryPolicyState):
    """One call's retries under :class:`BoundedRetries`: when they are used up, the
    policy gives up for every other call too (the server is lost)."""

    def next_attempt(self, exception: BaseException | None = None) -> int | None:
        wait = super().next_attempt(exception)
        if wait is None:
            policy = self.policy
            assert isinstance(policy, BoundedRetries)
            policy.give_up()
        return wait


#: the warning pyspark's retry loop gives when a call's retries are used up (a second
#: line on stderr; the run's own line names the lost server)
_RETRIES_EXCEEDED = "[RETRIES_EXCEEDED]"


def bound_retries(session: Any) -> None:
    """Give a Connect session's client :class:`BoundedRetries` (its only policy), and
    silence pyspark's warning that a call's retries are used up: the run ends with its
    own one line."""
    session.client.set_retry_policies([BoundedRetries()])
    warnings.filterwarnings("ignore", message=re.escape(_RETRIES_EXCEEDED))


def server_lost(session: Any) -> bool:
    """Whether the session's client found its server lost (:class:`BoundedRetries`)."""
    return any(isinstance(p, BoundedRetries) and p.lost
               for p in session.client.get_retry_policies())


def stop_connect_session(session: Any) -> None:
    """Stop a Connect session dprect opened (release its server session, close the
    channel). When the run ends by an interrupt (a ``KeyboardInterrupt`` — SIGTERM's
    ``Terminated`` is one — being handled) or its server was found lost, the client's
    retries are dropped first, so the release is tried once and the exit does not wait on
    a server that does not answer."""
    if isinstance(sys.exc_info()[1], KeyboardInterrupt) or server_lost(session):
        for policy in session.client.get_retry_policies():
            if isinstance(policy, BoundedRetries):
                policy.give_up()
    session.stop()


__all__ = ["CONNECT_RETRY_SECONDS", "BoundedRetries", "bound_retries", "server_lost",
           "stop_connect_session"]
