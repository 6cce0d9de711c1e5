"""Trigger words: which spellings fire, and what query each carries."""

from __future__ import annotations

import pytest

from huiyi.config import DEFAULT_TRIGGERS, Trigger
from huiyi.recall.triggers import QUERY_MAX_CHARS, find_trigger


def query_of(prompt: str, triggers: tuple[Trigger, ...] = DEFAULT_TRIGGERS) -> str | None:
    match = find_trigger(prompt, triggers)
    assert match is not None, prompt
    return match.query


@pytest.mark.parametrize(
    "prompt",
    [
        "Memory unlocked redis",
        "memory unlocked redis",
        "MEMORY UNLOCKED redis",
        "MeMoRy UnLoCkEd redis",
    ],
)
def test_any_case_trigger_fires_in_every_case(prompt: str) -> None:
    assert query_of(prompt) == "redis"


@pytest.mark.parametrize("prompt", ["djyhfs 回滚", "Djyhfs 回滚", "大记忆恢复 术"])
def test_exact_triggers_fire_only_as_written(prompt: str) -> None:
    assert find_trigger(prompt, DEFAULT_TRIGGERS) is None


def test_exact_trigger_as_written_fires() -> None:
    assert query_of("DJYHFS 回滚方案") == "回滚方案"
    assert query_of("大记忆恢复术：数据库迁移") == "数据库迁移"


@pytest.mark.parametrize(
    "prompt",
    [
        "XDJYHFS foo",
        "DJYHFS2 foo",
        "memory unlockedness foo",
        "what does `DJYHFS` do here?",
        "the trigger is:\n```\nMemory unlocked redis\n```\nexplain it",
    ],
)
def test_glued_words_and_code_are_not_triggers(prompt: str) -> None:
    assert find_trigger(prompt, DEFAULT_TRIGGERS) is None


@pytest.mark.parametrize(
    ("prompt", "query"),
    [
        ("Memory unlocked: the redis pool timeout. Then fix the test.", "the redis pool timeout"),
        ("大记忆恢复术 上次的迁移脚本。然后继续写", "上次的迁移脚本"),
        ("DJYHFS 回滚方案！为什么失败", "回滚方案"),
        ("DJYHFS 为什么失败？再看看", "为什么失败"),
        ("Memory unlocked main.py and python 3.11 config. next", "main.py and python 3.11 config"),
        ("Memory unlocked the webhook retry\nsecond line here", "the webhook retry"),
        ("Memory unlocked\n\nthe webhook retry. more", "the webhook retry"),
        ("please, Memory unlocked — deploy checklist", "deploy checklist"),
    ],
)
def test_query_is_the_first_line_or_sentence_after_the_trigger(prompt: str, query: str) -> None:
    assert query_of(prompt) == query


@pytest.mark.parametrize("prompt", ["大记忆恢复术", "Memory unlocked!", "DJYHFS。", "  DJYHFS  \n"])
def test_trigger_alone_has_no_query(prompt: str) -> None:
    assert query_of(prompt) is None


def test_first_trigger_in_the_prompt_wins() -> None:
    match = find_trigger("DJYHFS alpha, then Memory unlocked beta", DEFAULT_TRIGGERS)
    assert match is not None and match.trigger.word == "DJYHFS"
    assert match.query == "alpha, then Memory unlocked beta"


def test_configured_triggers_replace_the_defaults() -> None:
    mine = (Trigger("回忆一下", any_case=False), Trigger("Recall Now", any_case=True))
    assert find_trigger("DJYHFS foo", mine) is None
    assert query_of("回忆一下 部署流程", mine) == "部署流程"
    assert query_of("recall now: the cache", mine) == "the cache"


def test_long_query_is_cut() -> None:
    assert len(query_of("DJYHFS " + "x" * 2000) or "") == QUERY_MAX_CHARS
