"""No-copy mode: the index keeps where each event's text lives, never the text itself.

An index in this mode (it has the table `no_copy`) holds, for every event, a locator in
`events.text` instead of the text: a BLOB of one zero byte (no dictionary of `store.textpack` has
number 0), the id of the log file in `files` (8 bytes), a BLAKE2b digest of the text (16 bytes)
and where the record the event was read from lives in that log (`sources.base.Where`: the byte
offset of its line, or of its zstd frame for a compressed DSH log, 8 bytes; the line's offset in
the frame's text, 4; the bytes it spans, 4). A locator made by `drop_text` (switching an index
with kept texts) has no position: the 25 bytes before it. The full-text and trigram tables are
contentless (`content=''`) in either mode, and the vectors are numbers, so nothing in the index
file spells the conversation out; the session's title and first message are not kept either.

`event_text` (the SQL function every reader of `events.text` goes through) hands a locator to
`ReadThrough.text`: it asks the reader that indexed the log for the one record at that position
(`read_at`: the record's line, after the log's first line, which may be a header the record
needs) and gives back the text of the event with that digest; the safety exit downstream then
treats it as any kept text. Only when the record there no longer gives that text (the log was
rewritten, or the event was made of several records), or the locator has no position, is the
whole log read again with the same reader, and the event found by its digest. A log that is
gone, or no longer holds a text with that digest (it changed), gives "" and is counted in
`ReadThrough.gone`: the exits drop such events with `GONE_NOTE`, and neither the embedder nor
the team push takes them (`kept_or_found`). When such an event is deleted, its full-text rows
stay (the contentless tables need its words to delete them) and its id is never given again
(`leave_stale`), so they point at no event.

What was read is kept in memory, never on disk, for the next asks: the texts of located
records, and the texts of logs read whole by digest (each up to `CACHED_CHARS` characters of
the most recently asked, for as long as the log's size, inode and mtime stay the same), so the
warm service answers the next search from memory.
"""

from __future__ import annotations

import os
import sqlite3
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from huiyi.sources.base import Reader, Where

__all__ = [
    "GONE_NOTE",
    "ReadThrough",
    "digest",
    "is_locator",
    "locator",
    "no_copy",
    "set_no_copy",
]

#: the first byte of a locator (dictionaries are numbered from 1)
MARK = 0
DIGEST_BYTES = 16
#: what an exit says of the events it dropped because their log is gone or changed
GONE_NOTE = "the log is gone; huiyi keeps no copy of it in this mode"
#: characters of log texts kept in memory (the logs most recently asked); one log is kept
#: whatever its size
CACHED_CHARS = 16_000_000

#: the readers a read-through asks, by source (set by whoever opened the index)
ReaderSource = Callable[[], Iterable["Reader"]]


def digest(text: str) -> bytes:
    """The digest a locator keeps of `text` (`hashlib` is imported here: a search that reads no
    locator never needs it)."""
    import hashlib

    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


#: the bytes of a locator without a position, and with one
BARE = 9 + DIGEST_BYTES
PLACED = BARE + 16


def locator(file_id: int, text: str, where: Where | None = None) -> bytes:
    """What `events.text` keeps of `text`, read from the log `file_id` (from the record at
    `where`, when the reader said), in no-copy mode."""
    kept = bytes((MARK,)) + file_id.to_bytes(8, "big") + digest(text)
    if where is None:
        return kept
    offset, inside, span = where
    return kept + offset.to_bytes(8, "big") + inside.to_bytes(4, "big") + span.to_bytes(4, "big")


def is_locator(value: object) -> bool:
    return isinstance(value, bytes) and len(value) in (BARE, PLACED) and value[0] == MARK


def position(value: bytes) -> Where | None:
    """Where a locator says its record lives, or None (a locator without a position)."""
    if len(value) != PLACED:
        return None
    return (
        int.from_bytes(value[BARE : BARE + 8], "big"),
        int.from_bytes(value[BARE + 8 : BARE + 12], "big"),
        int.from_bytes(value[BARE + 12 :], "big"),
    )


def no_copy(conn: sqlite3.Connection) -> bool:
    """Whether the index keeps no text (the table `no_copy` exists)."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'no_copy'").fetchone()
    return row is not None


def set_no_copy(conn: sqlite3.Connection, on: bool) -> None:
    """Mark the index as keeping no text (`on`) or keeping it; in the caller's transaction."""
    if on:
        conn.execute("CREATE TABLE IF NOT EXISTS no_copy (since INTEGER NOT NULL)")
        if conn.execute("SELECT count(*) FROM no_copy").fetchone()[0] == 0:
            conn.execute("INSERT INTO no_copy (since) VALUES (strftime('%s', 'now') * 1000)")
    else:
        conn.execute("DROP TABLE IF EXISTS no_copy")


def settle(conn: sqlite3.Connection, *, keep_text: bool) -> str | None:
    """A first index takes the mode `keep_text` asks for; an index with events stays in its
    own, and the warning returned names the command that switches it."""
    if no_copy(conn) != (not keep_text):
        if conn.execute("SELECT 1 FROM events LIMIT 1").fetchone() is None:
            with conn:
                set_no_copy(conn, not keep_text)
            return None
        mode = "keeps the text of every event" if not keep_text else "keeps no text"
        switch = "huiyi no-copy on" if not keep_text else "huiyi no-copy off"
        return (
            f"keepText is {str(keep_text).lower()}, but this index {mode}; `{switch}` switches it"
        )
    return None


_readers: ReaderSource | None = None


def use_readers(readers: ReaderSource) -> None:
    """Read logs again with these readers (called by whoever opens an index in this process;
    asked only when a locator is first read)."""
    global _readers
    _readers = readers
    _READERS.clear()


_READERS: dict[str, Reader] = {}


def _reader(source: str, path: Path) -> Reader | None:
    if not _READERS and _readers is not None:
        _READERS.update({r.source: r for r in _readers()})
    found = _READERS.get(source)
    if found is None:
        from huiyi.sources import generic_reader

        generic = generic_reader([path])
        if generic.source == source:
            return generic
    return found


class ReadThrough:
    """The texts of located events, read again from their logs (see the module docstring)."""

    def __init__(self, connection: Callable[[], sqlite3.Connection | None]) -> None:
        self._connection = connection
        self._files: OrderedDict[int, tuple[tuple[int, int, int], Mapping[bytes, str], int]] = (
            OrderedDict()
        )
        self._chars = 0
        #: texts of located records read on their own, by locator
        self._records: OrderedDict[bytes, tuple[tuple[int, int, int], str]] = OrderedDict()
        self._record_chars = 0
        #: located texts asked for whose log is gone or changed, since `reset_gone`
        self.gone = 0

    def reset_gone(self) -> int:
        gone, self.gone = self.gone, 0
        return gone

    def text(self, value: bytes) -> str:
        """The text a locator points at, or "" (counted in `gone`)."""
        file_id = int.from_bytes(value[1:9], "big")
        want = bytes(value[9:BARE])
        where = position(value)
        found = None if where is None else self._record(file_id, want, where, bytes(value))
        if found is None:
            found = self.texts(file_id).get(want)
        if found is None:
            self.gone += 1
            return ""
        return found

    def _record(self, file_id: int, want: bytes, where: Where, key: bytes) -> str | None:
        """The text with digest `want` of the one record at `where`, or None: the log is gone,
        or the record there gives no such text (the caller then reads the whole log)."""
        conn = self._connection()
        if conn is None:
            return None
        row = conn.execute("SELECT path, source FROM files WHERE id = ?", (file_id,)).fetchone()
        if row is None:
            return None
        path = Path(row[0])
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._records.get(key)
        if cached is not None and cached[0] == stamp:
            self._records.move_to_end(key)
            return cached[1]
        whole = self._files.get(file_id)
        if whole is not None and whole[0] == stamp:
            return whole[1].get(want)
        reader = _reader(row[1], path)
        read_at = getattr(reader, "read_at", None)
        if read_at is None:
            return None
        try:
            events = read_at(path, where)
        except OSError:
            return None
        for event in events:
            if digest(event.text) == want:
                self._keep_record(key, stamp, event.text)
                return str(event.text)
        return None

    def _keep_record(self, key: bytes, stamp: tuple[int, int, int], text: str) -> None:
        old = self._records.pop(key, None)
        if old is not None:
            self._record_chars -= len(old[1])
        self._records[key] = (stamp, text)
        self._record_chars += len(text)
        while self._record_chars > CACHED_CHARS and len(self._records) > 1:
            self._record_chars -= len(self._records.popitem(last=False)[1][1])

    def texts(self, file_id: int) -> Mapping[bytes, str]:
        """Every text the log `file_id` holds now, by digest (empty when it is gone)."""
        conn = self._connection()
        if conn is None:
            return {}
        row = conn.execute("SELECT path, source FROM files WHERE id = ?", (file_id,)).fetchone()
        if row is None:
            return {}
        path = Path(row[0])
        try:
            st = os.stat(path)
        except OSError:
            self._drop(file_id)
            return {}
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._files.get(file_id)
        if cached is not None and cached[0] == stamp:
            self._files.move_to_end(file_id)
            return cached[1]
        reader = _reader(row[1], path)
        texts = {} if reader is None else read_texts(reader, path)
        self._drop(file_id)
        size = sum(map(len, texts.values()))
        self._files[file_id] = (stamp, texts, size)
        self._chars += size
        while self._chars > CACHED_CHARS and len(self._files) > 1:
            self._chars -= self._files.popitem(last=False)[1][2]
        return texts

    def _drop(self, file_id: int) -> None:
        kept = self._files.pop(file_id, None)
        if kept is not None:
            self._chars -= kept[2]

    def forget(self) -> None:
        """Drop the kept texts (the logs may have changed)."""
        self._files.clear()
        self._chars = 0
        self._records.clear()
        self._record_chars = 0


def read_texts(reader: Reader, path: Path) -> dict[bytes, str]:
    """Every event text of one log by digest, read with `reader` as indexing read it."""
    from huiyi.sources.base import Cursor

    texts: dict[bytes, str] = {}
    cursor = Cursor()
    try:
        while True:
            result = reader.read(path, cursor)
            for chunk in result.chunks:
                for event in chunk.events:
                    texts[digest(event.text)] = event.text
            if not result.more or result.offset <= cursor.offset:
                break
            cursor = Cursor(result.offset, result.state)
    except OSError:
        return {}
    return texts


_IS_LOCATOR = f"typeof(text) = 'blob' AND substr(text, 1, 1) = x'{MARK:02x}'"


def leave_stale(conn: sqlite3.Connection, rowid: int) -> None:
    """Say that full-text rows of event `rowid` (and of lower ids) stay behind: the event went,
    and its text, no longer in its log, cannot tell the contentless tables what to delete. No
    event gets such an id again (`next_event_id`), so a stale row points at no event, and a
    search that finds it shows nothing, never another event's text."""
    conn.execute("CREATE TABLE IF NOT EXISTS stale_rows (below INTEGER NOT NULL)")
    conn.execute("DELETE FROM stale_rows WHERE below <= ?", (rowid,))
    if conn.execute("SELECT 1 FROM stale_rows").fetchone() is None:
        conn.execute("INSERT INTO stale_rows (below) VALUES (?)", (rowid,))


def next_event_id(conn: sqlite3.Connection) -> int:
    """The id the next new event gets: above every event's, and above every id whose full-text
    rows stayed behind (`leave_stale`)."""
    (last,) = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'stale_rows'").fetchone():
        (stale,) = conn.execute("SELECT coalesce(max(below), 0) FROM stale_rows").fetchone()
        last = max(last, stale)
    return int(last) + 1


def kept_or_found(column: str) -> str:
    """SQL true for an event whose text is there: kept, or located and still in its log. A gone
    event (`GONE_NOTE`) has no text to embed or to push, and is passed over."""
    located = _IS_LOCATOR.replace("text", column)
    return f"NOT ({located} AND event_text({column}) = '')"


def drop_text(conn: sqlite3.Connection) -> dict[str, int]:
    """Turn the index into no-copy mode: every kept text becomes a locator of its log, titles
    and first messages are dropped, and the text dictionaries (trained on the texts) go.

    Runs in the caller's transaction; the caller vacuums afterwards, so that no page of the
    file still holds a text. Returns what it did: `texts` replaced, `titles` dropped."""
    conn.create_function("event_locate", 2, lambda fid, text: locator(int(fid or 0), text))
    (texts,) = conn.execute(f"SELECT count(*) FROM events WHERE NOT ({_IS_LOCATOR})").fetchone()
    conn.execute(
        "UPDATE events SET text = event_locate((SELECT s.file_id FROM sessions s "
        f"WHERE s.sid = events.sid), event_text(text)) WHERE NOT ({_IS_LOCATOR})"
    )
    titles = conn.execute(
        "UPDATE sessions SET title = NULL, first_user = CASE WHEN first_user IS NULL "
        "THEN NULL ELSE '' END WHERE title IS NOT NULL OR first_user != ''"
    ).rowcount
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'text_dicts'").fetchone():
        conn.execute("DELETE FROM text_dicts")
    set_no_copy(conn, True)
    return {"texts": int(texts), "titles": int(titles)}


def keep_text(conn: sqlite3.Connection, first_user: Callable[[str], str]) -> dict[str, int]:
    """Leave no-copy mode: every locator whose log still holds its text gets the text back
    (`first_user` makes a session's first message what the index keeps of it). Runs in the
    caller's transaction. Returns `texts` read back and `gone` (their logs gone or changed:
    they stay located, and show nothing)."""
    # the SQL function `event_text` reads a located text from its log
    rows = conn.execute(f"SELECT id, event_text(text) FROM events WHERE {_IS_LOCATOR}").fetchall()
    back = [(text, rowid) for rowid, text in rows if text]
    conn.executemany("UPDATE events SET text = ? WHERE id = ?", back)
    firsts = conn.execute(
        "SELECT s.sid, (SELECT e.text FROM events e WHERE e.sid = s.sid AND e.kind = 'user' "
        "AND e.injected = 0 AND typeof(e.text) = 'text' AND e.text != '' ORDER BY e.seq LIMIT 1) "
        "FROM sessions s WHERE s.first_user = ''"
    ).fetchall()
    conn.executemany(
        "UPDATE sessions SET first_user = ? WHERE sid = ?",
        [(first_user(text), sid) for sid, text in firsts if text],
    )
    set_no_copy(conn, False)
    return {"texts": len(back), "gone": len(rows) - len(back)}


def count_gone(conn: sqlite3.Connection, through: ReadThrough) -> dict[str, int]:
    """How many located events there are, and how many of them their log no longer holds."""
    located = gone = 0
    by_file: dict[int, list[bytes]] = {}
    for (value,) in conn.execute(f"SELECT text FROM events WHERE {_IS_LOCATOR}"):
        located += 1
        by_file.setdefault(int.from_bytes(value[1:9], "big"), []).append(bytes(value[9:BARE]))
    for file_id, digests in by_file.items():
        texts = through.texts(file_id)
        gone += sum(1 for d in digests if d not in texts)
    return {"located": located, "gone": gone}
