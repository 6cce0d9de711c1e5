"""The store on disk: file format, locking across processes, hand edits, damaged files."""

from __future__ import annotations

import os
import select
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import huiyi
from huiyi.config import Settings
from huiyi.errors import SettingsError
from huiyi.memory import Memory, MemoryConfig, Operation, Target
from huiyi.memory.store import format_entries, parse_entries, usage_of

WS = "/work/projects/shop"


def make(**limits: int) -> Memory:
    return Memory(Settings.from_env(), WS, config=MemoryConfig(**limits))


def test_entries_are_separated_by_a_line_holding_only_the_section_sign() -> None:
    text = "\ufeff first entry\nsecond line\n  §  \n\n§\nthird § not a separator\r\n§\n"
    assert parse_entries(text) == ["first entry\nsecond line", "third § not a separator"]


def test_canonical_form_round_trips_and_usage_counts_separators() -> None:
    entries = ["一条中文", "two\nlines"]
    assert format_entries(entries) == "一条中文\n§\ntwo\nlines\n"
    assert parse_entries(format_entries(entries)) == entries
    assert usage_of(entries) == len("一条中文") + 3 + len("two\nlines")
    assert format_entries([]) == ""


def test_files_live_under_huiyi_home_owner_only(isolated_home: Path) -> None:
    mem = make()
    mem.add("user", "Likes tea.")
    mem.add("memory", "Uses make.")
    root = isolated_home / ".huiyi" / "memory"
    assert (root / "user.md").read_text(encoding="utf-8") == "Likes tea.\n"
    (workspace_dir,) = (root / "workspaces").iterdir()
    assert workspace_dir.name.startswith("shop-")
    assert (workspace_dir / "memory.md").read_text(encoding="utf-8") == "Uses make.\n"
    assert (workspace_dir / "WORKSPACE").read_text(encoding="utf-8") == WS + "\n"
    for path in (root, workspace_dir, root / "user.md"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0
    leftovers = [p.name for p in root.rglob("*.tmp")]
    assert leftovers == []


def test_a_hand_edit_between_read_and_write_is_kept() -> None:
    mem = make()
    mem.add("memory", "First.")
    path = mem.store("memory").paths.main
    edits = iter(["First.\n§\nAdded by hand while the agent was writing.\n"])

    def person_saves_in_editor() -> None:
        text = next(edits, None)
        if text is not None:
            path.write_text(text, encoding="utf-8")

    reply = mem.apply(
        [Operation("add", Target.MEMORY, content="From the agent.")],
        after_read=person_saves_in_editor,
    )
    assert reply.ok
    assert mem.entries("memory") == [
        "First.",
        "Added by hand while the agent was writing.",
        "From the agent.",
    ]


def test_a_hand_edit_before_a_write_is_never_overwritten() -> None:
    mem = make()
    mem.add("memory", "Stale copy.")
    path = mem.store("memory").paths.main
    path.write_text("Stale copy.\n§\nNew by hand.\n", encoding="utf-8")
    mem.add("memory", "Agent note.")
    assert mem.entries("memory") == ["Stale copy.", "New by hand.", "Agent note."]


def test_two_processes_adding_200_entries_each_lose_nothing() -> None:
    src = Path(huiyi.__path__[0]).parent
    script = textwrap.dedent(
        """
        import sys
        from huiyi.config import Settings
        from huiyi.memory import Memory, MemoryConfig, Operation, Target
        tag = sys.argv[1]
        mem = Memory(Settings.from_env(), "/work/projects/shop",
                     config=MemoryConfig(memory_limit=1_000_000))
        print("ready", flush=True)
        sys.stdin.readline()  # blocks until the test says go
        for i in range(200):
            reply = mem.add("memory", f"{tag} note {i}")
            assert reply.ok, reply.message
        """
    )
    path = os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, tag],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for tag in "ab"
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            # wait for the line (or for the pipe to close when the writer dies), not for a time
            readable, _, _ = select.select([proc.stdout], [], [], 120)
            assert readable, "writer printed nothing in 120 s"
            assert proc.stdout.readline() == "ready\n", "writer died before starting"
        for proc in procs:  # both writers start together
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.close()
        for proc in procs:
            assert proc.wait(timeout=300) == 0
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
    entries = make(memory_limit=1_000_000).entries("memory")
    expected = {f"{tag} note {i}" for tag in "ab" for i in range(200)}
    assert len(entries) == 400
    assert set(entries) == expected
    for tag in "ab":  # each writer's own order survives
        mine = [e for e in entries if e.startswith(tag)]
        assert mine == [f"{tag} note {i}" for i in range(200)]


def test_an_unparsable_file_is_backed_up_and_not_rewritten() -> None:
    mem = make()
    path = mem.store("memory").paths.main
    path.parent.mkdir(parents=True)
    broken = b"Good entry.\n\xff\xfe broken bytes\n"
    path.write_bytes(broken)
    for reply in (mem.remove("memory", "Good"), mem.add("memory", "New.")):
        assert not reply.ok and reply.reason == "damaged"
        assert "not valid UTF-8" in reply.message
    assert path.read_bytes() == broken
    backups = list(mem.store("memory").paths.backups.glob("memory.md.*.bak"))
    assert len(backups) == 1  # one copy per distinct content, not one per attempt
    assert backups[0].read_bytes() == broken


def test_an_entry_longer_than_the_limit_blocks_replace_and_remove() -> None:
    mem = make(memory_limit=100)
    path = mem.store("memory").paths.main
    path.parent.mkdir(parents=True)
    path.write_text("Separators lost. " * 10, encoding="utf-8")
    reply = mem.replace("memory", "Separators", "Short.")
    assert not reply.ok and reply.reason == "damaged"
    assert "longer than the whole 100-char limit" in reply.message
    assert path.read_text(encoding="utf-8") == "Separators lost. " * 10
    assert list(mem.store("memory").paths.backups.iterdir())


def test_limits_and_archive_age_come_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUIYI_MEMORY_USER_LIMIT", "500")
    monkeypatch.setenv("HUIYI_MEMORY_LIMIT", "3,000")
    monkeypatch.setenv("HUIYI_MEMORY_ARCHIVE_DAYS", "0")
    mem = Memory(Settings.from_env(), WS)
    mem.add("user", "Name: Lin.")
    mem.add("memory", "Use pnpm.")
    rendered = mem.render()
    assert "[2% — 10/500 chars]" in rendered and "[0% — 9/3,000 chars]" in rendered
    assert mem.config.archive_days == 0
    monkeypatch.setenv("HUIYI_MEMORY_LIMIT", "lots")
    with pytest.raises(SettingsError, match="HUIYI_MEMORY_LIMIT must be a whole number"):
        Settings.from_env()
