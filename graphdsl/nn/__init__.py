"""Layers and models in the style of ``torch.nn`` (and MAX's ``max.nn``), for graphs.

A :class:`Module` declares its parameters and submodules and computes in ``forward``; called
with Symbols it builds graph nodes, its parameters becoming weights (``g.weight``) named as
PyTorch's ``state_dict`` names them, each repeated block one subgraph (an ONNX function)
called with its weights by name. ``load_state_dict`` takes a dict of arrays, a PyTorch state
dict or a ``.safetensors`` file and says which names are missing, unexpected or mistyped;
``weights()`` binds the data for ``export`` and ``gd.evaluate``. docs/nn.md walks through it.

>>> import numpy as np, graphdsl as gd
>>> from graphdsl import nn
>>> model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
>>> with gd.Graph("mlp", input_types={"x": gd.TensorType(gd.float32, ("batch", 3))}) as g:
...     g.output(model(g.inputs[0]))
>>> list(g.weights)
['0.weight', '0.bias', '2.weight', '2.bias']
>>> model.load_state_dict({"0.weight": np.ones((4, 3), np.float32)})
Traceback (most recent call last):
    ...
graphdsl.nn.state.StateDictError: load_state_dict of Sequential from the state dict given:
3 missing: '0.bias' (float32[4]), '2.weight' (float32[2, 4]), '2.bias' (float32[2]) ...
"""

from __future__ import annotations

from graphdsl.nn.attention import MultiheadAttention
from graphdsl.nn.layers import (
    GELU,
    MLP,
    AdaptiveAvgPool2d,
    BatchNorm2d,
    Conv1D,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    Linear,
    MaxPool2d,
    ReLU,
    RMSNorm,
    SiLU,
    Tanh,
)
from graphdsl.nn.llm import GatedMLP, RotaryEmbedding
from graphdsl.nn.module import Module, ModuleList, Parameter, Sequential
from graphdsl.nn.quantize import quantize
from graphdsl.nn.state import IncompatibleKeys, StateDictError

__all__ = [
    "GELU",
    "MLP",
    "AdaptiveAvgPool2d",
    "BatchNorm2d",
    "Conv1D",
    "Conv2d",
    "Dropout",
    "Embedding",
    "Flatten",
    "GatedMLP",
    "Identity",
    "IncompatibleKeys",
    "LayerNorm",
    "Linear",
    "MaxPool2d",
    "Module",
    "ModuleList",
    "MultiheadAttention",
    "Parameter",
    "RMSNorm",
    "ReLU",
    "RotaryEmbedding",
    "Sequential",
    "SiLU",
    "StateDictError",
    "Tanh",
    "quantize",
]
