"""The semantic layer at scale: an approximate index for large workspaces (kept in a file,
brought up to date as vectors are added, rebuilt by repair), and the gate that lets the layer
join over the newest embedded span of a history that is mostly unembedded."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from huiyi import Huiyi
from huiyi.search import ann
from huiyi.search.embedding.fake import FakeEmbedder
from huiyi.search.semantic import Semantic
from tests.builders.lines import LineReader, write

DAY = 86_400_000
#: a hybrid search without the lexical layer, whose BM25 comes back NULL on this corpus
#: (FTS5 `bm25()` over an OR of common words, a separate fault)
HYBRID = ("fuzzy", "semantic")
WORDS = (
    "rollback migration deploy retry backoff cache index shard queue worker lock timeout "
    "schema replica snapshot token parser lexer compiler kernel socket buffer stream batch "
    "vector cluster tenant quota budget ledger invoice report chart widget layout theme "
    "font colour border margin padding scroll router handler session cookie header payload"
).split()


def history(root: Path, sessions: int, per: int, seed: int = 7) -> list[str]:
    """`sessions` sessions of `per` messages, session n one day after session n-1, each
    mostly about one of 30 topics (as conversations are: their vectors cluster); returns
    every text written (session-major)."""
    rng = random.Random(seed)
    words = [a + b for a in WORDS for b in ("", "s", "er", "ing", "ed")]
    topics = [rng.sample(words, 12) for _ in range(30)]
    root.mkdir(exist_ok=True)
    texts: list[str] = []
    for n in range(sessions):
        records = []
        topic = topics[n % len(topics)]
        for q in range(per):
            picks = (
                rng.choice(topic) if rng.random() < 0.8 else rng.choice(words) for _ in "12345678"
            )
            text = " ".join(picks)
            texts.append(text)
            records.append({"s": f"s{n:03d}", "q": q, "t": text, "ms": DAY * (n + 1) + q})
        write(root / f"{n:03d}.log", *records)
    return texts


def test_the_semantic_layer_joins_over_the_newest_embedded_span(tmp_path: Path) -> None:
    """A history a fifth embedded, newest first: hybrid search uses the semantic layer over
    the newest sessions, says which, and never ranks by meaning outside them."""
    logs = tmp_path / "logs"
    texts = history(logs, sessions=50, per=10)
    with Huiyi(embedder=FakeEmbedder()) as hy:
        hy.index(readers=[LineReader(logs)])
        hy.embed(batch=100, max_seconds=0.0)  # one batch: the newest ten sessions
        # and the oldest session, far outside the span (as a history embedded before would be)
        from huiyi.store import vectors

        model = hy.semantic.model  # type: ignore[union-attr]
        oldest = [int(r[0]) for r in hy.conn.execute("SELECT id FROM events ORDER BY id LIMIT 10")]
        with hy.conn:
            vectors.save(hy.conn, model, oldest, FakeEmbedder().embed_passages(texts[:10]))
        embedded, embeddable = hy.coverage(workspace="/w/a")
        assert (embedded, embeddable) == (110, 500)
        alone = hy.search(texts[0], workspace="/w/a", layers=("semantic",))
        assert alone.hits[0].session_id == "s000"  # by meaning alone, the oldest text is found
        result = hy.search(texts[0], workspace="/w/a", layers=HYBRID, abstain=False)
        assert "semantic" in result.layers
        [note] = [n for n in result.notes if n.startswith("semantic layer over")]
        # the newest ten sessions are embedded: the largest newest run at least 70% embedded
        # holds four sessions more (100 of 140), the oldest of them begun on day 37
        assert "over the newest 140 messages, since 1970-02-07" in note
        assert "22% of this history is embedded" in note
        semantic = [h for h in result.hits if "semantic" in h.layers]
        assert semantic
        assert all(h.session_id >= "s036" for h in semantic)


def test_too_little_of_even_the_newest_span_keeps_the_layer_out(tmp_path: Path) -> None:
    """Vectors spread thinly (every session a tenth embedded) make no span: skipped."""
    logs = tmp_path / "logs"
    history(logs, sessions=20, per=10)
    with Huiyi(embedder=FakeEmbedder()) as hy:
        hy.index(readers=[LineReader(logs)])
        from huiyi.store import vectors

        model = hy.semantic.model  # type: ignore[union-attr]
        rows = hy.conn.execute("SELECT id FROM events WHERE seq = 0").fetchall()
        ids = [int(r[0]) for r in rows]
        matrix = FakeEmbedder().embed_passages(["x"] * len(ids))
        with hy.conn:
            vectors.save(hy.conn, model, ids, matrix)
        result = hy.search("retry backoff", workspace="/w/a", layers=HYBRID, abstain=False)
        assert "semantic" not in result.layers
        assert any("semantic layer skipped: 10%" in n for n in result.notes)


def recall_at_10(hy: Huiyi, queries: list[str]) -> float:
    semantic = hy.semantic
    assert semantic is not None
    exact = Semantic(semantic.embedder, None, exact_below=10**9)
    found = 0
    for query in queries:
        truth = {i for i, _ in exact.ranked(hy.store, query, "/w/a", depth=10)}
        got = {i for i, _ in semantic.ranked(hy.store, query, "/w/a", depth=10)}
        found += len(truth & got)
    return found / (10 * len(queries))


@pytest.fixture
def large(tmp_path: Path) -> tuple[Path, list[str]]:
    """A workspace of 3,000 messages whose approximate index is used from its first vector."""
    logs = tmp_path / "logs"
    return logs, history(logs, sessions=60, per=50)


def test_an_approximate_index_finds_what_exact_scoring_finds(
    large: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    logs, texts = large
    monkeypatch.setenv("HUIYI_EXACT_BELOW", "500")
    with Huiyi(embedder=FakeEmbedder()) as hy:
        hy.index(readers=[LineReader(logs)])
        hy.embed(batch=500)
        files = list(hy.settings.db_path.with_suffix(".ann").glob("*.ivfpq"))
        assert len(files) == 1  # written as the vectors were saved
        queries = [" ".join(t.split()[:5]) for t in texts[::150]]
        assert recall_at_10(hy, queries) >= 0.95
        # a search of every workspace merges the index's candidates with exact scoring
        everywhere = hy.search(queries[0], all_workspaces=True, layers=("semantic",))
        here = hy.search(queries[0], workspace="/w/a", layers=("semantic",))
        assert [h.seq for h in everywhere.hits] == [h.seq for h in here.hits]


def test_vectors_added_later_are_found_through_the_kept_file(
    large: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    logs, _ = large
    monkeypatch.setenv("HUIYI_EXACT_BELOW", "500")
    with Huiyi(embedder=FakeEmbedder()) as hy:
        hy.index(readers=[LineReader(logs)])
        hy.embed(batch=500)
    write(logs / "zzz.log", {"s": "new", "q": 0, "t": "quokka habitat survey", "ms": DAY * 99})
    with Huiyi(embedder=FakeEmbedder()) as hy:  # a new process: the index comes from its file
        hy.index(readers=[LineReader(logs)])
        hy.embed()
        result = hy.search("quokka habitat survey", workspace="/w/a", layers=("semantic",))
        assert result.hits[0].session_id == "new"


def test_a_damaged_index_file_is_reported_and_rebuilt_by_repair(
    large: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    logs, texts = large
    monkeypatch.setenv("HUIYI_EXACT_BELOW", "500")
    with Huiyi(embedder=FakeEmbedder()) as hy:
        hy.index(readers=[LineReader(logs)])
        hy.embed(batch=500)
        [path] = hy.settings.db_path.with_suffix(".ann").glob("*.ivfpq")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    query = " ".join(texts[0].split()[:5])
    with Huiyi(embedder=FakeEmbedder()) as hy:
        report = hy.doctor()
        assert report["healthy"] is False
        assert "is damaged" in report["problem"] and "doctor --repair" in report["problem"]
        result = hy.search(query, workspace="/w/a", layers=HYBRID, abstain=False)
        assert result.hits  # the other layers still answer
        assert "semantic" not in result.layers
        assert any("doctor --repair" in n for n in result.notes)
        done = hy.repair()
        assert any("approximate semantic index of 1 workspace" in n for n in done.notes)
        assert hy.doctor()["problem"] is None
        result = hy.search(query, workspace="/w/a", layers=("semantic",))
        assert result.hits[0].session_id == "s000"
    assert ann.check(path) is None


def test_a_foreign_or_headless_file_is_refused_not_read(tmp_path: Path) -> None:
    path = tmp_path / "x.ivfpq"
    path.write_bytes(b"\x00" * 64)
    with pytest.raises(ann.AnnError, match="no header"):
        ann.AnnIndex.load(path, "m", "/w/a", 64)
    assert ann.check(path) is not None


def test_a_missing_index_is_built_in_the_background_while_searches_answer(
    large: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a long-lived process a search of a large workspace without its approximate index
    does not build it: the other layers answer, the search says the index is being built, and
    once it is (and written beside the index) the semantic layer joins."""
    logs, texts = large
    monkeypatch.setenv("HUIYI_EXACT_BELOW", "500")
    with Huiyi(embedder=FakeEmbedder()) as hy:
        hy.index(readers=[LineReader(logs)])
        hy.embed(batch=500)
        [path] = hy.settings.db_path.with_suffix(".ann").glob("*.ivfpq")
    path.unlink()
    query = " ".join(texts[0].split()[:5])
    with Huiyi(embedder=FakeEmbedder()) as hy:
        hy.build_in_background()
        semantic = hy.semantic
        assert semantic is not None
        first = hy.search(query, workspace="/w/a", layers=HYBRID, abstain=False)
        assert first.hits  # the other layers answer meanwhile
        assert "semantic" not in first.layers
        [note] = [n for n in first.notes if "approximate index" in n]
        assert "of 3,000 vectors is being built in the background" in note
        assert semantic.settle(timeout=120)
        assert ann.check(path) is None  # written whole beside the index
        then = hy.search(query, workspace="/w/a", layers=HYBRID, abstain=False)
        assert "semantic" in then.layers
        assert not any("approximate index" in n for n in then.notes)
        alone = hy.search(query, workspace="/w/a", layers=("semantic",))
        assert alone.hits[0].session_id == "s000"


def test_an_outgrown_index_is_searched_while_its_successor_is_built(
    large: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index trained on a sixth of what the workspace now holds is still searched (with
    the vectors saved since added to it) while a new one is built beside the searches."""
    logs, texts = large
    monkeypatch.setenv("HUIYI_EXACT_BELOW", "500")
    monkeypatch.setattr(ann, "REBUILD_GROWTH", 2)
    with Huiyi(embedder=FakeEmbedder()) as hy:
        hy.index(readers=[LineReader(logs)])
        hy.embed(batch=500, max_seconds=0.0)  # one batch: the index is trained on 500
        [path] = hy.settings.db_path.with_suffix(".ann").glob("*.ivfpq")
        from huiyi.store import vectors

        rest = hy.conn.execute(
            "SELECT e.id, event_text(e.text) FROM events e WHERE NOT EXISTS "
            "(SELECT 1 FROM vectors v WHERE v.event_id = e.id)"
        ).fetchall()
        model = hy.semantic.model  # type: ignore[union-attr]
        matrix = FakeEmbedder().embed_passages([text for _, text in rest])
        with hy.conn:  # saved as another embedder would, without bringing the index up to date
            vectors.save(hy.conn, model, [int(i) for i, _ in rest], matrix)
    query = " ".join(texts[0].split()[:5])
    with Huiyi(embedder=FakeEmbedder()) as hy:
        hy.build_in_background()
        semantic = hy.semantic
        assert semantic is not None
        first = hy.search(query, workspace="/w/a", layers=HYBRID, abstain=False)
        assert "semantic" in first.layers
        assert any("rebuilt in the background for 3,000" in n for n in first.notes)
        alone = hy.search(query, workspace="/w/a", layers=("semantic",))
        assert alone.hits[0].session_id == "s000"  # saved after the old index was written
        assert semantic.settle(timeout=120)
        assert ann.AnnIndex.load(path, model, "/w/a", FakeEmbedder().dim).trained == 3000
        then = hy.search(query, workspace="/w/a", layers=HYBRID, abstain=False)
        assert "semantic" in then.layers
        assert not any("approximate index" in n for n in then.notes)
