"""A user-defined lattice with float8_e4m3fn, validated, made a Policy, exported and run.

The lattice is data: each dtype lists the dtypes it may be promoted to. Here float8_e4m3fn
sits below both 16-bit floats (a float8 value is exact in either), and integers meet floats
at float32. ``gd.Lattice`` checks that the graph is acyclic and that every pair has a
unique least upper bound; the example first shows a broken variant being rejected (adding
float8_e5m2 below the same two parents leaves the two float8 types with two unordered
upper bounds), then builds a policy with {anvil}'s literal rule from the valid lattice,
uses it in a graph, exports the graph to ONNX (opset 21) and compares onnxruntime's
results with ``gd.evaluate``.

    python examples/custom_lattice.py
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import graphdsl as gd
from exporters.onnx import export, run
from graphdsl.lattice import Node, node_name

T = gd.DType

EDGES: dict[Node, list[Node]] = {
    T.bool: [T.int8, T.uint8],
    T.int8: [T.int16],
    T.uint8: [T.int16],
    T.int16: [T.int32],
    T.int32: [T.float32],
    T.float8_e4m3fn: [T.bfloat16, T.float16],  # the new type, with its explicit edges
    T.bfloat16: [T.float32],
    T.float16: [T.float32],
}


def rejected_variant() -> None:
    broken: dict[Node, list[Node]] = {**EDGES, T.float8_e5m2: [T.bfloat16, T.float16]}
    try:
        gd.Lattice("f8-broken", broken)
    except gd.LatticeError as e:
        print(f"rejected: {e}")
    else:
        raise SystemExit("the broken lattice was accepted")
    cyclic: dict[Node, list[Node]] = {**EDGES, T.float32: [T.float8_e4m3fn]}
    try:
        gd.Lattice("f8-cyclic", cyclic)
    except gd.LatticeError as e:
        print(f"rejected: {e}")
    else:
        raise SystemExit("the cyclic lattice was accepted")


def build(policy: gd.Policy) -> gd.Graph:
    g = gd.Graph(
        "f8_graph",
        input_types={
            "x": gd.TensorType(gd.float8_e4m3fn, (2, 3)),
            "w": gd.TensorType(gd.float16, (3, 2)),
            "b": gd.TensorType(gd.bfloat16, (3,)),
            "n": gd.TensorType(gd.int8, ()),
        },
        policy=policy,
    )
    x, w, b, n = g.inputs
    scaled = x * 2 + 0.5  # literals yield to the known float8_e4m3fn
    g.output(
        scaled,  # float8_e4m3fn
        scaled @ w,  # float8_e4m3fn x float16 -> float16
        x + b,  # float8_e4m3fn x bfloat16 -> bfloat16
        x + n,  # float8_e4m3fn x int8 -> float32
    )
    return g


def main() -> None:
    lattice = gd.Lattice("f8", EDGES)
    print(f"{lattice!r}: valid; joins of the float types:")
    floats = [T.float8_e4m3fn, T.bfloat16, T.float16, T.float32]
    print(lattice.table(floats, floats))
    path = lattice.path(T.float8_e4m3fn, T.float32)
    print("a path from float8_e4m3fn up to float32:", " -> ".join(node_name(n) for n in path))
    print()
    rejected_variant()

    policy = gd.Policy(
        "f8",
        lattice,
        literals="anvil",
        description="float8_e4m3fn below float16 and bfloat16; integers join floats at float32",
    )
    print(f"\n{policy!r}: {policy.description}")
    print("float8_e4m3fn x float16  ->", policy.promote_types(T.float8_e4m3fn, T.float16).name)
    print("float8_e4m3fn x bfloat16 ->", policy.promote_types(T.float8_e4m3fn, T.bfloat16).name)
    print("float16 x bfloat16       ->", policy.promote_types(T.float16, T.bfloat16).name)
    print("float8_e4m3fn x int8     ->", policy.promote_types(T.float8_e4m3fn, T.int8).name)

    g = build(policy)
    print()
    print(g)
    print()
    print(gd.passes.implicit_cast(g))

    inputs = {
        "x": np.array([[1.0, -2.0, 0.75], [3.5, 0.0, -0.125]], ml_dtypes.float8_e4m3fn),
        "w": np.array([[1.0, 0.5], [2.0, -1.0], [0.25, 4.0]], np.float16),
        "b": np.array([0.5, 1.5, -2.0], ml_dtypes.bfloat16),
        "n": np.int8(-3),
    }
    reference = gd.evaluate(g, inputs)
    model = export(g, "custom_lattice.onnx")
    outputs = run(model, inputs)
    print(f"\n=== onnxruntime ({len(model.graph.node)} ONNX nodes, saved custom_lattice.onnx) ===")
    ok = True
    for k, (o, r) in enumerate(zip(outputs, reference, strict=True)):
        same = o.dtype == r.dtype and np.array_equal(
            o.astype(np.float32), r.astype(np.float32), equal_nan=True
        )
        ok &= same
        print(f"output{k}: {o.dtype}{list(o.shape)} {o.astype(np.float32).tolist()}  equal: {same}")
    print(f"onnxruntime matches gd.evaluate: {ok}")
    if not ok:
        raise SystemExit("onnxruntime and the numpy reference disagree")


if __name__ == "__main__":
    main()
