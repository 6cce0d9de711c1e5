"""How fast the web page answers: first paint of each view on the bundled demo history, and a
search on a 100k-message history.

    python benchmarks/bench_web.py [--messages 100000] [--runs 15] [--json]

The page is the real `huiyi web` server (uvicorn on a loopback port, `WebServer` in this
process) over a scratch HOME (`bench_startup.scratch_env`, no embedding model).

- **First paint**: Debian's Chromium (`/usr/bin/chromium`, headless, driven by Playwright) opens
  each view in a fresh tab and reads `first-contentful-paint` from the page's own performance
  timeline: from the start of the navigation to the first pixels of the page, the server's work
  included. Median and worst over `--runs` loads per view, the views alternating.
- **Server time**: the same views fetched with `http.client` (request sent to the last byte of
  the page read), median.
- **Search at size**: `benchmarks.claude_history.write_history` writes about `--messages`
  Claude Code messages (27 planted needles among them), `huiyi` indexes them, then the Search
  view is fetched for each needle's query (all workspaces, every layer), server time, median
  and p95 over every query and run.
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(1, str(Path(__file__).resolve().parent))  # claude_history's own imports

from benchmarks.bench_startup import scratch_env
from benchmarks.claude_history import write_history
from benchmarks.report import print_numbers

from huiyi.api import Huiyi
from huiyi.config import Settings
from huiyi.web.app import WebServer

CHROMIUM = "/usr/bin/chromium"
DEMO_SESSION = "session-0d3e5a10-7c41-4b6e-9a52-1f0e2d3c4b5a"
VIEWS = {
    "memory": "/memory",
    "search": "/search?q=" + quote("数据库 回滚"),
    "sessions": "/sessions",
    "reader": f"/session/{DEMO_SESSION}",
    "status": "/status",
}


class Fetcher:
    """GETs to one running page with its cookie; the time from sending to the last byte."""

    def __init__(self, server: WebServer) -> None:
        self.port = server.port
        url = urlsplit(server.url)
        status, headers, _ = self._get(f"{url.path}?{url.query}", "")
        assert status == 303, status
        self.cookie = headers["set-cookie"].split(";", 1)[0]

    def _get(self, path: str, cookie: str) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("GET", path, headers={"Cookie": cookie} if cookie else {})
            response = conn.getresponse()
            body = response.read()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, body
        finally:
            conn.close()

    def seconds(self, path: str) -> float:
        started = time.perf_counter()
        status, _, _ = self._get(path, self.cookie)
        took = time.perf_counter() - started
        assert status == 200, (path, status)
        return took


def _ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000, 1)


def demo_numbers(root: Path, runs: int) -> dict[str, object]:
    from playwright.sync_api import sync_playwright

    settings = Settings.from_env(scratch_env(root))
    with Huiyi(settings=settings) as hy:
        assert hy.index_demo() is not None
    server = WebServer(settings, port=0, refresh=False)
    server.start()
    numbers: dict[str, object] = {}
    try:
        fetcher = Fetcher(server)
        served: dict[str, list[float]] = {name: [] for name in VIEWS}
        painted: dict[str, list[float]] = {name: [] for name in VIEWS}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
            )
            context = browser.new_context()
            warm = context.new_page()
            warm.goto(server.url)  # the key becomes the context's cookie
            warm.close()
            for _ in range(runs):
                for name, path in VIEWS.items():
                    served[name].append(fetcher.seconds(path))
                    tab = context.new_page()
                    tab.goto(f"http://127.0.0.1:{server.port}{path}")
                    fcp = tab.evaluate(
                        "new Promise(done => new PerformanceObserver((list, obs) => {"
                        "  const e = list.getEntriesByName('first-contentful-paint')[0];"
                        "  if (e) { obs.disconnect(); done(e.startTime); }"
                        "}).observe({type: 'paint', buffered: true}))"
                    )
                    painted[name].append(float(fcp) / 1000)
                    tab.close()
            browser.close()
        for name in VIEWS:
            numbers[f"demo {name}: first paint median (ms)"] = _ms(painted[name])
            numbers[f"demo {name}: first paint worst (ms)"] = round(max(painted[name]) * 1000, 1)
            numbers[f"demo {name}: server median (ms)"] = _ms(served[name])
    finally:
        server.stop()
    return numbers


def size_numbers(root: Path, messages: int, runs: int) -> dict[str, object]:
    env = scratch_env(root)
    history = write_history(root / ".claude", str(root / "proj"), messages)
    settings = Settings.from_env(env)
    started = time.perf_counter()
    with Huiyi(settings=settings) as hy:
        hy.index()
        events = hy.status()["events"]
    indexed = time.perf_counter() - started
    server = WebServer(settings, port=0, refresh=False)
    server.start()
    try:
        fetcher = Fetcher(server)
        fetcher.seconds("/search?q=warm")  # the first search opens the index and its caches
        times: list[float] = []
        for _ in range(runs):
            for needle in history.needles:
                times.append(fetcher.seconds("/search?q=" + quote(needle.query)))
        sessions = fetcher.seconds("/sessions")
    finally:
        server.stop()
    return {
        f"{messages // 1000}k: events indexed": events,
        f"{messages // 1000}k: index (s)": round(indexed, 1),
        f"{messages // 1000}k: search page median (ms)": _ms(times),
        f"{messages // 1000}k: search page p95 (ms)": _p95(times),
        f"{messages // 1000}k: searches": len(times),
        f"{messages // 1000}k: sessions page (ms)": round(sessions * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    numbers: dict[str, object] = {"load average before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="huiyi-bench-web-") as tmp:
        numbers.update(demo_numbers(Path(tmp) / "demo", args.runs))
        numbers.update(size_numbers(Path(tmp) / "size", args.messages, max(1, args.runs // 5)))
    numbers["load average after"] = os.getloadavg()[0]
    report: Mapping[str, object] = numbers
    print_numbers(report, as_json=args.json)


if __name__ == "__main__":
    main()
