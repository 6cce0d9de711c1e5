"""The web page in a real headless Chromium (Debian's `/usr/bin/chromium`, driven by
Playwright; Playwright's own browser download is never used): memory edits and the budget bar,
a refused overflow, changes from elsewhere without a reload, search in Chinese and English into
the reader, a private session absent, the key and the Host check, both languages, a phone
width. One browser and one server serve the whole module; each test gets a fresh context.

Each view is saved as a screenshot under `tests/artifacts/` (git-ignored); two of them are
copied by hand into `docs/img/` for the README.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from huiyi.api import Huiyi
from huiyi.config import Settings
from huiyi.web.app import WebServer
from tests.web_world import (
    NOTE_ENTRY,
    PRIVATE_WORD,
    SECRET,
    build,
    workspace,
)

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"
#: a name Chromium resolves to this machine, as a DNS-rebinding page would have it
REBOUND = "rebind.example"
WAIT_MS = 15_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"the browser tests need Debian's chromium at {CHROMIUM}: `apt-get install -y "
            "chromium` (`make test` installs it when it is missing)"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=["--no-sandbox", f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1"],
        )
        yield launched
        launched.close()


class Site:
    def __init__(self, root: Path) -> None:
        self.settings: Settings = build(root)
        self.workspace = workspace(root)
        self.server = WebServer(self.settings, port=0, refresh=False)
        self.base = f"http://127.0.0.1:{self.server.port}"

    def memory(self) -> Huiyi:
        """The index and memory as another process (the model, an editor) would change them."""
        return Huiyi(settings=self.settings)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    made = Site(tmp_path_factory.mktemp("web-browser"))
    made.server.start()
    ARTIFACTS.mkdir(exist_ok=True)
    yield made
    made.server.stop()


def _open(browser: Browser, site: Site, path: str = "/memory", **context: object) -> Page:
    ctx = browser.new_context(**{"locale": "en-US", **context})  # type: ignore[arg-type]
    page = ctx.new_page()
    page.goto(site.server.url)  # the printed address: its key becomes the cookie
    if path != "/memory":
        page.goto(site.base + path)
    return page


@pytest.fixture
def page(browser: Browser, site: Site) -> Iterator[Page]:
    opened = _open(browser, site)
    yield opened
    opened.context.close()


def _budget(page: Page, target: str) -> int:
    return int(page.locator(f'.store[data-target="{target}"] meter').get_attribute("value") or -1)


def test_add_edit_delete_and_restore_an_entry_and_see_the_budget_bar_move(
    page: Page, site: Site
) -> None:
    store = page.locator('.store[data-target="memory"]')
    before = _budget(page, "memory")
    entry = "Staging runs on port 8443"
    store.locator("form.add textarea").fill(entry)
    store.locator("form.add button").click()
    card = store.locator(".card", has_text=entry)
    expect(card).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#memory-panel .message.ok")).to_contain_text("saved")
    added = _budget(page, "memory")
    assert added == before + len("\n§\n") + len(entry)
    page.screenshot(path=ARTIFACTS / "web-memory.png", full_page=True)

    # edit in place
    store = page.locator('.store[data-target="memory"]')
    card = store.locator(".card", has_text=entry)
    card.locator("details.edit summary").click()
    card.locator("details.edit textarea").fill("Staging runs on port 8443 behind nginx")
    card.locator("details.edit button").click()
    expect(page.locator(".store[data-target=memory] .card", has_text="behind nginx")).to_be_visible(
        timeout=WAIT_MS
    )
    assert _budget(page, "memory") == added + len(" behind nginx")

    # delete, after the confirm
    card = page.locator(".store[data-target=memory] .card", has_text="behind nginx")
    card.locator("details.delete summary").click()
    card.locator("details.delete button.danger").click()
    expect(page.locator(".store[data-target=memory] .card", has_text="behind nginx")).to_have_count(
        0, timeout=WAIT_MS
    )
    assert _budget(page, "memory") == before

    # archived elsewhere (a sweep, the CLI): shown without a reload, then restored here
    with site.memory() as hy:
        assert hy.workspace_memory(site.workspace).archive("memory", NOTE_ENTRY).ok
    archive = page.locator(".store[data-target=memory] details.archive")
    expect(archive.locator(".card", has_text=NOTE_ENTRY)).to_have_count(1, timeout=WAIT_MS)
    shrunk = _budget(page, "memory")
    assert shrunk < before
    archive.locator("summary").click()
    archive.locator(".card", has_text=NOTE_ENTRY).locator("button").click()
    expect(
        page.locator(".store[data-target=memory] .cards .card", has_text=NOTE_ENTRY)
    ).to_be_visible(timeout=WAIT_MS)
    assert _budget(page, "memory") == before


def test_an_add_that_would_overflow_is_refused_with_the_numbers(page: Page) -> None:
    before = _budget(page, "user")
    store = page.locator('.store[data-target="user"]')
    store.locator("form.add textarea").fill("x" * 1500)
    store.locator("form.add button").click()
    refusal = page.locator("#memory-panel .message.refused")
    expect(refusal).to_contain_text("over its limit", timeout=WAIT_MS)
    expect(refusal).to_contain_text("/1,375 chars")
    assert _budget(page, "user") == before
    assert page.locator(".store[data-target=user] .card", has_text="xxxxxxxx").count() == 0


def test_a_write_by_the_model_appears_without_a_reload(page: Page, site: Site) -> None:
    with site.memory() as hy:
        mem = hy.workspace_memory(site.workspace)
        assert mem.add("memory", "Written by the model meanwhile").ok
    expect(page.locator(".store[data-target=memory] .card", has_text="by the model")).to_be_visible(
        timeout=WAIT_MS
    )


def test_an_edit_of_an_entry_changed_meanwhile_is_refused_not_applied(
    page: Page, site: Site
) -> None:
    with site.memory() as hy:
        mem = hy.workspace_memory(site.workspace)
        assert mem.add("memory", "Cache TTL is 60 s").ok
    card = page.locator(".store[data-target=memory] .card", has_text="Cache TTL is 60 s")
    expect(card).to_be_visible(timeout=WAIT_MS)
    card.locator("details.edit summary").click()  # editing: the panel is not swapped now
    card.locator("details.edit textarea").fill("Cache TTL is 30 s")
    with site.memory() as hy:
        mem = hy.workspace_memory(site.workspace)
        assert mem.replace("memory", "Cache TTL is 60 s", "Cache TTL is 60 s (prod: 300 s)").ok
    card.locator("details.edit button").click()
    expect(page.locator("#memory-panel .message.refused")).to_contain_text(
        "changed or removed meanwhile", timeout=WAIT_MS
    )
    with site.memory() as hy:
        entries = hy.workspace_memory(site.workspace).entries("memory")
    assert "Cache TTL is 60 s (prod: 300 s)" in entries
    assert "Cache TTL is 30 s" not in entries


@pytest.mark.parametrize(
    ("query", "word", "shot"),
    [("回滚", "回滚", "web-search.png"), ("rollback database", "rollback", "web-search-en.png")],
)
def test_search_marks_the_words_and_a_hit_opens_the_reader_at_its_seq(
    browser: Browser, site: Site, query: str, word: str, shot: str
) -> None:
    page = _open(browser, site, "/search")
    page.locator("#q").fill(query)
    page.locator("#q").press("Enter")
    hits = page.locator("ol.hits li.hit")
    expect(hits.first).to_be_visible(timeout=WAIT_MS)
    expect(hits.first.locator("mark").first).to_have_text(re.compile(word, re.I))
    assert PRIVATE_WORD not in page.content()
    page.screenshot(path=ARTIFACTS / shot, full_page=True)
    link = hits.first.locator("a.title")
    seq = re.search(r"at=(\d+)", link.get_attribute("href") or "")
    assert seq is not None
    link.click()
    target = page.locator(f"li#e{seq.group(1)}.target")
    expect(target).to_be_visible(timeout=WAIT_MS)
    expect(target).to_contain_text(re.compile(word, re.I))
    if shot == "web-search.png":
        page.screenshot(path=ARTIFACTS / "web-reader.png", full_page=True)
    page.context.close()


def test_filters_narrow_the_search(browser: Browser, site: Site) -> None:
    page = _open(browser, site, "/search?q=" + quote("回滚"))
    expect(page.locator("ol.hits li.hit").first).to_be_visible(timeout=WAIT_MS)
    page.locator("select[name=source]").select_option("codex")
    page.locator("#q").press("Enter")
    expect(page.locator(".empty")).to_be_visible(timeout=WAIT_MS)
    page.locator("select[name=source]").select_option("claude")
    page.locator("input[name=until]").fill("2000-01-01")
    page.locator("#q").press("Enter")
    expect(page.locator(".empty")).to_be_visible(timeout=WAIT_MS)
    page.locator("input[name=until]").fill("")
    page.locator("#q").press("Enter")
    expect(page.locator("ol.hits li.hit").first).to_be_visible(timeout=WAIT_MS)
    page.context.close()


@pytest.mark.parametrize(
    ("locale", "sentence"),
    [
        ("en-US", "Nothing in this history matches these words."),
        ("zh-CN", "这段历史里没有与这些词匹配的内容。"),
    ],
)
def test_an_empty_search_says_so_in_words_without_its_scores(
    browser: Browser, site: Site, locale: str, sentence: str
) -> None:
    page = _open(browser, site, "/search?q=" + quote("qzxvbnmkw plokijuh"), locale=locale)
    empty = page.locator("p.empty")
    expect(empty).to_have_text(sentence, timeout=WAIT_MS)
    assert page.locator("ol.hits li.hit").count() == 0
    # the floors' numbers (`semantic 0.80 < 0.84`) belong to --verbose and --json, not here
    assert re.search(r"\d\.\d\d\s*<\s*\d\.\d\d", page.locator("main").inner_text()) is None
    page.context.close()


def test_sessions_grouped_with_subagents_folded_and_no_private_one(
    browser: Browser, site: Site
) -> None:
    page = _open(browser, site, "/sessions")
    group = page.locator("section.workspace")
    expect(group).to_have_count(1)
    expect(group.locator("h2")).to_have_text(site.workspace)
    top = group.locator("ul.sessions > li")
    expect(top).to_have_count(2)  # the subagent is folded under its parent
    expect(top.first).to_contain_text("Claude Code")
    parent = group.locator("ul.sessions > li", has_text="rollback notes")
    expect(parent.locator("details.subagents summary")).to_contain_text("1 subagent")
    text = page.content()
    assert PRIVATE_WORD not in text and "salary" not in text and SECRET not in text
    page.screenshot(path=ARTIFACTS / "web-sessions.png", full_page=True)
    parent.locator("a").first.click()
    expect(page.locator("details.tool").first).to_be_visible(timeout=WAIT_MS)  # tools folded
    page.context.close()


def test_status_shows_sources_counts_and_memory_files(browser: Browser, site: Site) -> None:
    page = _open(browser, site, "/status")
    expect(page.locator("table.sources")).to_contain_text("Claude Code")
    expect(page.locator("#coverage progress")).to_have_count(1)
    expect(page.locator(".files")).to_contain_text("user.md")
    page.screenshot(path=ARTIFACTS / "web-status.png", full_page=True)
    page.context.close()


def test_the_page_speaks_chinese_from_the_browser_language_and_switches(
    browser: Browser, site: Site
) -> None:
    page = _open(browser, site, "/memory", locale="zh-CN")
    nav = page.locator("nav ul")
    expect(nav).to_have_text(re.compile("记忆.*搜索.*会话.*状态"))
    page.locator("form.lang button").click()
    expect(nav).to_have_text(re.compile("Memory.*Search.*Sessions.*Status"), timeout=WAIT_MS)
    page.locator("form.lang button").click()
    expect(nav).to_have_text(re.compile("记忆.*搜索.*会话.*状态"), timeout=WAIT_MS)
    page.context.close()


def test_readable_at_a_phone_width_and_usable_by_keyboard(browser: Browser, site: Site) -> None:
    page = _open(browser, site, "/memory", viewport={"width": 390, "height": 844})
    for path in ("/search?q=" + quote("回滚"), "/sessions", "/status", "/memory"):
        page.goto(site.base + path)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{path} is wider than a phone by {overflow} px"
    page.screenshot(path=ARTIFACTS / "web-memory-phone.png", full_page=True)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Memory"
    page.context.close()


def test_without_the_key_or_under_another_name_the_page_is_refused(
    browser: Browser, site: Site
) -> None:
    ctx = browser.new_context()
    page = ctx.new_page()
    response = page.goto(site.base + "/memory")
    assert response is not None and response.status == 401
    assert NOTE_ENTRY not in page.content()
    page.goto(site.server.url)  # with the key: in
    rebound = page.goto(f"http://{REBOUND}:{site.server.port}/memory")
    assert rebound is not None and rebound.status == 403
    assert NOTE_ENTRY not in page.content()
    ctx.close()
