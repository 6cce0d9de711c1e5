"""The meaning detector's verdicts on memory notes, kept for the processes that cannot run it.

A hook renders the memory block in a process that must answer fast and never loads the
embedding model, so there a note edited by hand is judged by the rules alone. A process that
has the detector (`huiyi.safety.meaning`: the `huiyi memory` commands, `huiyi index`, `huiyi
doctor`, `huiyi agents-md sync`, an MCP server at its start and after each write) judges every
note no verdict is kept for and writes the verdict here; the render reads them. So a note the
detector refused is shown as `[BLOCKED: <rule>]` by every front once any such process has seen
it, and the block still depends on files alone (the notes and this one): the same files, the
same bytes.

    HUIYI_HOME/memory/verdicts.json
    {"version": 1, "detectors": {"<detector id>": {"<note digest>": "<rule>" or ""}}}

A verdict is keyed by the digest of the note's text and by the detector's id
(`huiyi.safety.meaning.Meaning.detector_id`: the model, the classifier, the prototypes, the
margins and huiyi's version), so a changed note, model or classifier is judged again, never
given an old verdict. "" is a note the detector let through. The file is derived state: written
whole (atomically, under its own lock, merged with what another process wrote meanwhile),
capped at `MAX_VERDICTS` per detector and `MAX_DETECTORS` detectors, and a torn or foreign file
reads as holding no verdicts (the notes it judged are judged again).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from huiyi.errors import BusyError, DiskFullError
from huiyi.files import atomic_write
from huiyi.lock import file_lock
from huiyi.memory.config import memory_root
from huiyi.safety import threats

if TYPE_CHECKING:
    from huiyi.safety.meaning import Meaning

__all__ = ["FILE_NAME", "MAX_DETECTORS", "MAX_VERDICTS", "Verdicts", "note_digest"]

FILE_NAME = "verdicts.json"
#: verdicts kept per detector (the oldest go first); the stores hold a few dozen notes
MAX_VERDICTS = 4096
#: detectors whose verdicts are kept (the most recently written): a changed model or a new
#: release starts its own, and a process with the other setting still finds its own
MAX_DETECTORS = 4
_VERSION = 1
_LOCK_SECONDS = 5.0


def note_digest(text: str) -> str:
    """What a verdict is keyed by besides the detector: the note's exact text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _read(path: Path) -> dict[str, dict[str, str]]:
    """Every detector's verdicts in the file; {} when it is absent, torn or not ours."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != _VERSION:
        return {}
    detectors = data.get("detectors")
    if not isinstance(detectors, dict):
        return {}
    return {
        str(detector): {k: v for k, v in verdicts.items() if isinstance(v, str)}
        for detector, verdicts in detectors.items()
        if isinstance(verdicts, dict)
    }


class Verdicts:
    """The kept verdicts of one detector (`detector` is its id) under one HUIYI_HOME."""

    def __init__(self, home: Path, detector: str) -> None:
        self.path = memory_root(home) / FILE_NAME
        self.detector = detector
        self._known = _read(self.path).get(detector, {})

    def of(self, text: str) -> str | None:
        """The rule the detector refused `text` for, "" when it let it through, None when no
        verdict is kept."""
        return self._known.get(note_digest(text))

    def blocked(self, text: str) -> str | None:
        """The rule a kept verdict refused `text` for, else None."""
        return self.of(text) or None

    def unjudged(self, texts: Iterable[str]) -> list[str]:
        """The texts the rules let through that have no verdict yet, each once, in order."""
        return [
            t
            for t in dict.fromkeys(texts)
            if t.strip() and self.of(t) is None and not threats.scan(t)
        ]

    def judge(self, texts: Iterable[str], meaning: Meaning) -> dict[str, str]:
        """Judge every text of `texts` that has no verdict yet with `meaning` and keep the
        verdicts; returns the new ones (text -> rule, "" let through). A note the rules refuse
        needs no verdict: every front blocks it already."""
        if meaning.detector_id != self.detector:
            raise ValueError("the detector is not the one these verdicts belong to")
        new: dict[str, str] = {}
        for text in self.unjudged(texts):
            rules = threats.scan(text, meaning=meaning)
            new[text] = rules[0] if rules else ""
        if new:
            self.record(new)
        return new

    def record(self, verdicts: Mapping[str, str]) -> None:
        """Keep `verdicts` (text -> rule or ""), merged with what the file holds now. A home
        that cannot be written (read-only, full, its lock held too long) keeps them in this
        object only: the file is derived state, and the notes are judged again next time."""
        fresh = {note_digest(text): rule for text, rule in verdicts.items()}
        try:
            self._known = self._write(fresh)
        except (OSError, BusyError, DiskFullError):
            self._known = {**self._known, **fresh}

    def _write(self, fresh: dict[str, str]) -> dict[str, str]:
        with file_lock(self.path.with_suffix(".lock"), timeout=_LOCK_SECONDS, what=str(self.path)):
            detectors = _read(self.path)
            mine = detectors.pop(self.detector, {})
            for key in fresh:
                mine.pop(key, None)  # re-inserted last: the newest verdicts are kept longest
            mine.update(fresh)
            while len(mine) > MAX_VERDICTS:
                mine.pop(next(iter(mine)))
            detectors[self.detector] = mine  # the most recently written detector last
            while len(detectors) > MAX_DETECTORS:
                detectors.pop(next(iter(detectors)))
            data = {"version": _VERSION, "detectors": detectors}
            atomic_write(self.path, (json.dumps(data) + "\n").encode(), durable=False)
        return mine
