"""`huiyi agents-md sync`: a marked, bounded, redacted memory digest in `$DSH_HOME/AGENTS.md`
(the user store) or a project's `AGENTS.local.md` (that workspace's store), and not one byte
outside its markers changed, whatever the person wrote around it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from huiyi.cli.root import main
from huiyi.harnesses.dsh.digest import BLOCK, MAX_DIGEST_CHARS
from huiyi.install.common import backups_of
from huiyi.memory.config import Target, store_paths
from huiyi.workspace import resolve

BEGIN, END = BLOCK.begin, BLOCK.end


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def remember(*entries: str, target: str = "user", workspace: Path | None = None) -> None:
    for entry in entries:
        args = ["memory", "add", entry, "--target", target]
        if workspace is not None:
            args += ["--workspace", str(workspace)]
        assert run(*args).exit_code == 0


def block_of(text: str) -> str:
    return text[text.index(BEGIN) : text.index(END) + len(END)]


def test_sync_writes_the_user_store_into_dsh_home_agents_md(isolated_home: Path) -> None:
    remember("The user prefers answers in Chinese.", "The user deploys with `make ship`.")
    result = run("agents-md", "sync")
    assert result.exit_code == 0, result.output

    path = isolated_home / ".dsh" / "AGENTS.md"
    text = path.read_text()
    assert text.startswith(BEGIN + "\n") and text.endswith(END + "\n")
    assert "USER PROFILE (who the user is)" in text
    assert "The user prefers answers in Chinese.\n§\nThe user deploys with `make ship`." in text

    again = run("agents-md", "sync")
    assert again.output.startswith("unchanged")
    assert path.read_text() == text


def test_project_sync_writes_that_workspaces_notes_not_the_user_profile(
    isolated_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "acme"
    project.mkdir()
    remember("Tests run with `pytest -q`.", target="memory", workspace=project)
    remember("The user is Ana.")
    assert run("agents-md", "sync", "--project", str(project)).exit_code == 0
    text = (project / "AGENTS.local.md").read_text()
    assert "Tests run with `pytest -q`." in text and "MEMORY (your notes" in text
    assert "Ana" not in text


def test_the_persons_text_around_the_block_stays_byte_for_byte(isolated_home: Path) -> None:
    path = isolated_home / ".dsh" / "AGENTS.md"
    remember("First fact.")
    assert run("agents-md", "sync").exit_code == 0
    synced = path.read_text()
    # the person writes above and below, right up against the markers, without blank lines
    head = "# My rules\nAlways run the linter.\nright above the marker:"
    tail = "right below the marker\n\n## More\n- keep PRs small"  # no final newline
    path.write_text(f"{head}\n{block_of(synced)}\n{tail}")

    remember("Second fact.")
    assert run("agents-md", "sync").exit_code == 0
    text = path.read_text()
    assert text.startswith(f"{head}\n{BEGIN}\n") and text.endswith(f"{END}\n{tail}")
    assert "First fact.\n§\nSecond fact." in block_of(text)

    assert run("agents-md", "sync", "--remove").exit_code == 0
    assert path.read_text() == f"{head}\n{tail}"


def test_crlf_files_keep_crlf_and_their_bytes(isolated_home: Path) -> None:
    path = isolated_home / ".dsh" / "AGENTS.md"
    path.parent.mkdir()
    original = b"# Rules\r\nUse tabs.\r\n"
    path.write_bytes(original)
    remember("A fact.")
    assert run("agents-md", "sync").exit_code == 0
    data = path.read_bytes()
    assert data.startswith(original)
    added = data[len(original) :]
    assert added.count(b"\r\n") == added.count(b"\n") > 3  # every line ends in CRLF
    assert run("agents-md", "sync").output.startswith("unchanged")
    assert run("agents-md", "sync", "--remove").exit_code == 0
    assert path.read_bytes() == original


@pytest.mark.parametrize(
    "damaged",
    [
        f"# Rules\n{BEGIN}\nold digest\n",  # the end marker is gone
        f"# Rules\nold digest\n{END}\n",  # the begin marker is gone
        f"{END}\nx\n{BEGIN}\n",  # in the wrong order
        f"{BEGIN}\na\n{END}\n{BEGIN}\nb\n{END}\n",  # two blocks
        f"# Rules\nsee {BEGIN} here\nx\n{END}\n",  # a marker inside a line of text
    ],
)
def test_a_damaged_marker_is_refused_and_the_file_kept(isolated_home: Path, damaged: str) -> None:
    path = isolated_home / ".dsh" / "AGENTS.md"
    path.parent.mkdir()
    path.write_text(damaged)
    remember("A fact.")
    for args in (["agents-md", "sync"], ["agents-md", "sync", "--remove"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, result.output
        assert str(path) in result.output and "Nothing was written" in result.output
        assert path.read_text() == damaged
    assert not list(path.parent.glob("AGENTS.md.huiyi-backup-*"))


def test_the_digest_is_bounded_by_whole_entries(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUIYI_MEMORY_USER_LIMIT", "100000")
    entries = [f"Fact number {n}: " + "details " * 40 for n in range(40)]
    remember(*entries)
    assert run("agents-md", "sync").exit_code == 0
    block = block_of((isolated_home / ".dsh" / "AGENTS.md").read_text())
    body = block[len(BEGIN) + 1 : -len(END) - 1]
    intro, digest = body.split("\n", 1)
    assert intro.startswith("Notes huiyi keeps about the user")
    assert len(digest) <= MAX_DIGEST_CHARS < sum(map(len, entries))
    kept = [e for e in entries if e.strip() in digest]
    assert kept == entries[: len(kept)] and 0 < len(kept) < len(entries)
    assert f"({len(entries) - len(kept)} more entries left out" in digest


def test_secrets_in_a_hand_edited_store_never_reach_the_file(isolated_home: Path) -> None:
    paths = store_paths(isolated_home / ".huiyi", Target.USER, None)
    paths.main.parent.mkdir(parents=True, exist_ok=True)
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    paths.main.write_text(f"The user is Ana.\n§\nThe user's GitHub token is {token}\n")
    assert run("agents-md", "sync").exit_code == 0
    text = (isolated_home / ".dsh" / "AGENTS.md").read_text()
    assert "The user is Ana." in text
    assert token not in text and ("[REDACTED:" in text or "[BLOCKED:" in text)


def test_remove_deletes_a_file_that_held_only_the_block_and_sync_backs_up(
    isolated_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    remember("Builds use bazel.", target="memory", workspace=project)
    assert run("agents-md", "sync", "--project", str(project)).exit_code == 0
    path = project / "AGENTS.local.md"
    first = path.read_bytes()
    remember("Lint with ruff.", target="memory", workspace=project)
    out = run("agents-md", "sync", "--project", str(project)).output
    assert not list(project.glob("AGENTS.local.md.huiyi-backup-*"))  # the project gets none
    (backup,) = backups_of(isolated_home / ".huiyi" / "backups", path)
    assert backup.read_bytes() == first and str(backup) in out
    assert resolve(project) == str(project)
    assert run("agents-md", "sync", "--project", str(project), "--remove").exit_code == 0
    assert not path.exists()


def test_dry_run_shows_the_diff_and_writes_nothing(isolated_home: Path) -> None:
    remember("A fact.")
    out = run("agents-md", "sync", "--dry-run").output
    assert f"+{BEGIN}" in out and "+A fact." in out and "nothing was written" in out
    assert not (isolated_home / ".dsh" / "AGENTS.md").exists()
