"""Long-lived processes stay bounded: the warm service and `huiyi web` under many mixed calls
while the logs keep growing.

    python benchmarks/bench_soak.py                   # 10,000 calls
    python benchmarks/bench_soak.py --calls 2000 --json

Both are the real processes over a scratch HOME (`bench_startup.scratch_env`, no embedding
model): the service as a front starts it (detached, on its owner-only socket), the page as
`huiyi web --port 0`. The calls, in turn: through the service a history search, a hook
(`UserPromptSubmit`, and `Stop`, which reads the transcript's new lines into the index: the
index refresh), a memory write (added, then removed); on the page a search, the status part
and a memory write (added, then removed, with its Origin and CSRF token). Meanwhile a Claude
Code transcript grows by a line every 5 calls and a new session starts every 500.

Each process's resident memory (`VmRSS`), open files (`/proc/PID/fd`) and threads are read
after a warm-up of 200 calls (the start), halfway and at the end. A call that gets no answer,
or an error where an answer was due, is counted as lost.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "src"), str(REPO), str(REPO / "benchmarks")]

from bench_startup import scratch_env  # noqa: E402
from report import print_numbers  # noqa: E402
from tests.builders import claude as cc  # noqa: E402
from tests.services import service_pid, service_sockets, stop_services  # noqa: E402

from huiyi.config import Settings  # noqa: E402
from huiyi.policy.protocol import NO_PEER, CallerHints, HookRun, Search, ToolCall  # noqa: E402
from huiyi.transports.service_client import ServiceClient  # noqa: E402

WORDS = ["deploy", "rollback", "migration", "flaky test", "cache", "数据库 回滚", "zanzibar"]


def sample(pid: int) -> dict[str, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    return {"rss_mb": rss // 1024, "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": threads}


class Logs:
    """A Claude Code transcript that grows, a new session now and then."""

    def __init__(self, home: Path, workspace: Path) -> None:
        self.claude = home / ".claude"
        self.workspace = str(workspace)
        self.session = str(uuid.uuid4())
        self.n = 0

    def grow(self) -> Path:
        self.n += 1
        word = WORDS[self.n % len(WORDS)]
        records = [cc.user(f"note {self.n}: the {word} runbook step {self.n}")]
        return cc.write_transcript(
            self.claude, self.workspace, records, session_id=self.session, append=True
        )

    def new_session(self) -> None:
        self.session = str(uuid.uuid4())


class Page:
    """The running page: its cookie and CSRF token."""

    def __init__(self, url: str) -> None:
        found = re.search(r"127\.0\.0\.1:(\d+)(/\S+)", url)
        assert found is not None, url
        self.port = int(found.group(1))
        status, headers, _ = self.request("GET", found.group(2))
        assert status == 303, status
        self.cookie = headers["set-cookie"].split(";", 1)[0]
        _, _, body = self.request("GET", "/memory")
        self.csrf = re.search(r'<meta name="csrf" content="([^"]+)">', body).group(1)  # type: ignore[union-attr]

    def request(
        self, method: str, path: str, form: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Cookie": getattr(self, "cookie", "")}
        data = None
        if form is not None:
            data = urlencode(form).encode()
            headers |= {
                "Content-Type": "application/x-www-form-urlencoded",
                "Origin": f"http://127.0.0.1:{self.port}",
                "X-CSRF-Token": self.csrf,
            }
        try:
            conn.request(method, path, body=data, headers=headers)
            reply = conn.getresponse()
            body = reply.read().decode("utf-8", "replace")
            return reply.status, {k.lower(): v for k, v in reply.getheaders()}, body
        finally:
            conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="huiyi-soak-") as tmp:
        root = Path(tmp)
        workspace = root / "acme"
        (workspace / ".git").mkdir(parents=True)
        env = scratch_env(root)
        os.environ.update(env)
        settings = Settings.from_env(env)
        logs = Logs(root, workspace)
        for _ in range(50):
            logs.grow()
        subprocess.run(
            [sys.executable, "-m", "huiyi", "index"], env=env, check=True, capture_output=True
        )
        client = ServiceClient(settings)
        client.ensure()
        (sock,) = service_sockets(settings.home)
        service = service_pid(sock)
        assert service is not None
        web = subprocess.Popen(
            [sys.executable, "-m", "huiyi", "web", "--port", "0"],
            env=env,
            cwd=workspace,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert web.stdout is not None
            page = Page(web.stdout.readline())
            results = soak(args.calls, client, page, logs, workspace, service, web.pid)
        finally:
            web.terminate()
            web.wait(timeout=60)
            stop_services(settings.home)
    results["load"] = round(os.getloadavg()[0], 1)
    print_numbers(results, as_json=args.json)


def soak(
    calls: int, client: ServiceClient, page: Page, logs: Logs, workspace: Path, *pids: int
) -> dict[str, Any]:
    caller = CallerHints(cwd=str(workspace))
    lost: dict[str, int] = {}
    done: dict[str, int] = {}
    samples: dict[str, dict[str, dict[str, int]]] = {}
    marks = {200: "start", 200 + (calls - 200) // 2: "middle", calls: "end"}
    transcript = logs.grow()
    started = time.monotonic()

    def service(request: Any) -> bool:
        reply = client.call(request, NO_PEER)
        return reply is not None and reply.failure is None

    def memory_via_service(i: int) -> bool:
        content = f"Soak note {i}: releases leave on Thursdays."
        added = ToolCall(
            "memory", {"action": "add", "target": "memory", "content": content}, caller=caller
        )
        removed = ToolCall(
            "memory", {"action": "remove", "target": "memory", "old_text": content}, caller=caller
        )
        return service(added) and service(removed)

    def memory_via_page(i: int) -> bool:
        content = f"Page note {i}: the staging cache is flushed nightly."
        form = {"ws": "", "target": "memory", "key": "", "content": content}
        if page.request("POST", "/memory/add", form)[0] != 200:
            return False
        _, _, panel = page.request("GET", "/memory/panel")
        keys = re.findall(r'<article class="card" data-key="([0-9a-f]+)"', panel)
        gone = {"ws": "", "target": "memory", "key": keys[-1] if keys else "", "content": ""}
        return page.request("POST", "/memory/delete", gone)[0] == 200

    kinds = [
        ("service search", lambda i: service(Search(WORDS[i % len(WORDS)], str(workspace)))),
        (
            "service hook UserPromptSubmit",
            lambda i: service(
                HookRun(
                    "claude-code",
                    "UserPromptSubmit",
                    {
                        "prompt": f"what about the {WORDS[i % 7]}?",
                        "session_id": logs.session,
                        "cwd": str(workspace),
                    },
                )
            ),
        ),
        (
            "service hook Stop (index refresh)",
            lambda i: service(
                HookRun(
                    "claude-code",
                    "Stop",
                    {
                        "session_id": logs.session,
                        "transcript_path": str(transcript),
                        "cwd": str(workspace),
                    },
                )
            ),
        ),
        ("service memory write", memory_via_service),
        (
            "page search",
            lambda i: page.request("GET", "/search?q=" + quote(WORDS[i % len(WORDS)]))[0] == 200,
        ),
        ("page status", lambda i: page.request("GET", "/status/part")[0] == 200),
        ("page memory write", memory_via_page),
    ]
    for i in range(1, calls + 1):
        if i % 5 == 0:
            transcript = logs.grow()
        if i % 500 == 0:
            logs.new_session()
            transcript = logs.grow()
        name, call = kinds[i % len(kinds)]
        try:
            ok = call(i)
        except Exception:  # a dropped connection, a timeout: lost
            ok = False
        done[name] = done.get(name, 0) + 1
        if not ok:
            lost[name] = lost.get(name, 0) + 1
        if i in marks:
            samples[marks[i]] = {
                who: sample(pid) for who, pid in zip(("service", "web"), pids, strict=True)
            }
    return {
        "calls": calls,
        "seconds": round(time.monotonic() - started, 1),
        "per kind": done,
        "lost": lost or 0,
        "samples": samples,
    }


if __name__ == "__main__":
    main()
