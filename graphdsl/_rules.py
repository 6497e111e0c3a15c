"""The op table: per op, its type rule and its numpy reference implementation.

A type rule maps the operand types (and attributes) to ``(in_dtypes, out_type)``: the
dtype each operand must have when the op runs (the ``implicit_cast`` pass makes that
explicit with Cast nodes) and the result's type. Promotion happens here and only here,
through the graph's policy. Implementations receive operands already in ``in_dtypes``
(float16/bfloat16/float8 ones widened to float32 by the evaluator) and return the result.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.opdef import OPS, Impl, OpDef, Rule, register
from graphdsl.policies import Policy, Promoted
from graphdsl.shapes import (
    Dim,
    Shape,
    ShapeError,
    bind_dim,
    broadcast_shapes,
    derived_dim,
    format_shape,
    normalize_axes,
    normalize_axis,
    num_elements,
    shape_of,
    sum_dims,
)
from graphdsl.types import OpTypeError, TensorType

__all__ = ["OPS", "OpDef", "cast_array"]

_name: str
_fn: Callable[..., Any]

NUMERIC = frozenset({Kind.signed, Kind.unsigned, Kind.float, Kind.complex})
REAL = frozenset({Kind.signed, Kind.unsigned, Kind.float})
INTEGER = frozenset({Kind.signed, Kind.unsigned})
ANY = frozenset(Kind)
_KIND_WORDS = {
    NUMERIC: "numeric (not bool)",
    REAL: "real numeric (integer or floating)",
    INTEGER | {Kind.bool}: "bool or integer",
    REAL | {Kind.bool}: "bool, integer or floating",
    ANY: "any",
    frozenset({Kind.float}): "floating",
}


def _register(
    name: str, rule: Rule, impl: Impl, accepts: str, truthy: tuple[int, ...] = ()
) -> None:
    register(OpDef(name, rule, impl, accepts, truthy))


# ---------------------------------------------------------------------------- helpers


def promote(p: Policy, types: Sequence[TensorType]) -> Promoted:
    acc = Promoted(types[0].dtype, types[0].ambiguous)
    for t in types[1:]:
        acc = p.decide(acc.dtype, acc.ambiguous, t.dtype, t.ambiguous).result
    return acc


def _types_str(types: Sequence[TensorType]) -> str:
    return ", ".join(str(t) for t in types)


def _need(kinds: frozenset[Kind], c: Promoted, types: Sequence[TensorType], p: Policy) -> None:
    if c.dtype.kind in kinds:
        return
    want = _KIND_WORDS.get(kinds, "/".join(sorted(k.value for k in kinds)))
    via = (
        f"promote to {c.dtype.name} under policy {p.name!r}"
        if len(types) > 1
        else f"is {c.dtype.name} (policy {p.name!r})"
    )
    fix = "cast to a dtype it accepts first (gd.ops.cast)"
    if c.dtype is DType.bool and Kind.signed in kinds:
        fix = "use the logical_* ops for bool values, or cast to an integer dtype first"
    raise OpTypeError(
        f"operand types {_types_str(types)} (in argument order) {via}, but the op needs "
        f"{want} operands; {fix}"
    )


def _elementwise(
    kinds: frozenset[Kind],
    *,
    to_float: frozenset[Kind] = frozenset(),
    result_bool: bool = False,
) -> Rule:
    """Promote all operands; ``to_float`` kinds compute in the policy's default float."""

    def rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
        c = promote(p, types)
        if c.dtype.kind in to_float:
            c = Promoted(p.default_float, c.ambiguous)
        _need(kinds, c, types, p)
        shape = types[0].shape
        if len(types) > 1 and any(t.shape != shape for t in types):
            shape = broadcast_shapes(*(t.shape for t in types))
        out = (
            TensorType(DType.bool, shape)
            if result_bool
            else TensorType(c.dtype, shape, c.ambiguous)
        )
        return (c.dtype,) * len(types), out

    return rule


def _logical(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    shape = broadcast_shapes(*(t.shape for t in types)) if len(types) > 1 else types[0].shape
    return (DType.bool,) * len(types), TensorType(DType.bool, shape)


_IGNORE = {"all": "ignore"}


def _np(fn: Callable[..., Any]) -> Impl:
    def impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
        with np.errstate(**_IGNORE):  # type: ignore[arg-type]
            return np.asarray(fn(*args))

    return impl


# ---------------------------------------------------------------------------- casts


def cast_array(x: np.ndarray, to: DType) -> np.ndarray:
    """Convert with graphdsl's semantics (numpy's, but float -> integer saturates).

    Integer -> narrower integer wraps (two's complement); float -> integer truncates toward
    zero, saturates at the target's range, and maps NaN to 0 (as XLA does: a C cast is
    undefined there); anything -> bool is ``x != 0`` (NaN is True); float rounding is to
    nearest even, overflowing to inf.
    """
    target = to.np
    if x.dtype == target:
        return x
    src_kind = x.dtype.kind
    with np.errstate(all="ignore"):
        if (to.is_integer and src_kind in "fcV") or (to.is_integer and _is_ml_float(x.dtype)):
            xf = np.real(x).astype(np.float64) if src_kind == "c" else x.astype(np.float64)
            lo, hi = to.min, to.max
            t = np.trunc(xf)
            out = np.where(np.isnan(t), 0, t)
            # compare in float64; values at the edges are handled by clipping in int space
            big = out >= float(hi)
            small = out <= float(lo)
            safe = np.where(big | small, 0, out).astype(target)
            res = np.where(big, np.array(hi, dtype=target), safe)
            return np.asarray(np.where(small, np.array(lo, dtype=target), res))
        if to is DType.bool:
            return np.asarray(x != 0)
        if src_kind == "c" and to.kind is not Kind.complex:
            x = np.real(x)
        return np.asarray(x.astype(target))


def _is_ml_float(d: np.dtype[Any]) -> bool:
    return d.kind == "V" or d.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def _cast_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    to: DType = attrs["to"]
    t = types[0]
    if t.dtype.kind is Kind.complex and to.kind is not Kind.complex:
        raise OpTypeError(
            f"casting {t} to {to.name} would drop the imaginary part; take gd.ops.real/abs "
            "first or cast to a complex dtype"
        )
    return (t.dtype,), TensorType(to, t.shape)


_register("cast", _cast_rule, lambda a, attrs, out: cast_array(a[0], attrs["to"]), "any")


# ---------------------------------------------------------------------------- arithmetic

for _name, _fn in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply)):
    _register(_name, _elementwise(NUMERIC), _np(_fn), "numeric")

_register(
    "div",
    _elementwise(
        NUMERIC | {Kind.bool}, to_float=frozenset({Kind.bool, Kind.signed, Kind.unsigned})
    ),
    _np(np.true_divide),
    "numeric; integers compute in the default float",
)


def _floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.floor_divide(a, b))


_register("floordiv", _elementwise(REAL), _np(_floordiv), "real")
_register("mod", _elementwise(REAL), _np(np.mod), "real")


def _int_pow(base: np.ndarray, exp: np.ndarray) -> np.ndarray:
    """Exact integer power with wraparound; a negative exponent truncates 1/b**n toward 0."""
    neg = exp < 0
    pos = np.power(base, np.where(neg, 0, exp).astype(exp.dtype))
    one = np.ones_like(pos)
    odd = (np.where(neg, -exp, 0) % 2) == 1 if base.dtype.kind == "i" else np.zeros_like(neg)
    inv = np.where(base == 1, one, 0)
    if base.dtype.kind == "i":
        inv = np.where(base == -1, np.where(odd, -one, one), inv)
    return np.asarray(np.where(neg, inv, pos).astype(pos.dtype))


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        return _int_pow(a, b)
    return np.asarray(np.power(a, b))


_register("pow", _elementwise(NUMERIC), _np(_pow), "numeric")
def _extremum(pick_first: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Impl:
    """max/min with NaN propagating and ties going to the second operand (-0.0 vs 0.0).

    Spelled out rather than np.maximum, whose tie-breaking differs between its float16
    and float32 loops.
    """

    def fn(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        r = np.where(pick_first(a, b), a, b)
        if a.dtype.kind == "f":
            r = np.where(np.isnan(a), a, r)
        return np.asarray(r)

    return _np(fn)


_register("maximum", _elementwise(REAL | {Kind.bool}), _extremum(np.greater), "real or bool")
_register("minimum", _elementwise(REAL | {Kind.bool}), _extremum(np.less), "real or bool")

for _name, _fn, _k in (
    ("equal", np.equal, ANY),
    ("not_equal", np.not_equal, ANY),
    ("less", np.less, REAL | {Kind.bool}),
    ("less_equal", np.less_equal, REAL | {Kind.bool}),
    ("greater", np.greater, REAL | {Kind.bool}),
    ("greater_equal", np.greater_equal, REAL | {Kind.bool}),
):
    _register(_name, _elementwise(_k, result_bool=True), _np(_fn), "comparable")

for _name, _fn in (
    ("logical_and", np.logical_and),
    ("logical_or", np.logical_or),
    ("logical_xor", np.logical_xor),
    ("logical_not", np.logical_not),
):
    _register(_name, _logical, _np(_fn), "any (by truth value)", truthy=(0, 1))

_BITS = INTEGER | {Kind.bool}
for _name, _fn in (
    ("bitwise_and", np.bitwise_and),
    ("bitwise_or", np.bitwise_or),
    ("bitwise_xor", np.bitwise_xor),
    ("bitwise_not", np.invert),
):
    _register(_name, _elementwise(_BITS), _np(_fn), "bool or integer")

_register("negative", _elementwise(NUMERIC), _np(np.negative), "numeric")
_register("sign", _elementwise(NUMERIC), _np(np.sign), "numeric")


def _abs_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    _need(NUMERIC, Promoted(t.dtype, t.ambiguous), types, p)
    real = {DType.complex64: DType.float32, DType.complex128: DType.float64}.get(t.dtype, t.dtype)
    return (t.dtype,), TensorType(real, t.shape, t.ambiguous)


_register("abs", _abs_rule, _np(np.abs), "numeric")

_TO_FLOAT = frozenset({Kind.bool, Kind.signed, Kind.unsigned})
_FLOAT = frozenset({Kind.float})


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.asarray(np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype))


for _name, _fn in (
    ("exp", np.exp),
    ("log", np.log),
    ("sqrt", np.sqrt),
    ("sin", np.sin),
    ("cos", np.cos),
    ("tanh", np.tanh),
    ("sigmoid", _sigmoid),
):
    _register(
        _name,
        _elementwise(_FLOAT, to_float=_TO_FLOAT),
        _np(_fn),
        "floating; integers -> default float",
    )

_register(
    "relu",
    _elementwise(REAL),
    _np(lambda x: np.where((x > 0) | (x != x), x, np.zeros((), x.dtype))),
    "real; max(x, 0), NaN passes",
)


def _int_identity(fn: Callable[[np.ndarray], Any]) -> Callable[[np.ndarray], Any]:
    return lambda x: x if x.dtype.kind in "iub" else fn(x)


_register("floor", _elementwise(REAL), _np(_int_identity(np.floor)), "real; integers unchanged")
_register("ceil", _elementwise(REAL), _np(_int_identity(np.ceil)), "real; integers unchanged")
_register("round", _elementwise(REAL), _np(_int_identity(np.rint)), "real; half to even")


def _where_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    cond, x, y = types
    c = promote(p, [x, y])
    shape = broadcast_shapes(cond.shape, x.shape, y.shape)
    return (DType.bool, c.dtype, c.dtype), TensorType(c.dtype, shape, c.ambiguous)


_register(
    "where", _where_rule, _np(np.where), "cond: any (truth value); branches: any", truthy=(0,)
)


# ---------------------------------------------------------------------------- matmul


def _matmul_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    a, b = types
    c = promote(p, types)
    _need(NUMERIC, c, types, p)
    if a.rank == 0 or b.rank == 0:
        raise ShapeError(
            f"matmul needs operands of rank >= 1, got {a} and {b}; multiply by a scalar "
            "with mul (*) instead"
        )
    sa = a.shape if a.rank > 1 else (1, *a.shape)
    sb = b.shape if b.rank > 1 else (*b.shape, 1)
    if sa[-1] != sb[-2]:
        raise ShapeError(
            f"matmul of shapes {format_shape(a.shape)} and {format_shape(b.shape)}: "
            f"contracting dimensions {sa[-1]} and {sb[-2]} differ; the first operand's last "
            "dimension must equal the second's second-to-last (transpose one of them?)"
        )
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    shape = (*batch, *((sa[-2],) if a.rank > 1 else ()), *((sb[-1],) if b.rank > 1 else ()))
    return (c.dtype, c.dtype), TensorType(c.dtype, shape, c.ambiguous)


_register("matmul", _matmul_rule, _np(np.matmul), "numeric")


# ---------------------------------------------------------------------------- reductions


def _reduce_shape(t: TensorType, attrs: dict[str, Any]) -> Shape:
    axes = normalize_axes(attrs.get("axis"), t.rank)
    attrs["axis"] = axes
    if attrs.get("keepdims"):
        return tuple(1 if i in axes else d for i, d in enumerate(t.shape))
    return tuple(d for i, d in enumerate(t.shape) if i not in axes)


def _reduction(kinds: frozenset[Kind], *, bool_to: str | None, to_float: bool = False) -> Rule:
    def rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
        t = types[0]
        c = Promoted(t.dtype, t.ambiguous)
        if t.dtype is DType.bool and bool_to == "int":
            c = Promoted(p.default_int, t.ambiguous)
        if to_float and t.dtype.kind in _TO_FLOAT:
            c = Promoted(p.default_float, t.ambiguous)
        _need(kinds, c, types, p)
        return (c.dtype,), TensorType(c.dtype, _reduce_shape(t, attrs), c.ambiguous)

    return rule


def _reduce_impl(fn: Callable[..., Any]) -> Impl:
    def impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
        x = args[0]
        with np.errstate(all="ignore"):
            r = fn(x, axis=attrs["axis"], keepdims=bool(attrs.get("keepdims")))
        return np.asarray(r).astype(x.dtype if x.dtype.kind != "b" else np.bool_)

    return impl


def _identity(x: np.ndarray, lowest: bool) -> Any:
    """The identity of max (``lowest``) or min over ``x``'s dtype: ONNX's value for a
    reduction over an empty set (numpy has none and raises)."""
    if x.dtype.kind == "b":
        return not lowest
    if x.dtype.kind == "f":
        return -np.inf if lowest else np.inf
    info = np.iinfo(x.dtype)
    return info.min if lowest else info.max


def _extremum_impl(fn: Callable[..., Any], lowest: bool) -> Impl:
    def reduce(x: np.ndarray, axis: Any, keepdims: bool) -> Any:
        return fn(x, axis=axis, keepdims=keepdims, initial=_identity(x, lowest))

    return _reduce_impl(reduce)


def _mean(x: np.ndarray, axis: Any, keepdims: bool) -> Any:
    n = math.prod(x.shape[a] for a in axis) if axis else 1
    if n == 0:  # NaN, as numpy's mean of an empty slice (without its warning)
        return np.full(np.sum(x, axis=axis, keepdims=keepdims).shape, np.nan, x.dtype)
    return np.mean(x, axis=axis, dtype=x.dtype, keepdims=keepdims)


_register(
    "sum",
    _reduction(NUMERIC, bool_to="int"),
    _reduce_impl(lambda x, **k: np.sum(x, dtype=x.dtype, **k)),
    "numeric; bool -> default int",
)
_register(
    "prod",
    _reduction(NUMERIC, bool_to="int"),
    _reduce_impl(lambda x, **k: np.prod(x, dtype=x.dtype, **k)),
    "numeric; bool -> default int",
)
_register(
    "max",
    _reduction(REAL | {Kind.bool}, bool_to=None),
    _extremum_impl(np.max, lowest=True),
    "real or bool; over an empty set: the dtype's lowest value",
)
_register(
    "min",
    _reduction(REAL | {Kind.bool}, bool_to=None),
    _extremum_impl(np.min, lowest=False),
    "real or bool; over an empty set: the dtype's highest value",
)
_register(
    "mean",
    _reduction(_FLOAT | {Kind.complex}, bool_to=None, to_float=True),
    _reduce_impl(_mean),
    "floating; integers -> default float",
)


# ---------------------------------------------------------------------------- shape ops


def _reshape_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    """numpy's reshape: one -1 may be inferred, and 0 is a zero-length dimension (ONNX's
    Reshape would copy the input's dimension; the exporter sets allowzero=1). With symbolic
    dimensions the element counts must be equal as products of names, in lowest terms."""
    t = types[0]
    req = tuple(attrs["shape"])
    if sum(1 for d in req if d == -1) > 1:
        raise ShapeError(
            f"reshape to {req}: at most one dimension may be -1; give the others explicitly"
        )
    known = shape_of([d for d in req if d != -1])  # validates
    src, dst = format_shape(t.shape), format_shape(req)
    zero_in, zero_out = 0 in t.shape, 0 in known
    if zero_out and not zero_in:
        named = tuple(d if d != 0 or i >= t.rank else t.shape[i] for i, d in enumerate(req))
        raise ShapeError(
            f"cannot reshape {src} to {dst}: a 0 is a zero-length dimension (numpy's meaning, "
            "not ONNX's 'copy this dimension'), so the element counts differ; to keep a "
            f"dimension of the input, name it: {named}"
        )
    n_in, n_known = num_elements(t.shape), num_elements(known)
    fill: Dim | None = None
    if -1 in req:
        if zero_out:
            raise ShapeError(
                f"cannot reshape {src} to {dst}: a -1 cannot be inferred beside a zero-length "
                "dimension (any size fits); give every dimension"
            )
        if zero_in:
            fill = 0
        elif n_in is not None and n_known is not None:
            if n_known == 0 or n_in % n_known:
                raise ShapeError(
                    f"cannot reshape {src} to {tuple(req)}: no whole size fits the -1; the "
                    "element counts must match"
                )
            fill = n_in // n_known
        else:
            fill = derived_dim(t.shape, known)
    elif n_in is not None and n_known is not None:
        if n_in != n_known:
            raise ShapeError(
                f"cannot reshape {src} ({n_in} elements) to {dst} ({n_known} elements); the "
                "element counts must match"
            )
    elif not zero_in and derived_dim(t.shape, known) != 1:
        have, want = derived_dim(t.shape, ()), derived_dim(known, ())
        raise ShapeError(
            f"cannot reshape {src} ({have} elements) to {dst} ({want} elements): the type "
            "system cannot tell that these counts are equal; use -1 for the dimension that "
            "takes the rest, or name dimensions of the input"
        )
    out: Shape = tuple(fill if d == -1 and fill is not None else d for d in req)
    return (t.dtype,), TensorType(t.dtype, out, t.ambiguous)


def _bound(dims: dict[str, int], d: Dim) -> int:
    """The run-time size of a dimension of a target shape (a name, or one derived from names)."""
    if isinstance(d, int):
        return d
    size = bind_dim(d, dims)
    if size is None:
        if d in dims or all(n in dims for n in re.findall(r"[A-Za-z_]\w*", d)):
            raise ShapeError(
                f"the dimension {d!r} is not a whole size when {dims}; bind the inputs' "
                "dimensions to sizes for which it is"
            )
        raise ShapeError(
            f"the symbolic dimension {d!r} is not a dimension of any graph input, so its size "
            "is unknown at run time; use a concrete size or a name that an input has"
        )
    return size


def _reshape_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    # the result's type is the target with its -1 resolved (numpy cannot infer a -1 beside
    # zero elements, where the type can): reshape to it, with the names bound
    x = args[0]
    try:
        req = tuple(_bound(attrs.get("_bound", {}), d) for d in out.shape)
        return x.reshape(req)
    except (ValueError, ShapeError):  # a size that holds only for some bindings (b*3/2)
        raise ShapeError(
            f"at run time, a value of shape {x.shape} ({x.size} elements) cannot take the "
            f"shape {tuple(attrs['shape'])}; its type {format_shape(out.shape)} needs other "
            "sizes of the inputs' dimensions"
        ) from None


_register("reshape", _reshape_rule, _reshape_impl, "any")


def _transpose_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    perm = attrs.get("perm")
    if perm is None:
        perm = tuple(reversed(range(t.rank)))
    perm = tuple(normalize_axis(a, t.rank, "perm entry") for a in perm)
    if sorted(perm) != list(range(t.rank)):
        raise ShapeError(
            f"transpose perm {perm} is not a permutation of {t.rank} axes; list each axis "
            f"0..{t.rank - 1} once"
        )
    attrs["perm"] = perm
    return (t.dtype,), TensorType(t.dtype, tuple(t.shape[i] for i in perm), t.ambiguous)


_register(
    "transpose", _transpose_rule, lambda a, attrs, out: np.transpose(a[0], attrs["perm"]), "any"
)


def _broadcast_to_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    target = shape_of(attrs["shape"])
    if len(target) < t.rank or broadcast_shapes(t.shape, target) != target:
        raise ShapeError(
            f"cannot broadcast {format_shape(t.shape)} to {format_shape(target)}; each "
            "dimension must equal the target's (aligned from the right) or be 1"
        )
    attrs["shape"] = target
    return (t.dtype,), TensorType(t.dtype, target, t.ambiguous)


def _broadcast_to_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> Any:
    dims = attrs.get("_bound", {})
    shape = [_bound(dims, d) for d in attrs["shape"]]
    return np.broadcast_to(args[0], shape).copy()


_register("broadcast_to", _broadcast_to_rule, _broadcast_to_impl, "any")


def _concat_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    if not types:
        raise ShapeError("concat needs at least one value; pass a list of symbols")
    c = promote(p, types)
    rank = types[0].rank
    if rank == 0 or any(t.rank != rank for t in types):
        raise ShapeError(
            f"concat needs values of one rank >= 1, got {_types_str(types)}; expand_dims or "
            "reshape them to one rank first"
        )
    axis = normalize_axis(attrs.get("axis", 0), rank)
    attrs["axis"] = axis
    total: Dim = 0
    for i in range(rank):
        if i == axis:
            continue
        dims = {t.shape[i] for t in types}
        if len(dims) > 1:
            raise ShapeError(
                f"concat along axis {axis}: dimension {i} differs ({_types_str(types)}); "
                "every dimension but the concat axis must agree"
            )
    sizes = [t.shape[axis] for t in types]
    total = sum_dims(sizes)
    shape = tuple(total if i == axis else d for i, d in enumerate(types[0].shape))
    return (c.dtype,) * len(types), TensorType(c.dtype, shape, c.ambiguous)


_register(
    "concat", _concat_rule, lambda a, attrs, out: np.concatenate(a, axis=attrs["axis"]), "any"
)


def _expand_dims_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    axes_in = attrs["axis"]
    axes_in = [axes_in] if isinstance(axes_in, int) else list(axes_in)
    axes = normalize_axes(axes_in, t.rank + len(axes_in))
    attrs["axis"] = axes
    shape: list[Dim] = list(t.shape)
    for a in axes:
        shape.insert(a, 1)
    return (t.dtype,), TensorType(t.dtype, tuple(shape), t.ambiguous)


_register(
    "expand_dims",
    _expand_dims_rule,
    lambda a, attrs, out: np.expand_dims(a[0], attrs["axis"]),
    "any",
)


def _squeeze_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    t = types[0]
    axis = attrs.get("axis")
    axes = (
        tuple(i for i, d in enumerate(t.shape) if d == 1)
        if axis is None
        else normalize_axes(axis, t.rank)
    )
    for a in axes:
        if t.shape[a] != 1:
            raise ShapeError(
                f"cannot squeeze axis {a} of shape {format_shape(t.shape)}: size {t.shape[a]}; "
                "only axes of size 1 can be squeezed"
            )
    attrs["axis"] = axes
    shape = tuple(d for i, d in enumerate(t.shape) if i not in axes)
    return (t.dtype,), TensorType(t.dtype, shape, t.ambiguous)


_register("squeeze", _squeeze_rule, lambda a, attrs, out: np.squeeze(a[0], attrs["axis"]), "any")


def _softmax_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    x = args[0]
    axis = attrs["axis"]
    if x.size == 0:  # nothing to normalize (np.max of an empty axis would raise)
        return x
    with np.errstate(all="ignore"):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return np.asarray(e / np.sum(e, axis=axis, keepdims=True))


def _softmax_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    in_d, out = _elementwise(_FLOAT, to_float=_TO_FLOAT)(p, types, attrs)
    if out.rank == 0:
        raise ShapeError("softmax needs a value of rank >= 1; expand_dims a scalar first")
    attrs["axis"] = normalize_axis(attrs.get("axis", -1), out.rank)
    return in_d, out


_register("softmax", _softmax_rule, _softmax_impl, "floating; integers -> default float")
