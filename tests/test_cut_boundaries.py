"""Secrets are masked before anything is cut: a secret placed across every cut boundary of
every exit (titles made from the first message, the echoed query, snippets, memory previews)
never shows a piece of itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from huiyi import CallerContext, Huiyi
from huiyi.cli.root import main
from huiyi.memory import Target
from huiyi.memory.ops import PREVIEW_CHARS
from huiyi.store.queries import FALLBACK_TITLE_CHARS
from tests.builders import dsh

#: an AWS access key id: AKIA and 16 more; none of its 8-character pieces may leave
SECRET = "AKIA" + "5Q2XJ7LMNOPQRSTU"
PIECES = {SECRET[i : i + 8] for i in range(len(SECRET) - 7)}


def leaked(text: str) -> list[str]:
    return sorted(piece for piece in PIECES if piece in text)


def straddling(width: int) -> list[str]:
    """Texts where the secret starts at every offset that makes a cut at `width` split it."""
    return [
        "y" * (width - k - 1) + " " + SECRET + " zanzibar tail words" for k in range(1, len(SECRET))
    ]


@pytest.fixture
def workspace(isolated_home: Path) -> Path:
    cwd = isolated_home / "acme"
    (cwd / ".git").mkdir(parents=True)
    for n, text in enumerate(straddling(FALLBACK_TITLE_CHARS) + straddling(200)):
        dsh.write_session(  # no title: the first message makes it
            isolated_home / ".dsh",
            str(cwd),
            [[dsh.user(1, text), dsh.assistant(2, "noted")]],
            session_id=f"session-{n:08d}-1111-4222-8333-444455556666",
        )
    return cwd


def test_titles_made_from_the_first_message_keep_no_piece_of_a_secret(workspace: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["index", "--no-embed"]).exit_code == 0
    outputs = {
        "sessions": runner.invoke(main, ["sessions", "--workspace", str(workspace)]).output,
        "sessions --json": runner.invoke(
            main, ["sessions", "--workspace", str(workspace), "--json"]
        ).output,
        "search --json": runner.invoke(
            main, ["search", "zanzibar", "--workspace", str(workspace), "--json", "--limit", "100"]
        ).output,
    }
    titles = [s["title"] for s in json.loads(outputs["sessions --json"])]
    assert len(titles) == 2 * (len(SECRET) - 1)
    assert all(title.startswith("y") for title in titles)
    with Huiyi() as hy:
        caller = CallerContext(str(workspace), None)
        outputs["session_list"] = hy.recall(caller).session_list(limit=100).text
        outputs["recall_history"] = hy.recall(caller).history("zanzibar tail", limit=20).text
    assert {name: leaked(text) for name, text in outputs.items()} == {name: [] for name in outputs}


@pytest.mark.parametrize("k", range(1, len(SECRET)))
def test_the_echoed_query_keeps_no_piece_of_a_secret(isolated_home: Path, k: int) -> None:
    cwd = isolated_home / "acme"
    (cwd / ".git").mkdir(parents=True)
    query = "q" * (79 - k - 1) + " " + SECRET
    with Huiyi() as hy:
        text = hy.recall(CallerContext(str(cwd), None)).history(query).text
    assert leaked(text) == []


def test_memory_previews_in_a_refusal_keep_no_piece_of_a_secret(isolated_home: Path) -> None:
    cwd = isolated_home / "acme"
    (cwd / ".git").mkdir(parents=True)
    with Huiyi() as hy:
        memory = hy.agent_memory(CallerContext(str(cwd), None))
        store = memory.store(Target.MEMORY)
        # a person's own edit of the file may hold anything; the model's writes are scanned
        entries = straddling(PREVIEW_CHARS)[:6]
        store.paths.main.parent.mkdir(parents=True, exist_ok=True)
        store.paths.main.write_text("\n§\n".join(entries) + "\n", encoding="utf-8")
        refused = memory.remove("memory", "zanzibar tail")
    assert not refused.ok and "zanzibar" in refused.message
    assert leaked(refused.message) == []
