"""The SQLite index: the only package that writes SQL.

`db` opens connections (WAL, busy timeout) and applies `migrations`; `ingest` turns reader
output into rows under a single-writer lock, with `reading` running the readers (in worker
processes for a big first index) and `textindex` deciding what each event puts into the
full-text and trigram indexes; `queries` and `vectors` answer reads for search, listing,
paging and the semantic layer.
"""
