"""The BM25 baseline: jieba words for Chinese, whitespace words otherwise, one workspace at a
time, nothing returned without a shared word."""

from __future__ import annotations

from huiyi.eval.baseline import Bm25Baseline, baseline_tokens
from huiyi.eval.datasets import EvalEvent, EvalQuery, EvalSession, EvalSet
from huiyi.eval.runner import run


def session(sid: str, cwd: str, *texts: str) -> EvalSession:
    events = tuple(EvalEvent(i, "user", 1000 * i, t) for i, t in enumerate(texts, start=1))
    return EvalSession(sid, cwd, sid, 0, events)


CORPUS = EvalSet(
    "tiny",
    [
        session(
            "a1",
            "/w/a",
            "昨天的数据库迁移失败了，我们决定回滚到上一个版本",
            "Deploy failed: port 8080 already in use, rerun with --port 8081",
            "午饭吃了牛肉面",
        ),
        session("a2", "/w/a", "The flaky test test_sync.py fails only on CI"),
        session("b1", "/w/b", "数据库迁移回滚以后一切正常"),
    ],
    [],
)


def test_tokens_use_jieba_for_chinese_and_trim_punctuation_elsewhere() -> None:
    assert baseline_tokens("迁移失败，回滚！") == ["迁移", "失败", "回滚"]
    assert baseline_tokens("Rerun with --port 8081, see test_sync.py.") == [
        "rerun",
        "with",
        "port",
        "8081",
        "see",
        "test_sync.py",
    ]


def test_baseline_ranks_matching_events_within_the_workspace_only() -> None:
    bm25 = Bm25Baseline(CORPUS)
    assert bm25.search("数据库回滚", "/w/a") == ["a1:1"]
    assert bm25.search("数据库回滚", "/w/b") == ["b1:1"]
    assert bm25.search("数据库回滚") == ["b1:1", "a1:1"]  # shorter event, same words: first
    assert bm25.search("--port", "/w/a") == ["a1:2"]
    assert bm25.search("test_sync.py flaky", "/w/a") == ["a2:1"]


def test_baseline_returns_nothing_without_a_shared_word() -> None:
    bm25 = Bm25Baseline(CORPUS)
    assert bm25.search("kubernetes helm chart", "/w/a") == []
    assert bm25.search("", "/w/a") == []
    assert bm25.search("回滚", "/w/nowhere") == []


def test_baseline_is_a_search_function_for_the_runner() -> None:
    evalset = EvalSet(
        CORPUS.name,
        CORPUS.sessions,
        [
            EvalQuery("q1", "回滚", ("a1:1",), "/w/a", "exact"),
            EvalQuery("q2", "how did we undo the schema change", ("a1:1",), "/w/a", "paraphrase"),
            EvalQuery("n1", "kubernetes", (), "/w/a", "negative"),
        ],
    )
    result = run(evalset, Bm25Baseline(evalset), layer="bm25")
    assert result.scores.per_category["exact"]["hit@1"] == 1.0
    assert result.scores.per_category["paraphrase"]["hit@10"] == 0.0
    assert (result.scores.negatives, result.scores.negatives_answered) == (1, 0)
