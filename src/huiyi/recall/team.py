"""Team hits for a recall: the team server asked beside the local search, never waited on long.

`TeamAsk` starts the request on a thread when a recall starts and gives the local answer, when
it is ready, whatever the server has sent by then: the hits (each with the teammate and machine
it came from), or a note that the server did not answer within the wait (`wait_seconds`: a
tool's, or a hook's 300 ms). The local answer never waits longer than that, and never fails
because of the server.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from huiyi.model import Hit, Kind
from huiyi.teamclient import TeamConfig, TeamError, TeamTimeout, post

#: reciprocal-rank constant of the fusion of local and team hits
FUSION_K = 60


class TeamAsk:
    """One request for team hits of `workspace` (its team name)."""

    def __init__(self, config: TeamConfig, workspace: str, wait_seconds: float) -> None:
        self.config = config
        self.workspace = workspace
        self.wait_seconds = wait_seconds
        self._hits: list[Hit] = []
        self._error: str | None = None
        self._timed_out = False
        self._thread: threading.Thread | None = None
        self._started = 0.0

    def start(self, query: str, limit: int) -> None:
        self._started = time.monotonic()
        self._thread = threading.Thread(
            target=self._ask, args=(query, limit), name="huiyi-team", daemon=True
        )
        self._thread.start()

    def _ask(self, query: str, limit: int) -> None:
        try:
            answer = post(
                self.config,
                "/v1/search",
                {"workspace": self.workspace, "query": query, "limit": limit},
                seconds=max(self.wait_seconds, 0.05),
            )
            self._hits = [_hit(value) for value in answer.get("hits", [])]
        except TeamTimeout:
            self._timed_out = True
        except (TeamError, KeyError, TypeError, ValueError) as exc:
            self._error = str(exc)

    def result(self) -> tuple[list[Hit], str | None]:
        """The team hits, and a note when there are none to give (no answer in time, or an
        error)."""
        if self._thread is None:
            return [], None
        left = self._started + self.wait_seconds - time.monotonic()
        self._thread.join(max(0.0, left))
        if self._thread.is_alive() or self._timed_out:
            # the request's own timeout is the wait, so a local search slower than the wait
            # finds the thread ended by it: the same answer as one still waiting
            waited = round(self.wait_seconds * 1000)
            return [], f"the team server did not answer within {waited} ms: local results only"
        if self._error is not None:
            return [], f"team results unavailable: {self._error}"
        return self._hits, None


def _hit(value: dict[str, Any]) -> Hit:
    return Hit(
        session_id=str(value["session_id"]),
        seq=int(value["seq"]),
        source=str(value["source"]),
        workspace=str(value["workspace"]),
        title=str(value["title"]),
        time=int(value["time"]),
        kind=Kind(value["kind"]),
        snippet=str(value["snippet"]),
        score=float(value["score"]),
        layers=tuple(value.get("layers", ())),
        masks=int(value.get("masks", 0)),
        origin=str(value.get("origin") or "a teammate"),
    )


def fuse(local: list[Any], team: list[Any]) -> list[Any]:
    """Local and team results in one ranking by reciprocal rank; a tie goes to the local one."""
    scored = [(1 / (FUSION_K + n), 0, n, item) for n, item in enumerate(local)]
    scored += [(1 / (FUSION_K + n), 1, n, item) for n, item in enumerate(team)]
    scored.sort(key=lambda entry: (-entry[0], entry[1], entry[2]))
    return [item for *_, item in scored]
