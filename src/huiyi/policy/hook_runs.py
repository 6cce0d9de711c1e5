"""When each harness's hooks last ran and what they answered (`HUIYI_HOME/hooks-ran.json`),
for `huiyi doctor`: a hook installed is not a hook that runs (DSH runs hook commands in its
sandboxed shell, and refuses them all on a host without a sandbox backend).

The run is noted where it is served: by the warm service when it serves the hook (a hook in
a sandbox with a read-only HUIYI_HOME can reach the service's socket but write nothing
itself), else by the hook's own process. Nowhere to note it is no failure: a hook fails open.
"""

from __future__ import annotations

import time
from typing import Any

from huiyi.config import Settings
from huiyi.errors import HuiyiError
from huiyi.files import SessionBook

__all__ = ["RAN_NAME", "last_runs", "note_run"]

RAN_NAME = "hooks-ran.json"
RAN_HARNESSES = 16


def _book(settings: Settings) -> SessionBook:
    return SessionBook(
        settings.home / RAN_NAME, keep=RAN_HARNESSES, what="the hooks' record", durable=False
    )


def note_run(settings: Settings, harness: str, event: str, answered: str) -> bool:
    """Note this run (`answered`: context, nothing or failed); whether it could be noted."""
    now = int(time.time() * 1000)
    try:
        settings.ensure_home()
        with _book(settings).entry(harness[:40], now) as (record, _known):
            record[event[:40]] = {"at": now, "answered": answered}
    except (OSError, HuiyiError):
        return False
    return True


def last_runs(settings: Settings) -> dict[str, dict[str, dict[str, Any]]]:
    """Per harness and event, when its hook last ran (`at`, epoch ms) and what it answered."""
    runs = {}
    for harness, record in _book(settings).read().items():
        runs[harness] = {
            event: ran
            for event, ran in record.items()
            if isinstance(ran, dict) and isinstance(ran.get("at"), int)
        }
    return runs
