"""A GPT-2 block and a Llama block written by hand with ``onnx.helper``: the expert's floor.

These are what an engineer who knows onnxruntime would write for the two blocks of
``tests/reference_blocks.py`` (issue 14), for graphdsl's own blocks to be measured against:
opset 21, IR version 10, batch and sequence length symbolic (``"batch"``, ``"seq"``),
weights as initializers. Neither imports graphdsl or exporters.

* GPT-2: ``Gather`` for the token and position embeddings (positions from
  ``Shape``/``Gather``/``Range``), ``LayerNormalization``, ``MatMul`` + ``Add``, ``Split``
  of the fused q/k/v, ``Reshape``/``Transpose`` into heads (keys straight into
  ``[b, h, hd, s]``), a causal mask from comparing two views of the position ``Range``
  applied with ``Where``, ``Softmax``, ``Gelu(approximate="tanh")``.
* Llama: RMSNorm as ``Pow``/``ReduceMean``/``Add``/``Sqrt``/``Div``/``Mul`` (the pattern
  onnxruntime fuses into one ``SimplifiedLayerNormalization``), one ``MatMul`` for q, k and v
  together and one for gate and up (their weights concatenated, then ``Split``), rotary
  embeddings from ``Sin``/``Cos`` of ``Range * inv_freq`` applied with ``Slice``/``Neg``/
  ``Concat``, grouped-query attention without repeating keys and values (queries are shaped
  ``[b, kv, rep, s, hd]`` and ``MatMul`` broadcasts the ``[b, kv, 1, ...]`` keys and values),
  SiLU as ``Sigmoid`` + ``Mul``.

What onnxruntime 1.32's default (ORT_ENABLE_ALL) CPU optimizer makes of them, read from
``SessionOptions.optimized_model_filepath``: GPT-2 36 -> 34 nodes (``Gelu`` plus its bias
``Add`` become ``com.microsoft.FastGelu``; ``MatMul`` + the ``Mul`` by 1/sqrt(hd) become
``FusedMatMul``; the ``MatMul`` + ``Add`` pairs stay apart), Llama 65 -> 51 (each RMSNorm
becomes ``SimplifiedLayerNormalization``, ``x * Sigmoid(x)`` becomes ``QuickGelu`` with
alpha 1, the two rotary ``Slice`` pairs become ``Split``, ``FusedMatMul`` as above). The
RMSNorm fusion needs ``Div``: written as ``x * Reciprocal(Sqrt(...))`` (with ``Pow`` or
``x * x``) nothing fuses (67 -> 63 nodes) and the block ran about 8% slower. Repeating keys
and values with ``Expand`` instead of broadcasting in ``MatMul`` ran the same (within 2%).

``python benchmarks/handwritten.py`` prints each block's node count and its onnxruntime CPU
run time (median of 50 runs, batch 2, seq 64, default session options).
"""

from __future__ import annotations

import importlib
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["GPT2Like", "LlamaLike", "gpt2_block_model", "llama_block_model", "main"]

OPSET = 21
IR_VERSION = 10
Weights = dict[str, npt.NDArray[Any]]


class GPT2Like(Protocol):
    """The sizes :func:`gpt2_block_model` reads (``tests/reference_blocks.GPT2Config``)."""

    @property
    def vocab(self) -> int: ...
    @property
    def n_ctx(self) -> int: ...
    @property
    def d_model(self) -> int: ...
    @property
    def n_head(self) -> int: ...
    @property
    def eps(self) -> float: ...


class LlamaLike(Protocol):
    """The sizes :func:`llama_block_model` reads (``tests/reference_blocks.LlamaConfig``)."""

    @property
    def d_model(self) -> int: ...
    @property
    def n_head(self) -> int: ...
    @property
    def n_kv_head(self) -> int: ...
    @property
    def head_dim(self) -> int: ...
    @property
    def hidden(self) -> int: ...
    @property
    def eps(self) -> float: ...
    @property
    def rope_theta(self) -> float: ...


class _Builder:
    """Collects nodes and initializers; ``op`` returns the output name(s) of the node it adds."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._names: set[str] = set()
        self._ints: dict[tuple[int, ...] | int, str] = {}

    def _fresh(self, hint: str) -> str:
        name, i = hint, 1
        while name in self._names:
            name, i = f"{hint}_{i}", i + 1
        self._names.add(name)
        return name

    def init(self, name: str, value: npt.ArrayLike, dtype: Any = np.float32) -> str:
        """Add an initializer (float32 unless ``dtype`` says otherwise)."""
        name = self._fresh(name)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def ints(self, value: int | list[int]) -> str:
        """An int64 initializer (a scalar for an ``int``, 1-D for a list), made once per value."""
        key = value if isinstance(value, int) else tuple(value)
        if key not in self._ints:
            hint = f"i{value}" if isinstance(value, int) else "i_" + "_".join(map(str, value))
            self._ints[key] = self.init(hint.replace("-", "m"), value, np.int64)
        return self._ints[key]

    def op(
        self, op_type: str, *inputs: str, n_out: int = 1, out: str | None = None, **attrs: Any
    ) -> Any:
        """Add one node; returns its output name, or a list of names when ``n_out > 1``.

        ``out`` names the (single) output; by default outputs get fresh names.
        """
        if out is not None:
            outs = [self._fresh(out)]
        else:
            outs = [self._fresh(f"{op_type.lower()}_{len(self.nodes)}") for _ in range(n_out)]
        self.nodes.append(
            helper.make_node(op_type, list(inputs), outs, name=f"n{len(self.nodes)}", **attrs)
        )
        return outs[0] if n_out == 1 else outs

    def model(
        self, name: str, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto]
    ) -> onnx.ModelProto:
        """The finished model (opset 21, IR 10), checked with ``full_check=True``."""
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            ir_version=IR_VERSION,
            producer_name="benchmarks/handwritten.py",
        )
        onnx.checker.check_model(m, full_check=True)
        return m


def _positions(b: _Builder, like: str) -> str:
    """``Range(0, like.shape[1], 1)`` (int64 ``[seq]``) from ``Shape``/``Gather``/``Range``."""
    seq = b.op("Gather", b.op("Shape", like), b.ints(1), axis=0)  # scalar index -> scalar
    return str(b.op("Range", b.ints(0), seq, b.ints(1)))


def _causal_mask(b: _Builder, pos: str) -> str:
    """bool ``[seq, seq]``, true above the diagonal (key position > query position)."""
    rows = b.op("Unsqueeze", pos, b.ints([1]))  # [s, 1]: query position
    cols = b.op("Unsqueeze", pos, b.ints([0]))  # [1, s]: key position
    return str(b.op("Less", rows, cols))


def gpt2_block_model(w: Weights, cfg: GPT2Like) -> onnx.ModelProto:
    """Embeddings plus one GPT-2 block: ``ids`` int64 ``[batch, seq]`` -> ``out`` float32.

    Computes what ``tests/reference_blocks.gpt2_block`` does, with the weights of
    ``gpt2_weights`` (HF names and layouts) as initializers.
    """
    b = _Builder()
    d, nh = cfg.d_model, cfg.n_head
    hd = d // nh
    p = {k: b.init(k, v) for k, v in w.items()}
    scale = b.init("scale", 1.0 / math.sqrt(hd))
    lowest = b.init("lowest", np.finfo(np.float32).min)

    pos = _positions(b, "ids")
    h = b.op("Add", b.op("Gather", p["wte"], "ids", axis=0), b.op("Gather", p["wpe"], pos, axis=0))

    # attention
    a = b.op("LayerNormalization", h, p["ln_1.weight"], p["ln_1.bias"], axis=-1, epsilon=cfg.eps)
    qkv = b.op("Add", b.op("MatMul", a, p["attn.c_attn.weight"]), p["attn.c_attn.bias"])
    q, k, v = b.op("Split", qkv, axis=-1, num_outputs=3, n_out=3)
    heads = b.ints([0, 0, nh, hd])
    q = b.op("Transpose", b.op("Reshape", q, heads), perm=[0, 2, 1, 3])  # [b, h, s, hd]
    k = b.op("Transpose", b.op("Reshape", k, heads), perm=[0, 2, 3, 1])  # [b, h, hd, s]
    v = b.op("Transpose", b.op("Reshape", v, heads), perm=[0, 2, 1, 3])  # [b, h, s, hd]
    scores = b.op("Mul", b.op("MatMul", q, k), scale)
    scores = b.op("Where", _causal_mask(b, pos), lowest, scores)
    ctx = b.op("MatMul", b.op("Softmax", scores, axis=-1), v)
    ctx = b.op("Reshape", b.op("Transpose", ctx, perm=[0, 2, 1, 3]), b.ints([0, 0, d]))
    attn = b.op("Add", b.op("MatMul", ctx, p["attn.c_proj.weight"]), p["attn.c_proj.bias"])
    x = b.op("Add", h, attn)

    # MLP
    m = b.op("LayerNormalization", x, p["ln_2.weight"], p["ln_2.bias"], axis=-1, epsilon=cfg.eps)
    f = b.op("Add", b.op("MatMul", m, p["mlp.c_fc.weight"]), p["mlp.c_fc.bias"])
    f = b.op("Gelu", f, approximate="tanh")
    f = b.op("Add", b.op("MatMul", f, p["mlp.c_proj.weight"]), p["mlp.c_proj.bias"])
    b.op("Add", x, f, out="out")

    return b.model(
        "gpt2_block",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "seq", d])],
    )


def _rms_norm(b: _Builder, x: str, weight: str, eps: str, two: str, axes: str) -> str:
    """``x / Sqrt(ReduceMean(Pow(x, 2)) + eps) * weight``: onnxruntime fuses it whole."""
    ms = b.op("ReduceMean", b.op("Pow", x, two), axes, keepdims=1)
    return str(b.op("Mul", b.op("Div", x, b.op("Sqrt", b.op("Add", ms, eps))), weight))


def _rotary(b: _Builder, x: str, cos: str, sin: str, hd: int) -> str:
    """``x * cos + concat(-x2, x1) * sin`` over the last axis of ``x`` (``hd`` wide)."""
    x1 = b.op("Slice", x, b.ints([0]), b.ints([hd // 2]), b.ints([-1]))
    x2 = b.op("Slice", x, b.ints([hd // 2]), b.ints([hd]), b.ints([-1]))
    rotated = b.op("Concat", b.op("Neg", x2), x1, axis=-1)
    return str(b.op("Add", b.op("Mul", x, cos), b.op("Mul", rotated, sin)))


def llama_block_model(w: Weights, cfg: LlamaLike) -> onnx.ModelProto:
    """One Llama decoder layer: ``x`` float32 ``[batch, seq, d_model]`` -> ``out``, same shape.

    Computes what ``tests/reference_blocks.llama_block`` does, with the weights of
    ``llama_weights`` (stored ``[in, out]``) as initializers; q/k/v and gate/up are
    concatenated into one initializer each.
    """
    b = _Builder()
    d, nh, nkv, hd, hidden = cfg.d_model, cfg.n_head, cfg.n_kv_head, cfg.head_dim, cfg.hidden
    rep = nh // nkv
    wqkv = b.init(
        "self_attn.qkv_proj.weight",
        np.concatenate(
            [w[f"self_attn.{p}_proj.weight"] for p in ("q", "k", "v")], axis=1, dtype=np.float32
        ),
    )
    wo = b.init("self_attn.o_proj.weight", w["self_attn.o_proj.weight"])
    wgu = b.init(
        "mlp.gate_up_proj.weight",
        np.concatenate([w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"]], axis=1),
    )
    wdown = b.init("mlp.down_proj.weight", w["mlp.down_proj.weight"])
    ln1 = b.init("input_layernorm.weight", w["input_layernorm.weight"])
    ln2 = b.init("post_attention_layernorm.weight", w["post_attention_layernorm.weight"])
    eps = b.init("eps", cfg.eps)
    two = b.init("two", 2.0)
    scale = b.init("scale", 1.0 / math.sqrt(hd))
    lowest = b.init("lowest", np.finfo(np.float32).min)
    inv_freq = b.init("inv_freq", cfg.rope_theta ** (-np.arange(0, hd, 2, dtype=np.float64) / hd))

    # rotary tables [s, 1, hd], broadcast over [b, s, heads, hd]
    pos = _positions(b, "x")
    angles = b.op("Mul", b.op("Unsqueeze", b.op("Cast", pos, to=TensorProto.FLOAT), b.ints([1])),
                  inv_freq)  # fmt: skip
    emb = b.op("Unsqueeze", b.op("Concat", angles, angles, axis=-1), b.ints([1]))
    cos, sin = b.op("Cos", emb), b.op("Sin", emb)

    # attention
    a = _rms_norm(b, "x", ln1, eps, two, b.ints([-1]))
    q, k, v = b.op(
        "Split", b.op("MatMul", a, wqkv), b.ints([nh * hd, nkv * hd, nkv * hd]), axis=-1, n_out=3
    )
    q = _rotary(b, b.op("Reshape", q, b.ints([0, 0, nh, hd])), cos, sin, hd)  # [b, s, nh, hd]
    k = _rotary(b, b.op("Reshape", k, b.ints([0, 0, nkv, hd])), cos, sin, hd)  # [b, s, nkv, hd]
    # query head h = g * rep + r uses key/value head g (HF's repeat_kv), by broadcasting:
    # q is [b, g, r, s, hd], k^T [b, g, 1, hd, s] and v [b, g, 1, s, hd]
    groups, shared = b.ints([0, 0, nkv, rep, hd]), b.ints([0, 0, nkv, 1, hd])
    q = b.op("Transpose", b.op("Reshape", q, groups), perm=[0, 2, 3, 1, 4])
    k = b.op("Transpose", b.op("Reshape", k, shared), perm=[0, 2, 3, 4, 1])
    v = b.op("Transpose", b.op("Reshape", v, shared), perm=[0, 2, 3, 1, 4])
    scores = b.op("Mul", b.op("MatMul", q, k), scale)
    scores = b.op("Where", _causal_mask(b, pos), lowest, scores)
    ctx = b.op("MatMul", b.op("Softmax", scores, axis=-1), v)  # [b, g, r, s, hd]
    ctx = b.op("Reshape", b.op("Transpose", ctx, perm=[0, 3, 1, 2, 4]), b.ints([0, 0, nh * hd]))
    h = b.op("Add", "x", b.op("MatMul", ctx, wo))

    # MLP
    y = _rms_norm(b, h, ln2, eps, two, b.ints([-1]))
    gate, up = b.op("Split", b.op("MatMul", y, wgu), b.ints([hidden, hidden]), axis=-1, n_out=2)
    act = b.op("Mul", b.op("Mul", gate, b.op("Sigmoid", gate)), up)
    b.op("Add", h, b.op("MatMul", act, wdown), out="out")

    return b.model(
        "llama_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", d])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "seq", d])],
    )


def _median_run_ms(m: onnx.ModelProto, feeds: dict[str, npt.NDArray[Any]], runs: int) -> float:
    import onnxruntime as ort

    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for _ in range(5):
        sess.run(None, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main() -> None:
    """Print each block's node count and onnxruntime CPU run time (batch 2, seq 64)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    ref = importlib.import_module("reference_blocks")
    batch, seq, runs = 2, 64, 50
    rng = np.random.default_rng(0)

    gcfg = ref.GPT2Config()
    gm = gpt2_block_model(ref.gpt2_weights(gcfg, seed=0), gcfg)
    ids = rng.integers(0, gcfg.vocab, (batch, seq), dtype=np.int64)
    lcfg = ref.LlamaConfig()
    lm = llama_block_model(ref.llama_weights(lcfg, seed=0), lcfg)
    x = rng.standard_normal((batch, seq, lcfg.d_model)).astype(np.float32)

    print(f"onnxruntime CPU, batch {batch}, seq {seq}, median of {runs} runs")
    for name, m, feeds in (("gpt2", gm, {"ids": ids}), ("llama", lm, {"x": x})):
        ms = _median_run_ms(m, feeds, runs)
        print(f"{name:6s} {len(m.graph.node):3d} nodes  {ms:8.3f} ms")


if __name__ == "__main__":
    main()
