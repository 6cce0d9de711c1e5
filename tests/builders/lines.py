"""A tiny line-per-event reader and writer for store and search tests.

It lets tests pin the store's and search's own rules without a harness format in the way;
every real reader has its own tests on real-format fixtures.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from huiyi.model import Event, Kind, Surface
from huiyi.sources.base import Cursor, ReadResult, SessionChunk, SessionUpdate


class LineReader:
    """One JSON object per line: {"s": session, "q": seq, "t": text, ...}; complete lines only.
    Optional: "k" the kind (an assistant's has role assistant), "ms" the time."""

    source: ClassVar[str] = "test"

    def __init__(self, root: Path) -> None:
        self.root = root

    def roots(self) -> list[Path]:
        return [self.root]

    def discover(self) -> Iterable[Path]:
        return sorted(self.root.glob("*.log")) if self.root.is_dir() else []

    def read(self, path: Path, cursor: Cursor) -> ReadResult:
        data = path.read_bytes()[cursor.offset :]
        end = data.rfind(b"\n") + 1
        chunks: dict[str, SessionChunk] = {}
        result = ReadResult(
            offset=cursor.offset + end, state={"reads": cursor.state.get("reads", 0) + 1}
        )
        for line in data[:end].splitlines():
            rec = json.loads(line)
            chunk = chunks.setdefault(
                rec["s"],
                SessionChunk(
                    SessionUpdate(
                        id=rec["s"],
                        source="test",
                        cwd=rec.get("cwd", "/w/a"),
                        title=rec.get("title"),
                    )
                ),
            )
            if "shadow_before" in rec:
                chunk.shadow_before = rec["shadow_before"]
                continue
            chunk.events.append(
                Event(
                    rec["s"],
                    rec["q"],
                    rec.get("ms", 1_000 + rec["q"]),
                    Kind(rec.get("k", "user")),
                    rec.get("k", "user") if rec.get("k") == "assistant" else "user",
                    rec["t"],
                    Surface(rec.get("surface", "current")),
                    uid=rec.get("uid"),
                )
            )
        result.chunks = list(chunks.values())
        return result


def write(path: Path, *records: dict[str, object], mode: str = "a") -> None:
    with path.open(mode, encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
