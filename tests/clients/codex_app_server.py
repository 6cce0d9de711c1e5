"""Drive the real Codex's app server (`codex app-server`, JSON-RPC over stdio) for what
`codex exec` cannot do: list the hooks with their trust, and compact a thread.

Codex 0.171's own TUI is a client of this server: its `/hooks` screen lists the hooks with
`hooks/list` (each with `currentHash` and `trustStatus`; trusting one writes that hash back
with `config/batchWrite` as `[hooks.state."<key>"] trusted_hash`), and its `/compact` is
`thread/compact/start`. `codex exec "/compact"` only sends the text "/compact" to the model,
and Codex skips a hook nobody trusted without a word, so the trust `huiyi install codex`
writes is checked with Codex's own `hooks/list`.

    with AppServer.start(argv, env, cwd) as server:
        server.call("hooks/list", {"cwds": [str(cwd)]})
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

#: how the test presents itself in `initialize`
CLIENT_INFO = {"name": "huiyi-tests", "title": None, "version": "1"}


class AppServerError(RuntimeError):
    """The app server answered a request with an error, or not in time."""


class AppServer:
    """One `codex app-server` process: requests with `call`, notifications kept in order."""

    def __init__(self, proc: subprocess.Popen[str], stderr_path: Path) -> None:
        self.proc = proc
        self.stderr_path = stderr_path
        self.notifications: list[dict[str, Any]] = []
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._ids = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    @contextlib.contextmanager
    def start(
        cls, argv: Sequence[str], env: Mapping[str, str], cwd: Path, stderr_path: Path
    ) -> Iterator[Self]:
        """Start the server (`argv` ends in `codex app-server ...`), initialise it, and stop
        its whole process group afterwards (MCP servers a thread started included)."""
        with open(stderr_path, "w", encoding="utf-8") as stderr:
            proc = subprocess.Popen(
                list(argv),
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                encoding="utf-8",
                start_new_session=True,
            )
        server = cls(proc, stderr_path)
        try:
            server.call(
                "initialize",
                {
                    "clientInfo": CLIENT_INFO,
                    "capabilities": {"experimentalApi": True, "requestAttestation": False},
                },
            )
            server.notify("initialized")
            yield server
        finally:
            server.close()

    # -- the wire --------------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self._inbox.put(json.loads(line))
        self._inbox.put(None)  # the server went away

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self._send({"method": method, **({"params": params} if params is not None else {})})

    def _next(self, deadline: float) -> dict[str, Any]:
        try:
            message = self._inbox.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AppServerError(
                f"no answer from codex app-server in time; {self.stderr_tail()}"
            ) from None
        if message is None:
            raise AppServerError(f"codex app-server exited; {self.stderr_tail()}")
        return message

    def call(self, method: str, params: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
        """Send one request and return its `result`; notifications on the way are kept."""
        self._ids += 1
        ident = self._ids
        self._send({"id": ident, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline)
            if "method" in message:
                self.notifications.append(message)
                if "id" in message:  # a request from the server: we answer none of them
                    self._send({"id": message["id"], "error": {"code": -32601, "message": "no"}})
                continue
            if message.get("id") != ident:
                continue
            if "error" in message:
                raise AppServerError(f"{method}: {message['error']}")
            return message.get("result") or {}

    def wait_for(
        self, done: Callable[[dict[str, Any]], bool], timeout: float = 120
    ) -> dict[str, Any]:
        """The first notification (kept or still to come) for which `done` holds."""
        for message in self.notifications:
            if done(message):
                return message
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline)
            self.notifications.append(message)
            if "method" in message and done(message):
                return message

    def stderr_tail(self) -> str:
        try:
            return "stderr: " + self.stderr_path.read_text(encoding="utf-8")[-2000:]
        except OSError:
            return "no stderr"

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._reader.join(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# -- what the TUI does with it -------------------------------------------------------------


def list_hooks(server: AppServer, cwd: Path) -> list[dict[str, Any]]:
    """Every hook Codex found for `cwd`, with `eventName`, `command`, `trustStatus`, ..."""
    result = server.call("hooks/list", {"cwds": [str(cwd)]})
    return [hook for entry in result.get("data") or [] for hook in entry.get("hooks") or []]


def compact_thread(server: AppServer, thread_id: str, timeout: float = 120) -> dict[str, Any]:
    """Load a saved thread and compact it, as `/compact` does; return the completed turn."""
    server.call("thread/resume", {"threadId": thread_id, "excludeTurns": True}, timeout=timeout)
    server.call("thread/compact/start", {"threadId": thread_id}, timeout=timeout)
    done = server.wait_for(
        lambda m: (
            m.get("method") == "turn/completed" and m.get("params", {}).get("threadId") == thread_id
        ),
        timeout=timeout,
    )
    turn: dict[str, Any] = done["params"]["turn"]
    if turn.get("status") != "completed":
        raise AppServerError(f"compaction of {thread_id} ended {turn.get('status')}: {turn}")
    return turn
