"""Save a model with ``export(g, path)`` and run the file with plain onnxruntime.

The first half uses graphdsl: it builds a small model whose outputs exercise the numpy
reference semantics the exporter must reproduce (a float32 layer, integer floor division
and modulo with negative operands and a zero divisor, and a float -> int8 cast that
saturates and maps NaN to 0), computes the reference with ``gd.evaluate``, and saves the
model with ``export(g, "saved_model.onnx")``.

The second half, :func:`run_with_onnxruntime`, imports only numpy and onnxruntime: it is
what a deployment that never installs graphdsl would run. The example compares its outputs
with the reference computed before.

    python examples/saved_model.py [PATH]      # PATH defaults to saved_model.onnx
"""

from __future__ import annotations

import sys
from typing import Any

MODEL_PATH = "saved_model.onnx"


def run_with_onnxruntime(path: str, feeds: dict[str, Any]) -> dict[str, Any]:
    """Load ``path`` and run it on onnxruntime's CPU provider: no graphdsl involved."""
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta()
    print(f"loaded {path}: producer {meta.producer_name}, props {meta.custom_metadata_map}")
    for i in session.get_inputs():
        print(f"  input  {i.name}: {i.type} {i.shape}")
    for o in session.get_outputs():
        print(f"  output {o.name}: {o.type} {o.shape}")
    names = [o.name for o in session.get_outputs()]
    values = session.run(names, {i.name: np.asarray(feeds[i.name]) for i in session.get_inputs()})
    return dict(zip(names, values, strict=True))


def build_and_save(path: str) -> tuple[dict[str, Any], list[Any]]:
    """Build the model, save it to ``path``; return the inputs and the numpy reference."""
    import numpy as np

    import graphdsl as gd
    from exporters.onnx import export

    g = gd.Graph(
        "saved_model",
        input_types={
            "x": gd.TensorType(gd.float32, ("batch", 3)),
            "k": gd.TensorType(gd.int16, ("batch", 3)),
            "d": gd.TensorType(gd.int16, (3,)),
        },
        policy="default",
    )
    x, k, d = g.inputs
    w = g.constant(np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], np.float32))
    layer = gd.ops.relu(x @ w + 0.125)  # float32
    quotient = k // d  # floors; by zero gives 0
    remainder = k % d  # the divisor's sign; by zero gives 0
    saturated = gd.ops.cast(x * 100, gd.int8)  # truncates, saturates, NaN -> 0
    g.output(layer, quotient, remainder, saturated)
    print(g)

    inputs = {
        "x": np.array([[1.0, 2.0, 0.5], [3.0, np.nan, -7.25]], np.float32),
        "k": np.array([[7, -7, 5], [-32768, 9, -1]], np.int16),
        "d": np.array([2, 2, 0], np.int16),
    }
    reference = gd.evaluate(g, inputs)
    model = export(g, path)
    opset = model.opset_import[0].version
    print(f"\nsaved {path}: {len(model.graph.node)} ONNX nodes, opset {opset}")
    return inputs, reference


def main() -> None:
    import numpy as np

    path = sys.argv[1] if len(sys.argv) > 1 else MODEL_PATH
    inputs, reference = build_and_save(path)
    print()
    outputs = run_with_onnxruntime(path, inputs)
    print()
    ok = True
    for (name, got), want in zip(outputs.items(), reference, strict=True):
        same = got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)
        ok &= same
        print(f"{name}: {got.dtype} {got.tolist()}")
        print(f"  reference: {want.dtype} {want.tolist()}  equal: {same}")
    print(f"plain onnxruntime reproduces gd.evaluate: {ok}")
    if not ok:
        raise SystemExit("onnxruntime and the numpy reference disagree")


if __name__ == "__main__":
    main()
