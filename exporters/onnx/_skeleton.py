"""Models without the bytes of their large weights, so that run() never copies them twice.

Starting a session costs what onnxruntime does with the model (parse it, place the weights,
optimize) plus what run() does around it. Two things run() did made the first run of a
GPT-2-sized block (186 MB of float32 weights) cost twice a plain ``InferenceSession(path)``:

* for a path, parsing the whole file with ``onnx.load`` to read the model's inputs, outputs
  and external data files, which onnxruntime then parses again: :func:`read_skeleton` reads
  the file's structure (nodes, inputs, outputs, initializers' names, types and shapes)
  and skips the weights' bytes, which it never reads from the disk;
* for a ModelProto (and a Graph, exported to one), serializing it into one string, which
  onnxruntime then parses and copies again: :func:`split_weights` hands onnxruntime the
  model without the large weights' bytes, and the weights as OrtValues over numpy arrays
  (``SessionOptions.add_external_initializers``: onnxruntime uses them in place).
"""

from __future__ import annotations

import mmap
import os
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import ModelProto, NodeProto, TensorProto

__all__ = ["KEEP_BELOW", "WALK_AT_MOST", "read_skeleton", "split_weights"]

# tensors with fewer bytes than this stay in the skeleton (shape tensors, scales, small
# constants: what run()'s checks of a model read)
KEEP_BELOW = 1 << 16

# TensorProto's data fields, by field number: float, int32, string, int64, raw, double,
# uint64 data (onnx.proto); everything else about a tensor is small
_DATA_FIELDS = frozenset({4, 5, 6, 7, 9, 10, 11})
_GRAPH, _INITIALIZER = 7, 5  # ModelProto.graph, GraphProto.initializer


def _varint(buf: Any, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 10 bytes")


def _fields(buf: Any, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, start of its key, start of its value, end) of each field in
    ``buf[start:end]``; a length-delimited value starts after its length."""
    pos = start
    while pos < end:
        key_at = pos
        key, pos = _varint(buf, pos)
        wire = key & 7
        if wire == 0:
            _, after = _varint(buf, pos)
        elif wire == 1:
            after = pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            after = pos + length
        elif wire == 5:
            after = pos + 4
        else:
            raise ValueError(f"wire type {wire} at byte {key_at}")
        if after > end:
            raise ValueError(f"a field at byte {key_at} runs past the end of its message")
        yield key >> 3, key_at, pos, after
        pos = after


def _key_and_length(field: int, length: int) -> bytes:
    out = bytearray()
    for value in ((field << 3) | 2, length):
        while value >= 0x80:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)
    return bytes(out)


def _conv_filters(nodes: list[NodeProto]) -> set[str]:
    """The names of the filters Conv nodes read (run() checks their values)."""
    return {n.input[1] for n in nodes if n.op_type == "Conv" and len(n.input) > 1}


def read_skeleton(path: str) -> ModelProto:
    """The model in the file at ``path``, its large tensors without their data.

    Tensors of :data:`KEEP_BELOW` bytes or more lose their data fields (their name, type,
    shape and external data entries stay), except Conv filters; nothing else changes. The
    file is mapped, and the pages holding the weights are never read. A model of many
    nodes (more graph fields than :data:`WALK_AT_MOST`, which Python walks at about 2 us
    each) is parsed whole by onnx instead, which is faster there (50 ms for 200,000 nodes
    against 0.5 s). Raises ValueError when the file is not a model (a protobuf message that
    does not parse).
    """
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        if size == 0:
            return ModelProto()
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            skeleton = _skeleton(buf, size)
    if skeleton is None:
        return onnx.load(path, load_external_data=False)
    return skeleton


WALK_AT_MOST = 20_000


def _skeleton(buf: mmap.mmap, size: int) -> ModelProto | None:
    """The skeleton of the model in ``buf``, or None for a graph of many fields."""
    top = bytearray()
    graph_spans: list[tuple[int, int]] = []
    for field, key_at, start, end in _fields(buf, 0, size):
        if field == _GRAPH:
            graph_spans.append((start, end))
        else:
            top += buf[key_at:end]
    model = ModelProto()
    model.ParseFromString(bytes(top))
    if not graph_spans:
        return model
    parts = bytearray()
    initializers: list[tuple[int, int, int]] = []
    walked = 0
    for start, end in graph_spans:
        for field, key_at, s, e in _fields(buf, start, end):
            walked += 1
            if walked > WALK_AT_MOST:
                return None
            if field == _INITIALIZER:
                initializers.append((key_at, s, e))
            else:
                parts += buf[key_at:e]
    model.graph.ParseFromString(bytes(parts))
    keep = _conv_filters(list(model.graph.node))
    tensors = bytearray()
    for key_at, s, e in initializers:
        tensors += _tensor(buf, key_at, s, e, keep)
    model.graph.MergeFromString(bytes(tensors))  # appended in their order
    return model


def _tensor(buf: mmap.mmap, key_at: int, start: int, end: int, keep: set[str]) -> bytes:
    """The initializer field at ``buf[key_at:end]``, without its data when it is large."""
    if end - start < KEEP_BELOW:
        return buf[key_at:end]
    kept = bytearray()
    name = b""
    for field, k, s, e in _fields(buf, start, end):
        if field == 8:  # name
            name = buf[s:e]
        if field not in _DATA_FIELDS:
            kept += buf[k:e]
    if name.decode("utf-8", "replace") in keep:
        return buf[key_at:end]
    return _key_and_length(_INITIALIZER, len(kept)) + bytes(kept)


# numpy views of the raw bytes onnxruntime takes, per ONNX type (its own numpy types where
# numpy has one; bfloat16 and float8 as same-width integers, typed by onnx type)
_VIEW: dict[int, Any] = {
    TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64,
    TensorProto.FLOAT16: np.float16, TensorProto.BFLOAT16: np.uint16,
    TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8, TensorProto.INT16: np.int16,
    TensorProto.UINT16: np.uint16, TensorProto.INT32: np.int32, TensorProto.UINT32: np.uint32,
    TensorProto.INT64: np.int64, TensorProto.UINT64: np.uint64, TensorProto.BOOL: np.bool_,
    TensorProto.FLOAT8E4M3FN: np.uint8, TensorProto.FLOAT8E5M2: np.uint8,
}  # fmt: skip
_NATIVE = frozenset(
    {TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2}
)  # typed by their onnx type
_PLACE = "graphdsl:in-memory"  # the location of a weight handed to onnxruntime as an OrtValue


def _copy_fields(src: Any, dst: Any, skip: str) -> None:
    """Copy every set field of message ``src`` but ``skip`` into ``dst`` (same type)."""
    for fd, value in src.ListFields():
        if fd.name == skip:
            continue
        target = getattr(dst, fd.name)
        if hasattr(value, "extend"):  # a repeated field
            target.extend(value)
        elif fd.type == fd.TYPE_MESSAGE:
            target.CopyFrom(value)
        else:
            setattr(dst, fd.name, value)


def split_weights(
    model: ModelProto, folder: str | None = None
) -> tuple[bytes, list[str], list[Any]]:
    """``model`` serialized without the bytes of its large raw-data initializers, their
    names, and OrtValues holding them, for ``SessionOptions.add_external_initializers``.

    Each large tensor's bytes are copied once, from the proto into a numpy array that the
    OrtValue wraps (the caller keeps the OrtValues alive as long as the session). Tensors
    whose data lies in external files are read (memory-mapped) from ``folder``, where the
    model's files are, so that onnxruntime need not find them from the working directory.
    ``model`` is not changed.
    """
    graph = model.graph
    big = [t for t in graph.initializer if _movable(t) or (folder and _external(t))]
    if not big or sys.byteorder != "little":  # (raw data is little-endian)
        return model.SerializeToString(), [], []
    skeleton = ModelProto()
    _copy_fields(model, skeleton, "graph")
    _copy_fields(graph, skeleton.graph, "initializer")
    moved = {id(t) for t in big}
    names: list[str] = []
    values: list[Any] = []
    for t in graph.initializer:
        if id(t) not in moved:
            skeleton.graph.initializer.append(t)
            continue
        stub = skeleton.graph.initializer.add()
        stub.name, stub.data_type = t.name, t.data_type
        stub.dims.extend(t.dims)
        stub.data_location = TensorProto.EXTERNAL
        stub.external_data.add(key="location", value=_PLACE)
        if t.data_location == TensorProto.EXTERNAL:
            array = _mapped(t, folder or "")
        else:
            array = np.frombuffer(t.raw_data, dtype=_VIEW[t.data_type]).reshape(tuple(t.dims))
        if t.data_type in _NATIVE:
            values.append(ort.OrtValue.ortvalue_from_numpy_with_onnx_type(array, t.data_type))
        else:
            values.append(ort.OrtValue.ortvalue_from_numpy(array))
        names.append(t.name)
    return skeleton.SerializeToString(), names, values


def _external(t: TensorProto) -> bool:
    return t.data_location == TensorProto.EXTERNAL and t.data_type in _VIEW


def _mapped(t: TensorProto, folder: str) -> np.ndarray:
    """The data of external tensor ``t`` from its file in ``folder``, memory-mapped."""
    info = {e.key: e.value for e in t.external_data}
    shape = tuple(t.dims)
    dtype = np.dtype(_VIEW[t.data_type])
    count = int(np.prod(shape)) if shape else 1
    path = os.path.join(folder, info["location"])
    if count == 0:
        return np.zeros(shape, dtype)
    data = np.memmap(path, dtype=dtype, mode="r", offset=int(info.get("offset", 0)),
                     shape=(count,))  # fmt: skip
    return np.asarray(data).reshape(shape)


def _movable(t: TensorProto) -> bool:
    """A tensor with its data in ``raw_data`` and at least :data:`KEEP_BELOW` bytes of it."""
    if t.data_type not in _VIEW or t.data_location == TensorProto.EXTERNAL:
        return False
    count = 1
    for d in t.dims:
        count *= d
    width = np.dtype(_VIEW[t.data_type]).itemsize
    return count * width >= KEEP_BELOW and bool(t.HasField("raw_data"))
