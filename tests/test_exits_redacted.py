"""Two exits that print what the user wrote rather than what the index holds: the diff of
`huiyi install --dry-run` (the harness's own config files, which may hold the user's keys) and
the line a hook prints for a bad setting (whose value may be a pasted token). Both pass the
same redaction as every other exit."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from huiyi.cli.root import main
from huiyi.transports.hook_command import run

ANTHROPIC = "sk-ant-api03-" + "Zq7Lm2Xw9Rt4Yp6Vn8Bc3Df5Gh1Jk0" * 2 + "AA"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_install_dry_run_diffs_mask_the_keys_in_the_users_config(isolated_home: Path) -> None:
    claude = isolated_home / ".claude"
    claude.mkdir(parents=True)
    settings = {"env": {"ANTHROPIC_API_KEY": ANTHROPIC, "GITHUB_TOKEN": GITHUB}, "model": "opus"}
    (claude / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    (isolated_home / ".claude.json").write_text(
        json.dumps({"primaryApiKey": ANTHROPIC, "mcpServers": {}}, indent=2) + "\n"
    )
    codex = isolated_home / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text(
        f'model = "o3"\n\n[shell_environment_policy.set]\nGH_TOKEN = "{GITHUB}"\n'
    )
    runner = CliRunner()
    for harness in ("claude-code", "codex"):
        result = runner.invoke(main, ["install", harness, "--dry-run"])
        assert result.exit_code == 0, result.output
        assert "(--dry-run: nothing was written)" in result.output
        assert ANTHROPIC[:24] not in result.output
        assert GITHUB[:12] not in result.output
    shown = runner.invoke(main, ["install", "claude-code", "--dry-run"]).output
    assert '"ANTHROPIC_API_KEY": "[REDACTED:' in shown  # the line is shown, its value masked


@pytest.mark.parametrize("value", [GITHUB, ANTHROPIC, f"400{GITHUB}"])
def test_a_hooks_bad_setting_line_masks_a_token_in_the_value(
    value: str,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HUIYI_MAX_INJECT_CHARS", value)
    out = io.StringIO()
    assert run("claude-code", "UserPromptSubmit", io.BytesIO(b"{}"), out) == 0
    err = capsys.readouterr().err
    assert "HUIYI_MAX_INJECT_CHARS" in err  # the line says what is wrong
    assert value[:12] not in err and value[-12:] not in err
    assert out.getvalue() == ""
