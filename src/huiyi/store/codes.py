"""How an event's kind, role and surface are kept: small integers, read back as words.

As words they were a measurable share of an index (`'tool_result'`, `'assistant'`, `'current'`
on every row). Since migration m009 the `events` table keeps each as a code column (`kind_code`,
`role_code`, `surface_code`) and the word as a virtual generated column of the old name,
computed from the code: every query, trigger and reader goes on reading and filtering words, and
only the writers of events (ingestion, the salvage of a repair) hand in codes, through
`kind_code` and its siblings here. A word without a code is kept as itself (the code columns
have no type) and read back unchanged, so no reader's word is ever lost.

The numbering is frozen: m009's generated columns spell the same table, and a test reads every
word back through them.
"""

from __future__ import annotations

from collections.abc import Mapping

from huiyi.model import Kind, Surface

KIND_CODES: Mapping[str, int] = {
    Kind.USER: 0,
    Kind.ASSISTANT: 1,
    Kind.TOOL_CALL: 2,
    Kind.TOOL_RESULT: 3,
    Kind.SUMMARY: 4,
    Kind.TITLE: 5,
    Kind.OTHER: 6,
}
ROLE_CODES: Mapping[str, int] = {"user": 0, "assistant": 1, "tool": 2, "system": 3}
SURFACE_CODES: Mapping[str, int] = {Surface.CURRENT: 0, Surface.SHADOWED: 1, Surface.LOG_ONLY: 2}


def kind_code(kind: str) -> int | str:
    return KIND_CODES.get(kind, kind)


def role_code(role: str) -> int | str:
    return ROLE_CODES.get(role, role)


def surface_code(surface: str) -> int | str:
    return SURFACE_CODES.get(surface, surface)
