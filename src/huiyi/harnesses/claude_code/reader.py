"""Claude Code transcripts: `<config dir>/projects/<encoded cwd>/<session>.jsonl`.

One file is one session (its stem is the id; subagent transcripts, `agent-<id>.jsonl` beside
it in older builds or `<session>/subagents/agent-<id>.jsonl` in newer ones, are sessions of
their own whose parent is the records' `sessionId`). Three quirks of the format shape the code:

- **Split replies.** One API reply is written as several lines that share `message.id`, one
  content block per line, sometimes repeating a block. Consecutive assistant lines of one
  `message.id` become one ASSISTANT event (texts joined, repeats dropped). Its seq is fixed when
  its first text arrives; when a later read brings more of it, the event is emitted again with
  the same seq and the store upserts it. The reply in progress lives in the cursor state.
- **Copies.** Resumed sessions copy earlier records into a new file, so every event carries a
  `uid` (the record `uuid`, the reply's `message.id`, the `tool_use` id) and the store keeps the
  first; a `uuid` repeated within one file is dropped here.
- **Compaction.** A `system` record with `subtype: compact_boundary` hides everything before it
  from the model: the chunk's `shadow_before` becomes the next seq, and the `isCompactSummary`
  user record after it is the SUMMARY that stays current.

The format has no sequence numbers, so seqs are a running counter per file kept in the state:
the same bytes always get the same seqs, however the reads were cut.

Titles come from `custom-title` (the user named the session), `ai-title` (Claude Code named
it) and, in older builds, `summary` records: a custom title wins over an AI title, which wins
over a summary, and within each kind the latest wins. Many record types are the client's own
bookkeeping (`_IGNORED`): they are passed over without being counted; a type on neither list
is counted `unknown-type`. Of the `attachment` records (the client's context for the model) only
`queued_command` is conversation: a prompt typed while the model was busy, indexed as the user
message it is.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from huiyi.config import Settings
from huiyi.model import Kind
from huiyi.sources.base import BAD_RECORD, UNKNOWN_TYPE, SessionUpdate, name_text
from huiyi.sources.fold import FileSession, JsonlReader
from huiyi.sources.jsonl import as_str, clean_text, parse_time, remember

#: Record types that carry nothing to index (bookkeeping of the Claude Code client): passed
#: over without being counted.
_IGNORED = frozenset(
    {
        "agent-name",
        "api-request",
        "api-request-blob",
        "api-request-shape",
        "atis-latch",
        "cost-state",
        "file-history-snapshot",
        "last-prompt",
        "mode",
        "progress",
        "queue-operation",
        "tag",
        "tools-used",
    }
)
#: Record types that name the session and the field holding the name, strongest first.
_TITLE_FIELDS = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}
_WRAPPER = re.compile(
    r"\s*<(?:command-name|command-message|command-args|local-command-stdout|"
    r"local-command-stderr|local-command-caveat)>"
)
_INTERRUPTED = "[Request interrupted by user"
_SUBAGENT_PREFIX = "agent-"
#: Bounds on what the cursor state remembers (tool names by id, recent record uuids).
MAX_TOOLS = 256
MAX_UUIDS = 256
#: A record uuid or tool id is remembered as this many characters (`_seen_key`): 6 bytes of
#: BLAKE2b in base64. Kept whole, they were a seventh of an index (8 of 57 MB at 104k messages);
#: two of the 256 remembered in one file share a key with a chance of about 1e-10, and then the
#: later record would be taken for a copy of the earlier one (a result for its tool's).
SEEN_CHARS = 8


class ClaudeReader(JsonlReader):
    """Reads Claude Code transcripts under each config dir's `projects/` folder."""

    source: ClassVar[str] = "claude"

    def __init__(self, dirs: Sequence[Path]) -> None:
        super().__init__([d / "projects" for d in dirs], _Transcript)

    def discover(self) -> Iterator[Path]:
        seen: set[str] = set()
        for root in self.roots():
            for path in _transcripts(root):
                key = os.path.realpath(path)
                if key not in seen:
                    seen.add(key)
                    yield path


def is_subagent_file(path: Path) -> bool:
    return path.name.startswith(_SUBAGENT_PREFIX)


def _transcripts(root: Path) -> list[Path]:
    """`<project>/*.jsonl` and `<project>/<session>/subagents/agent-*.jsonl`, sorted; a missing
    or vanishing root gives what could be listed (os.walk ignores listing errors)."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        depth = len(Path(dirpath).relative_to(root).parts)
        # 0: projects/  1: a project  2: a session's folder  3: its subagents/
        if depth == 2:
            dirnames[:] = ["subagents"] if "subagents" in dirnames else []
        elif depth >= 3:
            dirnames.clear()
        else:
            dirnames.sort()
        names = sorted(n for n in filenames if n.endswith(".jsonl"))
        if depth == 1:
            found.extend(Path(dirpath) / n for n in names)
        elif depth == 3:
            found.extend(Path(dirpath) / n for n in names if n.startswith(_SUBAGENT_PREFIX))
    return found


def _block_text(content: object) -> str:
    """The text of a string or of a list of content blocks (images and the like left out)."""
    if isinstance(content, str):
        return clean_text(content)
    if isinstance(content, list):
        texts = [
            clean_text(b["text"])
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        return "\n".join(t for t in texts if t)
    return ""


def _is_host_text(text: str) -> bool:
    """Slash-command wrappers and interruption notes: user-role text the human did not type."""
    return _WRAPPER.match(text) is not None or text.startswith(_INTERRUPTED)


class _Transcript(FileSession):
    """What one transcript has taught us so far; `state()` round-trips it through the cursor.

    Besides `FileSession`'s keys: `title` (the title in force), `titles` (the latest title
    of each kind), `parent`, `sidechain`, `calls` (tool names by the `_seen_key` of their
    `tool_use` id), `seen` (the recent record uuids, as `_seen_key`s joined into one string)
    and `reply` (the reply being assembled). States saved before `calls` and `seen` hold the
    ids themselves, under `tools` and `uuids`.
    """

    source: ClassVar[str] = ClaudeReader.source

    def __init__(self, path: Path, state: dict[str, Any], skipped: Counter[str]) -> None:
        super().__init__(name_text(path.stem), state, skipped)
        self.subagent_file = is_subagent_file(path)
        self.title: str | None = state.get("title")
        # a state saved before `titles` existed knows only the title in force
        legacy = {"summary": self.title} if self.title is not None else {}
        self.titles: dict[str, str] = state.get("titles", legacy)
        #: every title record of this read, in order (not kept between reads)
        self.titles_seen: list[str] = []
        self.parent: str | None = state.get("parent")
        self.sidechain: bool = state.get("sidechain", False)
        self.calls: dict[str, str] = (
            state["calls"]
            if "calls" in state
            else {_seen_key(i): name for i, name in state.get("tools", {}).items()}
        )
        self.seen: dict[str, None] = dict.fromkeys(
            _seen_keys(state["seen"]) if "seen" in state else map(_seen_key, state.get("uuids", []))
        )
        # the assistant reply being assembled: its message.id, seq, time and texts so far
        reply: dict[str, Any] = state.get("reply") or {}
        self.reply_id: str | None = reply.get("id")
        self.reply_seq: int | None = reply.get("seq")
        self.reply_time: int = reply.get("time", 0)
        self.reply_texts: list[str] = reply.get("texts", [])

    def state(self) -> dict[str, Any]:
        reply = None
        if self.reply_id is not None:
            reply = {
                "id": self.reply_id,
                "seq": self.reply_seq,
                "time": self.reply_time,
                "texts": self.reply_texts,
            }
        return {
            **super().state(),
            "title": self.title,
            "titles": self.titles,
            "parent": self.parent,
            "sidechain": self.sidechain,
            "calls": self.calls,
            "seen": "".join(self.seen),
            "reply": reply,
        }

    def has_news(self) -> bool:
        """Events, a compaction, or a record read with the cwd known (a title alone is not)."""
        return (
            bool(self.events) or self.shadow_before is not None or bool(self.touched and self.cwd)
        )

    def describe(self, update: SessionUpdate) -> None:
        update.title = self.title
        update.titles_seen = tuple(self.titles_seen)
        update.parent = self.parent
        update.is_subagent = self.subagent_file or self.sidechain

    # -- records ---------------------------------------------------------------------------

    def feed(self, record: dict[str, Any]) -> None:
        rtype = record.get("type")
        if isinstance(rtype, str) and rtype in _TITLE_FIELDS:
            title = as_str(record.get(_TITLE_FIELDS[rtype]))
            if title is not None and title.strip():
                self.titles[rtype] = title.strip()
                self.title = next(self.titles[k] for k in _TITLE_FIELDS if k in self.titles)
                self.titles_seen.append(title.strip())
                self.touched = True
            return
        if rtype == "attachment":
            queued = _queued_prompt(record)
            if queued is None:
                return  # the client's context for the model: reminders, listings, dates
            record, rtype = queued, "user"
        elif rtype in _IGNORED:
            return
        if rtype not in ("user", "assistant", "system"):
            self.skipped[UNKNOWN_TYPE] += 1
            return
        # everything is taken from the record before anything changes (`base.take_record`)
        uuid = as_str(record.get("uuid"))
        cwd = as_str(record.get("cwd")) if self.cwd is None else None
        sidechain = record.get("isSidechain") is True
        # a subagent's records name its parent in `sessionId`, whatever its file is called
        want_parent = (self.subagent_file or sidechain) and self.parent is None
        parent = as_str(record.get("sessionId")) if want_parent else None
        if parent == self.session_id:
            parent = None
        stamp = parse_time(record.get("timestamp"))
        boundary = rtype == "system" and record.get("subtype") == "compact_boundary"
        message = record.get("message")
        user: _UserMessage | None = None
        reply: _Reply | None = None
        if rtype == "user" and isinstance(message, dict):
            user = _read_user(record, message)
        elif rtype == "assistant" and isinstance(message, dict):
            reply = _read_reply(message, uuid)
        # read whole: from here on the record only changes the transcript
        if uuid is not None:
            seen = _seen_key(uuid)
            if seen in self.seen:
                return  # the same record written twice
            remember(self.seen, seen, None, MAX_UUIDS)
        self.touched = True
        if cwd is not None:
            self.cwd = cwd
        if parent is not None:
            self.parent = parent
        if sidechain:
            self.sidechain = True
        time = self.note_time(stamp)
        if rtype == "system":
            if boundary:
                self.compact()
                self.reply_id = None
        elif user is not None:
            self._user(user, uuid, time)
        elif reply is not None:
            self._assistant(reply, time)
        else:
            self.skipped[BAD_RECORD] += 1

    def _user(self, user: _UserMessage, uuid: str | None, time: int) -> None:
        if user.summary is not None:
            # normally right after a compact_boundary (the same seq); older builds wrote no
            # boundary, and the summary alone marks where the model's view begins
            self.compact()
            self.emit(Kind.SUMMARY, "user", user.summary, time, injected=True, uid=uuid)
            return
        # consecutive text blocks make one USER event, each tool_result block a TOOL_RESULT
        # (with the tool_use id it answers)
        n = 0
        for kind, text, tool_id in user.parts:
            if kind == Kind.USER:
                injected = user.meta or _is_host_text(text)
                emitted = self.emit(kind, "user", text, time, injected=injected, uid=_nth(uuid, n))
            else:
                tool = self.calls.get(_seen_key(tool_id)) if tool_id else None
                emitted = self.emit_result(tool_id, tool, text, time, uid=_nth(uuid, n))
            if emitted:
                n += 1

    def _assistant(self, reply: _Reply, time: int) -> None:
        message_id = reply.id
        if message_id is None or message_id != self.reply_id:
            self.reply_id, self.reply_seq, self.reply_time = message_id, None, time
            self.reply_texts = []
        for block in reply.blocks:
            if isinstance(block, str):
                if block in self.reply_texts:
                    continue
                self.reply_texts.append(block)
                if self.reply_seq is None:
                    self.reply_seq = self.next_seq()
                self.emit(
                    Kind.ASSISTANT,
                    "assistant",
                    "\n\n".join(self.reply_texts),
                    self.reply_time,
                    uid=message_id,
                    seq=self.reply_seq,
                )
            else:
                self._tool_use(block, reply.uuid, time)

    def _tool_use(self, call: _ToolUse, uuid: str | None, time: int) -> None:
        key = _seen_key(call.id) if call.id is not None else None
        if key is not None and key in self.calls:
            return  # the same block repeated by a split reply
        if key is not None:
            remember(self.calls, key, call.name, MAX_TOOLS)
        text = f"{call.name} {call.arguments}"
        self.emit_call(call.id, call.name, text, time, uid=call.id or uuid)


# -- what a record says, read whole before the transcript changes -----------------------------


@dataclass(slots=True)
class _UserMessage:
    """A user record: a compaction summary, or its text and tool-result parts in order."""

    summary: str | None
    meta: bool
    #: (USER, text, None) for a run of text, (TOOL_RESULT, text, tool_use id) for a result
    parts: list[tuple[Kind, str, str | None]]


@dataclass(slots=True)
class _ToolUse:
    id: str | None
    name: str
    arguments: str


@dataclass(slots=True)
class _Reply:
    """An assistant line: its reply's id and its text (str) and tool-use blocks, in order."""

    id: str | None
    uuid: str | None
    blocks: list[str | _ToolUse]


def _queued_prompt(record: dict[str, Any]) -> dict[str, Any] | None:
    """A `queued_command` attachment (a prompt typed while the model was busy, handed to it
    mid-turn) as the user record it stands for; None for every other attachment.

    Its `origin.kind` tells a person (`human`, or no origin in older builds) from a prompt the
    client queued itself (a task notification, a peer's message): those are host text."""
    attachment = record.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
        return None
    prompt = attachment.get("prompt")
    if not isinstance(prompt, (str, list)):
        return None
    origin = attachment.get("origin")
    typed = origin is None or (isinstance(origin, dict) and origin.get("kind") == "human")
    meta = attachment.get("isMeta") is True or record.get("isMeta") is True or not typed
    message = {"role": "user", "content": prompt}
    return {**record, "type": "user", "isMeta": meta, "message": message}


def _read_user(record: dict[str, Any], message: dict[str, Any]) -> _UserMessage | None:
    """A user record's content; None when it is neither a string nor a list of blocks."""
    content = message.get("content")
    meta = record.get("isMeta") is True
    if record.get("isCompactSummary") is True:
        return _UserMessage(_block_text(content), meta, [])
    if isinstance(content, str):
        return _UserMessage(None, meta, [(Kind.USER, clean_text(content), None)])
    if not isinstance(content, list):
        return None
    parts: list[tuple[Kind, str, str | None]] = []
    texts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            part = as_str(block.get("text"))
            if part is not None:
                texts.append(part)
        elif block.get("type") == "tool_result":
            if texts:
                parts.append((Kind.USER, "\n".join(texts), None))
                texts = []
            tool_id = as_str(block.get("tool_use_id"))
            parts.append((Kind.TOOL_RESULT, _block_text(block.get("content")), tool_id))
    if texts:
        parts.append((Kind.USER, "\n".join(texts), None))
    return _UserMessage(None, meta, parts)


def _read_reply(message: dict[str, Any], uuid: str | None) -> _Reply | None:
    """An assistant record's content; None when it is neither a string nor a list of blocks."""
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return None
    blocks: list[str | _ToolUse] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            text = as_str(block.get("text"))
            if text is not None and text.strip():
                blocks.append(text)
        elif block.get("type") == "tool_use":
            arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
            name = as_str(block.get("name")) or "tool"
            blocks.append(_ToolUse(as_str(block.get("id")), name, clean_text(arguments)))
    return _Reply(as_str(message.get("id")) or uuid, uuid, blocks)


def _seen_key(uid: str) -> str:
    """A record uuid or tool id as the cursor state remembers it (`SEEN_CHARS` characters)."""
    digest = hashlib.blake2b(uid.encode(), digest_size=SEEN_CHARS * 3 // 4).digest()
    return binascii.b2a_base64(digest, newline=False).decode("ascii")


def _seen_keys(joined: str) -> list[str]:
    return [joined[i : i + SEEN_CHARS] for i in range(0, len(joined), SEEN_CHARS)]


def _nth(uid: str | None, n: int) -> str | None:
    """The uid of the n-th event made from one record (records can hold several blocks)."""
    return uid if uid is None or n == 0 else f"{uid}#{n}"


def reader(settings: Settings) -> ClaudeReader:
    """This harness's logs, where `settings` say they are."""
    return ClaudeReader(settings.claude_dirs)
