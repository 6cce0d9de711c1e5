"""Build real DeepSeek Harness session logs for tests (format: `docs/formats/dsh.md`).

Event builders return the dicts DSH writes, one per line; `write_session` lays them out as DSH
does: `<home>/sessions/--<key>--/<session-id>/session.jsonl.zstd`, frame 1 holding the header
alone and one zstd frame per batch (or plain lines with `compress=False`). A line may also be
given as `str` or `bytes` to write broken input on purpose.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import zstandard

Line = dict[str, Any] | str | bytes

T0 = 1_787_000_000_000  #: default clock: every event sits at T0 + 1000 * seq


def _time(seq: int, time: int | None) -> int:
    return T0 + 1000 * seq if time is None else time


def event(
    type_: str, seq: int, data: dict[str, Any], *, time: int | None = None, **extra: Any
) -> dict[str, Any]:
    """Any event line: `{"type", "seq", "time", "data", **extra}`."""
    return {"type": type_, "seq": seq, "time": _time(seq, time), "data": data, **extra}


def header(
    session_id: str | None = None, cwd: str = "/home/alice/acme", **fields: Any
) -> dict[str, Any]:
    """The header line; `fields` adds or overrides keys (`seedLength=3`, `version=1`, ...)."""
    return {
        "type": "session",
        "version": 0,
        "id": session_id or f"session-{uuid.uuid4()}",
        "createdAt": T0 - 1000,
        "cwd": cwd,
        "delegationDepth": 0,
        "agentPreset": "standard",
        **fields,
    }


def user(
    seq: int, text: str, *, source: str | None = "user", surface_op: Any = "append", **extra: Any
) -> dict[str, Any]:
    """A user message; `source` is the `source.kind` (None: legacy, no source at all)."""
    data: dict[str, Any] = {"content": [{"type": "text", "text": text}], "role": "user"}
    if source is not None:
        data["source"] = {"kind": source}
    return event("user/message", seq, data, surfaceOp=surface_op, **extra)


def assistant(
    seq: int,
    text: str | None = None,
    *,
    calls: Sequence[tuple[str, str, str]] = (),
    reasoning: str | None = None,
    surface_op: Any = "append",
) -> dict[str, Any]:
    """An assistant message with optional reasoning, text and `(id, name, arguments)` calls."""
    content: list[dict[str, Any]] = []
    if reasoning is not None:
        content.append({"type": "reasoning", "text": reasoning})
    if text is not None:
        content.append({"type": "text", "text": text})
    content += [{"type": "tool-call", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    message = {"role": "assistant", "content": content, "source": {"kind": "model"}}
    return event("assistant/message", seq, {"turn": 1, "message": message}, surfaceOp=surface_op)


def tool_call(seq: int, name: str, arguments: str, *, call_id: str) -> dict[str, Any]:
    return event("tool/call", seq, {"id": call_id, "name": name, "arguments": arguments})


def tool_result(
    seq: int,
    call_id: str,
    text: str,
    *,
    error: dict[str, Any] | None = None,
    surface_op: Any = "append",
) -> dict[str, Any]:
    block = {
        "type": "tool-result",
        "toolCallId": call_id,
        "content": [{"type": "text", "text": text}],
        "isError": error is not None,
    }
    data: dict[str, Any] = {"message": {"role": "tool", "content": [block]}}
    if error is not None:
        data["error"] = error
    return event("tool/result", seq, data, surfaceOp=surface_op)


def title(seq: int, text: str, *, source: str = "fallback") -> dict[str, Any]:
    return event("session/title", seq, {"title": text, "source": {"kind": source}})


def compaction(seq: int, summary: str, *, start: int, end: int) -> list[dict[str, Any]]:
    """The four lines of a summary compaction (seqs `seq`..`seq + 3`) replacing `start..end`."""
    blocks = [{"type": "text", "text": summary}]
    wrapped = [
        {
            "type": "text",
            "text": "This is an automatically generated checkpoint\n\n<compacted-summary>",
        },
        *blocks,
        {"type": "text", "text": "</compacted-summary>"},
    ]
    source = {"kind": "plugin", "plugin": "compact", "compactionId": f"c{seq}"}
    return [
        event("compaction/start", seq, {"compactionId": f"c{seq}", "turn": None}),
        event("compaction/summary", seq + 1, {"compactionId": f"c{seq}", "summary": blocks}),
        event(
            "user/message",
            seq + 2,
            {"content": wrapped, "source": source, "role": "user"},
            surfaceOp={"op": "replace", "start": start, "end": end},
        ),
        event("compaction/end", seq + 3, {"compactionId": f"c{seq}", "turn": None}),
    ]


def chunks(seq0: int, texts: Sequence[str], *, kind: str = "text") -> dict[str, Any]:
    """A packed row of streamed deltas; it stands for seqs `seq0`..`seq0 + len(texts) - 1`."""
    key = "args" if kind == "tool-call" else "texts"
    data = {"turn": 1, "step": 1, "index": 0, "dt": [1] * len(texts), key: list(texts)}
    return {"type": f"{kind}-chunks", "seq0": seq0, "time0": _time(seq0, None), "data": data}


def encode(lines: Iterable[Line]) -> bytes:
    """Lines as DSH writes them: compact JSON, each ending in `\\n`."""
    out = bytearray()
    for line in lines:
        if isinstance(line, dict):
            line = json.dumps(line, ensure_ascii=False, separators=(",", ":"))
        raw = line.encode() if isinstance(line, str) else line
        out += raw if raw.endswith(b"\n") else raw + b"\n"
    return bytes(out)


def frame(lines: Iterable[Line]) -> bytes:
    """One checksummed zstd frame holding `lines` (deterministic for the same input)."""
    return zstandard.ZstdCompressor(write_checksum=True).compress(encode(lines))


def write_session(
    dsh_home: Path,
    cwd: str,
    batches: Sequence[Sequence[Line]],
    *,
    session_id: str | None = None,
    compress: bool = True,
    torn_tail: bool = False,
    **header_fields: Any,
) -> Path:
    """Write a session log and return its path.

    `torn_tail` cuts the last batch's frame in half, as a crash mid-write does;
    `finish_torn(path, batches[-1])` writes the missing half.
    """
    head = header(session_id, cwd, **header_fields)
    key = "--" + cwd.strip("/").replace("/", "-") + "--"
    folder = dsh_home / "sessions" / key / head["id"]
    folder.mkdir(parents=True, exist_ok=True)
    if not compress:
        path = folder / "session.jsonl"
        path.write_bytes(encode([head, *(line for batch in batches for line in batch)]))
        return path
    path = folder / "session.jsonl.zstd"
    frames = [frame([head]), *(frame(batch) for batch in batches)]
    if torn_tail:
        frames[-1] = frames[-1][: len(frames[-1]) // 2]
    path.write_bytes(b"".join(frames))
    return path


def finish_torn(path: Path, lines: Sequence[Line]) -> None:
    """Complete a frame that `write_session(..., torn_tail=True)` left half written."""
    whole = frame(lines)
    with path.open("ab") as file:
        file.write(whole[len(whole) // 2 :])


def append_batch(path: Path, lines: Sequence[Line]) -> None:
    """Append one write batch: a new frame for `.zstd`, plain lines for `.jsonl`."""
    data = frame(lines) if path.name.endswith(".zstd") else encode(lines)
    with path.open("ab") as file:
        file.write(data)
