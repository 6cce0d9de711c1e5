"""Precision of recall: how often a search answers what history cannot answer, and how much
unrelated history comes with a right answer.

`huiyi eval` scores rankings; this asks every query the way an agent does (the hybrid search,
abstention on, `recall_history`'s five results) and counts, per half of the set (split by a
hash of the query id, as `calibrate` splits it: the tuning half and the held half) and per
category:

* negatives answered: a negative (nothing in its workspace answers it) that got any hit
  (`metrics.answers`: the same definition `huiyi eval` counts with);
  near misses, gibberish and unrelated questions are categories of our own negatives;
* hit@5 of the positives, with abstention on;
* unrelated hits per answered query: hits that are none of the query's relevant events,
  averaged over the queries that got any (every hit of an answered negative is unrelated).

    python -m huiyi.eval.precision golden tests/golden/huiyi-golden.json --index-home IDX
    python -m huiyi.eval.precision golden tests/golden/huiyi-near-misses.json --index-home IDX
    python -m huiyi.eval.precision locomo ../shared/data/locomo/locomo-dev.json --index-home IDX

`--padding R [R ...]` measures other padding ratios than the calibrated one (0: none).
"""

from __future__ import annotations

import argparse
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from huiyi.config import Settings
from huiyi.eval.datasets import load
from huiyi.eval.evalset import EvalSet, event_id
from huiyi.eval.harness import _embed, indexed
from huiyi.eval.metrics import NEGATIVE_DEPTH, answers

__all__ = ["Asked", "Tally", "ask", "held_out", "tally"]

#: results an agent's `recall_history` shows by default, and the depth at which `huiyi eval`
#: counts a negative answered (`metrics.answers`: one definition for both)
LIMIT = NEGATIVE_DEPTH


def held_out(query_id: str) -> bool:
    """The held half: never tuned on (the same split as `calibrate.Observation.held_out`)."""
    return zlib.crc32(query_id.encode()) % 2 == 1


@dataclass(frozen=True, slots=True)
class Asked:
    """One query asked as an agent asks it."""

    id: str
    category: str
    negative: bool
    hits: int
    #: the query got anything (`metrics.answers`, as `huiyi eval` counts it)
    answered: bool
    #: hits that are none of the query's relevant events
    unrelated: int
    #: a relevant event among the hits
    found: bool
    #: the padding ratio asked for (`None`: the calibrated one)
    padding: float | None = None


def ask(
    evalset: EvalSet,
    *,
    index_home: Path | None,
    embedder: str | None,
    paddings: Sequence[float | None] = (None,),
) -> list[Asked]:
    """Every query of `evalset` through the default search (see the module doc), once per
    padding ratio of `paddings` (`None`: the calibrated one; `Huiyi.search`)."""
    out: list[Asked] = []
    with indexed(
        evalset, Settings.from_env(), index_home=index_home, embedder=embedder, progress=print
    ) as hy:
        _embed(hy, {}, print)
        for query in evalset.queries:
            for padding in paddings:
                result = hy.search(
                    query.query,
                    workspace=query.workspace,
                    all_workspaces=query.workspace is None,
                    limit=LIMIT,
                    padding=padding,
                )
                ids = [event_id(h.session_id, h.seq) for h in result.hits]
                relevant = set(query.relevant)
                out.append(
                    Asked(
                        id=query.id,
                        category=query.category or "uncategorised",
                        negative=query.negative,
                        hits=len(ids),
                        answered=answers(ids),
                        unrelated=sum(1 for i in ids if i not in relevant),
                        found=any(i in relevant for i in ids),
                        padding=padding,
                    )
                )
    return out


@dataclass(frozen=True, slots=True)
class Tally:
    """What one group of queries got."""

    group: str
    negatives: int
    answered: int
    positives: int
    found: int
    #: queries that got any hit, and the unrelated hits among them
    with_hits: int
    unrelated: int

    def line(self) -> str:
        parts = [f"{self.group}:"]
        if self.negatives:
            parts.append(
                f"negatives answered {self.answered}/{self.negatives} "
                f"({self.answered / self.negatives:.0%})"
            )
        if self.positives:
            parts.append(f"hit@5 {self.found / self.positives:.3f} ({self.positives} positives)")
        per = self.unrelated / self.with_hits if self.with_hits else 0.0
        parts.append(f"unrelated hits per answered query {per:.2f} ({self.with_hits} answered)")
        return " ".join(parts[:1]) + " " + ", ".join(parts[1:])


def tally(group: str, rows: Sequence[Asked]) -> Tally:
    answered = [r for r in rows if r.answered]
    return Tally(
        group=group,
        negatives=sum(r.negative for r in rows),
        answered=sum(r.negative for r in answered),
        positives=sum(not r.negative for r in rows),
        found=sum(r.found for r in rows if not r.negative),
        with_hits=len(answered),
        unrelated=sum(r.unrelated for r in answered),
    )


def report(name: str, rows: Sequence[Asked]) -> list[str]:
    """Per half, the whole half and each category (positives together)."""
    lines: list[str] = []
    for half, held in (("tuning half", False), ("held half", True)):
        part = [r for r in rows if held_out(r.id) == held]
        lines.append(tally(f"{name} {half}", part).line())
        negatives = sorted({r.category for r in part if r.negative})
        for category in negatives:
            lines.append("  " + tally(category, [r for r in part if r.category == category]).line())
        positives = [r for r in part if not r.negative]
        if positives and negatives:
            lines.append("  " + tally("positives", positives).line())
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m huiyi.eval.precision")
    parser.add_argument("kind")
    parser.add_argument("path", type=Path)
    parser.add_argument("--index-home", type=Path)
    parser.add_argument("--embedder")
    parser.add_argument(
        "--padding", type=float, nargs="*", help="padding ratios to measure (0: none)"
    )
    args = parser.parse_args(argv)
    evalset = load(args.kind, args.path)
    paddings: list[float | None] = list(args.padding) if args.padding else [None]
    rows = ask(evalset, index_home=args.index_home, embedder=args.embedder, paddings=paddings)
    for padding in paddings:
        if len(paddings) > 1:
            print(f"padding {padding}:")
        print("\n".join(report(evalset.name, [r for r in rows if r.padding == padding])))


if __name__ == "__main__":
    main()
