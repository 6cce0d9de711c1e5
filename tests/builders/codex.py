"""Write Codex CLI rollouts in the real on-disk format, for tests.

Item builders return lists of `{"type", "payload"}` lines (a typed prompt is two lines in a real
rollout: the `response_item` the model sees and the `event_msg` the UI shows); `write_rollout`
stamps each line with a timestamp, starts the file with `session_meta` and puts it where Codex
would: `<codex_home>/sessions/YYYY/MM/DD/rollout-<timestamp>-<id>.jsonl`.

    path = write_rollout(codex_home, "/home/ana/api", [
        env_context("/home/ana/api"),
        prompt("why does test_login fail only on CI?"),
        function_call("shell", {"command": ["pytest"]}, "call_1", output="1 failed"),
        assistant_message("The test binds a fixed port."),
        compacted("Earlier: diagnosed the port clash."),
    ])
    write_rollout(codex_home, "/home/ana/api", [prompt("more")], append=True)
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SESSION_ID = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
START = datetime(2026, 3, 2, 10, 15, tzinfo=UTC)
Line = dict[str, Any]
Item = Line | list[Line]
_message_ids = itertools.count(1)


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def at(n: int) -> datetime:
    """The default time of the n-th line of a rollout."""
    return START + timedelta(seconds=n)


def _item(payload: dict[str, Any]) -> Line:
    return {"type": "response_item", "payload": payload}


def _event(payload: dict[str, Any]) -> Line:
    return {"type": "event_msg", "payload": payload}


def session_meta(session_id: str, cwd: str, **extra: Any) -> Line:
    return {
        "type": "session_meta",
        "payload": {
            "id": session_id,
            "timestamp": iso(START),
            "cwd": cwd,
            "originator": "codex_cli_rs",
            "cli_version": "0.98.0",
            "source": "cli",
            "model_provider": "openai",
            **extra,
        },
    }


def message(role: str, text: str) -> Line:
    kind = "output_text" if role == "assistant" else "input_text"
    return _item({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})


def env_context(cwd: str) -> Line:
    return message("user", f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>")


def user_instructions(text: str) -> Line:
    return message("user", f"<user_instructions>\n{text}\n</user_instructions>")


def developer(text: str) -> Line:
    return message("developer", text)


def user_message(text: str) -> Line:
    """The UI copy of a typed prompt (`event_msg/user_message`)."""
    return _event({"type": "user_message", "message": text, "images": []})


def prompt(text: str) -> list[Line]:
    """A typed prompt as Codex logs it: once for the model, once for the UI."""
    return [message("user", text), user_message(text)]


def assistant_message(text: str, *, with_ui_copy: bool = True) -> list[Line]:
    """A reply, and (like Codex) its `event_msg/agent_message` copy."""
    lines = [message("assistant", text)]
    if with_ui_copy:
        lines.append(_event({"type": "agent_message", "message": text}))
    return lines


def function_call(
    name: str, arguments: dict[str, Any], call_id: str, *, output: str | None = None
) -> list[Line]:
    """A function call, followed by its output (in Codex's JSON envelope) when given."""
    lines = [
        _item(
            {
                "type": "function_call",
                "name": name,
                "arguments": json.dumps(arguments),
                "call_id": call_id,
            }
        )
    ]
    if output is not None:
        lines.append(function_call_output(call_id, output))
    return lines


def function_call_output(call_id: str, output: str, exit_code: int = 0) -> Line:
    envelope = {"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": 0.1}}
    return _item(
        {"type": "function_call_output", "call_id": call_id, "output": json.dumps(envelope)}
    )


def custom_tool_call(
    name: str, input: str, call_id: str, *, output: str | None = None
) -> list[Line]:
    """A freeform tool call (e.g. `apply_patch`), followed by its output when given."""
    lines = [_item({"type": "custom_tool_call", "name": name, "input": input, "call_id": call_id})]
    if output is not None:
        lines.append(
            _item({"type": "custom_tool_call_output", "call_id": call_id, "output": output})
        )
    return lines


# -- Codex 0.171 -----------------------------------------------------------------------------
# Shapes as in tests/clients/fixtures/codex-0.171.0-rollout.jsonl: no `event_msg/user_message`;
# each content item of a message says where it came from (`provenance`); MCP calls carry the
# server in `namespace`; new line types without conversation.


def message_171(role: str, *items: tuple[str, str]) -> Line:
    """A message whose content items are `(text, provenance type)` pairs."""
    kind = "output_text" if role == "assistant" else "input_text"
    return _item(
        {
            "type": "message",
            "id": f"msg_{next(_message_ids):04d}",
            "role": role,
            "content": [{"type": kind, "text": text} for text, _ in items],
            "internal_chat_message_metadata_passthrough": {
                "turn_id": "turn-1",
                "content_item_metadata": [{"provenance": {"type": p}} for _, p in items],
            },
        }
    )


def item_completed(item: dict[str, Any]) -> Line:
    return _event({"type": "item_completed", "thread_id": SESSION_ID, "turn_id": "t", "item": item})


def user_message_item(text: str) -> Line:
    """The UI copy of a typed prompt in 0.171 (`item_completed` with a `UserMessage`)."""
    return item_completed(
        {"type": "UserMessage", "id": "um-1", "content": [{"type": "text", "text": text}]}
    )


def prompt_171(text: str) -> list[Line]:
    """A typed prompt as Codex 0.171 logs it: the model's copy, then the UI's."""
    return [message_171("user", (text, "user")), user_message_item(text)]


def env_context_171(cwd: str) -> Line:
    return message_171(
        "user", (f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>", "harness")
    )


def mcp_call(
    name: str,
    arguments: dict[str, Any],
    call_id: str,
    *,
    namespace: str | None = "mcp__huiyi",
    output: str | None = None,
) -> list[Line]:
    """An MCP tool call as 0.171 logs it (the server in `namespace`), and its output the way
    the model receives it: a wall-time line, then the tool's text."""
    payload: dict[str, Any] = {
        "type": "function_call",
        "status": "completed",
        "name": name,
        "arguments": json.dumps(arguments, ensure_ascii=False),
        "call_id": call_id,
    }
    if namespace is not None:
        payload["namespace"] = namespace
    lines = [_item(payload)]
    if output is not None:
        lines.append(
            _item(
                {
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": [
                        {"type": "input_text", "text": "Wall time: 0.4937 seconds\nOutput:"},
                        {"type": "input_text", "text": output},
                    ],
                }
            )
        )
    return lines


def bookkeeping_171() -> list[Line]:
    """One line of each kind Codex 0.171 writes that holds no conversation."""
    return [
        _event({"type": "task_started", "turn_id": "t", "model_context_window": 258400}),
        {"type": "world_state", "payload": {"full": True, "state": {"agents_md": {}}}},
        {"type": "token_usage_record", "payload": {"thread_id": SESSION_ID, "usage": {}}},
        _event({"type": "thread_settings_applied", "thread_id": SESSION_ID}),
        _item({"type": "tool_search_call", "call_id": "ts1", "arguments": {"query": "huiyi"}}),
        _item({"type": "tool_search_output", "call_id": "ts1", "tools": []}),
        _event({"type": "token_count", "info": None}),
        item_completed({"type": "AgentMessage", "id": "m", "content": [{"type": "Text"}]}),
        item_completed({"type": "McpToolCall", "id": "c", "server": "huiyi", "tool": "x"}),
        _event({"type": "task_complete", "turn_id": "t", "last_agent_message": "done"}),
    ]


def reasoning() -> Line:
    return _item({"type": "reasoning", "summary": [], "encrypted_content": "gAAAA..."})


def token_count() -> Line:
    return _event({"type": "token_count", "info": None})


def turn_context(cwd: str) -> Line:
    return {"type": "turn_context", "payload": {"cwd": cwd, "model": "gpt-x"}}


def compacted(summary: str) -> Line:
    return {"type": "compacted", "payload": {"message": summary}}


#: The preamble Codex 0.171 writes in front of the summary in `compacted`, word for word
PREAMBLE_171 = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by that "
    "language model. Use this to build on the work that has already been done and avoid "
    "duplicating work. Here is the summary produced by the other language model, use the "
    "information in this summary to assist with your own analysis:"
)


def compaction_171(summary: str, *, flagged: bool = True, preamble: str = PREAMBLE_171) -> Item:
    """A manual compaction as Codex 0.171 logs it (tests/clients/README.md): the model's answer
    to the summary request as an assistant message (with `flagged`, its record says
    `compaction_output`, as 0.171's do), then `compacted` with the preamble, the summary and
    the history that replaces the old one, then the UI's `ContextCompaction`."""
    reply = message_171("assistant", (summary, "unknown"))
    if flagged:
        reply["metadata"] = {"client_authored": False, "compaction_output": True}
    return [
        _event({"type": "task_started", "turn_id": "t2", "model_context_window": 258400}),
        _event({"type": "token_count", "info": None}),
        reply,
        {"type": "token_usage_record", "payload": {"thread_id": SESSION_ID, "usage": {}}},
        {
            "type": "compacted",
            "payload": {
                "message": f"{preamble}\n{summary}",
                "replacement_history": [message_171("user", (summary, "harness"))["payload"]],
            },
        },
        {"type": "world_state", "payload": {"full": True, "state": {}}},
        item_completed({"type": "ContextCompaction", "id": "cc-1"}),
        _event({"type": "task_complete", "turn_id": "t2", "last_agent_message": None}),
    ]


# -- files ---------------------------------------------------------------------------------


def rollout_path(codex_home: Path, session_id: str = SESSION_ID, *, archived: bool = False) -> Path:
    stamp = START.strftime("%Y-%m-%dT%H-%M-%S")
    name = f"rollout-{stamp}-{session_id}.jsonl"
    if archived:
        return codex_home / "archived_sessions" / name
    return codex_home / "sessions" / START.strftime("%Y/%m/%d") / name


def flatten(items: Iterable[Item]) -> list[Line]:
    out: list[Line] = []
    for item in items:
        out.extend(item if isinstance(item, list) else [item])
    return out


def lines(records: Iterable[Line], *, first: int = 0) -> bytes:
    """JSONL bytes, each line stamped `at(n)` unless it has its own timestamp."""
    out = []
    for n, record in enumerate(records, start=first):
        stamped = {"timestamp": iso(at(n)), **record}
        out.append(json.dumps(stamped, ensure_ascii=False).encode("utf-8") + b"\n")
    return b"".join(out)


def write_rollout(
    codex_home: Path,
    cwd: str,
    items: Iterable[Item],
    *,
    session_id: str = SESSION_ID,
    archived: bool = False,
    append: bool = False,
) -> Path:
    """Write (or with `append`, grow) a rollout and return its path; a new file starts with
    `session_meta`."""
    path = rollout_path(codex_home, session_id, archived=archived)
    path.parent.mkdir(parents=True, exist_ok=True)
    records = flatten(items)
    first = 0
    if append and path.exists():
        first = path.read_bytes().count(b"\n")
    else:
        records.insert(0, session_meta(session_id, cwd))
    with path.open("ab" if append else "wb") as handle:
        handle.write(lines(records, first=first))
    return path
