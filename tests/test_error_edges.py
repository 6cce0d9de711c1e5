"""The two error edges: what a person sees from the CLI and what an agent gets over MCP when a
call does not do its job. One shape each, redacted, pinned here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.types import CallToolResult, TextContent

from huiyi import CallerContext, Huiyi
from huiyi.cli.root import main
from huiyi.errors import (
    BusyError,
    EmbeddingError,
    HuiyiError,
    NotFoundError,
    StoreError,
    UsageError,
)
from huiyi.memory import Target
from huiyi.policy.caller import CallerFinder
from huiyi.transports.http_mcp import HuiyiMCP
from tests.builders import damage, dsh

SECRET = "sk-proj-" + "Q7x9Lm2Pz4Rt8Wv6Yb1Nc3Kd5"
SESSION = "session-edge0000-1111-4222-8333-444455556666"


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (UsageError, 2),
        (NotFoundError, 3),
        (BusyError, 4),
        (StoreError, 5),
        (EmbeddingError, 6),
        (HuiyiError, 1),
    ],
)
def test_each_kind_of_error_has_its_exit_status_and_one_redacted_line(
    monkeypatch: pytest.MonkeyPatch, error: type[HuiyiError], code: int
) -> None:
    def fail(*_args: object, **_kwargs: object) -> None:
        raise error(f"the key {SECRET} did not work; do this instead")

    monkeypatch.setattr(Huiyi, "sessions", fail)
    result = CliRunner().invoke(main, ["sessions"])
    assert result.exit_code == code
    assert "did not work; do this instead" in result.output
    assert SECRET not in result.output
    assert "Traceback" not in result.output
    assert "Error:" in result.output


def test_a_real_not_found_exits_3_and_a_bad_option_pair_exits_2() -> None:
    missing = CliRunner().invoke(main, ["show", "session-nope"])
    assert missing.exit_code == 3 and "no session" in missing.output
    both = CliRunner().invoke(main, ["search", "x", "--all", "--workspace", "."])
    assert both.exit_code == 2 and "not both" in both.output


# -- MCP --------------------------------------------------------------------------------------


@pytest.fixture
def server(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HuiyiMCP]:
    workspace = isolated_home / "repo"
    (workspace / ".git").mkdir(parents=True)
    dsh.write_session(
        isolated_home / ".dsh",
        str(workspace),
        [[dsh.user(1, "we deploy with make ship"), dsh.assistant(2, "noted")]],
        session_id=SESSION,
    )
    monkeypatch.setenv("HUIYI_MEMORY_LIMIT", "60")
    hy = Huiyi()
    finder = CallerFinder.for_settings(hy.settings, cwd=str(workspace))
    app = HuiyiMCP(hy, finder)
    yield app
    app.close()


def call(app: HuiyiMCP, tool: str, arguments: dict[str, object]) -> CallToolResult:
    async def run() -> CallToolResult:
        async with Client(app.build()) as client:
            return await client.call_tool(tool, arguments)

    return anyio.run(run)


def assert_failed_shape(result: CallToolResult) -> str:
    """isError, one text block, no envelope: huiyi's own voice, redacted."""
    assert result.is_error is True
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert "HUIYI_DATA" not in block.text
    return block.text


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("session_read", {"sessionId": "session-nope"}, "no such session in this workspace"),
        ("recall_history", {"query": "ship", "limit": 99}, "limit must be between 1 and 20"),
        ("recall_history", {"query": "ship", "limit": SECRET}, "invalid arguments for"),
        ("recall_expand", {"seq": {"x": SECRET}}, "invalid arguments for recall_expand: seq"),
        ("memory", {"action": "add", "target": "memory", "content": "x" * 80}, "refused"),
        ("memory", {"action": "fly", "target": "user", "content": "x"}, "invalid arguments"),
        ("no_such_tool", {}, "unknown tool"),
        ("recall_expand", {"seq": 2**70}, "seq: Input should be a whole number between"),
        ("session_read", {"sessionId": SESSION, "fromSeq": -(2**64)}, "fromSeq: Input should"),
        ("session_list", {"limit": "9" * 400}, "limit: Input should be a valid integer"),
        (
            "memory",
            {"operations": [{"action": "add", "target": {"x": SECRET}, "content": "x"}]},
            "operation 1: target must be 'user' or 'memory'",
        ),
    ],
)
def test_every_failed_call_has_the_one_error_shape(
    server: HuiyiMCP, tool: str, arguments: dict[str, object], says: str
) -> None:
    text = assert_failed_shape(call(server, tool, arguments))
    assert says in text
    assert SECRET not in text


def test_a_memory_write_that_works_is_no_error_and_search_results_come_as_data(
    server: HuiyiMCP,
) -> None:
    saved = call(server, "memory", {"action": "add", "target": "user", "content": "Likes Vim."})
    assert saved.is_error is False
    assert isinstance(saved.content[0], TextContent)
    assert saved.content[0].text.startswith("saved")
    found = call(server, "memory_search", {"query": "vim"})
    assert found.is_error is False
    assert isinstance(found.content[0], TextContent)
    assert "HUIYI_DATA" in found.content[0].text and "Likes Vim." in found.content[0].text
    assert server.hy.agent_memory(CallerContext(None)).entries(Target.USER) == ["Likes Vim."]


def test_a_damaged_index_answers_the_one_shape_naming_the_repair(
    server: HuiyiMCP, isolated_home: Path
) -> None:
    long = " ".join(f"word{i}" for i in range(300))
    other = "session-edge0001-1111-4222-8333-444455556666"
    dsh.write_session(  # enough events for the events table to span many pages
        isolated_home / ".dsh",
        server.finder.cwd,
        [[dsh.user(2 * n + 1, f"{n} {long}"), dsh.assistant(2 * n + 2, long)] for n in range(40)],
        session_id=other,
    )
    assert call(server, "session_list", {}).is_error is False  # indexes both sessions
    server.close()  # the index is checkpointed into its file, then damaged there
    damage.flip_cell_pointers(server.hy.settings.db_path, "events")
    hy = Huiyi()
    damaged = HuiyiMCP(hy, CallerFinder.for_settings(hy.settings, cwd=server.finder.cwd))
    try:
        answers = [
            call(damaged, "session_read", {"sessionId": s, "fromSeq": 0, "maxChars": 60_000})
            for s in (SESSION, other)
        ]
    finally:
        damaged.close()
    failed = [assert_failed_shape(a) for a in answers if a.is_error]
    assert failed  # the damaged page held some session's events
    assert all("huiyi doctor --repair" in text for text in failed)
