"""How a tool call is written inside an assistant event's text, and read back.

An assistant message with text keeps its tool-call blocks in the event text, after the message:
one line `[tool call: NAME] ARGUMENTS` per call (ARGUMENTS the call's JSON, on one line, its long
string values shortened). The DSH reader writes them (`harnesses.dsh.fold`) and the compaction
skeleton reads them back (`recall.skeleton`), so the convention lives here, below both.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["CALL_MARK", "split_tool_calls", "tool_call_line"]

#: (a message with calls only is a TOOL_CALL event whose text is `NAME ARGUMENTS` per call)
CALL_MARK = "[tool call: "
_CALL_LINE = re.compile(r"\[tool call: ([^\]\n]*)\] ?(.*)")
_CALL_ARGS_CHARS = 600  #: arguments longer than this (or spread over lines) are shortened
_CALL_VALUE_CHARS = 200  #: ... by cutting every string value to this many characters


def tool_call_line(name: str, arguments: str) -> str:
    """The line that stands for one tool call in an assistant event's text."""
    args = arguments.strip()
    if len(args) > _CALL_ARGS_CHARS or "\n" in args:
        args = _shorten_arguments(args)
    return f"{CALL_MARK}{name}] {args}".rstrip()


def split_tool_calls(text: str) -> tuple[str, list[tuple[str, str]]]:
    """An assistant event's text as (message text, [(name, arguments), ...]).

    Only the run of call lines that ends the text counts, so a message that merely quotes
    such a line keeps it."""
    lines = text.split("\n")
    calls: list[tuple[str, str]] = []
    while lines:
        match = _CALL_LINE.fullmatch(lines[-1])
        if match is None:
            break
        calls.append((match.group(1), match.group(2)))
        lines.pop()
    if not calls:
        return text, []
    return "\n".join(lines).rstrip("\n"), calls[::-1]


def _shorten_arguments(raw: str) -> str:
    try:
        return json.dumps(_shorten_values(json.loads(raw)), ensure_ascii=False)
    except (ValueError, RecursionError):  # no JSON, or too deep to walk: shorten it as text
        flat = " ".join(raw.split())
        return flat if len(flat) <= _CALL_ARGS_CHARS else flat[: _CALL_ARGS_CHARS - 1] + "…"


def _shorten_values(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= _CALL_VALUE_CHARS else value[: _CALL_VALUE_CHARS - 1] + "…"
    if isinstance(value, list):
        return [_shorten_values(v) for v in value]
    if isinstance(value, dict):
        return {k: _shorten_values(v) for k, v in value.items()}
    return value
