"""The memory block through the hooks: in front of each session once, again when it changed or a
compaction dropped it, never twice for nothing, never for a subagent, never from huiyi's own
text coming back as a prompt, and for DSH with the session's first prompt (its bridge runs
SessionStart detached, so a SessionStart answer misses the first request)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from huiyi import Huiyi
from huiyi.safety.exit import NOTES_HEADING
from huiyi.transports.hook_command import run
from tests.builders import claude as cc
from tests.builders import dsh

NOTE = "Deploys go through make ship, never by hand."
LATER = "The staging database is read-only on Fridays."
DSH_SESSION = "session-cccccccc-1111-4222-8333-444455556666"


@pytest.fixture(autouse=True)
def no_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUIYI_SERVICE", "off")


@pytest.fixture
def project(isolated_home: Path) -> Path:
    path = isolated_home / "shop"
    (path / ".git").mkdir(parents=True)
    with Huiyi() as hy:
        hy.workspace_memory(path).add("memory", NOTE)
    return path


def hook(harness: str, event: str, payload: dict[str, Any]) -> str:
    """What the model gets from one hook (empty: nothing was printed)."""
    out = io.StringIO()
    assert run(harness, event, io.BytesIO(json.dumps(payload).encode()), out) == 0
    if not out.getvalue():
        return ""
    (line,) = out.getvalue().splitlines()
    text = json.loads(line)["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str)
    return text


def dsh_log(home: Path, project: Path, lines: list[Any], **header: Any) -> Path:
    return dsh.write_session(home / ".dsh", str(project), [lines], session_id=DSH_SESSION, **header)


def dsh_input(log: Path, project: Path, **fields: Any) -> dict[str, Any]:
    return {"session_id": DSH_SESSION, "transcript_path": str(log), "cwd": str(project), **fields}


def add_memory(project: Path, text: str) -> None:
    with Huiyi() as hy:
        assert hy.workspace_memory(project).add("memory", text).ok


def test_dsh_gets_the_block_with_its_first_prompt_not_at_session_start(
    project: Path, isolated_home: Path
) -> None:
    log = dsh_log(isolated_home, project, [dsh.user(0, "what is our deploy process?")])
    start = dsh_input(log, project, source="startup")
    assert hook("dsh", "SessionStart", start) == ""
    first = hook("dsh", "UserPromptSubmit", dsh_input(log, project, prompt="hello"))
    assert first.startswith(NOTES_HEADING) and NOTE in first
    again = hook("dsh", "UserPromptSubmit", dsh_input(log, project, prompt="and then?"))
    assert again == ""  # nothing changed: nothing sent, the prompt cache holds


def test_a_memory_saved_mid_session_is_in_front_of_the_model_from_the_next_turn(
    project: Path, isolated_home: Path
) -> None:
    transcript = cc.transcript_path(isolated_home / ".claude", str(project))
    payload = {"session_id": "s-claude", "transcript_path": str(transcript), "cwd": str(project)}
    assert NOTE in hook("claude-code", "SessionStart", {**payload, "source": "startup"})
    assert hook("claude-code", "UserPromptSubmit", {**payload, "prompt": "go on"}) == ""
    add_memory(project, LATER)
    changed = hook("claude-code", "UserPromptSubmit", {**payload, "prompt": "next step"})
    assert LATER in changed and NOTE in changed
    assert hook("claude-code", "UserPromptSubmit", {**payload, "prompt": "and?"}) == ""


def test_a_resumed_session_that_holds_the_block_gets_it_only_when_changed(
    project: Path, isolated_home: Path
) -> None:
    transcript = cc.transcript_path(isolated_home / ".claude", str(project))
    payload = {"session_id": "s-resumed", "transcript_path": str(transcript), "cwd": str(project)}
    assert NOTE in hook("claude-code", "SessionStart", {**payload, "source": "startup"})
    # `claude -p --resume` / `codex exec resume`: a new process, the same conversation
    assert NOTE not in hook("claude-code", "SessionStart", {**payload, "source": "resume"})
    add_memory(project, LATER)
    resumed = hook("claude-code", "SessionStart", {**payload, "source": "resume"})
    assert LATER in resumed and NOTE in resumed
    # a cleared conversation holds nothing: the block comes again
    assert NOTE in hook("claude-code", "SessionStart", {**payload, "source": "clear"})


def test_after_a_compaction_the_block_comes_again_once(project: Path, isolated_home: Path) -> None:
    lines = [dsh.user(0, "first question"), dsh.assistant(1, "first answer")]
    log = dsh_log(isolated_home, project, lines)
    assert NOTE in hook("dsh", "UserPromptSubmit", dsh_input(log, project, prompt="hi"))
    dsh.append_batch(log, dsh.compaction(2, "We talked about the first question.", start=0, end=1))
    after = hook("dsh", "UserPromptSubmit", dsh_input(log, project, prompt="where were we?"))
    assert NOTE in after
    assert NOTE not in hook("dsh", "UserPromptSubmit", dsh_input(log, project, prompt="ok"))


def test_a_subagent_gets_no_memory_block(project: Path, isolated_home: Path) -> None:
    log = dsh_log(isolated_home, project, [dsh.user(0, "look at the logs")], delegationDepth=1)
    assert hook("dsh", "UserPromptSubmit", dsh_input(log, project, prompt="look")) == ""


def test_huiyi_s_own_block_queued_back_as_a_prompt_recalls_nothing(
    project: Path, isolated_home: Path
) -> None:
    """DSH's bridge runs UserPromptSubmit on whatever input it queued, a hook's context too: a
    memory entry holding a trigger phrase must not make that 'prompt' recall history."""
    add_memory(project, "DJYHFS is the word that recalls history.")
    log = dsh_log(isolated_home, project, [dsh.user(0, "hello")])
    block = hook("dsh", "UserPromptSubmit", dsh_input(log, project, prompt="hello"))
    assert NOTES_HEADING in block
    assert hook("dsh", "UserPromptSubmit", dsh_input(log, project, prompt=block)) == ""
    joined = "what next?" + block  # the bridge joins queued messages' text without a space
    assert hook("dsh", "UserPromptSubmit", dsh_input(log, project, prompt=joined)) == ""


def test_a_block_from_another_session_is_known_by_its_shape(
    project: Path, isolated_home: Path
) -> None:
    log = dsh_log(isolated_home, project, [dsh.user(0, "hello")])
    with Huiyi() as hy:
        foreign = "\n" + NOTES_HEADING + "\n(anything)\n" + hy.workspace_memory(project).render()
    assert hook("dsh", "UserPromptSubmit", dsh_input(log, project, prompt=foreign)) == ""


def test_a_store_dsh_already_reads_as_a_digest_is_not_sent_again(
    project: Path, isolated_home: Path
) -> None:
    from click.testing import CliRunner

    from huiyi.cli.root import main

    with Huiyi() as hy:
        assert hy.workspace_memory(project).add("user", "Prefers answers in Chinese.").ok
    result = CliRunner().invoke(main, ["agents-md", "sync"])
    assert result.exit_code == 0, result.output
    log = dsh_log(isolated_home, project, [dsh.user(0, "hello")])
    block = hook("dsh", "UserPromptSubmit", dsh_input(log, project, prompt="hello"))
    assert NOTE in block and "Prefers answers in Chinese." not in block
