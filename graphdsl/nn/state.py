"""State dicts: a module's declared parameters against the data given for them.

``Module.load_state_dict(source)`` takes a dict of arrays, a PyTorch state dict (tensors are
converted here; torch is imported only when one is given), a ``.safetensors`` or ``.npz``
path, or :class:`graphdsl.Weights`, and checks every name: missing ones, unexpected ones and
mistyped ones (another dtype or shape) are reported together by a :class:`StateDictError`,
each with what the module declares.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from graphdsl.dtypes import DType, DTypeError, dtype
from graphdsl.nn._parameter import Parameter
from graphdsl.weights import WeightError, WeightInfo, Weights, load_weights

__all__ = ["IncompatibleKeys", "StateDictError", "check_state", "to_weights"]

# numpy saves bfloat16 and float8 as raw bytes of their width (graphdsl.weights reads them so)
_RAW = {DType.bfloat16, DType.float8_e4m3fn, DType.float8_e5m2}
_SHOWN = 8  # names listed per kind of problem (the exception holds them all)


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict(..., strict=False)`` left out, as PyTorch returns it.

    >>> import numpy as np
    >>> from graphdsl import nn
    >>> state = {"weight": np.ones((2, 2), np.float32), "extra": np.ones(1)}
    >>> nn.Linear(2, 2).load_state_dict(state, strict=False)
    IncompatibleKeys(missing_keys=['bias'], unexpected_keys=['extra'])
    """

    missing_keys: list[str]
    unexpected_keys: list[str]


class StateDictError(WeightError):
    """A state dict that does not match a module's parameters: ``missing``, ``unexpected``
    and ``mistyped`` (name, what the module declares, what the data is) list them all.

    >>> import numpy as np
    >>> from graphdsl import nn
    >>> try:
    ...     nn.Linear(2, 2).load_state_dict({"weight": np.ones((3, 2), np.float32)})
    ... except nn.StateDictError as e:
    ...     print(e.missing, e.unexpected, e.mistyped)
    ['bias'] [] [('weight', 'float32[2, 2]', 'float32[3, 2]')]
    """

    def __init__(
        self,
        message: str,
        missing: list[str],
        unexpected: list[str],
        mistyped: list[tuple[str, str, str]],
    ) -> None:
        super().__init__(message)
        self.missing = missing
        self.unexpected = unexpected
        self.mistyped = mistyped


def _torch_array(t: Any) -> np.ndarray:
    """A torch tensor's data as a numpy array (bfloat16 and float8 through ml_dtypes)."""
    import ml_dtypes
    import torch  # only here: given a tensor, torch is installed

    t = t.detach().cpu().contiguous()
    views = {torch.bfloat16: (torch.int16, ml_dtypes.bfloat16)}
    for name, np_type in (("float8_e4m3fn", ml_dtypes.float8_e4m3fn),
                          ("float8_e5m2", ml_dtypes.float8_e5m2)):  # fmt: skip
        if hasattr(torch, name):
            views[getattr(torch, name)] = (torch.uint8, np_type)
    if t.dtype in views:
        raw, np_type = views[t.dtype]
        return np.asarray(t.view(raw).numpy().view(np_type))
    return np.asarray(t.numpy())


def _is_torch(v: object) -> bool:
    return type(v).__module__.split(".")[0] == "torch" and hasattr(v, "detach")


def to_weights(source: object, what: str) -> Weights:
    """``source`` as non-strict :class:`~graphdsl.Weights` (names the graph does not declare
    are left alone when it is exported): a path, Weights, or a mapping of arrays or tensors."""
    if isinstance(source, Weights):
        w = copy.copy(source)
        w.strict = False
        return w
    if isinstance(source, (str, os.PathLike)):
        return load_weights(source, strict=False)
    if isinstance(source, Mapping):
        arrays: dict[str, tuple[np.ndarray, str]] = {}
        for k, v in source.items():
            arr = _torch_array(v) if _is_torch(v) else np.asarray(v)
            if arr.dtype == object:
                raise WeightError(f"{what}: {k!r} is {type(v).__name__}, not an array")
            arrays[str(k)] = (arr, str(k))
        return Weights(arrays, strict=False, described="the state dict given")
    raise WeightError(
        f"{what}: give a dict of arrays or tensors (a torch state_dict()), a .safetensors or "
        f".npz path, or gd.load_weights(...); got {type(source).__name__}"
    )


def _shown(dt: DType | None, shape: tuple[int, ...], itemsize: int) -> str:
    name = dt.name if dt is not None else f"raw {itemsize}-byte elements"
    return f"{name}{list(shape)}"


def _few(items: list[str]) -> str:
    more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


def check_state(
    owner: str, specs: Mapping[str, Parameter], weights: Weights, strict: bool
) -> IncompatibleKeys:
    """Compare ``weights`` with the declared ``specs``; raise :class:`StateDictError` for
    mistyped names, and for missing or unexpected ones when ``strict``."""
    missing = [n for n in specs if n not in weights]
    unexpected = [n for n in weights.names() if n not in specs]
    mistyped: list[tuple[str, str, str]] = []
    for name, spec in specs.items():
        if name not in weights:
            continue
        info = _typed(weights, name)
        want = _shown(spec.dtype, spec.shape, spec.dtype.np.itemsize)
        raw_ok = info.dtype is None and spec.dtype in _RAW and (
            info.itemsize == spec.dtype.np.itemsize)  # fmt: skip
        if (info.dtype is not spec.dtype and not raw_ok) or tuple(info.shape) != spec.shape:
            mistyped.append((name, want, _shown(info.dtype, info.shape, info.itemsize)))
    problems = []
    if mistyped:
        problems.append(f"{len(mistyped)} mistyped: " + _few(
            [f"{n!r} is {got}, declared {want}" for n, want, got in mistyped]))  # fmt: skip
    if strict and missing:
        problems.append(f"{len(missing)} missing: " + _few(
            [f"{n!r} ({_shown(specs[n].dtype, specs[n].shape, 0)})" for n in missing]))  # fmt: skip
    if strict and unexpected:
        problems.append(f"{len(unexpected)} unexpected: " + _few(
            [f"{n!r} ({_shown(*_info(weights, n))})" for n in unexpected]))  # fmt: skip
    if problems:
        fix = []
        if mistyped:
            fix.append("build the module with the data's dtype (dtype=...) or convert the data")
        if strict and (missing or unexpected):
            fix.append("check the module's structure and names against the checkpoint "
                       "(model.named_parameters()), or pass strict=False")  # fmt: skip
        raise StateDictError(
            f"load_state_dict of {owner} from {weights.described}:\n" + ";\n".join(problems)
            + " (" + "; ".join(fix) + ")",
            missing, unexpected, mistyped,
        )  # fmt: skip
    return IncompatibleKeys(missing, unexpected)


def _typed(weights: Weights, name: str) -> WeightInfo:
    """What ``weights`` says of ``name``, with the dtype of an ml_dtypes array (bfloat16,
    float8: numpy's raw-byte kind) named where the data says it."""
    info = weights.info(name)
    if info.dtype is None:
        try:
            return info._replace(dtype=dtype(weights.array(name).dtype))
        except DTypeError:
            pass
    return info


def _info(weights: Weights, name: str) -> tuple[DType | None, tuple[int, ...], int]:
    info = _typed(weights, name)
    return info.dtype, tuple(info.shape), info.itemsize

