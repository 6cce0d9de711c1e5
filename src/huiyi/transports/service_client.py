"""How a front reaches the warm service for its settings: find it, start it when the request
may, send one request and answer what the service asks back.

One service per home and configuration: the socket is `HUIYI_HOME/service-<key>.sock`, where
the key hashes this huiyi's location and version with every setting except the per-call ones
(HUIYI_WORKSPACE, HUIYI_SESSION). Fronts with the same settings share one service; a front with
other settings (another embedder, another huiyi install) gets its own, and never a service that
would answer with settings it did not ask for.

Starting: the first front that finds no live service takes `service-<key>.lock` (flock),
removes a stale socket (a file nobody listens on: the service was killed), starts the service
detached (its own session, so it outlives the front) and waits until it listens. Two fronts
starting at once start one service.

A connection that ends before the service `accepted` the request is retried (the service was
stopping); one that ends after it, without a reply, is `ServiceStopped`: the caller decides
whether the request may be served again (`protocol` requests say whether they are
idempotent). A service that cannot serve (its core failed to load) answers `unavailable`:
nothing was done, and the front serves the request itself.

Standard library and the leaves only: every hook and MCP front imports this.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import socket
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import huiyi
from huiyi.config import Settings
from huiyi.policy.protocol import Reply, Request, decode_reply, encode
from huiyi.transports.wire import CALL_SECONDS, LINE_SECONDS, Line, address, locked, peer_uid

if TYPE_CHECKING:
    import subprocess

    from huiyi.policy.protocol import Peer

__all__ = [
    "START_SECONDS",
    "ServiceClient",
    "ServiceStopped",
    "service_key",
    "socket_path",
]

#: how long a front waits for a service it started to listen, and for the start lock
START_SECONDS = 10.0
#: the module a front starts as the service
SERVICE_MODULE = "huiyi.transports.service"

_PACKAGE_ROOT = Path(huiyi.__file__).resolve().parent.parent


def service_key(settings: Settings, version: str) -> str:
    """The key of the service these settings may use: this huiyi's location and version, and
    every setting but the per-call ones (keys included, hashed, never written anywhere)."""
    shared = settings._replace(workspace=None, session=None)
    text = repr((str(_PACKAGE_ROOT), version, _plain(shared)))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _plain(value: object) -> object:
    """Settings as nested tuples of their values: keys too, which their repr leaves out."""
    return tuple(_plain(v) for v in value) if isinstance(value, tuple) else value


def socket_path(settings: Settings, version: str) -> Path:
    """Where the service for `settings` listens."""
    return settings.home / f"service-{service_key(settings, version)}.sock"


class ServiceStopped(Exception):
    """The service accepted a call and then went away before answering it."""


class ServiceClient:
    """How a front reaches the service for its settings, starting it when needed."""

    def __init__(
        self, settings: Settings, version: str | None = None, *, start: bool = True
    ) -> None:
        """`start=False`: use a service that is running, never start one. `version`: this
        huiyi's (the MCP manifest's) unless given."""
        if version is None:
            from huiyi.policy.manifest import manifest

            version = str(manifest()["serverInfo"]["version"])
        self.settings = settings
        self.start = start
        self.path = socket_path(settings, version)
        self.lock_path = self.path.with_suffix(".lock")
        self.log_path = self.path.with_suffix(".log")
        self._starting = threading.Lock()
        self._gave_up = False
        self._started: list[subprocess.Popen[bytes]] = []

    def call(self, request: Request, peer: Peer) -> Reply | None:
        """The service's reply to `request`, or None when no service can take it (the caller
        then serves it itself). `peer` answers what the service asks back while it serves.
        Raises `ServiceStopped` when the service accepted the request and died before
        answering: it may have done the work."""
        wire = encode(request)
        for _attempt in range(2):
            line = self.connect()
            if line is None:
                return None
            try:
                line.send(wire)
                accepted = "accepted" in line.receive(LINE_SECONDS)
            except (OSError, ValueError):
                accepted = False
            if not accepted:
                line.close()
                continue  # closed before accepting (it was stopping): start a new one
            try:
                return self._finish(line, peer)
            finally:
                line.close()
        return None

    def _finish(self, line: Line, peer: Peer) -> Reply | None:
        try:
            while True:
                message = line.receive(CALL_SECONDS)
                if "roots" in message:
                    line.send({"roots": list(peer.roots())})
                elif "ask" in message:
                    question = message["ask"]
                    action = peer.ask(question) if isinstance(question, str) else "cancel"
                    line.send({"ask": action})
                elif "unavailable" in message:
                    self._gave_up = True  # it cannot serve; do not start another
                    return None
                else:
                    reply = decode_reply(message)
                    if reply is None:
                        raise ServiceStopped("the service answered something else than a reply")
                    return reply
        except (OSError, ValueError) as exc:
            raise ServiceStopped(str(exc)) from exc

    def ensure(self) -> None:
        """Make sure a service is listening (start it if not); for a front that expects calls."""
        line = self.connect()
        if line is not None:
            line.close()

    def connect(self) -> Line | None:
        """A connection to the live service, starting one if there is none; None if none
        can be started (then the front serves calls itself)."""
        line = self._open()
        if line is not None or self._gave_up or not self.start:
            return line
        with self._starting:
            line = self._open()
            if line is not None or self._gave_up:
                return line
            try:
                self._start()
            except OSError:
                self._gave_up = True
                return None
        line = self._open()
        if line is None:
            self._gave_up = True
        return line

    def _open(self) -> Line | None:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.settimeout(LINE_SECONDS)
            with address(self.path) as where:
                conn.connect(where)
            if peer_uid(conn) not in (None, os.getuid()):
                raise PermissionError(f"{self.path} is served by another user")
        except OSError:
            conn.close()
            return None
        return Line(conn)

    def _start(self) -> None:
        """Under the start lock: replace a stale socket and start a service (detached)."""
        self.settings.ensure_home()
        with locked(self.lock_path):
            line = self._open()
            if line is not None:  # another front started it meanwhile
                line.close()
                return
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()  # stale: nobody listens on it
            import subprocess  # only when starting a service: not on a hook's path

            ready_read, ready_write = os.pipe()
            log = os.open(
                self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600
            )
            try:
                process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        SERVICE_MODULE,
                        str(self.path),
                        "--ready-fd",
                        str(ready_write),
                    ],
                    # cwd first on sys.path: the service imports this very huiyi
                    cwd=_PACKAGE_ROOT,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    pass_fds=(ready_write,),
                    start_new_session=True,
                )
            finally:
                os.close(ready_write)
                os.close(log)
            self._started.append(process)  # kept, so it is never reaped as garbage
            try:
                readable, _, _ = select.select([ready_read], [], [], START_SECONDS)
                ready = bool(readable) and os.read(ready_read, 64).startswith(b"ready")
            finally:
                os.close(ready_read)
            if not ready:
                raise OSError(f"the huiyi service did not start; see {self.log_path}")
