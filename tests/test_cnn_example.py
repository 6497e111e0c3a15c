"""examples/cnn.py against a numpy reference written here, independently of graphdsl: the
network with its batch norms applied as such (not folded), channels last, in float64; the
exported model on onnxruntime (and gd.evaluate) within float32 rounding; the transposes a
channels-last network pays; a symbolic batch; the example's own output."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import floats
import numpy as np
import pytest
from backend import export, run
from onnx import ModelProto
from script_modules import load_script

import graphdsl as gd

ROOT = Path(__file__).resolve().parent.parent
EPS32 = float(np.finfo(np.float32).eps)


CNN = load_script("examples/cnn.py", "example_cnn")


# ---------------------------------------------------------------------------- reference


def conv_same(x: np.ndarray, f: np.ndarray) -> np.ndarray:
    """3x3 cross-correlation with one zero of padding per side, NHWC x, RSCF f (float64):
    the nine shifted copies of the padded input, each times its filter tap."""
    n, h, w, _ = x.shape
    xp = np.zeros((n, h + 2, w + 2, x.shape[3]))
    xp[:, 1:-1, 1:-1] = x
    out = np.zeros((n, h, w, f.shape[3]))
    for i in range(3):
        for j in range(3):
            out += xp[:, i : i + h, j : j + w] @ f[i, j]
    return out


def batch_norm(x: np.ndarray, w: dict[str, np.ndarray], name: str, eps: float) -> np.ndarray:
    g, b = (w[f"{name}.{k}"].astype(np.float64) for k in ("gamma", "beta"))
    mean, var = (w[f"{name}.{k}"].astype(np.float64) for k in ("mean", "var"))
    return (x - mean) / np.sqrt(var + eps) * g + b


def max_pool_3x3_s2_p1(x: np.ndarray) -> np.ndarray:
    n, h, w, c = x.shape
    xp = np.full((n, h + 2, w + 2, c), -np.inf)
    xp[:, 1:-1, 1:-1] = x
    ho, wo = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    out = np.full((n, ho, wo, c), -np.inf)
    for i in range(3):
        for j in range(3):
            out = np.maximum(out, xp[:, i : i + 2 * ho : 2, j : j + 2 * wo : 2])
    return out


def reference(w: dict[str, np.ndarray], images: np.ndarray, eps: float) -> np.ndarray:
    """The ResNet-style network on NHWC float64 images: conv-bn-relu-maxpool stem (the
    usual order: ReLU before the pool), a residual block, global average pool, dense."""
    x = images.astype(np.float64)
    f = {k: v.astype(np.float64) for k, v in w.items()}
    h = np.maximum(batch_norm(conv_same(x, f["stem.filter"]), w, "stem", eps), 0)
    h = max_pool_3x3_s2_p1(h)
    y = np.maximum(batch_norm(conv_same(h, f["block1.filter"]), w, "block1", eps), 0)
    y = batch_norm(conv_same(y, f["block2.filter"]), w, "block2", eps)
    h = np.maximum(y + h, 0)
    return np.asarray(h.mean(axis=(1, 2)) @ f["dense.weight"] + f["dense.bias"])


# ---------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def setup() -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    cfg = CNN.Config()
    w = CNN.init_weights(cfg, seed=5)
    images = np.random.default_rng(6).normal(size=(4, 32, 32, 3)).astype(np.float32)
    return w, images, reference(w, images, cfg.bn_epsilon)


def _bound(want: np.ndarray) -> float:
    """float32 rounding through the network: the convolutions sum 27 and 144 products, the
    mean 256 values; folding the batch norms rounds the weights (an eps each): measured
    ~3e-7 on logits of ~0.5; 256 eps of the logits' scale."""
    return 256 * EPS32 * max(1.0, float(np.max(np.abs(want))))


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_cnn_matches_independent_reference(
    setup: tuple[dict[str, np.ndarray], np.ndarray, np.ndarray], layout: str
) -> None:
    w, images, want = setup
    g = CNN.build(w, CNN.Config(), layout)
    x = images if layout == "NHWC" else np.ascontiguousarray(images.transpose(0, 3, 1, 2))
    model = export(g, check="full")
    got = run(model, {"images": x})[0]
    ev = gd.evaluate(g, {"images": x})[0]
    assert got.dtype == np.float32 and got.shape == want.shape == (4, 10)
    # a whole network: no bound derived through it; _bound's figure (tests/floats.py)
    for result in (got, ev):
        floats.assert_close(result.astype(np.float64), want, _bound(want), layout)
    # a symbolic batch: one model, any batch size
    one = run(model, {"images": x[2:3]})[0]
    assert one.shape == (1, 10)
    floats.assert_close(one[0].astype(np.float64), want[2], _bound(want), "batch of one")


def _ops(model: ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def test_cnn_transposes(setup: tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]) -> None:
    w = setup[0]
    nhwc, nchw = (_ops(export(CNN.build(w, CNN.Config(), layout))) for layout in ("NHWC", "NCHW"))
    # channels last: the graph transposes in and out of channels first around each run of
    # vision ops (the stem's conv and pool, each conv of the block); the export carries
    # them past the ReLUs, the residual add and the mean over H and W, where each meets its
    # inverse (graphdsl.passes.sink_transposes): only the input's transpose is left; the
    # RSCF filters are constants, transposed as the graph is built
    assert nhwc.count("Transpose") == 1 and nhwc[0] == "Transpose"
    assert nchw.count("Transpose") == 0
    assert nhwc.count("Conv") == nchw.count("Conv") == 3
    assert nhwc.count("GlobalAveragePool") == nchw.count("GlobalAveragePool") == 1
    assert nhwc[1:] == nchw  # the input's transpose is the only difference


def test_cnn_example_runs_and_reports(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "cnn.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(r"graph cnn_nhwc: \d+ graphdsl nodes -> 21 ONNX nodes", out)
    assert re.search(r"graph cnn_nchw: \d+ graphdsl nodes -> 20 ONNX nodes", out)
    assert [int(n) for n in re.findall(r"Transpose nodes: (\d+)", out)] == [1, 0]
    errors = [float(e) for e in re.findall(r"max \|onnxruntime - evaluate\| = (\S+)", out)]
    assert len(errors) == 2 and max(errors) < 1e-5
    assert out.count("equal to row 0: True") == 2
    assert out.rstrip().endswith("within 1e-05 in both layouts: True")
    assert all((tmp_path / f"cnn_{x}.onnx").stat().st_size > 0 for x in ("nhwc", "nchw"))
