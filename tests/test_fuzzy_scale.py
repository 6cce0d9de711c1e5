"""The fuzzy layer stays right when a typo shares trigrams with a large part of the history.

The trigram index keeps no counts, so FTS5 ranks every match alike and oldest first: at 100k
messages a one-word typo found its message in 2 of 10 cases. Here the message is the 25,000th
of 28,000 that share a trigram with the typo, and must still come first.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from huiyi import Huiyi
from huiyi.search import fuzzy
from tests.builders.lines import LineReader, write

MATCHES = 28_000
NEEDLE_AT = 25_000  # 1-based, among the messages that match
NEEDLE = "we spent the afternoon subsetting the fonts for the docs site"
#: each shares common trigrams (`set`, `tin`, `ing`) with `subseting`, or its rarer ones
#: (`sub`, `ubs`, `bse`) but not both, as `subsetting` does
FILLER = (
    "settings were reset after testing",
    "the meeting about timing and strings",
    "sending the setup notes",
    "existing tooling keeps running",
)
DISTRACTOR = "subsequent runs were green"


@pytest.fixture
def crowded(tmp_path: Path) -> Path:
    root = tmp_path / "crowded"
    root.mkdir()
    texts = [FILLER[n % len(FILLER)] for n in range(MATCHES - 1)]
    for n in range(0, MATCHES - 1, 500):  # a few passages with the typo's rarer trigrams
        texts[n] = DISTRACTOR
    texts.insert(NEEDLE_AT - 1, NEEDLE)
    write(
        root / "a.log",
        *({"s": f"s{n // 1000}", "q": n % 1000, "t": t} for n, t in enumerate(texts)),
    )
    return root


def test_a_typo_finds_its_message_even_as_the_25000th_of_28000_matches(crowded: Path) -> None:
    with Huiyi(embedder="none") as hy:
        hy.index(readers=[LineReader(crowded)])
        first = [(h.session_id, h.seq) for h in hy.search("subseting", workspace="/w/a").hits]
        only = hy.search("subseting", workspace="/w/a", layers=("fuzzy",)).hits
    needle = (f"s{(NEEDLE_AT - 1) // 1000}", (NEEDLE_AT - 1) % 1000)
    assert first[0] == needle
    assert (only[0].session_id, only[0].seq) == needle
    # the distractors hold the rare trigrams but fewer of the query's: they come after it
    assert all("subsequent" in h.snippet for h in only[1:4])


#: every trigram of `subsetting` that the typo `subseting` holds is in these, many times over
BURYING = ("the subset of settings we tried", "a subset for the settings page")


@pytest.fixture
def buried(tmp_path: Path) -> Path:
    """The needle first, then 1,500 newer passages that hold every trigram the typo shares
    with its word (in two other words), in /w/a; /w/b spells the word too."""
    root = tmp_path / "buried"
    root.mkdir()
    rows = [{"s": "s0", "q": 0, "t": NEEDLE}]
    rows += [{"s": f"s{1 + n // 500}", "q": n % 500, "t": BURYING[n % 2]} for n in range(1500)]
    rows.append({"s": "b0", "q": 0, "cwd": "/w/b", "t": "subsetting elsewhere"})
    write(root / "a.log", *rows)
    return root


def test_a_typo_whose_trigrams_are_all_common_finds_its_word(buried: Path) -> None:
    """Trigram rarity cannot tell "subsetting" from "subset ... settings" (both hold 6 of the
    typo's 7 trigrams); the index's vocabulary knows the word within one edit of the typo."""
    with Huiyi(embedder="none") as hy:
        hy.index(readers=[LineReader(buried)])
        only = hy.search("subseting", workspace="/w/a", layers=("fuzzy",)).hits
        both = hy.search("subseting fonts", workspace="/w/a").hits
        elsewhere = hy.search("subseting", workspace="/w/b", layers=("fuzzy",)).hits
    assert (only[0].session_id, only[0].seq) == ("s0", 0)
    assert (both[0].session_id, both[0].seq) == ("s0", 0)
    # the other workspace's passage is found in its own workspace, never in /w/a's results
    assert [h.workspace for h in elsewhere][:1] == ["/w/b"]
    assert all(h.workspace == "/w/a" for h in only)


def test_only_words_the_history_does_not_hold_are_respelled(buried: Path) -> None:
    with Huiyi(embedder="none") as hy:
        hy.index(readers=[LineReader(buried)])
        assert fuzzy.respelled(hy.store, "subseting") == ["subsetting"]
        assert fuzzy.respelled(hy.store, "subset settings") == []  # both are words it holds
        assert fuzzy.respelled(hy.store, "subst") == ["subset"]  # one letter left out
        assert fuzzy.respelled(hy.store, "subs") == []  # too short to guess at
        assert fuzzy.respelled(hy.store, "xubsetting") == []  # its first letters differ


@pytest.mark.parametrize(
    ("a", "b", "n"),
    [
        ("subseting", "subsetting", 1),  # a letter left out
        ("kubeconfg", "kubeconfig", 1),
        ("recieve", "receive", 1),  # two neighbours swapped
        ("memoizaton", "memoization", 1),
        ("deploymnet", "deployment", 1),
        ("kitten", "sitting", 3),
        ("same", "same", 0),
        ("", "abc", 3),
    ],
)
def test_edits_counts_insertions_deletions_substitutions_and_swaps(a: str, b: str, n: int) -> None:
    assert fuzzy.edits(a, b) == n
    assert fuzzy.edits(b, a) == n


def test_a_hybrid_search_looks_the_word_a_typo_means_up_as_a_word(tmp_path: Path) -> None:
    """`kubeconfg` shares its first trigrams with every `kubectl` line, which the semantic
    layer also finds close: only the one message holding `kubeconfig` is what was meant, and
    it comes first because the hybrid search also asks the full-text index for that word."""
    root = tmp_path / "kube"
    root.mkdir()
    rows = [
        {"s": "s0", "q": 0, "t": "the kubeconfig on the runner still points at the old cluster"}
    ]
    lines = ("Running `kubectl get pods -n staging` now.", "Running `kubectl rollout status` now.")
    rows += [{"s": f"s{1 + n // 50}", "q": n % 50, "t": lines[n % 2]} for n in range(300)]
    write(root / "a.log", *rows)
    with Huiyi(embedder="fake") as hy:
        hy.index(readers=[LineReader(root)])
        hy.embed()
        hits = hy.search("kubeconfg", workspace="/w/a", limit=5).hits
        lexical = hy.search("kubeconfg", workspace="/w/a", layers=("lexical",)).hits
    assert (hits[0].session_id, hits[0].seq) == ("s0", 0)
    assert lexical == []  # the lexical layer alone still reads only what was typed


def test_a_typo_look_up_that_fails_leaves_the_search_standing(
    buried: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(conn: object, text: str, read: object = None) -> list[str]:
        raise sqlite3.OperationalError("database disk image is malformed")

    monkeypatch.setattr(fuzzy, "meant_words", broken)
    with Huiyi(embedder="none") as hy:
        hy.index(readers=[LineReader(buried)])
        result = hy.search("subsetting fonts", workspace="/w/a")
    assert (result.hits[0].session_id, result.hits[0].seq) == ("s0", 0)
    assert result.layers == ["lexical", "fuzzy"]
