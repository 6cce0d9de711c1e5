"""The approximate index of a large workspace outside one process: the warm service builds a
missing one in the background while its searches answer from the other layers, and `huiyi
doctor` shows each one's state and `--repair` builds it again (through the CLI).

The workspace counts as large by the `HUIYI_EXACT_BELOW` setting, lowered for these tests so
that a history of a few hundred messages is searched through an approximate index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from huiyi.api import Huiyi
from huiyi.cli.root import main
from huiyi.config import Settings
from huiyi.policy.manifest import manifest
from huiyi.policy.protocol import NO_PEER, Search
from huiyi.search import ann
from huiyi.transports.service_client import ServiceClient, socket_path
from tests.builders import claude as cb
from tests.services import service_pid, stop_services

WAIT = 120.0
SESSIONS, TURNS = 30, 10  # 300 messages
WORDS = (
    "rollback migration deploy retry backoff cache index shard queue worker lock timeout "
    "schema replica snapshot token parser lexer compiler kernel socket buffer stream batch"
).split()


def session_id(n: int) -> str:
    return f"5f0c2d1e-1111-4222-8333-{n:012d}"


def message(n: int, turn: int) -> str:
    """A message of session `n`: its own needle word and a few of the shared words."""
    shared = " ".join(WORDS[(n * 7 + turn * 3 + k) % len(WORDS)] for k in range(6))
    return f"needle{n:02d}x{turn} {shared}"


@pytest.fixture
def project(isolated_home: Path, tmp_path: Path) -> Iterator[Path]:
    """A git workspace of 30 Claude Code sessions, indexed and embedded, with no approximate
    index written yet (at the default threshold it is a small workspace)."""
    root = tmp_path / "acme"
    (root / ".git").mkdir(parents=True)
    for n in range(SESSIONS):
        records = []
        for turn in range(TURNS // 2):
            records += [cb.user(message(n, 2 * turn)), cb.assistant(message(n, 2 * turn + 1))]
        cb.write_transcript(isolated_home / ".claude", str(root), records, session_id=session_id(n))
    with Huiyi() as hy:
        hy.index()
        hy.embed()
        assert hy.coverage(root) == (SESSIONS * TURNS, SESSIONS * TURNS)
    assert not list(ann_dir().glob("*.ivfpq"))
    yield root
    stop_services(Settings.from_env().home)


def ann_dir() -> Path:
    return Settings.from_env().db_path.with_suffix(".ann")


def served_search(client: ServiceClient, query: str, root: Path, layer: str) -> dict[str, Any]:
    reply = client.call(Search(query, str(root), layer=layer), NO_PEER)
    assert reply is not None, "the service did not take the search"
    assert reply.failure is None, reply.failure
    assert isinstance(reply.value, dict)
    return reply.value


@pytest.fixture
def service(project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServiceClient]:
    """The warm service of this home in a process of its own, as a front starts it, and a
    client that reaches it (and never starts another)."""
    monkeypatch.setenv("HUIYI_EXACT_BELOW", "100")
    settings = Settings.from_env()
    path = socket_path(settings, manifest()["serverInfo"]["version"])
    read_end, write_end = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "huiyi.transports.service", str(path), "--ready-fd", str(write_end)],
        env=dict(os.environ),
        pass_fds=(write_end,),
        stdin=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as ready:
            assert ready.readline() == b"ready\n"
        yield ServiceClient(settings, start=False)
    finally:
        process.terminate()
        process.wait(WAIT)


def test_the_warm_service_builds_the_approximate_index_while_its_searches_answer(
    project: Path, service: ServiceClient
) -> None:
    client = service
    query = message(17, 4)

    first = served_search(client, query, project, "hybrid")
    assert service_pid(client.path) is not None
    assert first["hits"] and first["hits"][0]["session_id"] == session_id(17)
    assert "semantic" not in first["layers"]  # the lexical and fuzzy layers answered
    [note] = [n for n in first["notes"] if "approximate index" in n]
    assert "of 300 vectors is being built in the background" in note

    deadline = time.monotonic() + WAIT
    then = first
    while "semantic" not in then["layers"] and time.monotonic() < deadline:
        threading.Event().wait(0.1)  # a poll interval, not an assertion
        then = served_search(client, query, project, "hybrid")
    assert "semantic" in then["layers"], then["notes"]
    assert not any("approximate index" in n for n in then["notes"])
    [path] = ann_dir().glob("*.ivfpq")
    assert ann.check(path) is None  # written whole beside the index, by the service
    assert ann.describe(path, 300).state == "built"
    alone = served_search(client, query, project, "semantic")
    assert alone["hits"][0]["session_id"] == session_id(17)  # found through the index


def doctor(*args: str) -> tuple[int, str, dict[str, Any]]:
    runner = CliRunner()
    shown = runner.invoke(main, ["doctor", *args])
    data = runner.invoke(main, ["doctor", "--json"])
    return shown.exit_code, shown.output, json.loads(data.stdout)


def test_doctor_shows_each_approximate_index_and_repair_builds_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUIYI_EXACT_BELOW", "100")
    status, printed, report = doctor()
    assert status == 0
    [missing] = report["embeddings"]["approximate"]
    assert (missing["workspace"], missing["vectors"], missing["state"]) == (
        str(project),
        300,
        "missing",
    )
    assert "no approximate index yet for its 300 vectors" in printed

    status, printed, report = doctor("--repair")
    assert status == 0
    assert "rebuilt the approximate semantic index of 1 workspace(s)" in printed
    assert f"{project}: approximate index built, 300 of its 300 vectors" in printed
    [built] = report["embeddings"]["approximate"]
    assert (built["state"], built["size"], built["trained"]) == ("built", 300, 300)

    # the workspace grows past what its index was trained at: outgrown, until repaired
    cb.write_transcript(
        Path(Settings.from_env().home).parent / ".claude",
        str(project),
        [cb.user("needle99 a late message"), cb.assistant("needle99 a late answer")],
        session_id=session_id(99),
    )
    with Huiyi() as hy:
        hy.index()
        hy.embed()  # the two new vectors join the index it holds, not yet its file
    monkeypatch.setattr(ann, "REBUILD_GROWTH", 1)
    status, printed, report = doctor()
    [grown] = report["embeddings"]["approximate"]
    assert (grown["state"], grown["vectors"], grown["trained"]) == ("outgrown", 302, 300)
    assert "trained at 300 vectors, outgrown by its 302" in printed

    # a build under way in another process is named, with its process
    [path] = ann_dir().glob("*.ivfpq")
    with ann.building(path):
        status, printed, report = doctor()
    [under_way] = report["embeddings"]["approximate"]
    assert under_way["state"] == "building"
    assert "being built in the background (process " in printed

    status, printed, report = doctor("--repair")
    [again] = report["embeddings"]["approximate"]
    assert (again["state"], again["size"], again["trained"]) == ("built", 302, 302)

    # a damaged file is reported, and repair writes it anew
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    status, printed, report = doctor()
    assert status != 0 and "is damaged" in printed
    assert report["embeddings"]["approximate"][0]["state"] == "damaged"
    status, printed, report = doctor("--repair")
    assert status == 0 and report["embeddings"]["approximate"][0]["state"] == "built"
