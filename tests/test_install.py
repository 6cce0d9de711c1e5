"""`huiyi install dsh|claude-code|codex`: each harness's config gets huiyi's MCP entry and hooks
where the harness reads them, the person's own entries and comments stay byte for byte, a
second run changes nothing, every changed file is backed up, `--dry-run` shows a diff and
writes nothing, `--uninstall` takes back exactly what was added, and a file that does not
parse is refused (exit 2) with nothing written."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from click.testing import CliRunner, Result
from ruamel.yaml import YAML

from huiyi.cli.root import main
from huiyi.harnesses.codex.install import trust_hash
from huiyi.install.common import BACKUPS_KEPT, backups_of

CLAUDE_EVENTS = ["SessionStart", "UserPromptSubmit", "PreCompact", "Stop"]
DSH_EVENTS = ["SessionStart", "UserPromptSubmit", "Stop"]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root (backups included) and its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def backups(path: Path) -> list[Path]:
    """The backups `huiyi install` kept of `path`, under HUIYI_HOME."""
    return backups_of(Path(os.environ["HUIYI_HOME"]) / "backups", path)


def huiyi_hooks(hooks: dict[str, Any], harness: str) -> dict[str, str]:
    """event -> the command of huiyi's hook there."""
    found = {}
    for event, groups in hooks.items():
        for group in groups:
            for hook in group["hooks"]:
                if f" hook {harness} " in hook["command"] + " ":
                    found[event] = hook["command"]
    return found


def runs_this_huiyi(command: str, harness: str, event: str, home: Path) -> None:
    """The hook command line sets HUIYI_HOME and runs this Python's huiyi."""
    words = shlex.split(command)
    assert words[0] == f"HUIYI_HOME={home / '.huiyi'}"
    assert words[-6:] == [sys.executable, "-m", "huiyi", "hook", harness, event]


# -- Claude Code ---------------------------------------------------------------------------

PERSON_STATE = {
    "numStartups": 12,
    "projects": {"/home/ana/api": {"allowedTools": []}},
    "mcpServers": {"mine": {"type": "stdio", "command": "my-server", "args": [], "env": {}}},
}
PERSON_SETTINGS = {
    "model": "opus",
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "x"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}],
    },
}


def write_json(path: Path, data: object, indent: int = 2) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent) + "\n")
    return path.read_bytes()


def test_claude_code_gets_the_server_and_four_hooks_in_a_fresh_home(isolated_home: Path) -> None:
    result = run("install", "claude-code")
    assert result.exit_code == 0, result.output

    state = json.loads((isolated_home / ".claude.json").read_text())
    assert state["mcpServers"]["huiyi"] == {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "huiyi", "mcp"],
        "env": {"HUIYI_HOME": str(isolated_home / ".huiyi")},
    }
    settings = json.loads((isolated_home / ".claude" / "settings.json").read_text())
    hooks = huiyi_hooks(settings["hooks"], "claude-code")
    assert list(hooks) == CLAUDE_EVENTS
    for event, command in hooks.items():
        runs_this_huiyi(command, "claude-code", event, isolated_home)
    assert f"created    {isolated_home / '.claude.json'}" in result.output


def test_claude_code_keeps_the_persons_entries_and_uninstall_restores_the_bytes(
    isolated_home: Path,
) -> None:
    state_path = isolated_home / ".claude.json"
    settings_path = isolated_home / ".claude" / "settings.json"
    state_before = write_json(state_path, PERSON_STATE)
    settings_before = write_json(settings_path, PERSON_SETTINGS, indent=4)

    assert run("install", "claude-code").exit_code == 0
    state = json.loads(state_path.read_text())
    assert list(state) == ["numStartups", "projects", "mcpServers"]  # key order kept
    assert list(state["mcpServers"]) == ["mine", "huiyi"]
    settings = json.loads(settings_path.read_text())
    assert settings_path.read_text().startswith('{\n    "model"')  # the person's indentation
    assert settings["hooks"]["PreToolUse"] == PERSON_SETTINGS["hooks"]["PreToolUse"]
    assert settings["hooks"]["SessionStart"][0] == PERSON_SETTINGS["hooks"]["SessionStart"][0]
    assert len(settings["hooks"]["SessionStart"]) == 2
    assert [p.read_bytes() for p in backups(settings_path)] == [settings_before]
    assert [p.read_bytes() for p in backups(state_path)] == [state_before]

    result = run("install", "claude-code", "--uninstall")
    assert result.exit_code == 0, result.output
    assert state_path.read_bytes() == state_before
    assert settings_path.read_bytes() == settings_before


def test_a_second_install_changes_nothing_and_backs_up_nothing(isolated_home: Path) -> None:
    write_json(isolated_home / ".claude" / "settings.json", PERSON_SETTINGS)
    for harness in ("claude-code", "codex", "dsh"):
        assert run("install", harness).exit_code == 0
    before = snapshot(isolated_home)

    files = {"claude-code": 3, "codex": 2, "dsh": 2}  # Claude Code's third: commands/recall.md
    for harness, count in files.items():
        again = run("install", harness)
        assert again.exit_code == 0
        assert "created" not in again.output and "updated" not in again.output
        assert again.output.count("unchanged") == count
    assert snapshot(isolated_home) == before


def test_claude_config_dir_is_where_claude_code_keeps_both_files(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_dir = isolated_home / "elsewhere"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    assert run("install", "claude-code").exit_code == 0
    assert "huiyi" in json.loads((config_dir / ".claude.json").read_text())["mcpServers"]
    assert json.loads((config_dir / "settings.json").read_text())["hooks"]
    assert not (isolated_home / ".claude.json").exists()


def test_dry_run_shows_a_unified_diff_and_writes_nothing(isolated_home: Path) -> None:
    write_json(isolated_home / ".claude" / "settings.json", PERSON_SETTINGS)
    before = snapshot(isolated_home)
    for harness in ("claude-code", "codex", "dsh"):
        result = run("install", harness, "--dry-run")
        assert result.exit_code == 0
        assert "+++ " in result.output and "\n+" in result.output
        assert "(--dry-run: nothing was written)" in result.output
    out = run("install", "claude-code", "--dry-run").output
    assert f"--- {isolated_home / '.claude' / 'settings.json'}" in out
    assert "--- /dev/null" in out  # ~/.claude.json does not exist yet
    assert f'+      "command": {json.dumps(sys.executable)},' in out.splitlines()
    assert snapshot(isolated_home) == before


@pytest.mark.parametrize(
    ("harness", "path", "bad"),
    [
        ("claude-code", ".claude/settings.json", '{"hooks": {'),
        ("claude-code", ".claude.json", "[1, 2]"),
        ("codex", ".codex/config.toml", "model = \n[features\n"),
        ("codex", ".codex/hooks.json", "{'hooks': 1}"),
        ("dsh", ".dsh/cordis.patch.yml", "- insert: [\n  - id: x\n"),
        ("dsh", ".dsh/cordis.patch.yml", "insert: {id: x}\n"),
    ],
)
def test_a_file_that_does_not_parse_is_refused_and_nothing_is_written(
    isolated_home: Path, harness: str, path: str, bad: str
) -> None:
    target = isolated_home / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(bad)
    before = snapshot(isolated_home)

    result = CliRunner().invoke(main, ["install", harness])
    assert result.exit_code == 2
    assert str(target) in result.output and "othing was written" in result.output
    assert snapshot(isolated_home) == before


def test_bad_options_are_usage_errors(isolated_home: Path) -> None:
    assert run("install", "codex", "--profile", "work").exit_code == 2
    assert run("install", "dsh", "--profile", "../up").exit_code == 2
    assert run("install", "codex", "--env", "NOEQUALS").exit_code == 2
    assert run("install", "vim").exit_code == 2
    assert snapshot(isolated_home) == {}


# -- Codex ---------------------------------------------------------------------------------

PERSON_TOML = """\
# my Codex settings
model = "gpt-5.5"   # the one I pay for
approval_policy = "never"

# a server of my own
[mcp_servers.docs]
command = "docs-mcp"
args = ["--stdio"]

[features]
plugins = false
"""


def test_codex_gets_server_grace_approval_hooks_and_their_trust(isolated_home: Path) -> None:
    config_path = isolated_home / ".codex" / "config.toml"
    config_path.parent.mkdir()
    config_path.write_text(PERSON_TOML)

    assert run("install", "codex").exit_code == 0
    text = config_path.read_text()
    for line in PERSON_TOML.splitlines():
        assert line in text  # every line of the person's, comments included
    doc = tomlkit.parse(text).unwrap()
    assert doc["mcp_optional_startup_grace_ms"] == 5000
    assert doc["mcp_servers"]["docs"] == {"command": "docs-mcp", "args": ["--stdio"]}
    server = doc["mcp_servers"]["huiyi"]
    assert [server["command"], *server["args"]] == [sys.executable, "-m", "huiyi", "mcp"]
    assert server["env"] == {"HUIYI_HOME": str(isolated_home / ".huiyi")}
    assert server["startup_timeout_sec"] == 20
    assert server["tools"]["memory"] == {"approval_mode": "approve"}

    hooks_path = isolated_home / ".codex" / "hooks.json"
    hooks = json.loads(hooks_path.read_text())["hooks"]
    assert list(huiyi_hooks(hooks, "codex")) == CLAUDE_EVENTS
    state = doc["hooks"]["state"]
    for event in CLAUDE_EVENTS:
        label = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit"}.get(
            event, event.lower().replace("compact", "_compact")
        )
        hook = hooks[event][0]["hooks"][0]
        assert state[f"{hooks_path}:{label}:0:0"] == {"trusted_hash": trust_hash(event, hook)}

    assert run("install", "codex", "--uninstall").exit_code == 0
    assert config_path.read_text() == PERSON_TOML
    assert not hooks_path.exists()


def test_codex_trust_hash_is_the_one_codex_computes() -> None:
    """Codex hashes the event's snake_case label and the one normalised handler (timeout
    filled in, `async` false), as compact JSON with sorted keys; the real client runs hooks
    trusted this way (tests/clients/test_install_in_clients.py)."""
    hook = {"type": "command", "command": "echo hi", "timeout": 10}
    identity = (
        b'{"event_name":"session_start","hooks":[{"async":false,"command":"echo hi",'
        b'"timeout":10,"type":"command"}]}'
    )
    assert trust_hash("SessionStart", hook) == "sha256:" + hashlib.sha256(identity).hexdigest()
    no_timeout = trust_hash("PreCompact", {"command": "x"})
    assert no_timeout == trust_hash("PreCompact", {"command": "x", "timeout": 600})
    assert no_timeout != trust_hash("Stop", {"command": "x"})


def test_codex_keeps_a_grace_the_person_set_and_refuses_a_hand_written_huiyi_table(
    isolated_home: Path,
) -> None:
    config_path = isolated_home / ".codex" / "config.toml"
    config_path.parent.mkdir()
    config_path.write_text("mcp_optional_startup_grace_ms = 9000\n")
    assert run("install", "codex").exit_code == 0
    assert tomlkit.parse(config_path.read_text())["mcp_optional_startup_grace_ms"] == 9000
    assert run("install", "codex", "--uninstall").exit_code == 0
    assert config_path.read_text() == "mcp_optional_startup_grace_ms = 9000\n"

    config_path.write_text('[mcp_servers.huiyi]\ncommand = "huiyi"\nargs = ["mcp"]\n')
    result = CliRunner().invoke(main, ["install", "codex"])
    assert result.exit_code == 2 and "[mcp_servers.huiyi]" in result.output
    assert config_path.read_text().startswith("[mcp_servers.huiyi]\ncommand")


def test_codex_trust_follows_huiyis_hooks_after_the_persons_own(isolated_home: Path) -> None:
    hooks_path = isolated_home / ".codex" / "hooks.json"
    own = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}]}}
    before = write_json(hooks_path, own)
    assert run("install", "codex").exit_code == 0
    hooks = json.loads(hooks_path.read_text())["hooks"]
    assert hooks["Stop"][0] == own["hooks"]["Stop"][0]
    state = tomlkit.parse((isolated_home / ".codex" / "config.toml").read_text())["hooks"]
    assert f"{hooks_path}:stop:1:0" in state["state"]  # huiyi's group is the second
    assert f"{hooks_path}:stop:0:0" not in state["state"]  # the person's keeps its own trust

    assert run("install", "codex", "--uninstall").exit_code == 0
    assert hooks_path.read_bytes() == before


# -- DSH -----------------------------------------------------------------------------------

PERSON_PATCH = """\
# my DSH overlay
- insert:
    # a server I use every day
    - id: my-docs
      name: '@deepseek-ai/dsh-mcp-client'
      config: { serverName: docs,  transport: stdio, command: docs-mcp }   # flow style, mine
- id: provider
  config:
    model: deepseek-chat
"""


def _yaml(path: Path) -> Any:
    return YAML().load(path.read_text())


def test_dsh_gets_the_mcp_row_and_the_hooks_bridge_row(isolated_home: Path) -> None:
    patch = isolated_home / ".dsh" / "cordis.patch.yml"
    patch.parent.mkdir()
    patch.write_text(PERSON_PATCH)

    assert run("install", "dsh").exit_code == 0
    text = patch.read_text()
    assert text.startswith(PERSON_PATCH)  # the person's bytes, then huiyi's block
    ops = _yaml(patch)
    assert ops[0]["insert"][0]["id"] == "my-docs" and ops[1]["id"] == "provider"
    mcp_row, hooks_row, command_row = ops[2]["insert"]
    assert mcp_row["id"] == "memory-huiyi"
    assert mcp_row["name"] == "@deepseek-ai/dsh-mcp-client"
    config = mcp_row["config"]
    assert (config["serverName"], config["transport"]) == ("huiyi", "stdio")
    assert [config["command"], *config["args"]] == [
        sys.executable,
        "-m",
        "huiyi",
        "mcp",
        "--hold-service",
    ]
    assert dict(config["env"]) == {
        "HUIYI_HOME": str(isolated_home / ".huiyi"),
        "DSH_HOME": str(isolated_home / ".dsh"),
    }
    assert (str(config["cwd"].tag), config["cwd"].value) == (
        "tag:yaml.org,2002:js",
        "process.cwd()",
    )
    assert hooks_row["name"] == "@deepseek-ai/dsh-hooks-claude-code"
    hooks_file = Path(hooks_row["config"]["configPath"])
    assert hooks_file == isolated_home / ".dsh" / "huiyi-hooks.json"
    hooks = huiyi_hooks(json.loads(hooks_file.read_text())["hooks"], "dsh")
    assert list(hooks) == DSH_EVENTS
    for event, command in hooks.items():
        runs_this_huiyi(
            command.replace(f"DSH_HOME={isolated_home / '.dsh'} ", ""), "dsh", event, isolated_home
        )
        assert f"DSH_HOME={isolated_home / '.dsh'} " in command
    # `/recall`: the plugin file shipped in the package, told how to start this huiyi
    assert command_row["id"] == "command-huiyi-recall"
    plugin = Path(command_row["name"])
    assert plugin.is_absolute() and plugin.is_file() and plugin.suffix == ".mjs"
    assert "ctx.commands.register" in plugin.read_text()
    recall = command_row["config"]
    assert [recall["command"], *recall["args"]] == [sys.executable, "-m", "huiyi"]
    assert dict(recall["env"]) == dict(config["env"])

    assert run("install", "dsh", "--uninstall").exit_code == 0
    assert patch.read_text() == PERSON_PATCH
    assert not hooks_file.exists()


def test_dsh_profile_layer_starts_from_an_empty_list_and_returns_to_it(
    isolated_home: Path,
) -> None:
    profile = isolated_home / ".dsh" / "profiles" / "work"
    profile.mkdir(parents=True)
    (profile / "cordis.patch.yml").write_text("# work profile\n[]\n")

    assert run("install", "dsh", "--profile", "work").exit_code == 0
    ops = _yaml(profile / "cordis.patch.yml")
    ids = [row["id"] for row in ops[0]["insert"]]
    assert ids == ["memory-huiyi", "hooks-huiyi", "command-huiyi-recall"]
    assert ops[0]["insert"][1]["config"]["configPath"] == str(profile / "huiyi-hooks.json")
    assert not (isolated_home / ".dsh" / "cordis.patch.yml").exists()

    assert run("install", "dsh", "--profile", "work", "--uninstall").exit_code == 0
    assert (profile / "cordis.patch.yml").read_text() == "# work profile\n[]\n"


def test_dsh_refuses_a_row_with_huiyis_id_it_did_not_write(isolated_home: Path) -> None:
    patch = isolated_home / ".dsh" / "cordis.patch.yml"
    patch.parent.mkdir()
    patch.write_text("- insert:\n    - id: memory-huiyi\n      name: x\n")
    result = CliRunner().invoke(main, ["install", "dsh"])
    assert result.exit_code == 2
    assert "line 2" in result.output and "memory-huiyi" in result.output


def test_uninstall_removes_the_files_huiyi_created(isolated_home: Path) -> None:
    for harness in ("claude-code", "codex"):
        assert run("install", harness).exit_code == 0
        assert run("install", harness, "--uninstall").exit_code == 0
    left = {p for p in snapshot(isolated_home) if ".huiyi-backup-" not in p}
    assert left == set()


def test_claude_code_gets_a_recall_command_that_passes_the_words_on_stdin(
    isolated_home: Path,
) -> None:
    assert run("install", "claude-code").exit_code == 0
    command = (isolated_home / ".claude" / "commands" / "recall.md").read_text()
    assert "disable-model-invocation: true" in command  # a person's command, not the model's
    block = command.split("```!\n", 1)[1].split("```", 1)[0].splitlines()
    words = shlex.split(block[0].split("<<", 1)[0])
    assert words[0] == f"HUIYI_HOME={isolated_home / '.huiyi'}"
    assert words[-5:] == [sys.executable, "-m", "huiyi", "recall", "--stdin"]
    # the typed words sit alone inside a quoted here-document: no shell expansion reaches them
    assert block[0].endswith("<<'END_OF_RECALL_WORDS'")
    assert block[1:] == ["$ARGUMENTS", "END_OF_RECALL_WORDS"]


def test_a_persons_own_recall_command_is_never_overwritten_or_removed(
    isolated_home: Path,
) -> None:
    mine = isolated_home / ".claude" / "commands" / "recall.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("Recall what I said about $ARGUMENTS\n")
    assert run("install", "claude-code").exit_code == 0
    assert mine.read_text() == "Recall what I said about $ARGUMENTS\n"
    assert run("install", "claude-code", "--uninstall").exit_code == 0
    assert mine.read_text() == "Recall what I said about $ARGUMENTS\n"


def test_uninstall_with_nothing_installed_changes_nothing(isolated_home: Path) -> None:
    write_json(isolated_home / ".claude" / "settings.json", PERSON_SETTINGS)
    before = snapshot(isolated_home)
    for harness in ("claude-code", "codex", "dsh"):
        assert run("install", harness, "--uninstall").exit_code == 0
    assert snapshot(isolated_home) == before


# -- doctor --------------------------------------------------------------------------------


def test_doctor_shows_what_is_installed_where(isolated_home: Path) -> None:
    run("install", "codex")
    run("install", "dsh", "--profile", "work")
    report = json.loads(run("doctor", "--json").output)["installed"]
    assert report["codex"]["mcp"] is True
    assert report["codex"]["hooks"] == CLAUDE_EVENTS and report["codex"]["hooks_complete"]
    assert report["codex"]["mcp_path"] == str(isolated_home / ".codex" / "config.toml")
    assert report["claude-code"]["mcp"] is False and report["claude-code"]["hooks"] == []
    dsh = report["dsh"]
    assert dsh["mcp_path"] == str(isolated_home / ".dsh" / "profiles" / "work" / "cordis.patch.yml")
    assert dsh["hooks"] == DSH_EVENTS

    # a person's edit that moves huiyi's Codex hook makes its trust stale: doctor says so
    hooks_path = isolated_home / ".codex" / "hooks.json"
    data = json.loads(hooks_path.read_text())
    data["hooks"]["Stop"].insert(0, {"hooks": [{"type": "command", "command": "mine"}]})
    hooks_path.write_text(json.dumps(data))
    notes = json.loads(run("doctor", "--json").output)["installed"]["codex"]["notes"]
    assert notes and "stop" in notes[0] and "huiyi install codex" in notes[0]
    text = run("doctor").output
    assert "codex        MCP yes" in text and "claude-code  MCP no" in text


def test_backups_stay_under_huiyi_home_and_do_not_pile_up(isolated_home: Path) -> None:
    settings_path = isolated_home / ".claude" / "settings.json"
    write_json(settings_path, PERSON_SETTINGS)
    for _ in range(BACKUPS_KEPT + 3):
        assert run("install", "claude-code").exit_code == 0
        assert run("install", "claude-code", "--uninstall").exit_code == 0
    kept = backups(settings_path)
    assert 1 <= len(kept) <= BACKUPS_KEPT
    assert all((isolated_home / ".huiyi" / "backups") in p.parents for p in kept)
    assert not list(settings_path.parent.glob("*.huiyi-backup-*"))  # none beside the file
    assert all(p.stat().st_mode & 0o077 == 0 for p in kept)  # a harness's tokens stay its owner's
