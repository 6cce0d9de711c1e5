"""A small bundled history so a newcomer sees huiyi work on a machine with no agent logs.

Three DSH sessions and two Claude Code sessions, in Chinese and English, in the harnesses' real
on-disk formats, read by the real readers. They belong to the made-up workspace
`/demo/acme-api`; `huiyi forget --workspace /demo/acme-api` removes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the readers load only to index the demo, not to name its workspace
    from huiyi.sources.base import Reader

DEMO_WORKSPACE = "/demo/acme-api"
DATA = Path(__file__).with_name("data")


def demo_readers() -> list[Reader]:
    from huiyi.harnesses.claude_code.reader import ClaudeReader
    from huiyi.harnesses.dsh.reader import DshReader

    return [DshReader(DATA / "dsh"), ClaudeReader([DATA / "claude"])]
