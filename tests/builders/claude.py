"""Write Claude Code transcripts in the real on-disk format, for tests.

Record builders return the part of a record that matters to a test; `write_transcript` fills in
what every real record carries (`uuid`, `parentUuid`, `sessionId`, `cwd`, `timestamp`,
`isSidechain`, `version`) and puts the file where Claude Code would:
`<claude_dir>/projects/<encoded cwd>/<session>.jsonl`, or for a subagent
`.../<session>/subagents/agent-<id>.jsonl` (old builds: `.../agent-<id>.jsonl`).

    path = write_transcript(claude_dir, "/home/ana/api", [
        summary("Fix flaky login test"),
        user("why does test_login fail only on CI?"),
        *split_reply("msg_1", thinking("hm"), "Let me look.", tool_use("toolu_1", "Read", {...})),
        tool_result("toolu_1", "PORT = 8080"),
        compact_boundary(),
        compact_summary("Earlier: ..."),
    ])
    write_transcript(claude_dir, "/home/ana/api", [user("more")], append=True)  # grows the file
"""

from __future__ import annotations

import itertools
import json
import re
import uuid as uuidlib
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SESSION_ID = "5f0c2d1e-1111-4222-8333-444455556666"
#: Record n of a file is stamped START + n seconds unless it brings its own timestamp.
START = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
Record = dict[str, Any]
Block = dict[str, Any]
_message_ids = itertools.count(1)


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def at(n: int) -> datetime:
    """The default time of the n-th record of a file."""
    return START + timedelta(seconds=n)


def encode_cwd(cwd: str) -> str:
    """Claude Code's project folder name for a cwd (lossy: `/` and `.` become `-`)."""
    return re.sub(r"[/.:\\]", "-", cwd)


# -- blocks --------------------------------------------------------------------------------


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def thinking(value: str) -> Block:
    return {"type": "thinking", "thinking": value, "signature": "sig"}


def tool_use(tool_id: str, name: str, input: dict[str, Any]) -> Block:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": input}


def _block(part: Block | str) -> Block:
    return text(part) if isinstance(part, str) else part


# -- records -------------------------------------------------------------------------------


def user(content: str | list[Block], **extra: Any) -> Record:
    """A user record: a typed prompt (string) or a list of blocks."""
    return {"type": "user", "message": {"role": "user", "content": content}, **extra}


def meta(content: str) -> Record:
    """A host-injected user record (caveats, reminders)."""
    return user(content, isMeta=True)


def command(name: str, args: str = "", stdout: str | None = None) -> list[Record]:
    """A slash command as Claude Code logs it: the wrapper, and its output if any."""
    records = [
        user(
            f"<command-message>{name}</command-message>\n<command-name>/{name}</command-name>\n"
            f"<command-args>{args}</command-args>"
        )
    ]
    if stdout is not None:
        records.append(user(f"<local-command-stdout>{stdout}</local-command-stdout>"))
    return records


def assistant(*parts: Block | str, message_id: str | None = None, **extra: Any) -> Record:
    """One assistant line holding `parts` (strings are text blocks)."""
    message_id = message_id or f"msg_{next(_message_ids):04d}"
    return {
        "type": "assistant",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [_block(p) for p in parts],
        },
        **extra,
    }


def split_reply(message_id: str, *parts: Block | str) -> list[Record]:
    """One API reply the way Claude Code writes it: a line per content block, one message.id."""
    return [assistant(part, message_id=message_id) for part in parts]


def tool_result(tool_use_id: str, content: str | list[Block], is_error: bool = False) -> Record:
    block: Block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return user([block])


def compact_boundary(trigger: str = "auto", pre_tokens: int = 154_000) -> Record:
    return {
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "compactMetadata": {"trigger": trigger, "preTokens": pre_tokens},
    }


def compact_summary(summary_text: str) -> Record:
    return user(
        "This session is being continued from a previous conversation. Summary:\n" + summary_text,
        isCompactSummary=True,
    )


def summary(title: str, leaf_uuid: str = "") -> Record:
    return {"type": "summary", "summary": title, "leafUuid": leaf_uuid}


def ai_title(title: str) -> Record:
    """The title Claude Code gives a session (2.1 and later)."""
    return {"type": "ai-title", "aiTitle": title, "sessionId": SESSION_ID}


def custom_title(title: str) -> Record:
    """The title the user gave a session (`/rename`)."""
    return {"type": "custom-title", "customTitle": title, "sessionId": SESSION_ID}


def queued(prompt: str | list[Block], kind: str | None = "human", uuid: str = "q-1") -> Record:
    """A prompt typed while the model was busy, as Claude Code 2.1 hands it over mid-turn: a
    `queued_command` attachment; `kind` is its origin (None: older builds wrote none)."""
    attachment: Record = {"type": "queued_command", "prompt": prompt, "source_uuid": "src-1"}
    if kind is not None:
        attachment["origin"] = {"kind": kind}
    return {"type": "attachment", "attachment": attachment, "uuid": uuid, "sessionId": SESSION_ID}


def mode(name: str = "default") -> Record:
    """The permission mode in force (written by 2.1.332): no conversation."""
    return {"type": "mode", "mode": name, "sessionId": SESSION_ID}


def bookkeeping() -> list[Record]:
    """One record of each type Claude Code 2.1 writes that holds no conversation (shapes as
    in tests/clients/fixtures/claude-code-2.1.332-transcript.jsonl, contents cut short)."""
    sid = {"sessionId": SESSION_ID}
    return [
        {"type": "queue-operation", "operation": "enqueue", "content": "hello", **sid},
        {
            "type": "attachment",
            "attachment": {"type": "date", "date": "2026-11-30"},
            "rendered": [{"content": "<system-reminder>Today is 2026-11-30.</system-reminder>"}],
            "uuid": "att-1",
            **sid,
        },
        {"type": "last-prompt", "lastPrompt": "hello", "leafUuid": "u1", **sid},
        {"type": "atis-latch", "atis": "", **sid},
        {"type": "api-request-shape", "shapeHash": "0ed5", "shape": {"system": []}, **sid},
        {"type": "api-request-blob", "hash": "550e", "message": {"role": "user"}, **sid},
        {"type": "api-request", "id": "e4e6", "params": {"model": "claude-x"}, **sid},
        {"type": "tools-used", "tools": ["ToolSearch"], **sid},
        {"type": "cost-state", "totalCostUSD": 0.03, **sid},
        mode(),
        snapshot(),
    ]


def snapshot() -> Record:
    """A known record type that carries nothing to index."""
    return {
        "type": "file-history-snapshot",
        "messageId": "m",
        "snapshot": {},
        "isSnapshotUpdate": False,
    }


# -- files ---------------------------------------------------------------------------------


def transcript_path(
    claude_dir: Path,
    cwd: str,
    session_id: str = SESSION_ID,
    *,
    agent_id: str | None = None,
    old_style: bool = False,
) -> Path:
    project = claude_dir / "projects" / encode_cwd(cwd)
    if agent_id is None:
        return project / f"{session_id}.jsonl"
    if old_style:
        return project / f"agent-{agent_id}.jsonl"
    return project / session_id / "subagents" / f"agent-{agent_id}.jsonl"


def complete(
    records: Iterable[Record], *, session_id: str, cwd: str, first: int, sidechain: bool
) -> list[Record]:
    """`records` with the fields every real user/assistant/system record carries."""
    done: list[Record] = []
    parent: str | None = None
    for n, record in enumerate(records, start=first):
        if record.get("type") in ("user", "assistant", "system"):
            uid = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{session_id}/{sidechain}/{n}"))
            base: Record = {
                "parentUuid": parent,
                "isSidechain": sidechain,
                "userType": "external",
                "cwd": cwd,
                "sessionId": session_id,
                "version": "2.1.40",
                "gitBranch": "main",
                "uuid": uid,
                "timestamp": iso(at(n)),
            }
            record = {**base, **record}
            parent = record["uuid"]
        done.append(record)
    return done


def lines(records: Iterable[Record]) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in records)


def write_transcript(
    claude_dir: Path,
    cwd: str,
    records: Iterable[Record],
    *,
    session_id: str = SESSION_ID,
    agent_id: str | None = None,
    old_style: bool = False,
    append: bool = False,
) -> Path:
    """Write (or with `append`, grow) a transcript and return its path.

    With `agent_id` it is that subagent's transcript of session `session_id` (records are
    sidechain records whose `sessionId` is the parent's).
    """
    path = transcript_path(claude_dir, cwd, session_id, agent_id=agent_id, old_style=old_style)
    path.parent.mkdir(parents=True, exist_ok=True)
    first = path.read_bytes().count(b"\n") if append and path.exists() else 0
    full = complete(
        records, session_id=session_id, cwd=cwd, first=first, sidechain=agent_id is not None
    )
    with path.open("ab" if append else "wb") as handle:
        handle.write(lines(full))
    return path
