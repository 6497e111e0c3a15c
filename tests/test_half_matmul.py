"""Half-precision MatMuls with export(exact=False) on CUDA (issue 24, part 2): float16 and
bfloat16 ``matmul``, ``qmatmul`` and ``linear`` run in the half type (no Casts around the
MatMul) for target "cuda" with exact=False only, within the bound docs/semantics.md states:
``|y_hat - y| <= ((k - 1) u + S u_h) sum |a_i b_i|`` (S split-K slices), and with S = 1
``(k - 1) u sum |a_i b_i| + u_h |y|``.

Where it runs: float16 on the CPU provider here (its float16 MatMul computes in float32 and
rounds once: S = 1); bfloat16 has no CPU kernel, so its bound is checked on CUDA only
(``pytest --provider cuda``)."""

from __future__ import annotations

from typing import Any

import floats
import ml_dtypes
import numpy as np
import onnx
import pytest
from backend import CPU, cuda_only, providers, run

import graphdsl as gd
from exporters.onnx import export

U32 = 2.0**-24
HALF = {"float16": (np.float16, 2.0**-11, 2.0**-25), "bfloat16": (ml_dtypes.bfloat16, 2.0**-8,
                                                                   2.0**-134)}  # fmt: skip


def _matmul(dt: Any, m: int, k: int, n: int) -> gd.Graph:
    d = gd.dtype(np.dtype(dt))
    g = gd.Graph("mm", input_types={"a": gd.TensorType(d, ("m", k)), "b": gd.TensorType(d, (k, n))})
    a, b = g.inputs
    g.output(a @ b)
    return g


def _types(model: onnx.ModelProto, op: str) -> list[list[str]]:
    """The element types of each ``op`` node's inputs (onnx shape inference)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    known = {v.name: v.type.tensor_type.elem_type
             for v in [*inferred.graph.value_info, *inferred.graph.input]}  # fmt: skip
    known.update({t.name: t.data_type for t in model.graph.initializer})
    name = onnx.TensorProto.DataType.Name
    return [[name(known[i]) for i in n.input] for n in model.graph.node if n.op_type == op]


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_only_exact_false_on_cuda_keeps_the_matmul_in_the_half_type(half: str) -> None:
    dt = HALF[half][0]
    want = "FLOAT16" if half == "float16" else "BFLOAT16"
    native = export(_matmul(dt, 4, 8, 3), target="cuda", exact=False)
    assert [n.op_type for n in native.graph.node] == ["MatMul"]
    assert _types(native, "MatMul") == [[want, want]]
    for target, exact in (("cuda", True), ("cpu", False), ("cpu", True)):
        model = export(_matmul(dt, 4, 8, 3), target=target, exact=exact)
        assert _types(model, "MatMul") == [["FLOAT", "FLOAT"]], (target, exact)
        assert [n.op_type for n in model.graph.node].count("Cast") == 3


def test_linear_and_qmatmul_too() -> None:
    w = np.ones((3, 8), np.float16)
    g = gd.Graph("lin", input_types={"x": gd.TensorType(gd.float16, ("m", 8))})
    g.output(gd.ops.linear(g.inputs[0], w, np.ones(3, np.float16)))
    assert _types(export(g, target="cuda", exact=False), "MatMul") == [["FLOAT16", "FLOAT16"]]
    assert _types(export(g, target="cuda"), "MatMul") == [["FLOAT", "FLOAT"]]
    q = gd.Graph("q", input_types={"x": gd.TensorType(gd.bfloat16, ("m", 8))})
    scale = np.full(3, 0.5, np.float32).astype(ml_dtypes.bfloat16)
    q.output(gd.ops.qmatmul(q.inputs[0], np.ones((8, 3), np.int8), scale))
    assert _types(export(q, target="cuda", exact=False), "MatMul") == [["BFLOAT16", "BFLOAT16"]]
    assert _types(export(q, target="cuda"), "MatMul") == [["FLOAT", "FLOAT"]]


def _operands(dt: Any, m: int, k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Values of mixed signs and magnitudes (cancellation in the sums), a few exact zeros."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(m, k)) * np.exp(rng.normal(size=(m, k)))
    b = rng.normal(size=(k, n))
    a[0, : k // 2] = 0.0
    return a.astype(dt), b.astype(dt)


def _check_bound(got: np.ndarray, a: np.ndarray, b: np.ndarray, u_h: float, tiny: float,
                 slices: int) -> float:  # fmt: skip
    """The stated bound, elementwise; returns the largest error over its bound."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    magnitude = np.abs(a64) @ np.abs(b64)
    k = a.shape[1]
    if slices == 1:
        bound = (k - 1) * U32 * magnitude + u_h * np.abs(exact) + tiny
    else:
        bound = ((k - 1) * U32 + slices * u_h) * magnitude + tiny
    floats.assert_close(got.astype(np.float64), exact, bound, "half matmul")
    return float(np.max(np.abs(got.astype(np.float64) - exact) / bound))


@pytest.mark.parametrize(("m", "k", "n"), [(5, 7, 3), (16, 1024, 8), (3, 4096, 2)])
def test_float16_within_the_bound_on_the_cpu_provider(m: int, k: int, n: int) -> None:
    """The CUDA model (a float16 MatMul) on the CPU provider, whose float16 MatMul sums in
    float32 and rounds once (S = 1); the reference's result within the same bound."""
    dt, u_h, tiny = HALF["float16"]
    g = _matmul(dt, m, k, n)
    model = export(g, target="cuda", exact=False)
    a, b = _operands(dt, m, k, n, seed=k)
    got = run(model, {"a": a, "b": b}, providers=CPU)[0]
    assert got.dtype == np.float16
    _check_bound(got, a, b, u_h, tiny, slices=1)
    _check_bound(gd.evaluate(g, {"a": a, "b": b})[0], a, b, u_h, tiny, slices=1)


@cuda_only
@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@pytest.mark.parametrize(("m", "k", "n"), [(64, 4096, 64), (1024, 1024, 1024)])
def test_half_matmul_within_the_bound_on_cuda(half: str, m: int, k: int, n: int) -> None:
    """cuBLAS may split the sum (split-K, partial sums in the half type): the bound with S
    slices, S = 16 at most (cuBLAS's heuristics choose fewer for these shapes)."""
    dt, u_h, tiny = HALF[half]
    model = export(_matmul(dt, m, k, n), target="cuda", exact=False)
    a, b = _operands(dt, m, k, n, seed=k + n)
    got = run(model, {"a": a, "b": b}, providers=providers())[0]
    _check_bound(got, a, b, u_h, tiny, slices=16)
