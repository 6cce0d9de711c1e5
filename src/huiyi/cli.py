"""The `huiyi` command: parse arguments, call the core, print. No behaviour lives here.

Everything printed from the index passes `huiyi.safety.redact` first. Known errors become one
line on stderr (exit 2 for usage, 1 otherwise); anything else is a bug and shows a traceback.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from huiyi.api import Huiyi, IndexReport
from huiyi.cli_common import clean_errors, emit_json, safe, when, workspace_options
from huiyi.errors import UsageError
from huiyi.integrations.hooks import EVENTS, HARNESSES
from huiyi.model import Event, Hit
from huiyi.recall.scope import CallerContext

DEMO_QUERY = "回滚"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="huiyi")
@click.pass_context
def main(ctx: click.Context) -> None:
    """huiyi (回忆): local memory and recall over your coding agents' session logs."""
    with clean_errors():  # a bad HUIYI_* setting is a usage error (exit 2), not a traceback
        ctx.obj = Huiyi()
    ctx.call_on_close(ctx.obj.close)


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


@main.command()
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
@click.pass_obj
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


def _embed(hy: Huiyi, *, quiet: bool) -> None:
    """Compute missing vectors; Ctrl-C keeps what is done (the next run continues)."""
    bar = _Bar()
    started = time.perf_counter()
    try:
        done = hy.embed(progress=lambda n, total: bar("embed", n, total))
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
    _print_hits(result.hits)
    click.echo(
        f"\nTry: huiyi search 'port 8321' --workspace {DEMO_WORKSPACE}   "
        "huiyi sessions --all   huiyi doctor"
    )
    return True


# -- search -----------------------------------------------------------------------------


def _print_hits(hits: list[Hit]) -> None:
    if not hits:
        click.echo("no matches")
    for n, hit in enumerate(hits, 1):
        click.echo(
            f"[{n}] {when(hit.time)}  {hit.source}  {safe(hit.title)}  "
            f"({hit.session_id} #{hit.seq}, {hit.kind})"
        )
        click.echo(f"    {safe(hit.snippet)}")


def _hit_json(hit: Hit) -> dict[str, Any]:
    data = hit.as_dict()
    data["title"] = safe(hit.title)
    data["snippet"] = safe(hit.snippet)
    return data


@main.command(name="search")
@click.argument("query", nargs=-1, required=True)
@workspace_options("Search")
@click.option("--limit", default=10, show_default=True, help="How many hits to show.")
@click.option(
    "--layer",
    type=click.Choice(["hybrid", "lexical", "fuzzy", "semantic"]),
    default="hybrid",
    show_default=True,
    help="Fuse every layer, or run one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print hits as a JSON list.")
@click.pass_obj
def search_cmd(
    hy: Huiyi,
    query: tuple[str, ...],
    workspace: Path | None,
    all_: bool,
    limit: int,
    layer: str,
    as_json: bool,
) -> None:
    """Search history in Chinese or English; quote a phrase for an exact match."""
    with clean_errors():
        result = hy.search(
            " ".join(query),
            workspace=workspace,
            all_workspaces=all_,
            limit=limit,
            layers=None if layer == "hybrid" else (layer,),
        )
        if as_json:
            emit_json([_hit_json(h) for h in result.hits])
            return
        _print_hits(result.hits)
        click.echo(f"(search: {' + '.join(result.layers) or 'none'})")
        for note in result.notes:
            click.echo(f"note: {safe(note)}")


@main.command()
@click.argument("query", nargs=-1)
@click.option(
    "--workspace",
    type=click.Path(path_type=Path),
    help="The workspace to recall from (default: HUIYI_WORKSPACE, else the current directory's).",
)
@click.option(
    "--session",
    "session_id",
    help="The current session, whose compacted part a bare `recall` returns (default: "
    "HUIYI_SESSION).",
)
@click.option("--limit", default=5, show_default=True, help="How many results (1-20).")
@click.pass_obj
def recall(
    hy: Huiyi, query: tuple[str, ...], workspace: Path | None, session_id: str | None, limit: int
) -> None:
    """Print exactly what the agent's recall_history tool returns (the human /recall)."""
    with clean_errors():
        session_id = session_id or hy.settings.session
        text = " ".join(query).strip()
        if not text and not session_id:
            raise UsageError(
                "give some words to recall, e.g. `huiyi recall 数据库 回滚`; a bare `huiyi "
                "recall` needs --session ID (the session whose compacted part to recover)"
            )
        ws = hy.resolve_workspace(workspace)
        hy.index()
        caller = CallerContext(workspace=ws, session_id=session_id, how="cli")
        click.echo(hy.recall(caller).history(text or None, limit=limit).text)


# -- sessions and show ------------------------------------------------------------------


@main.command()
@workspace_options("List the sessions of")
@click.option("--limit", default=50, show_default=True, help="How many sessions to list.")
@click.option("--json", "as_json", is_flag=True, help="Print sessions as a JSON list.")
@click.pass_obj
def sessions(hy: Huiyi, workspace: Path | None, all_: bool, limit: int, as_json: bool) -> None:
    """List sessions, most recently active first."""
    with clean_errors():
        found = hy.sessions(workspace=workspace, all_workspaces=all_, limit=limit)
        if as_json:
            emit_json(
                [
                    {
                        "id": s.id,
                        "source": s.source,
                        "workspace": s.workspace,
                        "cwd": s.cwd,
                        "title": safe(s.title),
                        "created": s.created,
                        "updated": s.updated,
                        "events": s.event_count,
                        "user_messages": s.user_count,
                        "subagent": s.is_subagent,
                        "parent": s.parent,
                    }
                    for s in found
                ]
            )
            return
        if not found:
            click.echo("no sessions here; try --all, or run `huiyi index` first")
        for s in found:
            title = safe(s.title) or "(untitled)"
            sub = " [subagent]" if s.is_subagent else ""
            click.echo(
                f"{when(s.updated)}  {s.source:<6} {s.id}  {s.event_count:>5} events  {title}{sub}"
            )
            if all_:
                click.echo(f"    {s.workspace}")


def _event_json(event: Event) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "time": event.time,
        "kind": str(event.kind),
        "role": event.role,
        "surface": str(event.surface),
        "injected": event.injected,
        "tool_name": event.tool_name,
        "text": safe(event.text),
    }


@main.command()
@click.argument("session_id")
@click.option("--around", type=int, help="Show events around this seq.")
@click.option("--from-seq", type=int, help="Show events from this seq onwards.")
@click.option("--limit", default=50, show_default=True, help="How many events to show.")
@click.option("--json", "as_json", is_flag=True, help="Print events as JSON.")
@click.pass_obj
def show(
    hy: Huiyi,
    session_id: str,
    around: int | None,
    from_seq: int | None,
    limit: int,
    as_json: bool,
) -> None:
    """Show the original text of one session (by default its last events)."""
    with clean_errors():
        if around is not None and from_seq is not None:
            raise UsageError("use either --around SEQ or --from-seq N, not both")
        session = hy.session(session_id)
        events = hy.read(
            session_id,
            around=around,
            before=limit // 2,
            after=limit // 2,
            from_seq=from_seq,
            last=limit,
            limit=limit,
        )
        if as_json:
            emit_json(
                {
                    "session": {
                        "id": session.id,
                        "title": safe(session.title),
                        "workspace": session.workspace,
                        "source": session.source,
                    },
                    "events": [_event_json(e) for e in events],
                }
            )
            return
        click.echo(f"{safe(session.title) or '(untitled)'}  [{session.source}] {session.workspace}")
        for e in events:
            marks = "".join(
                [
                    " (shadowed)" if e.surface == "shadowed" else "",
                    " (injected)" if e.injected else "",
                ]
            )
            tool = f" {e.tool_name}" if e.tool_name else ""
            click.echo(f"\n#{e.seq} {when(e.time)} {e.kind}{tool}{marks}")
            click.echo(safe(e.text))
        if from_seq is not None and events:
            click.echo(f"\n(next: --from-seq {events[-1].seq + 1})")


# -- doctor and forget ------------------------------------------------------------------


@main.command()
@click.option(
    "--repair",
    is_flag=True,
    help="Mend a damaged index: rebuild the full-text index from the kept text, or move a "
    "damaged file aside, rebuild it from the logs and salvage the sessions whose logs are gone.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def doctor(hy: Huiyi, repair: bool, as_json: bool) -> None:
    """Sources found, counts, bad lines by reason, index size and integrity."""
    from huiyi.cli_install import installed_report, print_installed
    from huiyi.errors import StoreError

    with clean_errors():
        repaired = hy.repair(progress=_Bar()) if repair else None
        report = hy.doctor()
        if repaired is not None:
            report["repair"] = repaired.as_dict()
        report["installed"] = installed_report(hy)
        if as_json:
            emit_json(report)
        else:
            if "repair" in report:
                _print_repair(report["repair"])
            _print_doctor(report)
            print_installed(report["installed"])
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


@main.command()
@click.argument("session_id", required=False)
@click.option(
    "--workspace", type=click.Path(path_type=Path), help="Forget every session of this workspace."
)
@click.pass_obj
def forget(hy: Huiyi, session_id: str | None, workspace: Path | None) -> None:
    """Remove a session (or a workspace) from the index and keep it out."""
    with clean_errors():
        count = hy.forget(session_id=session_id, workspace=workspace)
        click.echo(
            f"forgot {count} session{'s' if count != 1 else ''}; they will not be indexed again"
        )


@main.command()
@click.argument("harness", type=click.Choice(list(HARNESSES)))
@click.argument("event", type=click.Choice(list(EVENTS)))
def hook(harness: str, event: str) -> None:
    """Serve one harness hook: its JSON on stdin, what the model gets on stdout (docs/hooks.md)."""
    from huiyi.integrations.hook_front import run

    sys.exit(run(harness, event, sys.stdin.buffer, sys.stdout))


def _register() -> None:
    from huiyi.cli_config import config
    from huiyi.cli_eval import eval_cmd
    from huiyi.cli_install import agents_md, install
    from huiyi.cli_mcp import mcp
    from huiyi.cli_memory import memory

    main.add_command(config)
    main.add_command(memory)
    main.add_command(mcp)
    main.add_command(eval_cmd, name="eval")
    main.add_command(install)
    main.add_command(agents_md)


_register()

if __name__ == "__main__":
    main()
