"""The PostgreSQL store: the team server's index, answering the core's reads as SQLite does.

`connect` opens a pool (psycopg 3) and applies `migrations` (versioned SQL, each in its own
transaction, under an advisory lock, frozen once released); `lexemes` turns huiyi's own tokens
into what the tables keep (a tsvector literal of the full-text streams, the trigram set of the
fuzzy text, the document-frequency terms); `match` compiles the FTS5 match expressions the
search layers build into tsqueries; `reads.PgIndex` is the `store.index.Index` over it (BM25
as FTS5 computes it, from the document-frequency table); `writes` applies sessions and events
(a client's push, or a copy of a local index) and tombstones; `team` keeps the people, their
devices' hashed tokens, their grants and the audit of every read.
"""
