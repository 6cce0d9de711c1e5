"""`huiyi index`: read new log lines into the index (on a machine with no agent logs, the
bundled demo), then embed what is new for semantic search and judge the memory notes no
verdict of the meaning detector is kept for (`Huiyi.judge_memory`). With --watch, each scan
judges the notes again when a memory store's file changed since the last judging."""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from huiyi.cli.common import (
    FileProgress,
    clean_errors,
    emit_json,
    judge_notes,
    pass_huiyi,
    print_hits,
    safe,
)
from huiyi.policy.handler import search_value

if TYPE_CHECKING:
    from huiyi.api import Huiyi, IndexReport

__all__ = ["embed_progress", "index"]

DEMO_QUERY = "回滚"


def _print_report(report: IndexReport) -> None:
    click.echo(f"{'source':<8} {'files':>6} {'read':>6} {'sessions':>9} {'events':>8}  skipped")
    for name, r in report.sources.items():
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(r.skipped.items())) or "-"
        click.echo(
            f"{name:<8} {r.files:>6} {r.files_read:>6} {len(r.sessions):>9} {r.events:>8}  "
            f"{skipped}"
        )
        for error in r.errors[:5]:
            click.echo(f"  ! {safe(error)}")
    click.echo(f"indexed {report.events} new events in {report.seconds:.2f} s")


@click.command()
@click.option(
    "--jsonl",
    "jsonl",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Index a file or folder in the generic JSONL format instead of harness logs.",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Keep running: index new lines and judge edited memory notes as they appear.",
)
@click.option("--interval", default=2.0, show_default=True, help="Seconds between --watch scans.")
@click.option("--no-embed", is_flag=True, help="Skip computing vectors for semantic search.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "--no-copy",
    is_flag=True,
    help="A first index keeps no text of the conversation (keepText = false).",
)
@pass_huiyi
def index(
    hy: Huiyi,
    jsonl: tuple[Path, ...],
    watch: bool,
    interval: float,
    no_embed: bool,
    as_json: bool,
    no_copy: bool,
) -> None:
    """Read new lines from DSH, Claude Code and Codex logs into the local index."""
    if no_copy:
        hy.settings = hy.settings._replace(keep_text=False)
    with clean_errors():
        report = hy.index(jsonl=jsonl, progress=FileProgress(), check=True)
        no_logs = report.files == 0 and not jsonl
        if as_json:
            emit_json(report.as_dict())
        elif not no_logs:
            _print_report(report)
        for warning in report.warnings:
            click.echo(f"warning: {safe(warning)}", err=True)
        notes = _judge_memory(hy) if not no_embed else b""
        if no_logs and _demo(hy, report, as_json, embed=not no_embed):
            return
        if not no_embed:
            _embed(hy, quiet=as_json)
        while watch:
            time.sleep(interval)
            report = hy.index(jsonl=jsonl)
            if report.events:
                stamp = datetime.now().strftime("%H:%M:%S")
                click.echo(f"{stamp} indexed {report.events} new events")
                if not no_embed:
                    _embed(hy, quiet=True)
            if not no_embed:
                notes = _judge_changed_memory(hy, notes)


def embed_progress(done: int, total: int, seconds: float) -> str:
    """`1,200/9,000 messages  40/s  about 3m15s left`: the rate so far and the time left at it."""
    rate = done / seconds if seconds > 0 else 0.0
    line = f"{done:,}/{total:,} messages"
    if rate > 0:
        left = round((total - done) / rate)
        minutes, secs = divmod(left, 60)
        hours, minutes = divmod(minutes, 60)
        when = (
            f"{hours}h{minutes:02d}m"
            if hours
            else f"{minutes}m{secs:02d}s"
            if minutes
            else f"{secs}s"
        )
        line += f"  {rate:,.0f}/s  about {when} left"
    return line


class _EmbedBar:
    """Embedding progress on stderr, only when stderr is a terminal: a bar, the rate and the
    time left (newest sessions are embedded first, so search by meaning on recent history
    works long before the bar is full)."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.started = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total == 0:
            return
        width = 24
        filled = width * done // total
        bar = "█" * filled + "░" * (width - filled)
        text = embed_progress(done, total, time.perf_counter() - self.started)
        click.echo(f"\rembed   {bar} {text}\x1b[K", err=True, nl=done == total)


def _embed(hy: Huiyi, *, quiet: bool) -> None:
    """Compute missing vectors; Ctrl-C keeps what is done (the next run continues)."""
    bar = _EmbedBar()
    started = time.perf_counter()
    try:
        done = hy.embed(progress=bar)
    except KeyboardInterrupt:
        embedded, embeddable = hy.coverage(all_workspaces=True)
        click.echo(
            f"\nstopped: {embedded:,} of {embeddable:,} messages embedded; "
            "`huiyi index` continues where this stopped",
            err=True,
        )
        return
    if done and not quiet:
        rate = done / max(time.perf_counter() - started, 1e-9)
        click.echo(f"embedded {done:,} messages for semantic search ({rate:.0f}/s)")


def _judge_memory(hy: Huiyi) -> bytes:
    """The memory notes edited by hand since any process judged them, judged by the meaning
    detector for the hooks (`Huiyi.judge_memory`); a detector that cannot run is said.
    Returns the digest of the store files as they were read before judging."""
    notes = hy.memory_files_digest()
    judge_notes(hy.judge_memory)
    return notes


def _judge_changed_memory(hy: Huiyi, seen: bytes) -> bytes:
    """One --watch scan's judging: the notes again only when a store file changed since the
    digest `seen` (reading a few small files, never loading the model for nothing)."""
    if hy.memory_files_digest() == seen:
        return seen
    return _judge_memory(hy)


def _demo(hy: Huiyi, found: IndexReport, as_json: bool, *, embed: bool) -> bool:
    """Show the bundled demo when no logs were found: index it into an empty index, or say
    it is indexed already; False when the index holds real history."""
    roots = hy.log_roots()
    report = hy.index_demo()
    if report is None:
        demo = hy.demo_status()
        if demo is None or len(hy.workspaces()) > 1:
            if not as_json:
                _print_report(found)
            return False  # the index holds sessions already: no made-up history next to them
        if embed:
            _embed(hy, quiet=as_json)
        if not as_json:
            click.echo(
                f"No agent logs were found yet; the bundled demo is indexed already "
                f"({demo['sessions']} sessions in {demo['workspace']})."
            )
            _try_lines()
        return True
    if embed:
        _embed(hy, quiet=True)
    if as_json:
        return True
    click.echo("No agent logs were found in:")
    for root in roots:
        click.echo(f"  {root}")
    click.echo(f"so huiyi indexed its bundled demo history ({report.events} new events).")
    click.echo(f"\n$ huiyi search {DEMO_QUERY}")
    result = hy.search(DEMO_QUERY, workspace=report.demo_workspace, limit=3)
    print_hits(search_value(result)["hits"])
    _try_lines()
    return True


def _try_lines() -> None:
    """The next commands, as the README's quick start gives them: from any directory they
    search the demo until huiyi has indexed real history."""
    click.echo(
        "\nTry (from any directory, with .venv/bin on PATH):\n"
        f"  huiyi search {DEMO_QUERY}\n"
        "  huiyi recall 数据库 迁移\n"
        "  huiyi sessions --all\n"
        "  huiyi web --open"
    )
