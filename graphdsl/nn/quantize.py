"""Weight-only quantization of a model's ``Linear`` layers: :func:`quantize` marks them
(``Linear(..., quantize="int4", block_size=32)`` marks one); ``load_state_dict`` then
quantizes each marked weight (graphdsl/nn/_qlinear.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from graphdsl.nn._qlinear import check_quantize
from graphdsl.nn.layers import Linear

__all__ = ["quantize"]


def quantize(model: Any, kind: str = "int4", block_size: int = 32, symmetric: bool = True,
             skip: Iterable[str] = ()) -> Any:  # fmt: skip
    """Mark every ``Linear`` of ``model`` (but those whose path is in ``skip``, such as
    ``"lm_head"``) as quantized to ``kind`` in blocks of ``block_size`` input features;
    their weights are quantized now if the model has data, else when it is loaded. Returns
    ``model``.

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> mlp = nn.quantize(nn.Sequential(nn.Linear(64, 8, bias=False)), "int4", 32)
    >>> _ = mlp.load_state_dict({"0.weight": np.ones((8, 64), np.float32)})
    >>> g = gd.Graph("q", input_types={"x": gd.TensorType(gd.float32, (1, 64))})
    >>> g.output(mlp(g.inputs[0]))
    >>> y = gd.evaluate(g, [np.ones((1, 64), "f4")])[0]
    >>> [n.op for n in g.nodes if n.op == "qmatmul"], float(y[0, 0])
    (['qmatmul'], 64.0)
    """
    skipped = set(skip)
    loaded = model._loaded
    for path, m in model.named_modules():
        if isinstance(m, Linear) and path not in skipped:
            check_quantize(kind, block_size, m.in_features)
            m.quantize, m.block_size, m.symmetric = kind, block_size, symmetric
            if loaded is not None:
                m._after_load(loaded, path)
    return model
