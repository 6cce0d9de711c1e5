"""`huiyi doctor`: what was found, the index's health and integrity, what is installed where;
`--repair` mends a damaged index."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from huiyi.cli.common import FileProgress, clean_errors, emit_json, pass_huiyi, safe
from huiyi.text.dates import when

if TYPE_CHECKING:
    from huiyi.api import Huiyi

__all__ = ["doctor"]


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
        repaired = hy.repair(progress=FileProgress()) if repair else None
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
        click.echo("repair     nothing to repair: the index is healthy")
        for note in done["notes"]:
            click.echo(f"           {safe(note)}")
        click.echo()
        return
    click.echo(f"repair     found: {safe(done['found'])}")
    if done["action"] == "text-indexes":
        click.echo(
            "           rebuilt the full-text and fuzzy indexes from the kept text "
            f"({done['text_events']:,} events)"
        )
        for note in done["notes"]:
            click.echo(f"           {safe(note)}")
        click.echo()
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
    click.echo(
        f"integrity  {report['integrity']}; full-text {report['fulltext']}; "
        f"schema {report['schema']}"
    )
    vectors = report["embeddings"]
    if vectors is None:
        pass
    elif vectors["model"] is None:
        click.echo("vectors    semantic search is off")
    else:
        embedded, embeddable = vectors["embedded"], vectors["embeddable"]
        share = f" ({embedded / embeddable:.0%})" if embeddable else ""
        rest = "; `huiyi index` embeds the rest" if embedded < embeddable else ""
        click.echo(
            f"vectors    {embedded:,} of {embeddable:,} messages embedded{share} with "
            f"{vectors['model']}{rest}"
        )
        for index in vectors.get("approximate", []):
            click.echo(f"ann        {safe(index['workspace'])}: {_approximate(index)}")
    _print_memory(report.get("memory"))
    no_copy = report.get("no_copy")
    if no_copy is not None:
        click.echo(
            f"no copy    the index keeps no text: {no_copy['located']:,} events are read from "
            f"their logs, {no_copy['gone']:,} of them gone (the log is gone or changed)"
        )
    demo = report.get("demo")
    if demo is not None:
        click.echo(
            f"demo       the bundled demo history: {demo['sessions']} sessions in "
            f"{demo['workspace']} (`{demo['remove']}` removes it)"
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
        for file in src.get("unreadable", []):
            click.echo(f"  not read {safe(file['path'])}: {safe(file['why'])}")


def _print_memory(memory: dict[str, Any] | None) -> None:
    """What the meaning detector judged of the memory notes, and what still waits for it."""
    if memory is None:
        return
    notes, waiting = memory["notes"], memory["await_detector"]
    if memory.get("error"):
        click.echo(f"memory     the meaning detector did not run: {safe(memory['error'])}")
    if not memory["detector"]:
        click.echo(
            f"memory     {waiting} of {notes} notes await the meaning detector (this embedder has "
            "none: the hooks judge them by the rules alone)"
        )
        return
    click.echo(
        f"memory     {notes} notes; the meaning detector judged {memory['judged_now']} now "
        f"({memory['refused_now']} blocked), {waiting} await it"
    )


def _approximate(index: dict[str, Any]) -> str:
    """One workspace's approximate index in words (`Semantic.describe`)."""
    n, state = index["vectors"], index["state"]
    if state == "built":
        held = "?" if index["size"] is None else f"{index['size']:,}"
        return f"approximate index built, {held} of its {n:,} vectors"
    if state == "building":
        return (
            f"approximate index of its {n:,} vectors being built in the background "
            f"(process {index['builder']})"
        )
    if state == "outgrown":
        return (
            f"approximate index trained at {index['trained']:,} vectors, outgrown by its "
            f"{n:,}; the next search builds it again (or `huiyi doctor --repair`)"
        )
    if state == "damaged":
        return safe(str(index["problem"]))
    return f"no approximate index yet for its {n:,} vectors; the next search builds it"


def _installed_report(hy: Huiyi) -> dict[str, Any]:
    """The `installed` part of `huiyi doctor --json`: per harness what is installed where, and
    when each of its hooks last ran (`ran`: event -> {at, answered}); a hook installed that
    never ran is named in `notes`, since installed is not working (DSH, for one, runs hook
    commands in its sandboxed shell and refuses them where it has no sandbox)."""
    from huiyi.install import statuses
    from huiyi.transports.hook_command import last_runs

    runs = last_runs(hy.settings)
    report = {}
    for name, status in statuses(hy.settings).items():
        entry = status.as_dict()
        ran = runs.get(name, {})
        entry["ran"] = ran
        silent = [event for event in status.hooks if event not in ran]
        if silent:
            entry["notes"] = [
                *entry["notes"],
                f"installed but never ran: {', '.join(silent)} (see docs/install.md, "
                "'When hooks do not run')",
            ]
        report[name] = entry
    return report


def _print_installed(report: dict[str, Any]) -> None:
    click.echo("\ninstalled")
    for name, s in report.items():
        hooks = ", ".join(s["hooks"]) or "no"
        click.echo(f"  {name:<12} MCP {'yes' if s['mcp'] else 'no':<4} {s['mcp_path']}")
        click.echo(f"  {'':<12} hooks {hooks}  {s['hooks_path']}")
        if s["commands"]:
            click.echo(f"  {'':<12} commands {', '.join(s['commands'])}")
        if s["ran"]:
            last = ", ".join(
                f"{event} {when(ran['at'])} ({ran['answered']})" for event, ran in s["ran"].items()
            )
            click.echo(f"  {'':<12} ran   {last}")
        for note in s["notes"]:
            click.echo(f"  {'':<12} ! {note}")
