"""A huiyi client's side of the team server: what `huiyi team join` keeps, and the requests.

`HUIYI_HOME/team.json` (owner-only, written atomically) holds the server's URL, this device's
token, the workspaces shared (`huiyi team share`; none by default), how long a local answer
waits for the server, and which sessions were pushed up to which seq. Requests are JSON over
HTTPS (plain HTTP only to a loopback address), with a timeout; an error names the server,
never the token.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from huiyi.errors import HuiyiError, UsageError
from huiyi.loopback import is_loopback

__all__ = ["TEAM_FILE", "TeamConfig", "TeamError", "load", "post", "save"]

TEAM_FILE = "team.json"
#: how long a tool's answer waits for the server, by default (a hook waits at most 300 ms)
WAIT_MS = 1_000
HOOK_WAIT_MS = 300
#: how long a push waits for the server
PUSH_SECONDS = 60.0


class TeamError(HuiyiError):
    """The team server could not be reached, or refused a request (its message says why)."""


class TeamTimeout(TeamError):
    """The team server took the connection but sent no answer in the time given."""


@dataclass(frozen=True)
class TeamConfig:
    url: str
    token: str = field(repr=False)
    shared: tuple[str, ...] = ()
    wait_ms: int = WAIT_MS
    ca_file: str | None = None
    #: session id -> the last seq pushed
    pushed: dict[str, int] = field(default_factory=dict)

    def with_(self, **changes: Any) -> TeamConfig:
        return replace(self, **changes)


def check_url(url: str) -> str:
    """`url` without a trailing slash; https, or http to a loopback address only."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise UsageError(f"the team server's URL must be https://HOST[:PORT]: {url!r}")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise UsageError(
            f"refusing plain HTTP to {parts.hostname}: the token would cross the network "
            "unencrypted; use the server's https:// URL"
        )
    return url.rstrip("/")


def load(home: Path) -> TeamConfig | None:
    """The join file, or None when this home joined no team."""
    path = home / TEAM_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path} cannot be read ({exc}); run `huiyi team join` again") from None
    try:
        return TeamConfig(
            url=str(data["url"]),
            token=str(data["token"]),
            shared=tuple(str(w) for w in data.get("shared", [])),
            wait_ms=int(data.get("wait_ms", WAIT_MS)),
            ca_file=data.get("ca_file"),
            pushed={str(k): int(v) for k, v in data.get("pushed", {}).items()},
        )
    except (KeyError, TypeError, ValueError):
        raise UsageError(f"{path} is not a team file; run `huiyi team join` again") from None


def save(home: Path, config: TeamConfig) -> None:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = json.dumps(
        {
            "url": config.url,
            "token": config.token,
            "shared": list(config.shared),
            "wait_ms": config.wait_ms,
            "ca_file": config.ca_file,
            "pushed": config.pushed,
        },
        indent=1,
    )
    fd, temp = tempfile.mkstemp(dir=home, prefix=f".{TEAM_FILE}.")  # 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, home / TEAM_FILE)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def post(config: TeamConfig, path: str, payload: dict[str, Any], *, seconds: float) -> Any:
    """POST `payload` to the server; its JSON answer. `TeamError` when it cannot be reached in
    `seconds` or refuses (with the server's own message)."""
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(
        config.url + path,
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {config.token}", "Content-Type": "application/json"},
    )
    context = ssl.create_default_context(cafile=config.ca_file) if config.ca_file else None
    try:
        with urllib.request.urlopen(request, timeout=seconds, context=context) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read()).get("error", exc.reason)
        except (ValueError, AttributeError):
            message = exc.reason
        raise TeamError(f"the team server {config.url} refused: {message}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise TeamTimeout(f"the team server {config.url} did not answer in time") from None
        raise TeamError(f"the team server {config.url} did not answer ({reason})") from None
