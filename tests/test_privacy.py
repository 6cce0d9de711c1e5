"""Private sessions stay out of everything: every marker a person would type, every way a
session comes to be private (its title, a later title, its first message, its parent), in
whatever order its logs are indexed, through every surface (`huiyi search`, `huiyi sessions
--all`, `huiyi show` and the agent's recall tools)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from huiyi import Huiyi, NotFoundError
from huiyi.cli.root import main
from huiyi.recall.scope import CallerContext
from huiyi.safety.privacy import has_marker, is_private_title
from tests.builders import claude as cc
from tests.builders import codex as cx
from tests.builders import damage, dsh

WORD = "zanzibar"  #: every session of these tests says it, so every search could find each one
VISIBLE = "session-aaaaaaaa-1111-4222-8333-444455556666"
SECRET = "session-bbbbbbbb-1111-4222-8333-444455556666"
CHILD = "session-cccccccc-1111-4222-8333-444455556666"
GRANDCHILD = "session-dddddddd-1111-4222-8333-444455556666"
CODEX_SECRET = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
CLAUDE_PARENT = "11111111-2222-4333-8444-555566667777"

MARKERS = [
    "[私密]",
    "[no-recall]",
    "[不参与回忆]",
    "[no recall]",
    "【私密】",
    "(私密)",
    "[私密 ]",
    "[ 私密 ]",
    "［私密］",
    "（私密）",
    "［no-recall］",
    "【不参与回忆】",
    "[NO-RECALL]",
    "[No Recall]",
    "[no_recall]",
    "[norecall]",
    "[私\u200b密]",  # a zero-width space inside
    "[no-re\u00adcall]",  # a soft hyphen inside
    "[不参与\u200d回忆]",  # a zero-width joiner inside
    "\ufeff[no-recall\u2060]",  # a byte-order mark and a word joiner around
]
NOT_MARKERS = ["私密", "no-recall", "[private]", "[私人]", "[no-recalls]", "[no recall please]"]


# -- helpers ---------------------------------------------------------------------------------


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def index() -> None:
    assert run("index").exit_code == 0


def repo(home: Path, name: str = "acme") -> str:
    path = home / name
    (path / ".git").mkdir(parents=True, exist_ok=True)
    return str(path)


def dsh_session(
    home: Path, cwd: str, session_id: str, *, title: str | None = None, **header: object
) -> Path:
    batch: list[dsh.Line] = [dsh.user(1, f"{WORD} notes of {session_id}")]
    if title is not None:
        batch.append(dsh.title(2, title))
    batch.append(dsh.assistant(3, f"noted, {WORD}"))
    return dsh.write_session(home / ".dsh", cwd, [batch], session_id=session_id, **header)


def searched() -> set[str]:
    hits = json.loads(run("search", WORD, "--all", "--json", "--limit", "100").output)
    return {h["session_id"] for h in hits}


def listed() -> set[str]:
    rows = json.loads(run("sessions", "--all", "--json", "--limit", "1000").output)
    return {s["id"] for s in rows}


def recall_sees(cwd: str, session_id: str) -> dict[str, bool]:
    """What the agent's recall tools give away about `session_id`, tool by tool."""
    seen: dict[str, bool] = {}
    with Huiyi() as hy:
        recall = hy.recall(CallerContext(cwd))
        seen["history"] = session_id in recall.history(WORD, limit=20).text
        listing = recall.session_list(limit=100, include_subagents=True).text
        seen["session_list"] = session_id in listing
        for name, call in (
            ("session_read", lambda: recall.session_read(session_id)),
            ("expand", lambda: recall.expand(seq=1, session_id=session_id)),
        ):
            try:
                call()
            except NotFoundError:
                seen[name] = False
            else:
                seen[name] = True
    return seen


def assert_hidden(cwd: str, *session_ids: str) -> None:
    found, shown = searched(), listed()
    for session_id in session_ids:
        assert session_id not in found, f"{session_id} found by `huiyi search`"
        assert session_id not in shown, f"{session_id} listed by `huiyi sessions --all`"
        result = CliRunner().invoke(main, ["show", session_id])
        assert result.exit_code == 3, f"`huiyi show {session_id}` showed it"
        assert recall_sees(cwd, session_id) == {
            "history": False,
            "session_list": False,
            "session_read": False,
            "expand": False,
        }


def assert_visible(cwd: str, session_id: str, *, subagent: bool = False) -> None:
    """The same surfaces do show a session that is not private (the checks are not vacuous)."""
    assert session_id in searched()
    assert session_id in listed()
    assert run("show", session_id).exit_code == 0
    seen = recall_sees(cwd, session_id)
    # the agent's history search leaves subagents out unless asked for
    assert seen == {
        "history": not subagent,
        "session_list": True,
        "session_read": True,
        "expand": True,
    }


# -- the marker ------------------------------------------------------------------------------


@pytest.mark.parametrize("marker", MARKERS)
def test_every_marker_variant_is_recognised(marker: str) -> None:
    assert has_marker(f"deploy plans {marker}")
    assert has_marker(f"{marker}deploy plans")
    assert is_private_title(marker)


@pytest.mark.parametrize("text", NOT_MARKERS)
def test_words_without_brackets_or_other_words_are_no_marker(text: str) -> None:
    assert not has_marker(f"deploy plans {text}")


@pytest.mark.parametrize("marker", MARKERS)
def test_a_marked_title_hides_the_session_everywhere(isolated_home: Path, marker: str) -> None:
    cwd = repo(isolated_home)
    dsh_session(isolated_home, cwd, VISIBLE, title="deploy plans")
    dsh_session(isolated_home, cwd, SECRET, title=f"deploy plans {marker}")
    index()
    assert_visible(cwd, VISIBLE)
    assert_hidden(cwd, SECRET)


@pytest.mark.parametrize("marker", MARKERS)
def test_a_marked_first_message_hides_a_session_without_a_title(
    isolated_home: Path, marker: str
) -> None:
    cwd = repo(isolated_home)
    dsh_session(isolated_home, cwd, VISIBLE, title="deploy plans")
    cx.write_rollout(
        isolated_home / ".codex",
        cwd,
        [
            cx.env_context(cwd),
            cx.prompt(f"{marker} where is the {WORD} deploy key?"),
            cx.assistant_message(f"In the vault, {WORD} folder."),
        ],
        session_id=CODEX_SECRET,
    )
    index()
    assert_visible(cwd, VISIBLE)
    assert_hidden(cwd, CODEX_SECRET)


def test_a_marker_in_a_later_message_or_without_brackets_hides_nothing(
    isolated_home: Path,
) -> None:
    cwd = repo(isolated_home)
    cx.write_rollout(
        isolated_home / ".codex",
        cwd,
        [
            cx.prompt(f"what does the 私密 flag of {WORD} do?"),
            cx.assistant_message("It hides a session."),
            cx.prompt("and [no-recall]?"),
        ],
        session_id=CODEX_SECRET,
    )
    index()
    assert_visible(cwd, CODEX_SECRET)


# -- once private, always private ------------------------------------------------------------


def test_a_private_title_replaced_within_one_read_keeps_the_session_private(
    isolated_home: Path,
) -> None:
    cwd = repo(isolated_home)
    dsh.write_session(
        isolated_home / ".dsh",
        cwd,
        [
            [dsh.user(1, f"{WORD} salaries"), dsh.title(2, "[私密] salaries")],
            [dsh.assistant(3, f"ok {WORD}"), dsh.title(4, "Budget review")],
        ],
        session_id=SECRET,
    )
    index()
    assert_hidden(cwd, SECRET)


def test_a_private_title_replaced_in_a_later_read_keeps_the_session_private(
    isolated_home: Path,
) -> None:
    cwd = repo(isolated_home)
    claude = isolated_home / ".claude"
    cc.write_transcript(claude, cwd, [cc.summary("Salaries 【私密】"), cc.user(f"{WORD} salaries")])
    index()
    assert_hidden(cwd, cc.SESSION_ID)
    cc.write_transcript(
        claude, cwd, [cc.summary("Budget review"), cc.assistant(f"ok {WORD}")], append=True
    )
    index()
    with Huiyi() as hy:
        assert hy.conn.execute("SELECT title FROM sessions").fetchone()[0] == "Budget review"
    assert_hidden(cwd, cc.SESSION_ID)


def test_a_claude_private_title_replaced_within_one_read_keeps_the_session_private(
    isolated_home: Path,
) -> None:
    cwd = repo(isolated_home)
    cc.write_transcript(
        isolated_home / ".claude",
        cwd,
        [cc.summary("Salaries [私密]"), cc.user(f"{WORD} salaries"), cc.summary("Budget review")],
    )
    index()
    assert_hidden(cwd, cc.SESSION_ID)


def test_a_rewritten_log_without_the_marker_does_not_unhide_the_session(
    isolated_home: Path,
) -> None:
    cwd = repo(isolated_home)
    path = dsh_session(isolated_home, cwd, SECRET, title="[no-recall] salaries")
    index()
    assert_hidden(cwd, SECRET)
    path.unlink()
    dsh_session(isolated_home, cwd, SECRET, title="salaries")  # read again from the start
    index()
    assert_hidden(cwd, SECRET)


def test_a_session_turns_private_in_a_later_incremental_read(isolated_home: Path) -> None:
    cwd = repo(isolated_home)
    path = dsh_session(isolated_home, cwd, SECRET, title="salaries")
    dsh_session(isolated_home, cwd, CHILD, parentSession=SECRET, origin="subagent")
    index()
    assert_visible(cwd, SECRET)
    assert_visible(cwd, CHILD, subagent=True)

    dsh.append_batch(path, [dsh.title(4, "salaries (私密)")])
    index()
    assert_hidden(cwd, SECRET, CHILD)


def test_forget_removes_a_private_session_and_nothing_unmarks_one(isolated_home: Path) -> None:
    cwd = repo(isolated_home)
    dsh_session(isolated_home, cwd, SECRET, title="[私密] salaries")
    index()
    assert "forgot 1 session" in run("forget", SECRET).output
    with Huiyi() as hy:
        assert hy.conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0


# -- privacy follows a session to its subagents ------------------------------------------------


@pytest.mark.parametrize("parent_first", [True, False], ids=["parent-first", "subagent-first"])
@pytest.mark.parametrize("old_style", [False, True], ids=["subagents-folder", "agent-file"])
def test_a_claude_subagent_of_a_private_session_is_private(
    isolated_home: Path, parent_first: bool, old_style: bool
) -> None:
    cwd = repo(isolated_home)
    claude = isolated_home / ".claude"

    def parent() -> None:
        cc.write_transcript(
            claude,
            cwd,
            [cc.summary("Salaries [no-recall]"), cc.user(f"{WORD} salaries, ask a subagent")],
            session_id=CLAUDE_PARENT,
        )

    def subagent() -> None:
        cc.write_transcript(
            claude,
            cwd,
            [cc.user(f"Summarise the {WORD} salaries"), cc.assistant(f"{WORD}: 3 rows")],
            session_id=CLAUDE_PARENT,
            agent_id="a1b2",
            old_style=old_style,
        )

    dsh_session(isolated_home, cwd, VISIBLE, title="deploy plans")
    first, second = (parent, subagent) if parent_first else (subagent, parent)
    first()
    index()
    second()
    index()
    assert_visible(cwd, VISIBLE)
    assert_hidden(cwd, CLAUDE_PARENT, "agent-a1b2")


def test_a_claude_subagent_of_a_session_marked_by_its_first_message_is_private(
    isolated_home: Path,
) -> None:
    cwd = repo(isolated_home)
    claude = isolated_home / ".claude"
    cc.write_transcript(
        claude,
        cwd,
        [cc.user(f"Summarise the {WORD} salaries"), cc.assistant(f"{WORD}: 3 rows")],
        session_id=CLAUDE_PARENT,
        agent_id="a1b2",
    )
    cc.write_transcript(
        claude, cwd, [cc.user(f"(私密) {WORD} salaries, ask a subagent")], session_id=CLAUDE_PARENT
    )
    index()
    assert_hidden(cwd, CLAUDE_PARENT, "agent-a1b2")


@pytest.mark.parametrize(
    "order",
    [
        (SECRET, CHILD, GRANDCHILD),
        (GRANDCHILD, CHILD, SECRET),
        (CHILD, GRANDCHILD, SECRET),
        (GRANDCHILD, SECRET, CHILD),
    ],
    ids=["parent-first", "grandchild-first", "child-first", "parent-last-but-one"],
)
def test_dsh_children_of_a_private_session_are_private_at_any_depth_in_any_order(
    isolated_home: Path, order: tuple[str, ...]
) -> None:
    cwd = repo(isolated_home)
    writers = {
        SECRET: lambda: dsh_session(isolated_home, cwd, SECRET, title="【私密】 salaries"),
        CHILD: lambda: dsh_session(
            isolated_home, cwd, CHILD, parentSession=SECRET, origin="subagent"
        ),
        GRANDCHILD: lambda: dsh_session(
            isolated_home, cwd, GRANDCHILD, parentSession=CHILD, delegationDepth=2
        ),
    }
    dsh_session(isolated_home, cwd, VISIBLE, title="deploy plans")
    for session_id in order:
        writers[session_id]()
        index()
    assert_visible(cwd, VISIBLE)
    assert_hidden(cwd, SECRET, CHILD, GRANDCHILD)


def test_a_child_of_a_visible_session_stays_visible(isolated_home: Path) -> None:
    cwd = repo(isolated_home)
    dsh_session(isolated_home, cwd, CHILD, parentSession=VISIBLE, origin="subagent")
    dsh_session(isolated_home, cwd, VISIBLE, title="deploy plans")
    index()
    assert_visible(cwd, VISIBLE)
    assert_visible(cwd, CHILD, subagent=True)


# -- a repair keeps what the logs alone no longer say ------------------------------------------


def test_a_rebuilt_index_keeps_sessions_private_that_turned_private_earlier(
    isolated_home: Path,
) -> None:
    cwd = repo(isolated_home)
    claude = isolated_home / ".claude"
    cc.write_transcript(claude, cwd, [cc.summary("Salaries [私密]"), cc.user(f"{WORD} salaries")])
    index()
    cc.write_transcript(
        claude, cwd, [cc.summary("Budget review"), cc.assistant(f"ok {WORD}")], append=True
    )
    dsh_session(isolated_home, cwd, VISIBLE, title="deploy plans")
    for n in range(12):  # enough pages after the private session's for a truncation to spare it
        words = " ".join(f"filler{n}x{i}" for i in range(300))
        dsh.write_session(
            isolated_home / ".dsh",
            cwd,
            [[dsh.user(1, words), dsh.assistant(2, words)]],
            session_id=f"session-{n:08d}-1111-4222-8333-444455556666",
        )
    index()
    with Huiyi() as hy:
        db_path = hy.settings.db_path
    damage.truncate(db_path)

    out = run("doctor", "--repair").output
    assert "rebuilt 14 sessions from their logs" in out
    assert_visible(cwd, VISIBLE)
    assert_hidden(cwd, cc.SESSION_ID)  # its log alone, read at once, ends on a plain title


def test_private_sessions_are_never_embedded(isolated_home: Path) -> None:
    """With an `openai:` embedder, embedding would send their text off the machine."""
    cwd = repo(isolated_home)
    dsh.write_session(
        isolated_home / ".dsh",
        cwd,
        [[dsh.user(1, f"{WORD} salaries"), dsh.title(2, "Salaries [私密]")]],
        session_id=SECRET,
    )
    dsh.write_session(
        isolated_home / ".dsh", cwd, [[dsh.user(1, f"{WORD} roadmap")]], session_id=VISIBLE
    )
    with Huiyi() as hy:
        hy.index()
        assert hy.embed() == 1
        assert hy.coverage(all_workspaces=True) == (1, 1)
