"""Schema migrations, applied in order on open and recorded in `_migrations`.

A released migration is never edited: a change to the schema is a new `mNNN_` function. Each
one runs in its own transaction (`BEGIN IMMEDIATE` ... `COMMIT`, rolled back on any error), so
a migration that fails leaves the index exactly as it was. That is why the schema is a list of
single statements run with `execute`: `executescript` would commit first. Migration code is
frozen and imports nothing of huiyi: when a migration needs a derived index filled from the
kept text (the fuzzy layer, added to indexes that already held events), it records that in
`_rebuild` and the live code rebuilds it (`db.connect`, with the same `textindex.rebuild` that
`huiyi doctor --repair` uses). An index that records a migration this code does not know was
written by a newer huiyi, and `unknown` names it so that it is refused rather than damaged.

Why the FTS table looks like this: SQLite's tokenizers cannot split Chinese into words and
Python's `sqlite3` cannot register a tokenizer, so `huiyi.text.tokenize` splits text in Python
and FTS5 receives space-separated tokens (`unicode61` with `_` as a token character only splits
on those spaces). The table is contentless (`content=''`): the text lives once, in `events`, and
rows are deleted with FTS5's `'delete'` command by re-tokenising the stored text. Three columns:
`body` (parts and CJK bigrams, positional, for phrases), `whole` (whole compounds such as
`src_app_main_py`, weighted higher) and `scope` (one token naming the session's workspace, so a
workspace filter runs inside the full-text index instead of after it).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]


#: the first release's schema, one statement each (see the module docstring)
M001_SCHEMA = (
    """
    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        inode INTEGER,
        size INTEGER,
        mtime_ns INTEGER,
        "offset" INTEGER NOT NULL DEFAULT 0,
        head BLOB,
        state TEXT NOT NULL DEFAULT '{}',
        skipped TEXT NOT NULL DEFAULT '{}',
        refused TEXT,
        error TEXT,
        missing INTEGER NOT NULL DEFAULT 0,
        indexed_at INTEGER
    )
    """,
    """
    CREATE TABLE sessions (
        sid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        file_id INTEGER REFERENCES files(id) ON DELETE SET NULL,
        cwd TEXT NOT NULL DEFAULT '',
        workspace TEXT NOT NULL DEFAULT '',
        title TEXT,
        first_user TEXT,
        title_unreadable INTEGER NOT NULL DEFAULT 0,
        created INTEGER,
        updated INTEGER,
        parent TEXT,
        is_subagent INTEGER NOT NULL DEFAULT 0,
        is_private INTEGER NOT NULL DEFAULT 0,
        event_count INTEGER NOT NULL DEFAULT 0,
        user_count INTEGER NOT NULL DEFAULT 0
    )
    """,
    "CREATE INDEX sessions_by_workspace ON sessions(workspace, updated)",
    "CREATE INDEX sessions_by_file ON sessions(file_id)",
    """
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        sid INTEGER NOT NULL REFERENCES sessions(sid) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        time INTEGER NOT NULL,
        kind TEXT NOT NULL,
        role TEXT NOT NULL,
        text TEXT NOT NULL,
        surface TEXT NOT NULL,
        injected INTEGER NOT NULL DEFAULT 0,
        tool_name TEXT,
        uid TEXT,
        indexed INTEGER NOT NULL DEFAULT 0,
        UNIQUE (sid, seq)
    )
    """,
    "CREATE UNIQUE INDEX events_by_uid ON events(uid) WHERE uid IS NOT NULL",
    """
    CREATE TABLE forgotten (
        kind TEXT NOT NULL CHECK (kind IN ('session', 'workspace')),
        value TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (kind, value)
    )
    """,
    """
    CREATE VIRTUAL TABLE event_fts USING fts5(
        body, whole, scope,
        content='',
        tokenize="unicode61 remove_diacritics 0 tokenchars '_'"
    )
    """,
)


def m001_initial(conn: sqlite3.Connection) -> None:
    for statement in M001_SCHEMA:
        conn.execute(statement)


def m002_fuzzy_and_vectors(conn: sqlite3.Connection) -> None:
    """The fuzzy layer's trigram index and the semantic layer's vectors.

    `event_fuzzy` holds the NFKC-folded, lower-cased text of human and assistant messages and
    summaries (not tool traffic: it is large and rarely half-remembered) under FTS5's `trigram`
    tokenizer, so a query with a typo still shares most of its character trigrams with the
    passage. Queries are ORs of single trigrams, so the table keeps no positions
    (`detail=none`: half the write cost and size); without column filters, the workspace is one
    trigram of private-use characters in `scope` (`workspace.fuzzy_scope_token`). Contentless
    like `event_fts`; deletes recompute the text. `vectors` holds one
    float16 embedding per event and model, dropped with its event (a changed text is embedded
    again).
    """
    for statement in (
        "CREATE VIRTUAL TABLE event_fuzzy USING fts5("
        "text, scope, content='', tokenize='trigram', detail=none)",
        """
        CREATE TABLE vectors (
            event_id INTEGER PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
            model TEXT NOT NULL,
            vec BLOB NOT NULL
        )
        """,
        "CREATE INDEX vectors_by_model ON vectors(model)",
    ):
        conn.execute(statement)
    # Let FTS5 keep more segments per level before merging: a first index runs faster for the
    # same search latency (benchmarks/).
    for table in ("event_fts", "event_fuzzy"):
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('automerge', 16)")
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('crisismerge', 64)")
    # events indexed before this migration are not in `event_fuzzy` yet: the live code fills it
    conn.execute("INSERT INTO _rebuild (what) SELECT 'text' WHERE EXISTS (SELECT 1 FROM events)")


def m003_read_logs_again(conn: sqlite3.Connection) -> None:
    """Read every log that still exists again from its start on the next `huiyi index`.

    The readers of this release index what earlier ones lost or got wrong, and only a fresh
    read finds it: Codex 0.171's typed prompts (it stopped writing `event_msg/user_message`),
    Claude Code's `ai-title`/`custom-title` titles, DSH tool calls kept with the assistant
    message that made them, and huiyi's own tool traffic, which is no longer indexed. Forgetting
    a file's inode makes the next read treat it as replaced: its events are dropped and read
    again, so nothing is duplicated. Sessions whose logs are gone keep their kept text.
    """
    conn.execute(
        "UPDATE files SET inode = NULL WHERE source IN ('claude', 'codex', 'dsh') AND missing = 0"
    )


def m004_read_codex_logs_again(conn: sqlite3.Connection) -> None:
    """Read Codex logs again from their start on the next `huiyi index`.

    Codex 0.171 logs a compaction as the model's summary reply (an assistant message) followed by
    `compacted`, whose message puts a fixed preamble before the summary. Earlier readers indexed
    the reply as conversation and kept the preamble in the summary; this release keeps the reply
    as host traffic and the summary alone. Only Codex logs are affected (their events are read
    again and embedded again), the same way as `m003_read_logs_again`.
    """
    conn.execute("UPDATE files SET inode = NULL WHERE source = 'codex' AND missing = 0")


#: m005: what the semantic layer embeds (frozen copy of `store.vectors`' rule at this release)
M005_EMBEDDABLE = (
    "{e}.indexed = 1 AND {e}.kind IN ('assistant', 'summary', 'user') "
    "AND ({e}.injected = 0 OR {e}.kind = 'summary')"
)
#: add `delta` to one coverage counter: `{what}` selects (workspace, model, delta) rows
M005_BUMP = (
    "INSERT INTO embed_coverage (workspace, model, n) {what} "
    "ON CONFLICT (workspace, model) DO UPDATE SET n = n + excluded.n;"
)


def _m004_event(row: str, sign: str) -> str:
    """Count one event row (`NEW`/`OLD`) and its vector in or out of the counters."""
    visible = f"WHERE s.sid = {row}.sid AND s.is_private = 0"
    return M005_BUMP.format(
        what=f"SELECT s.workspace, '', {sign}1 FROM sessions s {visible}"
    ) + M005_BUMP.format(
        what=f"SELECT s.workspace, v.model, {sign}1 FROM sessions s "
        f"JOIN vectors v ON v.event_id = {row}.id {visible}"
    )


def _m004_session(row: str, sign: str) -> str:
    """Count a whole session (`NEW`/`OLD`) in or out of the counters, when it is visible."""
    events = f"WHERE e.sid = {row}.sid AND {row}.is_private = 0 AND {M005_EMBEDDABLE.format(e='e')}"
    return M005_BUMP.format(
        what=f"SELECT {row}.workspace, '', {sign}count(*) FROM events e {events}"
    ) + M005_BUMP.format(
        what=f"SELECT {row}.workspace, v.model, {sign}count(*) FROM events e "
        f"JOIN vectors v ON v.event_id = e.id {events} GROUP BY v.model"
    )


def _m004_vector(row: str, sign: str) -> str:
    """Count one vector row (`NEW`/`OLD`) in or out, when its event is embeddable and visible."""
    return M005_BUMP.format(
        what=f"SELECT s.workspace, {row}.model, {sign}1 FROM events e "
        f"JOIN sessions s ON s.sid = e.sid WHERE e.id = {row}.event_id "
        f"AND s.is_private = 0 AND {M005_EMBEDDABLE.format(e='e')}"
    )


def m005_embed_coverage(conn: sqlite3.Connection) -> None:
    """Per workspace, how many messages could be embedded and how many are, per model.

    A hybrid search asks this on every call to decide whether the semantic layer joins;
    counting it (events x sessions x vectors) grew with the history. So triggers keep
    `embed_coverage` current on every write, whatever the path (ingest, embedding, forget,
    repair): `model = ''` counts embeddable messages of visible (not private) sessions, any
    other model the vectors of that model on them. An event is counted out before it is
    deleted (its vector with it: the vector's own trigger then finds no event), so `INSERT OR
    REPLACE` must fire delete triggers: every connection sets `recursive_triggers` (`db`).
    """
    embeddable = M005_EMBEDDABLE.format(e="NEW")
    for statement in (
        """
        CREATE TABLE embed_coverage (
            workspace TEXT NOT NULL,
            model TEXT NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (workspace, model)
        ) WITHOUT ROWID
        """,
        f"CREATE TRIGGER embed_coverage_event_in AFTER INSERT ON events WHEN {embeddable} "
        f"BEGIN {_m004_event('NEW', '+')} END",
        f"CREATE TRIGGER embed_coverage_event_out BEFORE DELETE ON events "
        f"WHEN {M005_EMBEDDABLE.format(e='OLD')} BEGIN {_m004_event('OLD', '-')} END",
        f"CREATE TRIGGER embed_coverage_event_was BEFORE UPDATE OF sid, kind, injected, indexed "
        f"ON events WHEN {M005_EMBEDDABLE.format(e='OLD')} BEGIN {_m004_event('OLD', '-')} END",
        f"CREATE TRIGGER embed_coverage_event_is AFTER UPDATE OF sid, kind, injected, indexed "
        f"ON events WHEN {embeddable} BEGIN {_m004_event('NEW', '+')} END",
        "CREATE TRIGGER embed_coverage_session_was BEFORE UPDATE OF workspace, is_private ON "
        "sessions WHEN OLD.workspace IS NOT NEW.workspace OR OLD.is_private IS NOT NEW.is_private "
        f"BEGIN {_m004_session('OLD', '-')} END",
        "CREATE TRIGGER embed_coverage_session_is AFTER UPDATE OF workspace, is_private ON "
        "sessions WHEN OLD.workspace IS NOT NEW.workspace OR OLD.is_private IS NOT NEW.is_private "
        f"BEGIN {_m004_session('NEW', '+')} END",
        f"CREATE TRIGGER embed_coverage_session_out BEFORE DELETE ON sessions "
        f"BEGIN {_m004_session('OLD', '-')} END",
        f"CREATE TRIGGER embed_coverage_vector_in AFTER INSERT ON vectors "
        f"BEGIN {_m004_vector('NEW', '+')} END",
        f"CREATE TRIGGER embed_coverage_vector_out BEFORE DELETE ON vectors "
        f"BEGIN {_m004_vector('OLD', '-')} END",
        f"CREATE TRIGGER embed_coverage_vector_was BEFORE UPDATE OF event_id, model ON vectors "
        f"BEGIN {_m004_vector('OLD', '-')} END",
        f"CREATE TRIGGER embed_coverage_vector_is AFTER UPDATE OF event_id, model ON vectors "
        f"BEGIN {_m004_vector('NEW', '+')} END",
        # what the index already holds
        "INSERT INTO embed_coverage (workspace, model, n) SELECT s.workspace, '', count(*) "
        "FROM events e JOIN sessions s ON s.sid = e.sid "
        f"WHERE s.is_private = 0 AND {M005_EMBEDDABLE.format(e='e')} GROUP BY s.workspace",
        "INSERT INTO embed_coverage (workspace, model, n) SELECT s.workspace, v.model, count(*) "
        "FROM vectors v JOIN events e ON e.id = v.event_id JOIN sessions s ON s.sid = e.sid "
        f"WHERE s.is_private = 0 AND {M005_EMBEDDABLE.format(e='e')} "
        "GROUP BY s.workspace, v.model",
    ):
        conn.execute(statement)


def m006_count_new_events_in_code(conn: sqlite3.Connection) -> None:
    """New events are counted into `embed_coverage` by the code that inserts them, per batch.

    m005's per-row `AFTER INSERT` trigger made the writer of a first index much slower: a
    statement whose trigger may write and abort runs in a statement savepoint, and FTS5 writes
    its pending rows out as a new segment at every savepoint, so each file's inserts became tiny
    segments to merge. The two writers of events, ingestion and the salvage of a repair, now add
    each batch of new rows with one single-row upsert (`store.vectors.count_new_events`).
    Deletes, updates, sessions and vectors keep m005's triggers: those writes are few.
    """
    conn.execute("DROP TRIGGER IF EXISTS embed_coverage_event_in")


def _m007_digest(size: int) -> Callable[[bytes | str | None], bytes | None]:
    """BLAKE2b of `size` bytes of a text or blob (None stays None)."""
    import hashlib  # here, not at the top: every process opens the index through this module

    def digest(value: bytes | str | None) -> bytes | None:
        if value is None:
            return None
        data = value.encode() if isinstance(value, str) else value
        return hashlib.blake2b(data, digest_size=size).digest()

    return digest


def _m007_key(uid: str) -> str:
    """Frozen copy of the Claude reader's `_seen_key`: 8 base64 characters an id."""
    import base64
    import hashlib

    return base64.b64encode(hashlib.blake2b(uid.encode(), digest_size=6).digest()).decode("ascii")


def m007_digests_for_ids(conn: sqlite3.Connection) -> None:
    """Keep digests where whole ids and bytes were kept only to be compared.

    They were a large share of a Claude Code index: `events.uid` (`claude:` and a 36-character
    uuid) with its unique index, each file's first 1,024 bytes, the Claude reader's recent
    record uuids and tool ids in `files.state`. Now:
    - `events.uid` holds 8 bytes of BLAKE2b of `source:uid` (`ingest.uid_key`), a blob;
    - `files.head` holds 16 bytes of BLAKE2b of the first `min(offset, 1,024)` bytes of the
      file (`reading.read_head`), the bytes it held before; an empty head stays empty;
    - a Claude cursor state's `uuids` list becomes `seen`, 8 characters a uuid, and its tool
      names by id (`tools`) become `calls`, by 8 characters an id (the reader still understands
      `uuids` and `tools`).
    What is found, and what is read again, does not change.
    """
    conn.create_function("m007_uid", 1, _m007_digest(8), deterministic=True)
    conn.create_function("m007_head", 1, _m007_digest(16), deterministic=True)
    conn.execute("UPDATE events SET uid = m007_uid(uid) WHERE uid IS NOT NULL")
    conn.execute("UPDATE files SET head = m007_head(head) WHERE length(head) > 0")
    rows = conn.execute(
        "SELECT id, state FROM files WHERE source = 'claude' "
        "AND (state LIKE '%\"uuids\"%' OR state LIKE '%\"tools\"%')"
    ).fetchall()
    for file_id, text in rows:
        state = json.loads(text)
        uuids, tools = state.pop("uuids", []), state.pop("tools", {})
        state["seen"] = "".join(_m007_key(u) for u in uuids if isinstance(u, str))
        state["calls"] = {_m007_key(i): name for i, name in tools.items()}
        conn.execute(
            "UPDATE files SET state = ? WHERE id = ?",
            (json.dumps(state, ensure_ascii=False, separators=(",", ":")), file_id),
        )


#: m008: FTS5's in-memory buffer per text index (bytes; FTS5's default is 1 MB)
M008_HASHSIZE = 8_000_000


def m008_compact_text_indexes(conn: sqlite3.Connection) -> None:
    """Smaller text indexes: no per-row lengths in the trigram index, larger segments in both.

    - `event_fuzzy` keeps no column sizes (`columnsize=0`): its `_docsize` table took room and
      nothing reads it (the fuzzy layer ranks by trigram rarity, never by `bm25()`). FTS5
      cannot drop it from a table, so the table is made again, with m002's merge settings, and
      filled from the kept text by the live code (`_rebuild`: `fuzzy`, the trigram index
      alone; its text is folded, not tokenised).
    - Both indexes buffer up to `M008_HASHSIZE` bytes of new rows (`hashsize`) before writing a
      segment: a first index writes fewer, larger segments, which take less room and less
      merging. The buffer is emptied at every commit, so small writes use little of it.
    """
    conn.execute("DROP TABLE event_fuzzy")
    conn.execute(
        "CREATE VIRTUAL TABLE event_fuzzy USING fts5("
        "text, scope, content='', tokenize='trigram', detail=none, columnsize=0)"
    )
    for table in ("event_fts", "event_fuzzy"):
        for key, value in (
            ("automerge", 16),
            ("crisismerge", 64),
            ("hashsize", M008_HASHSIZE),
        ):
            conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES (?, ?)", (key, value))
    conn.execute(
        "INSERT OR IGNORE INTO _rebuild (what) SELECT 'fuzzy' WHERE EXISTS (SELECT 1 FROM events)"
    )


#: m009: the codes of `store.codes` (frozen copy), as (column, word by code)
M009_CODES = (
    (
        "kind",
        ("user", "assistant", "tool_call", "tool_result", "summary", "title", "other"),
    ),
    ("role", ("user", "assistant", "tool", "system")),
    ("surface", ("current", "shadowed", "log-only")),
)


def _m009_word(column: str, words: tuple[str, ...]) -> str:
    """The generated column giving back the word of `{column}_code` (an uncoded word as is)."""
    cases = " ".join(f"WHEN {n} THEN '{word}'" for n, word in enumerate(words))
    return f"{column} TEXT GENERATED ALWAYS AS (CASE {column}_code {cases} ELSE {column}_code END)"


def _m009_code(column: str, words: tuple[str, ...]) -> str:
    """The code of a word kept in `column` (a word without a code stays as it is)."""
    cases = " ".join(f"WHEN '{word}' THEN {n}" for n, word in enumerate(words))
    return f"CASE {column} {cases} ELSE {column} END"


def m009_words_as_codes(conn: sqlite3.Connection) -> None:
    """Events keep their kind, role and surface as small integers (`store.codes`).

    The three words, on every row, took room the codes do not. The table is made again
    with `kind_code`, `role_code` and `surface_code` (no type: a word without a code is kept as
    itself) and, under the old names, virtual generated columns that give the words back, so
    every query and trigger reads as before. The rows keep their ids, so the text indexes and
    vectors stay as they are; the uid index and the triggers on events (m005's) are made again,
    the update triggers watching `kind_code`, the column now written. `apply` runs migrations with
    foreign keys off, so dropping the old table does not delete the vectors of its rows.
    """
    generated = ", ".join(_m009_word(column, words) for column, words in M009_CODES)
    conn.execute(
        f"""
        CREATE TABLE events_coded (
            id INTEGER PRIMARY KEY,
            sid INTEGER NOT NULL REFERENCES sessions(sid) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            time INTEGER NOT NULL,
            kind_code NOT NULL,
            role_code NOT NULL,
            text TEXT NOT NULL,
            surface_code NOT NULL,
            injected INTEGER NOT NULL DEFAULT 0,
            tool_name TEXT,
            uid TEXT,
            indexed INTEGER NOT NULL DEFAULT 0,
            {generated},
            UNIQUE (sid, seq)
        )
        """
    )
    codes = ", ".join(_m009_code(column, words) for column, words in M009_CODES)
    conn.execute(
        "INSERT INTO events_coded (id, sid, seq, time, text, injected, tool_name, uid, indexed, "
        f"kind_code, role_code, surface_code) SELECT id, sid, seq, time, text, injected, "
        f"tool_name, uid, indexed, {codes} FROM events ORDER BY id"
    )
    triggers = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"
    ).fetchall()
    conn.execute("DROP TABLE events")
    # rename only the table: the triggers of other tables name `events` already
    conn.execute("PRAGMA legacy_alter_table = ON")
    try:
        conn.execute("ALTER TABLE events_coded RENAME TO events")
    finally:
        conn.execute("PRAGMA legacy_alter_table = OFF")
    conn.execute("CREATE UNIQUE INDEX events_by_uid ON events(uid) WHERE uid IS NOT NULL")
    for (trigger,) in triggers:  # the update triggers watch the column now written
        conn.execute(trigger.replace(" OF sid, kind, ", " OF sid, kind_code, "))


def m010_packed_text(conn: sqlite3.Connection) -> None:
    """Keep long texts packed with a dictionary trained on the index's own text
    (`store.textpack`): a table for the dictionaries, and for an index that holds events the
    `PACKED_TEXT` entry in `_rebuild`, so that the live code trains one and packs them."""
    conn.execute(
        "CREATE TABLE text_dicts (id INTEGER PRIMARY KEY, data BLOB NOT NULL, made INTEGER)"
    )
    if conn.execute("SELECT 1 FROM events LIMIT 1").fetchone() is not None:
        conn.execute("INSERT OR IGNORE INTO _rebuild (what) VALUES (?)", (PACKED_TEXT,))


#: m011: the full-text index without per-row lengths (otherwise as m001 made it)
M011_FTS = """
    CREATE VIRTUAL TABLE event_fts USING fts5(
        body, whole, scope,
        content='', columnsize=0,
        tokenize="unicode61 remove_diacritics 0 tokenchars '_'"
    )
"""


def m011_smaller_full_text_index(conn: sqlite3.Connection) -> None:
    """A smaller full-text index, filled again from the kept text by the live code (`_rebuild`:
    `text`, as contentless rows can only be deleted with the values they were written with):

    - tool calls and results no longer put their compounds' whole forms in `whole`
      (`textindex.NO_COMPOUNDS_KINDS`), which were a large part of it;
    - no per-row lengths (`columnsize=0`): its `_docsize` table took room, and BM25 without
      length normalisation ranked as well or better on the eval sets (README, "Index size,
      fifth step"). FTS5 cannot drop it from a table, so the table is made again, with m008's
      merge settings.
    """
    conn.execute("DROP TABLE event_fts")
    conn.execute(M011_FTS)
    for key, value in (("automerge", 16), ("crisismerge", 64), ("hashsize", M008_HASHSIZE)):
        conn.execute("INSERT INTO event_fts (event_fts, rank) VALUES (?, ?)", (key, value))
    conn.execute(
        "INSERT OR IGNORE INTO _rebuild (what) SELECT 'text' WHERE EXISTS (SELECT 1 FROM events)"
    )


def m012_vectors_in_order_added(conn: sqlite3.Connection) -> None:
    """Number every batch of vectors as it is saved (`vectors.added`), so the semantic layer's
    approximate index, kept in a file beside the index, reads only the vectors added since it
    was written instead of comparing every id of a workspace. Vectors saved before this
    migration have none: an approximate index built from scratch reads them all.
    """
    conn.execute("ALTER TABLE vectors ADD COLUMN added INTEGER")
    conn.execute("CREATE INDEX vectors_by_added ON vectors(added)")


MIGRATIONS: list[Migration] = [
    m001_initial,
    m002_fuzzy_and_vectors,
    m003_read_logs_again,
    m004_read_codex_logs_again,
    m005_embed_coverage,
    m006_count_new_events_in_code,
    m007_digests_for_ids,
    m008_compact_text_indexes,
    m009_words_as_codes,
    m010_packed_text,
    m011_smaller_full_text_index,
    m012_vectors_in_order_added,
]


#: bookkeeping kept next to the schema, created by `apply` itself
BOOKKEEPING = (
    "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied INTEGER)",
    # derived indexes to fill again from the kept text before the index is used
    "CREATE TABLE IF NOT EXISTS _rebuild (what TEXT PRIMARY KEY)",
)
#: the `_rebuild` entry for both text indexes (`event_fts` and `event_fuzzy`)
TEXT_INDEXES = "text"
#: the `_rebuild` entry for the trigram index (`event_fuzzy`) alone
FUZZY_INDEX = "fuzzy"
#: the `_rebuild` entry for packing the kept text (m010; `store.textpack.train`)
PACKED_TEXT = "packed text"


def unknown(conn: sqlite3.Connection) -> list[str]:
    """Recorded migrations this code does not know: the index was written by a newer huiyi."""
    known = {m.__name__ for m in MIGRATIONS}
    if not _has_table(conn, "_migrations"):
        return []
    return sorted(r[0] for r in conn.execute("SELECT name FROM _migrations") if r[0] not in known)


def apply(conn: sqlite3.Connection) -> list[str]:
    """Apply every migration not yet recorded, each in its own transaction; return their names.

    The connection must be in autocommit mode (`isolation_level=None`). The recorded names are
    read again inside each transaction, so two processes opening a new index at once apply
    every migration exactly once.
    """
    for statement in BOOKKEEPING:
        conn.execute(statement)
    recorded = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
    applied: list[str] = []
    for migration in MIGRATIONS:
        name = migration.__name__
        if name in recorded:
            continue  # the common case costs no write lock
        if _migrate(conn, migration):
            applied.append(name)
    return applied


def _migrate(conn: sqlite3.Connection, migration: Migration) -> bool:
    """Run one migration in its own transaction unless another process did; True if it ran.

    Foreign keys are off meanwhile (SQLite's way to make a table again: dropping the old one
    would otherwise delete the rows that refer to it); a migration that leaves more rows
    referring to nothing than it found is undone.
    """
    name = migration.__name__
    (enforced,) = conn.execute("PRAGMA foreign_keys").fetchone()
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("BEGIN IMMEDIATE")
    try:
        done = conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone()
        if done is None:
            dangling = _dangling(conn) if enforced else 0
            migration(conn)
            if enforced and _dangling(conn) > dangling:
                raise sqlite3.IntegrityError(f"{name} left rows that refer to nothing")
            conn.execute(
                "INSERT INTO _migrations (name, applied) VALUES (?, strftime('%s','now'))",
                (name,),
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite rolls some failures back by itself
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute(f"PRAGMA foreign_keys = {int(enforced)}")
    return done is None


def _dangling(conn: sqlite3.Connection) -> int:
    """Rows whose foreign key refers to nothing (an index may hold some from before)."""
    return len(conn.execute("PRAGMA foreign_key_check").fetchall())


def stale(conn: sqlite3.Connection) -> set[str]:
    """Derived indexes a migration asked to rebuild (`TEXT_INDEXES`, `FUZZY_INDEX`), not yet
    rebuilt."""
    return {r[0] for r in conn.execute("SELECT what FROM _rebuild")}


def rebuilt(conn: sqlite3.Connection, what: str) -> None:
    """Record that `what` was rebuilt (in the transaction that rebuilt it)."""
    conn.execute("DELETE FROM _rebuild WHERE what = ?", (what,))


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None
