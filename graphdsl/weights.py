"""Named weights from files: ``.npz`` and ``.safetensors``, read lazily and memory-mapped.

A graph declares its weights with :meth:`graphdsl.Graph.weight` (MAX's ``Weight``): a name,
a dtype and a static shape. Their data is bound by name when the graph is evaluated
(``gd.evaluate(g, inputs, weights=...)``) or exported (``export(g, path, weights=...)``,
which copies each one straight from its file into the model's external data file).

:func:`load_weights` opens files and reads only their headers; a weight's data is read when
it is used, through a memory map (or, where a file holds it as little-endian bytes in C
order, copied from the file by the exporter without being read into memory at all). Names
can be taken under a prefix (``prefix="layers.3."``: a file's ``layers.3.attn.wq`` binds
the graph's ``attn.wq``) or renamed. Binding checks every declared weight against the
data: missing and (unless ``strict=False``) extra weights are reported by name, and a dtype
or shape that differs from the declaration names the weight and both types.

>>> import numpy as np, graphdsl as gd, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
>>> gd.save_weights(path, {"layers.3.scale": np.array([2.0, 3.0], np.float32)})
>>> g = gd.Graph("scale", input_types={"x": gd.TensorType(gd.float32, (2,))})
>>> g.output(g.inputs[0] * g.weight("scale", gd.float32, (2,)))
>>> w = gd.load_weights(path, prefix="layers.3.")
>>> w.names(), w.info("scale")
(['scale'], WeightInfo(dtype=DType.float32, shape=(2,), itemsize=4))
>>> gd.evaluate(g, {"x": np.array([1.0, 1.5], np.float32)}, weights=w)[0]
array([2. , 4.5], dtype=float32)
"""

from __future__ import annotations

import json
import math
import os
import struct
import zipfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from graphdsl.dtypes import DType, DTypeError, dtype
from graphdsl.graph import Graph
from graphdsl.types import TensorType

__all__ = [
    "WeightError",
    "WeightInfo",
    "Weights",
    "as_weights",
    "check_weights",
    "declared_weights",
    "load_weights",
    "save_weights",
]

PathLike = str | os.PathLike[str]


class WeightError(ValueError):
    """Weights that do not match their declarations (missing, extra, another dtype or
    shape), or a weight file that cannot be read.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("m", input_types={"x": gd.TensorType(gd.float32, (2,))})
    >>> g.output(g.inputs[0] * g.weight("scale", gd.float32, (2,)))
    >>> gd.evaluate(g, {"x": np.ones(2, np.float32)}, weights={"scale": np.ones(3, np.float32)})
    Traceback (most recent call last):
        ...
    graphdsl.weights.WeightError: weights of graph 'm': weight 'scale' has shape (3,) in the
    arrays given but the graph declares (2,)
    """


class WeightInfo(NamedTuple):
    """What a file says of one weight, read from its header: dtype and shape.

    ``dtype`` is None for numpy's raw-byte dtypes (``|V2``, ``|V1``): numpy saves bfloat16
    and float8 arrays that way, and a weight declared with a dtype of that width takes them.
    """

    dtype: DType | None
    shape: tuple[int, ...]
    itemsize: int = 0


# safetensors' dtype names (https://github.com/huggingface/safetensors, Dtype)
_SAFETENSORS = {
    "BOOL": DType.bool, "U8": DType.uint8, "I8": DType.int8, "U16": DType.uint16,
    "I16": DType.int16, "U32": DType.uint32, "I32": DType.int32, "U64": DType.uint64,
    "I64": DType.int64, "F16": DType.float16, "BF16": DType.bfloat16, "F32": DType.float32,
    "F64": DType.float64, "F8_E4M3": DType.float8_e4m3fn, "F8_E5M2": DType.float8_e5m2,
}  # fmt: skip
# numpy saves the ml_dtypes types as raw bytes of their width
_RAW_BYTES = {DType.bfloat16, DType.float8_e4m3fn, DType.float8_e5m2}


class _Entry(NamedTuple):
    """Where one weight's data lies in a file."""

    info: WeightInfo
    offset: int  # of the data in the file; -1 for a compressed npz member
    np_dtype: np.dtype[Any]
    fortran: bool = False
    member: str = ""  # the npz member holding it


class _File:
    """One weight file: its header, read once; data read on demand."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: dict[str, _Entry] = {}
        if not os.path.exists(path):
            raise WeightError(f"no weight file at {path!r}")
        try:
            if path.endswith(".safetensors"):
                self._read_safetensors()
            elif path.endswith(".npz"):
                self._read_npz()
            else:
                raise WeightError(
                    f"{path!r}: weights load from .npz and .safetensors files; name the file "
                    "with one of these extensions"
                )
        except (OSError, ValueError, zipfile.BadZipFile) as e:
            if isinstance(e, WeightError):
                raise
            raise WeightError(f"cannot read the weight file {path!r}: {e}") from None

    def _read_safetensors(self) -> None:
        from safetensors import SafetensorError, safe_open

        try:  # the reference reader validates the header: bounds, overlaps, sizes
            with safe_open(self.path, framework="numpy") as f:
                names = set(f.keys())
        except SafetensorError as e:
            raise WeightError(f"cannot read the weight file {self.path!r}: {e}") from None
        with open(self.path, "rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(size))
        base = 8 + size
        for name, spec in header.items():
            if name == "__metadata__" or name not in names:
                continue
            code = spec["dtype"]
            dt = _SAFETENSORS.get(code)
            if dt is None:
                raise WeightError(
                    f"{self.path!r}: weight {name!r} has safetensors dtype {code}, which "
                    f"graphdsl has no dtype for (it reads {', '.join(_SAFETENSORS)})"
                )
            shape = tuple(int(d) for d in spec["shape"])
            begin = int(spec["data_offsets"][0])
            # safetensors stores little-endian, C order
            np_dt = np.dtype(dt.np).newbyteorder("<")
            self.entries[name] = _Entry(WeightInfo(dt, shape, np_dt.itemsize), base + begin, np_dt)

    def _read_npz(self) -> None:
        with zipfile.ZipFile(self.path) as z, open(self.path, "rb") as f:
            for member in z.infolist():
                if not member.filename.endswith(".npy"):
                    continue
                name = member.filename[: -len(".npy")]
                if member.compress_type == zipfile.ZIP_STORED:
                    # the member's bytes lie in the file as they are: its .npy header, then data
                    f.seek(member.header_offset)
                    local = f.read(30)
                    name_len, extra_len = struct.unpack("<HH", local[26:30])
                    f.seek(member.header_offset + 30 + name_len + extra_len)
                    shape, fortran, np_dt = _npy_header(f)
                    offset = f.tell()
                else:  # savez_compressed: inflated when read, one weight at a time
                    with z.open(member) as m:
                        shape, fortran, np_dt = _npy_header(m)
                    offset = -1
                if np_dt.hasobject:
                    raise WeightError(f"{self.path!r}: weight {name!r} holds Python objects")
                info = WeightInfo(_dtype_of(np_dt), tuple(shape), np_dt.itemsize)
                self.entries[name] = _Entry(info, offset, np_dt, fortran, member.filename)

    def array(self, name: str) -> np.ndarray:
        """The weight's data: a read-only memory map where the file allows it."""
        e = self.entries[name]
        if e.offset < 0:
            with zipfile.ZipFile(self.path) as z, z.open(e.member) as m:
                arr: np.ndarray = np.lib.format.read_array(m)
            return arr
        if math.prod(e.info.shape) == 0:
            return np.zeros(e.info.shape, e.np_dtype)
        mapped: np.ndarray = np.memmap(
            self.path,
            dtype=e.np_dtype,
            mode="r",
            offset=e.offset,
            shape=e.info.shape,
            order="F" if e.fortran else "C",
        )
        return mapped

    def raw(self, name: str) -> tuple[int, int] | None:
        """(offset, length) of the weight's bytes in the file, where they are its data in
        little-endian C order (what ONNX's raw data is); None where they must be converted."""
        e = self.entries[name]
        if e.offset < 0 or e.fortran or e.np_dtype.byteorder == ">":
            return None
        return e.offset, math.prod(e.info.shape) * e.np_dtype.itemsize


def _npy_header(f: Any) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(f)
    return np.lib.format.read_array_header_2_0(f)


def _dtype_of(np_dt: np.dtype[Any]) -> DType | None:
    if np_dt.kind == "V" and np_dt.fields is None:
        return None  # raw bytes: bfloat16 or float8 as numpy saves them
    try:
        return dtype(np_dt.newbyteorder("="))
    except DTypeError:
        raise WeightError(f"numpy dtype {np_dt} has no graphdsl dtype") from None


class Weights:
    """Named weight data: files read lazily (headers now, data on use) or arrays in memory.

    Build with :func:`load_weights` (files) or :func:`as_weights` (also a dict of arrays).
    ``strict`` (default): binding to a graph reports the weights the graph does not declare.

    >>> import numpy as np, graphdsl as gd, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
    >>> gd.save_weights(path, {"w": np.arange(4, dtype=np.float32).reshape(2, 2)})
    >>> w = gd.load_weights(path)
    >>> w.names(), w.info("w")
    (['w'], WeightInfo(dtype=DType.float32, shape=(2, 2), itemsize=4))
    >>> g = gd.Graph("m", input_types={"x": gd.TensorType(gd.float32, (2,))})
    >>> g.output(g.inputs[0] @ g.weight("w", gd.float32, (2, 2)))
    >>> gd.evaluate(g, {"x": np.ones(2, np.float32)}, weights=w)
    [array([2., 4.], dtype=float32)]
    """

    def __init__(
        self,
        sources: Mapping[str, tuple[_File | np.ndarray, str]],
        *,
        strict: bool = True,
        described: str = "arrays",
    ) -> None:
        self._sources = dict(sources)
        self.strict = strict
        self.described = described

    def __repr__(self) -> str:
        return f"<Weights: {len(self._sources)} from {self.described}>"

    def names(self) -> list[str]:
        """The weights' names (as a graph declares them: prefix removed, renamed)."""
        return sorted(self._sources)

    def __contains__(self, name: object) -> bool:
        return name in self._sources

    def info(self, name: str) -> WeightInfo:
        """Dtype and shape of weight ``name``, from its file's header."""
        src, key = self._get(name)
        if isinstance(src, np.ndarray):
            return WeightInfo(_dtype_of(src.dtype), tuple(src.shape), src.dtype.itemsize)
        return src.entries[key].info

    def where(self, name: str) -> str:
        """Where weight ``name`` comes from: ``'model.safetensors' as 'layers.3.wq'``."""
        src, key = self._get(name)
        if isinstance(src, np.ndarray):
            return "the arrays given"
        return f"{src.path!r}" + (f" as {key!r}" if key != name else "")

    def array(self, name: str, declared: DType | None = None) -> np.ndarray:
        """Weight ``name``'s data (memory-mapped from its file where the file allows it);
        raw bytes (numpy's bfloat16/float8) are viewed as ``declared``."""
        src, key = self._get(name)
        arr = src if isinstance(src, np.ndarray) else src.array(key)
        if arr.dtype.kind == "V" and declared is not None:
            arr = arr.view(declared.np)
        elif arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("="))
        return arr

    def raw(self, name: str) -> tuple[str, int, int] | None:
        """(file path, offset, length) of weight ``name``'s bytes where they can be copied
        as they are into an ONNX tensor; None for arrays in memory or bytes to convert."""
        src, key = self._get(name)
        if isinstance(src, np.ndarray):
            return None
        hit = src.raw(key)
        return None if hit is None else (src.path, *hit)

    def _get(self, name: str) -> tuple[_File | np.ndarray, str]:
        hit = self._sources.get(name)
        if hit is None:
            raise WeightError(f"no weight {name!r} in {self.described}")
        return hit


def load_weights(
    *paths: PathLike,
    prefix: str = "",
    rename: Mapping[str, str] | Callable[[str], str | None] | None = None,
    strict: bool = True,
) -> Weights:
    """Weights from ``.npz`` and ``.safetensors`` files, read lazily and memory-mapped.

    Only the files' headers are read now. ``prefix``: take only the weights whose names
    start with it, without it (``prefix="layers.3."`` binds the file's ``layers.3.wq`` to
    the graph's ``wq``). ``rename``: a dict or a function from a file's name (after the
    prefix is removed) to the graph's (a function may return None to leave a weight out).
    ``strict=False``: weights the graph does not declare are ignored instead of reported.

    >>> import numpy as np, graphdsl as gd, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.npz")
    >>> np.savez(path, **{"block.w": np.ones((2, 2), np.float16)})
    >>> gd.load_weights(path, rename={"block.w": "w"}).info("w")
    WeightInfo(dtype=DType.float16, shape=(2, 2), itemsize=2)
    """
    if not paths:
        raise WeightError("load_weights needs at least one .npz or .safetensors file")
    sources: dict[str, tuple[_File | np.ndarray, str]] = {}
    for p in paths:
        f = _File(os.fspath(p))
        for key in f.entries:
            if not key.startswith(prefix):
                continue
            name = _renamed(key[len(prefix) :], rename)
            if name is None:
                continue
            if name in sources:
                first = sources[name]
                was = first[0].path if isinstance(first[0], _File) else "arrays"
                raise WeightError(
                    f"weight {name!r} is in {was!r} (as {first[1]!r}) and in {f.path!r} (as "
                    f"{key!r}); give each weight once (rename one, or load the files apart)"
                )
            sources[name] = (f, key)
    listed = ", ".join(repr(os.fspath(p)) for p in paths)
    described = listed + (f" under prefix {prefix!r}" if prefix else "")
    return Weights(sources, strict=strict, described=described)


def _renamed(
    name: str, rename: Mapping[str, str] | Callable[[str], str | None] | None
) -> str | None:
    if rename is None:
        return name
    if isinstance(rename, Mapping):
        return rename.get(name, name)
    return rename(name)


def as_weights(source: Weights | PathLike | Mapping[str, Any]) -> Weights:
    """``source`` as :class:`Weights`: itself, a file path, or a dict of arrays."""
    if isinstance(source, Weights):
        return source
    if isinstance(source, (str, os.PathLike)):
        return load_weights(source)
    if isinstance(source, Mapping):
        arrays = {}
        for k, v in source.items():
            arr = np.asarray(v)
            if arr.dtype == object:
                raise WeightError(f"weight {k!r}: cannot make an array of {v!r}")
            arrays[str(k)] = (arr, str(k))
        return Weights(arrays, described="the arrays given")
    raise WeightError(
        f"weights={source!r}: pass a .npz or .safetensors path, gd.load_weights(...), or a "
        "dict of arrays"
    )


def save_weights(path: PathLike, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` by name to a ``.safetensors`` (the safetensors package) or ``.npz``
    file (uncompressed, so that it loads memory-mapped).

    >>> import numpy as np, graphdsl as gd, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.npz")
    >>> gd.save_weights(path, {"a": np.ones(3, gd.bfloat16.np), "b": np.zeros(2, np.int8)})
    >>> w = gd.load_weights(path)
    >>> w.names(), w.info("a")  # bfloat16 is stored as raw 2-byte values in a .npz
    (['a', 'b'], WeightInfo(dtype=None, shape=(3,), itemsize=2))
    """
    p = os.fspath(path)
    data = {k: np.ascontiguousarray(np.asarray(v)) for k, v in arrays.items()}
    if p.endswith(".safetensors"):
        from safetensors.numpy import save_file

        save_file(data, p)
    elif p.endswith(".npz"):
        # bfloat16 and float8 as raw bytes of their width: numpy writes some of them with a
        # descriptor it cannot read back ('<f1'); a weight declared with the dtype reads them
        raw = {k: v.view(f"V{v.dtype.itemsize}") if _dtype_of(v.dtype) in _RAW_BYTES else v
               for k, v in data.items()}  # fmt: skip
        np.savez(p, **raw)  # type: ignore[arg-type]
    else:
        raise WeightError(f"{p!r}: save weights to a .npz or .safetensors file")


def declared_weights(graph: Graph) -> dict[str, TensorType]:
    """The weights ``graph`` declares, by name (:meth:`graphdsl.Graph.weight`)."""
    return {n.attrs["name"]: n.type for n in graph.nodes if n.op == "weight"}


def check_weights(graph: Graph, weights: Weights, declared: Mapping[str, TensorType]) -> None:
    """Raise :class:`WeightError` unless ``weights`` holds exactly the ``declared`` ones
    (extra ones allowed if not ``weights.strict``), each of its declared dtype and shape."""
    problems = []
    missing = [n for n in declared if n not in weights]
    if missing:
        problems.append(
            f"missing: {', '.join(map(repr, missing))} (not in {weights.described}; "
            f"it holds {_few(weights.names())})"
        )
    extra = [n for n in weights.names() if n not in declared]
    if extra and weights.strict:
        problems.append(
            f"not declared by the graph: {', '.join(map(repr, extra))} (declare them with "
            "g.weight(name, dtype, shape), load with a prefix, or pass strict=False)"
        )
    for name, t in declared.items():
        if name not in weights:
            continue
        info = weights.info(name)
        got = info.dtype
        if got is None:
            ok = t.dtype in _RAW_BYTES and info.itemsize == t.dtype.np.itemsize
            shown = f"raw {info.itemsize}-byte elements"
        else:
            ok = got is t.dtype
            shown = got.name
        if not ok:
            problems.append(
                f"weight {name!r} is {shown} in {weights.where(name)} but the graph declares "
                f"it {t.dtype.name}; declare it {shown if got else 'with its dtype'} (and cast "
                "it in the graph), or convert the file"
            )
        elif info.shape != t.shape:
            problems.append(
                f"weight {name!r} has shape {info.shape} in {weights.where(name)} but the "
                f"graph declares {tuple(t.shape)}"
            )
    if problems:
        raise WeightError(f"weights of graph {graph.name!r}: " + "; ".join(problems))


def _few(names: Sequence[str], k: int = 8) -> str:
    if not names:
        return "no weights"
    shown = ", ".join(map(repr, names[:k]))
    return shown + (f" and {len(names) - k} more" if len(names) > k else "")
