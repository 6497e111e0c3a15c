"""``group_query_attention``: a decoder layer's attention over a KV cache held in a
fixed-size buffer, rows right-padded, with rotary positions inside. It is onnxruntime's
``com.microsoft.GroupQueryAttention`` contract (what onnxruntime-genai's models run), so that
``export(exact=False)`` can emit that fused kernel; ``export()`` lowers it to standard ONNX.

The contract, for ``query`` ``(B, S, Hq * D)``, ``key`` and ``value`` ``(B, S, Hkv * D)`` (the
S new tokens of each row), the cache buffers ``past_key`` and ``past_value`` ``(B, Hkv, P,
D)`` and ``seqlens_k`` ``(B,)`` int32:

* row b holds ``L_b = seqlens_k[b] + 1`` tokens once the new ones are in: its cached ones at
  positions ``0 .. p_b - 1`` of the buffer, ``p_b = max(L_b - S, 0)``, and the new ones at
  ``p_b .. p_b + S - 1``. Batches are right-padded: a prompt shorter than S has ``L_b < S``,
  and its padding tokens are written too (later tokens overwrite them);
* with ``cos`` and ``sin`` (tables ``(M, R / 2)``: row m holds the angles of position m, each
  once), the first R features of each query and key head are rotated at position ``p_b + s``
  (``rotate_half``'s pairing: feature i with feature i + R / 2: ``x_i cos - x_{i+R/2} sin``
  and ``x_{i+R/2} cos + x_i sin``, each product and sum rounded to float32, or float64 for
  float64, then to the dtype: the exact export's keys equal the reference's bit for bit);
* ``present_key`` and ``present_value`` are the buffers with the new keys and values written
  at ``p_b .. p_b + S - 1``; every other position keeps the past's content;
* the new token s of row b (a query head h, its key/value head ``h // (Hq / Hkv)``) attends
  to buffer positions ``0 .. p_b + s`` with ``softmax(scale * q . k)``; ``scale`` defaults to
  ``1 / sqrt(D)``. The output is ``(B, S, Hq * D)``.

It needs ``L_b <= P`` and ``p_b + S <= P`` (the buffer holds the row), ``p_b + S <= M`` (the
tables reach the positions) and ``L_b >= 1``; the reference raises otherwise, the exports
leave the result unspecified. ``exporters.onnx.Generator`` keeps to it (its ``max_length``).

The reference computes in float64 and rounds once. Under ``export(exact=False)`` onnxruntime
differs in two places the contract leaves to it: the outputs of a prompt's padding tokens
(it reads keys it never computed) and, when the present is not the past's own memory (the
Generator binds them to one buffer), the positions at or past ``p_b + S`` (it zeroes them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.ops._define import Operand, Symbol, define, op
from graphdsl.ops.layers import _float_typing
from graphdsl.policies import Policy
from graphdsl.shapes import ShapeError, dim_repr
from graphdsl.types import OpTypeError, TensorType

__all__ = ["group_query_attention"]

_RESULTS = ("output", "present_key", "present_value")


def group_query_attention(
    query: Operand,
    key: Operand,
    value: Operand,
    past_key: Operand,
    past_value: Operand,
    seqlens_k: Operand,
    cos: Operand | None = None,
    sin: Operand | None = None,
    *,
    num_heads: int,
    kv_num_heads: int,
    scale: float | None = None,
) -> tuple[Symbol, Symbol, Symbol]:
    """Attention of S new tokens per row over a KV cache buffer, with rotary positions:
    ``(output, present_key, present_value)`` (the module docstring states the contract;
    onnxruntime's ``GroupQueryAttention``). Three nodes of op ``group_query_attention``
    (attribute ``result``), exported as one onnxruntime node under ``exact=False``.

    A prompt of two tokens then one more, in a buffer of 4 positions (one head of size 2, no
    rotary): the second step's token attends to all three.

    >>> import numpy as np, graphdsl as gd
    >>> f32 = gd.float32
    >>> g = gd.Graph("gqa", input_types={
    ...     "x": gd.TensorType(f32, (1, "seq", 2)), "k": gd.TensorType(f32, (1, "seq", 2)),
    ...     "pk": gd.TensorType(f32, (1, 1, 4, 2)), "pv": gd.TensorType(f32, (1, 1, 4, 2)),
    ...     "lengths": gd.TensorType(gd.int32, (1,))})
    >>> x, k, pk, pv, lengths = g.inputs
    >>> out, present_k, present_v = gd.ops.group_query_attention(
    ...     x, k, x, pk, pv, lengths - 1, num_heads=1, kv_num_heads=1)
    >>> out.type, present_k.type
    (TensorType(float32[1, seq, 2]), TensorType(float32[1, 1, 4, 2]))
    >>> g.output(out, present_k, present_v)
    >>> zeros = np.zeros((1, 1, 4, 2), np.float32)
    >>> prompt = np.array([[[1, 0], [0, 1]]], np.float32)
    >>> o, kc, vc = gd.evaluate(g, [prompt, 0 * prompt, zeros, zeros, np.array([2], np.int32)])
    >>> o  # equal scores: the mean of the values each token sees
    array([[[1. , 0. ],
            [0.5, 0.5]]], dtype=float32)
    >>> o, _, _ = gd.evaluate(g, [np.array([[[3, 3]]], np.float32), np.zeros((1, 1, 2), np.float32),
    ...                          kc, vc, np.array([3], np.int32)])
    >>> o
    array([[[1.3333334, 1.3333334]]], dtype=float32)
    """
    if (cos is None) != (sin is None):
        raise OpTypeError("group_query_attention: give both cos and sin (rotary) or neither")
    operands: list[Operand] = [query, key, value, past_key, past_value, seqlens_k]
    if cos is not None and sin is not None:
        operands += [cos, sin]
    attrs = {"num_heads": num_heads, "kv_num_heads": kv_num_heads, "scale": scale}
    out = op("group_query_attention", *operands, **attrs, result="output")
    sources = out.inputs  # (numpy operands became constants once)
    present_k = op("group_query_attention", *sources, **attrs, result="present_key")
    present_v = op("group_query_attention", *sources, **attrs, result="present_value")
    return out, present_k, present_v


def _int_attr(attrs: dict[str, Any], name: str) -> int:
    v = attrs.get(name)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise OpTypeError(f"group_query_attention: {name} must be an int >= 1, got {v!r}")
    return int(v)


def _rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    if len(types) not in (6, 8):
        raise OpTypeError(f"group_query_attention takes 6 or 8 operands, got {len(types)}")
    q, k, v, pk, pv, lengths = types[:6]
    floats = [q, k, v, pk, pv, *types[6:]]
    c = _float_typing(p, floats)
    if lengths.dtype.kind not in (Kind.signed, Kind.unsigned) or lengths.rank != 1:
        raise OpTypeError(
            f"group_query_attention: seqlens_k must be integers (batch,), got {lengths}: each "
            "row's token count (cached and new) minus 1"
        )
    hq, hkv = _int_attr(attrs, "num_heads"), _int_attr(attrs, "kv_num_heads")
    if hq % hkv:
        raise ShapeError(
            f"group_query_attention: num_heads ({hq}) must be a multiple of kv_num_heads ({hkv})"
        )
    if q.rank != 3 or k.rank != 3 or v.rank != 3 or pk.rank != 4 or pv.rank != 4:
        raise ShapeError(
            f"group_query_attention needs query, key, value (batch, seq, heads * head_size) "
            f"and past_key, past_value (batch, kv_heads, buffer, head_size), got {q}, {k}, "
            f"{v}, {pk}, {pv}"
        )
    d = pk.shape[3]
    if not isinstance(d, int) or d < 1:
        raise ShapeError(f"group_query_attention: the head size (past_key's last axis, "
                         f"{dim_repr(d)}) must be static")  # fmt: skip
    want = {"query": (q, (q.shape[0], q.shape[1], hq * d)),
            "key": (k, (q.shape[0], q.shape[1], hkv * d)),
            "value": (v, (q.shape[0], q.shape[1], hkv * d)),
            "past_key": (pk, (q.shape[0], hkv, pk.shape[2], d)),
            "past_value": (pv, (q.shape[0], hkv, pk.shape[2], d)),
            "seqlens_k": (lengths, (q.shape[0],))}  # fmt: skip
    for name, (t, shape) in want.items():
        if t.shape != shape:
            raise ShapeError(
                f"group_query_attention: {name} is {t}, expected shape "
                f"({', '.join(dim_repr(x) for x in shape)}) for num_heads={hq}, "
                f"kv_num_heads={hkv} and head size {d} (past_key's last axis)"
            )
    if len(types) == 8:
        tc, ts = types[6:]
        half = tc.shape[1] if tc.rank == 2 else None
        if tc.rank != 2 or ts.shape != tc.shape or not isinstance(half, int) or 2 * half > d:
            raise ShapeError(
                f"group_query_attention: cos {tc} and sin {ts} must be (positions, rot / 2) "
                f"tables of one static shape with rot <= the head size {d}"
            )
    scale = attrs.get("scale")
    if scale is None:
        scale = 1 / math.sqrt(d)
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)):
        raise OpTypeError(f"group_query_attention: scale must be a number or None, got {scale!r}")
    result = attrs.get("result", "output")
    if result not in _RESULTS:
        raise OpTypeError(f"group_query_attention: result must be one of {_RESULTS}, got "
                          f"{result!r}")
    attrs.update(num_heads=hq, kv_num_heads=hkv, scale=float(scale), result=result)
    in_dtypes = (c.dtype,) * 5 + (DType.int32,) + (c.dtype,) * (len(types) - 6)
    shape = q.shape if result == "output" else pk.shape
    return in_dtypes, TensorType(c.dtype, shape, c.ambiguous)


def _rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """``x`` (..., D) rotated by cos, sin (..., R / 2), rotate_half's pairing."""
    h = cos.shape[-1]
    x1, x2 = x[..., :h], x[..., h:2 * h]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin, x[..., 2 * h:]], axis=-1)


def _impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    f = np.float64 if out.dtype is DType.float64 else np.float32  # the rotation's arithmetic
    dt = out.dtype.np
    q, k, v = (np.asarray(a, f) for a in args[:3])
    pk, pv = (np.asarray(a, np.float64) for a in args[3:5])
    lengths = np.asarray(args[5], np.int64) + 1
    hq, hkv, scale = attrs["num_heads"], attrs["kv_num_heads"], attrs["scale"]
    b, s = q.shape[:2]
    buf, d = pk.shape[2], pk.shape[3]
    past = np.maximum(lengths - s, 0)
    tables = [np.asarray(a, f) for a in args[6:8]]
    for row, (n, p0) in enumerate(zip(lengths.tolist(), past.tolist(), strict=True)):
        reach = tables[0].shape[0] if tables else None
        if n < 1 or n > buf or p0 + s > buf or (reach is not None and p0 + s > reach):
            raise ShapeError(
                f"group_query_attention: row {row} holds seqlens_k + 1 = {n} tokens with {s} "
                f"new ones (cached ones: {p0}); the buffer has {buf} positions"
                + (f" and cos/sin {reach}" if reach is not None else "")
                + ": each row needs 1 <= tokens <= buffer and cached + new <= buffer"
                + (" <= the tables' positions" if reach is not None else "")
            )
    # (B, S, H * D) -> (B, H, S, D)
    qh = q.reshape(b, s, hq, d).transpose(0, 2, 1, 3)
    kh = k.reshape(b, s, hkv, d).transpose(0, 2, 1, 3)
    vh = v.reshape(b, s, hkv, d).transpose(0, 2, 1, 3)
    positions = past[:, None] + np.arange(s)[None]  # (B, S)
    if tables:
        cos, sin = (t[positions][:, None] for t in tables)  # (B, 1, S, R / 2)
        with np.errstate(all="ignore"):
            qh, kh = _rotate(qh, cos, sin), _rotate(kh, cos, sin)
    # rounded to the dtype, as the op's results (the keys) and onnxruntime's kernel (both)
    qh, kh, vh = (np.asarray(np.asarray(a, dt), np.float64) for a in (qh, kh, vh))
    present_k, present_v = pk.copy(), pv.copy()
    for row, p0 in enumerate(past.tolist()):
        present_k[row, :, p0:p0 + s] = kh[row]
        present_v[row, :, p0:p0 + s] = vh[row]
    if attrs["result"] != "output":
        return np.asarray(present_k if attrs["result"] == "present_key" else present_v)
    rep = hq // hkv
    keys, values = np.repeat(present_k, rep, axis=1), np.repeat(present_v, rep, axis=1)
    with np.errstate(all="ignore"):
        scores = np.matmul(qh, np.swapaxes(keys, -1, -2)) * scale  # (B, Hq, S, P)
        visible = np.arange(buf)[None, None, :] <= positions[:, :, None]  # (B, S, P)
        scores = np.where(visible[:, None], scores, -np.inf)
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        y = np.matmul(e / np.sum(e, axis=-1, keepdims=True), values)  # (B, Hq, S, D)
    return np.asarray(y.transpose(0, 2, 1, 3).reshape(b, s, hq * d))


# (group_query_attention returns three symbols, each a node of the op: registered as its function)
define(
    cast(Callable[..., Symbol], group_query_attention),
    _rule,
    _impl,
    "floating; integers -> default float; seqlens_k integers (run as int32)",
)
