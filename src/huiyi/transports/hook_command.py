"""`huiyi hook <claude-code|codex|dsh> <Event>`: the command a harness runs at a hook.

A harness waits for its hooks before it goes on (Claude Code runs UserPromptSubmit before the
prompt is sent), so a hook must answer in well under a second. Importing the core alone takes
longer than that on a small machine, so this module, like the stdio MCP server, imports only
the standard library and the leaves. It

1. reads the hook's JSON object from stdin (at most `MAX_INPUT_BYTES`);
2. hands it along the one route (`route.route`): to the warm per-home service, started on
   first use, or, with `HUIYI_SERVICE=off` or no service to be had, to the same core code in
   this process (`policy.hooks`);
3. prints what the model gets in the harness's own hook form (`harnesses.hookform`); nothing at
   all when there is nothing to inject.

It fails open: whatever goes wrong (input that is not JSON or has wrong types, a broken index, a
home that cannot be created, a bug), the hook prints nothing, exits 0, and one line, redacted,
goes to `HUIYI_HOME/hooks.log` (kept under `LOG_MAX_BYTES`, with one older file beside it). A
bad setting, which leaves no home to log to, is one line on stderr.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from huiyi.config import Settings
from huiyi.errors import HomeError, SettingsError
from huiyi.harnesses import adapters
from huiyi.harnesses.hookform import CLAUDE_STYLE, HookForm
from huiyi.policy.hook_runs import RAN_NAME, last_runs, note_run
from huiyi.policy.protocol import Failure, HookRun, Reply
from huiyi.transports.route import route
from huiyi.transports.wire import BadMessage, loads

if TYPE_CHECKING:
    from huiyi.policy.handler import RequestHandler

__all__ = ["LOG_MAX_BYTES", "LOG_NAME", "MAX_INPUT_BYTES", "RAN_NAME", "last_runs", "main", "run"]


#: the largest hook input read; anything larger is refused (a harness sends a few hundred bytes)
MAX_INPUT_BYTES = 1 << 20
LOG_NAME = "hooks.log"
#: the log is moved to `hooks.log.1` (replacing it) once it is larger than this
LOG_MAX_BYTES = 256 * 1024
#: one log line is cut to this many characters
LOG_LINE_CHARS = 600


def main(args: Sequence[str]) -> int | None:
    """`huiyi hook HARNESS EVENT` from the command line; None for anything else (`--help`, a
    wrong number of arguments), which the click command answers."""
    if len(args) != 2 or any(arg.startswith("-") for arg in args):
        return None
    harness, event = args
    return run(harness, event, sys.stdin.buffer, sys.stdout)


def run(harness: str, event: str, stdin: IO[bytes], stdout: IO[str]) -> int:
    """Serve one hook: stdin in, the harness's JSON form out. Always 0 (it fails open)."""
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        from huiyi.safety.exit import deliver_error

        # a bad value may be a pasted token (`HUIYI_MAX_INJECT_CHARS=ghp_…`): masked here too
        print(f"huiyi hook: {deliver_error(str(exc))}", file=sys.stderr)
        return 0
    try:
        reply = _serve(settings, harness, event, stdin)
    except Exception as exc:  # the top of a hook: it fails open, the log says why
        reply = Reply(failure=Failure("HuiyiError", f"internal error: {type(exc).__name__}: {exc}"))
    if reply.failure is not None:
        log(settings, harness, event, reply.failure.message)
        note_run(settings, harness, event, "failed")
        return 0
    value = reply.value if isinstance(reply.value, dict) else {}
    for note in value.get("notes") or ():
        log(settings, harness, event, str(note))
    context = value.get("context")
    if value.get("noted") is not True:  # where it was served, the run is noted already
        answered = "context" if isinstance(context, str) and context else "nothing"
        note_run(settings, harness, event, answered)
    if isinstance(context, str) and context:
        output = _form(harness).write(event, context)
        if output is not None:
            stdout.write(output + "\n")
            stdout.flush()
    return 0


def _form(harness: str) -> HookForm:
    """How this harness's hooks write what the model gets."""
    return next((a.hooks for a in adapters() if a.name == harness), CLAUDE_STYLE)


def _serve(settings: Settings, harness: str, event: str, stdin: IO[bytes]) -> Reply:
    raw = stdin.read(MAX_INPUT_BYTES + 1)
    if len(raw) > MAX_INPUT_BYTES:
        message = f"the hook input is larger than {MAX_INPUT_BYTES:,} bytes; not read"
        return Reply(failure=Failure("UsageError", message))
    try:
        payload = loads(raw, MAX_INPUT_BYTES)
    except BadMessage as exc:
        message = "the hook input is not a JSON object; nothing was done"
        if exc.reason != "not-json":
            message = f"the hook input is not read ({exc}); nothing was done"
        return Reply(failure=Failure("UsageError", message))
    opened: list[RequestHandler] = []

    def here() -> RequestHandler:
        """The core in this process, for a hook no service serves."""
        from huiyi.api import Huiyi
        from huiyi.policy.handler import RequestHandler

        opened.append(RequestHandler(Huiyi(settings=settings), threaded=False))
        return opened[-1]

    try:
        return route(HookRun(harness, event, payload), settings, here)
    finally:
        for handler in opened:
            handler.close()


def log(settings: Settings, harness: str, event: str, message: str) -> None:
    """One line in `HUIYI_HOME/hooks.log`, through the safety exit (redacted); nowhere to
    write it is no failure either."""
    from huiyi.safety.exit import deliver_error

    text = " ".join(deliver_error(message).split())[:LOG_LINE_CHARS]
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {harness} {event}: {text}\n"
    path = settings.home / LOG_NAME
    try:
        settings.ensure_home()
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(LOG_NAME + ".1"))
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except (OSError, HomeError):
        pass  # no home to write to: the hook still fails open
