"""The Claude-Code form of a command hook, which all three harnesses speak: what a harness
hands `huiyi hook` on stdin, normalised into one `HookCall`, and the one JSON object it takes
back on stdout.

Claude Code, Codex and DSH's Claude-Code bridge run a command at fixed points of a session and
hand it one JSON object (`session_id`, `cwd`, `transcript_path`, and per event `source`,
`prompt`, ...). What the model gets goes back as `{"hookSpecificOutput": {"hookEventName":
"<Event>", "additionalContext": "..."}}` (DSH's bridge ignores plain stdout); nothing at all
when there is nothing to inject. A harness with another form declares its own `HookForm` in its
adapter.

Standard library and the leaves only: the hook command imports this before it knows whether
the core will be needed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import NamedTuple

from huiyi.errors import UsageError

__all__ = ["CLAUDE_STYLE", "CONTEXT_EVENTS", "EVENTS", "HookCall", "HookForm"]

EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop")
#: the events whose answer the harness puts in front of the model
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit")


class HookCall(NamedTuple):
    """One hook, as the harness described it: the normalised event every harness's form
    reads into."""

    harness: str
    event: str
    session_id: str | None = None
    cwd: str | None = None
    transcript: str | None = None
    prompt: str | None = None
    #: SessionStart only: startup, resume, clear or compact
    source: str | None = None


class HookForm(NamedTuple):
    """How one harness's hooks speak: its input read into a `HookCall` (a `UsageError` says
    what is wrong with it), and the model's context written as its stdout (None: nothing)."""

    read: Callable[[str, str, object], HookCall]
    write: Callable[[str, str], str | None]


def _read(harness: str, event: str, payload: object) -> HookCall:
    if event not in EVENTS:
        raise UsageError(f"unknown hook event {event!r}; huiyi serves {', '.join(EVENTS)}")
    if not isinstance(payload, Mapping):
        raise UsageError("the hook input must be a JSON object")
    named = payload.get("hook_event_name")
    if named is not None and named != event:
        raise UsageError(f"the hook input is for {str(named)[:40]!r}, not for {event}")
    values: dict[str, str | None] = {}
    for key in ("session_id", "cwd", "transcript_path", "prompt", "source"):
        value = payload.get(key)
        if value is not None and not isinstance(value, str):
            raise UsageError(f"the hook input's {key} must be a string")
        values[key] = value or None
    return HookCall(
        harness,
        event,
        session_id=values["session_id"],
        cwd=values["cwd"],
        transcript=values["transcript_path"],
        prompt=values["prompt"],
        source=values["source"],
    )


def _write(event: str, context: str) -> str | None:
    if not context:
        return None
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    return json.dumps(output, ensure_ascii=False)


CLAUDE_STYLE = HookForm(_read, _write)
