"""The tokenizer: the same tokens on the index side and the query side."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from huiyi.text.tokenize import (
    CJK_CLASS,
    MAX_TOKEN,
    Term,
    cjk_bigrams,
    index_streams,
    is_cjk,
    parse_query,
    terms,
    tokens,
    word_parts,
)


def reference_streams(text: str) -> tuple[str, str]:
    body: list[str] = []
    whole: list[str] = []
    for term in terms(text):
        body.extend(term.parts)
        if term.whole:
            whole.append(term.whole)
    return " ".join(body), " ".join(whole)


def unicode61(body: str) -> list[str]:
    """What FTS5's unicode61 tokenizer (with `_` as a token character) makes of a text."""
    return re.findall(r"\w+", body.lower())


@given(st.text(alphabet=st.sampled_from("aZ9_./-:É中文回滚 \n😀ｂ,'"), max_size=80))
def test_fast_index_path_matches_the_query_side(text: str) -> None:
    body, whole = index_streams(text)
    ref_body, ref_whole = reference_streams(text)
    assert unicode61(body) == ref_body.split()
    assert whole == ref_whole


@pytest.mark.parametrize("unit", ["a", "aB", "a.", "1a"])
def test_pathological_input_tokenises_in_linear_time(
    unit: str, cost_ratio: Callable[..., float]
) -> None:
    # one 200,000-character text costs what ten 20,000-character texts cost; quadratic: ten times
    ratio = cost_ratio(index_streams, lambda n: unit * (n // len(unit)), 20_000)
    assert ratio < 3, f"ten times the length cost {ratio:.1f} times as much"


def test_chinese_runs_become_bigrams_and_code_splits_into_parts() -> None:
    body, whole = index_streams("回滚操作 src/app/main.py getUserName E1234")
    assert unicode61(body) == [
        "回滚",
        "滚操",
        "操作",
        "src",
        "app",
        "main",
        "py",
        "get",
        "user",
        "name",
        "e",
        "1234",
    ]
    assert whole.split() == ["src_app_main_py", "get_user_name", "e_1234"]


def test_quoted_parts_of_a_query_are_phrases() -> None:
    query = parse_query('"make ship" the deploy')
    assert query.phrases == (("make", "ship"),)
    assert [t.parts for t in query.terms] == [("deploy",)]


#: pieces that exercise the tokenizer's rules: CJK runs and lone characters, compounds,
#: camelCase, digits, full-width forms, diacritics, separators
PIECES = (
    "回滚", "数据库迁移", "库", "getUserName", "src/app/main.py", "snake_case_name", "E1234",
    "8321", "--no-verify", "Ｆｕｌｌ", "naïve", "the", "Foo.bar", "_x_", "，", " ", "\n",
    "HTTPServer", "v2.0", "a-b", "日本語テキスト", "한국어", "x回y", "a.回", "豈", "ー",
)  # fmt: skip
TEXTS = st.text() | st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_the_index_holds_the_tokens_the_query_side_finds(text: str) -> None:
    """What ingestion writes (`body` as unicode61 splits it, and `whole`) is the very set of
    tokens the query side makes of the same text, or a query word would miss its passage."""
    body, whole = index_streams(text)
    assert {*unicode61(body), *whole.split()} == set(tokens(text))


def test_a_code_word_seen_before_is_indexed_as_the_first_time() -> None:
    """Code words' streams are cached (`_WORD_CACHE`): a repeat, in one text or the next,
    writes the same parts and its compound once per occurrence."""
    text = "getUserName then src/app/main.py, getUserName 2024 snake_case_name"
    first = index_streams(text)
    assert index_streams(text) == first
    body, whole = reference_streams(text)
    assert (unicode61(first[0]), first[1]) == (body.split(), whole)
    assert whole.split().count("get_user_name") == 2


ASCII_PIECES = [p for p in PIECES if p.isascii()]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.characters(max_codepoint=127))
    | st.lists(st.sampled_from(ASCII_PIECES), max_size=30).map("".join)
)
def test_ascii_text_is_indexed_as_the_query_side_reads_it(text: str) -> None:
    """ASCII text is rewritten by a pattern of its own (a cheaper word class): the index must
    still hold exactly the query side's tokens."""
    assert text.isascii()
    body, whole = index_streams(text)
    assert {*unicode61(body), *whole.split()} == set(tokens(text))


_CLASS_WORD = rf"[^\W_{CJK_CLASS}]"
_CLASS_SCAN = re.compile(
    rf"(?P<cjk>[{CJK_CLASS}]+)|(?P<word>{_CLASS_WORD}+(?:[_./:\\-]+{_CLASS_WORD}+)*)"
)


def class_scan_terms(text: str) -> list[Term]:
    """The query side as one pattern with the CJK class (what `terms` was before it learnt to
    find CJK runs without compiling that class)."""
    out: list[Term] = []
    for m in _CLASS_SCAN.finditer(unicodedata.normalize("NFKC", text)):
        if m.group("cjk") is not None:
            out.append(Term(tuple(cjk_bigrams(m.group("cjk"))), cjk=True))
        elif parts := word_parts(m.group("word")):
            out.append(Term(tuple(parts), "_".join(parts)[:MAX_TOKEN] if len(parts) > 1 else None))
    return out


@settings(max_examples=500, deadline=None)
@given(TEXTS)
def test_query_terms_are_those_of_a_scan_with_the_cjk_class(text: str) -> None:
    assert terms(text) == class_scan_terms(text)


def test_every_code_point_is_cjk_exactly_when_the_class_says_so() -> None:
    in_class = re.compile(f"[{CJK_CLASS}]")
    wrong = [
        hex(code)
        for code in range(0x110000)
        if not 0xD800 <= code < 0xE000 and is_cjk(chr(code)) != bool(in_class.match(chr(code)))
    ]
    assert wrong == []


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_a_quoted_phrase_is_the_token_sequence_the_index_holds(text: str) -> None:
    """An exact phrase must be the very tokens, in order, that ingestion wrote for the same
    words, or a quoted query would miss the passage it quotes."""
    body, _ = index_streams(text)
    phrases = parse_query('"' + text.replace('"', " ") + '"').phrases
    assert [list(p) for p in phrases] == ([unicode61(body)] if unicode61(body) else [])
