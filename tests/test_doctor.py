"""`huiyi doctor`: its totals agree with each other, and the bundled demo only fills an empty
index."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from huiyi import Huiyi
from huiyi.cli.root import main
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
