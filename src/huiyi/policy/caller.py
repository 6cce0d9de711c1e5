"""Finding the caller of an MCP tool: which workspace, and which session, is asking.

The MCP server is one long-lived process that several agent sessions may call. Some clients
say who is calling in the call's `_meta`, some offer MCP roots, and DSH says nothing at all.
So each call is attributed by the first rule that matches, in this order:

1. `forced`: `--workspace DIR` or `HUIYI_WORKSPACE` set by whoever configured the server. It
   wins for the workspace; a session found by the rules below still supplies the session id,
   but only when that session belongs to the forced workspace.
2. what the call's `_meta` names, asked of each harness (`by_meta`): Claude Code's tool-use id
   (`claude-tool-use`), Codex's session id (`codex-session`);
3. a pending call in the logs of the server's own project (`by_own_log`): Claude Code builds
   that send no tool-use id (`claude-log`);
4. `mcp-roots`: the first `file://` root the client offers (asked for only now: a round trip);
5. a pending call in any recent log (`by_any_log`): DSH, which says nothing (`dsh-log`);
6. `cwd`: the server's working directory.

Each harness's own package knows its logs (`huiyi.harnesses.<name>.caller`); this module only
keeps the order and parses no log itself. Which rule bound a call is logged at debug level
(logger `huiyi.caller`) and kept in `CallerContext.how`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from huiyi.config import Settings
from huiyi.harnesses import adapters
from huiyi.harnesses.pending import LookIn, ToolCall, workspace
from huiyi.model import CallerContext
from huiyi.workspace import workspace_of

__all__ = ["HOW_CWD", "HOW_ROOTS", "CallerFinder", "workspace_from_roots"]

HOW_ROOTS = "mcp-roots"
HOW_CWD = "cwd"
#: How long a call waits for Claude Code to write the `tool_use` line that made it.
CLAUDE_WAIT_SECONDS = 1.5

log = logging.getLogger("huiyi.caller")

#: a harness's caller rule: (the call, its `_meta`, where to look) -> the caller, or None
Rule = Callable[[ToolCall, Mapping[str, Any], LookIn], CallerContext | None]


def _rules(name: str) -> list[Rule]:
    """Every harness's rule of that name (`by_meta`, `by_own_log`, `by_any_log`), in the
    registry's order; a harness without one has none."""
    rules = []
    for adapter in adapters():
        module = adapter.part("caller")
        rule = getattr(module, name, None)
        if rule is not None:
            rules.append(rule)
    return rules


def workspace_from_roots(roots: Sequence[str]) -> str | None:
    """The workspace of the first `file://` root URI, if any."""
    for uri in roots:
        parsed = urlparse(str(uri))
        if parsed.scheme != "file":
            continue
        from urllib.request import url2pathname  # only when a client offers roots

        path = url2pathname(unquote(parsed.path))
        found = workspace(path)
        if found:
            return found
    return None


@dataclass(slots=True)
class CallerFinder:
    """Applies the rules in order for one server process (see the module docstring).

    `forced` is the `--workspace` / `HUIYI_WORKSPACE` directory and `forced_how` which of the
    two it came from; `cwd` is the server's working directory. The rules are also offered one
    by one (`by_client`, `by_roots`, `by_logs`, `settle`), so a server can ask the client for
    its roots only when the rules before them found nothing.
    """

    server: str
    dsh_home: Path
    claude_dirs: Sequence[Path]
    cwd: str
    forced: str | None = None
    forced_how: str = "HUIYI_WORKSPACE"
    codex_home: Path | None = None
    claude_wait: float = CLAUDE_WAIT_SECONDS
    _forced_workspace: str | None = field(default=None, init=False)

    @classmethod
    def for_settings(
        cls,
        settings: Settings,
        *,
        cwd: str,
        server: str = "huiyi",
        forced: str | None = None,
        forced_how: str = "HUIYI_WORKSPACE",
    ) -> CallerFinder:
        """The finder for a server started in `cwd` over the harness homes `settings` name."""
        return cls(
            server=server,
            dsh_home=settings.dsh_home,
            claude_dirs=settings.claude_dirs,
            cwd=cwd,
            forced=forced,
            forced_how=forced_how,
            codex_home=settings.codex_home,
        )

    def __post_init__(self) -> None:
        if self.forced is not None:
            path = os.path.abspath(os.path.expanduser(self.forced))
            self._forced_workspace = workspace_of(path)

    @property
    def look(self) -> LookIn:
        """Where this server's callers' logs are."""
        return LookIn(self.cwd, self.dsh_home, self.claude_dirs, self.codex_home, self.claude_wait)

    def _first(
        self,
        rule: str,
        tool: str,
        arguments: Mapping[str, Any] | None,
        meta: Mapping[str, Any] | None,
    ) -> CallerContext | None:
        call = ToolCall(self.server, tool, arguments)
        look = self.look
        for found in (each(call, meta or {}, look) for each in _rules(rule)):
            if found is not None:
                return found
        return None

    def by_client(
        self, tool: str, arguments: Mapping[str, Any] | None, meta: Mapping[str, Any] | None
    ) -> CallerContext | None:
        """Rules 2-3: what the client says in `_meta`, else a call pending in the logs of the
        server's own project."""
        return self._first("by_meta", tool, arguments, meta) or self._first(
            "by_own_log", tool, arguments, meta
        )

    def by_roots(self, roots: Sequence[str]) -> CallerContext | None:
        """Rule 4: the client's first file root."""
        found = workspace_from_roots(roots)
        return None if found is None else CallerContext(found, None, HOW_ROOTS)

    def by_logs(self, tool: str, arguments: Mapping[str, Any] | None) -> CallerContext | None:
        """Rule 5: the session whose log ends with this very call pending."""
        return self._first("by_any_log", tool, arguments, None)

    def reply_of(
        self, meta: Mapping[str, Any] | None, caller: CallerContext
    ) -> tuple[str, float] | None:
        """The reply a call belongs to, as its harness names replies (for ask-before-recall),
        with how long an answer for it lasts; None when no harness can tell."""
        look = self.look
        for adapter in adapters():
            rule = getattr(adapter.part("caller"), "reply_of", None)
            named: tuple[str, float] | None = (
                rule(meta or {}, caller, look) if rule is not None else None
            )
            if named is not None:
                return named
        return None

    def settle(self, found: CallerContext | None) -> CallerContext:
        """Rules 1 and 7 around what the others found: a forced workspace keeps only a session
        found inside it; nothing found means the server's working directory."""
        if self._forced_workspace is not None:
            if found is not None and found.session_id and found.workspace == self._forced_workspace:
                found = CallerContext(
                    self._forced_workspace, found.session_id, f"{self.forced_how}+{found.how}"
                )
            else:
                found = CallerContext(self._forced_workspace, None, self.forced_how)
        elif found is None:
            found = CallerContext(workspace(self.cwd), None, HOW_CWD)
        log.debug(
            "caller bound by %s: workspace %s, session %s",
            found.how,
            found.workspace,
            found.session_id,
        )
        return found

    def resolve(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        roots: Sequence[str] = (),
        meta: Mapping[str, Any] | None = None,
    ) -> CallerContext:
        """All rules in order."""
        found = (
            self.by_client(tool, arguments, meta)
            or self.by_roots(roots)
            or self.by_logs(tool, arguments)
        )
        return self.settle(found)
