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

import numpy as np
from onnx import ModelProto, TensorProto, helper

__all__ = ["ModelFiles", "external_data_problem", "file_stamp", "writes"]

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
