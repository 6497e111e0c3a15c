"""MLP inference with float32 activations and bfloat16 weights: the promotion is visible.

The weights are stored as bfloat16; every ``x @ w`` and ``+ b`` meets a float32 activation,
so the policy joins bfloat16 and float32 to float32 and the ``implicit_cast`` pass inserts
one ``cast ... to=float32`` per weight. The example prints the graph, the casts and why they
happen, exports the model to ``mlp_bf16.onnx``, runs it on onnxruntime's CPU provider and
compares each output with the numpy reference ``gd.evaluate``.

    python examples/mlp_bf16.py
"""

from __future__ import annotations

import itertools
from collections import Counter

import ml_dtypes
import numpy as np
from onnx import numpy_helper

import graphdsl as gd
from exporters.onnx import export, run

SIZES = (4, 16, 8, 3)  # input features, two hidden layers, classes
TOLERANCE = 1e-5  # onnxruntime's float32 MatMul may accumulate in another order


def bf16_weights(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """(weight, bias) per layer, rounded to bfloat16 as a checkpoint would store them."""
    layers = []
    for fan_in, fan_out in itertools.pairwise(SIZES):
        w = rng.normal(scale=fan_in**-0.5, size=(fan_in, fan_out)).astype(ml_dtypes.bfloat16)
        b = rng.normal(scale=0.1, size=(fan_out,)).astype(ml_dtypes.bfloat16)
        layers.append((w, b))
    return layers


def build(layers: list[tuple[np.ndarray, np.ndarray]]) -> gd.Graph:
    g = gd.Graph(
        "mlp_bf16",
        input_types={"x": gd.TensorType(gd.float32, ("batch", SIZES[0]))},
        policy="default",
    )
    (h,) = g.inputs
    for k, (w, b) in enumerate(layers):
        # float32 @ bfloat16 -> float32: the weight is promoted, the activation is not
        h = h @ g.constant(w) + g.constant(b)
        if k < len(layers) - 1:
            h = gd.ops.relu(h)
    logits = h
    probs = gd.ops.softmax(logits, axis=-1)
    g.output(logits, probs)
    return g


def main() -> None:
    rng = np.random.default_rng(0)
    layers = bf16_weights(rng)
    g = build(layers)
    print("=== the graph as built: bfloat16 constants, float32 activations ===")
    print(g)
    print("\n=== after implicit_cast: one cast per bfloat16 weight ===")
    print(gd.passes.implicit_cast(g))
    print("\n=== why ===")
    print(g.explain())
    joined = g.policy.promote_types(gd.float32, gd.bfloat16)
    print(f"policy {g.policy.name!r}: float32 x bfloat16 -> {joined.name}")

    x = rng.normal(size=(5, SIZES[0])).astype(np.float32)
    reference = gd.evaluate(g, {"x": x})
    model = export(g, "mlp_bf16.onnx")
    outputs = run(model, {"x": x})
    print(f"\n=== onnxruntime ({len(model.graph.node)} ONNX nodes, saved mlp_bf16.onnx) ===")
    inits = [numpy_helper.to_array(t) for t in model.graph.initializer]
    stored = Counter(a.dtype.name for a in inits)
    weight_bytes = sum(w.nbytes + b.nbytes for w, b in layers)
    print(
        f"initializers: {dict(stored)}, {sum(a.nbytes for a in inits)} bytes (export folds "
        f"the cast of a constant only where the result is no larger or has 64 elements at "
        f"most, so larger bfloat16 weights stay bfloat16; the bfloat16 weights were "
        f"{weight_bytes} bytes)"
    )
    ok = True
    for name, o, r in zip(["logits", "probs"], outputs, reference, strict=True):
        diff = float(np.max(np.abs(o.astype(np.float64) - r.astype(np.float64))))
        same = o.dtype == r.dtype and o.shape == r.shape and diff <= TOLERANCE
        ok &= same
        print(f"{name}: {o.dtype}{list(o.shape)}  max |onnxruntime - reference| = {diff:.3g}")
    print("predicted classes:", np.argmax(outputs[1], axis=-1).tolist())
    print("reference classes:", np.argmax(reference[1], axis=-1).tolist())
    print(f"onnxruntime matches gd.evaluate within {TOLERANCE:g}: {ok}")
    if not ok:
        raise SystemExit("onnxruntime and the numpy reference disagree")


if __name__ == "__main__":
    main()
