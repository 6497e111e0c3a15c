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

from onnx import TensorProto

from exporters.onnx._builder import Builder, ExportError, V, _tensor, stored
from exporters.onnx._files import ALIGN, ALIGN_ABOVE, ExternalData
from graphdsl.graph import Graph, Symbol
from graphdsl.types import TensorType
from graphdsl.weights import WeightError, Weights, as_weights, check_weights

__all__ = ["ALIGN", "ALIGN_ABOVE", "bind", "lower_weight"]

_CHUNK = 1 << 22  # the copy loop's buffer where copy_file_range is not available


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
            arr = weights.array(name, dt)
            t = ext.tensor(stored(arr, dt), dt, name, arr.shape)  # (aligned)
        else:
            t = _copied(ext, name, dt, node, *raw)
    b.initializers.append(t)
    return V(name, dt)


def _copied(
    ext: ExternalData, name: str, dt: Any, node: Symbol, path: str, offset: int, length: int
) -> TensorProto:
    """A tensor whose bytes are copied from ``path`` into the data file, file to file."""
    ext.align(length)
    ext.file.flush()  # what was written through the buffer lies before the copied bytes
    out = ext.file.fileno()
    src = ext.sources.get(path)
    if src is None:
        src = ext.sources[path] = open(path, "rb")  # noqa: SIM115 - ext.close() closes it
    fd = src.fileno()
    done = 0
    while done < length:
        try:
            n = os.copy_file_range(fd, out, length - done, offset + done)
        except (AttributeError, OSError):  # not Linux, or not between these files
            n = _copy_chunk(src, out, offset + done, length - done)
        if n <= 0:
            raise WeightError(f"weight {name!r}: {path!r} ended {length - done} bytes early")
        done += n
    ext.file.seek(0, os.SEEK_END)
    t = ext.entry(name, dt, tuple(int(d) for d in node.shape), length)
    ext.offset += length
    return t


def _copy_chunk(src: Any, out: int, offset: int, count: int) -> int:
    src.seek(offset)
    data = src.read(min(count, _CHUNK))
    return os.write(out, data) if data else 0
