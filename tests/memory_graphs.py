"""Graphs over huge static inputs, one or more per op family (tests/test_memory_bounds.py):
building, type checking and exporting them must not touch data of their inputs' size.

``graphs(n)`` gives ``(name, build)`` pairs; ``build()`` returns a graphdsl Graph or a
graphdsl.max Graph whose inputs are ``[n, n]`` float32 (images ``[1, 1, n, n]``), ready for
``exporters.onnx.export``. Nothing here runs a graph: at ``n = 2**20`` an input holds 4 TiB.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import graphdsl as gd
from graphdsl import DType

Build = Callable[[], Any]
Case = tuple[Any, "dict[str, np.ndarray] | None"]  # a graph (graphdsl's or graphdsl.max's), weights
F32 = DType.float32


def _graph(name: str, types: list[gd.TensorType], fn: Callable[..., Any]) -> gd.Graph:
    g = gd.Graph(name, input_types=types)
    with g:
        out = fn(*g.inputs)
        g.output(*(out if isinstance(out, (list, tuple)) else [out]))
    return g


def _core(n: int) -> dict[str, Build]:
    """graphdsl's own ops, family by family (graphdsl.opdef.OPS names the families)."""
    o = gd.ops
    mat = gd.TensorType(F32, (n, n))
    img = gd.TensorType(F32, (1, 1, n, n))
    vec = gd.TensorType(F32, (n,))
    ids = gd.TensorType(DType.int64, (n,))
    ids2 = gd.TensorType(DType.int64, (n, n))
    small = np.array([3, -1, 0], np.int64)
    cases: dict[str, tuple[list[gd.TensorType], Callable[..., Any]]] = {
        # elementwise, unary, activation, logic, cast
        "elementwise": ([mat, mat], lambda x, y: [
            f(x, y) for f in (o.add, o.sub, o.mul, o.div, o.floordiv, o.mod, o.pow, o.maximum,
                              o.minimum)]),
        "unary": ([mat], lambda x: [
            f(x) for f in (o.negative, o.sign, o.abs, o.exp, o.log, o.sqrt, o.rsqrt, o.sin,
                           o.cos, o.tanh, o.sigmoid, o.relu, o.floor, o.ceil, o.round, o.trunc,
                           o.is_nan, o.is_inf)] + [o.clip(x, -1.0, 2.5)]),
        "activation": ([mat], lambda x: [
            f(x) for f in (o.silu, o.tan, o.sinh, o.cosh, o.log1p, o.expm1, o.atanh, o.atan,
                           o.asin, o.acos, o.erf, o.gelu)] + [o.gelu(x, approximate="tanh")]),
        "logic": ([mat, mat], lambda x, y: [
            *(f(x, y) for f in (o.equal, o.not_equal, o.less, o.less_equal, o.greater,
                                o.greater_equal)),
            o.where(o.logical_xor(o.is_nan(x), o.logical_and(o.less(y, 0.0), o.logical_or(
                o.is_inf(x), o.logical_not(o.is_nan(y))))), x, y),
            *(f(o.cast(x, "int32"), o.cast(y, "int32")) for f in (o.bitwise_and, o.bitwise_or,
                                                                  o.bitwise_xor)),
            o.bitwise_not(o.cast(x, "uint8"))]),
        "cast": ([mat], lambda x: [
            o.cast(x, t) for t in ("float16", "bfloat16", "float64", "int8", "uint64", "bool",
                                   "float8_e4m3fn")]),
        # reductions, nn
        "reduction": ([mat], lambda x: [
            f(x, axis=1) for f in (o.sum, o.prod, o.max, o.min, o.mean, o.var, o.std,
                                   o.logsumexp)]
            + [o.any(o.is_nan(x)), o.all(o.is_inf(x), 0), o.mean(x)]),
        "nn": ([mat, mat], lambda x, y: [o.matmul(x, y), o.softmax(x), o.logsoftmax(x, 0)]),
        # shape
        "shape": ([mat, mat], lambda x, y: [
            o.reshape(x, (-1, 2)), o.transpose(x), o.broadcast_to(x, (2, n, n)),
            o.concat([x, y], 1), o.squeeze(o.expand_dims(x, 0), 0), o.split(x, [1, n - 1])[1],
            o.tile(x, [2, 1]), o.repeat_interleave(x, 2, 0), o.stack([x, y], 1)]),
        # slicing, ranges, masks
        "slicing": ([mat], lambda x: [
            x[1 : n - 1 : 2, ::-1], x[-1], x[None, 2, -3:], o.band_part(x, 1, 2),
            o.band_part(x, 0, None, exclude=True), o.tril(x, 3), o.triu(x),
            o.range(0, n), o.range(0.0, float(n), 0.5)]),
        "one_hot": ([ids], lambda i: o.one_hot(i, n)),
        # indexing: constant indices and indices computed in the graph
        "gather": ([mat, ids], lambda x, i: [
            o.gather(x, small), o.gather(x, i, axis=1), o.gather_nd(x, np.array([[0, 1]])),
            x[:, i]]),
        "scatter": ([mat, mat, ids2], lambda x, u, i: [
            o.scatter(x, u[:2, :3], np.array([[1, -4, 3], [3, 0, 0]]), axis=1),
            o.scatter_add(x, u, i, axis=0), o.scatter_nd(x, u[:2], np.array([[4], [-6]])),
            o.scatter_nd_add(x, u, o.expand_dims(i[0], 1))]),
        "scatter_reduce": ([mat, mat, ids2], lambda x, u, i: [
            o.scatter_max(x, u, i, axis=1), o.scatter_min(x, u[:1, :2], np.array([[1, 0]]), 0),
            o.scatter_mul(x, u, i, 0), o.scatter_nd_max(x, u, o.expand_dims(i[0], 1)),
            o.scatter_nd_min(x, u[:2], np.array([[3], [-1]])),
            o.scatter_nd_mul(x, u, o.expand_dims(i[:, 0], 1))]),
        # selection, ordering
        "selection": ([mat], lambda x: [
            o.argmax(x), o.argmin(x, 0, keepdims=True), *o.top_k(x, 3), *o.bottom_k(x, 2, 0),
            o.argsort(x), o.cumsum(x), o.cumsum(x, 0, exclusive=True, reverse=True)]),
        # norms, layers, attention
        "norm": ([mat, vec, vec], lambda x, gamma, beta: [
            o.layer_norm(x, gamma, beta), o.rms_norm(x, gamma, weight_offset=1.0),
            o.rms_norm(x, gamma, multiply_before_cast=True),
            o.group_norm(o.reshape(x, (1, n, n)), gamma, beta, 4)]),
        "layers": ([mat, mat, vec, img], lambda x, w, bias, im: [
            o.linear(x, w, bias), o.batch_norm(im, bias[:1], bias[1:2] * bias[1:2] + 1.0),
            o.adaptive_avg_pool2d(im, (4, 3)), o.adaptive_avg_pool2d(im, 1)]),
        "attention": ([mat, mat, mat], lambda q, k, v: [
            o.scaled_dot_product_attention(q, k, v, is_causal=True),
            o.scaled_dot_product_attention(q, k, v, o.less(q, k)),
            o.scaled_dot_product_attention(q, k, v, o.band_part(q, 2, 0))]),
        # a KV-cache attention over a buffer of n positions (n new tokens)
        "kv_cache": ([gd.TensorType(F32, (1, n, 32)), gd.TensorType(F32, (1, n, 16)),
                      gd.TensorType(F32, (1, 1, n, 16)), gd.TensorType(gd.int32, (1,))],
                     lambda q, kv, buf, count: list(o.group_query_attention(
                         q, kv, kv, buf, buf, count, num_heads=2, kv_num_heads=1))),
        # vision (channels first; float64 and int64 copies take the rewrites onnxruntime lacks
        # kernels for)
        "conv": ([img, gd.TensorType(F32, (2, 1, 3, 3))], lambda x, w: [
            o.conv2d(x, w, (2, 2), padding=(1, 1, 1, 1), input_layout="NCHW",
                     filter_layout="FCRS"),
            o.conv2d(o.cast(x, "float64"), o.cast(w, "float64"), padding=(1, 0, 0, 1),
                     input_layout="NCHW", filter_layout="FCRS"),
            o.conv2d_transpose(x, o.transpose(w, perm=[1, 0, 2, 3]), (2, 2),
                               input_layout="NCHW"),
            o.conv2d_transpose(o.cast(x, "float64"), o.cast(o.transpose(w, perm=[1, 0, 2, 3]),
                                                            "float64"), (2, 2),
                               input_layout="NCHW")]),
        "conv3d": ([gd.TensorType(F32, (1, 1, 4, n, n)), gd.TensorType(F32, (1, 1, 2, 2, 2))],
                   lambda x, w: [
            o.conv3d(x, w, input_layout="NCDHW", filter_layout="FCQRS"),
            o.conv3d(o.cast(x, "float64"), o.cast(w, "float64"), input_layout="NCDHW",
                     filter_layout="FCQRS")]),
        "pool": ([img], lambda x: [
            o.max_pool2d(x, (3, 2), 2, padding=1, ceil_mode=True, input_layout="NCHW"),
            o.max_pool2d(o.cast(x, "int64"), (2, 2), input_layout="NCHW"),
            o.avg_pool2d(x, (3, 2), 2, padding=1, ceil_mode=True, input_layout="NCHW"),
            o.avg_pool2d(o.cast(x, "float64"), (2, 2), (1, 2), (2, 1), 1,
                         count_boundary=False, input_layout="NCHW"),
            o.avg_pool2d(o.cast(x, "float64"), (3, 3), 2, padding=1, ceil_mode=True,
                         input_layout="NCHW")]),
        "pad_resize": ([img], lambda x: [
            o.pad(x, (0, 0, 0, 0, 1, 0, 2, 3), value=1.0),
            o.pad(x, (0, 0, 0, 0, 2, 1, 3, 0), "reflect"),
            o.pad(x, (0, 0, 0, 0, 0, 2, 1, 1), "edge"),
            o.resize(x, (1, 1, n // 2, 2 * n), "nearest"), o.resize(x, (1, 1, n // 2, 3 * n)),
            o.resize(x, (1, 1, n, 2 * n)), o.resize(x, (1, 1, 2 * n, n), "bicubic"),
            o.resize(o.cast(x, "float64"), (1, 1, n // 2, 2 * n), "bicubic")]),
        "image": ([gd.TensorType(F32, (1, 4, n)), gd.TensorType(F32, (1, n, n, 1))],
                  lambda cols, x: [
            o.fold(cols, (2, n + 1), (2, 2)), o.fold(o.cast(cols, "float64"), (2, n + 1), (2, 2)),
            o.roi_align(x, np.array([[0, 0, 0, 4, 6]], np.float32), 6, 4, 1.0, 1, True)]),
        # quantization
        "quant": ([mat, vec, gd.TensorType(F32, (n // 4, n)), gd.TensorType(F32, (n // 32, n))],
                  lambda x, s, b4, b32: [
            o.quantize(x, np.float32(2.0)), o.quantize(x, s, None, "uint8", axis=1),
            o.quantize(x, b4, None, "int8", axis=0, block_size=4),
            o.dequantize(o.cast(x, "int8"), o.reshape(s, (1, n)), None, axis=0, block_size=n),
            o.dequantize(o.cast(x, "int8"), s, o.cast(s, "int8"), axis=1),
            o.qmatmul(x, o.cast(x, "int8"), s),
            o.qmatmul(x, o.cast(x, "int8"), b32, None, axis=0, block_size=32)]),
        # sizes known at run time, random draws, debug
        "dynamic": ([mat, gd.TensorType(DType.int64, ())], lambda x, k: [
            o.nonzero(x, "count"), o.dynamic_range(0, k, 1, "k", dtype=DType.int64),
            o.dynamic_slice(x, 0, 0, k, 2, "m"), o.rebind(x, [n, "w"]),
            o.dim_size(x.shape[0] * x.shape[1])]),
        "random": ([], lambda: [o.random_uniform((n, n), F32, -1.0, 2.0, 3),
                                o.random_normal((n, n), F32, 0.0, 1.0, 5)]),
        # control flow
        "control": ([mat, gd.TensorType(DType.bool, ())], _control),
    }  # fmt: skip
    return {k: (lambda k=k, t=t, f=f: _graph(k, t, f)) for k, (t, f) in cases.items()}


def _control(x: gd.Symbol, p: gd.Symbol) -> list[gd.Symbol]:
    o = gd.ops
    sub = x.graph.subgraph("rows", [x.type])
    v = sub.inputs[0][::-1]
    sub.output(o.concat([v[:, 1:], v[:, :1]], axis=1))
    called = o.call(sub, x)
    assert isinstance(called, gd.Symbol)
    picked = o.cond(p, lambda: x * 2, lambda: x[::-1])
    _, looped = o.while_loop(
        [0, x], lambda i, v: i < 3, lambda i, v: (i + 1, o.concat([v[1:], v[:1]], axis=0))
    )
    return [called, picked, looped]  # type: ignore[list-item]


def _max(n: int) -> dict[str, Build]:
    """graphdsl.max's ops and buffers, as a MAX user writes them."""
    from graphdsl.max import BufferType, DeviceRef, Graph, TensorType, ops
    from graphdsl.max import DType as MDType

    cpu = DeviceRef.CPU()
    f32 = MDType.float32
    mat = TensorType(f32, [n, n], cpu)
    buf = BufferType(f32, [n, n], cpu)

    def buffers() -> Graph:
        with Graph("buffers", input_types=[buf, mat]) as g:
            state, x = g.inputs[0].buffer, g.inputs[1].tensor
            state[0] = x[0] + state[0]
            ops.buffer_store_slice(state, x[1:n:3, 1::2], [slice(1, n, 3), slice(None, None, -2)])
            state[-1, 5] = x[0, 0]
            ops.buffer_store_slice(state, x[:, 2:3] * 2, [slice(None), slice(2, 3)])
            scratch = ops.buffer_create(buf)
            ops.buffer_store(scratch, ops.buffer_load(state) + x)
            ones = ops.buffer_create(buf, init_value=1.0)
            ones[n // 2] = x[1]
            g.output(ops.buffer_load(scratch), ones[...], state[3])
        return g

    def max_ops() -> Graph:
        with Graph("max_ops", input_types=[mat, mat]) as g:
            x, y = (v.tensor for v in g.inputs)
            r = ops.range(0, n, 1, dtype=MDType.int64, device=cpu)
            z = ops.range(0, 0, 0, n, dtype=MDType.float32, device=cpu)
            g.output(
                ops.band_part(x, 0, None),
                ops.masked_scatter(x, x > y, y[0], n),
                ops.outer(x[0], y[0]),
                ops.tile(x, [1, 2]),
                ops.pad(x, [1, 0, 0, 2]),
                ops.repeat_interleave(x, 2, 1),
                ops.stack([x, y]),
                ops.chunk(x, 2)[1],
                ops.flatten(x),
                r,
                z,
                ops.hann_window(16, cpu),
                ops.irfft(x[:4], n=2 * (n - 1)),
            )
        return g

    return {"buffers": buffers, "max_ops": max_ops}


def _modules(n: int) -> Case:
    """graphdsl.nn's layers: norms without parameters over n features (their weight and bias
    built in the graph), causal multi-head attention over a sequence of n (small weights,
    bound at export)."""
    from graphdsl import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = nn.LayerNorm(n, elementwise_affine=False)
            self.rms = nn.RMSNorm(n, elementwise_affine=False)
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

        def forward(self, x: gd.Symbol, seq: gd.Symbol) -> tuple[gd.Symbol, gd.Symbol]:
            return self.rms(self.norm(x)), self.attn(seq, seq, seq, is_causal=True)[0]

    block = Block()
    types = [gd.TensorType(F32, (n, n)), gd.TensorType(F32, (1, n, 8))]
    with gd.Graph("nn_modules", input_types=types) as g:
        g.output(*block(*g.inputs))
    weights = {name: np.zeros(p.shape, np.float32) for name, p in block.named_parameters()}
    return g, weights


def graphs(n: int) -> dict[str, Callable[[], Case]]:
    """Every family's builder for inputs of ``n`` by ``n`` (``n`` a multiple of 32): each
    gives a graph and the weights it declares (None: none)."""
    cases: dict[str, Callable[[], Case]] = {
        k: (lambda b=b: (b(), None)) for k, b in _core(n).items()
    }
    cases.update({f"max_{k}": (lambda b=b: (b(), None)) for k, b in _max(n).items()})
    cases["nn_modules"] = lambda: _modules(n)
    return cases


def peak_rss_mb() -> float:
    """This process's peak resident set (Linux: VmHWM, which a new process image starts
    afresh; getrusage's ru_maxrss would carry the forking parent's across exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def main(argv: list[str]) -> None:
    """``import``: the peak RSS of the imports alone; ``export N``: then build and export
    every graph of ``graphs(N)`` for the CPU and CUDA targets. Prints one JSON line: the
    peak RSS in MB, and per model its size in bytes and its largest initializer's element
    count."""
    import json
    import resource

    # a graph that makes data of its inputs' size fails here with a MemoryError (4 TiB),
    # not by swamping the machine (the 23 GB); this process needs about 250 MB
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = 4 << 30 if hard == resource.RLIM_INFINITY else min(4 << 30, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    import onnx  # noqa: F401  (the imports a user's export makes, measured in the baseline)
    import onnxruntime  # noqa: F401

    import exporters.onnx as xo
    import graphdsl.max
    import graphdsl.nn  # noqa: F401

    models: dict[str, tuple[int, int]] = {}
    if argv[0] == "export":
        for name, build in graphs(int(argv[1])).items():
            for target in ("cpu", "cuda"):
                g, weights = build()
                m = xo.export(g, target=target, weights=weights)
                largest = max((int(np.prod(t.dims)) for t in m.graph.initializer), default=0)
                models[f"{name}/{target}"] = (m.ByteSize(), largest)
                del g, m
    print(json.dumps({"peak_mb": peak_rss_mb(), "models": models}))


if __name__ == "__main__":
    import sys
    import warnings

    warnings.simplefilter("ignore")  # (CUDA exports warn of nodes on the CPU provider)
    main(sys.argv[1:])
