"""Claude Code's `Elicitation` command: answers an MCP server's question without a person.

    python answer_elicitation.py LOG_PATH accept|decline|cancel

Claude Code runs it when an MCP server sends `elicitation/create` (configured under
`hooks.Elicitation` in settings.json). It appends the JSON Claude Code gave it on stdin to
LOG_PATH (one object a line: `mcp_server_name`, `message`, `requested_schema`, ...) and answers
with the action. Standard library only.
"""

from __future__ import annotations

import json
import sys


def main(log_path: str, action: str) -> int:
    asked = json.load(sys.stdin)
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(json.dumps(asked, ensure_ascii=False) + "\n")
    answer = {"hookSpecificOutput": {"hookEventName": "Elicitation", "action": action}}
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
