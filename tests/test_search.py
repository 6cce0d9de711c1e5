"""Lexical search: Chinese words inside sentences, mixed queries, code tokens, phrases, snippets."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from huiyi import Huiyi
from huiyi.store import textindex
from huiyi.text.snippet import SNIPPET_UNITS, snippet, utf16_len
from tests.backends import BACKENDS, on_postgres
from tests.builders.lines import LineReader, write

CORPUS = [
    "我们昨天讨论了数据库迁移失败以后是否应该立即回滚到上一个版本的问题",
    "The flaky test binds port 8321 which the CI runner already uses",
    "rename snake_case_name to better_name in src/app/main.py",
    "calling Foo.bar raised error E1234 during startup",
    "pass --no-verify only for emergency deploys",
    "部署脚本用 make ship，它会跑冒烟测试 smoke tests",
    "unrelated chatter about lunch and coffee",
    "getUserName returns None when the HTTPServer restarts",
]


@pytest.fixture(params=BACKENDS)
def hy(request: pytest.FixtureRequest, tmp_path: Path) -> Iterable[Huiyi]:
    """The corpus in the local index, and in its copy in PostgreSQL."""
    logs = tmp_path / "logs"
    logs.mkdir()
    write(logs / "a.log", *({"s": "s1", "q": i, "t": t} for i, t in enumerate(CORPUS)))
    with Huiyi() as h:
        h.index(readers=[LineReader(logs)])
        if request.param == "sqlite":
            yield h
            return
        with on_postgres(h, request.getfixturevalue("pg_url")) as pg:
            yield pg


def top(hy: Huiyi, query: str) -> int | None:
    hits = hy.search(query, workspace="/w/a", limit=3).hits
    return hits[0].seq if hits else None


@pytest.mark.parametrize(
    ("query", "seq"),
    [
        ("回滚", 0),  # a two-character word in the middle of a long sentence
        ("数据库", 0),
        ("迁移 rollback 回滚", 0),  # mixed Chinese and English
        ("port 8321", 1),
        ("8321", 1),
        ("snake_case_name", 2),  # whole identifier
        ("case_name", 2),  # part of an identifier
        ("snake", 2),
        ("main.py", 2),  # part of a path
        ("src/app/main.py", 2),
        ("Foo.bar", 3),
        ("E1234", 3),
        ("e1234", 3),
        ("--no-verify", 4),
        ("make ship 部署", 5),
        ("冒烟测试", 5),
        ("get_user_name", 7),  # camelCase found by its snake_case spelling
        ("HTTPServer", 7),
        ("ＰＯＲＴ ８３２１", 1),  # full-width input folds to ASCII
    ],
)
def test_query_finds_its_passage_first(hy: Huiyi, query: str, seq: int) -> None:
    assert top(hy, query) == seq


def test_quoted_query_is_an_exact_phrase(hy: Huiyi) -> None:
    assert top(hy, '"make ship"') == 5
    assert top(hy, '"ship make"') is None
    assert top(hy, '"回滚到上一个"') == 0
    assert top(hy, '"回滚到下一个"') is None


def test_words_that_occur_nowhere_find_nothing(hy: Huiyi) -> None:
    # no vectors exist here, so the semantic layer (which always has a nearest neighbour)
    # stays out, and neither the words nor their trigrams occur
    assert hy.search("kubernetes", workspace="/w/a").hits == []
    assert hy.search("zebra giraffe", workspace="/w/a").hits == []


def test_a_query_of_only_common_words_still_searches_them(hy: Huiyi) -> None:
    assert top(hy, "about and") == 6


def test_hits_carry_where_and_what(hy: Huiyi) -> None:
    hit = hy.search("8321", workspace="/w/a").hits[0]
    assert (hit.session_id, hit.seq, hit.source, hit.workspace, hit.kind) == (
        "s1",
        1,
        "test",
        "/w/a",
        "user",
    )
    assert hit.time == 1_001
    assert "8321" in hit.snippet
    assert hit.score > 0
    assert hit.title.startswith("我们昨天讨论")  # no title: the first human message stands in


def test_snippet_is_centred_on_the_match_within_240_utf16_units() -> None:
    text = "𝒜" * 300 + " the needle is here " + "😀" * 300
    cut = snippet(text, ["needle"])
    assert "needle" in cut
    assert utf16_len(cut) <= SNIPPET_UNITS
    assert cut.startswith("…") and cut.endswith("…")


@given(st.text(min_size=0, max_size=600), st.text(min_size=1, max_size=5))
def test_snippet_never_exceeds_the_limit_or_splits_a_surrogate_pair(text: str, word: str) -> None:
    cut = snippet(text, [word])
    assert utf16_len(cut) <= SNIPPET_UNITS
    # a split pair would leave a lone surrogate, which cannot be encoded
    cut.encode("utf-16", "strict")


def test_a_passage_holding_all_the_words_outranks_one_rare_word_repeated(tmp_path: Path) -> None:
    logs = tmp_path / "cover"
    logs.mkdir()
    write(
        logs / "a.log",
        {"s": "s1", "q": 0, "t": "zymurgy zymurgy zymurgy zymurgy"},
        {"s": "s1", "q": 1, "t": "the deploy config sets the port and mentions zymurgy once"},
        *({"s": "s1", "q": 2 + i, "t": f"deploy config port note {i}"} for i in range(20)),
    )
    with Huiyi() as hy:
        hy.index(readers=[LineReader(logs)])
        hits = hy.search("zymurgy deploy config port", workspace="/w/a", layers=("lexical",))
    assert hits.hits[0].seq == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_history_of_eight_word_messages_is_searched_with_or(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Rows of nine tokens on average (eight words and the scope token) make FTS5's BM25 of a
    row without one of an OR query's words 0 / 0, which SQLite returns as NULL: the search
    still answers, the message holding both words first."""
    logs = tmp_path / "nine"
    logs.mkdir()
    texts = [
        "alpha and the rest of it is here",
        "beta and the rest of it is here",
        "alpha beta the rest of it is here",
        "none of the words we ask for here",
    ]
    write(logs / "a.log", *({"s": "s1", "q": i, "t": t} for i, t in enumerate(texts)))
    with Huiyi() as h:
        h.index(readers=[LineReader(logs)])
        if backend == "sqlite":
            hits = h.search("alpha beta", workspace="/w/a", layers=("lexical",)).hits
        else:
            with on_postgres(h, request.getfixturevalue("pg_url")) as pg:
                hits = pg.search("alpha beta", workspace="/w/a", layers=("lexical",)).hits
    assert hits[0].seq == 2
    assert sorted(hit.seq for hit in hits) == [0, 1, 2]


def test_identifiers_in_tool_output_are_found_by_their_parts(tmp_path: Path) -> None:
    """Tool calls and results keep no whole compounds (`textindex.NO_COMPOUNDS_KINDS`): every
    spelling of an identifier still finds them, and a message naming it exactly ranks above a
    shorter tool output that lists it."""
    logs = tmp_path / "tools"
    logs.mkdir()
    listing = "src/app/main.py\nsrc/app/snake_case_name.py\nFoo.bar getUserName"
    write(
        logs / "a.log",
        {"s": "s1", "q": 0, "t": listing, "k": "tool_result"},
        {"s": "s1", "q": 1, "t": "unrelated chatter about lunch and coffee"},
        {"s": "s2", "q": 0, "t": "src/app/main.py", "k": "tool_result"},
        {"s": "s2", "q": 1, "t": "I think the crash comes from the handler in src/app/main.py"},
    )
    assert textindex.stored_streams(listing, "tool_result", False)[1] == ""
    assert textindex.stored_streams(listing, "tool_call", False)[1] == ""
    assert textindex.stored_streams(listing, "user", False)[1] != ""
    with Huiyi() as hy:
        hy.index(readers=[LineReader(logs)])

        def found(query: str) -> list[tuple[str, int]]:
            hits = hy.search(query, workspace="/w/a", layers=("lexical",)).hits
            return [(hit.session_id, hit.seq) for hit in hits]

        for query in (
            "snake_case_name",
            "case_name",
            "Foo.bar",
            "get_user_name",
            "snake_case_name.py",
        ):
            assert found(query)[0] == ("s1", 0), query
        assert ("s1", 0) in found("app/main.py")
        assert found("src/app/main.py")[0] == ("s2", 1)


#: what folding must get right: full-width forms, compatibility characters, combining marks
#: (which compose with the letter before them), Hangul jamo, and every kind of whitespace
_FOLDED_ALPHABET = (
    "aZ9 _-中文ＡｂＣ１，；：（）！？　…ﬁ①Å"
    "\u0301\u0308\u0327\u3099\u1100\u1161\u11a8\uff76\uff9e"
    "\t\n\r\x0b\x0c\x1c\x1f\x85\u00a0\u1680\u2028\u2029\u200b"
)


@given(st.text(alphabet=_FOLDED_ALPHABET, max_size=24))
def test_fuzzy_folds_text_exactly_as_nfkc_lower_case_and_one_space_between_words(
    text: str,
) -> None:
    """The fuzzy layer folds every candidate's text; its faster folding must give the very
    text the plain one gives, or containment (and the typo ranking) would change."""
    import re
    import unicodedata

    from huiyi.search import fuzzy
    from huiyi.text.tokenize import normalize

    plain = unicodedata.normalize("NFKC", text).lower()
    assert normalize(text) == plain
    assert fuzzy._squeeze(plain) == re.sub(r"\s+", " ", plain)
    assert fuzzy._folded(text) == re.sub(r"\s+", " ", plain).strip()
