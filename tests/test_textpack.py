"""The kept text is packed with a dictionary trained on the index's own text: a smaller index
that finds the same hits and gives every text back exactly, however the index came to be."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from huiyi import Huiyi
from huiyi.errors import StoreError
from huiyi.sources.base import Cursor, ReadResult
from huiyi.store import health, migrations, reading, repair, textpack
from huiyi.store.ingest import Ingestor, SourceReport
from tests.builders import damage
from tests.builders.lines import LineReader, write

SERVICES = ("billing-api", "orders", "auth-gateway", "search", "payments-worker", "web")
ERRORS = ("ECONNRESET", "lock wait timeout exceeded", "OOMKilled", "502 Bad Gateway")


def message(f: int, q: int) -> str:
    """A message as agents write them: same shapes, different services, numbers and paths."""
    service, error = SERVICES[(f + q) % 6], ERRORS[(f * 3 + q) % 4]
    if q % 3 == 0:
        return f"部署 {service} 到 staging 之后报 {error}，帮我看下 note_{f}_{q}"
    if q % 3 == 1:
        return (
            f"I checked src/{service}/handlers.py: the retry loop gives up after {q + 2} tries "
            f"and the pool holds {f * 4 + q} connections, so `{error}` under load is expected. "
            f"Raising the pool to {f * 8} and adding jitter fixes it (note_{f}_{q})."
        )
    return f"$ kubectl logs deploy/{service} --tail=50\n" + "\n".join(
        f"2026-11-{f % 28 + 1:02d}T10:{i:02d}:00Z WARN {service} request {f}-{q}-{i}: {error}"
        for i in range(4)
    )


def write_logs(root: Path, files: int = 30, events: int = 30) -> dict[tuple[str, int], str]:
    root.mkdir(parents=True, exist_ok=True)
    logged = {}
    for f in range(files):
        records = [{"s": f"s{f}", "q": q, "t": message(f, q)} for q in range(events)]
        write(root / f"{f:03d}.log", *records)
        logged.update({(f"s{f}", q): message(f, q) for q in range(events)})
    return logged


@pytest.fixture
def train_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test-sized history is enough to train on."""
    monkeypatch.setattr(textpack, "TRAIN_AFTER", 200)


def kept(hy: Huiyi) -> dict[str, int]:
    """How the index keeps its texts: bytes as they are, bytes packed, rows of each."""
    rows = hy.conn.execute(
        "SELECT typeof(text), count(*), sum(length(CAST(text AS BLOB))) FROM events "
        "GROUP BY typeof(text)"
    ).fetchall()
    return {
        f"{kind} {what}": n
        for kind, count, size in rows
        for what, n in (("rows", count), ("bytes", size))
    }


def read_back(hy: Huiyi, sessions: int) -> dict[tuple[str, int], str]:
    return {(f"s{f}", e.seq): e.text for f in range(sessions) for e in hy.read(f"s{f}", limit=1000)}


def hits(hy: Huiyi) -> list[list[tuple[str, int]]]:
    queries = (
        ("note_7_3", "lexical"),
        ("部署 orders", "lexical"),
        ("lock wait timeout", "lexical"),
        ("kubctl logs", "fuzzy"),
    )
    return [
        sorted(
            (h.session_id, h.seq)
            for h in hy.search(q, all_workspaces=True, limit=20, layers=(layer,)).hits
        )
        for q, layer in queries
    ]


def test_a_first_index_packs_its_text_finds_the_same_and_gives_every_text_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged = write_logs(tmp_path / "logs")
    seen = {}
    for name, after in (("packed", 200), ("plain", 10**9)):
        monkeypatch.setattr(textpack, "TRAIN_AFTER", after)
        with Huiyi(tmp_path / name) as hy:
            assert hy.index(readers=[LineReader(tmp_path / "logs")]).events == 900
            seen[name] = {"kept": kept(hy), "found": hits(hy), "read": read_back(hy, 30)}
    packed, plain = seen["packed"], seen["plain"]
    assert packed["read"] == plain["read"] == logged
    assert packed["found"] == plain["found"] and all(packed["found"])
    assert "blob rows" not in plain["kept"]
    # every text but the shortest is packed, to well under half its bytes
    assert packed["kept"]["blob rows"] >= 850
    text_bytes = packed["kept"]["blob bytes"] + packed["kept"].get("text bytes", 0)
    assert text_bytes < 0.5 * plain["kept"]["text bytes"]


def test_texts_written_after_the_dictionary_are_packed_as_they_are_written(
    tmp_path: Path, train_early: None
) -> None:
    logs = tmp_path / "logs"
    write_logs(logs)
    with Huiyi(tmp_path / "home") as hy:
        hy.index(readers=[LineReader(logs)])
        (dictionaries,) = hy.conn.execute("SELECT count(*) FROM text_dicts").fetchone()
        late = message(40, 1).replace("note_40_1", "zanzibar_rotation")
        write(logs / "late.log", {"s": "late", "q": 1, "t": late}, {"s": "late", "q": 2, "t": "ok"})
        assert hy.index(readers=[LineReader(logs)]).events == 2
        stored = dict(
            hy.conn.execute(
                "SELECT seq, typeof(text) FROM events e JOIN sessions s "
                "ON s.sid = e.sid WHERE s.id = 'late'"
            ).fetchall()
        )
        assert stored == {1: "blob", 2: "text"}  # "ok" is too short to gain from packing
        assert [e.text for e in hy.read("late")] == [late, "ok"]
        found = hy.search("zanzibar_rotation", all_workspaces=True, layers=("lexical",)).hits
        assert [(h.session_id, h.seq) for h in found] == [("late", 1)]
        assert "zanzibar_rotation" in found[0].snippet
        # trained once: a later run packs with the same dictionary
        assert hy.conn.execute("SELECT count(*) FROM text_dicts").fetchone() == (dictionaries,)
    assert dictionaries == 1


def test_a_first_index_that_trains_midway_leaves_no_half_empty_pages_behind(
    tmp_path: Path, train_early: None
) -> None:
    """The texts written before the dictionary are packed in place once it is trained, which
    leaves their pages mostly empty; the writer gives that room back (`db.vacuum`)."""
    write_logs(tmp_path / "logs")
    with Huiyi(tmp_path / "home") as hy:
        hy.index(readers=[LineReader(tmp_path / "logs")])
        assert kept(hy)["blob rows"] >= 850
        size, unused = hy.conn.execute(
            "SELECT sum(pgsize), sum(unused) FROM dbstat WHERE name = 'events'"
        ).fetchone()
    assert unused < 0.3 * size  # 19% here (the last pages of a small table), 47% without


class _ReadsAfterSharing(LineReader):
    """In a reader process, reads the files from `wait_from` on only once `marker` exists (the
    writer has offered its dictionary), as a big first index's readers do: its first files
    are written before the dictionary is trained, the later ones read while it is written."""

    def __init__(self, root: Path, marker: Path, wait_from: str) -> None:
        super().__init__(root)
        self.marker, self.wait_from, self.writer = marker, wait_from, os.getpid()

    def read(self, path: Path, cursor: Cursor) -> ReadResult:
        if os.getpid() != self.writer and path.name >= self.wait_from:
            # a guard against hanging when nothing is ever offered, not a time limit: the
            # writer offers it after its first few files
            for _ in range(30_000):
                if self.marker.exists():
                    break
                time.sleep(0.01)
            else:
                raise AssertionError("the dictionary was never offered")
        return super().read(path, cursor)


def index_counting_packs(
    hy: Huiyi, logs: Path, workers: int, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """Index `logs` with `workers` readers that read from `020.log` on only once the writer
    has offered them its dictionary; returns the texts this process packed (the readers' are
    not seen). Each reader has polled for the dictionary before its first waiting file, so
    from its second one on it packs, if it was given the dictionary."""
    marker = logs.parent / f"shared-{workers}"
    reader = _ReadsAfterSharing(logs, marker, "020.log")
    packed_here: list[str] = []
    pack, share = textpack.Codec.pack, reading._Workers.share

    def counting(codec: textpack.Codec, text: str) -> str | bytes:
        kept = pack(codec, text)
        if isinstance(kept, bytes):
            packed_here.append(text)
        return kept

    def offered(workers: reading._Workers, dictionary: reading.Dictionary) -> None:
        share(workers, dictionary)
        marker.touch()

    with monkeypatch.context() as patched:
        patched.setattr(textpack.Codec, "pack", counting)
        patched.setattr(reading._Workers, "share", offered)
        Ingestor(hy.conn).index_reader(reader, SourceReport("test"), workers=workers)
    return packed_here


def test_reader_processes_pack_once_the_writer_shares_its_dictionary(
    tmp_path: Path, train_early: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first index in reader processes packs the same bytes as one read in the writer's
    process, but the texts read after the dictionary was trained are packed by the readers."""
    logged = write_logs(tmp_path / "logs", files=40)
    texts = {}
    for workers in (0, 2):
        with Huiyi(tmp_path / f"home-{workers}") as hy:
            packed_here = index_counting_packs(hy, tmp_path / "logs", workers, monkeypatch)
            texts[workers] = hy.conn.execute(
                "SELECT s.id, e.seq, e.text FROM events e JOIN sessions s ON s.sid = e.sid "
                "ORDER BY s.id, e.seq"
            ).fetchall()
            assert read_back(hy, 40) == logged
            if workers:  # the files from `022.log` on came packed (from `020.log` on, if
                # a reader polled after the writer had offered the dictionary)
                assert len(logged) - 20 * 30 <= len(packed_here) <= len(logged) - 18 * 30
            else:
                assert len(packed_here) > 0.9 * len(logged)
    assert texts[0] == texts[2]
    assert sum(isinstance(text, bytes) for *_, text in texts[2]) > 0.9 * len(logged)


def test_a_dictionary_larger_than_the_readers_inbox_is_not_shared_and_the_writer_packs(
    tmp_path: Path, train_early: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader takes a shared dictionary only between files, and may be waiting meanwhile for
    the writer to take its outcomes: a dictionary that does not fit its inbox would leave both
    waiting. Where pipes cannot be enlarged, nothing is shared and the index completes."""
    logged = write_logs(tmp_path / "logs", files=40)
    monkeypatch.setattr(reading, "_enlarge", lambda conn: 4096)
    with Huiyi(tmp_path / "home") as hy:
        packed_here = index_counting_packs(hy, tmp_path / "logs", 2, monkeypatch)
        (dictionary,) = hy.conn.execute("SELECT length(data) FROM text_dicts").fetchone()
        assert dictionary > 4096
        assert read_back(hy, 40) == logged
        assert len(packed_here) > 0.9 * len(logged)


def test_an_index_from_before_packing_is_packed_when_it_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged = write_logs(tmp_path / "logs")
    monkeypatch.setattr(textpack, "TRAIN_AFTER", 10**9)
    with Huiyi(tmp_path / "home") as hy:
        hy.index(readers=[LineReader(tmp_path / "logs")])
        before = hits(hy)
        path = hy.settings.db_path
    with sqlite3.connect(path) as conn:  # what the index was before m010
        conn.execute("DROP TABLE text_dicts")
        conn.execute("DELETE FROM _migrations WHERE name = 'm010_packed_text'")
    conn.close()
    monkeypatch.setattr(textpack, "TRAIN_AFTER", 200)
    with Huiyi(tmp_path / "home") as hy:
        assert kept(hy)["blob rows"] >= 850
        assert migrations.stale(hy.conn) == set()
        assert hits(hy) == before
        assert read_back(hy, 30) == logged


def test_a_dictionary_another_process_trained_is_the_one_every_writer_packs_with(
    tmp_path: Path, train_early: None
) -> None:
    """A long-lived connection (the warm service's) that looked before the index had a
    dictionary packs with the one another process trained; none is trained twice."""
    logs = tmp_path / "logs"
    write_logs(logs, files=3)
    with Huiyi(tmp_path / "home") as service:
        service.index(readers=[LineReader(logs)])
        assert "blob rows" not in kept(service)
        with Huiyi(tmp_path / "home") as other:
            write_logs(logs, files=15)
            other.index(readers=[LineReader(logs)])
        write(logs / "late.log", *({"s": "late", "q": q, "t": message(50, q)} for q in range(9)))
        service.index(readers=[LineReader(logs)])
        assert service.conn.execute("SELECT count(*) FROM text_dicts").fetchone() == (1,)
        late = service.conn.execute(
            "SELECT typeof(text) FROM events e JOIN sessions s ON s.sid = e.sid WHERE s.id = 'late'"
        ).fetchall()
        assert late == [("blob",)] * 9
        assert [e.text for e in service.read("late")] == [message(50, q) for q in range(9)]


def test_an_index_too_small_to_train_keeps_its_text_and_trains_once_it_has_grown(
    tmp_path: Path, train_early: None
) -> None:
    logs = tmp_path / "logs"
    write_logs(logs, files=3, events=30)
    with Huiyi(tmp_path / "home") as hy:
        hy.index(readers=[LineReader(logs)])
        assert "blob rows" not in kept(hy)  # 90 texts: nothing to learn a dictionary from yet
        write_logs(logs, files=10, events=30)  # the same files again, and seven more
        hy.index(readers=[LineReader(logs)])
        assert kept(hy)["blob rows"] >= 280
        assert read_back(hy, 10) == {
            (f"s{f}", q): message(f, q) for f in range(10) for q in range(30)
        }


def test_a_packed_text_whose_dictionary_is_gone_is_an_error_that_says_so(
    tmp_path: Path, train_early: None
) -> None:
    write_logs(tmp_path / "logs", files=10)
    with Huiyi(tmp_path / "home") as hy:
        hy.index(readers=[LineReader(tmp_path / "logs")])
        (blob,) = hy.conn.execute(
            "SELECT text FROM events WHERE typeof(text) = 'blob' LIMIT 1"
        ).fetchone()
    codec = textpack.Codec(lambda: None)
    with pytest.raises(textpack.TextPackError, match="names dictionary 1, which the index lacks"):
        codec.unpack(blob)
    assert codec.unpack("as it is") == "as it is"


def damage_dictionary(hy: Huiyi, how: str) -> None:
    """Damage the index's one dictionary: its header bytes changed, or the row gone."""
    if how == "gone":
        hy.conn.execute("DELETE FROM text_dicts")
    else:
        (data,) = hy.conn.execute("SELECT data FROM text_dicts").fetchone()
        flipped = data[:8] + bytes(b ^ 0x55 for b in data[8:40]) + data[40:]
        hy.conn.execute("UPDATE text_dicts SET data = ?", (flipped,))
    hy.conn.commit()


@pytest.mark.parametrize("how", ["gone", "flipped"])
def test_an_unreadable_dictionary_is_damage_that_doctor_finds_and_repair_mends(
    tmp_path: Path, train_early: None, how: str
) -> None:
    logs = tmp_path / "logs"
    logged = write_logs(logs, files=12)
    with Huiyi(tmp_path / "home") as hy:
        hy.index(readers=[LineReader(logs)])
        damage_dictionary(hy, how)
        path, lock = hy.settings.db_path, hy.settings.lock_path
    with Huiyi(tmp_path / "home") as hy:
        # reading or searching the damaged index says what is wrong and what to run
        for attempt in (
            lambda: hy.read("s3"),
            lambda: hy.search("note_3_1", all_workspaces=True, layers=("lexical",)),
        ):
            with pytest.raises(StoreError, match=r"packed text|dictionary 1") as caught:
                attempt()
            assert "huiyi doctor --repair" in str(caught.value)
    found = health.check(path)
    assert not found.ok and "packed texts cannot be read" in found.integrity
    report = repair.repair(path, lock, [LineReader(logs)])
    assert health.check(path).ok
    with Huiyi(tmp_path / "home") as hy:
        assert read_back(hy, 12) == logged  # every session again, from its log
        assert kept(hy)["blob rows"] >= 300  # and packed again, with a new dictionary
    assert report.action


def test_a_repair_whose_copy_has_no_readable_dictionary_counts_what_it_lost(
    tmp_path: Path, train_early: None
) -> None:
    """The logs are gone and the dictionary is damaged: the repair finishes, keeps the
    sessions, and counts the texts it could not read instead of stopping."""
    logs = tmp_path / "logs"
    write_logs(logs, files=12)
    with Huiyi(tmp_path / "home") as hy:
        hy.index(readers=[LineReader(logs)])
        damage_dictionary(hy, "flipped")
        path, lock = hy.settings.db_path, hy.settings.lock_path
    for log in logs.iterdir():
        log.unlink()
    damage.truncate(path)
    report = repair.repair(path, lock, [LineReader(logs)])
    assert report.unreadable.get("events", 0) > 0
    assert health.check(path).ok


def test_an_index_packed_on_upgrade_gets_smaller_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_logs(tmp_path / "logs")
    monkeypatch.setattr(textpack, "TRAIN_AFTER", 10**9)
    with Huiyi(tmp_path / "home") as hy:
        hy.index(readers=[LineReader(tmp_path / "logs")])
        path = hy.settings.db_path
        plain = kept(hy)["text bytes"]
    conn = sqlite3.connect(path, isolation_level=None)  # before m010, in an older layout
    conn.execute("DROP TABLE text_dicts")
    conn.execute("DELETE FROM _migrations WHERE name = 'm010_packed_text'")
    conn.execute("PRAGMA auto_vacuum = NONE")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert conn.execute("PRAGMA auto_vacuum").fetchone() == (0,)
    conn.close()
    before = path.stat().st_size
    monkeypatch.setattr(textpack, "TRAIN_AFTER", 200)
    with Huiyi(tmp_path / "home") as hy:
        assert kept(hy)["blob rows"] >= 850
        packed = sum(v for k, v in kept(hy).items() if k.endswith("bytes"))
        (dictionary,) = hy.conn.execute("SELECT length(data) FROM text_dicts").fetchone()
        assert hy.conn.execute("PRAGMA auto_vacuum").fetchone() == (2,)  # incremental
        hy.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    # the file gave back most of what packing saved (rows shrunk in place free no page)
    saved = plain - packed - dictionary
    assert before - path.stat().st_size > 0.7 * saved > 0


def test_a_writer_on_a_plain_connection_packs_once_its_dictionary_is_trained(
    tmp_path: Path, train_early: None
) -> None:
    write_logs(tmp_path / "logs", files=12)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrations.apply(conn)
    textpack.install(conn)
    conn.isolation_level = "DEFERRED"
    report = SourceReport("test")
    Ingestor(conn).index_reader(LineReader(tmp_path / "logs"), report, workers=0)
    kinds = dict(conn.execute("SELECT typeof(text), count(*) FROM events GROUP BY 1").fetchall())
    assert kinds.get("blob", 0) >= 330
