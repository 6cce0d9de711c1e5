"""What the index keeps of a reader's cursor state (`files.state`): packed when that is
shorter, read back exactly, whichever form an index holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from huiyi import Huiyi
from huiyi.harnesses.claude_code.reader import ClaudeReader
from huiyi.store.reading import pack_state, unpack_state
from tests.builders import claude as cc

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), JSON, max_size=8))
def test_a_packed_state_reads_back_as_it_was(state: dict[str, Any]) -> None:
    kept = pack_state(state)
    assert unpack_state(kept) == state
    assert len(kept) <= len(json.dumps(state, ensure_ascii=False, separators=(",", ":")))


def test_a_state_kept_as_text_by_an_earlier_index_is_read() -> None:
    assert unpack_state('{"seq":3,"seen":"abcdefgh"}') == {"seq": 3, "seen": "abcdefgh"}


def test_a_transcripts_state_is_kept_packed_and_appends_are_read_once(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    reader = ClaudeReader([claude])
    cwd = "/home/ana/api"
    records = [
        record
        for n in range(30)
        for record in (
            cc.user(f"step {n}: why does the build of module {n} fail"),
            cc.assistant(
                f"module {n} misses an import",
                cc.tool_use(f"toolu_{n:04d}", "Edit", {"file": f"m{n}.py"}),
                message_id=f"msg_{n:04d}",
            ),
        )
    ]
    path = cc.write_transcript(claude, cwd, records)
    with Huiyi() as hy:
        assert hy.index(readers=[reader]).events == 90
        (kept,) = hy.conn.execute("SELECT state FROM files").fetchone()
        state = unpack_state(kept)
        text = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
        assert isinstance(kept, bytes) and len(kept) < 0.8 * len(text)
        assert len(state["seen"]) == 8 * 60 and len(state["calls"]) == 30

        copy = json.loads(path.read_text().splitlines()[4])  # a record written twice
        with path.open("a") as fh:
            fh.write(json.dumps(copy) + "\n")
        cc.write_transcript(claude, cwd, [cc.user("and module 30 builds now")], append=True)
        assert hy.index(readers=[reader]).events == 1
        assert hy.index(readers=[reader]).events == 0
        found = hy.search("module 30 builds", all_workspaces=True, layers=("lexical",)).hits
        assert (found[0].session_id, found[0].seq) == (path.stem, 90)
