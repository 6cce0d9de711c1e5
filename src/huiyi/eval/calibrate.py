"""Calibrate the relevance floors (`huiyi.search.abstention`) on labelled sets, with a hold-out.

Two steps, so the slow one runs once:

1. `observe`: index a set (as `huiyi eval` does, `--index-home` reused), ask every query with
   abstention off, and keep, per query, each layer's evidence and where the first relevant
   event ranked, once fused with every layer and once without the semantic layer (what an
   embedder with no floor of its own gets). Saved as JSON lines.
2. `fit`: choose the floors from those observations. Queries are split in two halves by a
   hash of their id; the floors are fitted on one half (every set's hit@5 on positives may
   drop by at most `MAX_HIT_LOSS`, and among the floors that allow it, the fewest negatives
   answered, averaged over the sets) and scored on the other, so a report shows whether they
   hold on questions they were not fitted on.

    python -m huiyi.eval.calibrate observe golden tests/golden/huiyi-golden.json OUT.jsonl
    python -m huiyi.eval.calibrate fit OUT.jsonl [OUT2.jsonl ...] [--write]

`--write` stores the fitted floors in `search/floors.json` under the embedder's model id.
"""

from __future__ import annotations

import argparse
import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from itertools import product
from pathlib import Path

from huiyi.config import Settings
from huiyi.eval.datasets import load
from huiyi.eval.evalset import EvalSet, event_id
from huiyi.eval.harness import indexed
from huiyi.search.abstention import FLOORS_FILE, Evidence, Floors

__all__ = ["Observation", "fit", "observe"]

#: hit@5 on positives the floors may cost a set (the target abstention is held to)
MAX_HIT_LOSS = 0.02
K = 5


@dataclass(frozen=True, slots=True)
class Observation:
    """One query's evidence and ranks, with abstention off."""

    set: str
    id: str
    negative: bool
    lexical: float | None
    fuzzy: float | None
    semantic: float | None
    absent: float | None
    #: rank (1-based) of the first relevant event, 0 when none in the top 10: fused with
    #: every layer, and without the semantic layer
    rank: int
    rank_lexical: int
    model: str | None
    #: the evidence test (`Evidence.unseen`, `.gibberish`, `.off_topic`; absent from older
    #: observations)
    unseen: float | None = None
    gibberish: bool = False
    off_topic: bool = False

    @property
    def held_out(self) -> bool:
        return zlib.crc32(self.id.encode()) % 2 == 1


def _rank(ids: Sequence[str], relevant: Iterable[str]) -> int:
    wanted = set(relevant)
    return next((n for n, doc in enumerate(ids[:10], 1) if doc in wanted), 0)


def observe(
    evalset: EvalSet, *, index_home: Path, embedder: str | None = None
) -> list[Observation]:
    """Every query of `evalset` asked with abstention off (see the module doc)."""
    from huiyi.eval.harness import _embed

    out: list[Observation] = []
    with indexed(
        evalset, Settings.from_env(), index_home=index_home, embedder=embedder, progress=print
    ) as hy:
        info: dict[str, object] = {}
        _embed(hy, info, print)
        model = hy.semantic.model if hy.semantic is not None else None
        for query in evalset.queries:
            fused, plain = (
                hy.search(
                    query.query,
                    workspace=query.workspace,
                    all_workspaces=query.workspace is None,
                    limit=10,
                    layers=layers,
                    abstain=False,
                )
                for layers in (None, ("lexical", "fuzzy"))
            )
            ev = fused.evidence or Evidence()
            out.append(
                Observation(
                    set=evalset.name,
                    id=query.id,
                    negative=query.negative,
                    lexical=ev.lexical,
                    fuzzy=ev.fuzzy,
                    semantic=ev.semantic,
                    absent=ev.absent,
                    rank=_rank([event_id(h.session_id, h.seq) for h in fused.hits], query.relevant),
                    rank_lexical=_rank(
                        [event_id(h.session_id, h.seq) for h in plain.hits], query.relevant
                    ),
                    model=model if "semantic" in fused.layers else None,
                    unseen=ev.unseen,
                    gibberish=ev.gibberish,
                    off_topic=ev.off_topic,
                )
            )
    return out


@dataclass(frozen=True, slots=True)
class Score:
    """What floors do to one set: negatives answered, and hit@5 before and after."""

    set: str
    negatives: int
    answered: int
    positives: int
    hits_before: int
    hits_after: int

    @property
    def answered_share(self) -> float:
        return self.answered / self.negatives if self.negatives else 0.0

    @property
    def loss(self) -> float:
        return (self.hits_before - self.hits_after) / self.positives if self.positives else 0.0

    def line(self) -> str:
        p = max(self.positives, 1)
        return (
            f"{self.set}: negatives answered {self.answered}/{self.negatives} "
            f"({self.answered_share:.0%}), hit@5 {self.hits_before / p:.3f} -> "
            f"{self.hits_after / p:.3f} ({self.positives} positives)"
        )


def score(observations: Sequence[Observation], floors: Floors, *, semantic: bool) -> list[Score]:
    """Per set, what `floors` do (`semantic`: the fused ranking, else the lexical one)."""
    out = []
    for name in dict.fromkeys(o.set for o in observations):
        rows = [o for o in observations if o.set == name]
        negatives = answered = positives = before = after = 0
        for o in rows:
            ev = Evidence(o.lexical, o.fuzzy, o.semantic if semantic else None, o.absent, o.unseen)
            passes = floors.passes(ev)
            rank = o.rank if semantic else o.rank_lexical
            if o.negative:
                negatives += 1
                answered += passes
            else:
                positives += 1
                before += 0 < rank <= K
                after += 0 < rank <= K and passes
        out.append(Score(name, negatives, answered, positives, before, after))
    return out


def _grid(lo: float, hi: float, step: float) -> list[float]:
    n = round((hi - lo) / step)
    return [round(lo + i * step, 4) for i in range(n + 1)] + [NEVER]


#: a floor no evidence reaches (the layer never vouches alone; `null` in floors.json)
NEVER = 99.0
#: what `fit` returns when no floor keeps within the loss: every search answers
NO_FLOORS = Floors(lexical=0.0, fuzzy=0.0)


def fit(
    observations: Sequence[Observation], *, semantic: bool, max_loss: float = MAX_HIT_LOSS
) -> Floors:
    """The floors with the fewest negatives answered (mean share over the sets) whose hit@5
    loss stays within `max_loss` on every set (ties: the least loss, then the lowest floors,
    which decline the same negatives and fewer unseen positives). Every combination of a
    grid is tried, vectorised over the queries."""
    import numpy as np

    sets = sorted({o.set for o in observations})
    which = np.array([sets.index(o.set) for o in observations])
    negative = np.array([o.negative for o in observations])
    rank = np.array([o.rank if semantic else o.rank_lexical for o in observations])
    hit = ~negative & (rank > 0) & (rank <= K)
    lexical = np.array([o.lexical or 0.0 for o in observations])
    fuzzy = np.array([o.fuzzy or 0.0 for o in observations])
    cosine = np.array([o.semantic if o.semantic is not None else -1.0 for o in observations])
    absent = np.array([o.absent or 0.0 for o in observations])
    unseen = np.array([o.unseen or 0.0 for o in observations])
    blind = np.array([o.unseen is not None and o.unseen >= 1.0 - 1e-9 for o in observations])
    noise = blind & np.array([o.gibberish or o.off_topic for o in observations])
    negatives = np.array([max(1, int((negative & (which == i)).sum())) for i in range(len(sets))])
    positives = np.array([max(1, int((~negative & (which == i)).sum())) for i in range(len(sets))])
    hits = np.array([int((hit & (which == i)).sum()) for i in range(len(sets))])

    def outcome(passes: np.ndarray) -> tuple[float, float] | None:
        answered = np.bincount(which[negative & passes], minlength=len(sets)) / negatives
        kept = np.bincount(which[hit & passes], minlength=len(sets))
        loss = (hits - kept) / positives
        if (loss > max_loss + 1e-9).any():
            return None
        return float(answered.mean()), float(loss.sum())

    best: tuple[float, float, float] | None = None
    chosen = NO_FLOORS
    if semantic:
        # the floors that vouch alone on lexical evidence are coarse here: with a semantic
        # layer they have never been the ones that decide (lexical null, fuzzy 0.7 before)
        lexical_grid = [0.5, 0.7, 0.9, NEVER]
        fuzzy_grid = _grid(0.5, 1.1, 0.1)
        fused_grid = list(product(_grid(0.76, 0.96, 0.02), [0.0, 0.05, 0.1], [0.0, 0.05, 0.1]))
        # no "never" here: `null` in floors.json turns the evidence test off (a cosine of
        # 0.98 is one no near miss reaches)
        unseen_grid = list(product(_grid(0.8, 0.98, 0.02)[:-1], [0.0, 0.05, 0.1, 0.2]))
    else:
        lexical_grid, fuzzy_grid = _grid(0.1, 1.0, 0.05), _grid(0.4, 2.0, 0.05)
        fused_grid = [(NEVER, 0.0, 0.0)]
        unseen_grid = [(NEVER, 0.0)]
    for lex, fz in product(lexical_grid, fuzzy_grid):
        base = (lexical >= lex) | (fuzzy >= fz)
        for sem in _grid(0.8, 0.9, 0.02) if semantic else [NEVER]:
            alone = cosine >= sem
            for fused, lexical_scale, absent_scale in fused_grid:
                margin = cosine + lexical_scale * lexical - absent_scale * absent
                for strong, unseen_scale in unseen_grid:
                    seen = alone | (margin - unseen_scale * unseen >= fused)
                    passes = base | np.where(blind, (cosine >= strong) & ~noise, seen)
                    result = outcome(passes)
                    if result is None:
                        continue
                    key = (result[0], result[1], lex + fz + sem + fused + strong)
                    if best is None or key < best:
                        best = key
                        chosen = Floors(
                            lexical=lex,
                            fuzzy=fz,
                            semantic=sem if semantic else None,
                            fused=fused if semantic else None,
                            lexical_scale=lexical_scale,
                            absent_scale=absent_scale,
                            unseen=strong if semantic else None,
                            unseen_scale=unseen_scale,
                        )
    return chosen


#: the hit@5 losses tried in turn when no floor keeps within the one asked for
RELAXED = (0.02, 0.05, 0.1)


def relaxed(
    observations: Sequence[Observation], *, semantic: bool, max_loss: float = MAX_HIT_LOSS
) -> tuple[Floors, float]:
    """`fit` within `max_loss`, else within the next looser loss of `RELAXED` at which some
    floor declines anything (lexical evidence alone cannot keep every set within 0.02)."""
    floors = NO_FLOORS
    for loss in [max_loss, *(r for r in RELAXED if r > max_loss)]:
        floors = fit(observations, semantic=semantic, max_loss=loss)
        if floors != NO_FLOORS:
            return floors, loss
    return floors, loss


def _read(paths: Sequence[Path]) -> list[Observation]:
    rows: list[Observation] = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            rows.append(Observation(**json.loads(line)))
    return rows


def _floors_json(floors: Floors) -> dict[str, float | None]:
    """The floors as `floors.json` holds them: `null` for a floor nothing reaches (the
    padding ratio, the missing and asked details' rarities, the fuzzy floor under them and the
    blind share are not fitted here and keep their values)."""
    kept = ("padding", "detail", "blind", "known_detail", "detail_fuzzy", "together")
    return {k: None if v == NEVER else v for k, v in floors._asdict().items() if k not in kept}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m huiyi.eval.calibrate")
    sub = parser.add_subparsers(dest="step", required=True)
    obs = sub.add_parser("observe", help="ask a set's queries with abstention off")
    obs.add_argument("kind")
    obs.add_argument("path", type=Path)
    obs.add_argument("out", type=Path)
    obs.add_argument("--index-home", type=Path, required=True)
    obs.add_argument("--embedder")
    fitp = sub.add_parser("fit", help="fit floors on half the observations, score the rest")
    fitp.add_argument("observations", type=Path, nargs="+")
    fitp.add_argument("--check", type=Path, nargs="*", default=[], help="scored, not fitted on")
    fitp.add_argument("--max-loss", type=float, default=MAX_HIT_LOSS)
    fitp.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    if args.step == "observe":
        evalset = load(args.kind, args.path)
        rows = observe(evalset, index_home=args.index_home, embedder=args.embedder)
        args.out.write_text("".join(json.dumps(asdict(r)) + "\n" for r in rows), encoding="utf-8")
        return
    rows, checked = _read(args.observations), _read(args.check)
    models = {o.model for o in rows if o.model is not None}
    fitted: dict[str, dict[str, float | None]] = {}
    for semantic in (False, True):
        if semantic and len(models) != 1:
            print(f"no single embedder in the observations ({sorted(models)}): lexical only")
            continue
        train = [o for o in rows if not o.held_out]
        floors, loss = relaxed(train, semantic=semantic, max_loss=args.max_loss)
        model = next(iter(models)) if semantic else None
        print(
            f"{'semantic ' + str(model) if semantic else 'lexical only'} (loss <= {loss}): {floors}"
        )
        parts = [
            ("fitted on", train),
            ("held out", [o for o in rows if o.held_out]),
            ("checked on", checked),
        ]
        for label, part in parts:
            for s in score(part, floors, semantic=semantic):
                print(f"  {label} {s.line()}")
        fitted[f"models:{model}" if semantic else "lexical_only"] = {
            **_floors_json(floors),
            "max_hit_loss": loss,
        }
    if args.write:
        _write(fitted)


def _write(fitted: dict[str, dict[str, float | None]]) -> None:
    target = Path(__file__).parent.parent / "search" / FLOORS_FILE
    data = json.loads(target.read_text(encoding="utf-8"))
    for key, value in fitted.items():
        if key.startswith("models:"):
            models = data.setdefault("models", {})
            name = key.removeprefix("models:")
            models[name] = {**models.get(name, {}), **value}
        else:
            data[key] = {**data.get(key, {}), **value}
    target.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
