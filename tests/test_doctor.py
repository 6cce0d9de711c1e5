"""`huiyi doctor`: its totals agree with each other, and the bundled demo only fills an empty
index."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.transports.hook_command import run as run_hook
from tests.builders import claude as cc
from tests.builders import dsh


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_the_events_total_is_the_sum_of_the_events_of_each_source(isolated_home: Path) -> None:
    dsh.write_session(
        isolated_home / ".dsh",
        "/w/a",
        [[dsh.user(1, "how do we deploy?"), dsh.title(2, "Deploying"), dsh.assistant(3, "make")]],
    )
    dsh.write_session(
        isolated_home / ".dsh",
        "/w/a",
        [[dsh.user(1, "and roll back?"), dsh.title(2, "Rolling back"), dsh.title(3, "Rollback")]],
    )
    cc.write_transcript(
        isolated_home / ".claude",
        "/w/a",
        [cc.summary("Fix the login test"), cc.user("why does it fail?"), cc.assistant("a race")],
    )
    assert "indexed 5 new events" in run("index").output

    report = json.loads(run("doctor", "--json").output)
    per_source = {name: src.get("events", 0) for name, src in report["sources"].items()}
    assert per_source == {"dsh": 3, "claude": 2, "codex": 0}  # titles are not events
    assert report["events"] == sum(per_source.values()) == 5
    assert report["sessions"] == 3
    assert "contents   3 sessions, 5 events" in run("doctor").output


def test_the_demo_is_not_added_to_an_index_whose_logs_are_gone(isolated_home: Path) -> None:
    transcript = cc.write_transcript(
        isolated_home / ".claude",
        "/w/real",
        [cc.user("why does the kubernetes probe time out?"), cc.assistant("the port is wrong")],
    )
    run("index")
    transcript.unlink()  # Claude Code deletes transcripts after 30 days

    out = run("index").output
    assert "bundled demo history" not in out
    listed = json.loads(run("sessions", "--all", "--json").output)
    assert [s["id"] for s in listed] == [cc.SESSION_ID]
    with Huiyi() as hy:
        assert hy.index_demo() is None
        assert [s.id for s in hy.sessions(all_workspaces=True)] == [cc.SESSION_ID]


def test_an_empty_index_gets_the_demo(isolated_home: Path) -> None:
    out = run("index").output
    assert "bundled demo history" in out
    listed = json.loads(run("sessions", "--all", "--json").output)
    assert listed and {s["workspace"] for s in listed} == {"/demo/acme-api"}


def test_doctor_tells_hooks_installed_from_hooks_that_ran(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed is not working: a hook that never ran is named, one that ran says when and
    what it answered."""
    monkeypatch.setenv("HUIYI_SERVICE", "off")
    runner = CliRunner()
    assert runner.invoke(main, ["install", "claude-code"]).exit_code == 0

    def installed() -> dict[str, object]:
        result = runner.invoke(main, ["doctor", "--json"])
        claude: dict[str, object] = json.loads(result.output)["installed"]["claude-code"]
        return claude

    before = installed()
    assert before["ran"] == {}
    assert any("installed but never ran: SessionStart" in n for n in before["notes"])
    payload = json.dumps({"session_id": "s1", "cwd": str(isolated_home)}).encode()
    assert run_hook("claude-code", "SessionStart", io.BytesIO(payload), io.StringIO()) == 0
    after = installed()
    assert after["ran"]["SessionStart"]["answered"] == "nothing"
    assert not any("SessionStart" in n for n in after["notes"])
    text = runner.invoke(main, ["doctor"]).output
    assert "ran   SessionStart" in text and "never ran: UserPromptSubmit" in text
