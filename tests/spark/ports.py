"""Free TCP ports on 127.0.0.1 for the tests' local daemons and servers."""

from __future__ import annotations

import socket


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports nobody listens on right now (the OS picks them, all held
    open until every one is picked: a port one daemon has not bound yet cannot be handed
    to the next)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    """One TCP port nobody listens on right now."""
    return free_ports(1)[0]
