"""The warm service's framing: newline-delimited JSON on one Unix-socket connection per request,
the socket's address, who is at the other end, and the lock that starts and stops a service.

Both halves use it: the client in every front (`service_client.py`) and the service itself
(`service.py`). Standard library only, because a hook's process pays for every import.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "CALL_SECONDS",
    "LINE_SECONDS",
    "Line",
    "address",
    "locked",
    "peer_uid",
]

#: how long either side waits for the other's next line (a request itself may take longer)
LINE_SECONDS = 30.0
#: how long a front waits for a request's result (the core bounds each call far below this)
CALL_SECONDS = 300.0
#: the longest socket path bind/connect accept on Linux is 107 bytes; longer ones go through
#: /proc/self/fd
_SUN_PATH_MAX = 100


@contextlib.contextmanager
def address(path: Path) -> Iterator[str]:
    """`path` as an AF_UNIX address: itself when short enough, else the same file reached
    through an open handle on its directory (`/proc/self/fd/N/name`, Linux)."""
    if len(os.fsencode(path)) < _SUN_PATH_MAX:
        yield str(path)
        return
    if not hasattr(os, "O_PATH"):
        raise OSError(f"socket path too long: {path}")
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def peer_uid(conn: socket.socket) -> int | None:
    """The user id of the process at the other end (None where the OS cannot say)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, 12))
    return int(uid)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the start lock of a service (blocks; its holders keep it for seconds at most)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class Line:
    """Newline-delimited JSON over one connected socket."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self._reader = conn.makefile("rb")

    def send(self, message: dict[str, Any]) -> None:
        self.conn.sendall(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")

    def receive(self, seconds: float) -> dict[str, Any]:
        """The next message; `ConnectionError` when the other end closed, `TimeoutError`."""
        self.conn.settimeout(seconds)
        line = self._reader.readline()
        if not line.endswith(b"\n"):
            raise ConnectionError("the other end closed the connection")
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ConnectionError("not a protocol message")
        return message

    def close(self) -> None:
        self._reader.close()
        self.conn.close()
