"""`huiyi hook <harness> <Event>`: what each event puts in front of the model, through the real
front (stdin in, the harness's JSON form out), and how it fails open.

Most tests run the front in this process with `HUIYI_SERVICE=off` (the same core code the
service runs); one runs `python -m huiyi hook` as a harness does, through the warm service.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from huiyi import Huiyi
from huiyi.config import Settings
from huiyi.policy.hooks import Hooks, parse
from huiyi.recall.anchor import ANCHOR_TURNS
from huiyi.safety.exit import NOTES_HEADING
from huiyi.transports import hook_command as hook_front
from huiyi.transports.hook_command import LOG_MAX_BYTES, LOG_NAME, MAX_INPUT_BYTES, run
from tests.builders import claude as cc
from tests.builders import codex as cx
from tests.builders import dsh
from tests.services import stop_services

SRC = Path(__file__).resolve().parent.parent / "src"
SECRET = "sk-proj-" + "Q7x9Lm2Pz4Rt8Wv6Yb1Nc3Kd5Hf0Jg"
NOTE = "Deploys go through make ship, never by hand."
EARLIER = "session-aaaaaaaa-1111-4222-8333-444455556666"
CURRENT = "5f0c2d1e-1111-4222-8333-444455556666"  # the Claude builder's session id


@pytest.fixture(autouse=True)
def no_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUIYI_SERVICE", "off")


@pytest.fixture
def project(isolated_home: Path) -> Path:
    path = isolated_home / "shop"
    (path / ".git").mkdir(parents=True)
    return path


def earlier_session(home: Path, project: Path) -> None:
    """A DSH session of the same workspace that decided the kumquat rollback, indexed (a hook
    reads only its own session's log; the service reads the others after each hook)."""
    dsh.write_session(
        home / ".dsh",
        str(project),
        [
            [
                dsh.user(1, "why did the kumquat migration fail?"),
                dsh.assistant(2, "The kumquat migration 0042 hit a lock timeout; rolled back."),
            ]
        ],
        session_id=EARLIER,
    )
    with Huiyi() as hy:
        hy.index()


def hook(
    event: str, payload: object, harness: str = "claude-code", *, raw: bytes | None = None
) -> str:
    """Run the front as a harness would, in this process; returns what it printed."""
    data = raw if raw is not None else json.dumps(payload).encode()
    out = io.StringIO()
    assert run(harness, event, io.BytesIO(data), out) == 0
    return out.getvalue()


def context(printed: str, event: str) -> str:
    """The additionalContext of the one JSON line a hook printed."""
    lines = printed.splitlines()
    assert len(lines) == 1, printed
    answer = json.loads(lines[0])
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str)
    return text


def claude_input(project: Path, **fields: Any) -> dict[str, Any]:
    transcript = cc.transcript_path(Path(os.environ["HOME"]) / ".claude", str(project))
    return {
        "session_id": CURRENT,
        "transcript_path": str(transcript),
        "cwd": str(project),
        **fields,
    }


def hook_log(home: Path) -> str:
    path = home / ".huiyi" / LOG_NAME
    return path.read_text(encoding="utf-8") if path.exists() else ""


def remember(project: Path) -> None:
    with Huiyi() as hy:
        hy.workspace_memory(project).add("memory", NOTE)
        hy.workspace_memory(project).add("user", "Prefers answers in Chinese.")


# -- SessionStart ------------------------------------------------------------------------------


def test_session_start_gives_the_memory_block_with_its_budget_header(project: Path) -> None:
    remember(project)
    text = context(hook("SessionStart", claude_input(project, source="startup")), "SessionStart")
    assert text.startswith(NOTES_HEADING)
    assert "USER PROFILE (who the user is) [" in text
    assert "MEMORY (your notes about this workspace) [" in text
    assert "/2,200 chars]" in text and "/1,375 chars]" in text
    assert NOTE in text and "Prefers answers in Chinese." in text


def test_session_start_is_the_same_bytes_until_the_memory_changes(project: Path) -> None:
    remember(project)
    payload = claude_input(project, source="startup")
    first, second = hook("SessionStart", payload), hook("SessionStart", payload)
    assert first == second
    with Huiyi() as hy:
        hy.workspace_memory(project).add("memory", "The staging database is read-only on Fridays.")
    third = hook("SessionStart", payload)
    assert third != first and "read-only on Fridays" in context(third, "SessionStart")


def test_session_start_with_no_memory_prints_nothing(project: Path) -> None:
    assert hook("SessionStart", claude_input(project, source="startup")) == ""


def test_session_start_shows_only_the_workspace_of_the_caller(
    project: Path, isolated_home: Path
) -> None:
    other = isolated_home / "other"
    (other / ".git").mkdir(parents=True)
    with Huiyi() as hy:
        hy.workspace_memory(other).add("memory", "Only for the other project.")
        hy.workspace_memory(project).add("memory", NOTE)
    text = context(hook("SessionStart", claude_input(project, source="startup")), "SessionStart")
    assert NOTE in text and "Only for the other project." not in text


def test_a_secret_in_a_hand_edited_memory_file_is_masked(project: Path) -> None:
    with Huiyi() as hy:
        hy.workspace_memory(project).add("memory", NOTE)
        path = hy.workspace_memory(project).store("memory").paths.main
    path.write_text(path.read_text(encoding="utf-8") + f"\n§\nstaging key {SECRET}\n")
    text = context(hook("SessionStart", claude_input(project, source="startup")), "SessionStart")
    assert SECRET not in text and NOTE in text


# -- UserPromptSubmit ----------------------------------------------------------------------------


def test_a_trigger_word_injects_the_recalled_history_of_this_workspace(
    project: Path, isolated_home: Path
) -> None:
    earlier_session(isolated_home, project)
    payload = claude_input(project, prompt="DJYHFS kumquat migration")
    text = context(hook("UserPromptSubmit", payload), "UserPromptSubmit")
    assert text.startswith("The following is recalled history")
    assert "why did the kumquat migration fail?" in text and EARLIER in text
    assert len(text) <= Settings.from_env().max_inject_chars


def test_a_trigger_word_that_recalls_nothing_tells_the_model_why(
    project: Path, isolated_home: Path
) -> None:
    printed = hook("UserPromptSubmit", claude_input(project, prompt="DJYHFS kumquat migration"))
    empty = context(printed, "UserPromptSubmit")
    assert "nothing is recalled: this workspace has no sessions yet" in empty
    earlier_session(isolated_home, project)
    printed = hook("UserPromptSubmit", claude_input(project, prompt="DJYHFS zeppelin telemetry"))
    missed = context(printed, "UserPromptSubmit")
    assert "nothing is recalled: nothing in this workspace's history matches" in missed
    assert "zeppelin" not in missed  # the words asked are not repeated back
    assert len(missed) <= Settings.from_env().max_inject_chars
    printed = hook("UserPromptSubmit", claude_input(project, prompt="大记忆恢复术"))
    bare = context(printed, "UserPromptSubmit")
    assert "nothing has been compacted away from this session" in bare


def test_an_ordinary_prompt_injects_nothing(project: Path, isolated_home: Path) -> None:
    earlier_session(isolated_home, project)
    payload = claude_input(project, prompt="please add a unit test for the parser")
    assert hook("UserPromptSubmit", payload) == ""


def test_recall_never_leaves_the_callers_workspace(project: Path, isolated_home: Path) -> None:
    other = isolated_home / "other"
    (other / ".git").mkdir(parents=True)
    earlier_session(isolated_home, other)  # the kumquat talk happened in another project
    payload = claude_input(project, prompt="DJYHFS kumquat migration")
    assert "kumquat" not in hook("UserPromptSubmit", payload)


def just_now() -> dict[str, str]:
    """A record's timestamp field for now: an anchor is for a compaction that just happened."""
    return {"timestamp": cc.iso(datetime.now(UTC))}


def compacted_transcript(home: Path, project: Path) -> Path:
    summary = cc.compact_summary("We fixed the zanzibar test by using an ephemeral port.")
    return cc.write_transcript(
        home / ".claude",
        str(project),
        [
            cc.user("let us fix the zanzibar flaky test"),
            cc.assistant("It binds a fixed port."),
            cc.compact_boundary(),
            {**summary, **just_now()},
        ],
    )


def test_after_a_compaction_the_anchor_comes_for_three_turns_then_expires(
    project: Path, isolated_home: Path
) -> None:
    compacted_transcript(isolated_home, project)
    payload = claude_input(project, prompt="ok what now")
    anchors = []
    for _turn in range(ANCHOR_TURNS + 1):
        printed = hook("UserPromptSubmit", payload)
        anchors.append(printed != "")
        if printed:
            text = context(printed, "UserPromptSubmit")
            assert "compaction anchor" in text and "ephemeral port" in text
            assert "let us fix the zanzibar flaky test" in text
    assert anchors == [True] * ANCHOR_TURNS + [False]


def test_a_trigger_takes_the_turn_from_the_anchor_and_the_turn_still_counts(
    project: Path, isolated_home: Path
) -> None:
    earlier_session(isolated_home, project)
    compacted_transcript(isolated_home, project)
    first = context(
        hook("UserPromptSubmit", claude_input(project, prompt="DJYHFS kumquat")),
        "UserPromptSubmit",
    )
    assert "kumquat" in first and "compaction anchor" not in first  # one injection
    ordinary = claude_input(project, prompt="add a unit test for the parser")
    shown = [hook("UserPromptSubmit", ordinary) for _ in range(ANCHOR_TURNS)]
    assert ["compaction anchor" in s for s in shown] == [True, True, False]


def test_session_start_after_a_compaction_carries_the_anchor_after_the_memory(
    project: Path, isolated_home: Path
) -> None:
    remember(project)
    compacted_transcript(isolated_home, project)
    text = context(hook("SessionStart", claude_input(project, source="compact")), "SessionStart")
    assert text.startswith(NOTES_HEADING)
    assert text.index(NOTE) < text.index("compaction anchor")


def test_session_start_waits_for_the_compaction_to_reach_the_log(
    project: Path, isolated_home: Path
) -> None:
    """Claude Code runs SessionStart(compact) before its transcript has the compaction."""
    path = cc.write_transcript(
        isolated_home / ".claude",
        str(project),
        [cc.user("let us fix the zanzibar flaky test"), cc.assistant("It binds a fixed port.")],
    )
    call = parse("claude-code", "PreCompact", claude_input(project))
    flushed: list[float] = []

    def flush(_seconds: float) -> None:  # the harness writes the compaction meanwhile
        if not flushed:
            cc.write_transcript(
                isolated_home / ".claude",
                str(project),
                [cc.compact_boundary(), {**cc.compact_summary("Ephemeral port."), **just_now()}],
                append=True,
            )
        flushed.append(_seconds)

    with Huiyi() as hy:
        hooks = Hooks(hy, sleep=flush)
        hooks.handle(call)
        start = parse("claude-code", "SessionStart", claude_input(project, source="compact"))
        answer = hooks.handle(start)
    assert flushed and path.exists()
    assert answer.context is not None and "Ephemeral port." in answer.context


def test_after_a_second_compaction_session_start_waits_for_the_new_one(
    project: Path, isolated_home: Path
) -> None:
    compacted_transcript(isolated_home, project)  # a compaction no hook has seen yet
    cc.write_transcript(
        isolated_home / ".claude",
        str(project),
        [cc.user("now the walrus exporter"), cc.assistant("Exporter done.")],
        append=True,
    )
    waited: list[float] = []

    def flush(seconds: float) -> None:
        if not waited:
            summary = cc.compact_summary("Second: the walrus exporter is done.")
            cc.write_transcript(
                isolated_home / ".claude",
                str(project),
                [cc.compact_boundary(), {**summary, **just_now()}],
                append=True,
            )
        waited.append(seconds)

    with Huiyi() as hy:
        hooks = Hooks(hy, sleep=flush)
        hooks.handle(parse("claude-code", "PreCompact", claude_input(project)))
        start = claude_input(project, source="compact")
        answer = hooks.handle(parse("claude-code", "SessionStart", start))
    assert waited  # the first compaction, older than PreCompact's note, is not the new one
    assert answer.context is not None and "walrus exporter is done" in answer.context
    assert "now the walrus exporter" in answer.context  # a fragment of the second range only
    assert "zanzibar flaky test" not in answer.context


CODEX_SUMMARY = "Kestrel: the team settled how to undo the schema change and paused writes."


def codex_compaction(home: Path, project: Path) -> Path:
    """A Codex 0.171 session compacted just now, as its rollout logs it (the summary as the
    model's reply first, then `compacted` with the preamble in front of it), appended to the
    session's rollout (started when there is none)."""
    lines = cx.flatten(
        [
            cx.assistant_message("It binds a fixed port.", with_ui_copy=False),
            cx.compaction_171(CODEX_SUMMARY),
        ]
    )
    return cx.write_rollout(
        home / ".codex", str(project), [{**line, **just_now()} for line in lines], append=True
    )


def codex_session(home: Path, project: Path) -> Path:
    """A Codex 0.171 session: the environment block and one prompt."""
    return cx.write_rollout(
        home / ".codex",
        str(project),
        [cx.env_context_171(str(project)), cx.prompt_171("let us fix the zanzibar flaky test")],
    )


def codex_input(project: Path, path: Path, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": cx.SESSION_ID,
        "transcript_path": str(path),
        "cwd": str(project),
        **fields,
    }


def test_a_resumed_session_gets_the_anchor_once_a_turn_for_three_turns(
    project: Path, isolated_home: Path
) -> None:
    """`codex exec resume` (and `claude -p --resume`) run SessionStart(resume), then
    UserPromptSubmit, before each turn: the anchor comes with the first of them only."""
    codex_session(isolated_home, project)
    path = codex_compaction(isolated_home, project)
    starts, prompts = [], []
    for turn in range(ANCHOR_TURNS + 1):
        start = hook("SessionStart", codex_input(project, path, source="resume"), "codex")
        starts.append("compaction anchor" in start)
        ordinary = codex_input(project, path, prompt="add a unit test for the parser")
        prompts.append("compaction anchor" in hook("UserPromptSubmit", ordinary, "codex"))
        if turn == 0:
            text = context(start, "SessionStart")
            # the model's summary alone, and the user's words, not the summary again
            assert f"summary: {CODEX_SUMMARY}" in text.splitlines()
            assert "Another language model" not in text
            assert "- #1 user: let us fix the zanzibar flaky test" in text
            assert text.count(CODEX_SUMMARY) == 1
    assert starts == [True] * ANCHOR_TURNS + [False]
    assert prompts == [False] * (ANCHOR_TURNS + 1)


def test_a_prompt_after_a_start_that_offered_nothing_still_gets_the_anchor(
    project: Path, isolated_home: Path
) -> None:
    """Codex's auto compaction runs between SessionStart and the prompt: the prompt anchors."""
    path = codex_session(isolated_home, project)
    start = hook("SessionStart", codex_input(project, path, source="resume"), "codex")
    assert "compaction anchor" not in start
    codex_compaction(isolated_home, project)  # the compaction reaches the log
    ordinary = codex_input(project, path, prompt="add a unit test for the parser")
    printed = hook("UserPromptSubmit", ordinary, "codex")
    assert "compaction anchor" in context(printed, "UserPromptSubmit")


# -- PreCompact and Stop -------------------------------------------------------------------------


def test_stop_indexes_the_new_lines_of_this_session_at_once(
    project: Path, isolated_home: Path
) -> None:
    claude_dir = isolated_home / ".claude"
    cc.write_transcript(claude_dir, str(project), [cc.user("first words")])
    with Huiyi() as hy:
        hy.index()
    cc.write_transcript(
        claude_dir, str(project), [cc.user("the quetzal cache needs a TTL")], append=True
    )
    assert hook("Stop", claude_input(project, stop_hook_active=False)) == ""
    with Huiyi() as hy:
        hits = hy.search("quetzal", workspace=project, layers=("lexical",)).hits
    assert [h.session_id for h in hits] == [CURRENT]


def test_stop_reads_a_dsh_zstd_log(project: Path, isolated_home: Path) -> None:
    path = dsh.write_session(
        isolated_home / ".dsh",
        str(project),
        [[dsh.user(1, "the pangolin release is on Monday")]],
        session_id=EARLIER,
    )
    payload = {"session_id": EARLIER, "cwd": str(project), "transcript_path": str(path)}
    assert hook("Stop", payload, "dsh") == ""
    with Huiyi() as hy:
        hits = hy.search("pangolin", workspace=project, layers=("lexical",)).hits
    assert [h.session_id for h in hits] == [EARLIER]


def test_a_transcript_outside_the_harness_folders_is_not_read(
    project: Path, isolated_home: Path
) -> None:
    stray = isolated_home / "notes.jsonl"
    stray.write_text(json.dumps({"type": "user", "message": {"content": "wombat"}}) + "\n")
    payload = {"session_id": CURRENT, "cwd": str(project), "transcript_path": str(stray)}
    assert hook("Stop", payload) == ""
    assert "is not a claude log under" in hook_log(isolated_home)
    with Huiyi() as hy:
        assert hy.search("wombat", all_workspaces=True, layers=("lexical",)).hits == []


def test_pre_compact_indexes_what_is_about_to_be_shadowed(
    project: Path, isolated_home: Path
) -> None:
    cc.write_transcript(
        isolated_home / ".claude", str(project), [cc.user("the ocelot parser is slow")]
    )
    assert hook("PreCompact", claude_input(project, trigger="manual")) == ""
    with Huiyi() as hy:
        assert hy.search("ocelot", workspace=project, layers=("lexical",)).hits
    state = json.loads((isolated_home / ".huiyi" / "hooks-state.json").read_text())
    assert state[CURRENT]["noted"] is not None


# -- switched off, and own traffic ---------------------------------------------------------------


def test_with_automatic_recall_off_nothing_is_injected(
    project: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(project)
    earlier_session(isolated_home, project)
    compacted_transcript(isolated_home, project)
    monkeypatch.setenv("HUIYI_ENABLED", "off")
    assert hook("SessionStart", claude_input(project, source="compact")) == ""
    assert hook("UserPromptSubmit", claude_input(project, prompt="DJYHFS kumquat")) == ""
    cc.write_transcript(
        isolated_home / ".claude", str(project), [cc.user("the tapir index")], append=True
    )
    assert hook("Stop", claude_input(project)) == ""  # still read: nothing goes to the model
    with Huiyi() as hy:
        assert hy.search("tapir", workspace=project, layers=("lexical",)).hits
    assert hook_log(isolated_home) == ""


def test_what_a_hook_injected_is_not_indexed_as_conversation(
    project: Path, isolated_home: Path
) -> None:
    """Claude logs hook output as `attachment` records, Codex as a developer message."""
    remember(project)
    injected = context(
        hook("SessionStart", claude_input(project, source="startup")), "SessionStart"
    )
    cc.write_transcript(
        isolated_home / ".claude",
        str(project),
        [
            {
                "type": "attachment",
                "attachment": {"type": "hook_additional_context", "content": [injected]},
                "sessionId": CURRENT,
            },
            cc.user("hello"),
        ],
    )
    cx.write_rollout(
        isolated_home / ".codex",
        str(project),
        [cx.message_171("developer", (injected, "harness")), cx.prompt_171("hello")],
    )
    with Huiyi() as hy:
        hy.index()
        assert hy.search("make ship", workspace=project, layers=("lexical", "fuzzy")).hits == []
        assert hy.search("hello", workspace=project, layers=("lexical",)).hits


# -- failing open ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "logged"),
    [
        (b"not json", "not a JSON object"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"prompt": 5, "session_id": "s", "cwd": "/tmp"}', "prompt must be a string"),
        (b'{"hook_event_name": "Stop"}', "not for UserPromptSubmit"),
        (b"\xff\xfe garbage", "not a JSON object"),
        (b" " * (MAX_INPUT_BYTES + 1), "larger than"),
    ],
)
def test_bad_input_prints_nothing_and_logs_one_line(
    raw: bytes, logged: str, isolated_home: Path
) -> None:
    assert hook("UserPromptSubmit", None, raw=raw) == ""
    lines = hook_log(isolated_home).splitlines()
    assert len(lines) == 1 and logged in lines[0], lines
    assert "claude-code UserPromptSubmit" in lines[0]


def test_an_unknown_harness_or_event_prints_nothing(isolated_home: Path) -> None:
    assert hook("Notification", {}) == ""
    assert hook("SessionStart", {}, "vim") == ""
    assert "unknown hook event 'Notification'" in hook_log(isolated_home)
    assert "unknown harness 'vim'" in hook_log(isolated_home)


def test_a_broken_index_prints_nothing(project: Path, isolated_home: Path) -> None:
    earlier_session(isolated_home, project)
    with Huiyi() as hy:
        hy.index()
    db = isolated_home / ".huiyi" / "index.db"
    for extra in ("-wal", "-shm"):
        Path(str(db) + extra).unlink(missing_ok=True)
    db.write_bytes(b"this is not an SQLite database" * 100)
    assert hook("UserPromptSubmit", claude_input(project, prompt="DJYHFS kumquat")) == ""
    assert "huiyi doctor --repair" in hook_log(isolated_home)


def test_a_home_that_cannot_be_made_prints_nothing(
    project: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = isolated_home / "blocker"
    blocker.write_text("a file where a directory should be")
    monkeypatch.setenv("HUIYI_HOME", str(blocker / "huiyi"))
    assert hook("SessionStart", claude_input(project, source="startup")) == ""


def test_the_log_is_redacted_and_bounded(isolated_home: Path) -> None:
    home = isolated_home / ".huiyi"
    home.mkdir()
    (home / LOG_NAME).write_bytes(b"x" * (LOG_MAX_BYTES + 1))
    hook("SessionStart", None, raw=json.dumps({"prompt": 1, "secret": SECRET}).encode())
    hook_front.log(Settings.from_env(), "codex", "Stop", f"failed with key {SECRET}")
    text = hook_log(isolated_home)
    assert SECRET not in text and "[REDACTED" in text
    assert len(text.splitlines()) == 2  # the old log moved aside, whole
    assert (home / (LOG_NAME + ".1")).stat().st_size == LOG_MAX_BYTES + 1


# -- as a harness runs it --------------------------------------------------------------------------


def test_the_command_answers_through_the_warm_service(project: Path, isolated_home: Path) -> None:
    remember(project)
    env = {**os.environ, "HUIYI_SERVICE": "on", "PYTHONPATH": str(SRC)}
    payload = json.dumps(
        {**claude_input(project, source="startup"), "hook_event_name": "SessionStart"}
    )
    try:
        runs = [
            subprocess.run(
                [sys.executable, "-m", "huiyi", "hook", "claude-code", "SessionStart"],
                input=payload,
                capture_output=True,
                text=True,
                env=env,
                cwd=project,
                timeout=120,
            )
            for _ in range(2)
        ]
        sockets = list((isolated_home / ".huiyi").glob("service-*.sock"))
    finally:
        stop_services(isolated_home / ".huiyi")
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    assert runs[0].stdout == runs[1].stdout
    assert NOTE in context(runs[0].stdout, "SessionStart")
    assert len(sockets) == 1  # the first hook started the service, the second reused it
