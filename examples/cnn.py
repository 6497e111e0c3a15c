"""A small ResNet-style CNN: convolutions with batch norm folded into their weights, ReLU, max
pooling, a residual block, global average pooling and a dense classifier, for a symbolic
batch of 32x32 RGB images.

The network is built in MAX's channels-last layout (NHWC input, RSCF filters) and, for
comparison, in PyTorch's channels-first one (``input_layout="NCHW"``, OIHW filters). ONNX's
Conv and MaxPool take channels first: the graph transposes a channels-last run of vision ops
in once and out once, and the export carries those transposes past the ReLUs, the residual
add and the mean until each meets its inverse, so the channels-last model keeps one
Transpose, its input's (``graphdsl.passes.sink_transposes``). The example exports both graphs,
runs them on onnxruntime's CPU provider, compares them with ``gd.evaluate`` (the numpy
reference), and prints their ONNX node counts and run times.

    python examples/cnn.py
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

import graphdsl as gd
from exporters.onnx import export, run

TOLERANCE = 1e-5  # float32 sums of up to 144 products, in another order than numpy's


@dataclass(frozen=True)
class Config:
    image: int = 32
    channels: int = 3
    width: int = 16
    classes: int = 10
    bn_epsilon: float = 1e-5


def init_weights(cfg: Config, seed: int = 0) -> dict[str, np.ndarray]:
    """Raw parameters, as a checkpoint would hold them: RSCF convolution filters (kh, kw,
    in, out) without bias, batch norm statistics and affine parameters, a dense layer."""
    rng = np.random.default_rng(seed)
    w: dict[str, np.ndarray] = {}
    convs = {"stem": (cfg.channels, cfg.width), "block1": (cfg.width, cfg.width),
             "block2": (cfg.width, cfg.width)}  # fmt: skip
    for name, (c_in, c_out) in convs.items():
        w[f"{name}.filter"] = rng.normal(scale=(9 * c_in) ** -0.5, size=(3, 3, c_in, c_out))
        w[f"{name}.gamma"] = rng.uniform(0.5, 1.5, c_out)
        w[f"{name}.beta"] = rng.normal(scale=0.1, size=c_out)
        w[f"{name}.mean"] = rng.normal(scale=0.1, size=c_out)
        w[f"{name}.var"] = rng.uniform(0.5, 2.0, c_out)
    w["dense.weight"] = rng.normal(scale=cfg.width**-0.5, size=(cfg.width, cfg.classes))
    w["dense.bias"] = rng.normal(scale=0.1, size=cfg.classes)
    return {k: v.astype(np.float32) for k, v in w.items()}


def fold_batch_norm(
    w: dict[str, np.ndarray], name: str, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """conv followed by inference batch norm as one conv: the filter scaled per output
    channel by gamma / sqrt(var + eps), the bias beta - mean * that scale (in float64)."""
    scale = w[f"{name}.gamma"].astype(np.float64) / np.sqrt(
        w[f"{name}.var"].astype(np.float64) + epsilon
    )
    f = w[f"{name}.filter"].astype(np.float64) * scale  # RSCF: out channels last
    b = w[f"{name}.beta"] - w[f"{name}.mean"].astype(np.float64) * scale
    return f.astype(np.float32), b.astype(np.float32)


def build(w: dict[str, np.ndarray], cfg: Config = Config(), layout: str = "NHWC") -> gd.Graph:
    """The network for images in ``layout`` ("NHWC", MAX's default, or "NCHW")."""
    last = layout == "NHWC"
    shape = ("batch", cfg.image, cfg.image, cfg.channels) if last else (
        "batch", cfg.channels, cfg.image, cfg.image)  # fmt: skip
    g = gd.Graph(f"cnn_{layout.lower()}", input_types={"images": gd.TensorType(gd.float32, shape)})
    (x,) = g.inputs

    def conv(h: gd.Symbol, name: str) -> gd.Symbol:
        f, b = fold_batch_norm(w, name, cfg.bn_epsilon)
        if not last:  # PyTorch's OIHW filter
            f = np.ascontiguousarray(f.transpose(3, 2, 0, 1))
        return gd.ops.conv2d(h, f, padding=(1, 1, 1, 1), bias=b, input_layout=layout)

    # stem: conv-bn, then max pool before the ReLU (the two commute: max and ReLU are both
    # monotonic), so the pool reads the convolution's channels-first result directly
    h = gd.ops.max_pool2d(conv(x, "stem"), (3, 3), stride=2, padding=1, input_layout=layout)
    h = gd.ops.relu(h)
    # residual block: conv-bn-relu, conv-bn, + the block's input, relu
    y = gd.ops.relu(conv(h, "block1"))
    h = gd.ops.relu(conv(y, "block2") + h)
    # head: global average pool over H and W, dense
    pooled = gd.ops.mean(h, axis=(1, 2) if last else (2, 3))
    logits = pooled @ w["dense.weight"] + w["dense.bias"]
    g.output(logits)
    return g


def _median_ms(fn: object, repeat: int = 20) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return 1000 * float(np.median(times))


def main() -> None:
    cfg = Config()
    w = init_weights(cfg)
    rng = np.random.default_rng(1)
    images = rng.normal(size=(8, cfg.image, cfg.image, cfg.channels)).astype(np.float32)
    ok = True
    for layout in ("NHWC", "NCHW"):
        g = build(w, cfg, layout)
        x = images if layout == "NHWC" else np.ascontiguousarray(images.transpose(0, 3, 1, 2))
        model = export(g, f"{g.name}.onnx")
        ops = Counter(n.op_type for n in model.graph.node)
        print(f"graph {g.name}: {len(g.nodes)} graphdsl nodes -> {len(model.graph.node)} "
              f"ONNX nodes {dict(sorted(ops.items()))}")  # fmt: skip
        print(f"  Transpose nodes: {ops['Transpose']}")
        want = gd.evaluate(g, {"images": x})[0]
        got = run(model, {"images": x})[0]
        diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
        same = got.dtype == want.dtype and got.shape == want.shape and diff <= TOLERANCE
        ok &= same
        print(f"  logits {got.dtype}{list(got.shape)}: max |onnxruntime - evaluate| = {diff:.3g}")
        one = run(model, {"images": x[:1]})[0]  # the same model, another batch size
        print(f"  batch 1 on the same model: {list(one.shape)}, equal to row 0: "
              f"{bool(np.allclose(one[0], got[0], rtol=0, atol=TOLERANCE))}")  # fmt: skip
        ort_ms = _median_ms(lambda: run(model, {"images": x}))  # noqa: B023
        ref_ms = _median_ms(lambda: gd.evaluate(g, {"images": x}), repeat=3)  # noqa: B023
        print(f"  run time, batch 8: onnxruntime {ort_ms:.2f} ms, gd.evaluate {ref_ms:.1f} ms")
        print(f"  predicted classes: {np.argmax(got, axis=-1).tolist()}")
    print(f"onnxruntime matches gd.evaluate within {TOLERANCE:g} in both layouts: {ok}")
    if not ok:
        raise SystemExit("onnxruntime and the numpy reference disagree")


if __name__ == "__main__":
    main()
