"""A saved model's files, written atomically, and checked before they are run.

A model saved at ``m.onnx`` may have its large constants in ``m.onnx.data`` beside it.
Export writes both under temporary names in the same folder, checks them, and renames them
into place (``os.replace`` is atomic on POSIX and Windows), so that a failed or interrupted
export leaves the files at the path as they were. A session already reading the old data
keeps it: the rename gives the path a new file, and the old one lives while it is open.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np
from onnx import AttributeProto, GraphProto, ModelProto, TensorProto, helper

from exporters.onnx._types import onnx_type, stored
from graphdsl.dtypes import DType

__all__ = ["ALIGN", "ALIGN_ABOVE", "ExternalData", "ModelFiles", "external_data_problem",
           "file_stamp", "writes"]

# tensors of 1 MiB and more start at multiples of 64 KiB in the data file, as onnx's
# save_model aligns them, so that onnxruntime can map them
ALIGN, ALIGN_ABOVE = 1 << 16, 1 << 20
_CHUNK = 1 << 22  # the copy loop's buffer where copy_file_range is not available

# How many times this process wrote each model file (by absolute path). File stamps alone
# can miss a rewrite: timestamps come from a coarse clock (a few ms) and a replaced file's
# inode can be reused, so two exports to one path in one tick may stamp alike.
_WRITES: dict[str, int] = {}


def writes(path: str) -> int:
    """How many times this process has exported a model to ``path`` (an absolute path)."""
    return _WRITES.get(path, 0)


class ModelFiles:
    """The target paths of one export and the temporary files written before they move."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.data_path = path + ".data"
        folder = os.path.dirname(os.path.abspath(path))
        token = f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(4)}"
        self.tmp_model = os.path.join(folder, token + ".tmp")
        self.tmp_data = os.path.join(folder, token + ".data.tmp")

    def relocate(self, model: ModelProto) -> None:
        """Point ``model``'s external tensors from the temporary data file to the final one."""
        old, new = os.path.basename(self.tmp_data), os.path.basename(self.data_path)
        for t in model.graph.initializer:
            if t.data_location == TensorProto.EXTERNAL:
                for entry in t.external_data:
                    if entry.key == "location" and entry.value == old:
                        entry.value = new

    def commit(self, *, with_data: bool) -> None:
        """Move the checked files into place: the data first, so the model never points at
        data older than itself."""
        if with_data:
            os.replace(self.tmp_data, self.data_path)
        os.replace(self.tmp_model, self.path)
        key = os.path.abspath(self.path)
        _WRITES[key] = _WRITES.get(key, 0) + 1

    def discard(self) -> None:
        for p in (self.tmp_model, self.tmp_data):
            with contextlib.suppress(FileNotFoundError):
                os.remove(p)


def file_stamp(path: str) -> tuple[int, int, int, int]:
    """What tells one file at ``path`` from another: inode, device, size, modification time
    (written by another process; see :func:`writes` for this one's). ``run()`` compares these
    fields inline, at every call."""
    st = os.stat(path)
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)


def external_data_problem(model: ModelProto, folder: str) -> tuple[str, str] | None:
    """The first external tensor of ``model`` whose data file (relative to ``folder``) is
    missing or too short, as (what is wrong, what to do); None when every one is whole."""
    sizes: dict[str, int | None] = {}
    for t in model.graph.initializer:
        if t.data_location != TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in t.external_data}
        location = info.get("location", "")
        path = os.path.join(folder, location)
        if location not in sizes:
            try:
                sizes[location] = os.path.getsize(path)
            except OSError:
                sizes[location] = None
        size = sizes[location]
        if size is None:
            return (
                f"the data file {path!r} of tensor {t.name!r} does not exist",
                "export the model again, or copy its .data file beside it",
            )
        offset = int(info.get("offset", "0"))
        count = 1
        for d in t.dims:
            count *= d
        if "length" in info:
            length = int(info["length"])
        else:  # onnx's own element sizes
            length = count * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
        if offset + length > size:
            return (
                f"the data file {path!r} holds {size} bytes, but tensor {t.name!r} needs bytes "
                f"{offset} to {offset + length}: the file is truncated or belongs to another "
                "model",
                "export the model again (export writes the model and its data atomically)",
            )
    return None


class ExternalData:
    """Writes large constants straight to a data file (protobuf stops at 2 GiB).

    ``path`` is where the data goes while exporting (a temporary file beside the model,
    renamed once the model is checked); tensors name it relative to the model's folder.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.location = os.path.basename(path)
        self.file = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self.offset = 0
        # files tensors are copied from (exporters/onnx/_weights.py), each opened once
        self.sources: dict[str, BinaryIO] = {}

    def align(self, nbytes: int) -> None:
        """Pad the file so that a tensor of ``nbytes`` (1 MiB or more) starts at a multiple of
        ALIGN."""
        if nbytes >= ALIGN_ABOVE and self.offset % ALIGN:
            pad = ALIGN - self.offset % ALIGN
            self.file.write(b"\0" * pad)
            self.offset += pad

    def tensor(self, arr: np.ndarray, dt: DType, name: str) -> TensorProto:
        """``arr``'s values as a tensor of ``dt`` appended to the file, aligned."""
        data = stored(arr, dt)
        self.align(data.nbytes)
        t = self.entry(name, dt, arr.shape, data.nbytes)
        data.reshape(-1).tofile(self.file)
        self.offset += data.nbytes
        return t

    def copied(self, name: str, dt: DType, shape: tuple[int, ...], path: str, offset: int,
               length: int) -> TensorProto:  # fmt: skip
        """A tensor of the ``length`` bytes at ``offset`` of the file ``path`` (a weight as
        stored), copied into the data file file to file, aligned. EOFError where ``path``
        ends before them."""
        self.align(length)
        self.file.flush()  # what was written through the buffer lies before the copied bytes
        src = self.sources.get(path)
        if src is None:
            src = self.sources[path] = open(path, "rb")  # noqa: SIM115 - close() closes it
        t = self.entry(name, dt, shape, length)
        _copy(src, self.file, offset, self.offset, length)
        self.file.seek(0, os.SEEK_END)
        self.offset += length
        return t

    def entry(self, name: str, dt: DType, shape: tuple[int, ...], length: int) -> TensorProto:
        """The TensorProto of ``length`` bytes about to be written at the file's end."""
        t = TensorProto()
        t.name = name
        t.data_type = onnx_type(dt)
        t.dims.extend(int(d) for d in shape)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", self.location), ("offset", str(self.offset)),
                           ("length", str(length))):  # fmt: skip
            e = t.external_data.add()
            e.key, e.value = key, value
        return t

    def close(self, model: ModelProto | None = None) -> None:
        """Close the file. With ``model``, first drop the bytes none of its tensors reads (a
        lowering that replaced a constant, such as MatMulNBits' packing of a 4-bit weight or
        the packing of q, k and v, leaves the old bytes behind): the file is rewritten
        with the read ranges only, still aligned, and the tensors' offsets updated."""
        self.file.flush()
        try:
            if model is not None:
                self._compact(model)
        finally:
            self.file.close()
            for f in self.sources.values():
                f.close()

    def _compact(self, model: ModelProto) -> None:
        tensors = [t for t in _external_tensors(model)
                   if _info(t).get("location") == self.location]  # fmt: skip
        ranges = {int(_info(t).get("offset", "0")): int(_info(t)["length"]) for t in tensors}
        if self.offset - sum(ranges.values()) < ALIGN_ABOVE:  # (little to gain)
            return
        moved: dict[int, int] = {}
        tmp = self.path + ".compact"
        with open(tmp, "wb") as out, open(self.path, "rb") as src:
            at = 0
            for old in sorted(ranges):
                length = ranges[old]
                if length >= ALIGN_ABOVE and at % ALIGN:
                    out.write(b"\0" * (ALIGN - at % ALIGN))
                    at += ALIGN - at % ALIGN
                out.flush()
                _copy(src, out, old, at, length)
                out.seek(0, os.SEEK_END)
                moved[old] = at
                at += length
        os.replace(tmp, self.path)
        self.offset = at
        for t in tensors:
            _set_offset(t, moved[int(_info(t).get("offset", "0"))])


def _info(t: TensorProto) -> dict[str, str]:
    return {e.key: e.value for e in t.external_data}


def _set_offset(t: TensorProto, offset: int) -> None:
    for e in t.external_data:
        if e.key == "offset":
            e.value = str(offset)
            return
    e = t.external_data.add()
    e.key, e.value = "offset", str(offset)


def _copy(src: BinaryIO, out: BinaryIO, offset: int, at: int, length: int) -> None:
    """``length`` bytes of ``src`` from ``offset`` to ``out`` at ``at``, file to file
    (EOFError where ``src`` ends first)."""
    done = 0
    while done < length:
        try:
            n = os.copy_file_range(src.fileno(), out.fileno(), length - done, offset + done,
                                   at + done)  # fmt: skip
        except (AttributeError, OSError):  # not Linux, or not between these files
            src.seek(offset + done)
            data = src.read(min(length - done, _CHUNK))
            out.seek(at + done)
            n = out.write(data)
        if n <= 0:
            raise EOFError(f"{src.name!r} ended {length - done} bytes early")
        done += n


def _external_tensors(model: ModelProto) -> Iterator[TensorProto]:
    """Every tensor of ``model`` stored in a file: initializers, and Constant values and
    other tensor attributes of nodes, in subgraphs and local functions too."""

    def of_graph(g: GraphProto) -> Iterator[TensorProto]:
        yield from g.initializer
        for n in g.node:
            yield from of_attributes(n.attribute)

    def of_attributes(attributes: Iterator[AttributeProto] | list[AttributeProto]
                      ) -> Iterator[TensorProto]:  # fmt: skip
        for a in attributes:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            if a.HasField("g"):
                yield from of_graph(a.g)
            for sub in a.graphs:
                yield from of_graph(sub)

    for t in of_graph(model.graph):
        if t.data_location == TensorProto.EXTERNAL:
            yield t
    for f in model.functions:
        for n in f.node:
            for t in of_attributes(n.attribute):
                if t.data_location == TensorProto.EXTERNAL:
                    yield t
