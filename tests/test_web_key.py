"""The web page's key stays with its owner, tried as another user of the same machine would:
a second OS user (made with `useradd` for this module, removed after) who reads process lists
and runs servers of their own, and a second local HTTP server that receives whatever the real
browser (Debian's chromium) sends it.

- `huiyi web --open` hands the browser an owner-only file, so the browser's command line
  (readable by everyone) never holds the key, and the other user cannot read the file;
- the cookie the browser sends to every port of 127.0.0.1 is not the key, and neither it nor
  the key opens the page from a process of the other user;
- the redirect that trades the key for the cookie stays on this server.
"""

from __future__ import annotations

import http.server
import os
import pwd
import re
import secrets
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from playwright.sync_api import sync_playwright

from huiyi.web.app import WebServer
from tests.web_world import NOTE_ENTRY, Client, build, environment

CHROMIUM = Path("/usr/bin/chromium")
#: the other user's client: a GET with the given headers, printing the status (or the refusal)
PROBE = """
import http.client, sys
port, path, cookie = int(sys.argv[1]), sys.argv[2], sys.argv[3]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
conn.request("GET", path, headers={"Cookie": cookie} if cookie else {})
reply = conn.getresponse()
print(reply.status, reply.read().decode("utf-8", "replace"))
"""


@pytest.fixture(scope="module")
def other_user() -> Iterator[pwd.struct_passwd]:
    """A second OS user with no home and no login, removed after the module."""
    if os.geteuid() != 0:
        pytest.fail("these tests make a second OS user: run them as root (as CI does)")
    name = f"huiyi-o{secrets.token_hex(4)}"
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
    )
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False)


def as_user(user: pwd.struct_passwd | None, *command: str) -> subprocess.CompletedProcess[str]:
    """`command` as `user` (None: as the owner, who runs the tests)."""
    prefix = (
        [
            "setpriv",
            f"--reuid={user.pw_uid}",
            f"--regid={user.pw_gid}",
            "--clear-groups",
        ]
        if user is not None
        else []
    )
    return subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=60, cwd="/")


def probe(user: pwd.struct_passwd | None, port: int, path: str, cookie: str = "") -> int:
    done = as_user(user, "/usr/bin/python3", "-c", PROBE, str(port), path, cookie)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split(" ", 1)[0])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    server = WebServer(build(tmp_path_factory.mktemp("web-key")), port=0, refresh=False)
    server.start()
    yield server
    server.stop()


def _path_and_query(url: str) -> str:
    return "/" + url.split("/", 3)[3]


# -- another user on the machine -------------------------------------------------------------


def test_another_user_with_the_key_or_the_cookie_is_refused(
    world: WebServer, other_user: pwd.struct_passwd
) -> None:
    client = Client(world)
    client.enter()
    entry = _path_and_query(world.url)
    # the owner: the key opens the page, the cookie reads it
    assert probe(None, world.port, entry) == 303
    assert probe(None, world.port, "/memory", client.cookie) == 200
    # the other user, holding both (from `ps`, or from a server of theirs): refused
    assert probe(other_user, world.port, entry) == 403
    assert probe(other_user, world.port, "/memory", client.cookie) == 403


def test_open_hands_the_browser_an_owner_only_file_that_never_shows_the_key(
    tmp_path: Path, other_user: pwd.struct_passwd
) -> None:
    build(tmp_path)
    seen = tmp_path / "browser-argv"
    recorder = tmp_path / "browser"
    recorder.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$0" "$@" > {seen}.part && mv {seen}.part {seen}\n'
    )
    recorder.chmod(0o700)
    env = {
        **os.environ,
        **environment(tmp_path),
        "PYTHONPATH": os.pathsep.join(sys.path),
        "BROWSER": f"{recorder} %s",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "huiyi", "web", "--port", "0", "--open"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip().split(" ")[-1]
        key = re.search(r"\?key=(\S+)", url)
        assert key is not None, url
        deadline = time.monotonic() + 60
        while not seen.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        argv = seen.read_text()
        assert key.group(1) not in argv
        opened = Path(argv.split()[-1].removeprefix("file://"))
        assert opened.is_relative_to(tmp_path / ".huiyi")
        assert stat.S_IMODE(opened.stat().st_mode) == 0o600
        assert stat.S_IMODE(opened.parent.stat().st_mode) == 0o700
        assert url in opened.read_text().replace("&amp;", "&")  # it leads on to the page
        refused = as_user(other_user, "/usr/bin/cat", str(opened))
        assert refused.returncode != 0 and key.group(1) not in refused.stdout
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert not opened.exists()  # gone with the page


# -- what the browser sends to another local server ------------------------------------------


class _Catcher(http.server.BaseHTTPRequestHandler):
    """Another local server: keeps the Cookie header of every request it receives."""

    cookies: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.cookies.append(self.headers.get("Cookie", ""))
        body = b"<p>another server</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_the_cookie_another_local_server_receives_is_not_the_key_and_opens_nothing(
    world: WebServer, other_user: pwd.struct_passwd
) -> None:
    if not CHROMIUM.exists():
        pytest.fail(f"this test needs Debian's chromium at {CHROMIUM}")
    catcher = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Catcher)
    threading.Thread(target=catcher.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
            )
            page = browser.new_page()
            page.goto(world.url)
            assert NOTE_ENTRY in page.content()
            page.goto(f"http://127.0.0.1:{catcher.server_address[1]}/")
            browser.close()
    finally:
        catcher.shutdown()
        catcher.server_close()
    name = f"huiyi-web-{world.port}"
    sent = [c for line in _Catcher.cookies for c in line.split("; ") if c.startswith(f"{name}=")]
    assert sent, "the browser sent the page's cookie to the other port"  # as browsers do
    value = sent[0].split("=", 1)[1]
    assert value != world.app.key
    assert probe(other_user, world.port, "/memory", sent[0]) == 403
    # and the owner's own processes: the cookie is no key, and the key no cookie
    assert Client(world).get(f"/memory?key={value}", cookie=False).status == 401
    assert Client(world).get("/memory", headers={"Cookie": f"{name}={world.app.key}"}).status == 401


# -- the redirect ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("//evil.com/", "/evil.com/"),
        ("/%2F%2Fevil.com", "/evil.com"),
        ("/%5Cevil.com", "/evil.com"),
        ("/\\evil.com/x", "/evil.com/x"),
        ("/search", "/search"),
    ],
)
def test_the_key_redirect_goes_only_to_a_path_of_this_server(
    world: WebServer, path: str, location: str
) -> None:
    reply = Client(world).get(f"{path}?key={world.app.key}", cookie=False)
    assert reply.status == 303
    assert reply.headers["location"] == location
