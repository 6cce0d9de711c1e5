"""One session holding secrets of several families, read back through every exit.

The secrets are planted the way a session holds them: vendor tokens (GitHub, Anthropic, AWS, a
Slack bot token) in a title, a prompt and a tool's output, a password in a database client's
flag and one in a Chinese assignment. Each exit a person or an agent reads is then asked for
that session, and none may show any secret or a long piece of one: the CLI's text and `--json`,
the four recall tools over a real MCP client, the trigger hook's injection and a hook front's
error line, `hooks.log`, the web page's views and its error page, and `huiyi install --dry-run`
diffs of the harness configs that hold the user's keys.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from urllib.parse import quote

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.config import Settings
from huiyi.transports.hook_command import LOG_NAME, run
from huiyi.web.app import WebServer
from tests.builders import claude as cc
from tests.test_mcp import connect, ok
from tests.web_world import Client as WebClient
from tests.web_world import environment, workspace

SESSION = "5f0c2d1e-1111-4222-8333-444455556666"  # the Claude builder's session id
GITHUB = "ghp_" + "Vq9ZrT0aB7cD2eF5gH8jK1mN4pQ6sU9wX2k3"
ANTHROPIC = "sk-ant-api03-" + "Xq7Lm2Np9Rt4Vw6Yz8Bc1Df3Gh5Jk7Mn9Pq2Rs4Tu6Wx8Za0Cb3Ed5Fg7Hi9"
AWS = "AKIA" + "Q7TXRO5KY9A2BEQZ"
SLACK = "xoxb-" + "2048613975-4096813972-Zk8Qw3Rt6Yu1Io4Pa7Sd0Fg"
TOKENS = (GITHUB, ANTHROPIC, AWS, SLACK)
DB_PASSWORD = "Tr0ub4dor&3xq"
CJK_PASSWORD = "Kp9wQz2Lm7"
#: every secret, with the piece of it that must not show either
SECRETS = (*TOKENS, DB_PASSWORD, CJK_PASSWORD)


def pieces(secret: str) -> list[str]:
    """The secret, and a 12-character piece of its body (a cut must not leave half behind)."""
    body = secret.split("-")[-1].split("_")[-1]
    return [secret, body[-12:]] if len(body) >= 16 else [secret]


def assert_masked(output: str, where: str) -> None:
    for secret in SECRETS:
        for piece in pieces(secret):
            assert piece not in output, f"{where} shows {piece!r}"


@pytest.fixture
def world(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HUIYI_SERVICE", "off")
    project = Path(workspace(isolated_home))
    (project / ".git").mkdir(parents=True, exist_ok=True)
    cc.write_transcript(
        isolated_home / ".claude",
        str(project),
        [
            cc.custom_title(f"pomelo deploy with {GITHUB}"),
            cc.user(f"the pomelo deploy uses {ANTHROPIC} and {AWS}, 密码：{CJK_PASSWORD}"),
            cc.assistant(
                cc.text("Checking the pomelo database."),
                cc.tool_use("toolu_1", "Bash", {"command": f"mysql -u app -p{DB_PASSWORD} app"}),
            ),
            cc.tool_result("toolu_1", f"pomelo ok; SLACK_BOT={SLACK}"),
            cc.assistant("The pomelo deploy finished."),
        ],
        session_id=SESSION,
    )
    with Huiyi() as hy:
        hy.index()
    monkeypatch.chdir(project)
    return project


def test_the_cli_text_and_json(world: Path) -> None:
    runner = CliRunner()
    shown = []
    for args in (
        ["search", "pomelo"],
        ["search", "pomelo", "--json"],
        ["sessions", "--json"],
        ["show", SESSION],
        ["show", SESSION, "--json"],
        ["recall", "pomelo"],
    ):
        result = runner.invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert_masked(result.output, " ".join(args))
        shown.append(result.output)
    assert all("pomelo" in out for out in shown)  # each exit really showed the session


def test_the_four_recall_tools_over_an_mcp_client(world: Path) -> None:
    async def body(client: Client) -> None:
        answers = {
            "recall_history": await ok(client, "recall_history", {"query": "pomelo deploy"}),
            "session_list": await ok(client, "session_list", {}),
            "session_read": await ok(client, "session_read", {"sessionId": SESSION}),
            "recall_expand": await ok(
                client, "recall_expand", {"sessionId": SESSION, "seq": 1, "before": 3, "after": 3}
            ),
        }
        for tool, text in answers.items():
            assert "pomelo" in text, tool
            assert_masked(text, tool)

    async def main_() -> None:
        with anyio.fail_after(60):
            async with connect(cwd=world) as client:
                await body(client)

    anyio.run(main_)


def test_the_trigger_hook_its_error_lines_and_its_log(
    world: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    transcript = cc.transcript_path(isolated_home / ".claude", str(world))
    payload = {"session_id": "another", "transcript_path": str(transcript), "cwd": str(world)}
    out = io.StringIO()
    prompt = json.dumps({**payload, "prompt": "DJYHFS pomelo deploy"}).encode()
    assert run("claude-code", "UserPromptSubmit", io.BytesIO(prompt), out) == 0
    injected = json.loads(out.getvalue())["hookSpecificOutput"]["additionalContext"]
    assert "pomelo" in injected
    assert_masked(injected, "the trigger hook")
    for token in TOKENS:
        monkeypatch.setenv("HUIYI_MAX_INJECT_CHARS", token)
        out = io.StringIO()
        assert run("claude-code", "UserPromptSubmit", io.BytesIO(prompt), out) == 0
        err = capsys.readouterr().err
        assert "HUIYI_MAX_INJECT_CHARS" in err
        assert_masked(err + out.getvalue(), "a hook's error line")
    monkeypatch.delenv("HUIYI_MAX_INJECT_CHARS")
    # a broken input goes to the log, which must not hold a secret either
    broken = f'{{"prompt": "{GITHUB}", "cwd": '.encode()
    assert run("claude-code", "UserPromptSubmit", io.BytesIO(broken), io.StringIO()) == 0
    log = (isolated_home / ".huiyi" / LOG_NAME).read_text(encoding="utf-8")
    assert log.strip()
    assert_masked(log, LOG_NAME)


def test_the_web_pages_and_errors(world: Path, isolated_home: Path) -> None:
    """The views of the session, a search for a secret itself, and the missing-session page
    asked for with a token as its id."""
    server = WebServer(Settings.from_env(environment(isolated_home)), port=0, refresh=False)
    server.start()
    try:
        client = WebClient(server, ws=quote(str(world)))
        client.enter()
        views = {
            path: client.get(path)
            for path in (
                f"/search?q={quote('pomelo deploy')}",
                "/sessions",
                f"/session/{SESSION}",
                f"/search?q={quote(GITHUB)}",
                f"/session/{quote(AWS)}",
            )
        }
    finally:
        server.stop()
    for path, reply in views.items():
        # the search box keeps what the person typed, so the form searches it again: their
        # own words in their own form, and the one place a query is not masked
        assert_masked(re.sub(r'(<input id="q"[^>]*value=")[^"]*', r"\1", reply.body), path)
    assert "pomelo" in views[f"/session/{SESSION}"].body
    assert views[f"/session/{quote(AWS)}"].status == 404


def test_install_dry_run_diffs(isolated_home: Path) -> None:
    claude = isolated_home / ".claude"
    claude.mkdir(parents=True, exist_ok=True)
    env = {"ANTHROPIC_API_KEY": ANTHROPIC, "GITHUB_TOKEN": GITHUB, "AWS_ACCESS_KEY_ID": AWS}
    (claude / "settings.json").write_text(json.dumps({"env": env}, indent=2) + "\n")
    (isolated_home / ".claude.json").write_text(json.dumps({"primaryApiKey": ANTHROPIC}) + "\n")
    codex = isolated_home / ".codex"
    codex.mkdir(exist_ok=True)
    (codex / "config.toml").write_text(f'[shell_environment_policy.set]\nSLACK = "{SLACK}"\n')
    for harness in ("claude-code", "codex"):
        result = CliRunner().invoke(main, ["install", harness, "--dry-run"])
        assert result.exit_code == 0, result.output
        assert "(--dry-run: nothing was written)" in result.output
        assert_masked(result.output, f"install {harness} --dry-run")
