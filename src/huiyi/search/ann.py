"""The semantic layer's approximate index: faiss IVF-PQ over one workspace's vectors, in a file.

Scoring every vector of a workspace costs time and memory in proportion to it (a million
float32 rows are 1.5 GB). Above `EXACT_BELOW` vectors a workspace gets an inverted file of
product-quantised codes instead (faiss `IndexIVFPQ`: the vectors fall into `nlist` lists by
their nearest centroid, and each is kept as `m` one-byte codes, 48 bytes for 384 dimensions);
a query reads the codes of its `nprobe` nearest lists only. The codes rank candidates roughly,
so a search takes `CANDIDATES` of them and the caller scores those again exactly with the kept
float16 vectors (`store.vectors.by_ids`): the order a search returns is the exact one, over
the candidates the index found. Why this library and these numbers: docs/benchmarks.md,
"Semantic search at a million vectors" (an HNSW graph of int8 vectors is 500 MB at a million
and slow to build on two cores).

The file is kept beside the index (`HUIYI_HOME/index.ann/`, one per model and workspace),
written whole to a temporary name and renamed, with a header that names what it holds and a
digest of its payload, so a damaged or foreign file is found (`AnnError`), never read as codes.
It records the batch number of the last vectors it holds (`store.vectors.added_since`): what
was saved after it is added when it is opened, so the file may lag the index without being
wrong. The vectors table stays the truth: a vector deleted or embedded again since is read as
it is when candidates are scored, and `huiyi doctor --repair` writes every file anew.

A process building one in the background marks it with a file beside it (`building`, holding
its pid), so `huiyi doctor` in another process can say that it is under way (`describe`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from huiyi.config import DEFAULT_EXACT_BELOW
from huiyi.errors import AnnError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "CANDIDATES",
    "EXACT_BELOW",
    "AnnError",
    "AnnIndex",
    "Described",
    "building",
    "check",
    "describe",
    "path_for",
]

#: a workspace with fewer vectors than this is scored exactly (a few milliseconds and at most
#: a few tens of MB); the eval sets' workspaces are all below it. The default of the
#: `embedder.exactBelow` setting (`HUIYI_EXACT_BELOW`), which a `Semantic` is built with
EXACT_BELOW = DEFAULT_EXACT_BELOW
#: candidates the codes rank for exact scoring, at least (a search asks for more when it wants
#: a deeper ranking)
CANDIDATES = 400
#: the share of lists a query reads (at least `MIN_PROBE` of them)
PROBE_SHARE = 1 / 8
MIN_PROBE = 8
#: vectors sampled to train the centroids and the codebooks
TRAIN_SAMPLE = 65_536
#: rebuilt from scratch when the workspace outgrows the size it was trained at this many times
#: (more lists then), or when this share of what it holds is gone from the index
REBUILD_GROWTH = 8
REBUILD_STALE = 0.3

_MAGIC = b"HUIYI-ANN 1\n"
_REPAIR = "; `huiyi doctor --repair` builds it again from the vectors"


def path_for(directory: Path, model: str, workspace: str) -> Path:
    """Where the approximate index of `model` over `workspace` is kept."""
    import hashlib  # not at import: a search with no vectors loads no more than it needs

    key = hashlib.blake2b(f"{model}\0{workspace}".encode(), digest_size=12).hexdigest()
    return directory / f"{key}.ivfpq"


def _faiss() -> Any:
    import faiss

    # one query at a time: a second OpenMP thread only spins beside the other layers
    faiss.omp_set_num_threads(1)
    return faiss


def _subquantizers(dim: int) -> int:
    """Codes per vector: one byte per 8 dimensions (48 for 384), a divisor of `dim`."""
    for m in range(max(1, dim // 8), dim + 1):
        if dim % m == 0:
            return m
    return dim


def _lists(count: int) -> int:
    """Inverted lists for `count` vectors: about 2 sqrt(count), a power of two, 64 to 2048."""
    return int(min(2048, max(64, 2 ** round(math.log2(2 * math.sqrt(max(count, 1)))))))


class AnnIndex:
    """One workspace's vectors of one model as IVF-PQ codes, and what they cover.

    `added` is the batch number of the newest vectors it holds; `trained` the vector count it
    was trained at; `size` how many entries it holds (entries of vectors deleted or replaced
    since included). Searching and adding take the object's lock: faiss's index is not safe
    for a search and an add at once.
    """

    def __init__(
        self, model: str, workspace: str, dim: int, index: Any, *, added: int, trained: int
    ) -> None:
        self.model, self.workspace, self.dim = model, workspace, dim
        self.index = index
        self.added = added
        self.trained = trained
        self.lock = threading.Lock()
        self.unsaved = 0

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    @classmethod
    def train(
        cls,
        model: str,
        workspace: str,
        sample: npt.NDArray[np.float32],
        *,
        count: int,
        added: int,
        threads: int = 2,
    ) -> AnnIndex:
        """An empty index trained on `sample` for a workspace of about `count` vectors."""
        faiss = _faiss()
        dim = int(sample.shape[1])
        nlist = min(_lists(count), max(1, len(sample) // 39))
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFPQ(
            quantizer, dim, nlist, _subquantizers(dim), 8, faiss.METRIC_INNER_PRODUCT
        )
        index.cp.min_points_per_centroid = 1  # a small sample trains without a warning
        index.pq.cp.min_points_per_centroid = 1
        faiss.omp_set_num_threads(threads)
        try:
            index.train(sample)
        finally:
            faiss.omp_set_num_threads(1)
        index.nprobe = max(MIN_PROBE, math.ceil(nlist * PROBE_SHARE))
        return cls(model, workspace, dim, index, added=added, trained=count)

    def add(self, ids: npt.NDArray[np.int64], matrix: npt.NDArray[np.float32]) -> None:
        if len(ids):
            with self.lock:
                self.index.add_with_ids(matrix, ids)
                self.unsaved += len(ids)

    def search(self, query: npt.NDArray[np.float32], k: int) -> list[int]:
        """The event ids of up to `k` candidates for `query`, roughly best first."""
        import numpy as np

        k = min(max(k, CANDIDATES), max(self.size, 1))
        with self.lock:
            _scores, found = self.index.search(query.reshape(1, -1).astype(np.float32), k)
        return [int(i) for i in found[0] if i >= 0]

    def stale(self, embedded: int) -> bool:
        """Whether to build it again for a workspace that now has `embedded` vectors."""
        return embedded > self.trained * REBUILD_GROWTH or (
            self.size > 1000 and self.size - embedded > REBUILD_STALE * self.size
        )

    # -- the file --------------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the file whole under a temporary name, then rename it (a reader never sees
        half of one; two writers leave one whole file, whichever came last)."""
        import hashlib

        faiss = _faiss()
        with self.lock:
            payload = faiss.serialize_index(self.index).tobytes()
            head = {
                "model": self.model,
                "workspace": self.workspace,
                "dim": self.dim,
                "added": self.added,
                "trained": self.trained,
                "size": self.size,
                "bytes": len(payload),
                "blake2b": hashlib.blake2b(payload, digest_size=16).hexdigest(),
            }
            self.unsaved = 0
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(_MAGIC + json.dumps(head).encode() + b"\n")
                out.write(payload)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    @classmethod
    def load(cls, path: Path, model: str, workspace: str, dim: int) -> AnnIndex:
        """The index kept at `path`; raises `AnnError` for a file that is damaged or holds
        another model's or workspace's vectors, FileNotFoundError when there is none."""
        import hashlib

        import numpy as np

        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise AnnError(f"the approximate index {path} cannot be read ({exc}){_REPAIR}") from exc
        head, payload = _split(data, path)
        if (head.get("model"), head.get("workspace"), head.get("dim")) != (model, workspace, dim):
            raise AnnError(
                f"the approximate index {path} holds other vectors than its name says{_REPAIR}"
            )
        if len(payload) != head.get("bytes") or (
            hashlib.blake2b(payload, digest_size=16).hexdigest() != head.get("blake2b")
        ):
            raise AnnError(f"the approximate index {path} is damaged (its digest differs){_REPAIR}")
        faiss = _faiss()
        try:
            index = faiss.deserialize_index(np.frombuffer(payload, dtype=np.uint8))
        except RuntimeError as exc:
            raise AnnError(f"the approximate index {path} cannot be read ({exc}){_REPAIR}") from exc
        del data, payload
        if int(index.d) != dim:
            raise AnnError(
                f"the approximate index {path} has {index.d} dimensions, not {dim}{_REPAIR}"
            )
        return cls(
            model, workspace, dim, index, added=int(head["added"]), trained=int(head["trained"])
        )


def check(path: Path) -> str | None:
    """What is wrong with the file at `path` (None when it is whole): the header and the
    digest of its payload, without decoding the codes (`huiyi doctor`)."""
    import hashlib

    try:
        data = path.read_bytes()
        head, payload = _split(data, path)
    except (OSError, AnnError) as exc:
        return str(exc)
    if len(payload) != head.get("bytes") or (
        hashlib.blake2b(payload, digest_size=16).hexdigest() != head.get("blake2b")
    ):
        return f"the approximate index {path} is damaged (its digest differs){_REPAIR}"
    return None


class Described(NamedTuple):
    """What `huiyi doctor` says of one workspace's approximate index (`describe`): `state` is
    built, missing, building, outgrown or damaged; `size` the vectors the file holds (None
    when there is no file or it does not say), `trained` the count it was trained at."""

    state: str
    size: int | None = None
    trained: int | None = None
    builder: int | None = None
    problem: str | None = None


def describe(path: Path, embedded: int) -> Described:
    """The state of the file at `path` for a workspace that has `embedded` vectors: its
    header and digest are read, the codes are not decoded."""
    builder = _builder(path)
    if builder is not None:
        return Described("building", builder=builder)
    if not path.exists():
        return Described("missing")
    problem = check(path)
    if problem is not None:
        return Described("damaged", problem=problem)
    with path.open("rb") as handle:
        head, _ = _split(handle.readline() + handle.readline(), path)
    size = head.get("size")
    size = int(size) if isinstance(size, int) else None
    trained = int(head["trained"])
    grown = embedded > trained * REBUILD_GROWTH
    gone = size is not None and size > 1000 and size - embedded > REBUILD_STALE * size
    return Described("outgrown" if grown or gone else "built", size, trained)


def _marker(path: Path) -> Path:
    return path.with_suffix(".building")


@contextlib.contextmanager
def building(path: Path) -> Iterator[None]:
    """Mark the index at `path` as being built by this process while the block runs."""
    marker = _marker(path)
    marker.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    marker.write_text(str(os.getpid()))
    try:
        yield
    finally:
        marker.unlink(missing_ok=True)


def _builder(path: Path) -> int | None:
    """The pid of the live process building the index at `path`, if one is."""
    try:
        pid = int(_marker(path).read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None  # no marker, or one left by a process that is gone
    return pid


def _split(data: bytes, path: Path) -> tuple[dict[str, Any], bytes]:
    if not data.startswith(_MAGIC):
        raise AnnError(f"the approximate index {path} is damaged (no header){_REPAIR}")
    end = data.find(b"\n", len(_MAGIC))
    try:
        head = json.loads(data[len(_MAGIC) : end]) if end > 0 else None
    except ValueError:
        head = None
    if not isinstance(head, dict):
        raise AnnError(
            f"the approximate index {path} is damaged (its header cannot be read){_REPAIR}"
        )
    return head, data[end + 1 :]
