"""huiyi side by side with claude-recall, tried as a user choosing between them would.

    python benchmarks/bench_vs_claude_recall.py                      # 4,000 messages, 3 runs
    python benchmarks/bench_vs_claude_recall.py --sizes 4000,100000  # the 100k run takes long
    python benchmarks/bench_vs_claude_recall.py --json

claude-recall (`CLAUDE_RECALL`, from PyPI) is installed into a scratch virtualenv under a
temporary directory (or the one `--claude-recall-venv` names, kept for the next run); huiyi is
this repository's `src/`. One Claude Code history is written under a temporary HOME
(`claude_history.py`: Chinese and English, needles of each kind), where both tools read it from
`~/.claude/projects`. Each tool runs with its defaults, the way its README says to use it: the
history's project directory is the working directory; huiyi with its default offline
embedder, claude-recall without Ollama (its semantic rerank is opt-in and needs a server).

Measured for both, each step alternating between the tools (the first tool swaps every run),
medians over `--runs`:
- first index and re-index of the unchanged history, as processes (`huiyi index --no-embed`,
  `claude-recall index`), with the peak memory of the whole process tree (`proctree.py`);
- huiyi only: embedding the history for semantic search (`huiyi index`), once, for histories
  up to `--embed-max` messages (a 100k history takes most of an hour at ~30 texts/s; without
  vectors huiyi searches lexical + fuzzy, and paraphrases count as what it finds that way).
  A larger history with `--embed-newest N` gets what a person's background embedding has done
  after a while instead: vectors for its newest N conversation messages (newest sessions
  first, as `huiyi index` embeds; issue 11: the newest 10,000 within 10 minutes), and the
  output says what share of the history that is and whether the semantic layer joins a
  default search at that share (it joins above a coverage gate, `search/fusion.py`);
- `search` as a process, the median over every needle's query (`--limit 5`, JSON output) of
  its wall and CPU time, huiyi's default (hybrid) and lexical-only. Once the history is
  embedded, huiyi's first default search starts its warm service (which loads the embedding
  model) and answers without the semantic layer; the later ones go through the service, as a
  person's would;
- in-process search latency p50/p95 (`inproc.py`), through each tool's own Python API;
- index size on disk, and found@5 per needle kind: the message holding the needle is among the
  CLI's first five hits (for a secret, and the key does not appear in the output); for each
  needle huiyi misses, where its message lands in huiyi's default ranking and in the semantic
  layer's alone (`inproc.py ranks`), to tell a ranking that misses from vectors that do.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import proctree
from claude_history import History, Needle, write_history
from report import print_numbers

CLAUDE_RECALL = "claude-recall==0.9.2"
HERE = Path(__file__).resolve().parent
REPO = HERE.parent
HUIYI = (sys.executable, "-m", "huiyi")
TOOLS = ("huiyi", "claude-recall")


class Bench:
    """One history, both tools' commands and homes, and the numbers gathered so far."""

    def __init__(self, root: Path, crbin: Path, history: History) -> None:
        self.home, self.crbin, self.history = root, crbin, history
        self.cwd = Path(history.cwd)
        self.env = {
            **os.environ,
            "HOME": str(root),
            "HUIYI_HOME": str(root / ".huiyi"),
            "DSH_HOME": str(root / ".dsh"),
            "CODEX_HOME": str(root / ".codex"),
            "PYTHONPATH": str(REPO / "src"),
        }
        for name in ("CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "HUIYI_WORKSPACE", "HUIYI_EMBEDDER"):
            self.env.pop(name, None)
        self.index_dirs = {
            "huiyi": root / ".huiyi",
            "claude-recall": root / ".config/claude-recall",
        }

    def cli(self, tool: str, *args: str) -> list[str]:
        if tool == "huiyi":
            return [*HUIYI, *args]
        return [str(self.crbin / "claude-recall"), *args]

    def python(self, tool: str) -> str:
        return sys.executable if tool == "huiyi" else str(self.crbin / "python")

    def reset(self, tool: str) -> None:
        for path in self.index_dirs[tool].glob("index.db*"):
            path.unlink()

    def index(self, tool: str) -> proctree.Measured:
        args = ("index", "--no-embed") if tool == "huiyi" else ("index",)
        done = proctree.run(self.cli(tool, *args), env=self.env, cwd=self.cwd)
        if done.returncode:
            raise SystemExit(f"{tool} index failed ({done.returncode}):\n{done.stderr[-2000:]}")
        return done

    def size_mb(self, tool: str) -> float:
        return sum(p.stat().st_size for p in self.index_dirs[tool].glob("index.db*")) / 1e6

    def search(self, tool: str, query: str, *, lexical: bool = False) -> tuple[float, float, str]:
        """Wall and CPU seconds (user + system, the process's own: what other work on the
        cores disturbs least) of one search as a process, and its output."""
        if tool == "huiyi":
            argv = self.cli(tool, "search", query, "--limit", "5", "--json")
            argv += ["--layer", "lexical"] if lexical else []
        else:
            argv = self.cli(tool, "search", query, "--limit", "5", "--format", "json")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(argv, env=self.env, cwd=self.cwd, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode:
            raise SystemExit(f"{tool} search {query!r} failed:\n{done.stderr[-2000:]}")
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        return seconds, cpu, done.stdout

    def inproc(self, tool: str, mode: str, payload: Any, *extra: str) -> Any:
        argv = [self.python(tool), str(HERE / "inproc.py"), tool, mode, json.dumps(payload)]
        done = subprocess.run(
            [*argv, str(self.cwd), *extra],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise SystemExit(f"{tool} {mode} failed:\n{done.stderr[-2000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def stop_services(huiyi_home: Path) -> None:
    """SIGTERM the warm service a search started in this home (the first search of an
    embedded history does, and the later ones go through it), and wait until it has gone."""
    for path in huiyi_home.glob("service-*.sock"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            try:
                conn.connect(str(path))
            except OSError:
                continue
            cred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid = struct.unpack("3i", cred)[0]
        os.kill(pid, signal.SIGTERM)
        while path.exists():  # the service removes its socket as it exits
            time.sleep(0.05)


def install_claude_recall(venv: Path) -> Path:
    """`CLAUDE_RECALL` in its own virtualenv (created once); returns its bin directory."""
    bin_dir = venv / "bin"
    if not (bin_dir / "claude-recall").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(bin_dir / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, CLAUDE_RECALL], check=True)
    return bin_dir


def alternate(run: int) -> Sequence[str]:
    return TOOLS if run % 2 == 0 else TOOLS[::-1]


def median(values: Sequence[float], digits: int = 3) -> float:
    return round(statistics.median(values), digits)


def found_at_5(tool: str, output: str, where: list[list[Any]]) -> bool:
    """Whether one of the first five hits of a CLI answer is the needle's message."""
    data = json.loads(output) if output.strip().startswith(("{", "[")) else {"results": []}
    if tool == "huiyi":
        hits = [[h["session_id"], h["seq"]] for h in data[:5]]
    else:
        hits = [[h["session_id"], h["turn_index"]] for h in data["results"][:5]]
    return any(hit in where for hit in hits)


def measure(
    bench: Bench, runs: int, embed_max: int, embed_newest: int, log: Callable[[str], None]
) -> dict[str, Any]:
    """Every number of one history size, for both tools."""
    first: dict[str, list[proctree.Measured]] = {t: [] for t in TOOLS}
    again: dict[str, list[proctree.Measured]] = {t: [] for t in TOOLS}
    for run in range(runs):
        for tool in alternate(run):
            bench.reset(tool)
            first[tool].append(bench.index(tool))
        for tool in alternate(run):
            again[tool].append(bench.index(tool))
        log(f"index run {run + 1}/{runs} done")
    out: dict[str, Any] = {}
    for tool in TOOLS:
        out[tool] = {
            "first_index_s": median([m.seconds for m in first[tool]]),
            "reindex_s": median([m.seconds for m in again[tool]]),
            "index_peak_mb": median([m.peak_mb for m in first[tool]], 1),
            "index_mb": round(bench.size_mb(tool), 1),
        }
    if bench.history.messages <= embed_max:
        embedded = proctree.run(bench.cli("huiyi", "index"), env=bench.env, cwd=bench.cwd)
        if embedded.returncode:
            raise SystemExit(f"huiyi embedding failed:\n{embedded.stderr[-2000:]}")
        out["huiyi"]["embed_s"] = round(embedded.seconds, 1)
        out["huiyi"]["embed_peak_mb"] = round(embedded.peak_mb, 1)
        out["huiyi"]["index_with_vectors_mb"] = round(bench.size_mb("huiyi"), 1)
        log(f"embedded in {embedded.seconds:.0f} s")
    elif embed_newest:
        done = bench.inproc("huiyi", "embed", embed_newest)
        out["huiyi"].update(
            embedded_newest=done["embedded"],
            embed_newest_s=done["seconds"],
            embedded_share=done["share"],
            semantic_in_default_search="yes" if done["semantic_joins"] else "no",
        )
        log(f"embedded the newest {done['embedded']:,} in {done['seconds']:.0f} s")
    needles = bench.history.needles
    where = {
        tool: bench.inproc(tool, "locate", [[n.session_id, n.text] for n in needles])
        for tool in TOOLS
    }
    for tool in TOOLS:
        missing = [n.query for n, w in zip(needles, where[tool], strict=True) if not w]
        if missing:
            raise SystemExit(f"{tool} did not index the needles of {missing}")
    cli: dict[str, list[float]] = {"huiyi": [], "claude-recall": [], "huiyi_lexical": []}
    cpu: dict[str, list[float]] = {key: [] for key in cli}
    answers: dict[str, list[str]] = {t: [] for t in TOOLS}
    for run in range(runs):
        for needle in needles:
            for tool in alternate(run):
                seconds, used, output = bench.search(tool, needle.query)
                cli[tool].append(seconds)
                cpu[tool].append(used)
                if run == 0:
                    answers[tool].append(output)
            seconds, used, _ = bench.search("huiyi", needle.query, lexical=True)
            cli["huiyi_lexical"].append(seconds)
            cpu["huiyi_lexical"].append(used)
        log(f"search run {run + 1}/{runs} done")
    for key, tool, suffix in (
        ("huiyi", "huiyi", ""),
        ("huiyi_lexical", "huiyi", "_lexical"),
        ("claude-recall", "claude-recall", ""),
    ):
        out[tool][f"cli_search{suffix}_s"] = median(cli[key])
        out[tool][f"cli_search{suffix}_cpu_s"] = median(cpu[key])
    queries = [n.query for n in needles]
    latency: dict[str, list[dict[str, float]]] = {"huiyi": [], "claude-recall": [], "lex": []}
    for run in range(runs):
        for tool in alternate(run):
            latency[tool].append(bench.inproc(tool, "latency", queries))
        latency["lex"].append(bench.inproc("huiyi", "latency", queries, "lexical"))
    for key, tool, prefix in (
        ("huiyi", "huiyi", "inproc"),
        ("lex", "huiyi", "inproc_lexical"),
        ("claude-recall", "claude-recall", "inproc"),
    ):
        for stat in ("p50_ms", "p95_ms"):
            out[tool][f"{prefix}_{stat}"] = median([r[stat] for r in latency[key]], 2)
    for tool in TOOLS:
        out[tool]["found"] = _found(tool, needles, where[tool], answers[tool])
    missed = [
        n
        for n, place, output in zip(needles, where["huiyi"], answers["huiyi"], strict=True)
        if not found_at_5("huiyi", output, place)
    ]
    ranks = bench.inproc("huiyi", "ranks", [[n.query, n.session_id, n.text] for n in missed])
    out["huiyi"]["missed_ranks"] = {n.query: r for n, r in zip(missed, ranks, strict=True)}
    return out


def _found(
    tool: str, needles: list[Needle], where: list[list[Any]], answers: list[str]
) -> dict[str, Any]:
    found: dict[str, int] = {}
    shown = 0
    for needle, place, output in zip(needles, where, answers, strict=True):
        leaked = needle.secret is not None and needle.secret in output
        shown += leaked
        hit = found_at_5(tool, output, place) and not leaked
        found[needle.kind] = found.get(needle.kind, 0) + hit
    return {"per_kind": found, "of": len(needles) // len(found), "secrets_shown": shown}


ROWS = (
    ("first index (s)", "first_index_s"),
    ("re-index, unchanged (s)", "reindex_s"),
    ("peak memory while indexing, process tree (MB)", "index_peak_mb"),
    ("index size (MB)", "index_mb"),
    ("embed for semantic search (s, huiyi only)", "embed_s"),
    ("index size with vectors (MB)", "index_with_vectors_mb"),
    ("newest messages embedded, as in the background (huiyi only)", "embedded_newest"),
    ("time to embed them (s)", "embed_newest_s"),
    ("share of the history's messages embedded", "embedded_share"),
    ("semantic layer in a default search", "semantic_in_default_search"),
    ("`search` as a process, median (s)", "cli_search_s"),
    ("`search --layer lexical` as a process (s)", "cli_search_lexical_s"),
    ("`search` as a process, CPU median (s)", "cli_search_cpu_s"),
    ("`search --layer lexical` as a process, CPU (s)", "cli_search_lexical_cpu_s"),
    ("in-process search p50 (ms)", "inproc_p50_ms"),
    ("in-process search p95 (ms)", "inproc_p95_ms"),
    ("in-process lexical p50 (ms)", "inproc_lexical_p50_ms"),
    ("in-process lexical p95 (ms)", "inproc_lexical_p95_ms"),
)


def table(size: int, numbers: dict[str, Any]) -> str:
    """docs/comparison.md's table: a row per measure, and found@5 per needle kind."""
    hy, cr = numbers["huiyi"], numbers["claude-recall"]
    lines = [
        f"| {numbers['messages']:,} messages | huiyi | {numbers['claude_recall']} | ratio |",
        "|---|---|---|---|",
    ]
    for label, key in ROWS:
        if key not in hy and key not in cr:
            continue
        a, b = hy.get(key), cr.get(key)
        ratio = f"{a / b:.1f}x" if isinstance(a, float | int) and b else ""
        lines.append(f"| {label} | {_cell(a)} | {_cell(b)} | {ratio} |")
    of = hy["found"]["of"]
    for kind in hy["found"]["per_kind"]:
        a, b = hy["found"]["per_kind"][kind], cr["found"]["per_kind"][kind]
        label = "secret (found, key hidden)" if kind == "secret" else kind.replace("_", " ")
        lines.append(f"| found@5: {label} | {a}/{of} | {b}/{of} | |")
    shown = (hy["found"]["secrets_shown"], cr["found"]["secrets_shown"])
    lines.append(f"| API keys shown in search output | {shown[0]} | {shown[1]} | |")
    if hy.get("missed_ranks"):
        lines.append("\nhuiyi's rank of each needle it missed (default search / semantic alone):")
        for query, rank in hy["missed_ranks"].items():
            lines.append(f"- `{query}`: {_cell(rank['default'])} / {_cell(rank['semantic'])}")
    return "\n".join(lines)


def _cell(value: object) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4000", help="messages per history, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="alternating runs per measure")
    parser.add_argument("--embed-max", type=int, default=10_000, help="embed up to this size")
    parser.add_argument(
        "--embed-newest",
        type=int,
        default=0,
        metavar="N",
        help="above --embed-max, embed the newest N messages as a background `huiyi index` does",
    )
    parser.add_argument("--claude-recall-venv", type=Path, help="reuse (or create) this venv")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    log = (lambda _: None) if args.json else (lambda m: print(m, file=sys.stderr, flush=True))
    results: dict[str, Any] = {"load_before": os.getloadavg()}
    # as `pip install` does for claude-recall: with PYTHONDONTWRITEBYTECODE set (CI, some
    # shells) huiyi's src/ would otherwise be compiled again in every process
    compileall.compile_dir(REPO / "src", quiet=1)
    with tempfile.TemporaryDirectory(prefix="huiyi-vs-") as tmp:
        venv = args.claude_recall_venv or Path(tmp) / "claude-recall-venv"
        crbin = install_claude_recall(venv)
        version = subprocess.run(
            [str(crbin / "claude-recall"), "--version"], capture_output=True, text=True
        ).stdout.strip()
        for size in (int(s) for s in args.sizes.split(",")):
            root = Path(tmp) / f"home-{size}"
            project = root / "code" / "shop-api"
            project.mkdir(parents=True)
            history = write_history(root / ".claude", str(project), size)
            log(f"{history.messages:,} messages in {history.sessions:,} sessions")
            try:
                bench = Bench(root, crbin, history)
                numbers = measure(bench, args.runs, args.embed_max, args.embed_newest, log)
            finally:
                stop_services(root / ".huiyi")
            numbers.update(messages=history.messages, claude_recall=version, runs=args.runs)
            results[str(size)] = numbers
    results["load_after"] = os.getloadavg()
    if args.json:
        print_numbers(results, as_json=True)
        return
    for size in args.sizes.split(","):
        print(table(int(size), results[size]) + "\n")
    print(f"load average before {results['load_before']}, after {results['load_after']}")


if __name__ == "__main__":
    main()
