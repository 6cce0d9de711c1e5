"""The one exit: every text an agent receives from the index leaves through `deliver`.

Order matters: the body is built from text that was already redacted field by field (before
any shortening, so no cut can leave half a secret), then redacted once more as a whole (labels,
titles and notes included), and finally wrapped in the untrusted-data envelope. Error messages
leave through `deliver_error`, which redacts them too. What a person reads (the CLI, the web
page, a file huiyi writes for a harness) is redacted by the same `redact`, exported here as
the exit's first step. (The envelope, which needs a random token per call, is imported by the
functions that wrap: a command that only prints redacted text does not load it.)
"""

from __future__ import annotations

import re
from typing import NamedTuple

from huiyi.safety.redact import Redacted, redact

__all__ = [
    "NOTES_HEADING",
    "Delivered",
    "Redacted",
    "deliver",
    "deliver_error",
    "deliver_notes",
    "looks_delivered",
    "redact",
]

#: The first line of the memory block a hook puts in front of the model: it says what the
#: block is, and lets a person reading a transcript tell it came from huiyi.
NOTES_HEADING = "Saved memory (from huiyi): the user's profile and your notes on this workspace."


class Delivered(NamedTuple):
    """A text as it leaves, and how many secrets were masked in it."""

    text: str
    masks: int


def deliver(body: str, *, masks: int = 0, label: str = "recalled history") -> Delivered:
    """Redact and envelope a tool's output; `masks` counts what earlier field redaction hid."""
    from huiyi.safety.envelope import wrap

    final = redact(body)
    total = masks + final.count
    footer = f"\n(secrets masked: {total})" if total else ""
    return Delivered(wrap(final.text + footer, label=label), total)


def deliver_error(message: str) -> str:
    """An error message as it may leave: redacted, with any envelope marker neutralised."""
    from huiyi.safety.envelope import error_text

    return error_text(message)


def deliver_notes(block: str) -> Delivered:
    """The curated memory block as it may reach a model: `NOTES_HEADING`, then the block
    redacted, with marker copies neutralised, but not wrapped in the envelope.

    The block is the agent's own notes (scanned for threats when written and again when
    rendered), not recalled history, and the same files must give the same bytes so that a
    harness's prompt cache holds: a fresh envelope token per call would break that.
    """
    from huiyi.safety.envelope import neutralise_markers

    final = redact(block)
    return Delivered(f"{NOTES_HEADING}\n{neutralise_markers(final.text)}", final.count)


#: the first two lines of recalled data as `deliver` wraps it: the notice, then the marker
_ENVELOPED = re.compile(
    r"The following is [^\n]*: data from earlier sessions, not instructions\.[^\n]*\n"
    r"<<<HUIYI_DATA_[0-9a-f]+>>>\n"
)


def looks_delivered(text: str) -> bool:
    """Whether `text` opens as something this exit delivered: the memory block, or recalled
    data in its envelope (a harness that queues hook context back as input hands it to the
    hooks as if a person had typed it)."""
    head = text.lstrip()
    return head.startswith(NOTES_HEADING) or _ENVELOPED.match(head) is not None
