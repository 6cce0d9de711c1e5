"""A small history and memory for the web page's tests, and an HTTP client that speaks to the
real server over a real socket (the standard library's `http.client`, so every header, `Host`
included, is exactly what the test says).

The world: two Claude Code sessions in one workspace (one with a subagent, one holding a
planted API key in its title and its text, and a line of HTML that must stay text), a private
session whose marker word must never show, and memory stores with a secret in one entry.
"""

from __future__ import annotations

import http.client
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from huiyi.api import Huiyi
from huiyi.config import Settings
from huiyi.web.app import WebServer
from tests.builders.claude import (
    assistant,
    custom_title,
    text,
    tool_result,
    tool_use,
    user,
    write_transcript,
)

#: an OpenAI-style key, planted in a title, a message and a memory entry
SECRET = "sk-proj-Q7vX2mK9pL4nR8sT1wY6zA3bC5dE0fG"
#: a word that occurs only in the private session
PRIVATE_WORD = "zanzibarquokka"
PRIVATE_TITLE = "[私密] salary review"
HTML_LINE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
MAIN_ID = "aaaaaaaa-1111-4222-8333-444455556666"
OTHER_ID = "bbbbbbbb-1111-4222-8333-444455556666"
PRIVATE_ID = "cccccccc-1111-4222-8333-444455556666"
USER_ENTRY = "Prefers short answers in Chinese; 回复用中文"
SECRET_ENTRY = f"CI deploy key is {SECRET}"
NOTE_ENTRY = "Deploys go through make ship"


def workspace(root: Path) -> str:
    """The world's workspace: a real directory (HUIYI_WORKSPACE must be one)."""
    path = root / "acme-web"
    path.mkdir(exist_ok=True)
    return str(path)


def environment(root: Path) -> dict[str, str]:
    """The environment of a test home under `root` (no real home is ever read)."""
    return {
        "HOME": str(root),
        "HUIYI_HOME": str(root / ".huiyi"),
        "DSH_HOME": str(root / ".dsh"),
        "CODEX_HOME": str(root / ".codex"),
        "HUIYI_EMBEDDER": "fake",
        "HUIYI_WORKSPACE": workspace(root),
    }


def build(root: Path) -> Settings:
    """Write the world's logs and memory under `root`, index them, return its settings."""
    claude = root / ".claude"
    ws = workspace(root)
    write_transcript(
        claude,
        ws,
        [
            custom_title(f"rollback notes {SECRET}"),
            user("the 数据库 migration broke, how do we 回滚 it?"),
            assistant("Run `alembic downgrade 0041` and rebuild the index CONCURRENTLY."),
            user(f"the staging key is {SECRET}, and this is HTML: {HTML_LINE}"),
            assistant(text("Checking the config."), tool_use("toolu_1", "Read", {"path": "cfg"})),
            tool_result("toolu_1", "DATABASE_URL=postgres://app@db/app"),
            assistant("The rollback of the database finished cleanly."),
        ],
        session_id=MAIN_ID,
    )
    write_transcript(
        claude,
        ws,
        [user("subagent: scan the migrations folder"), assistant("found 42 migrations")],
        session_id=MAIN_ID,
        agent_id="a1b2c3",
    )
    write_transcript(
        claude,
        ws,
        [
            custom_title("flaky login test"),
            user("why does test_login fail only on CI?"),
            assistant("The CI runner uses port 8080; the test hard-codes 3000."),
        ],
        session_id=OTHER_ID,
    )
    write_transcript(
        claude,
        ws,
        [
            custom_title(PRIVATE_TITLE),
            user(f"{PRIVATE_WORD}: the 数据库 回滚 of salaries"),
            assistant(f"noted {PRIVATE_WORD}"),
        ],
        session_id=PRIVATE_ID,
    )
    settings = Settings.from_env(environment(root))
    with Huiyi(settings=settings) as hy:
        hy.index()
        hy.workspace_memory(ws).add("user", USER_ENTRY)
        hy.workspace_memory(ws).add("user", SECRET_ENTRY, scan=False)
        hy.workspace_memory(ws).add("memory", NOTE_ENTRY)
    return settings


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: str


@dataclass
class Client:
    """Requests to one running page, with or without its cookie."""

    server: WebServer
    #: the workspace (URL-quoted) that replaces `{ws}` in a path
    ws: str = ""
    cookie: str = ""
    csrf: str = ""
    origin: str = field(init=False)

    def __post_init__(self) -> None:
        self.origin = f"http://127.0.0.1:{self.server.port}"

    def request(
        self,
        method: str,
        path: str,
        *,
        headers: dict[str, str] | None = None,
        body: dict[str, str] | None = None,
        cookie: bool = True,
    ) -> Reply:
        path = path.replace("{ws}", self.ws)
        sent = {"Host": f"127.0.0.1:{self.server.port}"}
        if cookie and self.cookie:
            sent["Cookie"] = self.cookie
        data = None
        if body is not None:
            data = urlencode(body).encode()
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        sent.update(headers or {})
        sent = {k: v for k, v in sent.items() if v is not None}
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        try:
            conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            raw = response.read()
            got = {k.lower(): v for k, v in response.getheaders()}
            return Reply(response.status, got, raw.decode("utf-8", "replace"))
        finally:
            conn.close()

    def enter(self) -> None:
        """Open the printed address: trade its key for the cookie; read the CSRF token."""
        url = urlsplit(self.server.url)
        reply = self.request("GET", f"{url.path}?{url.query}", cookie=False)
        assert reply.status == 303, reply
        self.cookie = reply.headers["set-cookie"].split(";", 1)[0]
        page = self.request("GET", "/memory")
        found = re.search(r'<meta name="csrf" content="([^"]+)">', page.body)
        assert found is not None
        self.csrf = found.group(1)

    def get(
        self, path: str, *, headers: dict[str, str] | None = None, cookie: bool = True
    ) -> Reply:
        return self.request("GET", path, headers=headers, cookie=cookie)

    def change(self, path: str, form: dict[str, str], **headers: str) -> Reply:
        """A change as the page's script sends it (Origin and CSRF token) unless overridden."""
        sent = {"Origin": self.origin, "X-CSRF-Token": self.csrf, **headers}
        return self.request("POST", path, headers=sent, body=form)


def keys(page: str) -> list[str]:
    """The entry keys of the memory cards on a page, in order."""
    return re.findall(r'<article class="card" data-key="([0-9a-f]+)"', page)
