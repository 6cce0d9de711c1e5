"""One package per harness: a harness added to the registry is read, bound, hooked, installed
and reported with no other change, because every layer asks the registry for it."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from huiyi import harnesses
from huiyi.config import Settings
from huiyi.harnesses.base import Adapter
from huiyi.harnesses.pending import LookIn, ToolCall
from huiyi.install import Status, statuses
from huiyi.model import CallerContext
from huiyi.policy.caller import CallerFinder
from huiyi.policy.hooks import parse
from huiyi.sources import default_readers
from huiyi.sources.base import Cursor, ReadResult

PACKAGE = "huiyi.harnesses.toy"


class ToyReader:
    source = "toy"

    def __init__(self, root: Path) -> None:
        self.root = root

    def roots(self) -> list[Path]:
        return [self.root]

    def discover(self) -> Iterator[Path]:
        return iter(())

    def read(self, path: Path, cursor: Cursor) -> ReadResult:
        return ReadResult(offset=cursor.offset)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> Adapter:
    """A fourth harness: its package (adapter, reader, caller, installer) and its name in the
    registry, nothing else."""
    adapter = Adapter("toy", "toy", "Toy", PACKAGE)
    package = types.ModuleType(PACKAGE)
    package.ADAPTER = adapter  # type: ignore[attr-defined]
    reader = types.ModuleType(f"{PACKAGE}.reader")
    reader.reader = lambda settings: ToyReader(isolated_home / ".toy")  # type: ignore[attr-defined]
    caller = types.ModuleType(f"{PACKAGE}.caller")

    def by_meta(call: ToolCall, meta: Mapping[str, Any], look: LookIn) -> CallerContext | None:
        session = meta.get("toySession")
        return CallerContext(look.cwd, str(session), "toy-session") if session else None

    caller.by_meta = by_meta  # type: ignore[attr-defined]
    install = types.ModuleType(f"{PACKAGE}.install")
    config = isolated_home / ".toy" / "config"
    install.status = lambda settings: Status(  # type: ignore[attr-defined]
        "toy", mcp=False, mcp_path=config, hooks=(), hooks_path=config, wanted_hooks=()
    )
    for module in (package, reader, caller, install):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(harnesses, "ADAPTERS", (*harnesses.ADAPTERS, adapter))
    return adapter


def test_a_harness_in_the_registry_is_read_bound_hooked_and_reported(
    toy: Adapter, tmp_path: Path
) -> None:
    settings = Settings.from_env()
    assert [r.source for r in default_readers(settings)][-1] == "toy"
    call = parse("toy", "SessionStart", {"session_id": "s1", "cwd": str(tmp_path)})
    assert (call.harness, call.session_id) == ("toy", "s1")
    finder = CallerFinder.for_settings(settings, cwd=str(tmp_path))
    found = finder.by_client("recall_history", {}, {"toySession": "t-7"})
    assert found == CallerContext(str(tmp_path), "t-7", "toy-session")
    assert "toy" in statuses(settings)


def test_a_harness_not_in_the_registry_is_refused_by_name() -> None:
    with pytest.raises(Exception, match=r"unknown harness 'toy'; choose one of dsh, claude-code"):
        parse("toy", "SessionStart", {})
