"""The team server's people, devices, grants, pushes and audit, in the PostgreSQL store.

A device's token is random (`secrets.token_urlsafe`), shown once when it is made and kept only
as its SHA-256 (`token_hash`): the database never holds a token, and a token is found by its
hash alone. A token is bound to one user and one device; its grants say, per workspace name
(`teamname`), whether it may read and whether it may push. A revoked token is refused at once
(the lookup reads `revoked` on every request). Every read the server answers writes an `audit`
row: who (device, and so user), which workspace, what query, which sessions were shown, when.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import psycopg

#: random bytes in a new device token (43 URL-safe characters)
TOKEN_BYTES = 32


class Device(NamedTuple):
    id: int
    user: str
    name: str
    reads: frozenset[str]
    pushes: frozenset[str]


class DeviceRow(NamedTuple):
    id: int
    user: str
    name: str
    created: int
    revoked: int | None
    grants: tuple[tuple[str, bool, bool], ...]


class AuditRow(NamedTuple):
    at: int
    user: str | None
    device: str | None
    workspace: str | None
    action: str
    query: str | None
    sessions: tuple[str, ...]


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def _now() -> int:
    return int(time.time() * 1000)


def add_device(
    conn: psycopg.Connection[Any],
    user: str,
    device: str,
    *,
    reads: Sequence[str],
    pushes: Sequence[str],
) -> tuple[int, str]:
    """Make a token for `user`'s `device` with these grants; (device id, the token)."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    with conn.transaction():
        conn.execute(
            "INSERT INTO users (name, created) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
            (user, _now()),
        )
        row = conn.execute(
            "INSERT INTO devices (user_id, name, token_hash, created) "
            "SELECT id, %s, %s, %s FROM users WHERE name = %s RETURNING id",
            (device, token_hash(token), _now(), user),
        ).fetchone()
        assert row is not None
        device_id = int(row[0])
        for workspace in sorted({*reads, *pushes}):
            conn.execute(
                "INSERT INTO grants (device_id, workspace, can_read, can_push) "
                "VALUES (%s, %s, %s, %s)",
                (device_id, workspace, workspace in reads, workspace in pushes),
            )
    return device_id, token


def device_of(conn: psycopg.Connection[Any], token: str) -> Device | None:
    """The live device a token belongs to, with its grants; None for an unknown or revoked
    token."""
    rows = conn.execute(
        "SELECT d.id, u.name, d.name, g.workspace, g.can_read, g.can_push FROM devices d "
        "JOIN users u ON u.id = d.user_id LEFT JOIN grants g ON g.device_id = d.id "
        "WHERE d.token_hash = %s AND d.revoked IS NULL",
        (token_hash(token),),
    ).fetchall()
    if not rows:
        return None
    reads = frozenset(r[3] for r in rows if r[3] is not None and r[4])
    pushes = frozenset(r[3] for r in rows if r[3] is not None and r[5])
    return Device(int(rows[0][0]), rows[0][1], rows[0][2], reads, pushes)


def devices(conn: psycopg.Connection[Any]) -> list[DeviceRow]:
    rows = conn.execute(
        "SELECT d.id, u.name, d.name, d.created, d.revoked, "
        "coalesce(array_agg(g.workspace ORDER BY g.workspace) "
        "FILTER (WHERE g.workspace IS NOT NULL), '{}'), "
        "coalesce(array_agg(g.can_read ORDER BY g.workspace) "
        "FILTER (WHERE g.workspace IS NOT NULL), '{}'), "
        "coalesce(array_agg(g.can_push ORDER BY g.workspace) "
        "FILTER (WHERE g.workspace IS NOT NULL), '{}') "
        "FROM devices d JOIN users u ON u.id = d.user_id LEFT JOIN grants g ON g.device_id = d.id "
        "GROUP BY d.id, u.name ORDER BY d.id"
    ).fetchall()
    return [
        DeviceRow(int(i), user, name, int(created), revoked, tuple(zip(ws, rd, pu, strict=True)))
        for i, user, name, created, revoked, ws, rd, pu in rows
    ]


def revoke(conn: psycopg.Connection[Any], device_id: int) -> bool:
    """Revoke a device's token; False when there is no such live device."""
    found = conn.execute(
        "UPDATE devices SET revoked = %s WHERE id = %s AND revoked IS NULL RETURNING id",
        (_now(), device_id),
    ).fetchone()
    return found is not None


def record_push(conn: psycopg.Connection[Any], device_id: int, push_id: str, events: int) -> bool:
    """Record a push by its id; False when this device sent that id before (a replay)."""
    found = conn.execute(
        "INSERT INTO pushes (device_id, push_id, at, events) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT DO NOTHING RETURNING push_id",
        (device_id, push_id, _now(), events),
    ).fetchone()
    return found is not None


def owners(conn: psycopg.Connection[Any], session_ids: Sequence[str]) -> dict[str, int | None]:
    """The device that pushed each of these sessions the store holds."""
    rows = conn.execute(
        "SELECT id, device FROM sessions WHERE id = ANY(%s)", (list(session_ids),)
    ).fetchall()
    return {sid: device for sid, device in rows}


def audited_origins(
    conn: psycopg.Connection[Any],
    device_id: int,
    workspace: str | None,
    action: str,
    query: str | None,
    sessions: Sequence[str],
) -> dict[str, str]:
    """`audit` of a read that showed `sessions`, and their `origins`, in one statement."""
    rows = conn.execute(
        "WITH logged AS (INSERT INTO audit (at, device_id, workspace, action, query, sessions) "
        "VALUES (%s, %s, %s, %s, %s, %s)) "
        "SELECT s.id, u.name || '@' || d.name FROM sessions s JOIN devices d ON d.id = s.device "
        "JOIN users u ON u.id = d.user_id WHERE s.id = ANY(%s)",
        (_now(), device_id, workspace, action, query, list(sessions), list(sessions)),
    ).fetchall()
    return dict(rows)


def sessions_of_device(conn: psycopg.Connection[Any], device_id: int) -> set[str]:
    rows = conn.execute("SELECT id FROM sessions WHERE device = %s", (device_id,)).fetchall()
    return {row[0] for row in rows}


def audit_rows(conn: psycopg.Connection[Any], *, limit: int) -> list[AuditRow]:
    rows = conn.execute(
        "SELECT a.at, u.name, d.name, a.workspace, a.action, a.query, a.sessions FROM audit a "
        "LEFT JOIN devices d ON d.id = a.device_id LEFT JOIN users u ON u.id = d.user_id "
        "ORDER BY a.id DESC LIMIT %s",
        (limit,),
    ).fetchall()
    return [AuditRow(int(r[0]), r[1], r[2], r[3], r[4], r[5], tuple(r[6])) for r in rows]
