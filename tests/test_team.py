"""The team story end to end against a real PostgreSQL and a real server on a loopback port:
two machines push, a third token with a read grant on one workspace recalls from both and sees
nothing else; a revoked token is refused at once; bad pushes store nothing; the audit shows
each read."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import uvicorn
from click.testing import CliRunner

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.errors import UsageError
from huiyi.hub import Hub
from huiyi.recall.scope import CallerContext
from huiyi.teamname import normalise_remote, workspace_name
from huiyi.transports.team_server import app, check_listen
from tests.builders import dsh

SECRET = "sk-proj-" + "Zq4" * 16
REMOTE = "git@github.com:acme/api.git"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(pg_url: str) -> Iterator[tuple[Hub, str]]:
    """`huiyi serve`'s app on a loopback port, in a thread, for the test."""
    hub = Hub(pg_url, pool_size=4)
    port = free_port()
    config = uvicorn.Config(
        app(hub), host="127.0.0.1", port=port, log_level="warning", access_log=False
    )
    running = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: anyio.run(running.serve), daemon=True)
    thread.start()
    while not running.started:  # until it listens, or its thread ends (a failed start)
        assert thread.is_alive(), "the team server stopped before it started"
        thread.join(0.01)
    try:
        yield hub, f"http://127.0.0.1:{port}"
    finally:
        running.should_exit = True
        thread.join(30)
        hub.close()


def repo(root: Path, name: str, remote: str | None) -> str:
    path = root / name
    (path / ".git").mkdir(parents=True)
    if remote is not None:
        (path / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {remote}\n')
    return str(path)


def machine(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / name
    home.mkdir()
    return home


def use(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HUIYI_HOME", str(home / ".huiyi"))
    monkeypatch.setenv("DSH_HOME", str(home / ".dsh"))


def run(*args: str, stdin: str | None = None) -> str:
    result = CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def token(
    hub: Hub, user: str, device: str, *, reads: tuple[str, ...] = (), pushes: tuple[str, ...] = ()
) -> str:
    return hub.add_device(user, device, reads=reads, pushes=pushes)[1]


def test_two_machines_push_and_a_reader_recalls_both_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: tuple[Hub, str]
) -> None:
    hub, url = server
    shared = normalise_remote(REMOTE)
    assert shared == "github.com/acme/api"
    ana_token = token(hub, "ana", "laptop", reads=(shared,), pushes=(shared,))
    bo_token = token(hub, "bo", "desktop", reads=(shared,), pushes=(shared,))
    reader_token = token(hub, "cy", "laptop", reads=(shared,))

    # ana's machine: a shared repo (by its ssh remote), a private session, a secret, and a
    # second repo she does not share
    ana = machine(tmp_path, "ana", monkeypatch)
    use(ana, monkeypatch)
    ana_repo = repo(ana, "api", REMOTE)
    other = repo(ana, "other", "git@github.com:acme/other.git")
    dsh.write_session(
        ana / ".dsh",
        ana_repo,
        [
            [
                dsh.user(1, f"the zanzibar deploy needs OPENAI_API_KEY={SECRET} set"),
                dsh.assistant(2, "zanzibar deploys through make ship"),
            ]
        ],
        session_id="ana-1",
    )
    dsh.write_session(
        ana / ".dsh",
        ana_repo,
        [
            [
                dsh.user(1, "zanzibar plans"),
                dsh.title(2, "[私密] zanzibar plans"),
            ]
        ],
        session_id="ana-private",
    )
    dsh.write_session(
        ana / ".dsh", other, [[dsh.user(1, "zanzibar in the other repo")]], session_id="ana-other"
    )
    token_file = tmp_path / "ana.token"
    token_file.write_text(ana_token)
    run("team", "join", url, "--token-file", str(token_file), "--share", ana_repo)
    run("index")
    assert "pushed 2 events of 1 sessions" in run("team", "push")

    # bo's machine: the same repo by its https remote, at another path
    bo = machine(tmp_path, "bo", monkeypatch)
    use(bo, monkeypatch)
    bo_repo = repo(bo, "work/api-checkout", "https://github.com/acme/api")
    assert workspace_name(bo_repo) == workspace_name(ana_repo) == shared
    dsh.write_session(
        bo / ".dsh",
        bo_repo,
        [
            [
                dsh.user(1, "why does the zanzibar job time out?"),
                dsh.assistant(2, "the zanzibar job waits on the cache warmup"),
            ]
        ],
        session_id="bo-1",
    )
    run("team", "join", url, "--share", bo_repo, stdin=bo_token + "\n")
    run("index")
    run("team", "push")

    # cy reads the shared workspace only: both machines' sessions, labelled, no secret,
    # no private session, nothing of the other repo
    found = hub.search(hub.device(reader_token), shared, "zanzibar", limit=20)
    sessions = {h["session_id"]: h["origin"] for h in found["hits"]}
    assert sessions == {"ana-1": "ana@laptop", "bo-1": "bo@desktop"}
    text = json.dumps(found)
    assert SECRET not in text and "ana-private" not in text and "ana-other" not in text
    with pytest.raises(UsageError, match="no such workspace"):
        hub.search(hub.device(reader_token), "github.com/acme/other", "zanzibar")

    # bo's own recall fuses his local hit with ana's, labelled with where it came from
    use(bo, monkeypatch)
    with Huiyi() as hy:
        out = hy.recall(CallerContext(bo_repo, None)).history("zanzibar").text
    assert "bo-1" in out and "ana-1" in out and "from ana@laptop (team)" in out
    assert SECRET not in out

    # the audit names each read: who, which workspace, what, which sessions were shown
    rows = hub.audit(limit=10)
    assert [(r.user, r.device, r.workspace, r.query) for r in rows[:2]] == [
        ("bo", "desktop", shared, "zanzibar"),
        ("cy", "laptop", shared, "zanzibar"),
    ]
    assert set(rows[1].sessions) == {"ana-1", "bo-1"}

    # ana marks her session private: the next push withdraws it, and it can never come back
    use(ana, monkeypatch)
    dsh.write_session(
        ana / ".dsh",
        ana_repo,
        [
            [
                dsh.user(1, f"the zanzibar deploy needs OPENAI_API_KEY={SECRET} set"),
                dsh.assistant(2, "zanzibar deploys through make ship"),
                dsh.title(3, "[no-recall] deploy notes"),
            ]
        ],
        session_id="ana-1",
    )
    run("index")
    assert "1 withdrawn" in run("team", "push")
    found = hub.search(hub.device(reader_token), shared, "zanzibar", limit=20)
    assert {h["session_id"] for h in found["hits"]} == {"bo-1"}


def post(url: str, path: str, token: str, body: bytes) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        url + path, data=body, method="POST", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def push_body(push_id: str, workspace: str, session: str = "s-1", text: str = "quokka") -> bytes:
    return json.dumps(
        {
            "push": push_id,
            "sessions": [
                {
                    "id": session,
                    "source": "dsh",
                    "workspace": workspace,
                    "title": None,
                    "events": [
                        {
                            "seq": 1,
                            "time": 1,
                            "kind": "user",
                            "role": "user",
                            "text": text,
                            "surface": "current",
                        }
                    ],
                }
            ],
            "tombstones": [],
        }
    ).encode()


def test_bad_pushes_are_refused_whole_and_store_nothing(server: tuple[Hub, str]) -> None:
    hub, url = server
    ws = "github.com/acme/api"
    mine = token(hub, "ana", "laptop", reads=(ws,), pushes=(ws,))
    theirs = token(hub, "bo", "desktop", reads=(ws,), pushes=(ws,))
    cases = [
        (b"{not json", 400, "not JSON"),
        (
            json.dumps({"push": "p-000001", "sessions": [{"id": 3}], "tombstones": []}).encode(),
            400,
            "'events'",
        ),
        (push_body("p-000002", "github.com/acme/secret-repo"), 403, "may not push"),
        (b"x" * (8 * 1024 * 1024 + 10), 413, "at most"),
    ]
    for body, status, message in cases:
        code, answer = post(url, "/v1/push", mine, body)
        assert code == status and message in str(answer["error"])
    assert post(url, "/v1/push", mine, push_body("p-000003", ws))[0] == 200
    code, answer = post(url, "/v1/push", mine, push_body("p-000003", ws, text="again"))
    assert code == 409 and "replay" in str(answer["error"])
    code, answer = post(url, "/v1/push", theirs, push_body("p-000004", ws))
    assert code == 409 and "another device" in str(answer["error"])
    withdraw = json.dumps({"push": "p-000005", "sessions": [], "tombstones": ["s-1"]}).encode()
    assert post(url, "/v1/push", mine, withdraw)[0] == 200
    code, answer = post(url, "/v1/push", mine, push_body("p-000006", ws))
    assert code == 409 and "withdrawn for good" in str(answer["error"])
    # nothing of the refused pushes was stored: only the one session, and it is gone
    reader = hub.device(theirs)
    assert reader is not None
    assert hub.search(reader, ws, "quokka")["hits"] == []
    assert hub.index.list_sessions(workspace=None, include_private=True) == []


def test_a_revoked_token_is_refused_at_once_and_no_token_shows_anywhere(
    server: tuple[Hub, str],
) -> None:
    hub, url = server
    ws = "github.com/acme/api"
    device_id, secret = hub.add_device("ana", "laptop", reads=(ws,), pushes=(ws,))
    body = json.dumps({"workspace": ws, "query": "quokka"}).encode()
    assert post(url, "/v1/search", secret, body)[0] == 200
    assert hub.revoke(device_id)
    code, answer = post(url, "/v1/search", secret, body)
    assert code == 401 and secret not in json.dumps(answer)
    with hub.pool.connection() as conn:
        stored = conn.execute("SELECT token_hash FROM devices").fetchone()
    assert stored is not None and secret.encode() not in bytes(stored[0])
    assert all(secret not in str(row) for row in hub.devices())


def test_a_server_that_does_not_answer_costs_the_recall_its_wait_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listener that never answers: the local answer comes, and says so."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    try:
        home = machine(tmp_path, "ana", monkeypatch)
        use(home, monkeypatch)
        workspace = repo(home, "api", REMOTE)
        dsh.write_session(
            home / ".dsh", workspace, [[dsh.user(1, "zanzibar notes")]], session_id="local-1"
        )
        port = silent.getsockname()[1]
        run(
            "team",
            "join",
            f"http://127.0.0.1:{port}",
            "--share",
            workspace,
            "--wait-ms",
            "200",
            stdin="some-token\n",
        )
        run("index")
        with Huiyi() as hy:
            out = hy.recall(CallerContext(workspace, None)).history("zanzibar").text
        assert "local-1" in out
        assert "the team server did not answer within 200 ms: local results only" in out
    finally:
        silent.close()


def test_a_local_search_slower_than_the_wait_still_says_the_server_did_not_answer() -> None:
    """The request's own timeout is the wait: when the local search takes longer, the note is
    the same as when the request is still out, not an error."""
    from huiyi.recall.team import TeamAsk
    from huiyi.teamclient import TeamConfig

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    try:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        ask = TeamAsk(TeamConfig(url, "some-token"), "github.com/acme/api", 0.05)
        ask.start("zanzibar", 5)
        assert ask._thread is not None
        ask._thread.join(5.0)  # a slow local search: the request has timed out by now
        assert ask.result() == (
            [],
            "the team server did not answer within 50 ms: local results only",
        )
    finally:
        silent.close()


def test_plain_http_beyond_loopback_is_refused_without_the_flag() -> None:
    with pytest.raises(UsageError, match="refusing plain HTTP"):
        check_listen("0.0.0.0", tls=False, insecure_http=False)
    check_listen("0.0.0.0", tls=True, insecure_http=False)
    check_listen("127.0.0.1", tls=False, insecure_http=False)


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:acme/api.git",
        "ssh://git@github.com/acme/api",
        "https://github.com/acme/api",
        "https://ana:pw@GitHub.com/acme/api.git/",
        "ssh://git@github.com:22/acme/api.git",
    ],
)
def test_every_spelling_of_a_remote_names_one_workspace(url: str) -> None:
    assert normalise_remote(url) == "github.com/acme/api"


def test_a_workspace_without_a_remote_is_named_for_its_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUIYI_MACHINE", "ana-laptop")
    path = repo(tmp_path, "scratch", None)
    assert workspace_name(path) == f"local:ana-laptop:{path}"
