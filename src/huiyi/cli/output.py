"""What `huiyi search` prints, as text, without click: the hits, the layers that ran and the
notes, or the hits as JSON; every title, snippet and note through the safety exit first.

Shared by the click command (`cli.search`, `cli.common.print_hits`) and `cli.quick_search`,
which serves the common forms without importing click, so both print the same text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from huiyi.safety.exit import redact
from huiyi.text.dates import when

__all__ = ["hit_json", "hit_lines", "json_text", "safe", "search_text"]


def safe(text: str) -> str:
    """Redact secrets from anything the index gives back before it reaches the terminal."""
    return redact(text).text


def json_text(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def hit_lines(hits: Sequence[Mapping[str, Any]], no_match: str = "no matches") -> list[str]:
    """Search hits (`Hit.as_dict`), two lines each: where, then the snippet; `no_match` when
    there are none."""
    if not hits:
        return [no_match]
    lines = []
    for n, hit in enumerate(hits, 1):
        lines.append(
            f"[{n}] {when(hit['time'])}  {hit['source']}  {safe(hit['title'])}  "
            f"({hit['session_id']} #{hit['seq']}, {hit['kind']})"
        )
        lines.append(f"    {safe(hit['snippet'])}")
    return lines


def hit_json(hit: Mapping[str, Any]) -> dict[str, Any]:
    """A hit (`Hit.as_dict`) for `--json`, its title and snippet through the safety exit."""
    return {**hit, "title": safe(hit["title"]), "snippet": safe(hit["snippet"])}


def search_text(reply: Mapping[str, Any], *, as_json: bool, verbose: bool = False) -> str:
    """A search's reply (`policy.handler.search_value`) as `huiyi search` prints it: when
    there are no hits, why in words (the workspace has no sessions, a layer is warming or
    failed); the evidence's numbers only with `verbose`."""
    if as_json:
        return json_text([hit_json(h) for h in reply["hits"]])
    lines = hit_lines(reply["hits"], safe(reply.get("no_match") or "no matches"))
    if reply.get("why"):
        lines.append(safe(reply["why"]))
    if reply.get("empty_workspace"):
        lines.append("try --all, or `huiyi sessions --all` to see which workspaces have history")
    lines.append(f"(search: {' + '.join(reply['layers']) or 'none'})")
    lines.extend(f"note: {safe(note)}" for note in reply["notes"])
    if verbose and reply.get("detail"):
        lines.append(f"detail: {safe(reply['detail'])}")
    return "\n".join(lines)
