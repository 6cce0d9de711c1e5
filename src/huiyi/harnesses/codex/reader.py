"""Codex CLI rollouts: `$CODEX_HOME/{sessions,archived_sessions}/**/rollout-*.jsonl`.

Each line is `{"timestamp", "type", "payload"}`. Codex logs most things twice, once as what the
model saw (`response_item`) and once for the UI (`event_msg`), so the reader picks one copy of
each:

- A human prompt is a `response_item` user message (what the model saw) and one or two UI
  copies: `event_msg/user_message` in older builds, `event_msg/item_completed` with a
  `UserMessage` item in newer ones (0.171 logs no `user_message`). Whichever copy comes first
  becomes the USER event; the others are recognised by their text (a short hash of it in the
  state, under `prompts`) and dropped, so either shape, or both, gives one event per prompt.
- Not every user message is the human's: content items holding an `<environment_context>`,
  `<user_instructions>`, AGENTS.md or similar block are host-injected (newer builds also say
  so in each item's `provenance`), and `developer` messages are always host-injected. They
  are kept as injected USER events.
- Replies come from `response_item` assistant messages; `event_msg/agent_message` and
  `item_completed` repeat them.
- Tool traffic comes from `function_call` / `custom_tool_call` / `local_shell_call` and their
  `*_output` items; outputs find their tool name through `call_id` in a bounded map in state.
  An MCP call names its server in `namespace` (`mcp__huiyi`): the tool name is the full
  `mcp__huiyi__recall_history`.
- `compacted` carries the summary that replaces everything before it: a SUMMARY event whose
  seq is also the chunk's `shadow_before`. Codex 0.171 puts a fixed preamble addressed to the
  model in front of the summary ("Another language model started to solve this problem ...
  to assist with your own analysis:"); the SUMMARY holds the summary alone (`summary_of`).
- The model's answer to the compaction request is logged first, as an ordinary assistant
  message, but it is the summary, not conversation: it is kept as an injected ASSISTANT event
  (left out of search, skeletons and anchors, like other host traffic). 0.171 says so on the
  record (`metadata.compaction_output`); without that, a reply whose text is the summary of
  the `compacted` right after it is emitted again, injected, under its seq (the last reply is
  remembered in the state, under `reply`, for a read cut between them). Its text also tells
  where the summary starts in `compacted` when the preamble's words are new.
- Everything else Codex is known to log (`_IGNORED_TYPES`, `_IGNORED_ITEMS`, `_IGNORED_EVENTS`)
  is passed over without being counted; what is on none of these lists counts `unknown-type`.

Seqs are a running counter per file kept in the cursor state, as for Claude transcripts.
The format has no title; the store derives one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from huiyi.config import Settings
from huiyi.model import Kind
from huiyi.sources.base import BAD_RECORD, UNKNOWN_TYPE, SessionUpdate, name_text
from huiyi.sources.fold import FileSession, JsonlReader
from huiyi.sources.jsonl import as_str, clean_text, jsonl_files, parse_time, remember

#: How a user-role content item written by Codex (not typed by the human) begins.
INJECTED_MARKERS = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<skills_instructions>",
    "<permissions instructions>",
    "<turn_aborted>",
)
#: A content item that is one `<some_tag>...</some_tag>` block (a tag with `_` or a space in
#: its name, which HTML never has) is Codex's too, whatever the tag.
_INJECTED_BLOCK = re.compile(r"\s*<([a-z]+(?:[_ ][a-z]+)+)>.*</\1>\s*", re.DOTALL)
#: Top-level line types without conversation.
_IGNORED_TYPES = frozenset({"turn_context", "world_state", "token_usage_record"})
#: `response_item` types without conversation (reasoning is often encrypted; tool search
#: only loads tool definitions).
_IGNORED_ITEMS = frozenset(
    {"reasoning", "ghost_snapshot", "tool_search_call", "tool_search_output"}
)
#: `event_msg` types the reader passes over: UI copies of what `response_item`s hold, and
#: bookkeeping. `user_message` and `item_completed` (a `UserMessage`) are the UI copies of a
#: prompt, read for it.
_IGNORED_EVENTS = frozenset(
    {
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "agent_reasoning_section_break",
        "background_event",
        "context_compacted",
        "entered_review_mode",
        "error",
        "exec_command_begin",
        "exec_command_end",
        "exited_review_mode",
        "item_started",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
        "patch_apply_begin",
        "patch_apply_end",
        "plan_update",
        "stream_error",
        "task_complete",
        "task_started",
        "thread_rolled_back",
        "thread_settings_applied",
        "token_count",
        "turn_aborted",
        "turn_diff",
        "view_image_tool_call",
        "warning",
        "web_search_begin",
        "web_search_end",
    }
)
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
#: Codex's preamble in front of the summary in `compacted`: one line addressed to the model that
#: speaks of a summary and of another model, at least `_PREAMBLE_CHARS` long, ending in a
#: colon. Its words are not pinned, only its shape; a message without it is the summary.
_PREAMBLE_CHARS = 100
_SUMMARY_PREAMBLE = re.compile(
    r"\s*(?=[^\n]*\bsummary\b)(?=[^\n]*\b(?:language model|LLM|model|agent)\b)"
    rf"[^\n]{{{_PREAMBLE_CHARS},2000}}:[ \t]*\r?\n",
    re.IGNORECASE,
)
MAX_CALLS = 256
#: Prompts remembered for recognising their other copies.
MAX_PROMPTS = 16


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
    return match.group(0) if match else name_text(path.stem)


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


def _is_injected_item(text: str, provenance: object) -> bool:
    """Whether one content item of a user-role message was written by Codex: its provenance
    says so (newer builds), else it opens with a block Codex injects."""
    if isinstance(provenance, str):
        return provenance != "user"
    head = text.lstrip()
    return head.startswith(INJECTED_MARKERS) or _INJECTED_BLOCK.fullmatch(text) is not None


def _provenances(item: dict[str, Any]) -> list[object]:
    """Each content item's `provenance.type`, where the message says (None where not)."""
    meta = item.get("internal_chat_message_metadata_passthrough")
    kinds = meta.get("content_item_metadata") if isinstance(meta, dict) else None
    out: list[object] = []
    for entry in kinds if isinstance(kinds, list) else []:
        source = entry.get("provenance") if isinstance(entry, dict) else None
        out.append(source.get("type") if isinstance(source, dict) else None)
    return out


def _split_user_content(item: dict[str, Any]) -> tuple[str, str]:
    """(human text, host-injected text) of a user-role message, item by item."""
    content = item.get("content")
    if isinstance(content, str):
        content = [{"type": "input_text", "text": content}]
    if not isinstance(content, list):
        return "", ""
    provenances = _provenances(item)
    human: list[str] = []
    injected: list[str] = []
    for n, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("text"), str):
            continue
        text = clean_text(part["text"])
        if not text:
            continue
        provenance = provenances[n] if n < len(provenances) else None
        (injected if _is_injected_item(text, provenance) else human).append(text)
    return "\n".join(human), "\n".join(injected)


def summary_of(message: str, reply: str | None = None) -> str:
    """The model's summary in a `compacted` message: without the host's preamble in front of
    it. `reply` is the text of the assistant message just before, when it may be the summary:
    a message ending in it (after more than blank space) is that summary behind a preamble,
    whatever its words. A message in neither shape is the summary as it is."""
    if reply and message.endswith(reply) and message[: -len(reply)].strip():
        return reply.strip()
    match = _SUMMARY_PREAMBLE.match(message)
    if match is not None and message[match.end() :].strip():
        return message[match.end() :].strip()
    return message


def _text_key(text: str) -> str:
    """A short hash of a text's words, to recognise its other copies (a prompt's, and the
    summary's)."""
    words = " ".join(text.split())
    return hashlib.sha1(words.encode("utf-8", "surrogatepass")).hexdigest()[:16]


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
            except (ValueError, RecursionError):
                return clean_text(output)
            if isinstance(inner, dict) and isinstance(inner.get("output"), str):
                return clean_text(inner["output"])
        return clean_text(output)
    if isinstance(output, dict):
        if isinstance(output.get("output"), str):
            return clean_text(output["output"])
        return _content_text(output.get("content"))
    return _content_text(output)


def _parent_thread(source: object, depth: int = 0) -> str | None:
    """The parent thread a subagent's `session_meta` source names, wherever it is nested
    (`{"subagent": {"thread_spawn": {"parent_thread_id": …}}}`)."""
    if not isinstance(source, dict) or depth > 4:
        return None
    for key, value in source.items():
        if key in ("parent_thread_id", "parent_session_id", "parent_id"):
            found = as_str(value)
            if found:
                return found
        nested = _parent_thread(value, depth + 1)
        if nested is not None:
            return nested
    return None


class _Rollout(FileSession):
    """What one rollout has taught us so far; `state()` round-trips it through the cursor.

    Besides `FileSession`'s keys: `id` (the session id, fixed by the first record), `subagent`,
    `calls` (tool names by `call_id`), `prompts` (recent prompts: a hash of the text and
    the copies seen, oldest first) and `reply` (the latest assistant message: its seq
    and time, and a hash of its text).
    """

    source: ClassVar[str] = CodexReader.source

    def __init__(self, path: Path, state: dict[str, Any], skipped: Counter[str]) -> None:
        super().__init__(state.get("id"), state, skipped)
        self.path = path
        self.subagent: bool = state.get("subagent", False)
        self.parent: str | None = state.get("parent")
        self.calls: dict[str, str] = state.get("calls", {})
        self.prompts: list[list[Any]] = state.get("prompts", [])
        self.reply: list[Any] | None = state.get("reply")

    def state(self) -> dict[str, Any]:
        return {
            **super().state(),
            "id": self.session_id,
            "subagent": self.subagent,
            **({"parent": self.parent} if self.parent is not None else {}),
            "calls": self.calls,
            "prompts": self.prompts,
            "reply": self.reply,
        }

    def describe(self, update: SessionUpdate) -> None:
        update.is_subagent = self.subagent
        update.parent = self.parent

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
        # everything is taken from the record before anything changes (`base.take_record`):
        # reading it gives its effect, applied once the whole record has been read
        stamp = parse_time(record.get("timestamp"))
        if rtype == "session_meta":
            effect = self._meta(payload)
        elif rtype == "response_item":
            meta = record.get("metadata")
            effect = self._item(
                payload, isinstance(meta, dict) and bool(meta.get("compaction_output"))
            )
        elif rtype == "event_msg":
            effect = self._event(payload)
        else:  # compacted
            effect = partial(self._compacted, as_str(payload.get("message")) or "")
        if self.session_id is None:  # fixed by the first record, so it never changes later
            meta_id = as_str(payload.get("id")) if rtype == "session_meta" else None
            self.session_id = meta_id or session_id_from_name(self.path)
        self.touched = True
        effect(self.note_time(stamp))

    def _meta(self, payload: dict[str, Any]) -> _Effect:
        cwd = as_str(payload.get("cwd"))
        started = parse_time(payload.get("timestamp"))
        source = payload.get("source")
        subagent = isinstance(source, dict) and "subagent" in source
        parent = _parent_thread(source) if subagent else None

        def apply(time: int) -> None:
            if self.cwd is None:
                self.cwd = cwd
            if started is not None and (self.created is None or started < self.created):
                self.created = started
            if subagent:
                self.subagent = True
            if parent is not None and self.parent is None:
                self.parent = parent

        return apply

    def _event(self, payload: dict[str, Any]) -> _Effect:
        etype = payload.get("type")
        if etype == "user_message":
            if payload.get("kind") in (None, "plain"):
                return partial(self._prompt, "event", as_str(payload.get("message")) or "")
        elif etype == "item_completed":
            item = payload.get("item")
            if isinstance(item, dict) and item.get("type") == "UserMessage":
                return partial(self._prompt, "completed", _content_text(item.get("content")))
        elif etype not in _IGNORED_EVENTS:
            return self._count(UNKNOWN_TYPE)
        return _nothing

    def _item(self, item: dict[str, Any], summary: bool) -> _Effect:
        """A `response_item`; `summary`: the record says it is the model's compaction summary."""
        itype = item.get("type")
        if itype in _IGNORED_ITEMS:
            return _nothing
        if itype == "message":
            return self._message(item, summary)
        if isinstance(itype, str) and itype in _CALL_ARGS:
            name = _tool_name(item, itype)
            call_id = as_str(item.get("call_id")) or as_str(item.get("id"))
            arguments = item.get(_CALL_ARGS[itype])
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            return partial(self._call, call_id, name, f"{name} {clean_text(arguments)}")
        if isinstance(itype, str) and itype.endswith("_output"):
            call_id = as_str(item.get("call_id"))
            return partial(self._output, call_id, _output_text(item.get("output")))
        return self._count(UNKNOWN_TYPE)

    def _message(self, item: dict[str, Any], summary: bool) -> _Effect:
        role = item.get("role")
        if role == "assistant":
            return partial(self._reply, _content_text(item.get("content")), summary)
        if role == "user":
            human, injected = _split_user_content(item)

            def apply(time: int) -> None:
                self.emit(Kind.USER, "user", injected, time, injected=True)
                self._prompt("item", human, time)

            return apply
        if role in ("developer", "system"):
            return partial(
                self._say, Kind.USER, str(role), _content_text(item.get("content")), True
            )
        return self._count(BAD_RECORD)

    # -- effects: what a record does, once it has been read whole ----------------------------

    def _count(self, reason: str) -> _Effect:
        def apply(time: int) -> None:
            self.skipped[reason] += 1

        return apply

    def _say(self, kind: Kind, role: str, text: str, injected: bool, time: int) -> None:
        self.emit(kind, role, text, time, injected=injected)

    def _call(self, call_id: str | None, name: str, text: str, time: int) -> None:
        if call_id is not None:
            remember(self.calls, call_id, name, MAX_CALLS)
        self.emit_call(call_id, name, text, time)

    def _output(self, call_id: str | None, text: str, time: int) -> None:
        tool = self.calls.get(call_id) if call_id else None
        self.emit_result(call_id, tool, text, time)

    def _reply(self, text: str, summary: bool, time: int) -> None:
        """An assistant message: conversation, or (`summary`) the model's compaction summary."""
        seq = self.seq
        if self.emit(Kind.ASSISTANT, "assistant", text, time, injected=summary):
            self.reply = [seq, time, _text_key(text)]

    def _compacted(self, message: str, time: int) -> None:
        """The compaction: its summary, and the reply right before it (nothing took a seq in
        between) marked when it was the summary all along."""
        reply = self.reply if self.reply is not None and self.reply[0] == self.seq - 1 else None
        said = self.events.get(reply[0]) if reply is not None else None  # read this time
        text = summary_of(message, said.text if said is not None else None)
        if reply is not None and _text_key(text) == reply[2]:
            again = said.text if said is not None else text
            self.emit(Kind.ASSISTANT, "assistant", again, reply[1], injected=True, seq=reply[0])
        self.compact()
        self.emit(Kind.SUMMARY, "user", text, time, injected=True)

    def _prompt(self, copy: str, text: str, time: int) -> None:
        """One copy of a human prompt: the first copy of it is the USER event."""
        if not text.strip():
            return
        key = _text_key(text)
        for entry in self.prompts:
            if entry[0] == key and copy not in entry[1]:
                entry[1].append(copy)
                return  # another copy of a prompt already emitted
        self.prompts.append([key, [copy]])
        del self.prompts[:-MAX_PROMPTS]
        self.emit(Kind.USER, "user", text, time)


#: What a record does to the rollout, given the record's time.
_Effect = Callable[[int], None]


def _nothing(time: int) -> None:
    """The effect of a record that is passed over."""


def reader(settings: Settings) -> CodexReader:
    """This harness's logs, where `settings` say they are."""
    return CodexReader(settings.codex_home)
