"""Codex CLI: rollouts under `$CODEX_HOME/sessions/`, hooks and the MCP row in `config.toml`
(docs/formats/codex.md)."""

from huiyi.harnesses.base import Adapter

ADAPTER = Adapter("codex", "codex", "Codex", __name__)
