"""MAX's constants and device ops over graphdsl's (``graphdsl.max.ops``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType as CoreDType
from graphdsl.dtypes import DTypeError, Kind
from graphdsl.dtypes import dtype as _dtype
from graphdsl.literals import LiteralError
from graphdsl.max._common import (
    DimLike,
    TensorValueLike,
    _dims,
    _value,
)
from graphdsl.max._dim import Shape
from graphdsl.max._dtype import DType
from graphdsl.max._dtype import to_core as dtype_to_core
from graphdsl.max._types import DeviceRef, TensorType, UnsupportedError, Weight
from graphdsl.max._value import TensorValue, current_graph, dim_tensor, maxop
from graphdsl.max._value import tv as _tv
from graphdsl.shapes import ShapeError
from graphdsl.types import OpTypeError

# ---------------------------------------------------------------------------- constants


@maxop("constant")
def constant(
    value: np.ndarray | Sequence[Any] | bool | int | float | np.generic,
    dtype: DType | None = None,
    device: DeviceRef | None = None,
) -> TensorValue:
    """A constant tensor, as MAX's: an array takes its own dtype (``dtype``, if given, must
    match it) and lives on the CPU unless ``device`` says otherwise; a Python number or
    (rectangular) nested list needs ``dtype`` and ``device``, and its integers must fit the
    dtype. Floats go to floating dtypes only (rounded to them)."""
    graph = current_graph()
    core = None if dtype is None else dtype_to_core(dtype)
    if hasattr(value, "__dlpack__") and not isinstance(value, np.generic):
        arr = np.from_dlpack(value) if not isinstance(value, np.ndarray) else value
        try:
            own = _dtype(arr.dtype)
        except DTypeError as e:
            raise OpTypeError(
                f"constant: an array of {arr.dtype} has no graphdsl dtype: {e}"
            ) from None
        if core is not None and core is not own:
            raise ValueError(
                f"DType must match input dtype: dtype={core.name} != value.dtype={own.name}; "
                "cast the array first"
            )
        return _tv(graph.constant(arr, own), device or DeviceRef.CPU())
    if core is None or device is None:
        raise OpTypeError("Literal constants must explicitly set a dtype and device.")
    if core.is_float and core.bits < 8:
        raise TypeError(
            f"Cannot create a constant of type 'DType.{core.name}' since it is a sub-byte type."
            " (max.graph makes no literal constants of its 4- and 6-bit floats: make the "
            "constant in a wider float and ops.cast it)"
        )
    return _tv(graph.constant(_literal_array(value, core), core), device)


def _literal_array(value: Any, dtype: CoreDType) -> np.ndarray:
    """A nested list or number as an array of ``dtype``, checked as MAX checks it."""
    shape = _nested_shape(value)
    leaves = np.asarray(value, dtype=object).reshape(-1) if shape else [value]
    floating = dtype.kind in (Kind.float, Kind.complex)
    for v in leaves:
        v = v.item() if isinstance(v, np.generic) else v
        if not isinstance(v, (bool, int, float)):
            raise OpTypeError(f"constant: {v!r} is not a number")
        if floating:
            continue
        if isinstance(v, float):
            raise OpTypeError(
                f"constant: the float {v!r} cannot become {dtype.name} (MAX refuses floats "
                "for integer dtypes; graphdsl for bool too); give an int, or a floating dtype"
            )
        if not dtype.min <= v <= dtype.max:
            raise LiteralError(
                f"Unsafe cast: Refusing to implicitly promote external array with value {v} "
                f"out of range for DType {dtype.name} ({dtype.min}..{dtype.max})."
            )
    if floating:
        with np.errstate(over="ignore"):  # 1e300 becomes float16 inf, as in MAX
            return np.asarray(value, dtype=np.float64).astype(dtype.np)
    return np.asarray(value, dtype=object).astype(dtype.np)


def _nested_shape(value: Any) -> tuple[int, ...]:
    """MAX's shape of a nested literal (its ``shape``): rectangular or ValueError."""
    if not isinstance(value, (list, tuple)):
        return ()
    inner = {_nested_shape(v) for v in value}
    if len(inner) > 1:
        raise ShapeError(f"Array literals must be rectangular, got literal={value!r}")
    return (len(value), *next(iter(inner), ()))


@maxop("constant_external")
def constant_external(
    name: str, type: TensorType, align: int | None = None, is_placeholder: bool = False
) -> TensorValue:
    """A named weight of ``type`` (graphdsl's :meth:`graphdsl.Graph.weight`: bound by name at
    export or evaluation)."""
    if is_placeholder:
        raise UnsupportedError(
            f"constant_external {name!r}: placeholders (resolved by ops.call) are not "
            "supported by graphdsl"
        )
    return current_graph().add_weight(  # type: ignore[no-any-return]
        Weight(name, type.dtype, type.shape, type.device)
    )


@maxop("shape_to_tensor")
def shape_to_tensor(shape: Iterable[DimLike]) -> TensorValue:
    """A shape as an int64 vector on the CPU: static dims as they are, symbolic ones as
    their sizes when the model runs (``graphdsl.ops.dim_size``)."""
    return dim_tensor(Shape(_dims(shape, "shape_to_tensor")))


# ---------------------------------------------------------------------------- devices


@maxop("transfer_to")
def transfer_to(x: TensorValueLike, device: DeviceRef) -> TensorValue:
    """``x`` on ``device`` (recorded; onnxruntime runs the whole model on one provider)."""
    value = x if isinstance(x, TensorValue) else _tv(_value(x, "transfer_to"))
    return value.to(device)


@maxop("assert_same_device")
def assert_same_device(*values: TensorValue, **named_values: TensorValue) -> None:
    """Raises ValueError unless every value is on the same device."""
    named = [(str(k), v) for k, v in enumerate(values)] + list(named_values.items())
    devices = {name: v.device for name, v in named}
    if len(set(devices.values())) > 1:
        where = ", ".join(f"{name}: {d}" for name, d in devices.items())
        raise ValueError(f"values are not on the same device ({where})")
