"""The in-process half of `bench_vs_claude_recall.py`, run by each tool's own interpreter.

    python inproc.py huiyi|claude-recall locate NEEDLES_JSON CWD
    python inproc.py huiyi|claude-recall latency QUERIES_JSON CWD [lexical]
    python inproc.py huiyi embed NEWEST CWD
    python inproc.py huiyi ranks NEEDLES_JSON CWD

`locate` prints, for each `[session_id, text]`, where that tool's index keeps the message
holding the text (huiyi: `[session, seq]`; claude-recall: `[session, turn_index]`), found by
reading the index, not by searching it. `latency` prints the p50/p95 in milliseconds of each
tool's own search function over the queries, warm (one pass first, then five timed passes).
It imports only the tool it is asked about: claude-recall runs in its own virtualenv, where
huiyi is not installed. Each tool uses its defaults (limit 5, the current directory's
workspace for huiyi, every project for claude-recall as its CLI does).

huiyi only: `embed` computes vectors for the newest NEWEST conversation messages, in the order
`huiyi index` embeds them in the background (newest sessions first), and prints how many, how
long it took, the share of the workspace's history embedded and whether the semantic layer
then joins a default search (the engine's note says when the coverage gate keeps it out).
`ranks` prints, for each `[query, session_id, text]`, where the message holding the text lands
in huiyi's default ranking and in the semantic layer's alone (1-based, within the first 1,000,
abstention off; null: not there).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable

Search = Callable[[str], object]
Locate = Callable[[str, str], list[list[object]]]


def _huiyi(cwd: str, layer: str | None) -> tuple[Search, Locate]:
    from huiyi import Huiyi

    hy = Huiyi()
    layers = (layer,) if layer else None

    def search(query: str) -> object:
        return hy.search(query, workspace=cwd, limit=5, layers=layers)

    def locate(session_id: str, text: str) -> list[list[object]]:
        events = hy.read(session_id, from_seq=0, limit=100_000)
        return [[session_id, e.seq] for e in events if text in e.text]

    return search, locate


def _claude_recall() -> tuple[Search, Locate]:
    from claude_recall import config, search, storage

    conn = storage.open_db(config.load_config().db_path)

    def run(query: str) -> object:
        try:
            return search.run_search(conn, query, limit=5)
        except search.SearchError:  # a query it cannot parse: its CLI prints an error
            return None

    def locate(session_id: str, text: str) -> list[list[object]]:
        rows = conn.execute(
            "SELECT turn_index FROM messages WHERE session_id = ? AND instr(content, ?) > 0",
            (session_id, text),
        )
        return [[session_id, row[0]] for row in rows]

    return run, locate


def _embed_newest(newest: int, cwd: str) -> dict[str, object]:
    from huiyi import Huiyi

    with Huiyi() as hy:
        start, done = time.perf_counter(), 0
        while done < newest:
            step = hy.embed(batch=64, max_seconds=0)  # one batch: stop near `newest`
            if not step:
                break
            done += step
        seconds = time.perf_counter() - start
        embedded, embeddable = hy.coverage(workspace=cwd)
        notes = hy.search("deploy", workspace=cwd, limit=5).notes
    return {
        "embedded": done,
        "seconds": round(seconds, 1),
        "share": round(embedded / max(embeddable, 1), 3),
        "semantic_joins": not any("semantic layer skipped" in n for n in notes),
    }


def _ranks(items: list[list[str]], cwd: str) -> list[dict[str, int | None]]:
    from huiyi import Huiyi

    out: list[dict[str, int | None]] = []
    with Huiyi() as hy:
        for query, session_id, text in items:
            where = {
                (session_id, e.seq)
                for e in hy.read(session_id, from_seq=0, limit=100_000)
                if text in e.text
            }
            ranks: dict[str, int | None] = {}
            for name, layers in (("default", None), ("semantic", ("semantic",))):
                hits = hy.search(
                    query, workspace=cwd, limit=1000, layers=layers, abstain=False
                ).hits
                ranks[name] = next(
                    (n for n, h in enumerate(hits, 1) if (h.session_id, h.seq) in where), None
                )
            out.append(ranks)
    return out


def main() -> None:
    tool, mode, payload, cwd = sys.argv[1:5]
    layer = sys.argv[5] if len(sys.argv) > 5 else None
    if mode == "embed":
        print(json.dumps(_embed_newest(int(payload), cwd)))
        return
    if mode == "ranks":
        print(json.dumps(_ranks(json.loads(payload), cwd)))
        return
    search, locate = _huiyi(cwd, layer) if tool == "huiyi" else _claude_recall()
    items = json.loads(payload)
    if mode == "locate":
        print(json.dumps([locate(sid, text) for sid, text in items]))
        return
    for query in items:
        search(query)
    times: list[float] = []
    for _ in range(5):
        for query in items:
            start = time.perf_counter()
            search(query)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[max(0, int(len(times) * 0.95) - 1)]
    print(json.dumps({"p50_ms": statistics.median(times), "p95_ms": p95}))


if __name__ == "__main__":
    main()
