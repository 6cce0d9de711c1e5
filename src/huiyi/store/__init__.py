"""The SQLite index: the only package that writes SQL.

`db` opens connections (WAL, busy timeout) and applies migrations; `ingest` turns reader output
into rows under a single-writer lock; `queries` answers reads for search, listing and paging.
"""
