"""Embed each message with the turn it answers, on a throwaway copy of the vectors, and score.

Issue 11 asks whether "how was X handled" finds the answer better when a reply is embedded
together with the message it answers (question + answer). That changes what is embedded, so it
is measured here first, without touching the index: the index's embedded messages are embedded
again in memory with the previous turn of the other role in front (`--pair assistant`: replies
only; `--pair all`: every message that follows the other role's), then every query of the set
is asked through the real hybrid search with those vectors in place of the stored ones
(`--keep-own`: a message scores the better of its own vector and the paired one). It prints
the `huiyi eval` table for the semantic and hybrid layers; docs/eval.md has the numbers.

    python benchmarks/replay_qa_passages.py locomo ../shared/data/locomo/locomo-dev.json \\
        --index-home IDX --pair all   # an index `huiyi eval --index-home IDX` built and embedded
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from huiyi.api import Huiyi
from huiyi.config import Settings
from huiyi.eval.datasets import load
from huiyi.eval.harness import LayerSearch
from huiyi.eval.runner import Report, run
from huiyi.model import Event
from huiyi.search import semantic
from huiyi.store import queries

#: the answered turn's first characters put in front (the passage is embedded from its start)
QUESTION_CHARS = 200
CONVERSATION = ("user", "assistant")


def paired_texts(hy: Huiyi, rowids: list[int], pair: str) -> list[str]:
    """Each event's text, with the previous user/assistant message of its session in front
    when that message is of the other role (and, for `assistant`, the event is a reply)."""
    found = queries.events_by_rowid(hy.conn, rowids)
    turns: dict[int, list[Event]] = {}
    for sid, event in found.values():
        if sid not in turns:
            turns[sid] = list(queries.events(hy.conn, sid, event.session, kinds=CONVERSATION))
    texts = []
    for rowid in rowids:
        sid, event = found[rowid]
        before = [e for e in turns[sid] if e.seq < event.seq]
        prev = before[-1] if before else None
        if (
            prev is not None
            and prev.kind != event.kind
            and (pair == "all" or event.kind == "assistant")
        ):
            texts.append(f"{prev.text[:QUESTION_CHARS]}\n{event.text}")
        else:
            texts.append(event.text)
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind")
    parser.add_argument("path", type=Path)
    parser.add_argument("--index-home", type=Path, required=True)
    parser.add_argument("--pair", choices=("assistant", "all"), default="assistant")
    parser.add_argument("--keep-own", action="store_true")
    args = parser.parse_args()
    evalset = load(args.kind, args.path)
    settings = replace(Settings.from_env(), home=args.index_home / "huiyi")
    with Huiyi(settings=settings) as hy:
        sem = hy.semantic
        assert sem is not None
        everything = sem.scorer(hy.store, None)
        own_ids, own = everything.ids, everything.matrix
        rowids = [int(i) for i in own_ids]
        texts = paired_texts(hy, rowids, args.pair)
        paired = np.vstack(
            [sem.embedder.embed_passages(texts[i : i + 32]) for i in range(0, len(texts), 32)]
        ).astype(np.float32)
        where = {rowid: n for n, rowid in enumerate(rowids)}
        swap_in(where, own, paired, keep_own=args.keep_own)
        runs = [
            run(evalset, LayerSearch(hy, layer), layer=layer) for layer in ("semantic", "hybrid")
        ]
    print(Report(evalset.name, runs, evalset.skipped).format_table())


def swap_in(
    where: dict[int, int],
    own: npt.NDArray[np.float32],
    paired: npt.NDArray[np.float32],
    *,
    keep_own: bool,
) -> None:
    """Make every search of this process read the paired vectors (and, with `keep_own`, each
    message's own vector as well, a message ranked once by the better of the two)."""
    load: Callable[..., tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]
    load = semantic.Semantic._vectors

    def vectors(
        self: semantic.Semantic, conn: object, workspace: str | None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        ids, _ = load(self, conn, workspace)
        rows = [where[int(i)] for i in ids]
        if not keep_own:
            return ids, paired[rows]
        return np.concatenate([ids, ids]), np.vstack([own[rows], paired[rows]])

    ranked = semantic.Scorer.ranked

    def once(self: semantic.Scorer, text: str, *, depth: int) -> list[tuple[int, float]]:
        best: dict[int, float] = {}
        for rowid, cosine in ranked(self, text, depth=depth * 2):
            best.setdefault(rowid, cosine)  # best first: the first is the better vector's
        return list(best.items())[:depth]

    semantic.Semantic._vectors = vectors  # type: ignore[method-assign]
    semantic.Scorer.ranked = once  # type: ignore[method-assign]


if __name__ == "__main__":
    main()
