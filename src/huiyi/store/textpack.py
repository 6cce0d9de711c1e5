"""The kept text of events, packed: zstd with a dictionary trained on the index's own text.

The index keeps every event's exact text (it outlives the logs: Claude Code deletes its
transcripts after 30 days), and that text was the largest part of an index, most of it tool
output. One message compresses badly on its own (zstd finds little to refer back to in 400
bytes), but messages of one history share their phrasing, paths and output shapes, which is what
a zstd dictionary is for: trained once per index on `SAMPLE` of its texts, it packs each text in
its row (README, "Index size").

`events.text` holds a text either as it is (TEXT) or packed (a BLOB: the number of its
dictionary in `text_dicts`, one byte, then a zstd frame without magic number or dictionary id);
SQLite keeps the two apart by type, so rows written before the index had a dictionary, and the
short texts packing would not shorten, simply stay text. Every connection made by
`db.connect` has the SQL function `event_text(text)`, which gives the text back either way; a
query reading `events.text` for its words goes through it.

The dictionary is trained once an index holds `TRAIN_AFTER` texts worth packing (a first index
does it after its first files, then packs what it wrote before), and texts written after that
are packed as they are written. `train` is the one place that trains and packs rows already
stored; migration m010 asks for it on indexes made before (`db.connect` runs it).
"""

from __future__ import annotations

import sqlite3
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from huiyi.store import readthrough

if TYPE_CHECKING:
    import zstandard

__all__ = [
    "SQL_FUNCTION",
    "Codec",
    "Pack",
    "TextPackError",
    "check",
    "codec",
    "install",
    "packer",
    "train",
    "worth_packing",
]

#: texts shorter than this (UTF-8 bytes) are kept as they are: a packed text has about six
#: bytes of header (Chinese counts three bytes a character: eight of it are worth packing)
MIN_BYTES = 24
#: how many texts of at least `MIN_BYTES` an index holds before its dictionary is trained
TRAIN_AFTER = 2_000
#: the newest texts the dictionary is trained on: at most this many, each cut to
#: `SAMPLE_CHARS`, at most `SAMPLE_BYTES` in all (so that a history of long tool output
#: trains in a bounded time and memory: both grow with the samples)
SAMPLE = 4_000
SAMPLE_CHARS = 8_192
#: dictionary size and compression level. On the side-by-side history this pair packs clearly
#: smaller than a smaller dictionary at a low level, for more CPU; a lower level packs worse,
#: and a higher one hardly better for much more CPU.
DICT_BYTES = 128 * 1024
SAMPLE_BYTES = 100 * DICT_BYTES
LEVEL = 12
#: log2 of the entries of the compressor's chain and hash tables. At level 12 zstd takes 19
#: and 19 for a dictionary this large: large tables per compressor, and each reader process has
#: one. The chain table finds matches in the dictionary and needs an entry per byte of it (17);
#: the hash table hardly matters (14): a fraction of the memory, and the history packs as small.
CHAIN_LOG = 17
HASH_LOG = 14
#: the dictionary trainer's segment and d-mer sizes. Left to search for them (zstd's default),
#: it picked far worse ones for some sample sets: one text more or fewer in the samples could
#: make a dictionary that packed the history much worse.
TRAIN_SEGMENT = 1024
TRAIN_DMER = 8
#: log2 of the entries of the trainer's d-mer frequency table: with zstd's default, 20,
#: training raised the process's memory to the peak of a small first index; 16 takes half as
#: much and makes as good a dictionary
TRAIN_FREQ_LOG = 16
#: a packed text names its dictionary in one byte
MAX_DICTIONARIES = 255
#: a row whose text is kept as it is and worth packing
_UNPACKED = "typeof(text) = 'text' AND length(CAST(text AS BLOB)) >= ?"
#: the SQL function that gives an `events.text` value back as text
SQL_FUNCTION = "event_text"


def worth_packing(text: str) -> bool:
    """Whether `text` is long enough to try packing (`MIN_BYTES`)."""
    return len(text) >= MIN_BYTES or len(text.encode()) >= MIN_BYTES


class TextPackError(ValueError):
    """A packed text that cannot be unpacked (its dictionary is missing or damaged, or the text
    itself is): the index is damaged, and `huiyi doctor --repair` mends it."""


#: the last `TextPackError` an `event_text` call raised in this process: SQLite passes a
#: function's failure on only as "user-defined function raised exception" (`db.fault`)
last_failure: TextPackError | None = None


#: packs one text as `events.text` keeps it
Pack = Callable[[str], str | bytes]


class Codec:
    """Packing and unpacking of one index's texts; dictionaries are read on first use."""

    def __init__(self, connection: Callable[[], sqlite3.Connection | None]) -> None:
        self._connection = connection
        self._unpackers: dict[int, zstandard.ZstdDecompressor | TextPackError] = {}
        self._packer: Pack | None = None
        self._dictionary: tuple[int, bytes] | None = None
        self._looked = False
        #: the texts of no-copy mode's locators, read from the logs (`store.readthrough`)
        self.through = readthrough.ReadThrough(connection)

    @property
    def packing(self) -> bool:
        """Whether the index has a dictionary (so `pack` packs)."""
        if not self._looked:
            self._looked = True
            conn = self._connection()
            newest = _newest(conn) if conn is not None else None
            if newest is not None:
                self.use(*newest)
        return self._packer is not None

    @property
    def dictionary(self) -> tuple[int, bytes] | None:
        """The number and bytes of the dictionary `pack` packs with (None when it does not):
        what a reader process needs to pack as this codec does (`Codec.use`)."""
        return self._dictionary if self.packing else None

    def pack(self, text: str) -> str | bytes:
        """`text` as `events.text` keeps it: packed when the index has a dictionary and that
        makes it shorter, else as it is."""
        if not self.packing:
            return text
        assert self._packer is not None
        return self._packer(text)

    def unpack(self, value: str | bytes | None) -> str | None:
        """The text an `events.text` value holds (text and NULL pass through)."""
        if not isinstance(value, bytes):
            return value
        try:
            if not value:
                raise TextPackError("a packed text is empty")
            if value[0] == readthrough.MARK:
                return self.through.text(value)
            unpacker = self._unpackers.get(value[0]) or self._unpacker(value[0])
            if isinstance(unpacker, TextPackError):
                raise unpacker
            try:
                return str(unpacker.decompress(value[1:]), "utf-8")
            except Exception as exc:  # zstandard.ZstdError, or bytes that are not UTF-8
                raise TextPackError(f"a packed text cannot be read ({exc})") from exc
        except TextPackError as failure:
            global last_failure
            last_failure = failure
            raise

    def use(self, number: int, data: bytes) -> None:
        """Pack with dictionary `number` from now on (also one just trained, not committed)."""
        unpacker = _unpacker_of(number, data)
        self._packer = packer(number, data)
        self._dictionary = (number, data)
        self._unpackers[number] = unpacker
        self._looked = True

    def reset(self) -> None:
        """Forget the dictionaries read or given (a transaction that trained was undone)."""
        self._unpackers.clear()
        self._packer = None
        self._dictionary = None
        self._looked = False

    def _unpacker(self, number: int) -> zstandard.ZstdDecompressor | TextPackError:
        """The unpacker of dictionary `number`, or (kept, so that each text does not ask
        again) the error that says why there is none."""
        conn = self._connection()
        try:
            row = None
            if conn is not None:
                row = conn.execute("SELECT data FROM text_dicts WHERE id = ?", (number,)).fetchone()
            if row is None:
                raise TextPackError(
                    f"a packed text names dictionary {number}, which the index lacks"
                )
            if not isinstance(row[0], bytes):
                raise TextPackError(f"text dictionary {number} is damaged (not a blob)")
            found: zstandard.ZstdDecompressor | TextPackError = _unpacker_of(number, row[0])
        except TextPackError as failure:
            found = failure
        self._unpackers[number] = found
        return found


def packer(number: int, data: bytes) -> Pack:
    """What packs a text with dictionary `number` (its bytes: `data`) as `events.text` keeps
    it: packed when that makes it shorter, else as it is. A reader process packs with one of
    these alone (it never unpacks)."""
    import zstandard

    params = zstandard.ZstdCompressionParameters.from_level(
        LEVEL,
        dict_size=len(data),
        hash_log=HASH_LOG,
        chain_log=CHAIN_LOG,
        format=zstandard.FORMAT_ZSTD1_MAGICLESS,
        write_dict_id=False,
        write_checksum=False,
        write_content_size=True,
    )
    compress = zstandard.ZstdCompressor(
        dict_data=zstandard.ZstdCompressionDict(data), compression_params=params
    ).compress
    header = bytes((number,))

    def pack(text: str) -> str | bytes:
        if not worth_packing(text):
            return text
        raw = text.encode()
        packed = header + compress(raw)
        return packed if len(packed) < len(raw) else text

    return pack


def _unpacker_of(number: int, data: bytes) -> zstandard.ZstdDecompressor:
    """The unpacker of dictionary `number`, whose bytes are `data`."""
    import zstandard

    try:
        return zstandard.ZstdDecompressor(
            dict_data=zstandard.ZstdCompressionDict(data),
            format=zstandard.FORMAT_ZSTD1_MAGICLESS,
        )
    except zstandard.ZstdError as exc:
        raise TextPackError(f"text dictionary {number} is damaged ({exc})") from exc


#: the codec of every open connection made by `db.connect` (they can be referred to weakly)
_CODECS: weakref.WeakKeyDictionary[sqlite3.Connection, Codec] = weakref.WeakKeyDictionary()


def _newest(conn: sqlite3.Connection) -> tuple[int, bytes] | None:
    """The index's newest dictionary (None without one, or without the table: an index some
    migrations short of this code's, as tests of the older code make)."""
    try:
        row = conn.execute("SELECT id, data FROM text_dicts ORDER BY id DESC LIMIT 1").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return None if row is None else (int(row[0]), bytes(row[1]))


def _has_dictionaries(conn: sqlite3.Connection) -> bool:
    """Whether the index has the `text_dicts` table (m010)."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'text_dicts'").fetchone()
    return row is not None


def install(conn: sqlite3.Connection) -> Codec:
    """Give `conn` its codec and the SQL function `event_text` (`SQL_FUNCTION`)."""
    try:
        ref = weakref.ref(conn)
    except TypeError:  # a plain `sqlite3.Connection`: the codec holds it, for as long as it lives
        made = Codec(lambda: conn)
    else:
        made = Codec(ref)
        _CODECS[conn] = made
    conn.create_function(SQL_FUNCTION, 1, made.unpack, deterministic=True)
    return made


def codec(conn: sqlite3.Connection) -> Codec:
    """The codec `install` gave `conn` (installed now if it has none)."""
    try:
        return _CODECS[conn]
    except (KeyError, TypeError):
        return install(conn)


def train(conn: sqlite3.Connection, made: Codec | None = None) -> bool:
    """Train the index's dictionary when it has none and holds `TRAIN_AFTER` texts worth
    packing, then pack every text kept as it is; True if it did. `made` is the codec the
    caller packs with (`conn`'s by default), which packs with the new dictionary from then on.
    Runs in the caller's transaction."""
    made = made or codec(conn)
    if made.packing or not _has_dictionaries(conn):
        return False
    newest = _newest(conn)  # read again: another connection may have trained it meanwhile
    if newest is not None:
        made.use(*newest)
        return False
    samples: list[bytes | bytearray | memoryview] = []
    taken = 0
    for (text,) in conn.execute(
        f"SELECT substr(text, 1, ?) FROM events WHERE {_UNPACKED} ORDER BY id DESC LIMIT ?",
        (SAMPLE_CHARS, MIN_BYTES, SAMPLE),
    ):
        samples.append(text.encode())
        taken += len(samples[-1])
        if taken >= SAMPLE_BYTES:
            break
    if len(samples) < TRAIN_AFTER:
        return False
    import zstandard

    try:
        data = zstandard.train_dictionary(
            DICT_BYTES, samples, k=TRAIN_SEGMENT, d=TRAIN_DMER, f=TRAIN_FREQ_LOG, level=LEVEL
        ).as_bytes()
    except zstandard.ZstdError:  # texts too alike or too few bytes to learn from: stay as is
        return False
    number = conn.execute(
        "INSERT INTO text_dicts (data, made) VALUES (?, ?)", (data, int(time.time() * 1000))
    ).lastrowid
    if number is None or number > MAX_DICTIONARIES:
        raise TextPackError(f"the index has more than {MAX_DICTIONARIES} dictionaries")
    made.use(number, data)
    conn.create_function("event_pack", 1, made.pack, deterministic=True)
    conn.execute(
        f"UPDATE events SET text = event_pack(text) WHERE {_UNPACKED}",
        (MIN_BYTES,),
    )
    return True


def check(conn: sqlite3.Connection) -> str:
    """`ok`, or what is wrong with the packed texts. SQLite's checks see only blobs, so every
    packed text is unpacked here: a damaged or missing dictionary, or a damaged text, is found
    by `huiyi doctor` and mended by `--repair`."""
    if not _has_dictionaries(conn):
        return "ok"
    reader = Codec(lambda: conn)
    bad, first = 0, ""
    for rowid, value in conn.execute("SELECT id, text FROM events WHERE typeof(text) = 'blob'"):
        if readthrough.is_locator(value):  # no text kept: its log is read when it is shown
            continue
        try:
            reader.unpack(value)
        except TextPackError as exc:
            bad += 1
            first = first or f"event {rowid}: {exc}"
    return "ok" if not bad else f"{bad} packed texts cannot be read ({first})"
