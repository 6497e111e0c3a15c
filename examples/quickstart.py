"""graphdsl quickstart: build a typed graph MAX style, see every implicit cast, run it on ONNX.

    python examples/quickstart.py
"""

from __future__ import annotations

import numpy as np

import graphdsl as gd
from exporters.onnx import export, run


def build() -> gd.Graph:
    g = gd.Graph(
        "quickstart",
        input_types={
            "x": gd.TensorType(gd.float32, ("batch", 4)),  # activations
            "n": gd.TensorType(gd.int16, ()),  # an integer offset
            "mask": gd.TensorType(gd.bool, ("batch", 4)),
        },
        policy="default",
    )
    x, n, mask = g.inputs
    w = g.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    h = gd.ops.relu(x @ w + n) * 2  # n (int16) joins float32; 2 is an ambiguous literal
    count = gd.ops.sum(mask, axis=1)  # a bool sum counts in the default int (int32)
    scale = g.scalar[gd.int16](3)  # a typed scalar, MAX style
    ratio = count / scale  # int32 / int16 -> true division in the default float
    g.output(h, ratio, count // 2 + n)
    return g


def main() -> None:
    g = build()
    print("=== the graph as built (types decided, '?' marks ambiguous literals) ===")
    print(g)
    print("\n=== after implicit_cast: every conversion is an explicit cast node ===")
    print(gd.passes.implicit_cast(g))
    print("\n=== why each conversion happens ===")
    print(g.explain())

    inputs = {
        "x": np.array([[1.0, -2.0, 0.5, 3.0], [0.0, 1.0, 2.0, -1.0]], np.float32),
        "n": np.int16(-3),
        "mask": np.array([[True, False, True, True], [False, False, False, True]]),
    }
    reference = gd.evaluate(g, inputs)  # the numpy reference interpreter
    model = export(g, "quickstart.onnx")
    outputs = run(model, inputs)  # onnxruntime, CPUExecutionProvider
    print(f"\n=== onnxruntime ({len(model.graph.node)} ONNX nodes, saved quickstart.onnx) ===")
    for k, (o, r) in enumerate(zip(outputs, reference, strict=True)):
        same = o.dtype == r.dtype and np.array_equal(o, r)
        print(f"output{k}: {o.dtype}{list(o.shape)} {o.tolist()}")
        print(f"  numpy reference: {r.dtype}{list(r.shape)} {r.tolist()}  equal: {same}")


if __name__ == "__main__":
    main()
