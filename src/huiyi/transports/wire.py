"""The warm service's framing: newline-delimited JSON on one Unix-socket connection per request,
the socket's address, who is at the other end, and the lock that starts and stops a service.

Both halves use it: the client in every front (`service_client.py`) and the service itself
(`service.py`). Standard library only, because a hook's process pays for every import.

It also holds what every front reads JSON with (`read_line`, `loads`): no input kills a
server. A line or body is at most `MAX_MESSAGE_BYTES` (a longer line is read past, never kept)
and nesting at most `MAX_DEPTH` deep (the standard library's parser recurses, and a line
nested 200,000 deep was a `RecursionError`); what breaks either bound is a `BadMessage`, which
each front answers in its one error shape before it reads on.
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
from typing import IO, Any

__all__ = [
    "CALL_SECONDS",
    "LINE_SECONDS",
    "MAX_DEPTH",
    "MAX_MESSAGE_BYTES",
    "BadMessage",
    "Line",
    "address",
    "loads",
    "locked",
    "peer_uid",
    "read_line",
]

#: how long either side waits for the other's next line (a request itself may take longer)
LINE_SECONDS = 30.0
#: how long a front waits for a request's result (the core bounds each call far below this)
CALL_SECONDS = 300.0
#: the longest socket path bind/connect accept on Linux is 107 bytes; longer ones go through
#: /proc/self/fd
_SUN_PATH_MAX = 100


#: the longest line or body a front reads (tool arguments and hook inputs are far smaller)
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
#: the deepest nesting a front accepts (every message of the protocols is a few levels deep)
MAX_DEPTH = 100
_OPEN = frozenset(b"[{")


class BadMessage(ValueError):
    """Input a front does not take: too long, too deep, or no JSON at all (`reason`)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def read_line(stream: IO[bytes], limit: int = MAX_MESSAGE_BYTES) -> bytes | BadMessage | None:
    """The next line of `stream` (without its newline); a `BadMessage` for a line longer than
    `limit`, which is read past in pieces and never kept; None at the end of the stream."""
    line = stream.readline(limit + 1)
    if not line:
        return None
    if len(line) <= limit or line.endswith(b"\n"):
        return line.rstrip(b"\n")
    while (more := stream.readline(1 << 16)) and not more.endswith(b"\n"):
        pass
    return BadMessage("too-long", f"a message is longer than {limit:,} bytes")


def loads(data: bytes | str, limit: int = MAX_MESSAGE_BYTES) -> Any:
    """`json.loads(data)`, bounded: `BadMessage` for input longer than `limit`, nested deeper
    than `MAX_DEPTH` (checked before parsing, in one pass over the bytes) or not JSON."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > limit:
        raise BadMessage("too-long", f"a message is longer than {limit:,} bytes")
    if _depth(raw) > MAX_DEPTH:
        raise BadMessage("too-deep", f"a message is nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise BadMessage("not-json", "a message is not JSON") from exc


def _depth(raw: bytes) -> int:
    """The deepest bracket nesting outside strings, counted without recursion. Escaped
    backslashes and quotes go first, then every byte but brackets and quotes (`replace` and
    `translate` run in C), so the loop runs over the marks alone."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return 0  # too few brackets to nest deeper: nothing to walk
    marks = raw.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_MARKS)
    depth = deepest = 0
    in_string = False
    for byte in marks:
        if byte == 0x22:
            in_string = not in_string
        elif in_string:
            continue
        elif byte in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    return deepest
        else:
            depth -= 1
    return deepest


#: every byte but brackets and quotes (what `_depth` looks at)
_NOT_MARKS = bytes(b for b in range(256) if b not in b'[]{}"')


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
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
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
        line = read_line(self._reader)
        if line is None:
            raise ConnectionError("the other end closed the connection")
        try:
            message = loads(line) if isinstance(line, bytes) else None
        except BadMessage:
            message = None
        if not isinstance(message, dict):
            raise ConnectionError("not a protocol message")
        return message

    def close(self) -> None:
        self._reader.close()
        self.conn.close()
