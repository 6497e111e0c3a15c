"""Graphs that several test modules build."""

from __future__ import annotations

import numpy as np

import graphdsl as gd


def issue_mlp() -> gd.Graph:
    """The graph issue 3 gives as its example (the README's first graph)."""
    g = gd.Graph(
        "mlp",
        input_types={
            "x": gd.TensorType(gd.float32, ("batch", 4)),
            "n": gd.TensorType(gd.int16, ()),
        },
        policy="default",
    )
    x, n = g.inputs
    w = g.constant(np.ones((4, 3), np.float32))
    y = gd.ops.relu(x @ w + n) * 2  # n (int16) is promoted; 2 is an ambiguous literal
    s = g.scalar[gd.int16](1)
    h = g.scalar(1.5)  # ambiguous: float32?
    g.output(y, s + h)
    return g
