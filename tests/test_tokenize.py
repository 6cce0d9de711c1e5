"""The tokenizer: the same tokens on the index side and the query side."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from huiyi.text.tokenize import index_streams, parse_query, terms


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
