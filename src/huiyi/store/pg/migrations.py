"""Schema migrations of the PostgreSQL store, applied in order on open and recorded in
`huiyi_migrations`.

As for SQLite (`store.migrations`), a released migration is never edited: a change is a new
`mNNN_` entry. Each runs in its own transaction, so one that fails leaves the database as it
was, and all of them run under one advisory lock, so two servers starting against a new
database at once apply each exactly once. A database that records a migration this code does
not know was written by a newer huiyi and is refused (`unknown`).

Why the tables look like this:
- `events.lex` keeps huiyi's own tokens as a tsvector *literal* (`to_tsvector` would split
  `src_app_main_py` again and drop `--`): the body's parts and CJK bigrams at their positions
  with weight D, the whole compounds with weight A, so a tsquery can ask for a phrase in the
  body (`'a' <-> 'b'`) or a compound (`'x':A`) as FTS5's column filters do. A GIN index
  answers the match; the btree on `(workspace, id)` answers a workspace filter and the newest
  rows first.
- `term_df` counts, per token and column (`b:` body, `w:` whole), the rows holding it, and
  `lex_totals` the rows and tokens: BM25's rarity and average length, which `ts_rank` has not.
- `events.grams` is the set of character trigrams of the fuzzy text (GIN): huiyi's trigram
  candidates, which pg_trgm's `%` cannot give (it never matches a two-character Chinese word).
- `lex_totals.removed` counts rows that went or changed workspace: a server's kept newest
  rows of each trigram (`store.pg.newest`) are dropped when it moves.
- `newest_ids` keeps each term's and trigram's newest ids per workspace (`store.pg.lists`),
  so that a search's first lookup of one reads a short row, not a GIN posting list.
- vectors are kept as float16 bytes and scored in the server process, as SQLite's are.
"""

from __future__ import annotations

from typing import Any

import psycopg

#: one key for every huiyi database: `pg_advisory_lock` while migrating
LOCK_KEY = 0x68756979  # "huiy"

M001_SCHEMA = (
    """
    CREATE TABLE sessions (
        sid bigserial PRIMARY KEY,
        id text NOT NULL UNIQUE,
        source text NOT NULL,
        cwd text NOT NULL DEFAULT '',
        workspace text NOT NULL DEFAULT '',
        title text,
        first_user text,
        created bigint,
        updated bigint,
        parent text,
        is_subagent boolean NOT NULL DEFAULT false,
        is_private boolean NOT NULL DEFAULT false,
        event_count integer NOT NULL DEFAULT 0,
        user_count integer NOT NULL DEFAULT 0,
        device bigint
    )
    """,
    "CREATE INDEX sessions_by_workspace ON sessions (workspace, updated)",
    "CREATE INDEX sessions_by_parent ON sessions (parent)",
    """
    CREATE TABLE events (
        id bigserial PRIMARY KEY,
        sid bigint NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
        seq integer NOT NULL,
        time bigint NOT NULL,
        kind text NOT NULL,
        role text NOT NULL,
        text text NOT NULL,
        surface text NOT NULL,
        injected boolean NOT NULL DEFAULT false,
        tool_name text,
        indexed boolean NOT NULL DEFAULT false,
        workspace text NOT NULL,
        lex tsvector,
        lex_tokens integer NOT NULL DEFAULT 0,
        grams text[],
        UNIQUE (sid, seq)
    )
    """,
    "CREATE INDEX events_lex ON events USING gin (lex)",
    "CREATE INDEX events_grams ON events USING gin (grams)",
    "CREATE INDEX events_by_workspace ON events (workspace, id)",
    "CREATE TABLE term_df (term text PRIMARY KEY, n bigint NOT NULL)",
    """
    CREATE TABLE lex_totals (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        rows bigint NOT NULL,
        tokens bigint NOT NULL
    )
    """,
    "INSERT INTO lex_totals (rows, tokens) VALUES (0, 0)",
    """
    CREATE TABLE embed_coverage (
        workspace text NOT NULL,
        model text NOT NULL,
        n bigint NOT NULL,
        PRIMARY KEY (workspace, model)
    )
    """,
    """
    CREATE TABLE vectors (
        event_id bigint PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
        model text NOT NULL,
        vec bytea NOT NULL
    )
    """,
    "CREATE INDEX vectors_by_model ON vectors (model)",
    """
    CREATE TABLE tombstones (
        session_id text PRIMARY KEY,
        at bigint NOT NULL,
        device bigint
    )
    """,
    """
    CREATE TABLE users (
        id bigserial PRIMARY KEY,
        name text NOT NULL UNIQUE,
        created bigint NOT NULL
    )
    """,
    """
    CREATE TABLE devices (
        id bigserial PRIMARY KEY,
        user_id bigint NOT NULL REFERENCES users (id),
        name text NOT NULL,
        token_hash bytea NOT NULL UNIQUE,
        created bigint NOT NULL,
        revoked bigint,
        UNIQUE (user_id, name)
    )
    """,
    """
    CREATE TABLE grants (
        device_id bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
        workspace text NOT NULL,
        can_read boolean NOT NULL DEFAULT false,
        can_push boolean NOT NULL DEFAULT false,
        PRIMARY KEY (device_id, workspace)
    )
    """,
    """
    CREATE TABLE pushes (
        device_id bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
        push_id text NOT NULL,
        at bigint NOT NULL,
        events integer NOT NULL,
        PRIMARY KEY (device_id, push_id)
    )
    """,
    """
    CREATE TABLE audit (
        id bigserial PRIMARY KEY,
        at bigint NOT NULL,
        device_id bigint REFERENCES devices (id),
        workspace text,
        action text NOT NULL,
        query text,
        sessions text[] NOT NULL DEFAULT '{}'
    )
    """,
    "CREATE INDEX audit_by_time ON audit (at)",
)

#: `lex_totals.removed` counts the rows taken out or moved to another workspace, so that what a
#: server keeps of the newest rows (`store.pg.newest`) knows when it no longer holds
M002_REMOVED = ("ALTER TABLE lex_totals ADD COLUMN removed bigint NOT NULL DEFAULT 0",)

#: each term's and trigram's newest ids per workspace (`store.pg.lists`), built from the rows
#: already held: 1,000 ids of a word (the lexical layer's window), 400 of a trigram (the fuzzy
#: layer's postings), the newest up to 128 of them in a short head; and the sessions by the
#: device that pushed them
M003_NEWEST_IDS = (
    """
    CREATE TABLE newest_ids (
        term text NOT NULL,
        workspace text NOT NULL,
        head bigint[] NOT NULL DEFAULT '{}',
        ids bigint[] NOT NULL,
        floor bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (term, workspace)
    )
    """,
    # kept apart and uncompressed: compressing the lists a push rewrites cost two thirds of it
    "ALTER TABLE newest_ids ALTER ids SET STORAGE EXTERNAL",
    # a search leaves out the asking device's own sessions: found by the index, not a scan
    "CREATE INDEX sessions_by_device ON sessions (device)",
    """
    CREATE FUNCTION huiyi_newest_cap(term text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT CASE WHEN starts_with(term, 'g:') THEN 400 ELSE 1000 END $$
    """,
    """
    CREATE FUNCTION huiyi_newest_head() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 128 $$
    """,
    """
    CREATE FUNCTION huiyi_merge_ids(kept bigint[], fresh bigint[], floor bigint)
    RETURNS bigint[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT CASE
        WHEN fresh[cardinality(fresh)] >= floor
             AND (cardinality(kept) = 0 OR fresh[cardinality(fresh)] > kept[1])
        THEN fresh || kept
        ELSE ARRAY(SELECT DISTINCT x FROM unnest(kept || fresh) AS x WHERE x >= floor
                   ORDER BY x DESC)
    END $$
    """,
    """
    INSERT INTO newest_ids (term, workspace, ids, floor)
    SELECT term, workspace, ids[1:cap], CASE WHEN cardinality(ids) > cap THEN ids[cap] ELSE 0 END
    FROM (
        SELECT t.term, e.workspace, huiyi_newest_cap(t.term) AS cap,
               array_agg(e.id ORDER BY e.id DESC) AS ids
        FROM events e CROSS JOIN LATERAL (
            SELECT 'b:' || x FROM unnest(tsvector_to_array(ts_filter(e.lex, '{d}'))) AS x
            UNION ALL
            SELECT 'w:' || x FROM unnest(tsvector_to_array(ts_filter(e.lex, '{a}'))) AS x
            UNION ALL
            SELECT 'g:' || g FROM unnest(e.grams) AS g
        ) AS t(term)
        GROUP BY t.term, e.workspace
    ) AS listed
    """,
)

MIGRATIONS: list[tuple[str, tuple[str, ...]]] = [
    ("m001_initial", M001_SCHEMA),
    ("m002_removed", M002_REMOVED),
    ("m003_newest_ids", M003_NEWEST_IDS),
]

BOOKKEEPING = "CREATE TABLE IF NOT EXISTS huiyi_migrations (name text PRIMARY KEY, applied bigint)"


def unknown(conn: psycopg.Connection[Any]) -> list[str]:
    """Recorded migrations this code does not know: the database was written by a newer huiyi."""
    known = {name for name, _ in MIGRATIONS}
    exists = conn.execute("SELECT to_regclass('huiyi_migrations') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return []
    rows = conn.execute("SELECT name FROM huiyi_migrations").fetchall()
    return sorted(name for (name,) in rows if name not in known)


def apply(conn: psycopg.Connection[Any]) -> list[str]:
    """Apply every migration not yet recorded, each in its own transaction, under the advisory
    lock; return their names. `conn` must be in autocommit mode."""
    applied: list[str] = []
    conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
    try:
        conn.execute(BOOKKEEPING)
        recorded = {name for (name,) in conn.execute("SELECT name FROM huiyi_migrations")}
        for name, statements in MIGRATIONS:
            if name in recorded:
                continue
            with conn.transaction():
                for statement in statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO huiyi_migrations (name, applied) "
                    "VALUES (%s, extract(epoch FROM now())::bigint)",
                    (name,),
                )
            applied.append(name)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
    return applied
