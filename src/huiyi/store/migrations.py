"""Schema migrations, applied in order on open and recorded in `_migrations`.

A released migration is never edited: a change to the schema is a new `mNNN_` function.

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

import sqlite3
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]


def m001_initial(conn: sqlite3.Connection) -> None:
    conn.executescript(
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
        );
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
        );
        CREATE INDEX sessions_by_workspace ON sessions(workspace, updated);
        CREATE INDEX sessions_by_file ON sessions(file_id);
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
        );
        CREATE UNIQUE INDEX events_by_uid ON events(uid) WHERE uid IS NOT NULL;
        CREATE TABLE forgotten (
            kind TEXT NOT NULL CHECK (kind IN ('session', 'workspace')),
            value TEXT NOT NULL,
            at INTEGER NOT NULL,
            PRIMARY KEY (kind, value)
        );
        CREATE VIRTUAL TABLE event_fts USING fts5(
            body, whole, scope,
            content='',
            tokenize="unicode61 remove_diacritics 0 tokenchars '_'"
        );
        """
    )


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
    conn.executescript(
        """
        CREATE VIRTUAL TABLE event_fuzzy USING fts5(
            text, scope, content='', tokenize='trigram', detail=none
        );
        CREATE TABLE vectors (
            event_id INTEGER PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
            model TEXT NOT NULL,
            vec BLOB NOT NULL
        );
        CREATE INDEX vectors_by_model ON vectors(model);
        """
    )
    # Let FTS5 keep more segments per level before merging: a first index of 100k events runs
    # 8% faster (16,800 -> 18,200 events/s) for the same search latency (benchmarks/).
    for table in ("event_fts", "event_fuzzy"):
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('automerge', 16)")
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('crisismerge', 64)")
    rows = conn.execute(
        "SELECT e.id, e.kind, e.injected, e.text, s.workspace FROM events e "
        "JOIN sessions s ON s.sid = e.sid WHERE e.indexed = 1"
    ).fetchall()
    from huiyi.store.textindex import fuzzy_row

    conn.executemany(
        "INSERT INTO event_fuzzy (rowid, text, scope) VALUES (?, ?, ?)",
        [
            (rowid, *row)
            for rowid, kind, injected, text, ws in rows
            if (row := fuzzy_row(kind, bool(injected), text, ws)) is not None
        ],
    )


MIGRATIONS: list[Migration] = [m001_initial, m002_fuzzy_and_vectors]


def apply(conn: sqlite3.Connection) -> list[str]:
    """Apply every migration not yet recorded; return the names applied."""
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied INTEGER)")
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    applied: list[str] = []
    for migration in MIGRATIONS:
        name = migration.__name__
        if name in done:
            continue
        with conn:
            migration(conn)
            conn.execute(
                "INSERT INTO _migrations (name, applied) VALUES (?, strftime('%s','now'))", (name,)
            )
        applied.append(name)
    return applied
