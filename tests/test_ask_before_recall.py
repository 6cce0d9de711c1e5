"""Ask before recall: a read of another session's text is confirmed with the user first.

The MCP SDK's own client stands in for the user's client: its elicitation callback records
every question and answers accept, decline or cancel. It talks to huiyi in memory (the SDK
server), over stdio (the light front, with and without its warm service) and over Streamable
HTTP. Each test writes a small Claude Code history: an older session that knows about the
"lanternfig" test, and the caller's own session, whose transcript links its tool calls to the
prompts of two replies (`promptId`). The real Claude Code and Codex are in
tests/clients/test_ask_in_clients.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult, TextContent

from huiyi.api import Huiyi
from huiyi.harnesses.claude_code.caller import claude_prompt_id
from huiyi.policy.caller import CallerFinder
from huiyi.policy.consent import WINDOW_SECONDS, Answers
from huiyi.safety.envelope import notice
from huiyi.transports.http_mcp import HuiyiMCP
from huiyi.transports.stdio_mcp import ASK_SECONDS
from tests.builders import claude as cb
from tests.builders import dsh as b
from tests.services import stop_services
from tests.test_front import env_of
from tests.test_http_auth import serving, token_for

DOC = Path(__file__).resolve().parents[1] / "docs" / "ask.md"
OLD = "5f0c2d1e-1111-4222-8333-444455556666"  # an earlier session of the workspace
NOW = "6a1d3e2f-2222-4333-8444-555566667777"  # the caller's own session
BETA = "session-bbbbbbbb-1111-4222-8333-944455556666"  # another workspace's session
OLD_TEXT = "does the lanternfig login test fail only on CI"
#: the caller's tool calls: A and B in the reply to prompt P1, C in the reply to prompt P2
TOOL_A, TOOL_B, TOOL_C = "toolu_01aaaa", "toolu_01bbbb", "toolu_01cccc"


@dataclass
class User:
    """The person behind the client: answers every question with `action`, and remembers."""

    action: str = "accept"
    questions: list[str] = field(default_factory=list)

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        self.questions.append(params.message)
        return ElicitResult(action=self.action)  # type: ignore[arg-type]


@pytest.fixture
def acme(isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace, with ask-before-recall switched on."""
    monkeypatch.setenv("HUIYI_ASK_BEFORE_RECALL", "on")
    acme = tmp_path / "acme"
    (acme / ".git").mkdir(parents=True)
    claude = isolated_home / ".claude"
    cb.write_transcript(
        claude,
        str(acme),
        [
            cb.summary("Login test on CI"),
            cb.user(f"why {OLD_TEXT}?"),
            cb.assistant("The lanternfig test binds fixed port 8080, which CI already uses."),
        ],
        session_id=OLD,
    )
    call = "mcp__huiyi__recall_history"
    cb.write_transcript(
        claude,
        str(acme),
        [
            cb.summary("Today's work"),
            cb.user("what did we find about lanternfig?", promptId="P1"),
            cb.assistant(cb.tool_use(TOOL_A, call, {"query": "lanternfig"})),
            cb.tool_result(TOOL_A, "...") | {"promptId": "P1"},
            cb.assistant(cb.tool_use(TOOL_B, call, {"query": "port"})),
            cb.tool_result(TOOL_B, "...") | {"promptId": "P1"},
            cb.assistant("It binds a fixed port."),
            cb.user("and the deploys?", promptId="P2"),
            cb.assistant(cb.tool_use(TOOL_C, call, {"query": "deploys"})),
        ],
        session_id=NOW,
    )
    beta = tmp_path / "beta"
    beta.mkdir()
    b.write_session(
        isolated_home / ".dsh",
        str(beta),
        [[b.user(0, "The kumquatvault cache lives in beta."), b.title(1, "Beta cache")]],
        session_id=BETA,
    )
    return acme


def text_of(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    assert not result.is_error, block.text
    return block.text


Call = Callable[..., Awaitable[str]]


@asynccontextmanager
async def client(cwd: Path, user: User | None) -> AsyncIterator[Call]:
    """`call(tool, arguments, meta)` through the SDK server in memory; `user` answers the
    questions (None: a client without the elicitation capability)."""
    hy = Huiyi()
    app = HuiyiMCP(hy, CallerFinder.for_settings(hy.settings, cwd=str(cwd)))
    try:
        async with Client(app.build(), mode="legacy", elicitation_callback=user) as sdk:

            async def call(tool: str, arguments: dict[str, Any], meta: Any = None) -> str:
                return text_of(await sdk.call_tool(tool, arguments, meta=meta))

            yield call
    finally:
        app.close()


def run(cwd: Path, user: User | None, body: Callable[[Call], Awaitable[None]]) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            async with client(cwd, user) as call:
                await body(call)

    anyio.run(main)


def claude(tool_use_id: str) -> dict[str, str]:
    return {"claudecode/toolUseId": tool_use_id}


def codex(turn_id: str) -> dict[str, Any]:
    return {"sessionId": "none", "x-codex-turn-metadata": {"turn_id": turn_id}}


# -- accept, decline, cancel -------------------------------------------------------------------


def test_a_search_of_other_sessions_is_asked_first_and_answered_after_accept(acme: Path) -> None:
    user = User("accept")
    answers: list[str] = []

    async def body(call: Call) -> None:
        answers.append(await call("recall_history", {"query": "lanternfig"}, claude(TOOL_A)))

    run(acme, user, body)
    (question,) = user.questions
    assert question == (
        f'huiyi wants to search the earlier sessions of this workspace ({acme}) for "lanternfig" '
        "and show the agent the hits. Allow? Your answer covers the rest of this reply."
    )
    assert answers[0].startswith(notice())
    assert OLD in answers[0] and OLD_TEXT in answers[0]


@pytest.mark.parametrize(
    ("action", "said"),
    [("decline", "the user declined"), ("cancel", "the user dismissed the question")],
)
def test_a_declined_or_dismissed_question_reads_nothing_for_the_rest_of_the_reply(
    acme: Path, action: str, said: str
) -> None:
    user = User(action)
    answers: list[str] = []

    async def body(call: Call) -> None:
        answers.append(await call("recall_history", {"query": "lanternfig"}, claude(TOOL_A)))
        answers.append(await call("session_read", {"sessionId": OLD}, claude(TOOL_B)))

    run(acme, user, body)
    assert len(user.questions) == 1  # the second call of the reply is not asked again
    for answer, tool in zip(answers, ("recall_history", "session_read"), strict=True):
        assert answer.startswith(f"{tool}: {said}")
        assert "nothing was read" in answer
        assert "lanternfig" not in answer and OLD not in answer


def test_the_question_names_the_session_to_be_read_and_masks_secrets(acme: Path) -> None:
    user = User("decline")
    secret = "sk-proj-" + "Q7x9" * 10

    async def body(call: Call) -> None:
        await call("recall_history", {"query": f"lanternfig {secret}"}, codex("T1"))
        await call("session_read", {"sessionId": OLD}, codex("T2"))

    run(acme, user, body)
    searched, read = user.questions
    assert secret not in searched and "lanternfig" in searched
    assert read.startswith('huiyi wants to show the agent the session "Login test on CI" (')
    assert read.endswith(
        f"of this workspace ({acme}). Allow? Your answer covers the rest of this reply."
    )


# -- one answer per reply ------------------------------------------------------------------------


def test_one_answer_covers_the_rest_of_a_claude_code_reply(acme: Path) -> None:
    user = User("accept")

    async def body(call: Call) -> None:
        await call("recall_history", {"query": "lanternfig"}, claude(TOOL_A))
        await call("session_list", {}, claude(TOOL_B))  # same prompt P1: not asked
        assert len(user.questions) == 1
        await call("recall_history", {"query": "port"}, claude(TOOL_C))  # prompt P2: asked

    run(acme, user, body)
    assert len(user.questions) == 2


def test_one_answer_covers_the_rest_of_a_codex_turn(acme: Path) -> None:
    user = User("accept")

    async def body(call: Call) -> None:
        await call("recall_history", {"query": "lanternfig"}, codex("turn-1"))
        await call("session_read", {"sessionId": OLD}, codex("turn-1"))
        assert len(user.questions) == 1
        await call("recall_expand", {"sessionId": OLD, "seq": 1}, codex("turn-2"))

    run(acme, user, body)
    assert len(user.questions) == 2


def test_without_a_turn_id_one_answer_covers_one_connection_for_a_short_while(acme: Path) -> None:
    first, second = User("accept"), User("accept")

    async def body(call: Call) -> None:
        await call("recall_history", {"query": "lanternfig"})
        await call("session_list", {})

    run(acme, first, body)
    run(acme, second, body)  # another connection: its own question
    assert (len(first.questions), len(second.questions)) == (1, 1)


def test_a_window_answer_expires_and_a_turn_answer_stays_its_own() -> None:
    now = [0.0]
    answers = Answers(clock=lambda: now[0])
    assert answers.claim("window:c:s", WINDOW_SECONDS) is None  # ask
    answers.give("window:c:s", "accept", WINDOW_SECONDS)
    now[0] = WINDOW_SECONDS - 1
    assert answers.claim("window:c:s", WINDOW_SECONDS) == "accept"
    assert answers.claim("codex-turn:t", 3600) is None  # another reply: ask
    now[0] = WINDOW_SECONDS + 1
    assert answers.claim("window:c:s", WINDOW_SECONDS) is None  # expired: ask again


def test_two_calls_of_one_reply_at_once_share_one_question() -> None:
    answers = Answers()
    assert answers.claim("codex-turn:t", 3600) is None  # the first call asks
    got: list[str | None] = []
    second = threading.Thread(target=lambda: got.append(answers.claim("codex-turn:t", 3600)))
    second.start()
    second.join(0.2)
    assert second.is_alive()  # waiting for the first call's question, not asking its own
    answers.give("codex-turn:t", "decline", 3600)
    second.join(10)
    assert got == ["decline"]


def test_the_prompt_of_a_claude_tool_use_comes_from_the_transcript(acme: Path) -> None:
    dirs = [Path(os.environ["HOME"]) / ".claude"]
    assert claude_prompt_id(TOOL_A, NOW, dirs) == "P1"
    assert claude_prompt_id(TOOL_B, NOW, dirs) == "P1"
    assert claude_prompt_id(TOOL_C, NOW, dirs) == "P2"
    assert claude_prompt_id("toolu_01missing", NOW, dirs) is None
    assert claude_prompt_id(TOOL_A, OLD, dirs) is None  # not in that session


# -- what is not asked ----------------------------------------------------------------------------


def test_reads_of_the_callers_own_session_are_not_asked(acme: Path) -> None:
    user = User("decline")
    answers: list[str] = []

    async def body(call: Call) -> None:
        answers.append(await call("session_read", {"sessionId": NOW}, claude(TOOL_A)))
        answers.append(await call("recall_expand", {"sessionId": NOW, "seq": 1}, claude(TOOL_A)))
        answers.append(await call("recall_history", {}, claude(TOOL_A)))

    run(acme, user, body)
    assert user.questions == []
    assert "what did we find about lanternfig?" in answers[0]
    assert all(answer.startswith(notice()) for answer in answers)


def test_a_session_the_caller_may_not_read_is_not_found_without_a_question(acme: Path) -> None:
    user = User("accept")

    async def body(call: Call) -> None:
        hy = Huiyi()
        finder = CallerFinder.for_settings(hy.settings, cwd=str(acme))
        app = HuiyiMCP(hy, finder)
        try:
            async with Client(app.build(), mode="legacy", elicitation_callback=user) as sdk:
                result = await sdk.call_tool("session_read", {"sessionId": BETA})
        finally:
            app.close()
        assert result.is_error
        assert isinstance(result.content[0], TextContent)
        assert result.content[0].text == "no such session in this workspace"

    run(acme, None, body)
    assert user.questions == []


def test_a_workspace_with_only_the_callers_session_is_not_asked(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUIYI_ASK_BEFORE_RECALL", "on")
    solo = tmp_path / "solo"
    solo.mkdir()
    cb.write_transcript(
        isolated_home / ".claude",
        str(solo),
        [cb.user("hello there", promptId="P1"), cb.assistant(cb.tool_use(TOOL_A, "x", {}))],
        session_id=NOW,
    )
    user = User("decline")
    answers: list[str] = []

    async def body(call: Call) -> None:
        answers.append(await call("recall_history", {"query": "hello"}, claude(TOOL_A)))
        answers.append(await call("session_list", {}, claude(TOOL_A)))

    run(solo, user, body)
    assert user.questions == []
    assert "0 results" in answers[0] and NOW in answers[1]


def test_off_by_default_nothing_is_asked(acme: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUIYI_ASK_BEFORE_RECALL")
    user = User("decline")
    answers: list[str] = []

    async def body(call: Call) -> None:
        answers.append(await call("recall_history", {"query": "lanternfig"}))

    run(acme, user, body)
    assert user.questions == []
    assert OLD_TEXT in answers[0]


def test_a_client_without_elicitation_is_answered_as_if_it_were_off(acme: Path) -> None:
    answers: list[str] = []

    async def body(call: Call) -> None:
        answers.append(await call("recall_history", {"query": "lanternfig"}))

    run(acme, None, body)
    assert OLD_TEXT in answers[0]


# -- the stdio front and HTTP ----------------------------------------------------------------------


@pytest.mark.parametrize("service", ["on", "off"])
def test_the_stdio_front_asks_through_its_client_with_and_without_the_service(
    acme: Path, service: str
) -> None:
    home = Path(os.environ["HOME"])
    env = env_of(home, HUIYI_ASK_BEFORE_RECALL="on", HUIYI_SERVICE=service)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "huiyi", "mcp"], env=env, cwd=str(acme)
    )
    accepting, declining = User("accept"), User("decline")
    answers: list[str] = []
    errlog = acme.parent / "front-stderr.log"

    async def session(user: User, turn: str) -> None:
        async with (
            contextlib.AsyncExitStack() as stack,
            stdio_client(params, errlog=stack.enter_context(errlog.open("a"))) as (read, write),
            ClientSession(read, write, elicitation_callback=user) as client,
        ):
            await client.initialize()
            for tool, arguments in (
                ("recall_history", {"query": "lanternfig"}),
                ("session_read", {"sessionId": OLD}),
            ):
                result = await client.call_tool(tool, arguments, meta=codex(turn))
                answers.append(text_of(result))

    async def main() -> None:
        with anyio.fail_after(120):
            await session(accepting, "turn-1")
            await session(declining, "turn-2")

    try:
        anyio.run(main)
    finally:
        stop_services(home / ".huiyi")
    assert len(accepting.questions) == 1 and len(declining.questions) == 1
    assert "lanternfig" in accepting.questions[0]
    assert OLD_TEXT in answers[0] and "fixed port 8080" in answers[1]
    assert answers[2].startswith("recall_history: the user declined")
    assert answers[3].startswith("session_read: the user declined")
    assert errlog.read_text() == ""


def test_http_asks_through_the_sdk(acme: Path, tmp_path: Path) -> None:
    user = User("accept")
    answers: list[str] = []
    token = token_for(tmp_path, acme)

    async def main() -> None:
        with anyio.fail_after(60):
            async with (
                serving(token, cwd=acme) as url,
                httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {token.token}"}, timeout=60
                ) as http,
                streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
                ClientSession(read, write, elicitation_callback=user) as client,
            ):
                await client.initialize()
                for query in ("lanternfig", "port"):
                    result = await client.call_tool("recall_history", {"query": query})
                    answers.append(text_of(result))

    anyio.run(main)
    assert len(user.questions) == 1
    assert OLD_TEXT in answers[0]


def test_the_doc_states_the_window_and_the_wait_the_code_uses() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert re.findall(r"within (\d+) seconds of your answer", text) == [f"{WINDOW_SECONDS:.0f}"]
    assert re.findall(r"unanswered for (\d+) s\b", text) == [f"{ASK_SECONDS:.0f}"]
