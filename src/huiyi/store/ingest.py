"""Ingestion: reader output into the index, incrementally, idempotently, one writer at a time.

For every file a reader discovers, the `files` table remembers inode, size, mtime, the byte
offset consumed, a digest of the first bytes consumed (`head`) and the reader's small `state`.
An unchanged file costs one `stat`. A grown file is read from its offset. A file that shrank,
changed inode or changed its head is read again from the start, after the events it produced
are removed, so nothing is duplicated. Each file's news is written in one transaction together
with its new cursor: a crash leaves either the old cursor and old rows or the new ones.

Sessions outlive their files: Claude Code deletes transcripts after 30 days, and the index keeps
the text, so a file that disappears only gets `missing = 1`.

Privacy (`huiyi.safety.privacy` states the rule) is settled here, per chunk: `is_private` is
set by a marked or unreadable title, a marked TITLE event, a marked first user message, or a
private parent, and is never cleared by a later read. When a session turns private, every
session below it (`parent`, at any depth) turns private too, so the order in which a parent and
its subagents are indexed does not matter.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huiyi.model import TEXT_KINDS, Surface, sql_kinds
from huiyi.safety.privacy import is_private_title
from huiyi.sources.base import (
    NOT_REGULAR,
    Cursor,
    NotRegularFile,
    Reader,
    SessionUpdate,
    path_key,
)
from huiyi.store import db, readthrough, textpack, transaction, vectors
from huiyi.store.codes import surface_code
from huiyi.store.reading import (
    PARALLEL_MIN_FILES,
    Job,
    Outcome,
    Prepared,
    Read,
    Row,
    planned_workers,
    read_all,
    read_job,
    same_head,
    unpack_state,
)
from huiyi.store.reading import text_uid_key as text_uid_key  # re-exported (repair keys uids)
from huiyi.store.reading import uid_key as uid_key  # re-exported
from huiyi.store.textindex import (
    INDEXABLE_KINDS,
    Indexed,
    Streams,
    add_rows,
    remove_rows,
    stored_streams,
)
from huiyi.workspace import workspace_of

#: Files are written in transactions of about this many events: each file's rows and its new
#: cursor always commit together, and fewer commits make a first full index much faster.
COMMIT_EVERY = 20_000
VANISHED = "vanished"


@dataclass(slots=True)
class SourceReport:
    source: str
    roots: list[str] = field(default_factory=list)
    files: int = 0
    files_read: int = 0
    sessions: set[str] = field(default_factory=set)
    events: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "roots": self.roots,
            "files": self.files,
            "files_read": self.files_read,
            "sessions": len(self.sessions),
            "events": self.events,
            "skipped": dict(self.skipped),
            "errors": self.errors,
        }


#: progress(source, files done, files total)
Progress = Callable[[str, int, int], None]


class Ingestor:
    """Writes reader output into an open index connection. Hold the writer lock while using it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._forgotten_sessions = {
            r[0] for r in conn.execute("SELECT value FROM forgotten WHERE kind = 'session'")
        }
        self._forgotten_workspaces = {
            r[0] for r in conn.execute("SELECT value FROM forgotten WHERE kind = 'workspace'")
        }
        self._next_id = readthrough.next_event_id(conn)
        self._pending = 0
        self._codec = textpack.codec(conn)
        #: no-copy mode: events keep a locator of their text, sessions no title or first message
        self._no_copy = readthrough.no_copy(conn)
        self._codec.reset()  # a long-lived connection: another may have trained one since
        self._unpacked = 0  # texts written as they are, worth packing, since the last try
        self._key_text_uids()

    def _key_text_uids(self) -> None:
        """Give the text uids a huiyi process started before m007 may still have written
        (`source:uid`) their keys, so that a later copy of their records is known as one.
        An event that is already indexed under the key is such a copy, and goes.

        The uid index keeps text apart from blobs (every text sorts before every blob), so
        finding none costs one seek."""
        rows = self.conn.execute(
            "SELECT id, sid, seq, uid FROM events WHERE uid >= '' AND uid < x''"
        ).fetchall()
        if not rows:
            return
        with self.conn:
            for _, sid, seq, uid in rows:
                key = text_uid_key(uid)
                if self.conn.execute("SELECT 1 FROM events WHERE uid = ?", (key,)).fetchone():
                    self.delete_events(sid, seqs=[seq])
                else:
                    self.conn.execute("UPDATE events SET uid = ? WHERE uid = ?", (key, uid))

    def commit(self) -> None:
        """Make everything written so far durable (rows and file cursors together); then, if
        texts were written as they are, train the index's dictionary when it is due."""
        self.conn.commit()
        self._pending = 0
        if self._unpacked:
            self._pack_when_due()

    def _pack_when_due(self) -> None:
        """`textpack.train` in a transaction of its own, once this writer wrote texts as they
        are (an index without a dictionary): a first index trains it after its first
        `textpack.TRAIN_AFTER` texts, a small index once it has grown to that."""
        self._unpacked = 0
        if self._codec.packing:
            return
        self.conn.commit()
        try:
            with transaction.immediate(self.conn):
                packed = textpack.train(self.conn, self._codec)
        except BaseException:
            self._codec.reset()  # the dictionary it was given was rolled back
            raise
        if packed:
            # the texts packed in place left their pages mostly empty; the index is still
            # small, so packing its pages again costs little
            db.vacuum(self.conn)

    # -- files ---------------------------------------------------------------------------

    def index_reader(
        self,
        reader: Reader,
        report: SourceReport,
        *,
        paths: Iterable[Path] | None = None,
        progress: Progress | None = None,
        mark_missing: bool = True,
        workers: int | None = None,
    ) -> None:
        """Index every file the reader discovers (or the given paths).

        Unchanged files cost one `stat`. When many files changed (a first index), reading and
        tokenising run in `workers` processes (`reading.planned_workers` when None) while this
        one writes with bulk-load settings (`transaction.bulk_load`); `workers=0` never forks.
        """
        report.roots = [str(r) for r in reader.roots()]
        try:
            files = sorted(reader.discover() if paths is None else paths)
        except OSError as exc:  # a root that vanished or cannot be listed
            report.skipped[VANISHED] += 1
            report.errors.append(f"{reader.source}: cannot list sources: {exc.strerror or exc}")
            files = []
        report.files += len(files)
        jobs = [job for path in files if (job := self._plan(reader, path, report)) is not None]
        total = len(files)
        if progress is not None:
            progress(reader.source, total - len(jobs), total)
        outcomes = read_all(
            reader, jobs, planned_workers(len(jobs), workers), self._codec.dictionary
        )
        bulk = len(jobs) >= PARALLEL_MIN_FILES
        with transaction.bulk_load(self.conn) if bulk else contextlib.nullcontext():
            for done, (job, outcome) in enumerate(
                zip(jobs, outcomes, strict=True), total - len(jobs) + 1
            ):
                self._write(reader.source, job, outcome, report)
                if not isinstance(outcome, OSError) and outcome.more:
                    self._read_on(reader, job, outcome, report)
                dictionary = self._codec.dictionary
                if dictionary is not None:  # trained meanwhile: the readers pack from now on
                    outcomes.share(dictionary)
                if progress is not None:
                    progress(reader.source, done, total)
            self.commit()
        if mark_missing and paths is None:
            self._mark_missing(reader.source, {path_key(p) for p in files})

    def index_file(self, reader: Reader, path: Path, report: SourceReport) -> None:
        """Index one file (if it changed) in this process."""
        job = self._plan(reader, path, report)
        if job is not None:
            outcome = read_job(reader, job.path, job.cursor)
            self._write(reader.source, job, outcome, report)
            if not isinstance(outcome, OSError) and outcome.more:
                self._read_on(reader, job, outcome, report)

    def _read_on(self, reader: Reader, job: Job, outcome: Read, report: SourceReport) -> None:
        """Read the rest of a file whose read stopped at its budget, one budget at a time,
        writing each before the next is read: memory holds one read, however large the file."""
        while outcome.more:
            self.commit()
            row = self.conn.execute(
                "SELECT id FROM files WHERE path = ?", (path_key(job.path),)
            ).fetchone()
            job = Job(
                job.path, job.st, row[0], False, Cursor(outcome.offset, unpack_state(outcome.state))
            )
            got = read_job(reader, job.path, job.cursor)
            self._write(reader.source, job, got, report, more=True)
            if isinstance(got, OSError):
                return
            outcome = got

    def _plan(self, reader: Reader, path: Path, report: SourceReport) -> Job | None:
        """Decide whether and from where to read `path`; None when it is unchanged or gone."""
        key = path_key(path)
        try:
            st = path.stat()
        except FileNotFoundError:
            report.skipped[VANISHED] += 1
            return None
        except OSError as exc:
            self._file_error(key, reader.source, report, exc)
            return None
        if not stat.S_ISREG(st.st_mode):  # a FIFO, a device, a socket (links resolved)
            self._file_error(key, reader.source, report, NotRegularFile(path, st.st_mode))
            return None
        row = self.conn.execute(
            'SELECT id, inode, size, mtime_ns, "offset", head, state FROM files WHERE path = ?',
            (key,),
        ).fetchone()
        if row is not None and (row[1], row[2], row[3]) == (st.st_ino, st.st_size, st.st_mtime_ns):
            return None  # unchanged since the last read
        file_id: int | None = row[0] if row else None
        reset = row is None
        if row is not None:
            offset, head = int(row[4]), bytes(row[5] or b"")
            reset = row[1] != st.st_ino or st.st_size < offset or not same_head(path, offset, head)
        cursor = Cursor() if reset else Cursor(offset=int(row[4]), state=unpack_state(row[6]))
        return Job(path, st, file_id, reset, cursor)

    def _write(
        self, source: str, job: Job, outcome: Outcome, report: SourceReport, *, more: bool = False
    ) -> None:
        """Write one read of a file; `more`: a read after the first of one `index` run, whose
        file is counted once."""
        key = path_key(job.path)
        if isinstance(outcome, OSError):
            if isinstance(outcome, FileNotFoundError):
                report.skipped[VANISHED] += 1
            else:
                self._file_error(key, source, report, outcome)
            return
        result = outcome
        report.files_read += 0 if more else 1
        try:
            file_id = job.file_id
            if job.reset and file_id is not None:
                self._drop_file_events(file_id)
            file_id = self._save_file(key, source, job.st, result, file_id, job.reset)
            for chunk in result.chunks:
                written = self._apply_chunk(chunk, file_id)
                if written >= 0:
                    report.sessions.add(chunk.session.id)
                    report.events += written
                    self._pending += max(written, 1)
        except BaseException:
            self.conn.rollback()
            raise
        if self._pending >= COMMIT_EVERY or self._unpacked >= textpack.TRAIN_AFTER:
            self.commit()
        report.skipped.update(result.skipped)
        if result.refused:
            report.skipped["refused"] += 1
            report.errors.append(f"{key}: {result.refused}")

    def _save_file(
        self,
        key: str,
        source: str,
        st: os.stat_result,
        result: Read,
        file_id: int | None,
        reset: bool,
    ) -> int:
        values = (
            st.st_ino,
            # a file read in part is never taken as unchanged: the next run reads it on
            -1 if result.more else st.st_size,
            st.st_mtime_ns,
            result.offset,
            result.head,
            result.state,
            result.refused,
            int(time.time() * 1000),
        )
        if file_id is None:
            cur = self.conn.execute(
                'INSERT INTO files (inode, size, mtime_ns, "offset", head, state, refused, '
                "indexed_at, path, source, skipped) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*values, key, source, json.dumps(dict(result.skipped))),
            )
            return int(cur.lastrowid or 0)
        old = (
            {}
            if reset
            else json.loads(
                self.conn.execute("SELECT skipped FROM files WHERE id = ?", (file_id,)).fetchone()[
                    0
                ]
            )
        )
        skipped = Counter(old)
        skipped.update(result.skipped)
        self.conn.execute(
            'UPDATE files SET inode = ?, size = ?, mtime_ns = ?, "offset" = ?, head = ?, '
            "state = ?, refused = ?, indexed_at = ?, skipped = ?, error = NULL, missing = 0 "
            "WHERE id = ?",
            (*values, json.dumps(dict(skipped)), file_id),
        )
        return file_id

    def _file_error(self, key: str, source: str, report: SourceReport, exc: OSError) -> None:
        """Count a file that cannot be read (no permission, a FIFO, a device) and keep why, so
        `huiyi doctor` names it."""
        reason = NOT_REGULAR if isinstance(exc, NotRegularFile) else "unreadable"
        report.skipped[reason] += 1
        report.errors.append(f"{key}: {exc.strerror or exc}")
        with self.conn:
            self.conn.execute(
                "INSERT INTO files (path, source, error) VALUES (?, ?, ?) "
                "ON CONFLICT(path) DO UPDATE SET error = excluded.error",
                (key, source, exc.strerror or str(exc)),
            )

    def _mark_missing(self, source: str, present: set[str]) -> None:
        rows = self.conn.execute(
            "SELECT id, path FROM files WHERE source = ? AND missing = 0", (source,)
        ).fetchall()
        gone = [(fid,) for fid, path in rows if path not in present]
        if gone:
            with self.conn:
                self.conn.executemany("UPDATE files SET missing = 1 WHERE id = ?", gone)

    def _drop_file_events(self, file_id: int) -> None:
        for (sid,) in self.conn.execute(
            "SELECT sid FROM sessions WHERE file_id = ?", (file_id,)
        ).fetchall():
            self.delete_events(sid)

    # -- sessions and events -------------------------------------------------------------

    def delete_events(self, sid: int, *, seqs: Iterable[int] | None = None) -> int:
        """Remove events (all of a session's, or some seqs) and their full-text rows."""
        ws_row = self.conn.execute(
            "SELECT workspace FROM sessions WHERE sid = ?", (sid,)
        ).fetchone()
        workspace = ws_row[0] if ws_row else ""
        sql = (
            "SELECT id, event_text(text), kind, injected FROM events WHERE sid = ? AND indexed = 1"
        )
        params: list[Any] = [sid]
        if seqs is not None:
            wanted = list(seqs)
            sql += f" AND seq IN ({','.join('?' * len(wanted))})"
            params.extend(wanted)
        remove_rows(self.conn, workspace, self.conn.execute(sql, params).fetchall())
        if seqs is None:
            cur = self.conn.execute("DELETE FROM events WHERE sid = ?", (sid,))
        else:
            cur = self.conn.execute(
                f"DELETE FROM events WHERE sid = ? AND seq IN ({','.join('?' * len(wanted))})",
                [sid, *wanted],
            )
        return cur.rowcount

    def _apply_chunk(self, chunk: Prepared, file_id: int) -> int:
        """Write one session's news; returns events written, or -1 if the session is forgotten."""
        update = chunk.session
        if update.id in self._forgotten_sessions:
            return -1
        sid, workspace, was_private = self._upsert_session(update, file_id)
        if workspace in self._forgotten_workspaces:
            return -1
        rows = chunk.rows
        if self._no_copy:
            rows = [
                (*row[:5], readthrough.locator(file_id, row[5], row[11]), *row[6:])  # type: ignore[arg-type]
                for row in rows
            ]
        written = self._upsert_events(sid, workspace, rows)
        for seq, surface in chunk.surface.items():
            self.conn.execute(
                "UPDATE events SET surface_code = ? WHERE sid = ? AND seq = ?",
                (surface, sid, seq),
            )
        if chunk.shadow_before is not None:
            self.conn.execute(
                "UPDATE events SET surface_code = ? WHERE sid = ? AND seq < ? AND surface_code = ?",
                (
                    surface_code(Surface.SHADOWED),
                    sid,
                    chunk.shadow_before,
                    surface_code(Surface.CURRENT),
                ),
            )
        first = chunk.first_user
        if self._no_copy and first is not None:
            first = ("", first[1])  # only whether it carries a private marker
        first_user_marked = self._refresh_counts(sid, first)
        self._settle_privacy(
            sid, was_private=was_private, marked=first_user_marked or chunk.marked_title
        )
        return written

    def _settle_privacy(self, sid: int, *, was_private: bool, marked: bool) -> None:
        """Apply what this chunk taught about privacy: a marker seen, a private parent; a
        session that turned private takes every session below it along."""
        session_id, parent, private = self.conn.execute(
            "SELECT id, parent, is_private FROM sessions WHERE sid = ?", (sid,)
        ).fetchone()
        if not private and (
            marked or (parent is not None and is_private_session(self.conn, parent))
        ):
            self.conn.execute("UPDATE sessions SET is_private = 1 WHERE sid = ?", (sid,))
            private = 1
        if private and not was_private:
            mark_private(self.conn, [session_id])

    def _upsert_session(self, update: SessionUpdate, file_id: int) -> tuple[int, str, bool]:
        """Insert or update the session row; returns its sid, workspace and whether it was
        private before this read (False for a new session)."""
        row = self.conn.execute(
            "SELECT sid, cwd, workspace, title, title_unreadable, created, updated, parent, "
            "is_subagent, is_private FROM sessions WHERE id = ?",
            (update.id,),
        ).fetchone()
        if row is None:
            cwd = update.cwd or ""
            workspace = workspace_of(cwd)
            cur = self.conn.execute(
                "INSERT INTO sessions (id, source, file_id, cwd, workspace, title, "
                "title_unreadable, created, updated, parent, is_subagent, is_private) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    update.id,
                    update.source,
                    file_id,
                    cwd,
                    workspace,
                    None if self._no_copy else update.title,
                    int(update.title_unreadable),
                    update.created,
                    update.updated,
                    update.parent,
                    int(bool(update.is_subagent)),
                    int(is_private_title(update.title, unreadable=update.title_unreadable)),
                ),
            )
            return int(cur.lastrowid or 0), workspace, False
        sid, cwd, workspace = row[0], row[1], row[2]
        if update.cwd and update.cwd != cwd:
            new_ws = workspace_of(update.cwd)
            if new_ws != workspace:
                self._move_workspace(sid, workspace, new_ws)
            cwd, workspace = update.cwd, new_ws
        title = update.title if update.title is not None else row[3]
        unreadable = bool(update.title_unreadable) if update.title is not None else bool(row[4])
        unreadable = unreadable or update.title_unreadable
        created = row[5] if row[5] is not None else update.created
        updated = max((t for t in (row[6], update.updated) if t is not None), default=None)
        self.conn.execute(
            "UPDATE sessions SET file_id = ?, cwd = ?, workspace = ?, title = ?, "
            "title_unreadable = ?, created = ?, updated = ?, parent = ?, is_subagent = ?, "
            "is_private = max(is_private, ?) WHERE sid = ?",
            (
                file_id,
                cwd,
                workspace,
                None if self._no_copy else title,
                int(unreadable),
                created,
                updated,
                update.parent if update.parent is not None else row[7],
                int(update.is_subagent) if update.is_subagent is not None else row[8],
                int(is_private_title(title, unreadable=unreadable)),
                sid,
            ),
        )
        return sid, workspace, bool(row[9])

    def _move_workspace(self, sid: int, old: str, new: str) -> None:
        rows = self.conn.execute(
            "SELECT id, event_text(text), kind, injected FROM events WHERE sid = ? AND indexed = 1",
            (sid,),
        ).fetchall()
        remove_rows(self.conn, old, rows)
        add_rows(
            self.conn,
            new,
            (
                (rowid, stored_streams(text, kind, bool(injected)))
                for rowid, text, kind, injected in rows
            ),
        )

    def _upsert_events(self, sid: int, workspace: str, rows: list[Row]) -> int:
        if not rows:
            return 0
        seqs = [row[0] for row in rows]
        existing: dict[int, tuple[int, int, str, str, int]] = {}
        for start in range(0, len(seqs), 500):
            part = seqs[start : start + 500]
            for seq, rowid, indexed, text, kind, injected in self.conn.execute(
                f"SELECT seq, id, indexed, event_text(text), kind, injected FROM events "
                f"WHERE sid = ? "
                f"AND seq IN ({','.join('?' * len(part))})",
                [sid, *part],
            ):
                existing[seq] = (rowid, indexed, text, kind, injected)
        taken = self._uids_taken_elsewhere(
            sid, {row[1]: row[0] for row in rows if row[1] is not None}
        )
        pack, packing = self._codec.pack, self._codec.packing
        fresh: list[tuple[Any, ...]] = []  # new rows: a plain INSERT
        replaced: list[tuple[Any, ...]] = []  # rows of seqs read before
        texts: list[tuple[int, Streams]] = []
        stale: list[Indexed] = []
        written: list[tuple[str, bool, bool]] = []  # kind, injected, indexed of each row
        for (
            seq,
            uid,
            when,
            kind_code,
            role_code,
            text,
            surface,
            injected,
            tool,
            kind,
            streams,
            _where,
        ) in rows:
            if uid is not None and uid in taken:
                continue
            old = existing.get(seq)
            if old is not None:
                rowid = old[0]
                if old[1]:
                    stale.append((rowid, old[2], old[3], old[4]))
            else:
                rowid = self._next_id
                self._next_id += 1
            # the readers tokenised exactly the events that are indexed (None for the others)
            indexed = streams is not None
            written.append((kind, bool(injected), indexed))
            if not packing and isinstance(text, str) and textpack.worth_packing(text):
                self._unpacked += 1
            (fresh if old is None else replaced).append(
                (
                    rowid,
                    sid,
                    seq,
                    when,
                    kind_code,
                    role_code,
                    text if type(text) is bytes else pack(text),  # packed by a reader
                    surface,
                    injected,
                    tool,
                    uid,
                    int(indexed),
                )
            )
            if streams is not None:
                texts.append((rowid, streams))
        if stale:
            remove_rows(self.conn, workspace, stale)
        # `OR REPLACE` only where a row is replaced: such a statement runs in a statement
        # savepoint, where FTS5 writes its pending rows out as a new segment (migration m006
        # says more); on every file it made a first index's writer much slower
        for verb, values in (("INSERT", fresh), ("INSERT OR REPLACE", replaced)):
            if values:
                self.conn.executemany(
                    f"{verb} INTO events (id, sid, seq, time, kind_code, role_code, text, "
                    "surface_code, injected, tool_name, uid, indexed) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    values,
                )
        add_rows(self.conn, workspace, texts)
        vectors.count_new_events(self.conn, sid, written)
        # titles are not counted
        return sum(1 for kind, _, _ in written if kind in INDEXABLE_KINDS)

    def _uids_taken_elsewhere(self, sid: int, wanted: dict[bytes, int]) -> set[bytes]:
        """uid keys (`uid_key`, with the seq this read gives each) already indexed under another
        session or seq (history copied on resume)."""
        taken: set[bytes] = set()
        keys = list(wanted)
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            for uid, other_sid, seq in self.conn.execute(
                f"SELECT uid, sid, seq FROM events WHERE uid IN ({','.join('?' * len(part))})",
                part,
            ):
                if other_sid != sid or seq != wanted[uid]:
                    taken.add(uid)
        return taken

    def _refresh_counts(self, sid: int, first_user: tuple[str, bool] | None) -> bool:
        """Update the session's counts and times, and its first user message when this read
        brought it (`Prepared.first_user`); returns whether that message, new to the session,
        carries a private marker."""
        if first_user is not None:
            (known,) = self.conn.execute(
                "SELECT first_user IS NOT NULL FROM sessions WHERE sid = ?", (sid,)
            ).fetchone()
            if known:
                first_user = None
        self.conn.execute(
            "UPDATE sessions SET "
            f"event_count = (SELECT count(*) FROM events WHERE sid = :sid AND kind IN "
            f"({sql_kinds(TEXT_KINDS)})), "
            "user_count = (SELECT count(*) FROM events WHERE sid = :sid AND kind = 'user' "
            "AND injected = 0), "
            "first_user = coalesce(first_user, :first), "
            "updated = max(coalesce(updated, 0), coalesce((SELECT max(time) FROM events "
            "WHERE sid = :sid), 0)) "
            "WHERE sid = :sid",
            {"sid": sid, "first": first_user[0] if first_user else None},
        )
        return first_user is not None and first_user[1]


def is_private_session(conn: sqlite3.Connection, session_id: str) -> bool:
    """Whether the index holds `session_id` as private (False when it does not hold it)."""
    row = conn.execute("SELECT is_private FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return bool(row and row[0])


def mark_private(conn: sqlite3.Connection, session_ids: Iterable[str]) -> None:
    """Make these sessions and every session below them (children by `parent`, at any depth)
    private. Call inside a write transaction."""
    for session_id in session_ids:
        conn.execute(
            "WITH RECURSIVE below(id) AS (SELECT ? UNION "
            "SELECT s.id FROM sessions AS s JOIN below AS b ON s.parent = b.id) "
            "UPDATE sessions SET is_private = 1 "
            "WHERE is_private = 0 AND id IN (SELECT id FROM below)",
            (session_id,),
        )


def spread_privacy(conn: sqlite3.Connection) -> None:
    """Make every session below a private one private (after rows were copied in wholesale, as a
    repair does). Call inside a write transaction."""
    conn.execute(
        "WITH RECURSIVE below(id) AS (SELECT id FROM sessions WHERE is_private = 1 UNION "
        "SELECT s.id FROM sessions AS s JOIN below AS b ON s.parent = b.id) "
        "UPDATE sessions SET is_private = 1 "
        "WHERE is_private = 0 AND id IN (SELECT id FROM below)"
    )
