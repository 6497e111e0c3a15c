"""``group_query_attention`` (graphdsl/ops/gqa.py states its contract): standard ONNX, or
onnxruntime's ``com.microsoft.GroupQueryAttention`` under ``export(exact=False)``.

Standard ONNX (``export()``): the three result nodes of one call share one lowering.
Row b's cached count ``p_b = max(seqlens_k + 1 - S, 0)``; the positions ``p_b + s`` pick
rows of cos and sin (Gather), the rotation is Mul, Sub, Add and Concat in float32 (float64
for float64) as the reference computes it; the new keys and values go into the buffer by a
GatherND of buffer position t's token ``t - p_b`` and a Where on ``p_b <= t < p_b + S`` (the
present keys equal the reference's bit for bit); the attention is scaled_dot_product_attention's
lowering on the buffer with the mask ``t <= p_b + s``, grouped heads by broadcasting. Its
bound is scaled_dot_product_attention's, with S there the buffer's length P.

GroupQueryAttention (``export(exact=False)``, the CPU and CUDA targets, float32 and float16,
a head size that is a multiple of 8, and with rotary a multiple of 16 and R / 2 a multiple
of 8 (onnxruntime refuses others); elsewhere the standard lowering stays): one node, its
``total_sequence_length`` ``max(max(seqlens_k) + 1, S)`` (so that onnxruntime's first-prompt
test, total = S, holds exactly when every ``p_b`` is 0), ``do_rotary`` with the tables. The
node sits in a model-local function named ``com.microsoft.GroupQueryAttention...`` (as
MatMulNBits: its opset import goes with it). Measured against the reference on onnxruntime
1.31 and 1.32 (tests/test_gqa.py): the present values are copies, each rotated key a cos -
b sin within 2 u (|a| + |b|) of the reference's (onnxruntime's rotation may fuse a
multiply-add; measured within an ulp), the outputs within
scaled_dot_product_attention's bound of the reference on the rotated inputs. What the
contract leaves to onnxruntime (graphdsl/ops/gqa.py): a prompt's padding tokens' outputs,
and the buffer positions at or past ``p_b + S`` when the present is not the past's memory
(zeroed). onnxruntime refuses S > 1 new tokens on a cached batch of more than one row.
Where q, k and v are products of one value by three constant weights, they become one
product and the packed query (``_packed_qkv``).
"""

from __future__ import annotations

from collections.abc import Callable
from weakref import WeakKeyDictionary

import numpy as np
from onnx import helper

from exporters.onnx._builder import Builder, V
from exporters.onnx._lower._common import TYPED, WEIGHTS, SymbolicDims, T, register
from exporters.onnx._lower.control import DOMAIN, FUNCTIONS, Functions
from exporters.onnx._lower.layers import _compute, _producer, _softmax_last, fused_matmul
from exporters.onnx._lower.nbits import FOUR_BIT, NBITS_BLOCK_SIZES, _constant, nbits_product
from graphdsl.graph import Symbol

__all__: list[str] = []

_RESULTS = ("output", "present_key", "present_value")
# (operand names, num_heads, kv_num_heads, scale) -> the three results, per export
_DONE: WeakKeyDictionary[Builder, dict[tuple[object, ...], tuple[V, V, V]]] = WeakKeyDictionary()


@register("group_query_attention")
def _gqa(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    hq, hkv = int(node.attrs["num_heads"]), int(node.attrs["kv_num_heads"])
    scale = float(node.attrs["scale"])
    key = (tuple(a.name for a in args), hq, hkv, scale)
    done = _DONE.setdefault(b, {})
    if key not in done:
        d = int(node.inputs[3].shape[3])
        half = int(node.inputs[6].shape[1]) if len(args) == 8 else 0
        seq_dim = node.inputs[0].shape[1]
        fused = None if b.exact else _contrib(b, node, args, hq, hkv, d, scale, half, seq_dim)
        if fused is not None:  # their types, for onnx's inference (and so the RMS norm fusion)
            typed = b.memo.setdefault(TYPED, [])
            typed += zip((v.name for v in fused), (node.inputs[0], node.inputs[3],
                                                   node.inputs[4]), strict=True)  # fmt: skip
        done[key] = fused or _standard(b, args, hq, hkv, d, scale, half)
    return done[key][_RESULTS.index(str(node.attrs["result"]))]


# ---------------------------------------------------------------------------- standard ONNX


def _heads(b: Builder, x: V, heads: int, d: int) -> V:
    """(B, S, H * D) -> (B, S, H, D)."""
    return b.node("Reshape", [x.name, b.int64s([0, 0, heads, d])], x.dtype)


def _rotate(b: Builder, x: V, cos: V, sin: V, half: int, d: int) -> V:
    """(B, S, H, D) rotated by cos, sin (B, S, 1, R / 2), rotate_half's pairing."""
    f = x.dtype

    def part(lo: int, hi: int) -> V:
        return b.node("Slice", [x.name, b.int64s([lo]), b.int64s([hi]), b.int64s([-1])], f)

    x1, x2 = part(0, half), part(half, 2 * half)

    def mul(u: V, w: V) -> V:
        return b.node("Mul", [u.name, w.name], f)

    first = b.node("Sub", [mul(x1, cos).name, mul(x2, sin).name], f)
    second = b.node("Add", [mul(x2, cos).name, mul(x1, sin).name], f)
    parts = [first.name, second.name] + ([part(2 * half, d).name] if 2 * half < d else [])
    return b.node("Concat", parts, f, axis=-1)


def _standard(b: Builder, args: list[V], hq: int, hkv: int, d: int, scale: float,
              half: int) -> tuple[V, V, V]:  # fmt: skip
    """The contract in standard ONNX (the module's doc); ``half``: R / 2 (0: no rotary)."""
    out = args[0].dtype
    f = _compute(out)
    q, k, v = (_heads(b, b.cast(a, f), h, d) for a, h in zip(args[:3], (hq, hkv, hkv), strict=True))
    pk, pv = args[3], args[4]
    i64 = T.int64
    seq = b.node("Shape", [args[0].name], i64, start=1, end=2)  # [S]
    count = b.node("Add", [b.cast(args[5], i64).name, b.scalar(1, i64).name], i64)  # L_b
    cached = b.node("Max", [b.node("Sub", [count.name, seq.name], i64).name,
                            b.scalar(0, i64).name], i64)  # p_b (B,)  # fmt: skip
    col = b.node("Unsqueeze", [cached.name, b.int64s([1])], i64)  # (B, 1)
    steps = b.node("Range", [b.scalar(0, i64).name,
                             b.node("Squeeze", [seq.name, b.int64s([0])], i64).name,
                             b.scalar(1, i64).name], i64)  # fmt: skip
    positions = b.node("Add", [col.name, steps.name], i64)  # (B, S)
    if len(args) == 8:
        cos, sin = (b.cast(a, f) for a in args[6:8])
        tables = [b.node("Unsqueeze", [b.node("Gather", [t.name, positions.name], f).name,
                                       b.int64s([2])], f) for t in (cos, sin)]  # fmt: skip
        q, k = (_rotate(b, x, tables[0], tables[1], half, d) for x in (q, k))
    # the dtype's values, as the results (the keys) and onnxruntime's kernel (both) have them
    q, k, v = (b.cast(b.cast(x, out), f) if out is not f else x for x in (q, k, v))
    # the buffer: position t of row b takes new token t - p_b where 0 <= t - p_b < S
    buf = b.node("Shape", [pk.name], i64, start=2, end=3)
    t = b.node("Range", [b.scalar(0, i64).name,
                         b.node("Squeeze", [buf.name, b.int64s([0])], i64).name,
                         b.scalar(1, i64).name], i64)  # fmt: skip
    offset = b.node("Sub", [t.name, col.name], i64)  # (B, P)
    inside = b.node("And", [b.node("GreaterOrEqual", [offset.name, b.scalar(0, i64).name],
                                   T.bool).name,
                            b.node("Less", [offset.name, seq.name], T.bool).name], T.bool)
    last = b.node("Sub", [seq.name, b.scalar(1, i64).name], i64)
    token = b.node("Min", [b.node("Max", [offset.name, b.scalar(0, i64).name], i64).name,
                           last.name], i64)  # fmt: skip
    token = b.node("Unsqueeze", [token.name, b.int64s([2])], i64)  # (B, P, 1)
    where = b.node("Unsqueeze", [inside.name, b.int64s([1, 3])], T.bool)  # (B, 1, P, 1)
    presents = []
    for new, past in ((k, pk), (v, pv)):  # (in f: exact both ways for the dtype's values)
        picked = b.node("GatherND", [new.name, token.name], f, batch_dims=1)
        moved = b.node("Transpose", [picked.name], f, perm=[0, 2, 1, 3])  # (B, Hkv, P, D)
        presents.append(b.cast(b.select(where, moved, b.cast(past, f)), out))
    # attention on the buffer: (B, Hkv, rep, S, D) queries, (B, Hkv, 1, P, D) keys
    rep = hq // hkv
    qh = b.node("Transpose", [q.name], f, perm=[0, 2, 1, 3])  # (B, Hq, S, D)
    qh = b.node("Reshape", [qh.name, b.int64s([0, hkv, rep, -1, d])], f)
    kh, vh = (b.node("Unsqueeze", [b.cast(p, f).name, b.int64s([2])], f) for p in presents)
    kt = b.node("Transpose", [kh.name], f, perm=[0, 1, 2, 4, 3])
    s = b.node("MatMul", [qh.name, kt.name], f)
    s = b.node("Mul", [s.name, b.scalar(scale, f).name], f)
    visible = b.node("LessOrEqual", [t.name, b.node("Unsqueeze", [positions.name,
                                                                  b.int64s([2])], i64).name],
                     T.bool)  # (B, S, P)  # fmt: skip
    visible = b.node("Unsqueeze", [visible.name, b.int64s([1, 2])], T.bool)  # (B, 1, 1, S, P)
    s = b.select(visible, s, b.scalar(-np.inf, f))
    p = _softmax_last(b, s, "buffer")
    y = b.node("MatMul", [p.name, vh.name], f)  # (B, Hkv, rep, S, D)
    y = b.node("Reshape", [y.name, b.int64s([0, hq, -1, d])], f)
    y = b.node("Transpose", [y.name], f, perm=[0, 2, 1, 3])  # (B, S, Hq, D)
    y = b.node("Reshape", [y.name, b.int64s([0, 0, hq * d])], f)
    return b.cast(y, out), presents[0], presents[1]


# ---------------------------------------------------------------------------- contrib


def _contrib(b: Builder, node: Symbol, args: list[V], hq: int, hkv: int, d: int, scale: float,
             half: int, seq_dim: object) -> tuple[V, V, V] | None:  # fmt: skip
    """One com.microsoft GroupQueryAttention node where onnxruntime has the kernel; None
    elsewhere (the standard lowering stays)."""
    dt = args[0].dtype
    rotary = len(args) == 8
    if b.target.name not in ("cpu", "cuda") or dt not in (T.float32, T.float16):
        return None
    if d % 8 or (rotary and (d % 16 or half % 8)):  # onnxruntime's conditions
        return None
    packed = _packed_qkv(b, node, args)  # (first: nothing may read q, k or v yet)
    total = _total(b, args[0] if packed is None else packed, args[5], seq_dim)
    qkv = [a.name for a in args[:3]] if packed is None else [packed.name, "", ""]
    ins = qkv + [a.name for a in args[3:6]] + [total.name] + [a.name for a in args[6:8]]
    name = _function(b, hq, hkv, d, scale, rotary)
    outs = [b.fresh("gqa_output"), b.fresh("gqa_present_key"), b.fresh("gqa_present_value")]
    n = b.nodes.add()
    n.CopyFrom(helper.make_node(name, ins, outs, domain=DOMAIN))
    ctx = getattr(b.context, "op", None)
    if ctx is not None:
        n.name = f"{ctx} at {getattr(b.context, 'loc', '')}/{outs[0]}"
    return V(outs[0], dt), V(outs[1], dt), V(outs[2], dt)


def _packed_qkv(b: Builder, node: Symbol, args: list[V]) -> V | None:
    """q, k and v as one product, GroupQueryAttention's packed query (onnxruntime-genai's
    models are so), where they are the products of one value by three constant weights that
    nothing else reads: float32 ``linear`` without bias (FusedMatMul) or 4-bit ``qmatmul``
    (MatMulNBits) alike. The weights are concatenated along N, so each output column is the
    dot product it was, by the same kernel: two products fewer per layer. The three nodes
    already made are removed (and their weights' bytes dropped from the data file when it
    closes: exporters/onnx/_files.py). None elsewhere."""
    ops = [s.op for s in node.inputs[:3]]
    if ops[0] not in ("linear", "qmatmul") or len(set(ops)) != 1:
        return None
    q, k, v = node.inputs[:3]
    if any(s.inputs[0] is not q.inputs[0] or not _only_gqa_reads(s, node) for s in (q, k, v)):
        return None
    made = [_producer(b, a.name) for a in args[:3]]
    if any(m is None or len(m[1].input) < 2 for m in made):
        return None
    at = [m[0] for m in made if m is not None]
    calls = [b.nodes[i] for i in at]
    x = calls[0].input[0]
    if any(c.input[0] != x for c in calls):
        return None
    products = {a.name for a in args[:3]}
    if any(products.intersection(n.input) for n in b.nodes):  # (read already)
        return None
    parts = _linear_parts(b, q, k, v) if ops[0] == "linear" else _nbits_parts(b, q, k, v)
    if parts is None or not all(c.op_type.startswith(parts[0]) for c in calls):
        return None
    for i in sorted(at, reverse=True):
        del b.nodes[i]
    return parts[1](V(x, args[0].dtype))


def _only_gqa_reads(value: Symbol, node: Symbol) -> bool:
    """Do only ``node``'s call (its three result nodes) read ``value``, and no output?"""
    g = value.graph
    if any(o is value for o in g.outputs):
        return False
    return all(n.op == "group_query_attention" and n.inputs == node.inputs
               for n in g.nodes if any(i is value for i in n.inputs))  # fmt: skip


def _data(b: Builder, s: Symbol) -> np.ndarray | None:
    """The data of a constant or a bound weight (None for a computed value)."""
    if s.op == "constant":
        return np.asarray(s.attrs["value"])
    weights = b.memo.get(WEIGHTS)
    if s.op == "weight" and weights is not None:
        return np.asarray(weights.array(s.attrs["name"], s.dtype))
    return None


def _linear_parts(b: Builder, *products: Symbol) -> tuple[str, Callable[[V], V]] | None:
    """float32 linears without bias: the concatenated (out, in) weight's FusedMatMul."""
    if any(len(s.inputs) != 2 or s.dtype is not T.float32 for s in products):
        return None
    ws = [w for w in (_data(b, s.inputs[1]) for s in products) if w is not None]
    if len(ws) != 3 or any(w.dtype != np.float32 for w in ws):
        return None
    return "com.microsoft.FusedMatMul", lambda x: fused_matmul(
        b, x, b.const(np.concatenate(ws, axis=0), T.float32, "qkv_weight"))


def _nbits_parts(b: Builder, *products: Symbol) -> tuple[str, Callable[[V], V]] | None:
    """4-bit qmatmuls of one layout with constant codes, scales and zero points: those
    concatenated along N, one MatMulNBits."""
    first = products[0]
    layouts = {(s.inputs[1].dtype, s.inputs[2].dtype, s.attrs["axis"], s.attrs.get("block_size"),
                len(s.inputs), int(s.inputs[1].shape[0])) for s in products}  # fmt: skip
    block = first.attrs.get("block_size")
    if len(layouts) != 1 or first.inputs[1].dtype not in FOUR_BIT or first.attrs["axis"] != 0:
        return None
    if block not in NBITS_BLOCK_SIZES:
        return None
    got = [[_constant(s, i) for i in range(1, len(s.inputs))] for s in products]
    if any(a is None for parts in got for a in parts):
        return None
    k, blocks = int(first.inputs[1].shape[0]), -(-int(first.inputs[1].shape[0]) // int(block))

    def joined(i: int) -> np.ndarray:  # the codes [K, N], scales and zero points [blocks, N]
        return np.concatenate([np.asarray(p[i]).reshape(k if i == 0 else blocks, -1)
                               for p in got], axis=1)  # fmt: skip

    codes, scales = joined(0), joined(1)
    zp = joined(2) if len(first.inputs) > 3 else None
    d, sd = first.inputs[1].dtype, first.inputs[2].dtype
    return "com.microsoft.MatMulNBits", lambda x: nbits_product(b, x, codes, zp, scales, d,
                                                                int(block), sd)  # fmt: skip


# (seqlens_k's value, the queries' S) -> total_sequence_length, per export: one for the
# layers of a decoder (each layer's queries have the same S)
_TOTALS: WeakKeyDictionary[Builder, dict[tuple[str, str], V]] = WeakKeyDictionary()


def _total(b: Builder, query: V, lengths: V, seq_dim: object) -> V:
    """GroupQueryAttention's total_sequence_length, int32 (): max(max(seqlens_k) + 1, S)."""
    memo = _TOTALS.setdefault(b, {})
    key = (lengths.name, repr(seq_dim))
    if key not in memo:
        i64 = T.int64
        seq = b.node("Shape", [query.name], i64, start=1, end=2)
        longest = b.node("ReduceMax", [b.cast(lengths, i64).name], i64, keepdims=1)
        longest = b.node("Add", [longest.name, b.scalar(1, i64).name], i64)
        total = b.node("Max", [longest.name, seq.name], i64)
        memo[key] = b.cast(b.node("Squeeze", [total.name, b.int64s([0])], i64), T.int32)
    return memo[key]


def _function(b: Builder, hq: int, hkv: int, d: int, scale: float, rotary: bool) -> str:
    """The model-local function holding one GroupQueryAttention of these attributes."""
    functions: Functions = b.memo[FUNCTIONS]
    name = (f"com.microsoft.GroupQueryAttention.heads{hq}.kv{hkv}.size{d}"
            f".scale{float(np.float32(scale))!r}{'.rotary' if rotary else ''}")  # fmt: skip
    inputs = ["query", "key", "value", "past_key", "past_value", "seqlens_k",
              "total_sequence_length"] + (["cos_cache", "sin_cache"] if rotary else [])  # fmt: skip
    outputs = ["output", "present_key", "present_value"]
    gqa = helper.make_node("GroupQueryAttention", inputs, outputs, domain="com.microsoft",
                           num_heads=hq, kv_num_heads=hkv, scale=scale,
                           do_rotary=int(rotary), rotary_interleaved=0)  # fmt: skip
    doc = ("graphdsl group_query_attention under export(exact=False): onnxruntime's "
           "com.microsoft GroupQueryAttention (exporters/onnx/_lower/gqa.py states what "
           "differs from the reference and the bounds)")  # fmt: skip
    return functions.contrib(name, inputs, outputs, gqa, doc)
