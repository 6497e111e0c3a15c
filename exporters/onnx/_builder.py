"""ONNX node builder with per-target legalization (compute in a wider type, or rewrite).

Every helper returns a :class:`V`: an ONNX value name and the graphdsl dtype it holds.
``elementwise`` picks, for an ONNX op, the first dtype that is the operand's own (or an
exact widening of it) and has a kernel on the target, casts in, runs, and casts back.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import ml_dtypes
import numpy as np
from onnx import ModelProto, TensorProto, helper, numpy_helper

from exporters.onnx._carried import CARRIER, round_into
from exporters.onnx._targets import Target
from exporters.onnx._types import FLOAT8, NARROW, onnx_type, storage, type_name
from graphdsl.dtypes import DType, Kind, to_e8m0

if TYPE_CHECKING:
    from exporters.onnx._files import ExternalData

__all__ = ["NARROW", "Builder", "ExportError", "V"]

T = DType

# Value-preserving widenings, in order of preference.
WIDEN: dict[DType, tuple[DType, ...]] = {
    T.bool: (T.uint8, T.int32, T.int64, T.float32),
    T.int8: (T.int16, T.int32, T.int64),
    T.int16: (T.int32, T.int64),
    T.int32: (T.int64,),
    T.int64: (),
    T.uint8: (T.uint16, T.int16, T.int32, T.uint32, T.int64),
    T.uint16: (T.int32, T.uint32, T.int64),
    T.uint32: (T.int64, T.uint64),
    T.uint64: (),
    T.float16: (T.float32, T.float64),
    T.bfloat16: (T.float32, T.float64),
    T.float8_e4m3fn: (T.float16, T.float32),
    T.float8_e5m2: (T.float16, T.float32),
    T.float8_e4m3fnuz: (T.float16, T.float32),
    T.float8_e5m2fnuz: (T.float16, T.float32),
    T.float32: (T.float64,),
    T.float64: (),
}
# Same-width reinterpretations: exact for ops that work modulo 2**bits (add, mul, where...).
BITS: dict[DType, tuple[DType, ...]] = {
    T.uint8: (T.int8,), T.uint16: (T.int16,), T.uint32: (T.int32,), T.uint64: (T.int64,),
    T.int64: (T.uint64,), T.int32: (T.uint32,),
}  # fmt: skip


_V = tuple.__new__  # V(name, dtype) without NamedTuple's Python-level __new__


class ExportError(TypeError):
    """A graph that cannot be exported as asked (names the op, dtype, target and the fix).

    >>> import graphdsl as gd
    >>> from exporters.onnx import export
    >>> g = gd.Graph("c", input_types={"z": gd.TensorType(gd.complex64, (2,))})
    >>> g.output(g.inputs[0] * 2)
    >>> export(g)
    Traceback (most recent call last):
        ...
    exporters.onnx._builder.ExportError: input 'z' has dtype complex64: complex dtypes cannot
    be exported to ONNX for onnxruntime (it cannot load complex tensors); keep complex values
    out of exported graphs
    """


class V(NamedTuple):
    name: str
    dtype: DType


# Where a result holds -0.0 only where an input does (Builder.no_negative_zero): ops that copy
# values of their first input (Relu: max(x, +0.0) is -0.0 only for x = -0.0; MaxPool: the
# window's elements), and sums (x + y is -0.0 only where both are, in every rounding mode
# but toward -inf, which onnxruntime never uses)
_SIGN_COPIES = frozenset({"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten",
                          "Expand", "Tile", "Slice", "Gather", "GatherElements", "GatherND",
                          "MaxPool", "Relu"})  # fmt: skip
_SIGN_RULES = _SIGN_COPIES | {"Add", "Sum"}


def _node_prefix(ctx: object) -> str:
    """The ONNX node name prefix of the nodes lowering graphdsl node ``ctx``: its op and
    source line (run() reads them back from onnxruntime's messages)."""
    op = getattr(ctx, "op", None)
    if op is None:
        return ""
    loc = getattr(ctx, "loc", None)
    return f"{op} at {loc}/" if loc else f"{op}/"


def _no_underflow(src: DType, dst: DType) -> bool:
    """A cast from float ``src`` to float ``dst`` never rounds a non-zero value to zero: every
    magnitude of ``src`` is at least ``dst``'s smallest subnormal."""
    if dst.kind is not Kind.float:
        return True
    return bool(_tiny(dst) <= _tiny(src))


@functools.cache
def _tiny(d: DType) -> float:
    info = ml_dtypes.finfo(d.np)  # type: ignore[no-untyped-call]
    return float(info.smallest_subnormal)


class Builder:
    """Accumulates ONNX nodes and initializers for one graph and one target."""

    def __init__(self, target: Target, *, exact: bool = True, accuracy_level: int = 0) -> None:
        self.target = target
        # False: legalizations that only fix the sign of a zero or a NaN's payload are left
        # out (export(..., exact=False)); lowerings test it where they have one
        self.exact = exact
        self.accuracy_level = accuracy_level  # MatMulNBits' (export(..., accuracy_level=))
        # nodes and initializers are written straight into the model: no copies of either
        self.model = ModelProto()
        self.nodes = self.model.graph.node
        self.initializers = self.model.graph.initializer
        self._consts: dict[tuple[str, tuple[int, ...], bytes], str] = {}
        self._casts: dict[tuple[str, DType], V] = {}
        # one counter for the model: the builders of its nested graphs (If branches, Loop
        # bodies, functions: exporters/onnx/_lower/control.py) share it, names stay unique
        self._counter = itertools.count(1)
        self.context: object = ""  # the graphdsl node being lowered, for error messages
        self._named: object = ""  # the context the node name prefix was made for
        self._prefix = ""
        self._compute: dict[tuple[str, DType, bool, bool], DType] = {}
        self.external: ExternalData | None = None
        # lowerings that emit one ONNX node for several graphdsl nodes (Split, TopK) keep it here
        self.memo: dict[tuple[Any, ...], Any] = {}
        # set by a lowering that reads past a node it made (the exporter then drops the
        # nodes nothing uses)
        self.bypassed = False
        # float values known to hold no -0.0 (constants without one, values converted from
        # integers): select() needs no sign repair when one of them is its first branch
        self.no_negative_zero: set[str] = set()
        # ONNX names the graph gives (inputs, weights): fresh() never makes one of them
        self.reserved: set[str] = set()

    # ------------------------------------------------------------------ basics

    def fresh(self, hint: str) -> str:
        name = f"{hint}_{next(self._counter)}"
        if self.reserved and name in self.reserved:  # the name of an input or a weight
            return self.fresh(hint)
        return name

    def node(
        self, op: str, inputs: Sequence[str], out_dtype: DType, hint: str = "", **attrs: Any
    ) -> V:
        out = self.fresh(hint or op)
        n = self.nodes.add()
        ctx = self.context
        if ctx is not self._named:  # the graphdsl node being lowered: "add at model.py:3/"
            self._named = ctx
            self._prefix = _node_prefix(ctx)
        if self._prefix:  # (its op and line, for onnxruntime's messages; unique with out)
            n.name = self._prefix + out
        n.op_type = op
        n.input.extend(inputs)
        n.output.append(out)
        if attrs:
            n.attribute.extend(helper.make_attribute(k, v) for k, v in sorted(attrs.items()))
        s = self.no_negative_zero
        if (
            s
            and op in _SIGN_RULES
            and (inputs[0] in s if op in _SIGN_COPIES else not s.isdisjoint(inputs))
        ):
            s.add(out)
        return _V(V, (out, out_dtype))

    def const(self, value: Any, dt: DType, hint: str = "c") -> V:
        arr = np.asarray(value, dtype=storage(dt).np if dt not in NARROW else dt.np)
        key = (dt.name, arr.shape, arr.tobytes()) if arr.size <= 64 else None
        if key is not None and key in self._consts:
            return V(self._consts[key], dt)
        name = self.fresh(hint)
        if self.external is not None and arr.nbytes >= 1024:
            self.initializers.append(self.external.tensor(arr, dt, name))
        else:
            self.initializers.add().CopyFrom(_tensor(arr, dt, name))
        if key is not None:
            self._consts[key] = name
        if dt.kind is not Kind.float or not (np.signbit(arr) & (arr == 0)).any():
            self.no_negative_zero.add(name)
        return V(name, dt)

    def int64s(self, values: Sequence[int]) -> str:
        return self.const(np.asarray(values, np.int64), T.int64, "axes").name

    def fail(self, what: str, fix: str) -> ExportError:
        ctx = self.context
        if hasattr(ctx, "op"):
            loc = getattr(ctx, "loc", None)
            ctx = f"{ctx.op} at {loc}" if loc else ctx.op
        return ExportError(f"{ctx}: {what} on target {self.target.name!r}; {fix}")

    # ------------------------------------------------------------------ casts

    def cast(self, v: V, to: DType) -> V:
        """A plain ONNX Cast (wrapping / rounding); cached per (value, dtype)."""
        src, dst = storage(v.dtype), storage(to)
        if src is dst and (to not in CARRIER or v.dtype is to):
            return V(v.name, to)
        key = (v.name, to)
        hit = self._casts.get(key)
        if hit is None:
            if to in CARRIER:
                hit = round_into(self, V(v.name, v.dtype), to)
            elif dst in FLOAT8:
                hit = self._to_float8(v, dst)
            elif not self.target.runs_cast(type_name(src), type_name(dst)):
                hit = self._cast_around(v, src, dst, to)
            else:
                hit = self.node("Cast", [v.name], to, "cast", to=onnx_type(dst))
                if (src in FLOAT8 and dst in (T.float16, T.float32)
                        and self.target.quirk("float8_cast_fusion")):  # fmt: skip
                    # a '+ -0.0' (exact for every value, -0.0 and NaN included) that keeps
                    # onnxruntime's cast optimizers from fusing this Cast with the next one
                    hit = self.node("Add", [hit.name, self.scalar(-0.0, to).name], to)
            if src.kind is not Kind.float or (
                v.name in self.no_negative_zero and _no_underflow(src, dst)
            ):  # an integer converts to +0.0, never -0.0; a tiny negative float may round to it
                self.no_negative_zero.add(hit.name)
            self._casts[key] = hit
        return hit

    def _cast_around(self, v: V, src: DType, dst: DType, to: DType) -> V:
        """A cast the target has no working Cast for, through float32 where that is exact:
        float8 -> double and float8 -> bfloat16 widen exactly (double -> float8 always goes
        through float32: _to_float8)."""
        if src in FLOAT8 and dst in (T.float64, T.bfloat16):
            return self.cast(self.cast(v, T.float32), to)
        raise self.fail(
            f"no Cast kernel from {src.name} to {dst.name}", "cast through float32 first"
        )

    def _to_float8(self, v: V, to: DType) -> V:
        """Round to float8 as ml_dtypes does: overflow gives NaN (e4m3fn) or inf (e5m2).

        onnxruntime 1.31's Cast(saturate=0) gives NaN for e5m2 values in [61440, 65536)
        (they round to inf) and 448 for e4m3fn values in [480, 496) (they round to NaN);
        overflowing values become inf or NaN in float32 first, which it casts right.
        """
        # in float32: ml_dtypes, the reference's converter, rounds float64 (and 64-bit
        # integers) to float32 first (400.00001 -> 400.0, a tie -> 384 in e4m3fn), and CUDA
        # has no double -> float8 Cast that runs
        xf = self._float8_range(self.cast(v, T.float32) if v.dtype is not T.float32 else v, to)
        return self.node("Cast", [xf.name], to, "cast", to=onnx_type(to), saturate=0)

    def _float8_range(self, xf: V, to: DType) -> V:
        """``xf`` with the values that overflow float8 ``to`` made what they round to: +-inf
        for e5m2, NaN for e4m3fn."""
        f = xf.dtype
        mag = self.elementwise("Abs", [xf])
        if to in (T.float8_e4m3fnuz, T.float8_e5m2fnuz):  # no inf: past the top tie, NaN
            edge = 248.0 if to is T.float8_e4m3fnuz else 61440.0
            over = self.elementwise("GreaterOrEqual", [mag, self.scalar(edge, f)],
                                    result_bool=True)  # fmt: skip
            return self.select(over, self.scalar(np.nan, f), xf)
        if to is T.float8_e5m2:
            over = self.elementwise("GreaterOrEqual", [mag, self.scalar(61440.0, f)],
                                    result_bool=True)  # fmt: skip
            neg = self.elementwise("Less", [xf, self.scalar(0.0, f)], result_bool=True)
            inf = self.select(neg, self.scalar(-np.inf, f), self.scalar(np.inf, f))
            return self.select(over, inf, xf)
        # past the midpoint 464 (which ties down to 448) e4m3fn overflows to NaN
        over = self.elementwise("Greater", [mag, self.scalar(464.0, f)], result_bool=True)
        return self.select(over, self.scalar(np.nan, f), xf)

    # ------------------------------------------------------------------ legalization

    def compute_dtype(
        self, key: str, d: DType, *, narrow_in_f32: bool = False, bits: bool = False
    ) -> DType:
        """The dtype to run ONNX op ``key`` in for operands of dtype ``d``."""
        ckey = (key, d, narrow_in_f32, bits)
        hit = self._compute.get(ckey)
        if hit is None:
            hit = self._compute[ckey] = self._choose(key, d, narrow_in_f32, bits)
        return hit

    def _choose(self, key: str, d: DType, narrow_in_f32: bool, bits: bool) -> DType:
        d = storage(d)
        candidates: list[DType] = [d, *WIDEN.get(d, ())]
        if bits:
            candidates += BITS.get(d, ())
        if narrow_in_f32 and d in NARROW:
            candidates = [c for c in candidates if c not in NARROW]
        tgt = self.target
        for c in candidates:
            if tgt.has(key, type_name(c)) and (c is d or self._casts_both_ways(d, c)):
                return c
        # a pair the target does not register runs on the provider behind it (onnxruntime's
        # CPU fallback in a CUDA session: exporters/onnx/_placement.py reports such nodes)
        for c in candidates:
            if tgt.falls_back(key, type_name(c)) and (c is d or self._casts_both_ways(d, c)):
                return c
        raise self.fail(
            f"no kernel for {key} on {d.name} and no exact rewrite through "
            f"{', '.join(c.name for c in candidates[1:]) or 'a wider type'}",
            "cast the operands to a supported dtype explicitly, or export for another target",
        )

    def _casts_both_ways(self, d: DType, c: DType) -> bool:
        a, b = type_name(d), type_name(c)
        return self.target.runs_cast(a, b) and self.target.runs_cast(b, a)

    def elementwise(
        self,
        op: str,
        args: Sequence[V],
        *,
        key: str | None = None,
        result_bool: bool = False,
        narrow_in_f32: bool = False,
        bits: bool = False,
        fixed: Sequence[str] = (),
        out_dtype: DType | None = None,
        **attrs: Any,
    ) -> V:
        """Run ``op`` on ``args`` (same dtype) in a dtype with a kernel; cast the result back.

        ``fixed`` are leading ONNX inputs passed through unchanged (Where's condition).
        """
        d = args[0].dtype
        ckey = (key or op, d, narrow_in_f32, bits)
        cd = self._compute.get(ckey)
        if cd is None:
            cd = self._compute[ckey] = self._choose(*ckey)
        xs = [*fixed]
        for a in args:
            xs.append(a.name if a.dtype is cd else self.cast(a, cd).name)
        if result_bool:
            return self.node(op, xs, T.bool, **attrs)
        out = self.node(op, xs, cd, **attrs) if attrs else self.node(op, xs, cd)
        want = out_dtype or d
        return out if want is cd else self.cast(out, want)

    def select(self, cond: V, x: V, y: V) -> V:
        """``Where(cond, x, y)``, legalized (Where is exact under widening and reinterpretation).

        onnxruntime's float Where (1.31 and 1.32, every float type, measured) gives +0.0 where
        it picks a -0.0 from its first branch; from its second branch it copies exactly, NaN
        payloads and -0.0 included. So: a first branch that holds no -0.0 (a constant, or a
        value converted from an integer) is one Where; a second branch that holds none swaps
        places with it (Where(not cond, y, x)); otherwise the result is multiplied by -1 where
        cond holds, x is -0.0 (x == 0 and 1 / x < 0) and the result is +0.0 (1 / r > 0).
        """
        if storage(x.dtype).kind is not Kind.float or not self.exact:
            return self.elementwise("Where", [x, y], fixed=[cond.name], bits=True)
        if x.name in self.no_negative_zero:
            r = self.elementwise("Where", [x, y], fixed=[cond.name], bits=True)
            if y.name in self.no_negative_zero:
                self.no_negative_zero.add(r.name)  # a choice between two such values
            return r
        if y.name in self.no_negative_zero:
            not_cond = self.node("Not", [cond.name], T.bool)
            return self.elementwise("Where", [y, x], fixed=[not_cond.name], bits=True)
        r = self.elementwise("Where", [x, y], fixed=[cond.name], bits=True)
        f = T.float32 if x.dtype in NARROW else storage(x.dtype)
        xf = self.cast(x, f)
        zero = self.scalar(0.0, f)
        inv = self.node("Div", [self.scalar(1.0, f).name, xf.name], f)
        negative_zero = self.node(
            "And", [self.node("Equal", [xf.name, zero.name], T.bool).name,
                    self.node("Less", [inv.name, zero.name], T.bool).name], T.bool,
        )  # fmt: skip
        rf = self.cast(r, f)
        # where the answer is x's -0.0 but r holds +0.0 (a backend whose Where copies
        # exactly, such as onnx's reference evaluator, keeps -0.0: no flip there)
        positive = self.node(
            "Greater", [self.node("Div", [self.scalar(1.0, f).name, rf.name], f).name,
                        zero.name], T.bool,
        )  # fmt: skip
        lost = self.node(
            "And", [self.node("And", [cond.name, negative_zero.name], T.bool).name,
                    positive.name], T.bool,
        )  # fmt: skip
        sign = self.node("Where", [lost.name, self.scalar(-1.0, f).name,
                                   self.scalar(1.0, f).name], f)  # fmt: skip
        return self.cast(self.node("Mul", [rf.name, sign.name], f), x.dtype)

    def reduce(
        self,
        op: str,
        x: V,
        axes: Sequence[int],
        out: DType,
        keepdims: int,
        sizes: Sequence[int | str] | None = None,
    ) -> V:
        """ONNX ``op`` (ReduceSum, ReduceMax, ...) of ``x`` over ``axes`` (of ``sizes``, where
        known). Where the target's reductions fail over an empty axis (CUDA's), an axis not
        known to be non-empty gets one identity element first (-0.0 or 0 for a sum, 1 for a
        product, the lowest or highest value for max and min: the result is the same), and a
        mean is that sum divided by the element count (0 / 0: NaN, as the reference)."""
        axes = list(axes)
        guard = self.target.quirk("empty_reduction_fails") and (
            sizes is None or not all(isinstance(n, int) and n > 0 for n in sizes)
        )
        if not guard:
            return self.node(op, [x.name, self.int64s(axes)], out, keepdims=keepdims)
        count = None
        if op == "ReduceMean":
            shape = self.node("Shape", [x.name], T.int64).name
            sizes_of = self.node("Gather", [shape, self.int64s(axes)], T.int64).name
            count = self.cast(self.node("ReduceProd", [sizes_of, self.int64s([0])], T.int64,
                                        keepdims=0), out)  # fmt: skip
            op = "ReduceSum"
        padded = x
        for axis in axes:
            padded = self._append_identity(op, padded, axis)
        r = self.node(op, [padded.name, self.int64s(axes)], out, keepdims=keepdims)
        if count is not None:
            r = self.node("Div", [r.name, count.name], out)
        return r

    def _append_identity(self, op: str, x: V, axis: int) -> V:
        """``x`` with one more element along ``axis``: the identity of reduction ``op``."""
        d = storage(x.dtype)
        if op == "ReduceSum":
            value: Any = -0.0 if d.kind is Kind.float else 0
        elif op == "ReduceProd":
            value = 1
        elif op in ("ReduceMax", "ReduceMin"):
            low = op == "ReduceMax"
            if d.kind is Kind.float:
                value = -np.inf if low else np.inf
            else:
                value = d.min if low else d.max
        else:
            raise self.fail(f"no identity element for {op}", "reduce over non-empty axes")
        shape = self.node("Shape", [x.name], T.int64).name
        one = self.node("ScatterElements", [shape, self.int64s([axis]), self.int64s([1])],
                        T.int64)  # fmt: skip
        slab = self.node("Expand", [self.scalar(value, x.dtype).name, one.name], x.dtype)
        return self.node("Concat", [x.name, slab.name], x.dtype, axis=axis)

    def signbit(self, x: V) -> V:
        """True where ``x`` is negative, -inf or -0.0 (x < 0 or 1 / x < 0; NaN gives False)."""
        one, zero = self.scalar(1.0, x.dtype), self.scalar(0.0, x.dtype)
        inv = self.node("Div", [one.name, x.name], x.dtype)
        negative = self.node("Less", [x.name, zero.name], T.bool)
        negative_zero = self.node("Less", [inv.name, zero.name], T.bool)
        return self.node("Or", [negative.name, negative_zero.name], T.bool)

    def scalar(self, value: Any, dt: DType) -> V:
        if dt is T.float8_e8m0fnu:  # the reference's rounding, whichever ml_dtypes
            return self.const(to_e8m0(np.asarray(value)), dt)
        return self.const(np.asarray(value).astype(storage(dt).np if dt not in NARROW else dt.np),
                          dt)  # fmt: skip


def _tensor(arr: np.ndarray, dt: DType, name: str) -> TensorProto:
    if dt is T.bfloat16 or dt in FLOAT8:
        raw = arr.astype(dt.np).view(np.uint16 if dt is T.bfloat16 else np.uint8)
        return helper.make_tensor(name, onnx_type(dt), arr.shape, raw.tobytes(), raw=True)
    return numpy_helper.from_array(arr.astype(storage(dt).np, order="C"), name)
