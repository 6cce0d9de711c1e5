"""Archiving unused entries and restoring them."""

from __future__ import annotations

from huiyi.config import Settings
from huiyi.memory import Memory, MemoryConfig, Target
from huiyi.memory.search import DAY_MS

WS = "/work/projects/shop"


class Clock:
    def __init__(self) -> None:
        self.ms = 1_800_000_000_000

    def __call__(self) -> int:
        return self.ms

    def advance(self, days: float) -> None:
        self.ms += int(days * DAY_MS)


def make(clock: Clock, **config: int) -> Memory:
    return Memory(Settings.from_env(), WS, config=MemoryConfig(**config), clock=clock)


def test_entries_unused_for_30_days_move_to_the_archive() -> None:
    clock = Clock()
    mem = make(clock)
    mem.add("memory", "old fact about the legacy API")
    mem.add("user", "Prefers dark mode.")
    clock.advance(20)
    mem.add("memory", "fresh fact about the new API")
    clock.advance(11)  # old: 31 days unused; fresh: 11 days
    moved = mem.sweep()
    assert moved == {
        Target.USER: ["Prefers dark mode."],
        Target.MEMORY: ["old fact about the legacy API"],
    }
    assert mem.entries("memory") == ["fresh fact about the new API"]
    archive = mem.store("memory").paths.archive.read_text(encoding="utf-8")
    assert archive == "old fact about the legacy API\n"
    assert mem.search("legacy").hits[0].archived


def test_a_search_hit_keeps_an_entry_out_of_the_archive() -> None:
    clock = Clock()
    mem = make(clock)
    mem.add("memory", "kept alive by searches")
    clock.advance(25)
    mem.search("searches")
    clock.advance(25)
    assert mem.sweep() == {}
    assert mem.entries("memory") == ["kept alive by searches"]


def test_hand_added_entries_start_their_clock_when_first_seen() -> None:
    clock = Clock()
    mem = make(clock)
    path = mem.store("memory").paths.main
    path.parent.mkdir(parents=True)
    path.write_text("written by hand\n", encoding="utf-8")
    assert mem.sweep() == {}  # first seen now
    clock.advance(29)
    assert mem.sweep() == {}
    clock.advance(2)
    assert mem.sweep() == {Target.MEMORY: ["written by hand"]}


def test_zero_days_never_archives() -> None:
    clock = Clock()
    mem = make(clock, archive_days=0)
    mem.add("memory", "forever")
    clock.advance(3650)
    assert mem.sweep() == {}
    assert mem.entries("memory") == ["forever"]


def test_restore_brings_an_entry_back_within_the_budget() -> None:
    clock = Clock()
    mem = make(clock, memory_limit=60)
    mem.add("memory", "archived fact number one, forty chars..")
    assert mem.archive("memory", "number one").message.startswith("archived; memory at 0%")
    mem.add("memory", "x" * 30)
    refused = mem.restore("memory", "number one")
    assert not refused.ok and refused.reason == "overflow"
    mem.remove("memory", "xxx")
    restored = mem.restore("memory", "number one")
    assert restored.ok and restored.message.startswith("restored; memory at")
    assert mem.entries("memory") == ["archived fact number one, forty chars.."]
    assert mem.store("memory").paths.archive.read_text(encoding="utf-8") == ""
    clock.advance(29)
    assert mem.sweep() == {}  # a restore counts as a use


def test_adding_the_exact_text_of_an_archived_entry_restores_it() -> None:
    clock = Clock()
    mem = make(clock)
    mem.add("memory", "port 5432 is postgres")
    mem.archive("memory", "5432")
    assert mem.add("memory", "port 5432 is postgres").ok
    assert mem.entries("memory") == ["port 5432 is postgres"]
    assert mem.snapshot("memory").archived == []


def test_restore_of_an_unknown_entry_is_refused() -> None:
    mem = make(Clock())
    reply = mem.restore("memory", "nothing like this")
    assert not reply.ok and reply.reason == "no_match"
    assert "(archived entries)" in reply.message
