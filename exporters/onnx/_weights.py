"""Weights in exported models: each named weight becomes an initializer of its name.

Exported to a path, a weight goes straight from its file to the model's external data file:
where the weight file holds it as little-endian bytes in C order (safetensors always does,
an uncompressed ``.npz`` does for C-order arrays), the bytes are copied file to file
(``os.copy_file_range``) and never enter this process's memory; otherwise one weight at a
time is read through its memory map and written out. Exported without a path, weights are
embedded in the model (protobuf's 2 GiB limit applies).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from exporters.onnx._builder import Builder, ExportError, V, _tensor
from exporters.onnx._files import ALIGN, ALIGN_ABOVE
from graphdsl.graph import Graph, Symbol
from graphdsl.types import TensorType
from graphdsl.weights import WeightError, Weights, as_weights, check_weights

__all__ = ["ALIGN", "ALIGN_ABOVE", "bind", "lower_weight"]



def bind(
    graph: Graph,
    declared: Mapping[str, TensorType],
    weights: Weights | str | os.PathLike[str] | Mapping[str, Any] | None,
) -> Weights | None:
    """The checked weights of ``graph`` (None when it declares none)."""
    if not declared and weights is None:
        return None
    if weights is None:
        raise WeightError(
            f"graph {graph.name!r} declares weights {', '.join(map(repr, declared))}: pass "
            "their data (export(g, path, weights=...): a .npz or .safetensors path, "
            "gd.load_weights(...), or a dict of arrays)"
        )
    for name in declared:
        if re.fullmatch(r"output\d+", name):
            raise ExportError(
                f"weight {name!r}: exported models name their outputs output0, output1...; "
                "give the weight another name"
            )
    bound = as_weights(weights)
    check_weights(graph, bound, declared)
    return bound


def lower_weight(b: Builder, node: Symbol, weights: Weights) -> V:
    """The initializer of weight ``node`` (named as the weight), written out now."""
    name, dt = node.attrs["name"], node.dtype
    ext = b.external
    if ext is None:
        t = _tensor(weights.array(name, dt), dt, name)
    else:
        raw = weights.raw(name)
        if raw is None:
            t = ext.tensor(weights.array(name, dt), dt, name)
        else:
            path, offset, length = raw
            try:
                t = ext.copied(name, dt, tuple(int(d) for d in node.shape), path, offset, length)
            except EOFError as e:
                raise WeightError(f"weight {name!r}: {e}") from None
    b.initializers.append(t)
    return V(name, dt)
