"""`huiyi memory ...`: the memory stores from a terminal.

Thin on purpose: parse, call `huiyi.memory.Memory`, print. The `Memory` comes from the `Huiyi`
object the `huiyi` group puts in click's context (`Huiyi.workspace_memory`, which resolves the
workspace and carries the settings), so this module reads no settings of its own. Writes from
here pass the same threat scan as the model's (an agent can run shell commands too); a person
who wants to write something the scan refuses edits the file by hand. A refused change exits
with status 1; errors exit with their kind's status (`huiyi.cli.common`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from huiyi.cli.common import edge, emit_json, judge_notes, pass_huiyi
from huiyi.errors import ExtractionError, NotFoundError
from huiyi.memory import (
    NOT_CONFIGURED,
    Extractor,
    Memory,
    Outcome,
    Target,
    memory_search_tool,
)

if TYPE_CHECKING:
    from huiyi.api import Huiyi

F = TypeVar("F", bound=Callable[..., Any])

_TARGETS = click.Choice([t.value for t in Target], case_sensitive=False)


def _options(default_target: str | None, *, target: bool = True) -> Callable[[F], F]:
    """--target, --json and --workspace, shared by the subcommands."""

    def decorate(func: F) -> F:
        func = click.option(
            "--workspace",
            "workspace_dir",
            type=click.Path(file_okay=False, path_type=Path),
            help="Project directory whose memory to use: its git root, else itself (default: "
            "HUIYI_WORKSPACE, else the current directory).",
        )(func)
        func = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)
        if not target:
            return func
        return click.option(
            "--target",
            "-t",
            type=_TARGETS,
            default=default_target,
            show_default=default_target is not None,
            help="Store: user (who you are, all workspaces) or memory (this workspace).",
        )(func)

    return decorate


def _judged(mem: Memory) -> Memory:
    """`mem` once the meaning detector has judged every entry no verdict is kept for, so what
    this command shows is what the hooks show from now on (`huiyi.memory.verdicts`). A
    detector that cannot run is said on stderr; the rules still decide."""
    judge_notes(mem.judge)
    return mem


def _finish(outcome: Outcome, as_json: bool) -> None:
    if as_json:
        emit_json(outcome.as_dict())
    elif outcome.ok:
        click.echo(outcome.message)
    else:
        click.echo(outcome.message, err=True)
    if not outcome.ok:
        sys.exit(1)


@click.group("memory")
def memory() -> None:
    """Show, edit and search the two memory stores the agent sees in every session."""


@memory.command("show")
@_options(None)
@pass_huiyi
@edge
def show(hy: Huiyi, target: str | None, as_json: bool, workspace_dir: Path | None) -> None:
    """Print the memory block exactly as the model sees it (or one store with --target)."""
    mem = _judged(hy.workspace_memory(workspace_dir))
    targets = [Target(target)] if target else mem.targets()
    if as_json:
        stores: dict[str, object] = {}
        for t in targets:
            store = mem.store(t)
            snap = store.read()
            stores[t.value] = {
                "path": str(store.paths.main),
                "archive_path": str(store.paths.archive),
                "usage": snap.usage,
                "limit": snap.limit,
                "damage": snap.damage,
                "entries": [{"text": e, "blocked": mem.blocked(e)} for e in snap.entries],
                "archived": len(snap.archived),
            }
        emit_json({"workspace": mem.workspace, "stores": stores})
        return
    text = mem.render() if not target else mem.render_store(Target(target))
    if text:
        click.echo(text)
        return
    paths = ", ".join(str(mem.store(t).paths.main) for t in targets)
    click.echo(f"memory is empty ({paths})")


@memory.command("add")
@click.argument("content")
@_options("memory")
@pass_huiyi
@edge
def add(hy: Huiyi, content: str, target: str, as_json: bool, workspace_dir: Path | None) -> None:
    """Add an entry (refused whole if the store would go over its limit)."""
    _finish(hy.workspace_memory(workspace_dir).add(target, content), as_json)


@memory.command("replace")
@click.argument("old_text")
@click.argument("content")
@_options("memory")
@pass_huiyi
@edge
def replace(
    hy: Huiyi, old_text: str, content: str, target: str, as_json: bool, workspace_dir: Path | None
) -> None:
    """Replace the one entry containing OLD_TEXT with CONTENT."""
    _finish(hy.workspace_memory(workspace_dir).replace(target, old_text, content), as_json)


@memory.command("remove")
@click.argument("old_text")
@_options("memory")
@pass_huiyi
@edge
def remove(
    hy: Huiyi, old_text: str, target: str, as_json: bool, workspace_dir: Path | None
) -> None:
    """Remove the one entry containing OLD_TEXT."""
    _finish(hy.workspace_memory(workspace_dir).remove(target, old_text), as_json)


@memory.command("search")
@click.argument("query")
@click.option(
    "--limit",
    "-n",
    type=click.IntRange(1, 20),
    default=5,
    show_default=True,
    help="How many entries to show.",
)
@_options(None, target=False)
@pass_huiyi
@edge
def search_cmd(
    hy: Huiyi, query: str, limit: int, as_json: bool, workspace_dir: Path | None
) -> None:
    """Rank current and archived entries of both stores for QUERY (BM25, hit boost, decay)."""
    mem = _judged(hy.workspace_memory(workspace_dir))
    if as_json:
        emit_json(mem.search(query, limit).as_dict())
        return
    click.echo(memory_search_tool(mem, query, limit).text)


@memory.command("archive")
@click.argument("old_text", required=False)
@_options("memory")
@pass_huiyi
@edge
def archive(
    hy: Huiyi, old_text: str | None, target: str, as_json: bool, workspace_dir: Path | None
) -> None:
    """Archive the entry containing OLD_TEXT, or (without it) every entry unused for
    HUIYI_MEMORY_ARCHIVE_DAYS days (30; 0 never) in both stores."""
    mem = hy.workspace_memory(workspace_dir)
    if old_text:
        _finish(mem.archive(target, old_text), as_json)
        return
    moved = mem.sweep()
    if as_json:
        emit_json({"archived": {t.value: entries for t, entries in moved.items()}})
        return
    count = sum(len(v) for v in moved.values())
    days = mem.config.archive_days
    if days <= 0:
        click.echo("archiving is off (HUIYI_MEMORY_ARCHIVE_DAYS=0); nothing moved")
    else:
        click.echo(f"archived {count} entries unused for {days} days")


@memory.command("restore")
@click.argument("old_text")
@_options("memory")
@pass_huiyi
@edge
def restore(
    hy: Huiyi, old_text: str, target: str, as_json: bool, workspace_dir: Path | None
) -> None:
    """Bring back the archived entry containing OLD_TEXT (within the store's limit)."""
    _finish(hy.workspace_memory(workspace_dir).restore(target, old_text), as_json)


def _read_turns(path: Path) -> list[tuple[str, str]]:
    """JSON Lines of {"role": ..., "text" (or "content"): ...}."""
    turns: list[tuple[str, str]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            role, text = str(item["role"]), item.get("text", item.get("content"))
        except (ValueError, KeyError, TypeError, AttributeError):
            raise click.UsageError(
                f"{path}:{number}: expected a JSON object with role and text"
            ) from None
        if isinstance(text, str):
            turns.append((role, text))
    return turns


@memory.command("extract")
@click.option(
    "--from-file",
    "from_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help='Conversation to read: JSON Lines of {"role": ..., "text": ...} (default: the '
    "workspace's recent sessions from the index).",
)
@click.option("--dry-run", is_flag=True, help="Show the proposals without saving them.")
@_options(None, target=False)
@pass_huiyi
@edge
def extract(
    hy: Huiyi,
    from_file: Path | None,
    dry_run: bool,
    as_json: bool,
    workspace_dir: Path | None,
) -> None:
    """Ask the configured endpoint for at most 2 durable facts from recent conversation."""
    config = hy.settings.extract
    if not config.configured:  # say so before indexing anything
        raise ExtractionError(NOT_CONFIGURED)
    mem = hy.workspace_memory(workspace_dir)
    if from_file is not None:
        turns = _read_turns(from_file)
    else:
        hy.index()
        turns = hy.recent_turns(mem.workspace)
        if not turns:
            raise NotFoundError(
                f"no conversation of {mem.workspace} is indexed yet; run `huiyi index`, or "
                "pass --from-file FILE"
            )
    report = Extractor(mem, config).run(turns, dry_run=dry_run)
    if as_json:
        emit_json(report.as_dict())
    else:
        click.echo(report.text())
