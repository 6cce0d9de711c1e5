"""The side-by-side benchmark's history (`benchmarks/claude_history.py`) is only worth its
numbers if huiyi's Claude Code reader takes it as a real transcript and every needle sits,
once, where the benchmark looks for it. Exercised at a small size; claude-recall itself is
not installed here (the benchmark does that)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from huiyi import Huiyi
from huiyi.cli.root import main

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from claude_history import History, Needle, check_needles, write_history

#: kinds whose query shares its key word with the needle: huiyi's lexical layer must find them
LEXICAL_KINDS = ("english_word", "code_identifier", "chinese_word", "mixed", "secret")


@pytest.fixture
def history(isolated_home: Path) -> History:
    project = isolated_home / "code" / "shop-api"
    project.mkdir(parents=True)
    return write_history(isolated_home / ".claude", str(project), 2000)


@pytest.fixture
def hy(history: History) -> Iterator[Huiyi]:
    with Huiyi() as hy:
        hy.index()
        yield hy


def _place(hy: Huiyi, needle: Needle) -> list[tuple[str, int]]:
    events = hy.read(needle.session_id, from_seq=0, limit=100_000)
    return [(needle.session_id, e.seq) for e in events if needle.text in e.text]


def test_history_is_read_as_claude_code_transcripts_with_nothing_skipped(
    history: History,
) -> None:
    with Huiyi() as hy:
        report = hy.index()
    claude = report.sources["claude"]
    assert claude.files == len(history.files) == history.sessions
    assert len(claude.sessions) == history.sessions
    assert claude.skipped == {}
    records = [json.loads(line) for f in history.files for line in f.read_text().splitlines()]
    conversation = [r for r in records if r["type"] in ("user", "assistant")]
    assert len(conversation) == history.messages >= 2000
    assert {r["cwd"] for r in conversation} == {history.cwd}


def test_every_kind_has_three_needles_each_in_a_session_of_its_own(history: History) -> None:
    assert history.kinds() == [
        "english_word",
        "english_phrase",
        "code_identifier",
        "inflection",
        "chinese_word",
        "mixed",
        "typo",
        "paraphrase",
        "secret",
    ]
    assert all(sum(n.kind == k for n in history.needles) == 3 for k in history.kinds())
    assert len({n.session_id for n in history.needles}) == len(history.needles)


def test_every_needle_is_indexed_once_as_a_conversation_message(
    hy: Huiyi, history: History
) -> None:
    for needle in history.needles:
        place = _place(hy, needle)
        assert len(place) == 1, needle.query
        (event,) = hy.read(needle.session_id, around=place[0][1], before=0, after=0)
        assert str(event.kind) == needle.role, needle.query


def test_key_words_of_needles_occur_nowhere_else_in_the_history(
    hy: Huiyi, history: History
) -> None:
    """A hit on the needle's message is a hit on the needle: no filler holds its key word."""
    for needle in history.needles:
        if needle.kind not in ("english_word", "code_identifier", "chinese_word", "secret"):
            continue
        hits = hy.search(needle.query, workspace=history.cwd, limit=20, layers=("lexical",)).hits
        assert [(h.session_id, h.seq) for h in hits] == _place(hy, needle), needle.query


def test_needles_with_their_key_word_are_found_within_five_hits(
    hy: Huiyi, history: History
) -> None:
    for needle in history.needles:
        if needle.kind not in LEXICAL_KINDS:
            continue
        hits = hy.search(needle.query, workspace=history.cwd, limit=5).hits
        assert set(_place(hy, needle)) & {(h.session_id, h.seq) for h in hits}, needle.query


def test_a_planted_key_is_found_by_its_name_but_never_shown(
    hy: Huiyi, history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(history.cwd)
    secrets = [n for n in history.needles if n.kind == "secret"]
    for needle in secrets:
        assert needle.secret and needle.secret in needle.text
        done = CliRunner().invoke(main, ["search", needle.query, "--limit", "5", "--json"])
        assert done.exit_code == 0, done.output
        hits = json.loads(done.output)
        assert (hits[0]["session_id"], hits[0]["seq"]) in _place(hy, needle)
        assert needle.secret not in done.output


def test_paraphrase_sharing_a_word_or_needle_in_the_filler_is_refused() -> None:
    with pytest.raises(ValueError, match="shares"):
        check_needles([Needle("paraphrase", "undo the migration", "we rolled back a migration")])
    with pytest.raises(ValueError, match="occurs in filler"):
        check_needles([Needle("english_word", "settings", "the settings page is slow")])
    with pytest.raises(ValueError, match="occurs in filler"):
        check_needles([Needle("chinese_word", "数据库", "数据库又挂了")])


def _conversation_texts(history: History) -> list[tuple[str, str]]:
    """(role, text) of every typed prompt and every text block of a reply."""
    out: list[tuple[str, str]] = []
    for f in history.files:
        for line in f.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record["type"] not in ("user", "assistant"):
                continue
            content = record["message"]["content"]
            if isinstance(content, str):
                out.append(("user", content))
            elif content[0]["type"] == "text":
                out.append(("assistant", content[0]["text"]))
    return out


def test_filler_is_chat_of_varied_shape_and_length(history: History) -> None:
    """Not a bag of topic words: mostly distinct lines, both languages, short prompts and
    replies with some long summaries among them, as in a real agent history."""
    said = _conversation_texts(history)
    replies = sorted(len(text) for role, text in said if role == "assistant")
    prompts = [text for role, text in said if role == "user"]
    assert len({text for _, text in said}) > len(said) / 2
    assert replies[len(replies) // 2] < 200
    assert sum(n > 800 for n in replies) > len(replies) / 100
    assert any(re.search(r"[\u4e00-\u9fff]{4}", p) for p in prompts)
    assert any(re.fullmatch(r"[ -~]+", p) and len(p.split()) > 6 for p in prompts)
    assert any("```" in text for _, text in said)


def test_one_seed_writes_the_same_conversation(tmp_path: Path, history: History) -> None:
    again = write_history(tmp_path / ".claude", history.cwd, 2000)
    assert not set(again.files) & set(history.files)  # written anew, elsewhere
    assert _conversation_texts(again) == _conversation_texts(history)
    assert [n.session_id for n in again.needles] == [n.session_id for n in history.needles]


def test_too_small_a_history_for_the_needles_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="too few"):
        write_history(tmp_path, "/home/dev/shop-api", 200)
