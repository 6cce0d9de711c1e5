"""`huiyi index`, `doctor` and `forget`: keeping the index.

`index` reads new log lines (and, on a machine with no agent logs, the bundled demo), then
embeds what is new; `doctor` reports what was found and the index's health and mends it;
`forget` removes sessions and keeps them out.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from huiyi.cli.common import clean_errors, emit_json, pass_huiyi, print_hits, safe
from huiyi.transports.cli_client import search_payload

if TYPE_CHECKING:
    from huiyi.api import Huiyi, IndexReport

__all__ = ["doctor", "embed_progress", "forget", "index"]

DEMO_QUERY = "回滚"


# -- index ------------------------------------------------------------------------------


class _Bar:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()

    def __call__(self, source: str, done: int, total: int) -> None:
        if not self.enabled or total == 0:
            return
        width = 24
        filled = width * done // total
        bar = "█" * filled + "░" * (width - filled)
        end = "\n" if done == total else ""
        click.echo(f"\r{source:<7} {bar} {done}/{total} files", err=True, nl=False)
        if end:
            click.echo("", err=True)


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
@click.option("--watch", is_flag=True, help="Keep running and index new lines as they appear.")
@click.option("--interval", default=2.0, show_default=True, help="Seconds between --watch scans.")
@click.option("--no-embed", is_flag=True, help="Skip computing vectors for semantic search.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@pass_huiyi
def index(
    hy: Huiyi,
    jsonl: tuple[Path, ...],
    watch: bool,
    interval: float,
    no_embed: bool,
    as_json: bool,
) -> None:
    """Read new lines from DSH, Claude Code and Codex logs into the local index."""
    with clean_errors():
        report = hy.index(jsonl=jsonl, progress=_Bar(), check=True)
        if as_json:
            emit_json(report.as_dict())
        else:
            _print_report(report)
        for warning in report.warnings:
            click.echo(f"warning: {safe(warning)}", err=True)
        if report.files == 0 and not jsonl and _demo(hy, as_json, embed=not no_embed):
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


def _demo(hy: Huiyi, as_json: bool, *, embed: bool) -> bool:
    """Show the bundled demo when no logs were found; False when the index is not empty."""
    settings = hy.settings
    roots = [
        settings.dsh_home / "sessions",
        *(d / "projects" for d in settings.claude_dirs),
        settings.codex_home / "sessions",
    ]
    report = hy.index_demo()
    if report is None:
        return False  # the index holds sessions already: no made-up history next to them
    if embed:
        _embed(hy, quiet=True)
    if as_json:
        return True
    click.echo("\nNo agent logs were found in:")
    for root in roots:
        click.echo(f"  {root}")
    click.echo(f"so huiyi indexed its bundled demo history ({report.events} new events).")
    from huiyi.demo import DEMO_WORKSPACE

    click.echo(f"\n$ huiyi search {DEMO_QUERY} --workspace {DEMO_WORKSPACE}")
    result = hy.search(DEMO_QUERY, workspace=DEMO_WORKSPACE, limit=3)
    print_hits(search_payload(result)["hits"])
    click.echo(
        f"\nTry: huiyi search 'port 8321' --workspace {DEMO_WORKSPACE}   "
        "huiyi sessions --all   huiyi doctor"
    )
    return True


# -- doctor and forget ------------------------------------------------------------------


@click.command()
@click.option(
    "--repair",
    is_flag=True,
    help="Mend a damaged index: rebuild the full-text index from the kept text, or move a "
    "damaged file aside, rebuild it from the logs and salvage the sessions whose logs are gone.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_huiyi
def doctor(hy: Huiyi, repair: bool, as_json: bool) -> None:
    """Sources found, counts, bad lines by reason, index size and integrity."""
    from huiyi.errors import StoreError

    with clean_errors():
        repaired = hy.repair(progress=_Bar()) if repair else None
        report = hy.doctor()
        if repaired is not None:
            report["repair"] = repaired.as_dict()
        report["installed"] = _installed_report(hy)
        if as_json:
            emit_json(report)
        else:
            if "repair" in report:
                _print_repair(report["repair"])
            _print_doctor(report)
            _print_installed(report["installed"])
        if report["problem"]:
            raise StoreError(report["problem"])


def _print_repair(done: dict[str, Any]) -> None:
    if done["action"] == "none":
        click.echo("repair     nothing to repair: the index is healthy\n")
        return
    click.echo(f"repair     found: {safe(done['found'])}")
    if done["action"] == "text-indexes":
        click.echo(
            "           rebuilt the full-text and fuzzy indexes from the kept text "
            f"({done['text_events']:,} events)\n"
        )
        return
    if done["moved_aside"]:
        click.echo(f"           moved the damaged file aside to {done['moved_aside']}")
    click.echo(f"           rebuilt {done['sessions_from_logs']} sessions from their logs")
    click.echo(
        f"           salvaged {done['sessions_salvaged']} sessions "
        f"({done['events_salvaged']:,} events) whose logs are gone, from the kept text"
    )
    if done["forget_rules_kept"]:
        click.echo(f"           kept {done['forget_rules_kept']} forget rules")
    if done["unreadable_rows"]:
        lost = ", ".join(f"{t} {n}" for t, n in sorted(done["unreadable_rows"].items()))
        click.echo(f"           rows that could not be read (at most): {lost}")
    for note in done["notes"]:
        click.echo(f"           {safe(note)}")
    click.echo("           vectors for semantic search are computed again by `huiyi index`\n")


def _print_doctor(report: dict[str, Any]) -> None:
    click.echo(f"index      {report['index']} ({report['index_bytes'] / 1e6:.1f} MB)")
    if report["sessions"] is not None:
        click.echo(
            f"contents   {report['sessions']} sessions, {report['events']} events, "
            f"{report['workspaces']} workspaces, {report['private_sessions']} private"
        )
    click.echo(f"integrity  {report['integrity']}; full-text {report['fulltext']}")
    vectors = report["embeddings"]
    if vectors is None:
        pass
    elif vectors["model"] is None:
        click.echo("vectors    semantic search is off")
    else:
        embedded, embeddable = vectors["embedded"], vectors["embeddable"]
        share = f" ({embedded / embeddable:.0%})" if embeddable else ""
        click.echo(
            f"vectors    {embedded:,} of {embeddable:,} messages embedded{share} with "
            f"{vectors['model']}; `huiyi index` embeds the rest"
        )
    for name, src in report["sources"].items():
        click.echo(f"\n{name}")
        for root in src.get("roots", []):
            state = "found" if root["exists"] else "not found"
            click.echo(f"  root     {root['path']} ({state})")
        if "files" in src:
            click.echo(
                f"  files    {src['files']} ({src['missing_files']} gone from disk, "
                f"{src['unreadable_files']} unreadable, {src['refused_files']} refused)"
            )
        if "sessions" in src:
            click.echo(f"  indexed  {src['sessions']} sessions, {src['events']} events")
        bad = src.get("bad_lines") or {}
        if bad:
            click.echo("  skipped  " + ", ".join(f"{k} {v}" for k, v in sorted(bad.items())))


@click.command()
@click.argument("session_id", required=False)
@click.option(
    "--workspace", type=click.Path(path_type=Path), help="Forget every session of this workspace."
)
@pass_huiyi
def forget(hy: Huiyi, session_id: str | None, workspace: Path | None) -> None:
    """Remove a session (or a workspace) from the index and keep it out."""
    with clean_errors():
        count = hy.forget(session_id=session_id, workspace=workspace)
        click.echo(
            f"forgot {count} session{'s' if count != 1 else ''}; they will not be indexed again"
        )


def _installed_report(hy: Huiyi) -> dict[str, Any]:
    """The `installed` part of `huiyi doctor --json`."""
    from huiyi.install import statuses

    return {name: status.as_dict() for name, status in statuses(hy.settings).items()}


def _print_installed(report: dict[str, Any]) -> None:
    click.echo("\ninstalled")
    for name, s in report.items():
        hooks = ", ".join(s["hooks"]) or "no"
        click.echo(f"  {name:<12} MCP {'yes' if s['mcp'] else 'no':<4} {s['mcp_path']}")
        click.echo(f"  {'':<12} hooks {hooks}  {s['hooks_path']}")
        for note in s["notes"]:
            click.echo(f"  {'':<12} ! {note}")
