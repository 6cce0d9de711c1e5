"""The team server's doorway: one object over the PostgreSQL store that the server's routes
use, as `Huiyi` is the local one's.

    hub = Hub("postgresql:///huiyi")
    device = hub.device(token)          # None: unknown or revoked
    hub.push(device, body)              # a client's push, stored whole or refused whole
    hub.search(device, workspace, query, limit=10)

What it holds to, whatever a client sends:
- a push is checked whole before anything is written (`PushRefused` with a clear message and
  the HTTP status to answer with): malformed JSON or fields, over `MAX_PUSH_BYTES`, a workspace
  the token may not push to, a tombstoned session, a session another device pushed, a push id
  sent before (a replay); a tombstone is accepted only for the device's own sessions;
- every event is tokenised and its privacy re-checked by the store, and its text is masked
  once more (`safety.exit`), although the client sent it redacted;
- a search or read answers only a workspace the token may read, never the device's own
  sessions (its machine has them), names each hit's teammate and machine, and is audited.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from huiyi.config import Settings
from huiyi.errors import NotFoundError, UsageError
from huiyi.model import Event, Kind, Surface, kinds_to_read
from huiyi.safety.exit import redact
from huiyi.safety.privacy import is_private_title
from huiyi.safety.redact import redact_kept
from huiyi.search.engine import Filter, search
from huiyi.store.batch import Batch, EventRecord, SessionRecord
from huiyi.store.pg import team
from huiyi.store.pg.connect import open_pool
from huiyi.store.pg.reads import PgIndex
from huiyi.store.pg.team import Device
from huiyi.store.pg.writes import Writer
from huiyi.store.queries import SessionRow

__all__ = ["MAX_PUSH_BYTES", "Device", "Hub", "PushRefused"]

#: the largest push body the server reads (a client sends larger histories in several pushes)
MAX_PUSH_BYTES = 8 * 1024 * 1024
MAX_SESSIONS = 1_000
MAX_EVENTS = 20_000
MAX_TEXT = 1_000_000
MAX_LIMIT = 50
_KINDS = frozenset(k.value for k in Kind)
_SURFACES = frozenset(s.value for s in Surface)


class PushRefused(UsageError):
    """A push (or a request) the server will not take; `status` is the HTTP answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _field(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise PushRefused(f"{where}: {key!r} is missing or not a {getattr(kind, '__name__', kind)}")
    return value


def _optional(obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    return None if obj.get(key) is None else _field(obj, key, kind, where)


def redact_text(text: str) -> str:
    return redact(text).text


def redact_shown(text: str) -> str:
    """A text on its way out (a snippet, a title, an event read): redacted again although it
    was redacted when pushed, with the answers for recent texts remembered (`redact_kept`)."""
    return redact_kept(text).text


def _text(value: str, where: str) -> str:
    if len(value) > MAX_TEXT:
        raise PushRefused(f"{where}: a text over {MAX_TEXT:,} characters")
    return redact_text(value)


def parse_push(body: bytes) -> tuple[str, list[Batch], list[str]]:
    """(push id, batches, tombstoned session ids) of a push body; `PushRefused` otherwise."""
    if len(body) > MAX_PUSH_BYTES:
        raise PushRefused(f"a push is at most {MAX_PUSH_BYTES:,} bytes; send it in parts", 413)
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise PushRefused("the push is not JSON") from None
    if not isinstance(data, dict):
        raise PushRefused("the push is not a JSON object")
    push_id = _field(data, "push", str, "push")
    if not 8 <= len(push_id) <= 100:
        raise PushRefused("push: 'push' must be an id of 8 to 100 characters")
    sessions = _field(data, "sessions", list, "push")
    tombstones = _field(data, "tombstones", list, "push")
    if len(sessions) > MAX_SESSIONS or not all(isinstance(t, str) for t in tombstones):
        raise PushRefused(f"push: at most {MAX_SESSIONS} sessions; tombstones are session ids")
    batches: list[Batch] = []
    total = 0
    for n, raw in enumerate(sessions):
        where = f"sessions[{n}]"
        if not isinstance(raw, dict):
            raise PushRefused(f"{where} is not an object")
        events = _field(raw, "events", list, where)
        total += len(events)
        if total > MAX_EVENTS:
            raise PushRefused(
                f"a push carries at most {MAX_EVENTS:,} events; send it in parts", 413
            )
        title = _optional(raw, "title", str, where)
        record = SessionRecord(
            id=_field(raw, "id", str, where),
            source=_field(raw, "source", str, where),
            cwd="",
            workspace=_field(raw, "workspace", str, where),
            title=_text(title, where) if title is not None else None,
            first_user=None,
            created=_optional(raw, "created", int, where),
            updated=_optional(raw, "updated", int, where),
            parent=_optional(raw, "parent", str, where),
            is_subagent=bool(raw.get("is_subagent", False)),
            # a private marker in what arrives keeps it out, whatever the client decided
            is_private=is_private_title(title, unreadable=False),
        )
        records = []
        for m, event in enumerate(events):
            at = f"{where}.events[{m}]"
            if not isinstance(event, dict):
                raise PushRefused(f"{at} is not an object")
            kind, surface = _field(event, "kind", str, at), _field(event, "surface", str, at)
            if kind not in _KINDS or surface not in _SURFACES:
                raise PushRefused(f"{at}: unknown kind or surface")
            records.append(
                EventRecord(
                    seq=_field(event, "seq", int, at),
                    time=_field(event, "time", int, at),
                    kind=kind,
                    role=_field(event, "role", str, at),
                    text=_text(_field(event, "text", str, at), at),
                    surface=surface,
                    injected=bool(event.get("injected", False)),
                    tool_name=_optional(event, "tool_name", str, at),
                )
            )
        if len({r.seq for r in records}) != len(records):
            raise PushRefused(f"{where}: a seq twice")
        batches.append(Batch(record, records))
    return push_id, batches, list(tombstones)


class Hub:
    """The team server's store and what may be done with it."""

    def __init__(self, url: str, *, settings: Settings | None = None, pool_size: int = 8) -> None:
        self.settings = settings or Settings.from_env()
        self.pool = open_pool(url, max_size=pool_size)
        self.index = PgIndex(self.pool)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Hub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the admin's: devices and the audit ---------------------------------------------------

    def add_device(
        self, user: str, device: str, *, reads: tuple[str, ...], pushes: tuple[str, ...]
    ) -> tuple[int, str]:
        """A new device token with these grants: (device id, the token, shown only now)."""
        with self.pool.connection() as conn:
            return team.add_device(conn, user, device, reads=reads, pushes=pushes)

    def devices(self) -> list[team.DeviceRow]:
        with self.pool.connection() as conn:
            return team.devices(conn)

    def revoke(self, device_id: int) -> bool:
        with self.pool.connection() as conn:
            return team.revoke(conn, device_id)

    def audit(self, *, limit: int) -> list[team.AuditRow]:
        with self.pool.connection() as conn:
            return team.audit_rows(conn, limit=limit)

    def repair_lists(self) -> int:
        """Make every kept newest-id list again from the rows (`store.pg.lists`), under the
        writers' lock; the lists made. Lists thinned by many removals answer fewer lookups
        (the rest read the GIN indexes); made again, they answer as after a load."""
        with self.pool.connection() as conn, conn.transaction():
            return Writer(conn).rebuild_lists()

    def device(self, token: str) -> Device | None:
        """The live device of a bearer token (None: unknown or revoked)."""
        with self.pool.connection() as conn:
            return team.device_of(conn, token)

    # -- pushes ------------------------------------------------------------------------------

    def push(self, device: Device, body: bytes) -> dict[str, Any]:
        """Store a push whole, or refuse it whole (`PushRefused`)."""
        push_id, batches, tombstones = parse_push(body)
        for batch in batches:
            if batch.session.workspace not in device.pushes:
                raise PushRefused(
                    f"this token may not push to workspace {batch.session.workspace!r}", 403
                )
        ids = [b.session.id for b in batches]
        with self.pool.connection() as conn, conn.transaction():
            writer = Writer(conn)
            dead = writer.tombstoned(ids)
            if dead:
                raise PushRefused(f"session {sorted(dead)[0]!r} was withdrawn for good", 409)
            owners = team.owners(conn, [*ids, *tombstones])
            others = sorted(s for s, owner in owners.items() if owner != device.id)
            if others:
                raise PushRefused(f"session {others[0]!r} belongs to another device", 409)
            events = sum(len(b.events) for b in batches)
            if not team.record_push(conn, device.id, push_id, events):
                raise PushRefused(f"push {push_id!r} was received before (a replay)", 409)
            written = writer.apply(batches, device=device.id)
            for session_id in tombstones:
                writer.remove(session_id, device=device.id, tombstone=True)
        return {
            "push": push_id,
            "sessions": len(batches),
            "events": written,
            "tombstones": len(tombstones),
        }

    # -- reads -------------------------------------------------------------------------------

    def _readable(self, device: Device, workspace: str) -> None:
        if workspace not in device.reads:
            raise PushRefused("no such workspace for this token", 403)

    def search(
        self, device: Device, workspace: str, query: str, *, limit: int = 10
    ) -> dict[str, Any]:
        """Hits of `workspace` for `query` from every other device, each with its origin."""
        self._readable(device, workspace)
        if not query.strip() or len(query) > 2_000 or not 1 <= limit <= MAX_LIMIT:
            raise PushRefused(f"a query of 1 to 2,000 characters and a limit of 1 to {MAX_LIMIT}")
        with self.pool.connection() as conn:
            own = team.sessions_of_device(conn, device.id)
        result = search(
            self.index,
            query,
            Filter(workspace=workspace, exclude_sessions=frozenset(own), include_subagents=False),
            limit=limit,
        )
        shown = list(dict.fromkeys(hit.session_id for hit in result.hits))
        with self.pool.connection() as conn:
            origin = team.audited_origins(conn, device.id, workspace, "search", query, shown)
        hits = []
        for hit in result.hits:
            value = hit.as_dict()
            value["snippet"] = redact_shown(hit.snippet)
            value["title"] = redact_shown(hit.title)
            value["origin"] = origin.get(hit.session_id, "")
            hits.append(value)
        return {"hits": hits, "layers": result.layers, "declined": result.declined}

    def sessions(self, device: Device, workspace: str, *, limit: int = 20) -> dict[str, Any]:
        """A workspace's sessions from every other device, newest first, each with its origin
        (audited as a read of the list)."""
        self._readable(device, workspace)
        if not 1 <= limit <= 100:
            raise PushRefused("a limit of 1 to 100")
        rows = self.index.list_sessions(workspace=workspace, include_subagents=False)
        with self.pool.connection() as conn:
            own = team.sessions_of_device(conn, device.id)
            rows = [r for r in rows if r.session.id not in own][:limit]
            shown = [r.session.id for r in rows]
            origin = team.audited_origins(conn, device.id, workspace, "list", None, shown)
        return {
            "sessions": [
                {
                    "session": r.session.id,
                    "title": redact_shown(r.session.title),
                    "updated": r.session.updated,
                    "events": r.session.event_count,
                    "origin": origin.get(r.session.id, ""),
                }
                for r in rows
            ]
        }

    def session_read(
        self,
        device: Device,
        workspace: str,
        session_id: str,
        *,
        last: int = 30,
        from_seq: int | None = None,
        include_tools: bool = False,
    ) -> dict[str, Any]:
        """A page of a teammate's session of `workspace` (redacted, audited): its last `last`
        events, or `last` events forward from `from_seq`."""
        self._readable(device, workspace)
        if not 1 <= last <= 500:
            raise PushRefused("last is 1 to 500")
        row = self._shared_session(workspace, session_id)
        kinds = kinds_to_read(include_tools=include_tools)
        if from_seq is None:
            events = list(
                self.index.events(row.sid, session_id, kinds=kinds, limit=last, newest_first=True)
            )[::-1]
        else:
            events = list(
                self.index.events(row.sid, session_id, from_seq=from_seq, kinds=kinds, limit=last)
            )
        where = f"{session_id}@{events[0].seq if events else 0}"
        return self._shown(device, workspace, row, events, where)

    def read(
        self, device: Device, workspace: str, session_id: str, seq: int, before: int, after: int
    ) -> dict[str, Any]:
        """The events around `seq` of a teammate's session of `workspace` (redacted)."""
        self._readable(device, workspace)
        if not (0 <= before <= 50 and 0 <= after <= 50):
            raise PushRefused("before and after are 0 to 50")
        row = self._shared_session(workspace, session_id)
        events = self.index.events_around(
            row.sid,
            session_id,
            seq,
            before=before,
            after=after,
            kinds=kinds_to_read(include_tools=False),
        )
        return self._shown(device, workspace, row, events, f"{session_id}@{seq}")

    def _shared_session(self, workspace: str, session_id: str) -> SessionRow:
        """The row of a shared session of `workspace`; a private one, or one of another
        workspace, is not found (it is not told apart from one that does not exist)."""
        row = self.index.session_by_id(session_id)
        if row is None or row.session.is_private or row.session.workspace != workspace:
            raise NotFoundError("no such session in this workspace")
        return row

    def _shown(
        self, device: Device, workspace: str, row: SessionRow, events: list[Event], where: str
    ) -> dict[str, Any]:
        """The answer of a read: the session's events redacted, its origin, and the read
        audited as `where`."""
        session_id = row.session.id
        with self.pool.connection() as conn:
            origin = team.audited_origins(
                conn, device.id, workspace, "read", where, [session_id]
            ).get(session_id, "")
        return {
            "session": session_id,
            "title": redact_shown(row.session.title),
            "origin": origin,
            "events": [
                {"seq": e.seq, "time": e.time, "kind": str(e.kind), "text": redact_shown(e.text)}
                for e in events
            ],
        }
