"""The web page's guard and safety exit, each checked with real HTTP requests to the real
server (uvicorn on a loopback port): the key, the Host check, Origin + CSRF on changes, the
Content-Security-Policy, redaction on every page, private sessions nowhere, HTML as text, and
a restart that makes the old key useless."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from huiyi.web.app import WebServer
from tests.web_world import (
    HTML_LINE,
    MAIN_ID,
    NOTE_ENTRY,
    PRIVATE_ID,
    PRIVATE_TITLE,
    PRIVATE_WORD,
    SECRET,
    Client,
    build,
    environment,
    keys,
    workspace,
)

#: every view, and a search that finds both the planted secret's session and the private one
WS = "{ws}"  # the world's workspace, filled in by `Client`
PAGES = [
    "/memory",
    f"/memory?ws={WS}&q=deploy",
    f"/search?q={quote('数据库 回滚')}",
    f"/search?q={quote('staging key')}",
    f"/search?q={quote(PRIVATE_WORD)}&layer=lexical",
    "/sessions",
    f"/session/{MAIN_ID}",
    "/status",
    "/status/part",
    f"/memory/panel?ws={WS}",
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    root = tmp_path_factory.mktemp("web-security")
    server = WebServer(build(root), port=0, refresh=False)
    server.start()
    server.test_ws = quote(workspace(root))  # type: ignore[attr-defined]
    yield server
    server.stop()


@pytest.fixture
def client(world: WebServer) -> Client:
    client = Client(world, ws=world.test_ws)  # type: ignore[attr-defined]
    client.enter()
    return client


# -- the key ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/memory", "/search?q=x", "/static/app.js", "/status"])
def test_a_request_without_the_key_gets_401_and_no_redirect(world: WebServer, path: str) -> None:
    reply = Client(world).get(path)
    assert reply.status == 401
    assert "location" not in reply.headers
    assert "huiyi web" in reply.body


def test_a_wrong_key_or_cookie_gets_401(world: WebServer) -> None:
    client = Client(world)
    assert client.get("/memory?key=not-the-key").status == 401
    assert client.get("/memory", headers={"Cookie": f"huiyi-web-{world.port}=nope"}).status == 401


def test_the_key_in_the_url_becomes_a_cookie_and_leaves_the_address(world: WebServer) -> None:
    client = Client(world)
    reply = client.get(f"/search?q=abc&key={world.app.key}", cookie=False)
    assert reply.status == 303
    assert reply.headers["location"] == "/search?q=abc"
    cookie = reply.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    client.cookie = cookie.split(";", 1)[0]
    assert client.get("/search?q=abc").status == 200


# -- Host ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["evil.example", "127.0.0.1.nip.io", "localhost.", "127.0.0.1:1", "", "attacker:80"]
)
def test_a_foreign_host_is_refused_even_with_the_cookie(client: Client, host: str) -> None:
    reply = client.get("/memory", headers={"Host": host})
    assert reply.status == 403
    assert NOTE_ENTRY not in reply.body


def test_every_loopback_spelling_of_this_server_is_accepted(client: Client) -> None:
    port = client.server.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
        assert client.get("/memory", headers={"Host": host}).status == 200, host


# -- changes: Origin and CSRF ----------------------------------------------------------------


def _add(client: Client, content: str, **headers: str) -> int:
    form = {"ws": "", "target": "memory", "key": "", "content": content}
    return client.change("/memory/add", form, **headers).status


def test_a_change_without_origin_or_csrf_is_refused_and_changes_nothing(client: Client) -> None:
    before = client.get(f"/memory/panel?ws={WS}").body
    assert _add(client, "no origin", Origin="") == 403
    assert _add(client, "foreign origin", Origin="http://evil.example") == 403
    assert _add(client, "no token", **{"X-CSRF-Token": ""}) == 403
    assert _add(client, "wrong token", **{"X-CSRF-Token": "x" * 43}) == 403
    after = client.get(f"/memory/panel?ws={WS}").body
    assert keys(after) == keys(before)
    for word in ("no origin", "foreign origin", "no token", "wrong token"):
        assert word not in after


def test_a_change_from_the_page_itself_is_accepted(client: Client) -> None:
    assert _add(client, "Release train leaves on Thursdays") == 200
    panel = client.get(f"/memory/panel?ws={WS}").body
    assert "Release train leaves on Thursdays" in panel


# -- headers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [*PAGES, "/static/app.js", "/static/app.css"])
def test_every_response_carries_a_strict_content_security_policy(client: Client, path: str) -> None:
    reply = client.get(path)
    assert reply.status == 200
    csp = reply.headers["content-security-policy"]
    rules = dict(part.strip().split(" ", 1) for part in csp.split(";"))
    assert rules["default-src"] == "'none'"
    assert rules["script-src"] == "'self'"
    assert rules["style-src"] == "'self'"
    assert rules["frame-ancestors"] == "'none'"
    assert "unsafe" not in csp and "*" not in csp and "http" not in csp
    assert reply.headers["x-content-type-options"] == "nosniff"
    assert reply.headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("path", PAGES)
def test_pages_hold_nothing_the_policy_would_block_or_load_from_outside(
    client: Client, path: str
) -> None:
    body = client.get(path).body
    assert re.search(r"<script(?![^>]*\bsrc=\"/static/)", body) is None  # no inline script
    assert " style=" not in body and "<style" not in body
    assert re.search(r"\bon[a-z]+=", body.replace("onerror=alert", "")) is None
    assert re.search(r'(src|href)="(https?:)?//', body) is None


# -- the safety exit -------------------------------------------------------------------------


@pytest.mark.parametrize("path", PAGES)
def test_a_planted_secret_is_masked_on_every_page(client: Client, path: str) -> None:
    body = client.get(path).body
    assert SECRET not in body
    assert SECRET[:16] not in body


def test_the_secret_is_masked_where_it_stood(client: Client) -> None:
    reader = client.get(f"/session/{MAIN_ID}").body
    assert "the staging key is [REDACTED" in reader
    assert "rollback notes [REDACTED" in reader
    memory = client.get("/memory").body
    assert "CI deploy key is [REDACTED" in memory


@pytest.mark.parametrize("path", PAGES)
def test_a_private_session_appears_nowhere(client: Client, path: str) -> None:
    body = client.get(path).body
    body = body.replace(f'value="{PRIVATE_WORD}"', "")  # the search box shows what was asked
    assert PRIVATE_WORD not in body
    assert "salary" not in body
    assert PRIVATE_ID not in body


def test_reading_a_private_session_is_the_same_as_a_missing_one(client: Client) -> None:
    private = client.get(f"/session/{PRIVATE_ID}")
    missing = client.get("/session/does-not-exist")
    assert private.status == missing.status == 404
    assert private.body.replace(PRIVATE_ID, "X") == missing.body.replace("does-not-exist", "X")
    assert PRIVATE_TITLE not in private.body


def test_html_in_history_is_shown_as_text(client: Client) -> None:
    for path in (f"/session/{MAIN_ID}", f"/search?q={quote('this is HTML')}"):
        body = client.get(path).body
        assert "<script>alert" not in body and "<img src=x" not in body
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body, path
    assert HTML_LINE not in client.get(f"/session/{MAIN_ID}").body


# -- a restart -------------------------------------------------------------------------------


def _start(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """`huiyi web --port 0` as a person starts it; its printed address."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "huiyi", "web", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    assert ready, "huiyi web printed no address within 60 s"
    line = proc.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)/\?key=(\S+)", line)
    assert found is not None, line
    return proc, line.strip().split(" ")[-1]


def _status(url: str, path: str, cookie: str = "") -> tuple[int, str]:
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    headers = {"Cookie": cookie} if cookie else {}
    try:
        conn.request("GET", path, headers=headers)  # (it listens before it prints the address)
        response = conn.getresponse()
        response.read()
        return response.status, (response.getheader("set-cookie") or "").split(";", 1)[0]
    finally:
        conn.close()


def test_a_restart_makes_the_old_key_and_cookie_stop_working(tmp_path: Path) -> None:
    build(tmp_path)
    env = {**os.environ, **environment(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    first, url = _start(env)
    try:
        query = url.split("/", 3)[3]
        status, cookie = _status(url, f"/{query}")
        assert status == 303 and cookie
        assert _status(url, "/memory", cookie)[0] == 200
    finally:
        first.terminate()
        first.communicate(timeout=30)
    second, new_url = _start(env)
    try:
        assert new_url != url
        port = new_url.split(":")[2].split("/")[0]
        old_query = url.split("/", 3)[3]
        # the old key and the old cookie, sent to the new start
        again = f"http://127.0.0.1:{port}/"
        assert _status(again, f"/{old_query}")[0] == 401
        old_value = cookie.split("=", 1)[1]
        assert _status(again, "/memory", f"huiyi-web-{port}={old_value}")[0] == 401
        assert _status(new_url, "/" + new_url.split("/", 3)[3])[0] == 303
    finally:
        second.terminate()
        second.communicate(timeout=30)
