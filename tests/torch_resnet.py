"""torchvision's ``resnet18`` and ``torchvision.ops.MLP``, written with torch.nn alone (the
same modules, the same state-dict names, the same forward), for the PyTorch oracle where
torchvision cannot be installed beside torch's CPU build (PyPI's torchvision wheels need
their own torch build: "operator torchvision::nms does not exist" beside torch 2.13.0+cpu).

The oracle stays independent of graphdsl: every number comes from torch's own kernels
(conv2d, batch_norm, max_pool2d, adaptive_avg_pool2d, linear). Written after torchvision's
``torchvision/models/resnet.py`` (BasicBlock, ResNet._make_layer) and ``torchvision/ops/misc.py``
(MLP); where torchvision is installed, tests check that both give the same state-dict keys.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class BasicBlock(nn.Module):  # type: ignore[misc]
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):  # type: ignore[misc]
    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, padding=1)
        widths = [64, 128, 256, 512]
        for i, w in enumerate(widths):
            cin, stride = widths[max(i - 1, 0)], 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(cin, w, stride),
                                                         BasicBlock(w, w, 1)))  # fmt: skip
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(1, 5):
            x = getattr(self, f"layer{i}")(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18() -> Any:
    """torchvision.models.resnet18(weights=None) where torchvision is installed, else the
    module above (its initialization differs; the tests load random weights anyway)."""
    try:
        from torchvision.models import resnet18 as tv_resnet18
    except ImportError:
        return ResNet18()
    return tv_resnet18(weights=None)


def mlp(cin: int, hidden: list[int], activation_layer: Any) -> Any:
    """torchvision.ops.MLP(cin, hidden, activation_layer=...) with its defaults (no norm,
    dropout 0.0): [Linear, activation, Dropout] per hidden layer, then Linear, Dropout."""
    try:
        from torchvision.ops import MLP
    except ImportError:
        layers: list[nn.Module] = []
        for h in hidden[:-1]:
            layers += [nn.Linear(cin, h), activation_layer(), nn.Dropout(0.0)]
            cin = h
        layers += [nn.Linear(cin, hidden[-1]), nn.Dropout(0.0)]
        return nn.Sequential(*layers)
    return MLP(cin, hidden, activation_layer=activation_layer)
