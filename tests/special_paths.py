"""A device, a FIFO or a socket (or a link to one) at a path, for the tests of the rule
that refuses them as an output or as the budget ledger
(:func:`dprect.release.files.check_not_special`): never opened, so never blocked on."""

from __future__ import annotations

import os
import socket
from pathlib import Path

#: every kind :func:`special` makes
KINDS = ("fifo", "socket", "/dev/null", "link to /dev/null", "link to fifo")


def special(kind: str, tmp_path: Path) -> tuple[Path, str]:
    """A device, FIFO or socket (or a link to one) of ``kind`` (:data:`KINDS`), made in
    ``tmp_path`` (``/dev/null`` itself for that kind): the path and how a refusal names
    it. The socket is bound by a relative name (a socket's path is short)."""
    if kind == "/dev/null":
        return Path("/dev/null"), "is a character device"
    made = tmp_path / "special"
    if kind in ("fifo", "link to fifo"):
        os.mkfifo(made)
    elif kind == "socket":
        here = Path.cwd()
        os.chdir(tmp_path)
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind("special")
            sock.close()
        finally:
            os.chdir(here)
    else:  # a link to /dev/null
        made = Path("/dev/null")
    said = {"fifo": "is a FIFO (named pipe)", "link to fifo": "links to a FIFO (named pipe)",
            "socket": "is a socket", "link to /dev/null": "links to a character device"}[kind]
    if kind.startswith("link"):
        link = tmp_path / "link"
        link.symlink_to(made)
        return link, said
    return made, said
