"""Codex CLI rollouts: `$CODEX_HOME/{sessions,archived_sessions}/**/rollout-*.jsonl`.

Each line is `{"timestamp", "type", "payload"}`. Codex logs most things twice, once as what the
model saw (`response_item`) and once for the UI (`event_msg`), so the reader picks one copy of
each:

- Human prompts come from `event_msg/user_message`, the clean typed text. The `response_item`
  user message repeating it is dropped; a `response_item` user message holding an
  `<environment_context>` or `<user_instructions>` (AGENTS.md) block is host-injected and kept
  as an injected USER event, like `developer` messages.
- Replies come from `response_item` assistant messages; `event_msg/agent_message` repeats them.
- Tool traffic comes from `function_call` / `custom_tool_call` / `local_shell_call` and their
  `*_output` items; outputs find their tool name through `call_id` in a bounded map in state.
  An MCP call names its server in `namespace` (`mcp__huiyi`): the tool name is the full
  `mcp__huiyi__recall_history`.
- `compacted` carries the summary that replaces everything before it: a SUMMARY event whose
  seq is also the chunk's `shadow_before`.

Seqs are a running counter per file kept in the cursor state, as for Claude transcripts.
The format has no title; the store derives one.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from huiyi.model import Kind, SessionUpdate
from huiyi.sources.base import BAD_RECORD, UNKNOWN_TYPE
from huiyi.sources.fold import FileSession, JsonlReader
from huiyi.sources.jsonl import as_str, clean_text, jsonl_files, parse_time, remember

#: Text that marks a user-role `response_item` as written by Codex, not typed by the human.
INJECTED_MARKERS = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
)
_IGNORED_TYPES = frozenset({"turn_context"})
_IGNORED_ITEMS = frozenset({"reasoning", "ghost_snapshot"})
#: Tool-call item types and the field holding their arguments.
_CALL_ARGS = {
    "function_call": "arguments",
    "custom_tool_call": "input",
    "local_shell_call": "action",
    "web_search_call": "action",
}
_DEFAULT_NAMES = {"local_shell_call": "local_shell", "web_search_call": "web_search"}
_UUID_TAIL = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)
MAX_CALLS = 256


class CodexReader(JsonlReader):
    """Reads Codex CLI rollouts, live and archived."""

    source: ClassVar[str] = "codex"

    def __init__(self, home: Path) -> None:
        super().__init__([home / "sessions", home / "archived_sessions"], _Rollout)

    def discover(self) -> Iterator[Path]:
        for root in self.roots():
            yield from jsonl_files(root, prefix="rollout-")


def session_id_from_name(path: Path) -> str:
    """The uuid at the end of `rollout-<timestamp>-<uuid>.jsonl`, else the file stem."""
    match = _UUID_TAIL.search(path.stem)
    return match.group(0) if match else path.stem


def _content_text(content: object) -> str:
    """Joined `input_text` / `output_text` / `text` items of a message's content."""
    if isinstance(content, str):
        return clean_text(content)
    if not isinstance(content, list):
        return ""
    texts = [
        clean_text(item["text"])
        for item in content
        if isinstance(item, dict) and isinstance(item.get("text"), str)
    ]
    return "\n".join(t for t in texts if t)


def _tool_name(item: dict[str, Any], itype: str) -> str:
    """A call's tool name, with the MCP server's `namespace` in front when it has one."""
    name = as_str(item.get("name")) or _DEFAULT_NAMES.get(itype, itype)
    namespace = as_str(item.get("namespace"))
    if namespace is not None and not name.startswith(namespace):
        name = f"{namespace.rstrip('_')}__{name}"
    return name


def _output_text(output: object) -> str:
    """A tool output: a plain string, a `{"output": ...}` JSON envelope, or content items."""
    if isinstance(output, str):
        if output.startswith("{"):
            try:
                inner = json.loads(output)
            except ValueError:
                return clean_text(output)
            if isinstance(inner, dict) and isinstance(inner.get("output"), str):
                return clean_text(inner["output"])
        return clean_text(output)
    if isinstance(output, dict):
        if isinstance(output.get("output"), str):
            return clean_text(output["output"])
        return _content_text(output.get("content"))
    return _content_text(output)


class _Rollout(FileSession):
    """What one rollout has taught us so far; `state()` round-trips it through the cursor.

    Besides `FileSession`'s keys: `id` (the session id, fixed by the first record), `subagent`
    and `calls` (tool names by `call_id`).
    """

    source: ClassVar[str] = CodexReader.source

    def __init__(self, path: Path, state: dict[str, Any], skipped: Counter[str]) -> None:
        super().__init__(state.get("id"), state, skipped)
        self.path = path
        self.subagent: bool = state.get("subagent", False)
        self.calls: dict[str, str] = state.get("calls", {})

    def state(self) -> dict[str, Any]:
        return {
            **super().state(),
            "id": self.session_id,
            "subagent": self.subagent,
            "calls": self.calls,
        }

    def describe(self, update: SessionUpdate) -> None:
        update.is_subagent = self.subagent

    # -- records ---------------------------------------------------------------------------

    def feed(self, record: dict[str, Any]) -> None:
        rtype = record.get("type")
        payload = record.get("payload")
        if rtype in _IGNORED_TYPES:
            return
        if rtype not in ("session_meta", "response_item", "event_msg", "compacted"):
            self.skipped[UNKNOWN_TYPE] += 1
            return
        if not isinstance(payload, dict):
            self.skipped[BAD_RECORD] += 1
            return
        if self.session_id is None:  # fixed by the first record, so it never changes later
            meta_id = as_str(payload.get("id")) if rtype == "session_meta" else None
            self.session_id = meta_id or session_id_from_name(self.path)
        self.touched = True
        time = self.note_time(record.get("timestamp"))
        if rtype == "session_meta":
            self._meta(payload, time)
        elif rtype == "response_item":
            self._item(payload, time)
        elif rtype == "event_msg":
            if payload.get("type") == "user_message" and payload.get("kind") in (None, "plain"):
                text = as_str(payload.get("message")) or ""
                self.emit(Kind.USER, "user", text, time)
        else:  # compacted
            self.compact()
            text = as_str(payload.get("message")) or ""
            self.emit(Kind.SUMMARY, "user", text, time, injected=True)

    def _meta(self, payload: dict[str, Any], time: int) -> None:
        if self.cwd is None:
            self.cwd = as_str(payload.get("cwd"))
        started = parse_time(payload.get("timestamp"))
        if started is not None and (self.created is None or started < self.created):
            self.created = started
        source = payload.get("source")
        if isinstance(source, dict) and "subagent" in source:
            self.subagent = True

    def _item(self, item: dict[str, Any], time: int) -> None:
        itype = item.get("type")
        if itype == "message":
            self._message(item, time)
        elif isinstance(itype, str) and itype in _CALL_ARGS:
            name = _tool_name(item, itype)
            call_id = as_str(item.get("call_id")) or as_str(item.get("id"))
            if call_id is not None:
                remember(self.calls, call_id, name, MAX_CALLS)
            arguments = item.get(_CALL_ARGS[itype])
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            self.emit_call(call_id, name, f"{name} {clean_text(arguments)}", time)
        elif isinstance(itype, str) and itype.endswith("_output"):
            call_id = as_str(item.get("call_id"))
            tool = self.calls.get(call_id) if call_id else None
            self.emit_result(call_id, tool, _output_text(item.get("output")), time)
        elif itype not in _IGNORED_ITEMS:
            self.skipped[UNKNOWN_TYPE] += 1

    def _message(self, item: dict[str, Any], time: int) -> None:
        role = item.get("role")
        text = _content_text(item.get("content"))
        if role == "assistant":
            self.emit(Kind.ASSISTANT, "assistant", text, time)
        elif role == "user":
            if any(marker in text for marker in INJECTED_MARKERS):
                self.emit(Kind.USER, "user", text, time, injected=True)
            # any other user item repeats an event_msg/user_message prompt
        elif role in ("developer", "system"):
            self.emit(Kind.USER, str(role), text, time, injected=True)
        else:
            self.skipped[BAD_RECORD] += 1
