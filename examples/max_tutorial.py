"""A MAX tutorial program, run by graphdsl: MAX's graph, engine and driver APIs with only the
imports changed.

The program below is written against Modular's MAX 26.7 (``max.graph``, ``max.engine``,
``max.driver``): its first part is MAX's "Get started with MAX graphs" add program
(``InferenceSession(devices=[CPU()])``, ``session.load(graph)``, ``model.execute(a, b)``),
then a matmul over symbolic dimensions, a two-layer MLP whose weights are ``Weight``\\s
bound by ``weights_registry`` (executed with numpy arrays, a driver ``Buffer`` and by input
name, its output read through DLPack), and a running sum kept in a ``BufferType`` input that
``execute`` updates in place. Each result is checked against numpy.

Only the import block differs from the MAX program; every other line is MAX's. With the
imports changed back (``from max.driver import ...``, ``from max.dtype import DType``,
``from max.engine import InferenceSession``, ``from max.graph import ...``) the same text runs
on max 26.7.0's CPU engine, and it was checked there: it passes the same numpy checks and
gives the same numbers, bit for bit (every array of the four parts compared).
graphdsl runs the graphs on onnxruntime (``graphdsl.max.engine`` exports each graph to ONNX
once, at ``load``); the one visible difference is ``print(graph)``, which shows graphdsl's
IR instead of MAX's MLIR.

    python examples/max_tutorial.py
"""

from __future__ import annotations

import numpy as np

# The only lines that differ from the MAX program (MAX's: from max.driver import ...,
# from max.dtype import DType, from max.engine import InferenceSession,
# from max.graph import BufferType, DeviceRef, Graph, TensorType, Weight, ops).
from graphdsl.max import BufferType, DeviceRef, DType, Graph, TensorType, Weight, ops
from graphdsl.max.driver import CPU, Buffer, accelerator_count
from graphdsl.max.engine import InferenceSession


def add_tensors(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """MAX's first graph: ``a + b``, built, loaded and executed."""
    # 1. Build the graph
    input_type = TensorType(dtype=DType.float32, shape=(1,), device=DeviceRef.CPU())
    with Graph("simple_add_graph", input_types=(input_type, input_type)) as graph:
        lhs, rhs = graph.inputs
        out = ops.add(lhs, rhs)
        graph.output(out)
        print("final graph:", graph)

    # 2. Create an inference session
    session = InferenceSession(devices=[CPU()])
    model = session.load(graph)

    for tensor in model.input_metadata:
        print(f"name: {tensor.name}, shape: {tensor.shape}, dtype: {tensor.dtype}")

    # 3. Execute the graph
    output = model.execute(a, b)[0]
    result = output.to_numpy()
    return result


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for any ``[m, k] @ [k, n]``: symbolic dimensions, bound when it runs."""
    device = DeviceRef.CPU()
    a_type = TensorType(DType.float32, ["m", "k"], device)
    b_type = TensorType(DType.float32, ["k", "n"], device)
    with Graph("matmul", input_types=[a_type, b_type]) as graph:
        x, y = graph.inputs
        graph.output(ops.matmul(x.tensor, y.tensor))

    session = InferenceSession(devices=[CPU()])
    model = session.load(graph)
    print("matmul outputs:", model.output_metadata)
    return model.execute(a, b)[0].to_numpy()


def mlp(
    x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``relu(x @ w1 + b1) @ w2`` with its weights bound at load; executed three ways."""
    device = DeviceRef.CPU()
    with Graph("mlp", input_types=[TensorType(DType.float32, ["batch", 4], device)]) as graph:
        hidden_w = graph.add_weight(Weight("w1", DType.float32, [4, 8], device))
        hidden_b = graph.add_weight(Weight("b1", DType.float32, [8], device))
        out_w = graph.add_weight(Weight("w2", DType.float32, [8, 3], device))
        h = ops.relu(graph.inputs[0].tensor @ hidden_w + hidden_b)
        graph.output(h @ out_w)

    session = InferenceSession(devices=[CPU()])
    model = session.load(graph, weights_registry={"w1": w1, "b1": b1, "w2": w2})
    from_numpy = model.execute(x)[0].to_numpy()
    from_buffer = np.from_dlpack(model.execute(Buffer.from_numpy(x))[0])
    by_name = model(input0=x)[0].to_numpy()
    return from_numpy, from_buffer, by_name


def running_sum(rows: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A BufferType input as state: each execute adds a row to it, in place."""
    device = DeviceRef.CPU()
    state_type = BufferType(DType.float32, [3], device)
    row_type = TensorType(DType.float32, [3], device)
    with Graph("running_sum", input_types=[state_type, row_type]) as graph:
        state, row = graph.inputs
        total = state.buffer[...] + row.tensor
        state.buffer[...] = total
        graph.output(total * 2)

    session = InferenceSession(devices=[CPU()])
    model = session.load(graph)
    buffer = Buffer.from_numpy(np.zeros(3, np.float32))
    doubled = np.zeros(3, np.float32)
    for r in rows:
        doubled = model.execute(buffer, r)[0].to_numpy()
    return buffer.to_numpy(), doubled


def main() -> None:
    print("accelerators:", accelerator_count())

    result = add_tensors(np.array([1.0], np.float32), np.array([1.0], np.float32))
    print("result:", result)
    assert result == [2.0]

    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 5)).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    product = matmul(a, b)
    print("matmul:", product.shape, "max error vs numpy:", np.abs(product - a @ b).max())
    np.testing.assert_allclose(product, a @ b, rtol=1e-5, atol=1e-6)

    w1 = rng.standard_normal((4, 8)).astype(np.float32) * np.float32(0.5)
    b1 = rng.standard_normal(8).astype(np.float32) * np.float32(0.1)
    w2 = rng.standard_normal((8, 3)).astype(np.float32) * np.float32(0.5)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    want = np.maximum(x @ w1 + b1, 0) @ w2
    outs = mlp(x, w1, b1, w2)
    for got in outs:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    print("mlp:", outs[0].shape, "max error vs numpy:", np.abs(outs[0] - want).max())
    assert all(np.array_equal(o, outs[0]) for o in outs)

    rows = [np.array([1.0, 2.0, 3.0], np.float32), np.full(3, 0.5, np.float32)]
    final, doubled = running_sum(rows)
    print("running sum:", final, "last output:", doubled)
    assert final.tolist() == [1.5, 2.5, 3.5] and doubled.tolist() == [3.0, 5.0, 7.0]
    print("all results match numpy")


if __name__ == "__main__":
    main()
