"""The first ten minutes: what a newcomer copies from the README works on a fresh clone with an
empty home, and what goes wrong says what to do next.

- `huiyi index` on a machine without agent logs indexes the bundled demo; the README's quick
  start commands, run from the clone (a workspace with no history), show the demo's hits and
  say so; a second run says the demo is indexed already; doctor and the Status view name it.
- `make run` installs what running needs, not the development tools.
- One rule and one message for a query's length; an unknown session names the command that
  lists them; a bad setting is its one line, without the usage banner; `huiyi show` and the page
  name an event's marks with the same words.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from huiyi import Huiyi
from huiyi.cli.root import main
from huiyi.config import Settings
from huiyi.demo import DATA, DEMO_WORKSPACE
from huiyi.model import COMPACTED_MARK, INJECTED_MARK
from huiyi.toolspec import QUERY_MAX
from huiyi.web.app import WebServer
from huiyi.web.words import TEXT
from tests.builders import dsh
from tests.web_world import Client

CHECKOUT = Path(__file__).resolve().parents[1]
README = CHECKOUT / "README.md"
#: the demo's session about rolling back a database migration, and its title
DEMO_SESSION = "session-0d3e5a10-7c41-4b6e-9a52-1f0e2d3c4b5a"
DEMO_TITLE = "数据库迁移回滚"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def clone(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh clone: a git checkout with no history of its own, the current directory."""
    path = isolated_home / "src" / "huiyi"
    (path / ".git").mkdir(parents=True)
    monkeypatch.chdir(path)
    monkeypatch.setenv("HUIYI_SERVICE", "off")
    return path


def quick_start(blocks: int | None = None) -> list[list[str]]:
    """The `huiyi search` and `huiyi recall` lines of the README's quick start, as typed (of
    its first `blocks` code blocks, else of all)."""
    section = README.read_text(encoding="utf-8").split("## Quick start", 1)[1].split("\n## ")[0]
    commands = []
    found = re.findall(r"^```sh\n(.*?)^```", section, flags=re.M | re.S)
    for line in "".join(found[:blocks]).splitlines():
        words = shlex.split(line, comments=True)
        if len(words) > 1 and words[0].endswith("huiyi") and words[1] in {"search", "recall"}:
            commands.append(words[1:])
    return commands


def test_the_readme_quick_start_shows_the_demo_from_a_fresh_clone(clone: Path) -> None:
    first = run("index")
    assert "bundled demo history" in first.output
    commands = quick_start()
    assert {c[0] for c in commands} == {"search", "recall"}, commands
    demo_ids = [p.parent.name for p in DATA.glob("dsh/sessions/*/*/session.jsonl")] + [
        p.stem for p in DATA.glob("claude/projects/*/*.jsonl")
    ]
    assert len(demo_ids) == 5
    for command in commands:
        result = run(*command)
        assert result.exit_code == 0, result.output
        assert any(sid in result.output for sid in demo_ids), (command, result.output)
        if "--all" not in command:
            assert f"bundled demo's ({DEMO_WORKSPACE})" in result.output


def test_what_index_prints_next_is_the_readme_quick_start(clone: Path) -> None:
    printed = run("index").output.split("Try", 1)[1]
    first = quick_start(blocks=2)  # the two commands, then the first ones a newcomer types
    assert first
    for command in first:
        assert " ".join(["huiyi", *command]) in printed


def test_the_demo_stands_in_only_while_the_index_holds_nothing_else(
    clone: Path, isolated_home: Path
) -> None:
    run("index")
    assert DEMO_TITLE in run("search", "回滚").output
    assert DEMO_TITLE in run("search", "回滚", "--workspace", str(clone.parent)).output
    assert DEMO_TITLE in run("search", "回滚", "--workspace", DEMO_WORKSPACE).output
    # real history arrives: each workspace shows its own, the demo no longer stands in
    elsewhere = isolated_home / "work" / "api"
    elsewhere.mkdir(parents=True)
    dsh.write_session(
        isolated_home / ".dsh",
        str(elsewhere),
        [[dsh.user(1, "回滚 the release branch to v1.2"), dsh.assistant(2, "rolled back")]],
    )
    run("index")
    here = run("search", "回滚")
    assert DEMO_TITLE not in here.output
    assert "bundled demo" not in here.output
    there = run("search", "回滚", "--workspace", str(elsewhere))
    assert "回滚 the release branch to v1.2" in there.output
    assert DEMO_TITLE not in there.output


def test_a_second_index_says_the_demo_is_indexed_already(clone: Path) -> None:
    run("index")
    again = run("index")
    assert again.exit_code == 0
    assert f"the bundled demo is indexed already (5 sessions in {DEMO_WORKSPACE})" in again.output
    assert "new events in" not in again.output  # no table of zeros
    assert "huiyi search 回滚" in again.output


def test_doctor_names_the_demo_and_counts_none_of_its_files_gone(clone: Path) -> None:
    run("index")
    run("index")  # a scan of the harnesses' own folders, which do not hold the demo's files
    out = run("doctor").output
    assert f"demo       the bundled demo history: 5 sessions in {DEMO_WORKSPACE}" in out
    assert f"huiyi forget --workspace {DEMO_WORKSPACE}" in out
    assert re.findall(r"\((\d+) gone from disk", out) == ["0", "0"]
    assert "(100%)" in out
    assert "embeds the rest" not in out  # nothing is left to embed


def test_doctor_says_index_embeds_the_rest_only_while_some_is_left(clone: Path) -> None:
    run("index", "--no-embed")
    out = run("doctor").output
    assert "0 of 17 messages embedded (0%)" in out
    assert "`huiyi index` embeds the rest" in out


def test_make_run_installs_what_running_needs_and_make_test_the_rest(tmp_path: Path) -> None:
    make = shutil.which("make")
    assert make is not None
    venv = tmp_path / "venv"

    def dry(target: str) -> str:
        done = subprocess.run(
            [make, "-n", "-C", str(CHECKOUT), f"VENV={venv}", target],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    run_steps = dry("run")
    assert "pip install --progress-bar on -e ." in run_steps
    assert "[dev]" not in run_steps
    assert "echo" in run_steps  # it says what it is doing before the long install
    assert f"{venv}/bin/huiyi index" in run_steps
    assert "'.[dev]'" in dry("lint")


# -- errors a user understands -------------------------------------------------------------


def test_a_long_query_gets_one_rule_and_one_message_in_search_and_recall(clone: Path) -> None:
    run("index")
    long = "回滚 " * 5_000
    for command in (["search", long], ["recall", long], ["search", long, "--layer", "lexical"]):
        result = run(*command)
        assert result.exit_code == 2
        assert f"query must be at most {QUERY_MAX} characters" in result.output
        assert "compound SELECT" not in result.output
    at_the_limit = ("回滚" * QUERY_MAX)[:QUERY_MAX]
    assert run("search", at_the_limit).exit_code == 0


@pytest.mark.parametrize(
    "command",
    [["show", "deadbeef"], ["recall", "--session", "nope"], ["forget", "deadbeef"]],
)
def test_an_unknown_session_names_the_command_that_lists_them(
    clone: Path, command: list[str]
) -> None:
    run("index")
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 3, result.output
    assert repr(command[-1]) in result.output
    assert "`huiyi sessions --all` lists the sessions" in result.output
    assert "no current session is known" not in result.output


@pytest.mark.parametrize(
    ("variable", "value"), [("HUIYI_TOOL_SECONDS", "999"), ("HUIYI_MAX_INJECT_CHARS", "ten")]
)
@pytest.mark.parametrize("command", [["sessions"], ["search", "回滚"], ["doctor"]])
def test_a_bad_setting_is_one_line_without_the_usage_banner(
    clone: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, command: list[str]
) -> None:
    monkeypatch.setenv(variable, value)
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {variable}"), result.output
    assert "Usage:" not in result.output


@pytest.fixture
def demo_page(clone: Path) -> Iterator[Client]:
    run("index")
    server = WebServer(Settings.from_env(), port=0, refresh=False)
    server.start()
    client = Client(server)
    client.enter()
    yield client
    server.stop()


def test_show_and_the_page_name_an_events_marks_with_the_same_words(
    clone: Path, demo_page: Client
) -> None:
    shown = run("show", DEMO_SESSION).output
    marks = set(re.findall(r"^#\d+ .*?\(([^)]+)\)$", shown, flags=re.M))
    assert marks == {COMPACTED_MARK, INJECTED_MARK}
    page = demo_page.get(f"/session/{DEMO_SESSION}").body
    badges = set(re.findall(r'<span class="badge[^"]*">([^<]+)</span>', page))
    assert {COMPACTED_MARK, INJECTED_MARK} <= badges
    assert TEXT["en"]["reader.compacted"] == COMPACTED_MARK
    assert TEXT["en"]["reader.injected"] == INJECTED_MARK


def test_the_status_view_names_the_demo(clone: Path, demo_page: Client) -> None:
    with Huiyi() as hy:
        assert hy.status()["demo"] == {
            "workspace": DEMO_WORKSPACE,
            "sessions": 5,
            "remove": f"huiyi forget --workspace {DEMO_WORKSPACE}",
        }
    page = demo_page.get("/status").body
    assert "The bundled demo history: 5 sessions in /demo/acme-api" in page
