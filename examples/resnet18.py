# mypy: disable-error-code="no-any-return"
# (a module call returns Any, as torch.nn.Module.__call__ does)
"""ResNet-18 ported from torchvision with graphdsl.nn, checked against it.

The model is written the way torchvision writes ``resnet18`` (the same module names, so its
``state_dict()`` loads as it is): a 7x7 stem convolution with batch norm, ReLU and max
pooling, four stages of two residual ``BasicBlock``s, global average pooling and a linear
classifier, on NCHW images with a symbolic batch. Each batch norm follows a convolution and
is folded into it at export (the ONNX model has Conv nodes and no batch norm); each block
is a subgraph, the two identical blocks of the first stage one ONNX function called twice.

``main()`` builds ``torchvision.models.resnet18(weights=None)`` (random weights, seeded;
nothing is downloaded) in eval mode, loads its ``state_dict()`` into the graphdsl model,
exports it, runs it on onnxruntime and prints the largest difference from PyTorch's logits.
Without torch and torchvision (``pip install -e '.[models,vision]'``) it loads random weights of
the same names and compares with ``gd.evaluate`` instead.

    python examples/resnet18.py
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

import graphdsl as gd
from exporters.onnx import export, run
from graphdsl import nn

IMAGE = 128  # pixels per side (any size from 32 on works)


# ---- model code: begin (what porting the model takes; counted by tests/test_hf_examples.py)
class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))  # fmt: skip

    def forward(self, x: gd.Symbol) -> gd.Symbol:
        y = gd.ops.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return gd.ops.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, padding=1)
        widths = [64, 128, 256, 512]
        for i, w in enumerate(widths):
            cin, stride = widths[max(i - 1, 0)], 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(cin, w, stride),
                                                         BasicBlock(w, w, 1)))  # fmt: skip
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: gd.Symbol) -> gd.Symbol:
        x = self.maxpool(gd.ops.relu(self.bn1(self.conv1(x))))
        for i in range(1, 5):
            x = getattr(self, f"layer{i}")(x)
        return self.fc(gd.ops.flatten(self.avgpool(x), 1))
# ---- model code: end


def build(model: ResNet18, image: int = IMAGE) -> gd.Graph:
    """The model as a graph from float32 images [batch, 3, image, image] to logits."""
    t = gd.TensorType(gd.float32, ("batch", 3, image, image))
    with gd.Graph("resnet18", input_types={"images": t}) as g:
        g.output(model(g.inputs[0]))
    return g


def torch_model() -> Any:
    """torchvision's resnet18 with random weights (seeded) and random batch norm
    statistics (a fresh model's are 0 and 1), in eval mode."""
    import torch
    from torchvision.models import resnet18

    torch.manual_seed(0)
    return randomize_batch_norms(resnet18(weights=None))


def randomize_batch_norms(model: Any) -> Any:
    """``model`` (a torch module) with random batch norm statistics and affine parameters (a
    fresh model's are 0 and 1), in eval mode."""
    import torch

    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            assert m.running_mean is not None and m.running_var is not None  # (tracked)
            torch.nn.init.uniform_(m.running_mean, -0.2, 0.2)
            torch.nn.init.uniform_(m.running_var, 0.5, 2.0)
            torch.nn.init.uniform_(m.weight, 0.5, 1.5)
            torch.nn.init.uniform_(m.bias, -0.2, 0.2)
    return model.eval()


def random_state(model: nn.Module, seed: int = 0) -> dict[str, np.ndarray]:
    """Random data for every parameter (where torchvision is not installed)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, p in model.named_parameters():
        fan_in = int(np.prod(p.shape[1:])) if len(p.shape) > 1 else 1
        low = 0.5 if name.endswith(("running_var", "bn1.weight", "bn2.weight")) else -0.2
        value = (rng.normal(scale=fan_in**-0.5, size=p.shape) if len(p.shape) > 1
                 else rng.uniform(low, low + 1.0 if low > 0 else 0.4, size=p.shape))  # fmt: skip
        out[name] = np.asarray(value).astype(p.dtype.np)
    return out


def main() -> None:
    model = ResNet18()
    try:
        import torch

        tv = torch_model()
    except ImportError as e:
        tv = None
        print(f"{e.name} is not installed (pip install -e '.[models,vision]'): random weights, "
              "compared with gd.evaluate only")  # fmt: skip
    model.load_state_dict(tv.state_dict() if tv is not None else random_state(model))
    g = build(model)
    onnx_model = export(g, weights=model.weights())
    ops = Counter(n.op_type for f in onnx_model.functions for n in f.node)
    ops.update(n.op_type for n in onnx_model.graph.node)
    calls = Counter(n.op_type for n in onnx_model.graph.node if n.domain)
    print(f"graph {g.name}: {len(g.weights)} weights; ONNX nodes (functions included) "
          f"Conv x{ops['Conv']}, BatchNormalization x{ops['BatchNormalization']}; "
          f"functions called {dict(sorted(calls.items()))}")  # fmt: skip
    rng = np.random.default_rng(1)
    images = rng.normal(size=(2, 3, IMAGE, IMAGE)).astype(np.float32)
    (got,) = run(onnx_model, {"images": images}, threads=1)
    if tv is not None:
        with torch.no_grad():
            want = tv(torch.from_numpy(images)).numpy()
        against = "torch"
    else:
        (want,) = gd.evaluate(g, {"images": images}, weights=model.weights())
        against = "evaluate"
    err = float(np.max(np.abs(got - want)))
    print(f"logits {got.dtype}{list(got.shape)}, max |onnxruntime - {against}| = {err:.2e} "
          f"(largest logit {float(np.max(np.abs(want))):.2f})")  # fmt: skip
    print(f"predicted classes: {np.argmax(got, axis=-1).tolist()}, "
          f"{against}: {np.argmax(want, axis=-1).tolist()}")  # fmt: skip


if __name__ == "__main__":
    main()
