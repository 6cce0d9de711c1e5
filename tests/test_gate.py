"""The gate and `prompt_recall` over a real index: what fires, what is injected, what never is."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from huiyi import Huiyi
from huiyi.config import DEFAULT_TRIGGERS
from huiyi.recall.auto import HistoryProbe, decide_prompt, prompt_recall
from huiyi.recall.gate import Decision, Fire, decide
from huiyi.recall.scope import CallerContext
from huiyi.recall.tools import Recall
from huiyi.safety.exit import deliver

WS = "/work/gate-test/shop"
OTHER = "/work/gate-test/billing"
T0 = 1_748_736_000_000
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _session(
    sid: str, cwd: str, title: str, day: int, messages: Iterable[dict[str, Any]]
) -> list[str]:
    lines = [json.dumps({"type": "session", "id": sid, "cwd": cwd, "title": title})]
    for n, message in enumerate(messages, 1):
        lines.append(json.dumps({"time": T0 + day * 86_400_000 + n * 60_000, **message}))
    return lines


def user(text: str, **kw: Any) -> dict[str, Any]:
    return {"role": "user", "text": text, **kw}


def assistant(text: str, **kw: Any) -> dict[str, Any]:
    return {"role": "assistant", "text": text, **kw}


def write_history(path: Path, *sessions: list[str]) -> Path:
    path.write_text("\n".join(line for s in sessions for line in s) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def hy(isolated_home: Path) -> Iterable[Huiyi]:
    history = write_history(
        isolated_home / "history.jsonl",
        _session(
            "redis",
            WS,
            "Redis 连接池超时",
            0,
            [
                user("生产环境 redis.exceptions.ConnectionError: Too many connections"),
                assistant("把 max_connections 从 10 调到 50，并加 health_check_interval=30。"),
                user("好，上线后没再出现了"),
            ],
        ),
        _session(
            "webhook",
            WS,
            "Webhook retries",
            1,
            [
                user("Our outgoing webhooks retry with sleep(5); switch to exponential backoff."),
                assistant(
                    "Deliveries now go to a retry queue; failures land in webhook_dead_letters."
                ),
                user(f"deploy it with token {SECRET} and then we stop for today"),
                assistant("Deployed. Next step: add replay_dead_letter filters by merchant."),
            ],
        ),
        _session(
            "payroll",
            WS,
            "[no-recall] payroll export",
            2,
            [user("export salary CSV with IBAN columns for finance")],
        ),
        _session(
            "kafka",
            OTHER,
            "Kafka lag",
            2,
            [user("Kafka consumer lag 50 万，max_poll_records 调到 500")],
        ),
        _session(
            "current",
            WS,
            "today",
            3,
            [
                user("look at the protobuf schema evolution plan", compacted=True),
                assistant("We keep field numbers stable; reserved tags 7 and 9.", compacted=True),
                {"type": "compaction", "summary": "Discussed protobuf schema evolution."},
                user("now the avro migration of the invoice topic"),
            ],
        ),
        _session(
            "echo",
            WS,
            "an injection logged back",
            2,
            [user(deliver("previous topic: zeppelin rollout of the gateway").text)],
        ),
    )
    with Huiyi() as h:
        h.index(jsonl=[history])
        yield h


def recall_for(hy: Huiyi, session: str | None, *, chars: int = 3_000) -> Recall:
    return Recall(hy.store, CallerContext(WS, session), max_inject_chars=chars)


def gate(hy: Huiyi, prompt: str, session: str | None = "new-session") -> Decision:
    return decide_prompt(recall_for(hy, session), prompt, DEFAULT_TRIGGERS)


# -- which kind fires -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    ["继续", "好的，继续吧", "我重启了，接着做", "where were we?", "ok continue", "resume"],
)
def test_process_commands_fire_as_process(hy: Huiyi, prompt: str) -> None:
    assert gate(hy, prompt).kind is Fire.PROCESS


@pytest.mark.parametrize(
    "prompt",
    [
        "What does the continue statement do?",
        "continue, but use a dict instead",
        "继续执行会报错吗",
        "Get the last element of the list",
        "上次函数调用的返回值为什么是 None",
        "Remember to add tests",
        "在提交之前说明一下改了什么",
        "The last time the loop runs it fails",
    ],
)
def test_ordinary_messages_with_the_same_words_do_not_fire(hy: Huiyi, prompt: str) -> None:
    decision = gate(hy, prompt)
    assert decision.kind is None, decision.why


def test_trigger_comes_before_everything_and_carries_its_query(hy: Huiyi) -> None:
    decision = gate(hy, "继续。DJYHFS webhook backoff")
    assert decision.kind is Fire.TRIGGER
    assert decision.query == "webhook backoff"


@pytest.mark.parametrize(
    "prompt",
    [
        "上次那个 Too many connections 是怎么解决的",
        "之前说的 max_connections 调成多少来着",
        "remember the exponential backoff for webhooks?",
        "as we discussed, the webhook_dead_letters table needs a replay command",
    ],
)
def test_back_reference_fires_when_its_fragment_is_in_history(hy: Huiyi, prompt: str) -> None:
    decision = gate(hy, prompt)
    assert decision.kind is Fire.BACKREF, decision.why
    assert decision.evidence is not None
    assert decision.evidence.session_id in {"redis", "webhook"}
    assert "found in session" in decision.why


@pytest.mark.parametrize(
    "prompt",
    [
        "上次那个 Kubernetes HPA 配置在哪",
        "remember the terraform state lock issue?",
        "As we discussed, move feature flags to LaunchDarkly.",
    ],
)
def test_back_reference_without_a_match_in_history_stays_quiet(hy: Huiyi, prompt: str) -> None:
    decision = gate(hy, prompt)
    assert decision.kind is None
    assert "not found earlier in this workspace's history" in decision.why


def test_fragment_only_in_another_workspace_does_not_fire(hy: Huiyi) -> None:
    assert gate(hy, "上次那个 Kafka consumer lag 是怎么处理的").kind is None
    # the same words, asked from the workspace that has them, do fire
    other = Recall(hy.store, CallerContext(OTHER, "new"), max_inject_chars=3_000)
    fired = decide_prompt(other, "上次那个 Kafka consumer lag 是怎么处理的", DEFAULT_TRIGGERS)
    assert fired.kind is Fire.BACKREF


def test_private_sessions_are_never_evidence(hy: Huiyi) -> None:
    decision = gate(hy, "what did we decide about the salary CSV export with IBAN?")
    assert decision.kind is None


def test_fragment_only_in_the_current_turn_does_not_fire(hy: Huiyi) -> None:
    # "avro migration of the invoice topic" is this session's live (uncompacted) message
    assert gate(hy, "remember the avro migration of the invoice topic?", "current").kind is None
    # from another session it is history, and fires
    assert gate(hy, "remember the avro migration of the invoice topic?").kind is Fire.BACKREF


def test_compacted_part_of_the_current_session_is_history(hy: Huiyi) -> None:
    decision = gate(hy, "remember the protobuf schema evolution plan?", "current")
    assert decision.kind is Fire.BACKREF
    assert decision.evidence is not None and decision.evidence.session_id == "current"


def test_huiyis_own_injection_logged_back_is_no_evidence(hy: Huiyi) -> None:
    assert gate(hy, "remember the zeppelin rollout of the gateway?").kind is None


def test_probe_is_asked_only_for_back_references() -> None:
    asked: list[str] = []

    def probe(fragment: Any) -> None:
        asked.append(fragment.text)

    for prompt in ("继续", "DJYHFS x", "add a unit test", "上次那个 redis 超时"):
        decide(prompt, DEFAULT_TRIGGERS, probe)
    assert len(asked) == 1 and asked[0].endswith("redis 超时")


# -- what prompt_recall injects ---------------------------------------------------------------


def test_trigger_query_injects_the_search_result(hy: Huiyi) -> None:
    out = prompt_recall(
        recall_for(hy, "new"), "Memory unlocked: exponential backoff", DEFAULT_TRIGGERS
    )
    assert out is not None
    assert "session webhook" in out.text and "backoff" in out.text
    assert out.text.startswith("The following is recalled history")


def test_bare_trigger_injects_what_compaction_removed(hy: Huiyi) -> None:
    out = prompt_recall(recall_for(hy, "current"), "大记忆恢复术", DEFAULT_TRIGGERS)
    assert out is not None and "protobuf schema evolution" in out.text
    # a session with nothing compacted: nothing to inject
    assert prompt_recall(recall_for(hy, "redis"), "大记忆恢复术", DEFAULT_TRIGGERS) is None


def test_trigger_query_with_no_match_injects_nothing(hy: Huiyi) -> None:
    assert prompt_recall(recall_for(hy, "new"), "DJYHFS quasar telemetry", DEFAULT_TRIGGERS) is None


def test_continue_after_a_restart_brings_the_previous_sessions_end(hy: Huiyi) -> None:
    out = prompt_recall(recall_for(hy, "fresh-after-restart"), "我重启了，继续", DEFAULT_TRIGGERS)
    assert out is not None
    # the most recently active other session of the workspace, its last messages with seqs
    assert "previous topic: the end of session current" in out.text
    assert "avro migration of the invoice topic" in out.text
    assert "recall_expand(sessionId=current, seq=N)" in out.text
    assert "zeppelin" not in out.text and "IBAN" not in out.text


def test_continue_with_a_compacted_session_brings_its_compacted_part(hy: Huiyi) -> None:
    out = prompt_recall(recall_for(hy, "current"), "continue", DEFAULT_TRIGGERS)
    assert out is not None and "protobuf schema evolution" in out.text


def test_previous_topic_masks_secrets(hy: Huiyi, isolated_home: Path) -> None:
    ws = "/work/gate-test/secret"
    extra = write_history(
        isolated_home / "secret.jsonl",
        _session(
            "deploy",
            ws,
            "deploy",
            4,
            [user(f"deploy with token {SECRET} please"), assistant("Deployed to staging.")],
        ),
    )
    hy.index(jsonl=[extra])
    caller = Recall(hy.store, CallerContext(ws, "after-restart"), max_inject_chars=3_000)
    out = prompt_recall(caller, "继续", DEFAULT_TRIGGERS)
    assert out is not None and "Deployed to staging" in out.text
    assert SECRET not in out.text and out.masks >= 1


def test_continue_in_a_live_session_injects_nothing(hy: Huiyi) -> None:
    # `redis` has earlier human messages and nothing compacted: the model has the topic
    assert prompt_recall(recall_for(hy, "redis"), "继续", DEFAULT_TRIGGERS) is None


def test_back_reference_injects_the_hits_for_its_fragment(hy: Huiyi) -> None:
    out = prompt_recall(
        recall_for(hy, "new"), "之前说的 max_connections 调成多少来着", DEFAULT_TRIGGERS
    )
    assert out is not None and "max_connections" in out.text and "session redis" in out.text


def test_back_reference_to_the_compacted_part_expands_it(hy: Huiyi) -> None:
    out = prompt_recall(
        recall_for(hy, "current"), "remember the protobuf schema evolution plan?", DEFAULT_TRIGGERS
    )
    assert out is not None and "reserved tags 7 and 9" in out.text


def test_ordinary_prompt_injects_nothing(hy: Huiyi) -> None:
    assert (
        prompt_recall(recall_for(hy, "new"), "add a unit test for rounding", DEFAULT_TRIGGERS)
        is None
    )


@pytest.mark.parametrize(
    "prompt", ["DJYHFS webhook", "我重启了，继续", "之前说的 max_connections 调成多少来着"]
)
def test_every_injection_fits_max_inject_chars(hy: Huiyi, prompt: str) -> None:
    for chars in (400, 700, 3_000):
        out = prompt_recall(recall_for(hy, "new", chars=chars), prompt, DEFAULT_TRIGGERS)
        assert out is None or len(out.text) <= chars
    assert prompt_recall(recall_for(hy, "new", chars=3_000), prompt, DEFAULT_TRIGGERS) is not None


def test_probe_never_reads_outside_the_callers_workspace(hy: Huiyi) -> None:
    probe = HistoryProbe(hy.store, CallerContext(WS, "new"))
    decision = decide("上次那个 max_poll_records 调到多少", DEFAULT_TRIGGERS, probe)
    assert decision.kind is None


def test_continue_after_small_talk_is_a_new_session_and_brings_the_previous_topic(
    hy: Huiyi, isolated_home: Path
) -> None:
    """A session whose only earlier turns are a greeting has no topic of its own yet: "继续"
    there resumes the workspace's previous work, as in a new session."""
    chat = write_history(
        isolated_home / "chat.jsonl",
        _session("greeted", WS, "你好", 9, [user("你好"), assistant("你好！有什么可以帮你？")]),
    )
    hy.index(jsonl=[chat])
    out = prompt_recall(recall_for(hy, "greeted"), "继续", DEFAULT_TRIGGERS)
    assert out is not None and "avro migration of the invoice topic" in out.text


def test_a_previous_session_of_small_talk_is_no_topic_to_resume(
    hy: Huiyi, isolated_home: Path
) -> None:
    chat = write_history(
        isolated_home / "chat.jsonl",
        _session("hello", WS, "hi", 9, [user("hi there, thanks!"), assistant("Hello!")]),
    )
    hy.index(jsonl=[chat])
    out = prompt_recall(recall_for(hy, "fresh"), "我重启了，继续", DEFAULT_TRIGGERS)
    assert out is not None and "end of session hello" not in out.text
    assert "avro migration of the invoice topic" in out.text


@pytest.mark.parametrize(
    ("message", "task"),
    [
        ("你好", False),
        ("Hi! thanks.", False),
        ("ok，好的，谢谢", False),
        ("在吗？", False),
        ("继续", False),
        ("hello, 继续", False),
        ("你好，帮我看一下 redis 超时", True),
        ("hi, can you fix the flaky test?", True),
        ("add a unit test", True),
        ("继续执行会报错吗", True),
    ],
)
def test_task_content_is_anything_beyond_small_talk_and_process_commands(
    message: str, task: bool
) -> None:
    from huiyi.recall.gate import has_task

    assert has_task(message) is task
