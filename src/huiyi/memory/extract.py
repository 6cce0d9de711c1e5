"""Optional extraction: ask an OpenAI-compatible chat endpoint for durable facts worth keeping.

Off unless a key is configured (`DEEPSEEK_API_KEY`, or `HUIYI_EXTRACT_API_KEY` for another
provider); the endpoint is DeepSeek's by default and can be changed with
`HUIYI_EXTRACT_BASE_URL` and `HUIYI_EXTRACT_MODEL`. These are read once into
`Settings.extract` (an `ExtractConfig`, defined in `huiyi.config`), which the `Extractor` takes
from its `Memory` unless given another. It speaks the plain chat-completions shape through
`huiyi.openai_http`, so any compatible server works (a local one included) and no SDK is
needed.

One run reads the recent human-assistant text of the workspace (given by the caller as
`(role, text)` pairs), shows the model both stores, and asks for at most 2 facts, each with a
decision: `write` a new entry, `merge` into an existing one (a replace), or `skip`. Every
proposal then goes through exactly the same path as a model's own write (threat scan, budget,
lock), so extraction can never do what the `memory` tool could not. Turns holding a secret are
not sent to the endpoint at all.

`Extractor.maybe_run` is the debounced background form: at most one run per 60 s, never two at
once, never on unchanged input, and a failing endpoint is remembered, not raised.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from huiyi.config import ExtractConfig as ExtractConfig
from huiyi.errors import ExtractionError
from huiyi.memory.config import Target
from huiyi.memory.facade import Memory
from huiyi.memory.ops import Outcome
from huiyi.openai_http import EndpointError, post_json

MAX_FACTS = 2
MAX_TURN_CHARS = 2000
DEBOUNCE_S = 60.0

NOT_CONFIGURED = (
    "memory extraction is off: no API key. Set DEEPSEEK_API_KEY to use DeepSeek, or point it "
    "at any OpenAI-compatible endpoint with HUIYI_EXTRACT_BASE_URL, HUIYI_EXTRACT_MODEL and "
    "HUIYI_EXTRACT_API_KEY. Nothing was changed."
)

SYSTEM_PROMPT = """\
You curate two small memory stores for a coding agent. They are shown to the agent at the \
start of every future session, so they must hold only durable facts:
- target "user": who the user is and how they like to work (stable preferences, role, language).
- target "memory": facts about this workspace: environment, commands, conventions, lessons.
From the conversation, propose at most 2 facts that will still be true and useful next week. \
Skip task progress, one-off details, anything already in the stores, secrets, and anything \
that tells the agent what to do outside normal engineering work.
For each fact decide against the current entries:
- "write": a new entry (one plain sentence or two, under 200 characters);
- "merge": rewrite one existing entry to include the fact; "merge_with" is a short exact piece \
of that entry and "content" the whole new entry;
- "skip": already known or not worth keeping.
Reply with JSON only: {"facts": [{"action": "write|merge|skip", "target": "user|memory", \
"content": "...", "merge_with": "...", "reason": "..."}]}"""


@dataclass(frozen=True, slots=True)
class Proposal:
    """One fact the endpoint proposed, with its decision."""

    action: str
    target: Target
    content: str
    merge_with: str | None = None
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "action": self.action,
            "target": self.target.value,
            "content": self.content,
            "merge_with": self.merge_with,
            "reason": self.reason,
        }


@dataclass(slots=True)
class ExtractReport:
    """What one run proposed and what became of each proposal."""

    results: list[tuple[Proposal, Outcome | None]] = field(default_factory=list)
    turns_sent: int = 0
    turns_withheld: int = 0
    dry_run: bool = False

    @property
    def saved(self) -> int:
        return sum(1 for _, o in self.results if o is not None and o.ok and o.changed)

    def text(self) -> str:
        head = (
            f"extraction read {self.turns_sent} turns"
            + (
                f" ({self.turns_withheld} withheld: they held secrets)"
                if self.turns_withheld
                else ""
            )
            + f"; {len(self.results)} proposals"
            + ("" if self.dry_run else f", {self.saved} saved")
        )
        lines = [head]
        for proposal, outcome in self.results:
            what = f"{proposal.action} [{proposal.target.value}] {proposal.content}"
            if outcome is None:
                status = "dry run" if self.dry_run and proposal.action != "skip" else "skipped"
            else:
                status = outcome.message.splitlines()[0]
            lines.append(f"- {what}\n  -> {status}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, object]:
        return {
            "turns_sent": self.turns_sent,
            "turns_withheld": self.turns_withheld,
            "dry_run": self.dry_run,
            "saved": self.saved,
            "results": [
                {"proposal": p.as_dict(), "outcome": o.as_dict() if o else None}
                for p, o in self.results
            ],
        }


def _holds_secret(text: str) -> bool:
    from huiyi.safety.threats import HARD_CODED_SECRET, scan

    return HARD_CODED_SECRET in scan(text)


def select_turns(
    turns: Sequence[tuple[str, str]], max_chars: int
) -> tuple[list[tuple[str, str]], int]:
    """The most recent turns that fit `max_chars`, oldest first; turns with secrets dropped."""
    chosen: list[tuple[str, str]] = []
    withheld = 0
    used = 0
    for role, text in reversed(turns):
        text = text.strip()
        if not text:
            continue
        if _holds_secret(text):
            withheld += 1
            continue
        text = text[:MAX_TURN_CHARS]
        if used + len(text) > max_chars and chosen:
            break
        chosen.append((role, text))
        used += len(text)
    chosen.reverse()
    return chosen, withheld


def build_messages(
    turns: Sequence[tuple[str, str]], stores: Mapping[Target, Sequence[str]]
) -> list[dict[str, str]]:
    """The chat messages for one extraction request."""
    parts: list[str] = []
    for target in (Target.USER, Target.MEMORY):
        if target not in stores:
            continue
        entries = stores[target]
        listed = "\n".join(f"- {e}" for e in entries) if entries else "(empty)"
        parts.append(f'Current "{target.value}" entries:\n{listed}')
    conversation = "\n\n".join(f"{role}: {text}" for role, text in turns)
    parts.append(f"Recent conversation (oldest first):\n{conversation}")
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def call_chat(config: ExtractConfig, messages: list[dict[str, str]]) -> str:
    """POST to `<base_url>/chat/completions` and return the first choice's content."""
    body = {
        "model": config.model,
        "messages": messages,
        "temperature": 0,
        "max_tokens": 800,
        "response_format": {"type": "json_object"},
    }
    try:
        payload: Any = post_json(
            config.base_url.rstrip("/") + "/chat/completions",
            body,
            api_key=config.api_key,
            timeout=config.timeout_s,
            what="the extraction endpoint",
            user_agent="huiyi-memory-extract",
        )
    except EndpointError as exc:
        hint = (
            "; check HUIYI_EXTRACT_BASE_URL, the model name and the API key"
            if exc.problem == "http"
            else ""
        )
        raise ExtractionError(f"{exc}{hint}") from None
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ExtractionError(
            f"{config.base_url} did not answer in the chat-completions shape"
        ) from None
    if not isinstance(content, str):
        raise ExtractionError(f"{config.base_url} answered no text")
    return content


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def parse_proposals(content: str) -> list[Proposal]:
    """At most `MAX_FACTS` well-formed proposals from the model's answer."""
    try:
        data: Any = json.loads(_FENCE.sub("", content.strip()))
    except ValueError:
        raise ExtractionError("the extraction model did not answer JSON") from None
    facts = data.get("facts") if isinstance(data, dict) else data
    if not isinstance(facts, list):
        raise ExtractionError('the extraction model answered without a "facts" list')
    proposals: list[Proposal] = []
    for fact in facts:
        if not isinstance(fact, dict):
            continue
        action = str(fact.get("action", "")).strip().lower()
        content_text = fact.get("content")
        merge_with = fact.get("merge_with")
        try:
            target = Target(str(fact.get("target", "")).strip().lower())
        except ValueError:
            continue
        if action not in ("write", "merge", "skip") or not isinstance(content_text, str):
            continue
        if action == "merge" and not (isinstance(merge_with, str) and merge_with.strip()):
            continue
        proposals.append(
            Proposal(
                action,
                target,
                content_text.strip(),
                merge_with if isinstance(merge_with, str) else None,
                str(fact.get("reason", "")),
            )
        )
        if len(proposals) == MAX_FACTS:
            break
    return proposals


class Extractor:
    """Runs extraction for one `Memory`, now (`run`) or debounced (`maybe_run`)."""

    def __init__(
        self,
        memory: Memory,
        config: ExtractConfig | None = None,
        *,
        min_interval_s: float = DEBOUNCE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.memory = memory
        self.config = config or memory.settings.extract
        self.min_interval_s = min_interval_s
        self.clock = clock
        self.last_run: float | None = None
        self.last_error: str | None = None
        self._last_input: str | None = None
        self._busy = threading.Lock()

    def run(self, turns: Sequence[tuple[str, str]], *, dry_run: bool = False) -> ExtractReport:
        """One extraction now; raises ExtractionError when the endpoint fails."""
        if not self.config.configured:
            raise ExtractionError(NOT_CONFIGURED)
        chosen, withheld = select_turns(turns, self.config.max_input_chars)
        report = ExtractReport(turns_sent=len(chosen), turns_withheld=withheld, dry_run=dry_run)
        if not chosen:
            return report
        stores = {t: self.memory.entries(t) for t in self.memory.targets()}
        proposals = parse_proposals(call_chat(self.config, build_messages(chosen, stores)))
        for proposal in proposals:
            report.results.append((proposal, None if dry_run else self._apply(proposal)))
        return report

    def _apply(self, proposal: Proposal) -> Outcome | None:
        if proposal.action == "skip":
            return None
        if proposal.target not in self.memory.targets():
            return Outcome(False, "refused: no workspace, so no workspace memory", reason="scope")
        if proposal.action == "merge" and proposal.merge_with:
            return self.memory.replace(proposal.target, proposal.merge_with, proposal.content)
        return self.memory.add(proposal.target, proposal.content)

    def maybe_run(self, turns: Callable[[], Sequence[tuple[str, str]]]) -> ExtractReport | None:
        """Run unless off, busy, within `min_interval_s` of the last run, or input unchanged.

        Never raises for an endpoint failure: it is kept in `last_error` for `doctor`.
        """
        if not self.config.configured or not self._busy.acquire(blocking=False):
            return None
        try:
            now = self.clock()
            if self.last_run is not None and now - self.last_run < self.min_interval_s:
                return None
            self.last_run = now
            pairs = list(turns())
            digest = hashlib.sha256(json.dumps(pairs, ensure_ascii=False).encode()).hexdigest()
            if digest == self._last_input:
                return None
            try:
                report = self.run(pairs)
            except ExtractionError as exc:
                self.last_error = str(exc)
                return None
            self._last_input = digest
            self.last_error = None
            return report
        finally:
            self._busy.release()
