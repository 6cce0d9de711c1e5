"""The `huiyi` command end to end through click's CliRunner, on real-format fixture logs."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from huiyi import Huiyi
from huiyi.cli.root import main
from tests.builders import dsh

SID = "session-0f0f0f0f-1111-4222-8333-444455556666"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def repo(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = isolated_home / "acme"
    (path / ".git").mkdir(parents=True)
    (path / "src").mkdir()
    monkeypatch.chdir(path / "src")  # workspace = the git root above the cwd
    dsh.write_session(
        isolated_home / ".dsh",
        str(path / "src"),
        [
            [dsh.user(1, "我们昨天决定回滚数据库迁移 0042_add_index"), dsh.title(2, "迁移回滚")],
            [dsh.assistant(3, "Rolled back; the API listens on port 8321 again.")],
            [dsh.user(4, "thanks"), dsh.assistant(5, "you're welcome")],
        ],
        session_id=SID,
    )
    return path


def test_index_prints_a_summary_per_source_and_search_finds_chinese(repo: Path) -> None:
    out = run("index").output
    assert "dsh" in out and "claude" in out and "codex" in out
    assert "indexed 4 new events" in out
    hits = json.loads(run("search", "回滚", "--json", "--layer", "lexical").output)
    assert [(h["session_id"], h["seq"]) for h in hits] == [(SID, 1)]
    fused = json.loads(run("search", "回滚", "--json").output)
    assert (fused[0]["session_id"], fused[0]["seq"]) == (SID, 1)
    assert fused[0]["layers"] == ["lexical", "semantic"]
    hit = hits[0]
    assert {
        "session_id",
        "seq",
        "source",
        "workspace",
        "title",
        "time",
        "kind",
        "snippet",
        "score",
    } <= hit.keys()
    assert (hit["source"], hit["workspace"], hit["title"], hit["kind"]) == (
        "dsh",
        str(repo),
        "迁移回滚",
        "user",
    )
    assert "indexed 0 new events" in run("index").output  # idempotent


def test_search_scope_flags(repo: Path, tmp_path: Path) -> None:
    run("index")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert (
        'no match in this workspace\'s history for "8321"'
        in run("search", "8321", "--workspace", str(elsewhere)).output
    )
    assert SID in run("search", "8321", "--all").output
    bad = CliRunner().invoke(main, ["search", "8321", "--all", "--workspace", str(elsewhere)])
    assert bad.exit_code == 2
    assert "either --workspace DIR or --all" in bad.output


def test_sessions_and_show(repo: Path) -> None:
    run("index")
    listed = json.loads(run("sessions", "--json").output)
    assert [(s["id"], s["title"], s["events"]) for s in listed] == [(SID, "迁移回滚", 4)]
    around = json.loads(run("show", SID, "--around", "3", "--limit", "2", "--json").output)
    assert [e["seq"] for e in around["events"]] == [1, 3, 4]
    forward = run("show", SID, "--from-seq", "4", "--limit", "1").output
    assert "#4" in forward and "#5" not in forward and "--from-seq 5" in forward
    missing = CliRunner().invoke(main, ["show", "session-nope"])
    assert missing.exit_code == 3 and "no session" in missing.output


def test_bad_input_is_skipped_counted_and_shown(repo: Path, isolated_home: Path) -> None:
    run("index")
    bad = dsh.write_session(
        isolated_home / ".dsh",
        str(repo),
        [[b"{not json", dsh.user(1, "good line survives"), dsh.event("mystery/type", 2, {})]],
        session_id="session-badbadba-1111-4222-8333-444455556666",
    )
    out = run("index").output
    assert "invalid-json 1" in out and "unknown-type 1" in out
    assert bad.exists()
    doctor = run("doctor").output
    assert "invalid-json 1" in doctor and "unknown-type 1" in doctor
    assert "integrity  ok; full-text ok" in doctor
    assert "vectors    5 of 5 messages embedded (100%) with fake" in doctor
    assert SID in run("search", "8321").output  # what was indexed before is intact
    assert "good line survives" in run("search", "survives").output


def test_an_unreadable_file_is_counted_and_shown_by_doctor(repo: Path, isolated_home: Path) -> None:
    victim = dsh.write_session(
        isolated_home / ".dsh",
        str(repo),
        [[dsh.user(1, "never read")]],
        session_id="session-10a10a10-1111-4222-8333-444455556666",
    )

    def break_it(source: str, done: int, total: int) -> None:
        if source == "dsh" and done == 0:  # after discovery, before reading
            victim.unlink()
            os.symlink(victim, victim)  # ELOOP: unreadable even for root

    with Huiyi() as hy:
        report = hy.index(progress=break_it)
    assert report.sources["dsh"].skipped["unreadable"] == 1
    assert "1 unreadable" in run("doctor").output
    assert SID in run("search", "8321").output


def test_a_root_that_vanishes_mid_index_is_counted_not_fatal(
    repo: Path, isolated_home: Path
) -> None:
    for n in range(3):
        dsh.write_session(
            isolated_home / ".dsh",
            str(repo),
            [[dsh.user(1, f"extra {n}")]],
            session_id=f"session-{n}0000000-1111-4222-8333-444455556666",
        )
    sessions_root = isolated_home / ".dsh" / "sessions"

    def vanish(source: str, done: int, total: int) -> None:
        if source == "dsh" and done == 1:
            shutil.rmtree(sessions_root)

    with Huiyi() as hy:
        report = hy.index(progress=vanish)
    assert report.sources["dsh"].skipped["vanished"] == 3
    assert report.sources["dsh"].events >= 1


def test_forget_by_id_and_by_workspace(repo: Path) -> None:
    run("index")
    assert "forgot 1 session" in run("forget", SID).output
    assert 'no match in this workspace\'s history for "8321"' in run("search", "8321").output
    assert "forgot 0 sessions" in run("forget", "--workspace", str(repo)).output
    usage = CliRunner().invoke(main, ["forget"])
    assert usage.exit_code == 2 and "exactly one of" in usage.output


def test_a_machine_without_logs_gets_the_demo(isolated_home: Path) -> None:
    out = run("index").output
    assert "No agent logs were found" in out
    assert "bundled demo history" in out
    assert "数据库迁移回滚" in out  # the demo search over the bundled sessions found it
    assert "回滚" in out.split("$ huiyi search", 1)[1]


def test_recall_without_words_or_session_is_a_usage_error(repo: Path) -> None:
    result = CliRunner().invoke(main, ["recall"])
    assert result.exit_code == 2
    assert "give some words to recall" in result.output


def test_recall_prints_what_the_tool_returns(repo: Path) -> None:
    out = run("recall", "8321").output
    assert out.startswith("The following is recalled history")
    assert SID in out
