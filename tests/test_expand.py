"""Chinese/English query expansion (`text.expand`) and what it finds in a hybrid search."""

from __future__ import annotations

from pathlib import Path

import pytest

from huiyi import Huiyi
from huiyi.text import expand
from tests.builders.lines import LineReader, write

LEX_FUZZY = ("lexical", "fuzzy")


def test_every_term_has_both_languages_and_no_lone_character() -> None:
    """A one-character Chinese form would match inside unrelated words (`表` in `表示`)."""
    rows = expand.table()
    assert len(rows) >= 100
    for zh, en in rows:
        assert zh and en
        assert all(len(form) >= 2 for form in zh), zh
        assert all(form == form.lower() for form in en), en


def test_a_chinese_term_brings_its_english_forms_and_the_other_way_round() -> None:
    assert expand.expansion("怎么回滚") == "rollback roll back revert"
    assert expand.expansion("how did we roll back") == "回滚 回退"
    assert "端口" in expand.expansion("gunicorn port already in use").split()


def test_forms_the_query_already_holds_are_not_added() -> None:
    assert "deploy" not in expand.expansion("部署 deploy 失败").split()
    assert "部署" not in expand.expansion("部署 deploy 失败").split()


@pytest.mark.parametrize(
    "query",
    [
        "the latest news",
        "test_env_beats_yaml",
        "0042_add_order_status_index",
        "--create-db",
        "pkg.index",
        "",
        "   ",
        "lunch with Dana",
    ],
)
def test_words_inside_other_words_and_identifiers_are_not_terms(query: str) -> None:
    assert expand.expansion(query) == ""


def test_a_term_ending_a_sentence_is_a_term() -> None:
    assert expand.expansion("we shipped the release.") == "部署 上线 发布"


def test_a_fresh_process_compiles_a_pattern_only_for_the_phrases_its_query_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a pattern per table phrase, compiled in every CLI process, was 75 ms of each search
    searched: list[str] = []
    real_search = expand.re.search

    def search(pattern: str, text: str) -> object:
        searched.append(pattern)
        return real_search(pattern, text)

    monkeypatch.setattr(expand.re, "search", search)
    assert expand.expansion("why did the nightly job fail again") == ""
    assert searched == []
    assert expand.expansion("we shipped the release.") == "部署 上线 发布"
    assert len(searched) < 5


def test_a_malformed_table_line_is_named() -> None:
    table = expand.parse("# comment\n\n回滚\trollback|revert\n")
    assert table == ((("回滚",), ("rollback", "revert")),)
    with pytest.raises(ValueError, match="line 2: expected 中文<TAB>english"):
        expand.parse("回滚\trollback\n部署 deploy\n")


def test_an_english_question_finds_the_chinese_message_through_the_table(tmp_path: Path) -> None:
    """No shared word and no embedder: only the table connects `rollback` and `回滚`."""
    root = tmp_path / "logs"
    root.mkdir()
    write(
        root / "a.log",
        {"s": "s1", "q": 0, "t": "lunch options near the office include noodles"},
        {"s": "s1", "q": 1, "t": "我们决定把数据库迁移回滚到上一个版本"},
        {"s": "s1", "q": 2, "t": "configure the retry policy with exponential backoff"},
    )
    with Huiyi(embedder="fake") as hy:
        hy.index(readers=[LineReader(root)])
        # the floors weigh the query's own words: an expansion finds, it does not vouch
        assert hy.search("rollback the schema", workspace="/w/a", layers=LEX_FUZZY).declined
        found = hy.search("rollback the schema", workspace="/w/a", layers=LEX_FUZZY, abstain=False)
        assert [h.seq for h in found.hits][:1] == [1]
        alone = hy.search(
            "rollback the schema", workspace="/w/a", layers=("lexical",), abstain=False
        )
        assert 1 not in [h.seq for h in alone.hits]  # a single layer runs the query as written
