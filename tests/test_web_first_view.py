"""The page's first view: it opens where there is something to see, the Status view draws the
history as a picture (messages per day per source, and the embedded share) on the server, and
every view reads at a phone's width, in a real Chromium.

The screenshots of the README (`docs/img/`) are taken here from the bundled demo, never from a
test's temporary paths; they are saved under `tests/artifacts/` and copied by hand.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from playwright.sync_api import Browser, ViewportSize, sync_playwright

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.config import Settings
from huiyi.demo import DEMO_WORKSPACE
from huiyi.model import Kind
from huiyi.web.app import WebServer
from huiyi.web.history import SOURCES
from tests.builders import dsh
from tests.web_world import PRIVATE_WORD, Client, build, environment, workspace

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"
PHONE: ViewportSize = {"width": 390, "height": 844}


def _serve(settings: Settings) -> WebServer:
    server = WebServer(settings, port=0, refresh=False)
    server.start()
    return server


def _entered(server: WebServer) -> Client:
    client = Client(server)
    client.enter()
    return client


def _first_view(settings: Settings) -> str:
    server = _serve(settings)
    try:
        reply = _entered(server).get("/")
        assert reply.status == 303
        return reply.headers["location"]
    finally:
        server.stop()


def test_the_page_opens_where_there_is_something_to_see(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUIYI_SERVICE", "off")
    here = isolated_home / "project"
    here.mkdir()
    monkeypatch.setenv("HUIYI_WORKSPACE", str(here))
    # nothing indexed at all: the Status view says where the logs were looked for
    assert _first_view(Settings.from_env()) == "/status"
    # history elsewhere only (the demo): the sessions, not an empty memory panel
    CliRunner().invoke(main, ["index"], catch_exceptions=False)
    assert _first_view(Settings.from_env()) == "/sessions"
    # this workspace has history: its memory
    dsh.write_session(
        isolated_home / ".dsh", str(here), [[dsh.user(1, "hello"), dsh.assistant(2, "hi")]]
    )
    CliRunner().invoke(main, ["index"], catch_exceptions=False)
    assert _first_view(Settings.from_env()) == "/memory"


def test_a_memory_entry_alone_opens_the_memory_view(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = isolated_home / "project"
    here.mkdir()
    monkeypatch.setenv("HUIYI_WORKSPACE", str(here))
    with Huiyi() as hy:
        hy.workspace_memory(str(here)).add("memory", "Deploys go through make ship")
    assert _first_view(Settings.from_env()) == "/memory"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, WebServer, str]]:
    """The web tests' world (a workspace with a private session) behind one page."""
    root = tmp_path_factory.mktemp("web-first-view")
    settings = build(root)
    server = _serve(settings)
    yield settings, server, workspace(root)
    server.stop()


def _expected(settings: Settings, ws: str | None) -> Counter[str]:
    """Each source's messages as the reader gives them: user and assistant words, not tool
    traffic or what the harness injected, of visible sessions only."""
    counts: Counter[str] = Counter()
    with Huiyi(settings=settings) as hy:
        sessions = hy.sessions(workspace=ws) if ws else hy.sessions(all_workspaces=True)
        for session in sessions:
            for event in hy.read(session.id, from_seq=0, limit=1_000):
                if event.kind in (Kind.USER, Kind.ASSISTANT) and not event.injected:
                    counts[session.source] += 1
    return counts


def test_the_status_view_draws_the_history_as_a_picture(
    world: tuple[Settings, WebServer, str],
) -> None:
    settings, server, ws = world
    client = _entered(server)
    body = client.get(f"/status?ws={quote(ws)}").body
    svg = re.search(r'<svg class="activity".*?</svg>', body, flags=re.S)
    assert svg is not None
    drawn = svg.group(0)
    bars: Counter[str] = Counter()
    for source, n in re.findall(r"<title>\d{4}-\d\d-\d\d: ([^<]+?) (\d+) messages</title>", drawn):
        bars[source] += int(n)
    expected = _expected(settings, ws)
    assert bars == Counter({SOURCES[s]: n for s, n in expected.items()})
    assert sum(bars.values()) > 0
    # the private session's words are nowhere in the picture, nor is anything from elsewhere
    assert PRIVATE_WORD not in drawn
    assert not re.search(r"<script|<style|style=|href=|<image|<foreignObject", drawn)
    with Huiyi(settings=settings) as hy:
        embedded, embeddable = hy.coverage(ws)
    assert f"({embedded:,} of {embeddable:,} messages)" in drawn


def test_the_picture_of_every_workspace_is_the_default(
    world: tuple[Settings, WebServer, str],
) -> None:
    settings, server, _ws = world
    body = _entered(server).get("/status").body
    assert '<option value="" selected>every workspace</option>' in body
    caption = re.search(r"<figcaption>([^<]+)</figcaption>", body)
    assert caption is not None
    totals = _expected(settings, None)
    for source, n in totals.items():
        assert f"{SOURCES[source]} {n:,}" in caption.group(1)


# -- in Chromium -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"the browser tests need Debian's chromium at {CHROMIUM}")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    """A page over the bundled demo alone, as a newcomer's first `huiyi web` shows it, with
    two memory notes for the demo's workspace."""
    root = tmp_path_factory.mktemp("web-demo")
    settings = Settings.from_env(environment(root))
    with Huiyi(settings=settings) as hy:
        assert hy.index_demo() is not None
        hy.embed()
        hy.workspace_memory(DEMO_WORKSPACE).add("memory", "Deploys go through `make ship`.")
        hy.workspace_memory(DEMO_WORKSPACE).add(
            "memory", "大表加索引一律用 CONCURRENTLY；CI 里跑 make migrate-check。"
        )
        hy.workspace_memory(DEMO_WORKSPACE).add("user", "Prefers short answers; 回复用中文")
    server = _serve(settings)
    ARTIFACTS.mkdir(exist_ok=True)
    yield server
    server.stop()


def test_at_phone_width_the_status_view_reads_without_scrolling_sideways(
    browser: Browser, demo: WebServer
) -> None:
    context = browser.new_context(viewport=PHONE, locale="en-US")
    page = context.new_page()
    try:
        page.goto(demo.url)
        page.goto(f"http://127.0.0.1:{demo.port}/status")
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        # the language switch stays on one line, as tall as a navigation link
        button = page.locator("nav .lang button").bounding_box()
        link = page.locator("nav a").first.bounding_box()
        assert button is not None and link is not None
        assert button["height"] < 1.5 * link["height"]
        # every cell of the sources table says what its number is
        labels = page.evaluate(
            """() => [...document.querySelectorAll('table.sources td')].map(
                td => getComputedStyle(td, '::before').content)"""
        )
        assert labels and all(label not in ("none", "normal", "") for label in labels)
        assert any("Sessions" in label for label in labels)
        # the picture fits and its words stay legible
        svg = page.locator("svg.activity").bounding_box()
        assert svg is not None and svg["width"] <= PHONE["width"]
        tick = page.locator("svg.activity text.tick").first.bounding_box()
        legend = page.locator("svg.activity text.legend").first.bounding_box()
        assert tick is not None and legend is not None
        assert tick["height"] >= 9 and legend["height"] >= 10
        assert page.locator("svg.activity rect title").count() > 0
        page.locator("#activity").screenshot(path=ARTIFACTS / "web-activity-phone.png")
    finally:
        context.close()


def test_the_readme_screenshots_come_from_the_demo(browser: Browser, demo: WebServer) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    page = context.new_page()
    base = f"http://127.0.0.1:{demo.port}"
    try:
        page.goto(demo.url)
        assert page.url == f"{base}/memory"  # the user profile holds a note
        shots = {
            "web-memory.png": "/memory?ws=" + quote(DEMO_WORKSPACE),
            "web-search.png": "/search?q=" + quote("回滚"),
            "web-status.png": "/status",
        }
        for name, path in shots.items():
            page.goto(base + path)
            shown = page.locator("figure.activity" if name == "web-status.png" else "main")
            # what the picture shows: the chosen option of a select, not the ones folded away
            text = shown.evaluate(
                """el => { const c = el.cloneNode(true);
                c.querySelectorAll('option:not([selected])').forEach(o => o.remove());
                return c.textContent; }"""
            )
            assert "/tmp" not in text, name  # no test run's temporary paths
            assert "/demo/acme-api" in text or name == "web-status.png", name
            shown.screenshot(path=ARTIFACTS / name)
            if name == "web-search.png":
                assert "数据库迁移回滚" in text
    finally:
        context.close()
