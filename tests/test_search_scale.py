"""Search stays right and bounded when a query's words are in a large part of the history.

FTS5 computes BM25 for every match before it keeps the best, so the lexical layer scores only
the newest `lexical.WINDOW` matches plus every passage holding a rare word of the query. These
tests shrink the window so that a small history plays the part of a large one.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import pytest

from huiyi import Huiyi
from huiyi.search import abstention, fuzzy, lexical
from huiyi.store import queries
from huiyi.text.tokenize import parse_query, tokens
from tests.builders.lines import LineReader, write

COMMON = "deploy config port cache retry build test release".split()
RARE = "zymurgy quokka fjord".split()


def _index(root: Path, texts: list[str], cwd: str = "/w/a") -> Huiyi:
    root.mkdir(exist_ok=True)
    write(
        root / f"{cwd.strip('/').replace('/', '-')}.log",
        *(
            {"s": f"{cwd}-s{n // 100}", "q": n % 100, "t": t, "cwd": cwd}
            for n, t in enumerate(texts)
        ),
    )
    hy = Huiyi(embedder="none")
    hy.index(readers=[LineReader(root)])
    return hy


@pytest.fixture
def window(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(lexical, "WINDOW", 20)
    return 20


def test_an_old_passage_with_a_rare_word_is_found_behind_newer_common_matches(
    tmp_path: Path, window: int
) -> None:
    texts = [
        "the zymurgy notes mention deploy once",
        *(f"deploy config note {n}" for n in range(300)),
    ]
    with _index(tmp_path / "logs", texts) as hy:
        hits = hy.search("zymurgy deploy", workspace="/w/a", layers=("lexical",)).hits
    assert (hits[0].session_id, hits[0].seq) == ("/w/a-s0", 0)


def test_reading_past_the_first_page_brings_every_other_match_once(
    tmp_path: Path, window: int
) -> None:
    texts = [f"{COMMON[n % 8]} note {n}" for n in range(300)]
    with _index(tmp_path / "logs", texts) as hy:
        ranked = [r for r, _ in lexical.ranked(hy.store, parse_query("deploy cache"), "/w/a")]
        matches = hy.conn.execute(
            "SELECT id FROM events WHERE text LIKE 'deploy %' OR text LIKE 'cache %' ORDER BY id"
        ).fetchall()
    assert len(ranked) == len(set(ranked)) == len(matches) == 76
    assert set(ranked[:window]) == {r for (r,) in matches[-window:]}  # the window comes first


def _first_page(hy: Huiyi, text: str) -> list[tuple[int, float]]:
    query = parse_query(text)
    match = lexical.match_expression(query, "/w/a")
    assert match is not None
    return lexical._first_page(hy.store, query, "/w/a", match, 10_000)[0]


def test_the_bounded_candidates_are_ranked_exactly_as_plain_bm25_ranks_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """The candidates are the newest `WINDOW` matches and every holder of a word found in
    fewer passages than that; each gets the very BM25 score the unbounded query gives it."""
    rng = random.Random(7)
    texts = [
        " ".join(rng.choice(COMMON) for _ in range(rng.randint(2, 9)))
        + (f" {rng.choice(RARE)}" * rng.randint(1, 2) if rng.random() < 0.04 else "")
        for _ in range(400)
    ]
    with _index(tmp_path / "logs", texts) as hy:
        held = {
            rowid: set(tokens(text))
            for rowid, text in hy.conn.execute("SELECT id, text FROM events ORDER BY id")
        }
        for _ in range(40):
            words = rng.sample([*COMMON, *RARE], rng.randint(1, 4))
            matches = sorted((r for r, toks in held.items() if toks & set(words)), reverse=True)
            rare = {w for w in words if sum(w in toks for toks in held.values()) < window}
            expected_set = set(matches[:window]) | {r for r in matches if held[r] & rare}
            bounded = _first_page(hy, " ".join(words))
            monkeypatch.setattr(lexical, "WINDOW", 10**6)
            plain = _first_page(hy, " ".join(words))
            monkeypatch.setattr(lexical, "WINDOW", window)
            assert len(plain) == len(matches)
            expected = [(r, s) for r, s in plain if r in expected_set]
            assert [r for r, _ in bounded] == [r for r, _ in expected], words
            assert [s for _, s in bounded] == pytest.approx([s for _, s in expected]), words


def _scored_rows(hy: Huiyi, monkeypatch: pytest.MonkeyPatch, text: str) -> int:
    """How many rows the lexical layer had FTS5 compute BM25 for."""
    counted = 0
    real = queries.fts_scores

    def counting(*args: object, **kwargs: object) -> dict[int, float]:
        nonlocal counted
        found = real(*args, **kwargs)  # type: ignore[arg-type]
        counted += len(found)
        return found

    monkeypatch.setattr(queries, "fts_scores", counting)
    hy.search(text, workspace="/w/a", layers=("lexical",))
    monkeypatch.setattr(queries, "fts_scores", real)
    return counted


def test_the_rows_scored_do_not_grow_with_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    def history(n: int) -> Iterator[str]:
        for i in range(n):
            yield "the quokka ran once" if i == 3 else f"{COMMON[i % 8]} {COMMON[(i + 3) % 8]}"

    counts = []
    for size in (200, 1_600):
        with _index(tmp_path / f"logs{size}", list(history(size))) as hy:
            counts.append(_scored_rows(hy, monkeypatch, "deploy retry quokka"))
    # the window of the newest matches, and the one old passage with the rare word (scored
    # twice: with the whole query and the rare word doubled, then with the rare word alone)
    assert counts == [window + 2, window + 2]


def test_a_workspace_holding_most_of_the_index_sees_only_its_own_passages(
    tmp_path: Path,
) -> None:
    """Past a share of the index, the layers look words up without the workspace's scope
    token and drop other workspaces' passages afterwards: a newer workspace with more and
    better matches than the fuzzy layer keeps candidates must not crowd this one out."""
    root = tmp_path / "logs"
    root.mkdir()
    mine = ["the retry policy uses exponential backoff", *(f"cache note {n}" for n in range(600))]
    theirs = ["retry policy backoff"] * 250
    write(
        root / "a.log", *({"s": "mine", "q": n, "t": t, "cwd": "/w/a"} for n, t in enumerate(mine))
    )
    write(
        root / "b.log",
        *({"s": "theirs", "q": n, "t": t, "cwd": "/w/b"} for n, t in enumerate(theirs)),
    )
    with Huiyi(embedder="none") as hy:
        hy.index(readers=[LineReader(root)])
        assert queries.workspace_share(hy.conn, "/w/a") > 0.7
        for query, layers in (
            ("retry policy backoff", ("lexical",)),
            ("retyr polcy backof", ("fuzzy",)),
            ("retry policy backoff", None),
        ):
            hits = hy.search(query, workspace="/w/a", layers=layers).hits
            assert hits and {h.session_id for h in hits} == {"mine"}, (query, layers)
            assert hits[0].seq == 0


def test_a_typo_in_the_largest_workspace_is_found_when_a_newer_one_fills_the_lookups(
    tmp_path: Path,
) -> None:
    """Each trigram lookup reads its newest `fuzzy.POSTINGS` rows; when a smaller, newer
    workspace uses the same word in more than that many passages, the larger workspace's own
    passages must still be found (they are looked up again with its scope token)."""
    root = tmp_path / "logs"
    root.mkdir()
    mine = [f"websocket reconnect handler {n}" for n in range(1_200)]
    theirs = ["reconnect reconnect"] * (fuzzy.POSTINGS * 2)
    write(
        root / "a.log",
        *(
            {"s": f"mine{n // 100}", "q": n % 100, "t": t, "cwd": "/w/a"}
            for n, t in enumerate(mine)
        ),
    )
    write(
        root / "b.log",
        *(
            {"s": f"theirs{n // 100}", "q": n % 100, "t": t, "cwd": "/w/b"}
            for n, t in enumerate(theirs)
        ),
    )
    with Huiyi(embedder="none") as hy:
        hy.index(readers=[LineReader(root)])
        assert queries.workspace_share(hy.conn, "/w/a") >= fuzzy.UNSCOPED_SHARE
        hits = hy.search("reconect", workspace="/w/a", layers=("fuzzy",)).hits
    assert hits and all(h.session_id.startswith("mine") for h in hits)
    assert "reconnect handler" in hits[0].snippet


def test_the_coverage_rerank_counts_the_words_each_passage_holds(
    tmp_path: Path, window: int
) -> None:
    """The re-rank learns from the index which query words a passage holds (from the rows the
    first page read, else by a lookup for passages older than those); it must count exactly
    the words the passage's text holds, on bounded and on phrase queries alike."""
    rng = random.Random(11)
    texts = [
        " ".join(rng.choice(COMMON) for _ in range(rng.randint(2, 7)))
        + (f" {rng.choice(RARE)}" if rng.random() < 0.05 else "")
        for _ in range(400)
    ]
    with _index(tmp_path / "logs", texts) as hy:
        held = {
            rowid: set(tokens(text))
            for rowid, text in hy.conn.execute("SELECT id, text FROM events ORDER BY id")
        }
        asked = ['"deploy config" port cache retry']
        asked += [" ".join(rng.sample(COMMON, 3) + rng.sample(RARE, 1)) for _ in range(15)]
        asked += [" ".join(rng.sample(COMMON, 4)) for _ in range(5)]
        for text in asked:
            query = parse_query(text)
            words = [t.parts[0] for t in query.terms]
            match = lexical.match_expression(query, "/w/a")
            assert match is not None
            first, _, known = lexical._first_page(hy.store, query, "/w/a", match, 200)
            head = [rowid for rowid, _ in first[: lexical.RERANKED]]
            parts = lexical._free(query)
            counted = lexical._held(hy.store, parts, head, known, match)
            assert counted == {r: sum(w in held[r] for w in words) for r in head}, text
            assert any(0 < counted[r] < len(words) for r in head), text  # it has work to do
            scores = dict(first)
            expected = sorted(head, key=lambda r: scores[r] * counted[r] / len(words))
            ranked = [rowid for rowid, _ in lexical.ranked(hy.store, query, "/w/a")]
            assert ranked[: len(head)] == expected, text


def test_a_query_of_rare_words_is_answered_from_its_candidates_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """When every word of a query is rare, its candidates are all its matches: a search that
    wants more hits than they give must not score the whole query again (FTS5 counts every
    row of the workspace's scope token for that BM25)."""
    texts = [f"{COMMON[n % 8]} note {n}" + (" quokka" if n % 50 == 7 else "") for n in range(400)]
    plain: list[object] = []
    real = queries.fts_match

    def counting(*args: object, **kwargs: object) -> list[tuple[int, float]]:
        plain.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    with _index(tmp_path / "logs", texts) as hy:
        monkeypatch.setattr(queries, "fts_match", counting)
        hits = hy.search("quokka", workspace="/w/a", layers=("lexical",), limit=20).hits
    assert sorted(h.seq for h in hits) == [7, 7, 7, 7, 57, 57, 57, 57]
    assert plain == []


def test_the_evidence_reads_no_word_again_and_weighs_it_as_if_it_read_it_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """The abstention floor's evidence needs the newest rows of the query's words, which the
    lexical layer has just read: a search reads each word's rows once, and the evidence is
    exactly what reading them on its own gives (the floors were calibrated on it)."""
    monkeypatch.setattr(abstention, "DF_CAP", 10)  # below the window: the rows read answer for it
    rng = random.Random(5)
    texts = [
        " ".join(rng.choice(COMMON) for _ in range(rng.randint(2, 6)))
        + (f" {rng.choice(RARE)}" if rng.random() < 0.05 else "")
        for _ in range(300)
    ]
    read: list[str] = []
    real = queries.fts_postings

    def counting(conn: object, matches: list[str], *, cap: int) -> list[tuple[int, int]]:
        read.extend(matches)
        return real(conn, matches, cap=cap)  # type: ignore[arg-type]

    with _index(tmp_path / "logs", texts) as hy:
        for text in ("deploy cache quokka", "port retry build zymurgy", "release 回滚 test"):
            read.clear()
            monkeypatch.setattr(queries, "fts_postings", counting)
            result = hy.search(text, workspace="/w/a", layers=("lexical",), abstain=False)
            monkeypatch.setattr(queries, "fts_postings", real)
            assert read and len(read) == len(set(read)), text
            query = parse_query(text)
            top = [r for r, _ in islice(lexical.ranked(hy.store, query, "/w/a"), 3)]
            alone = abstention.lexical_evidence(hy.store, query, "/w/a", top)
            assert result.evidence is not None
            assert (result.evidence.lexical, result.evidence.absent) == alone, text
            assert 0 < alone[0] <= 1, text


def test_rows_read_with_a_larger_cap_answer_a_smaller_one(tmp_path: Path) -> None:
    texts = [f"{COMMON[n % 4]} note {n}" for n in range(200)] + ["quokka once"]
    with _index(tmp_path / "logs", texts) as hy:
        rows = lexical.Rows()
        deploy, quokka = 'body:"deploy"', 'body:"quokka"'
        wide = rows.newest(hy.store, [deploy, quokka], 30)
        read: list[str] = []
        real = queries.fts_postings

        def counting(conn: object, matches: list[str], *, cap: int) -> list[tuple[int, int]]:
            read.extend(matches)
            return real(conn, matches, cap=cap)  # type: ignore[arg-type]

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(queries, "fts_postings", counting)
            narrow = rows.newest(hy.store, [quokka, deploy], 10)
            assert read == []  # both answered from memory: quokka has fewer rows than any cap
            assert rows.newest(hy.store, [quokka], 500) == [wide[1]]
            assert read == []
            rows.newest(hy.store, [deploy], 31)  # a larger cap than was read: read again
            assert read == [deploy]
        plain = [r for _, r in real(hy.conn, [deploy], cap=10)]
    assert len(wide[0]) == 30 and wide[0] == sorted(wide[0], reverse=True)
    assert narrow == [wide[1], wide[0][:10]]
    assert narrow[1] == sorted(plain, reverse=True)


def test_passages_spread_over_the_history_are_looked_up_where_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The words each of a few passages far apart holds (a semantic layer's candidates lie all
    over a large history) are counted exactly, from rows near those passages: the rows read do
    not grow with the history between them."""
    monkeypatch.setattr(abstention, "DF_CAP", 10)
    read: list[int] = []
    real = queries.fts_rows

    def counting(conn: object, asked: list[tuple[str, int, int]]) -> list[tuple[int, int]]:
        found = real(conn, asked)  # type: ignore[arg-type]
        read.append(len(found))
        return found

    counts = []
    for size in (400, 3_200):
        texts = [f"{COMMON[n % 8]} {COMMON[(n + 3) % 8]} note" for n in range(size)]
        with _index(tmp_path / f"logs{size}", texts) as hy:
            held = {
                rowid: set(tokens(text))
                for rowid, text in hy.conn.execute("SELECT id, text FROM events ORDER BY id")
            }
            spread = sorted(held)[: size - 50 : size // 8]  # eight passages, none of the newest
            query = parse_query("deploy retry cache")
            read.clear()
            monkeypatch.setattr(queries, "fts_rows", counting)
            shares, _ = abstention.passage_shares(hy.store, query, "/w/a", spread)
            monkeypatch.setattr(queries, "fts_rows", real)
            words = ("deploy", "retry", "cache")
            assert {r: shares[r] > 0 for r in spread} == {
                r: any(w in held[r] for w in words) for r in spread
            }
            assert any(0 < shares[r] < 1 for r in spread)
            counts.append(sum(read))
    # one range from the oldest passage to the newest read 8 times as many rows at 8 times the
    # history (every row of each word between them)
    assert 0 < counts[1] <= counts[0]
