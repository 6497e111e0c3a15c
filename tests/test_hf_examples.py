"""examples/hf_gpt2.py and examples/resnet18.py against PyTorch, and each graphdsl.nn layer
against its torch.nn counterpart loaded from the same state dict. Skipped where the
``models`` extra (torch, transformers) is not installed; CI installs it (torch's CPU build).
ResNet-18 is compared with torchvision's architecture written in torch.nn
(tests/torch_resnet.py) everywhere, and the example itself with torchvision where the
``vision`` extra is installed too."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REASON = "needs the models extra: pip install -e '.[models]' (torch, transformers)"
torch = pytest.importorskip("torch", reason=REASON)
pytest.importorskip("transformers", reason=REASON)

import floats  # noqa: E402
import torch_resnet  # noqa: E402
from backend import export, run  # noqa: E402

import graphdsl as gd  # noqa: E402
from graphdsl import nn  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RNG = np.random.default_rng(11)


def _run_example(name: str, tmp_path: Path) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "is not installed" not in proc.stdout
    return proc.stdout


def test_gpt2_example_matches_transformers(tmp_path: Path) -> None:
    out = _run_example("hf_gpt2.py", tmp_path)
    assert "functions ['Block']" in out and "'Block': 4" in out
    errors = [float(e) for e in re.findall(r"max \|onnxruntime - torch\| = (\S+)", out)]
    assert len(errors) == 3 and max(errors) < 1e-4, out


def _has_torchvision() -> bool:
    try:
        import torchvision  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _has_torchvision(), reason="the example compares with torchvision "
                    "itself: pip install -e '.[models,vision]' (test_resnet18_port_matches_"
                    "torch runs without it)")  # fmt: skip
def test_resnet18_example_matches_torchvision(tmp_path: Path) -> None:
    out = _run_example("resnet18.py", tmp_path)
    # 20 convolutions, the first stage's two blocks one function: 18 Conv nodes, no BN
    assert "Conv x18, BatchNormalization x0" in out and "'BasicBlock': 2" in out, out
    (err,) = [float(e) for e in re.findall(r"max \|onnxruntime - torch\| = (\S+)", out)]
    assert err < 1e-4, out
    (classes,) = re.findall(r"predicted classes: (.*), torch: (.*)", out)
    assert classes[0] == classes[1]


def test_resnet18_port_matches_torch() -> None:
    """examples/resnet18.py's model, loaded from a torch ResNet-18's state dict (torchvision's
    where installed, else its architecture in torch.nn), exported and run, against torch:
    the oracle's numbers are torch's own kernels."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import resnet18 as example
    finally:
        sys.path.remove(str(ROOT / "examples"))
    torch.manual_seed(0)
    theirs = example.randomize_batch_norms(torch_resnet.resnet18())
    ours = example.ResNet18()
    ours.load_state_dict(theirs.state_dict())
    g = example.build(ours, image=64)
    images = RNG.normal(size=(2, 3, 64, 64)).astype(np.float32)
    (got,) = run(export(g, weights=ours.weights()), {"images": images})
    with torch.no_grad():
        want = theirs(torch.from_numpy(images)).numpy()
    # 20 convolutions deep: no bound derived through the network; the example's own figure
    # (max |onnxruntime - torch| < 1e-4 of logits of order 1), relative to the logits' scale
    floats.assert_close(got, want, 1e-4 * float(np.abs(want).max()), "ResNet-18 logits")
    assert (got.argmax(1) == want.argmax(1)).all()


def _check(ours: nn.Module, theirs: Any, *inputs: np.ndarray, tol: float = 1e-5) -> None:
    """``ours`` loaded from ``theirs.state_dict()``, exported and run, against ``theirs``."""
    ours.load_state_dict(theirs.eval().state_dict())
    types = {f"x{k}": gd.TensorType(gd.dtype(x.dtype), ("batch", *x.shape[1:]))
             for k, x in enumerate(inputs)}  # fmt: skip
    with gd.Graph("layer", input_types=types) as g:
        out = ours(*g.inputs)
        g.output(out[0] if isinstance(out, tuple) else out)
    (got,) = run(export(g, weights=ours.weights()), list(inputs))
    with torch.no_grad():
        want = theirs(*(torch.from_numpy(x) for x in inputs))
    want = (want[0] if isinstance(want, tuple) else want).numpy()
    # torch's kernels against onnxruntime's, a layer (an MLP: three) each: no bound derived
    # per layer kind here; the suite's figure, tol relatively plus tol of the output's scale
    floats.assert_close(got, want, tol * (np.abs(want) + float(np.abs(want).max())), "layer")


def _f32(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape).astype(np.float32)


def _randomize(m: Any) -> Any:
    with torch.no_grad():
        for p in m.state_dict().values():
            if p.dtype.is_floating_point:
                p.copy_(torch.from_numpy(RNG.uniform(0.5, 1.5, size=tuple(p.shape))))
    return m


def test_layers_match_torch_nn() -> None:
    tn = torch.nn
    _check(nn.Linear(6, 3), tn.Linear(6, 3), _f32(4, 2, 6))
    _check(nn.Embedding(10, 4), tn.Embedding(10, 4), RNG.integers(0, 10, (3, 5)))
    _check(nn.LayerNorm(6, eps=1e-3), tn.LayerNorm(6, eps=1e-3), _f32(2, 3, 6))
    _check(nn.RMSNorm(6), tn.RMSNorm(6), _f32(2, 3, 6))
    _check(nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2),
           tn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2), _f32(2, 4, 9, 9))  # fmt: skip
    _check(nn.Conv2d(3, 2, (3, 2), padding="same", dilation=2),
           tn.Conv2d(3, 2, (3, 2), padding="same", dilation=2), _f32(1, 3, 7, 6))  # fmt: skip
    _check(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)),
           _randomize(tn.Sequential(tn.Conv2d(3, 4, 3), tn.BatchNorm2d(4))), _f32(2, 3, 6, 6))
    _check(nn.BatchNorm2d(3), _randomize(tn.BatchNorm2d(3)), _f32(2, 3, 4, 4))
    _check(nn.AdaptiveAvgPool2d((3, 2)), tn.AdaptiveAvgPool2d((3, 2)), _f32(2, 3, 7, 5))
    _check(nn.MaxPool2d(3, 2, 1), tn.MaxPool2d(3, 2, 1), _f32(2, 3, 7, 5))
    _check(nn.MLP(5, [8, 8, 3], activation_layer=nn.GELU),
           torch_resnet.mlp(5, [8, 8, 3], activation_layer=tn.GELU), _f32(4, 5))  # fmt: skip


def test_multihead_attention_matches_torch() -> None:
    theirs = torch.nn.MultiheadAttention(8, 2).eval()
    ours = nn.MultiheadAttention(8, 2)
    ours.load_state_dict(theirs.state_dict())
    x = _f32(5, 3, 8)  # (L, N, E)
    pad = np.zeros((3, 5), bool)
    pad[1, 3:] = True  # the second sequence's last two keys are padding
    blocked = np.triu(np.ones((5, 5), bool), 1)  # True: not allowed (torch's meaning)
    t = gd.TensorType(gd.float32, (5, "n", 8))
    with gd.Graph("mha", input_types={"x": t, "pad": gd.TensorType(gd.bool, ("n", 5))}) as g:
        x_, pad_ = g.inputs
        out, _ = ours(x_, x_, x_, key_padding_mask=pad_, attn_mask=blocked)
        g.output(out)
    (got,) = run(export(g, weights=ours.weights()), [x, pad])
    with torch.no_grad():
        xt = torch.from_numpy(x)
        want, _ = theirs(xt, xt, xt, key_padding_mask=torch.from_numpy(pad),
                         attn_mask=torch.from_numpy(blocked))  # fmt: skip
    # (projections, softmax, attention against torch's: the suite's figure, 1e-5 absolute and
    # relative, as _check's)
    floats.assert_close(got, want.numpy(), 1e-5 * (1 + np.abs(want.numpy())), "attention")


@pytest.mark.parametrize("kind", ["causal", "bottom_right", "bool", "float", "gqa"])
def test_scaled_dot_product_attention_matches_torch(kind: str) -> None:
    """PyTorch's is_causal=True is graphdsl's 'top_left'; 'bottom_right' is torch's
    explicit tril(S - L) mask (queries after a cache); enable_gqa is torch's own."""
    q, k, v = _f32(2, 3, 4, 8), _f32(2, 3, 6, 8), _f32(2, 3, 6, 5)
    if kind == "gqa":
        q = _f32(2, 6, 4, 8)
    mask: Any = None
    if kind == "bool":
        mask = RNG.random((4, 6)) < 0.7
        mask[:, 0] = True
    elif kind == "float":
        mask = RNG.normal(size=(3, 4, 6)).astype(np.float32)
    causal = {"causal": "top_left", "bottom_right": "bottom_right", "gqa": "bottom_right"}
    g = gd.Graph("sdpa", input_types=[gd.TensorType(gd.float32, a.shape) for a in (q, k, v)])
    g.output(gd.ops.scaled_dot_product_attention(*g.inputs, mask=mask,
                                                 is_causal=causal.get(kind, False), scale=0.3,
                                                 enable_gqa=kind == "gqa"))  # fmt: skip
    (got,) = run(export(g), [q, k, v])
    if kind in ("bottom_right", "gqa"):
        mask = np.tri(4, 6, 6 - 4, dtype=np.bool_)
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)),
        attn_mask=None if mask is None else torch.from_numpy(mask),
        is_causal=kind == "causal", scale=0.3, enable_gqa=kind == "gqa")  # fmt: skip
    # (against torch's kernels: the suite's figure, 1e-5 absolute and relative, as _check's)
    floats.assert_close(got, want.numpy(), 1e-5 * (1 + np.abs(want.numpy())), "attention")


def test_state_dicts_of_bfloat16_tensors_load() -> None:
    theirs = torch.nn.Linear(4, 2).to(torch.bfloat16)
    ours = nn.Linear(4, 2, dtype="bfloat16")
    ours.load_state_dict(theirs.state_dict())
    want = theirs.weight.detach().float().numpy()
    floats.assert_bits(ours.state_dict()["weight"].astype(np.float32), want)  # exact casts
    with pytest.raises(nn.StateDictError, match="'weight' is bfloat16\\[2, 4\\], declared "
                       "float32\\[2, 4\\]"):  # fmt: skip
        nn.Linear(4, 2).load_state_dict(theirs.state_dict())
