"""Our golden set is valid and covers what the issue asks for: every relevant id names an event
of the query's own workspace, at least 60 queries, every category, negatives, both languages."""

from __future__ import annotations

from pathlib import Path

import pytest

from huiyi.eval.baseline import Bm25Baseline
from huiyi.eval.datasets import EvalSet, load_golden, split_event_id
from huiyi.eval.runner import run
from huiyi.text.tokenize import CJK_CLASS

GOLDEN = Path(__file__).parent / "golden" / "huiyi-golden.json"
CATEGORIES = {"exact", "typo", "partial", "paraphrase", "cross-session", "identifier", "negative"}


@pytest.fixture(scope="module")
def golden() -> EvalSet:
    return load_golden(GOLDEN)  # raises on any id that names no event


def test_golden_set_is_small_and_big_enough(golden: EvalSet) -> None:
    assert GOLDEN.stat().st_size < 300_000
    assert len(golden.queries) >= 60
    assert 8 <= len(golden.sessions) <= 15
    assert len(golden.workspaces()) >= 3


def test_every_category_is_present_and_only_negatives_have_no_relevant(golden: EvalSet) -> None:
    assert set(golden.categories()) == CATEGORIES
    for query in golden.queries:
        assert query.negative == (query.category == "negative"), query.id
    assert sum(q.negative for q in golden.queries) >= 5


def test_relevant_events_lie_in_the_query_workspace(golden: EvalSet) -> None:
    cwd_of = {s.id: s.cwd for s in golden.sessions}
    for query in golden.queries:
        assert query.workspace is not None, query.id
        for relevant in query.relevant:
            assert cwd_of[split_event_id(relevant)[0]] == query.workspace, query.id


def test_cross_session_queries_need_more_than_one_session(golden: EvalSet) -> None:
    for query in golden.queries:
        if query.category == "cross-session":
            assert len({split_event_id(r)[0] for r in query.relevant}) >= 2, query.id


def test_golden_set_is_bilingual(golden: EvalSet) -> None:
    def has_cjk(text: str) -> bool:
        return any(any(lo <= ch <= hi for lo, hi in _ranges()) for ch in text)

    queries = [q.query for q in golden.queries]
    assert sum(has_cjk(q) for q in queries) >= 15
    assert sum(not has_cjk(q) for q in queries) >= 15
    texts = [e.text for _, e in golden.events()]
    assert sum(has_cjk(t) for t in texts) >= 30
    assert sum(not has_cjk(t) for t in texts) >= 30


def _ranges() -> list[tuple[str, str]]:
    body = CJK_CLASS
    return [(body[i], body[i + 2]) for i in range(0, len(body), 3)]


def test_plain_bm25_finds_exact_words_but_not_paraphrases(golden: EvalSet) -> None:
    """Guards the labels: if BM25 solved paraphrases, they would not be paraphrases."""
    scores = run(golden, Bm25Baseline(golden), layer="bm25").scores.per_category
    assert scores["exact"]["hit@5"] >= 0.8
    assert scores["paraphrase"]["hit@5"] <= 0.5


def test_the_fresh_negatives_ask_the_golden_sessions_in_both_languages_and_halves() -> None:
    """The fresh set: its positives name events of their own workspace, its negatives are
    mostly near misses, in Chinese and English, and the hash split gives each half some of
    every category."""
    import re
    import zlib

    fresh = load_golden(GOLDEN.with_name("huiyi-fresh-negatives.json"))  # raises on a bad id
    cwd_of = {s.id: s.cwd for s in fresh.sessions}
    for query in fresh.queries:
        assert query.negative == (query.category != "positive"), query.id
        for relevant in query.relevant:
            assert cwd_of[split_event_id(relevant)[0]] == query.workspace, query.id
    near = [q for q in fresh.queries if q.category == "near-miss"]
    assert len(near) >= 60 and sum(q.negative for q in fresh.queries) >= 70
    cjk = [q for q in near if re.search(f"[{CJK_CLASS}]", q.query)]
    assert 15 <= len(cjk) <= len(near) - 15
    for category in {q.category for q in fresh.queries}:
        halves = {zlib.crc32(q.id.encode()) % 2 for q in fresh.queries if q.category == category}
        assert halves == {0, 1}, category
