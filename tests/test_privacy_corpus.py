"""Private markers and subagent parents measured on generated corpora, by half.

The marker corpus (`tests.corpora.privacy`) is split by a hash of each case into a tuning half
and a held half; the target is the same for both: no marked session exposed, no near miss
hidden. The subagent cases write a private parent and its subagents (depth 1 and 2) in each
harness's real format, index them in both orders, and check that no subagent shows up in a
list or a search. The figures are printed (`pytest -s`) and stated in docs/benchmarks.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from huiyi.cli.root import main
from huiyi.safety.privacy import has_marker
from tests.builders import claude as cc
from tests.builders import codex as cx
from tests.builders import dsh
from tests.corpora import HALVES, split
from tests.corpora.privacy import Subagent, markers, non_markers, subagent_cases

ROOT = Path(__file__).resolve().parent.parent
WORD = "quetzal"


def test_the_corpora_are_big_enough() -> None:
    assert len(markers()) >= 150
    assert len(non_markers()) >= 20
    assert len(subagent_cases()) >= 16
    for name, cases in split(markers(), lambda m: m.text).items():
        assert len(cases) >= 60, name


def marker_figures() -> dict[str, tuple[int, int]]:
    """(exposed, cases) per half."""
    return {
        name: (sum(not has_marker(m.text) for m in cases), len(cases))
        for name, cases in split(markers(), lambda m: m.text).items()
    }


@pytest.mark.parametrize("name", HALVES)
def test_no_marked_title_of_either_half_is_exposed(name: str) -> None:
    cases = split(markers(), lambda m: m.text)[name]
    exposed = [m for m in cases if not has_marker(m.text)]
    print(f"\n{name}: {len(exposed)} of {len(cases)} marked titles exposed")
    assert exposed == []


def test_near_misses_are_no_marker() -> None:
    marked = [text for text in non_markers() if has_marker(text)]
    assert marked == []


# -- subagents ---------------------------------------------------------------------------------

PARENT = "0199aaaa-1111-7222-8333-444455556666"
CHILD = "0199bbbb-1111-7222-8333-444455556666"
GRANDCHILD = "0199cccc-1111-7222-8333-444455556666"


def _repo(home: Path) -> str:
    path = home / "work"
    (path / ".git").mkdir(parents=True, exist_ok=True)
    return str(path)


def _claude_file(home: Path, cwd: str, name: str, session_id: str, text: str) -> None:
    """A transcript of sidechain records in a file not named `agent-*`."""
    project = home / ".claude" / "projects" / cc.encode_cwd(cwd)
    project.mkdir(parents=True, exist_ok=True)
    records = cc.complete(
        [cc.user(text), cc.assistant(f"{WORD}: done")],
        session_id=session_id,
        cwd=cwd,
        first=0,
        sidechain=True,
    )
    (project / f"{name}.jsonl").write_bytes(cc.lines(records))


def _codex_child(home: Path, cwd: str, session_id: str, parent: str, depth: int) -> None:
    path = cx.rollout_path(home / ".codex", session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    source = {"subagent": {"thread_spawn": {"parent_thread_id": parent, "depth": depth}}}
    records = [
        cx.session_meta(session_id, cwd, source=source),
        *cx.prompt(f"{WORD}: look at the payroll rows"),
        *cx.assistant_message(f"{WORD}: 3 rows"),
    ]
    path.write_bytes(cx.lines(records))


def _writers(case: Subagent, home: Path, cwd: str) -> list[tuple[str, object]]:
    """(session id as listed, a function writing its log), parent first."""
    if case.harness == "dsh":

        def d(sid: str, **header: object) -> object:
            batch = [dsh.user(1, f"{WORD} notes"), dsh.assistant(2, f"{WORD} ok")]
            if not header:
                batch.append(dsh.title(3, case.marker))
            return lambda: dsh.write_session(home / ".dsh", cwd, [batch], session_id=sid, **header)

        rows = [
            (f"session-{PARENT}", d(f"session-{PARENT}")),
            (f"session-{CHILD}", d(f"session-{CHILD}", parentSession=f"session-{PARENT}")),
            (
                f"session-{GRANDCHILD}",
                d(f"session-{GRANDCHILD}", parentSession=f"session-{CHILD}", delegationDepth=2),
            ),
        ]
    elif case.harness.startswith("claude"):
        claude = home / ".claude"

        def parent() -> None:
            cc.write_transcript(
                claude,
                cwd,
                [cc.summary(case.marker), cc.user(f"{WORD} payroll, ask a subagent")],
                session_id=PARENT,
            )

        if case.harness == "claude-sidechain":
            rows = [
                (PARENT, parent),
                (CHILD, lambda: _claude_file(home, cwd, CHILD, PARENT, f"{WORD} rows")),
                (GRANDCHILD, lambda: _claude_file(home, cwd, GRANDCHILD, CHILD, f"{WORD} sums")),
            ]
        else:

            def agent(agent_id: str) -> object:
                return lambda: cc.write_transcript(
                    claude,
                    cwd,
                    [cc.user(f"{WORD} rows of {agent_id}"), cc.assistant(f"{WORD}: ok")],
                    session_id=PARENT,
                    agent_id=agent_id,
                )

            rows = [(PARENT, parent), ("agent-a1", agent("a1")), ("agent-a2", agent("a2"))]
    else:

        def root() -> None:
            cx.write_rollout(
                home / ".codex",
                cwd,
                [cx.prompt(f"{case.marker} {WORD} payroll")],
                session_id=PARENT,
            )

        rows = [
            (PARENT, root),
            (CHILD, lambda: _codex_child(home, cwd, CHILD, PARENT, 1)),
            (GRANDCHILD, lambda: _codex_child(home, cwd, GRANDCHILD, CHILD, 2)),
        ]
    return rows[: case.depth + 1]


def _shown() -> set[str]:
    runner = CliRunner()
    rows = json.loads(
        runner.invoke(main, ["sessions", "--all", "--json", "--limit", "1000"]).output
    )
    hits = json.loads(
        runner.invoke(main, ["search", WORD, "--all", "--json", "--limit", "100"]).output
    )
    return {s["id"] for s in rows} | {h["session_id"] for h in hits}


def exposed_subagents(case: Subagent, home: Path) -> list[str]:
    """The sessions of a private family that `huiyi sessions --all` or `huiyi search` shows."""
    cwd = _repo(home)
    rows = _writers(case, home, cwd)
    order = rows if case.parent_first else list(reversed(rows))
    for _, write in order:
        write()  # type: ignore[operator]
        assert CliRunner().invoke(main, ["index"]).exit_code == 0
    shown = _shown()
    return [sid for sid, _ in rows if sid in shown]


@pytest.mark.parametrize(
    "case",
    subagent_cases(),
    ids=[
        f"{c.half}-{c.harness}-{'parent' if c.parent_first else 'child'}-first-{c.depth}"
        for c in subagent_cases()
    ],
)
def test_no_session_of_a_private_family_is_exposed(case: Subagent, isolated_home: Path) -> None:
    assert exposed_subagents(case, isolated_home) == []


@pytest.mark.parametrize("harness", ["dsh", "claude-sidechain", "claude-agent-file", "codex"])
def test_without_a_marker_every_session_of_the_family_is_shown(
    harness: str, isolated_home: Path
) -> None:
    # the check above is not vacuous: without a marker, the same logs show every session
    case = Subagent(harness, True, "payroll review", 2)
    rows = _writers(case, isolated_home, _repo(isolated_home))
    for _, write in rows:
        write()  # type: ignore[operator]
    assert CliRunner().invoke(main, ["index"]).exit_code == 0
    assert _shown() >= {sid for sid, _ in rows}


def test_the_readme_states_the_marker_figures() -> None:
    text = re.sub(r"\s+", " ", (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8"))
    for name, (exposed, total) in marker_figures().items():
        claim = f"{exposed} of {total} generated marked titles ({name} half)"
        assert claim in text, f"docs/benchmarks.md should say {claim!r}"


def test_the_brackets_are_every_bracket_unicode_knows() -> None:
    import unicodedata

    from huiyi.safety.privacy import CLOSE_BRACKETS, OPEN_BRACKETS

    def of(category: str) -> set[str]:
        return {chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == category}

    assert set(OPEN_BRACKETS) == of("Ps") | set("<«‹")
    assert set(CLOSE_BRACKETS) == of("Pe") | set(">»›")
