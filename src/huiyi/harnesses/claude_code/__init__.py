"""Claude Code: transcripts under `~/.claude/projects/`, hooks in `settings.json`, the MCP row
in `~/.claude.json` (docs/formats/claude-code.md)."""

from huiyi.harnesses.base import Adapter

ADAPTER = Adapter("claude-code", "claude", "Claude Code", __name__)
