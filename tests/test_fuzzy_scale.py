"""The fuzzy layer stays right when a typo shares trigrams with a large part of the history.

The trigram index keeps no counts, so FTS5 ranks every match alike and oldest first: at 100k
messages a one-word typo found its message in 2 of 10 cases. Here the message is the 25,000th
of 28,000 that share a trigram with the typo, and must still come first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from huiyi import Huiyi
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
