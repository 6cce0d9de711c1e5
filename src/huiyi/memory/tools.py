"""The `memory` and `memory_search` tools as plain functions returning the reply for the model.

The MCP server (and anything else that talks to a model) calls these; they never raise for a
mistake the model made: bad arguments come back as a short "refused: ..." reply that is not
`ok`, like any other refusal, and the server marks it as a failed call. Refusals are counted
per session (`session_key`); from the third one on, the reply tells the model to stop
retrying and answer the user, so a model cannot loop on a full or poisoned store.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from huiyi.errors import BusyError, EmbeddingError, UsageError
from huiyi.memory.config import parse_target
from huiyi.memory.facade import Memory
from huiyi.memory.ops import Operation, Outcome
from huiyi.memory.render import shown_entry

#: Refused attempts in one session after which the model is told to stop.
STOP_AFTER = 3
MAX_SEARCH_LIMIT = 20
_MAX_SESSIONS = 1000

STOP_MESSAGE = (
    "This is refused attempt {n} in this session: stop retrying memory writes now and answer "
    "the user (tell them what could not be saved if it matters)."
)

_refusals: OrderedDict[str, int] = OrderedDict()


@dataclass(frozen=True, slots=True)
class Reply:
    """What a memory tool answers: the text for the model, and whether the call did its job
    (a refusal is not ok)."""

    text: str
    ok: bool = True


def count_refusal(session: str) -> int:
    """Count a refused attempt for `session`; returns the session's total."""
    total = _refusals.pop(session, 0) + 1
    _refusals[session] = total
    while len(_refusals) > _MAX_SESSIONS:
        _refusals.popitem(last=False)
    return total


def _field(item: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in item:
            return item[name]
    return None


def _text_or_none(value: Any, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise UsageError(f"{name} must be a string")


def parse_operations(
    action: str | None,
    target: str | None,
    content: str | None,
    old_text: str | None,
    operations: Sequence[Mapping[str, Any]] | None,
) -> list[Operation]:
    """Tool arguments to operations, or a UsageError that says what to pass instead."""
    if operations:
        if action:
            raise UsageError("pass either action (one change) or operations (a batch), not both")
        parsed: list[Operation] = []
        for index, item in enumerate(operations, 1):
            if not isinstance(item, Mapping):
                raise UsageError(f"operation {index} must be an object with action and target")
            try:
                parsed.append(
                    Operation(
                        str(_field(item, "action") or "").strip().lower(),
                        parse_target(_field(item, "target") or target),
                        _text_or_none(_field(item, "content"), "content"),
                        _text_or_none(_field(item, "old_text", "oldText"), "old_text"),
                    )
                )
            except UsageError as exc:
                raise UsageError(f"operation {index}: {exc}") from None
        return parsed
    if not action:
        raise UsageError(
            "pass action (add, replace or remove) with target, or operations=[...] for a batch"
        )
    return [Operation(action.strip().lower(), parse_target(target), content, old_text)]


def memory_tool(
    mem: Memory,
    action: str | None,
    target: str | None,
    content: str | None,
    old_text: str | None,
    operations: list[dict[str, Any]] | None,
    session_key: str | None,
) -> Reply:
    """Run one `memory` tool call and return the reply for the model."""
    try:
        parsed = parse_operations(action, target, content, old_text, operations)
        for op in parsed:
            if op.target.value == "memory" and not mem.workspace:
                raise UsageError(
                    "no workspace is known for this session, so only target 'user' is available"
                )
        outcome = mem.apply(parsed)
    except UsageError as exc:
        outcome = Outcome(False, f"refused: {exc}", reason="bad_argument")
    except BusyError as exc:
        outcome = Outcome(False, f"not saved: {exc}", reason="busy")
    if outcome.ok:
        return Reply(outcome.message)
    session = session_key if session_key is not None else f"memory-object-{id(mem)}"
    refused = count_refusal(session)
    if refused >= STOP_AFTER:
        return Reply(f"{outcome.message}\n{STOP_MESSAGE.format(n=refused)}", ok=False)
    return Reply(outcome.message, ok=False)


def _indent(text: str) -> str:
    return text.replace("\n", "\n   ")


def memory_search_tool(mem: Memory, query: str, limit: int = 5) -> Reply:
    """Run one `memory_search` tool call and return the reply for the model."""
    if not isinstance(query, str) or not query.strip():
        return Reply(
            "refused: memory_search needs a query (words or a phrase from the entry)", ok=False
        )
    try:
        limit = max(1, min(int(limit), MAX_SEARCH_LIMIT))
    except (TypeError, ValueError):
        return Reply(
            f"refused: limit must be a whole number from 1 to {MAX_SEARCH_LIMIT}", ok=False
        )
    # a hand edit among the hits is shown as the detector sees it; a detector that cannot run
    # leaves the rules and the verdicts kept so far to decide
    with contextlib.suppress(EmbeddingError):
        mem.judge()
    verdicts = mem.verdicts()
    result = mem.search(query, limit)
    scope = f"{result.searched} entries ({result.archived} archived)"
    if not result.hits:
        return Reply(f'memory_search "{query}": no entry matches among {scope}.')
    lines = [f'memory_search "{query}": {len(result.hits)} best of {scope}.']
    for number, hit in enumerate(result.hits, 1):
        tag = f"{hit.target.value}, archived" if hit.archived else hit.target.value
        lines.append(f"{number}. [{tag}] {_indent(shown_entry(hit.text, verdicts))}")
    if any(hit.archived for hit in result.hits):
        lines.append(
            "Archived entries are not in your prompt; if one still holds, add its exact text "
            'again with memory(action="add") to bring it back.'
        )
    return Reply("\n".join(lines))
