"""The SQLite index: the only package that writes SQL.

`db` opens connections (WAL, busy timeout) and applies `migrations` (each in one transaction,
frozen once released); `transaction` is the write transaction and bulk-load cache every writer
runs in, and `compact` gives back the room a big write leaves; `ingest` turns reader output
into rows under a single-writer lock, with `reading` running the readers (in worker processes
for a big first index) and `textindex` writing what each event puts into the full-text and
trigram indexes (the one place that does); `queries` and `vectors` answer reads for search,
listing, paging and the semantic layer; `health` checks the file and counts what it holds,
`repair` mends it (moving a corrupt file aside and rebuilding it from the logs and the kept
text) and `forget` removes sessions for good.
"""
