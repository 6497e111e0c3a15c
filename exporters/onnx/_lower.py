"""The lowering table: one function per graphdsl op, producing ONNX nodes.

Each function gets the builder, the graphdsl node, and its operands as :class:`V` values
already of the node's operand dtypes (the ``implicit_cast`` pass guarantees that; the
caller asserts it). Results equal ``graphdsl.evaluate``: see each rewrite's comment.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

from exporters.onnx._builder import NARROW, Builder, V
from exporters.onnx._types import storage
from graphdsl.dtypes import DType, Kind
from graphdsl.graph import Symbol
from graphdsl.shapes import derived_dim, dim_terms

__all__ = ["LOWER", "SymbolicDims"]

T = DType
Lowering = Callable[[Builder, Symbol, list[V], "SymbolicDims"], V]
LOWER: dict[str, Lowering] = {}


class SymbolicDims:
    """Runtime values of symbolic dimensions, taken from the graph inputs' shapes."""

    def __init__(self, b: Builder, sources: dict[str, tuple[str, int]]) -> None:
        self.b = b
        self.sources = sources
        self._cache: dict[str, str] = {}

    def shape_tensor(self, dims: tuple[int | str, ...]) -> str:
        """A 1-D int64 tensor holding ``dims`` (symbolic names and dimensions derived from
        them, such as ``batch*2``, resolved at run time)."""
        if all(isinstance(d, int) for d in dims):
            return self.b.int64s([int(d) for d in dims])
        parts = []
        for d in dims:
            if isinstance(d, int):
                parts.append(self.b.int64s([d]))
            else:
                parts.append(self._dim(d))
        return self.b.node("Concat", parts, T.int64, axis=0).name

    def _dim(self, name: str) -> str:
        hit = self._cache.get(name)
        if hit is None and name not in self.sources:
            hit = self._derived(name)
        if hit is None:
            if name not in self.sources:
                raise self.b.fail(
                    f"the symbolic dimension {name!r} is not a dimension of any graph input",
                    "use a concrete size or a dimension name that an input has",
                )
            inp, axis = self.sources[name]
            shape = self.b.node("Shape", [inp], T.int64).name
            hit = self.b.node("Gather", [shape, self.b.int64s([axis])], T.int64, axis=0).name
            self._cache[name] = hit
        return hit

    def _derived(self, d: str) -> str | None:
        """A dimension such as ``batch*2``, ``b*3/2`` or ``n+m`` from its names; None for a
        plain name."""
        terms = dim_terms(d)
        if len(terms) > 1:
            parts = [self._dim(str(t)) if isinstance(t, str) else self.b.int64s([t])
                     for t in (_term_dim(c, n) for c, n in terms)]  # fmt: skip
            value = parts[0]
            for part in parts[1:]:
                value = self.b.node("Add", [value, part], T.int64).name
            self._cache[d] = value
            return value
        coef, names = terms[0]
        if not names or names == {d: 1}:
            return None
        up = [self._dim(n) for n, k in names.items() for _ in range(k)]
        down = [self._dim(n) for n, k in names.items() for _ in range(-k)]
        value = self.b.int64s([coef.numerator])
        for part in up:
            value = self.b.node("Mul", [value, part], T.int64).name
        divisor = coef.denominator
        for part in down:
            value = self.b.node("Div", [value, part], T.int64).name
        if divisor != 1:  # truncates: a size that is not whole fails in Reshape, as it should
            value = self.b.node("Div", [value, self.b.int64s([divisor])], T.int64).name
        self._cache[d] = value
        return value


def _term_dim(coef: Fraction, names: Counter[str]) -> int | str:
    """One term of a sum of products, as a dimension (``n*2``, ``3``)."""
    num = [n for n, k in names.items() for _ in range(k)]
    den = [n for n, k in names.items() for _ in range(-k)]
    return derived_dim([*num, coef.numerator], [*den, coef.denominator])


def _register(*names: str) -> Callable[[Lowering], Lowering]:
    def deco(fn: Lowering) -> Lowering:
        for n in names:
            LOWER[n] = fn
        return fn

    return deco


def _simple(onnx_op: str, *, narrow: bool = True, bits: bool = False) -> Lowering:
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        return b.elementwise(onnx_op, args, narrow_in_f32=narrow, bits=bits)

    return lower


# ---------------------------------------------------------------- arithmetic
# Integers: ONNX Add/Sub/Mul wrap; a widened computation cast back wraps the same way.
LOWER["add"] = _simple("Add", bits=True)
LOWER["sub"] = _simple("Sub", bits=True)
LOWER["mul"] = _simple("Mul", bits=True)
LOWER["div"] = _simple("Div")  # floats only (the DSL makes integer division a float op)
for _n, _o in (("exp", "Exp"), ("log", "Log"), ("sqrt", "Sqrt"), ("sin", "Sin"),
               ("cos", "Cos"), ("tanh", "Tanh")):  # fmt: skip
    LOWER[_n] = _simple(_o)


@_register("sigmoid")
def _sigmoid(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # e = exp(-|x|); x >= 0: 1 / (1 + e), else e / (1 + e), as the reference computes it
    # (onnxruntime's Sigmoid kernel is an approximation, off by ~1e-5 relative)
    out = args[0].dtype
    f = T.float32 if out in NARROW else out
    x = b.cast(args[0], f)
    e = b.elementwise("Exp", [b.elementwise("Neg", [b.elementwise("Abs", [x])])])
    one = b.scalar(1.0, f)
    denom = b.elementwise("Add", [one, e])
    pos = b.elementwise("GreaterOrEqual", [x, b.scalar(0.0, f)], result_bool=True)
    num = b.select(pos, one, e)
    return b.cast(b.elementwise("Div", [num, denom]), out)


def _max_min(onnx_op: str) -> Lowering:
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        x, y = args
        if x.dtype.kind is Kind.float:
            # NaN propagates and a tie goes to y (so max(-0.0, 0.0) is 0.0), as the
            # reference; onnxruntime's float32 Max returns x on a tie
            f = T.float32 if x.dtype in NARROW else storage(x.dtype)
            xf, yf = b.cast(x, f), b.cast(y, f)
            first = b.elementwise("Greater" if onnx_op == "Max" else "Less", [xf, yf],
                                  result_bool=True)  # fmt: skip
            nan = b.node("IsNaN", [xf.name], T.bool)
            take_x = b.node("Or", [first.name, nan.name], T.bool)
            return b.cast(b.select(take_x, xf, yf), x.dtype)
        if storage(x.dtype) is T.int64:
            # onnxruntime 1.31's Max/Min on int64 are wrong for |x| in [2**31, 2**41)
            lt = b.elementwise("Less", args, result_bool=True)
            return b.select(lt, y, x) if onnx_op == "Max" else b.select(lt, x, y)
        return b.elementwise(onnx_op, args)

    return lower


LOWER["maximum"] = _max_min("Max")
LOWER["minimum"] = _max_min("Min")


@_register("sign")
def _sign(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    if storage(x.dtype) is T.int64:  # Sign on int64 is wrong for |x| in [2**31, 2**41)
        zero = b.scalar(0, T.int64)
        pos = b.cast(b.elementwise("Greater", [x, zero], result_bool=True), T.int64)
        neg = b.cast(b.elementwise("Less", [x, zero], result_bool=True), T.int64)
        return b.cast(b.elementwise("Sub", [pos, neg]), x.dtype)
    return b.elementwise("Sign", args, narrow_in_f32=True)


@_register("abs")
def _abs(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    if args[0].dtype.kind in (Kind.unsigned, Kind.bool):
        return args[0]
    return b.elementwise("Abs", args, narrow_in_f32=True)


@_register("negative")
def _negative(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    if x.dtype.kind is Kind.unsigned:  # numpy wraps: -x == 0 - x
        return b.elementwise("Sub", [b.scalar(0, x.dtype), x], bits=True)
    return b.elementwise("Neg", args, narrow_in_f32=True)


@_register("relu")
def _relu(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x = args[0]
    if x.dtype.kind is Kind.unsigned:
        return x
    if storage(x.dtype) is T.int64:  # no int64 Relu kernel, and int64 Max is broken
        zero = b.scalar(0, x.dtype)
        return b.select(b.elementwise("Less", [x, zero], result_bool=True), zero, x)
    if x.dtype.kind is not Kind.float:
        return b.elementwise("Relu", args)
    # onnxruntime's Relu passes -0.0 through; max(x, 0) is +0.0 there (ONNX's reference):
    # adding +0.0 turns -0.0 into +0.0 and changes nothing else
    f = T.float32 if x.dtype in NARROW else storage(x.dtype)
    r = b.elementwise("Relu", [b.cast(x, f)])
    return b.cast(b.node("Add", [r.name, b.scalar(0.0, f).name], f), x.dtype)


def _rounding(onnx_op: str) -> Lowering:
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        if args[0].dtype.kind is not Kind.float:
            return args[0]  # integers are unchanged
        return b.elementwise(onnx_op, args, narrow_in_f32=True)

    return lower


LOWER["floor"] = _rounding("Floor")
LOWER["ceil"] = _rounding("Ceil")
LOWER["round"] = _rounding("Round")  # half to even, as numpy.rint


# ---------------------------------------------------------------- comparisons and logic


def _compare(onnx_op: str, negate: bool = False) -> Lowering:
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        r = b.elementwise(onnx_op, args, result_bool=True, narrow_in_f32=True)
        return b.node("Not", [r.name], T.bool) if negate else r

    return lower


LOWER["equal"] = _compare("Equal")
LOWER["not_equal"] = _compare("Equal", negate=True)
LOWER["less"] = _compare("Less")
LOWER["less_equal"] = _compare("LessOrEqual")
LOWER["greater"] = _compare("Greater")
LOWER["greater_equal"] = _compare("GreaterOrEqual")
for _n, _o in (("logical_and", "And"), ("logical_or", "Or"), ("logical_xor", "Xor"),
               ("logical_not", "Not")):  # fmt: skip
    LOWER[_n] = _simple(_o)


def _bitwise(bool_op: str, int_op: str) -> Lowering:
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        if args[0].dtype is T.bool:
            return b.elementwise(bool_op, args)
        return b.elementwise(int_op, args, bits=True)

    return lower


LOWER["bitwise_and"] = _bitwise("And", "BitwiseAnd")
LOWER["bitwise_or"] = _bitwise("Or", "BitwiseOr")
LOWER["bitwise_xor"] = _bitwise("Xor", "BitwiseXor")
LOWER["bitwise_not"] = _bitwise("Not", "BitwiseNot")


@_register("where")
def _where(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return b.select(args[0], args[1], args[2])


# ---------------------------------------------------------------- division family


def _int_divmod(b: Builder, a: V, d: V) -> tuple[V, V]:
    """numpy floor division and modulo for integers, without the ONNX traps.

    ONNX Div truncates and errors (or traps) on zero and on INT_MIN / -1; numpy floors,
    gives 0 for division by zero and wraps INT_MIN // -1 to INT_MIN.
    """
    t = a.dtype
    signed = t.kind is Kind.signed
    zero = b.elementwise("Equal", [d, b.scalar(0, t)], result_bool=True)
    bad = zero
    if signed:
        m1 = b.elementwise("Equal", [d, b.scalar(-1, t)], result_bool=True)
        bad = b.node("Or", [zero.name, m1.name], T.bool)
    safe = b.select(bad, b.scalar(1, t), d)
    q = b.elementwise("Div", [a, safe])  # truncates
    # fmod=0 is integer modulo with the divisor's sign (numpy's); fmod=1 goes through double
    r = b.elementwise("Mod", [a, safe], fmod=0)
    if signed:
        nonzero = b.node(
            "Not", [b.elementwise("Equal", [r, b.scalar(0, t)], result_bool=True).name], T.bool
        )
        sign_differs = b.node(
            "Xor",
            [b.elementwise("Less", [a, b.scalar(0, t)], result_bool=True).name,
             b.elementwise("Less", [safe, b.scalar(0, t)], result_bool=True).name],
            T.bool,
        )  # fmt: skip
        adjust = b.node("And", [nonzero.name, sign_differs.name], T.bool)
        q = b.elementwise("Sub", [q, b.cast(adjust, t)], bits=True)
        q = b.select(m1, b.elementwise("Neg", [a]), q)  # INT_MIN // -1 wraps to INT_MIN
    zero_t = b.scalar(0, t)
    return b.select(zero, zero_t, q), b.select(zero, zero_t, r)


def _float_divmod(b: Builder, a: V, d: V) -> tuple[V, V]:
    """numpy's npy_divmod for floats: fmod, then adjust to the divisor's sign and snap."""
    out = a.dtype
    f = T.float32 if out in NARROW else storage(out)
    a, d = b.cast(a, f), b.cast(d, f)
    m = b.elementwise("Mod", [a, d], key="Mod_fmod", fmod=1)
    zero, one, half = b.scalar(0, f), b.scalar(1, f), b.scalar(0.5, f)
    nonzero = b.node("Not", [b.elementwise("Equal", [m, zero], result_bool=True).name], T.bool)
    sign_differs = b.node(
        "Xor",
        [b.elementwise("Less", [d, zero], result_bool=True).name,
         b.elementwise("Less", [m, zero], result_bool=True).name],
        T.bool,
    )  # fmt: skip
    adjust = b.node("And", [nonzero.name, sign_differs.name], T.bool)
    mod = b.select(adjust, b.elementwise("Add", [m, d]), m)
    div = b.elementwise("Div", [b.elementwise("Sub", [a, m]), d])
    div = b.select(adjust, b.elementwise("Sub", [div, one]), div)
    floor = b.elementwise("Floor", [div])
    snap = b.elementwise("Greater", [b.elementwise("Sub", [div, floor]), half], result_bool=True)
    floor = b.select(snap, b.elementwise("Add", [floor, one]), floor)
    # zeros carry numpy's signs: a zero remainder takes the divisor's sign, a zero quotient
    # that of a / b (1 / x < 0 tells -0.0 from 0.0)
    neg_zero = b.scalar(-0.0, f)
    mod = b.select(
        b.elementwise("Equal", [mod, zero], result_bool=True),
        b.select(b.signbit(d), neg_zero, zero),
        mod,
    )
    quotient = b.elementwise("Div", [a, d])
    floor = b.select(
        b.elementwise("Equal", [div, zero], result_bool=True),
        b.select(b.signbit(quotient), neg_zero, zero),
        floor,
    )
    by_zero = b.elementwise("Equal", [d, zero], result_bool=True)
    floor = b.select(by_zero, quotient, floor)
    return b.cast(floor, out), b.cast(mod, out)



@_register("floordiv")
def _floordiv(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    fn = _float_divmod if args[0].dtype.kind is Kind.float else _int_divmod
    return fn(b, args[0], args[1])[0]


@_register("mod")
def _mod(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    fn = _float_divmod if args[0].dtype.kind is Kind.float else _int_divmod
    return fn(b, args[0], args[1])[1]


@_register("pow")
def _pow(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    base, exp = args
    t = base.dtype
    if t.kind is Kind.float:
        return b.elementwise("Pow", args, narrow_in_f32=True)
    # Exact integer power, wrapping: square-and-multiply over the exponent's bits
    # (ONNX Pow on integers goes through floating point and saturates).
    signed = t.kind is Kind.signed
    zero, one, two = b.scalar(0, t), b.scalar(1, t), b.scalar(2, t)
    neg = b.elementwise("Less", [exp, zero], result_bool=True) if signed else None
    e = b.select(neg, zero, exp) if neg is not None else exp
    result, sq = one, base
    for _ in range(t.bits - (1 if signed else 0)):
        half = b.elementwise("Div", [e, two])
        bit = b.elementwise(
            "Equal", [b.elementwise("Sub", [e, b.elementwise("Mul", [half, two], bits=True)],
                                    bits=True), one],
            result_bool=True,
        )  # fmt: skip
        result = b.select(bit, b.elementwise("Mul", [result, sq], bits=True), result)
        sq = b.elementwise("Mul", [sq, sq], bits=True)
        e = half
    if neg is None:
        return result
    # negative exponent: 1 / base**n truncated toward zero
    inv = b.select(b.elementwise("Equal", [base, one], result_bool=True), one, zero)
    parity = b.elementwise("Mod", [exp, two], fmod=0)  # 0 or 1, exact
    odd = b.elementwise("Equal", [parity, one], result_bool=True)
    minus_one = b.scalar(-1, t)
    inv = b.select(
        b.elementwise("Equal", [base, minus_one], result_bool=True),
        b.select(odd, minus_one, one),
        inv,
    )
    return b.select(neg, inv, result)


# ---------------------------------------------------------------- matmul and reductions


_SAME_WIDTH_SIGNED = {T.uint32: T.int32, T.uint64: T.int64}


@_register("matmul")
def _matmul(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    signed = _SAME_WIDTH_SIGNED.get(storage(args[0].dtype))
    if signed is not None:
        # onnxruntime's uint32/uint64 MatMul fail on an empty contraction (they write their
        # zeros as int32/int64); signed products and sums wrap the same way: exact
        r = b.elementwise("MatMul", [b.cast(a, signed) for a in args], bits=True)
        return b.cast(r, args[0].dtype)
    return b.elementwise("MatMul", args, narrow_in_f32=True, bits=True)


def _axes(node: Symbol) -> tuple[int, ...]:
    axes: tuple[int, ...] = node.attrs["axis"]
    return axes


def _keepdims(node: Symbol) -> int:
    return int(bool(node.attrs.get("keepdims")))


def _reduce_axes(b: Builder, onnx_op: str, x: V, axes: tuple[int, ...], keep: int) -> V:
    cd = b.compute_dtype(onnx_op, x.dtype, narrow_in_f32=True)
    xc = b.cast(x, cd)
    r = b.node(onnx_op, [xc.name, b.int64s(axes)], cd, keepdims=keep)
    return b.cast(r, x.dtype)


def _extremum(onnx_op: str) -> Lowering:
    # Over an empty set ONNX gives the compute dtype's identity (-inf, or the lowest integer
    # for ReduceMax), which the reference gives in the value's own dtype: a value computed
    # in a wider dtype is clamped to its own dtype's range first (exact for non-empty sets).
    lowest = onnx_op == "ReduceMax"

    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        x = args[0]
        axes = _axes(node)
        if not axes:
            return x
        keep = _keepdims(node)
        d = storage(x.dtype)
        if d is T.bool:  # onnxruntime's bool ReduceMax/Min fail on an empty set
            return b.cast(_reduce_axes(b, onnx_op, b.cast(x, T.uint8), axes, keep), T.bool)
        if d is T.uint32:  # exact in float64; int64 ReduceMax/Min are wrong on onnxruntime 1.31
            r = _reduce_axes(b, onnx_op, b.cast(x, T.float64), axes, keep)
            return b.cast(_clamp(b, r, d, lowest), x.dtype)
        if d in (T.int64, T.uint64):
            xi = b.cast(x, T.int64)
            offset = b.scalar(np.iinfo(np.int64).min, T.int64)
            if d is T.uint64:  # order-preserving map: u - 2**63 (a wrapping add of INT64_MIN)
                xi = b.elementwise("Add", [xi, offset])
            init = np.iinfo(np.int64).min if lowest else np.iinfo(np.int64).max
            take = "Less" if lowest else "Greater"
            r = _scan_reduce(b, node, xi, axes, keep, take, init)
            if d is T.uint64:
                r = b.elementwise("Sub", [r, offset])
            return b.cast(r, x.dtype)
        if x.dtype.kind is not Kind.float:
            cd = b.compute_dtype(onnx_op, x.dtype, narrow_in_f32=True)
            r = b.node(onnx_op, [b.cast(x, cd).name, b.int64s(axes)], cd, keepdims=keep)
            return b.cast(_clamp(b, r, d, lowest) if cd is not d else r, x.dtype)
        r = _reduce_axes(b, onnx_op, x, axes, keep)
        # onnxruntime's ReduceMax/Min skip NaN; numpy propagates it
        nan = b.cast(b.node("IsNaN", [b.cast(x, T.float32 if x.dtype in NARROW else x.dtype).name],
                            T.bool), T.uint8)  # fmt: skip
        any_nan = _reduce_axes(b, "ReduceMax", nan, axes, keep)
        return b.select(b.cast(any_nan, T.bool), b.scalar(np.nan, x.dtype), r)

    return lower


def _clamp(b: Builder, r: V, d: DType, lowest: bool) -> V:
    """``r`` (of a wider dtype) raised to ``d.min`` (``lowest``) or lowered to ``d.max``."""
    bound = b.scalar(d.min if lowest else d.max, r.dtype)
    out = b.elementwise("Less" if lowest else "Greater", [r, bound], result_bool=True)
    return b.select(out, bound, r)


LOWER["max"] = _extremum("ReduceMax")
LOWER["min"] = _extremum("ReduceMin")


def _reduce(onnx_op: str) -> Lowering:
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        axes = _axes(node)
        if not axes:
            return args[0]
        return _reduce_axes(b, onnx_op, args[0], axes, _keepdims(node))

    return lower


@_register("mean")
def _mean(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, axes, keep = args[0], _axes(node), _keepdims(node)
    if not axes:
        return x
    sizes = [node.inputs[0].shape[a] for a in axes]
    if all(isinstance(n, int) and n > 0 for n in sizes):
        return _reduce_axes(b, "ReduceMean", x, axes, keep)
    # ONNX's ReduceMean of an empty set is 0; the reference's is NaN (numpy's): multiply by
    # n / n, which is 1 (exact) unless the reduced element count n is 0 at run time
    cd = b.compute_dtype("ReduceMean", x.dtype, narrow_in_f32=True)
    r = b.node("ReduceMean", [b.cast(x, cd).name, b.int64s(axes)], cd, keepdims=keep)
    shape = b.node("Shape", [b.cast(x, cd).name], T.int64).name
    count = b.node("Squeeze", [_dims_product(b, shape, axes)], T.int64)  # a scalar: the
    n = b.cast(count, cd)  # product must not raise a rank-0 result's rank
    one_or_nan = b.node("Div", [n.name, n.name], cd)
    return b.cast(b.node("Mul", [r.name, one_or_nan.name], cd), x.dtype)


def _dims_product(b: Builder, shape: str, axes: Sequence[int]) -> str:
    """A 1-element int64 tensor: the product of ``shape``'s dimensions at ``axes`` (a chain
    of Mul: the CUDA provider has no int64 ReduceProd)."""
    parts = [b.node("Slice", [shape, b.int64s([a]), b.int64s([a + 1])], T.int64).name
             for a in axes]  # fmt: skip
    if not parts:
        return b.int64s([1])
    product = parts[0]
    for part in parts[1:]:
        product = b.node("Mul", [product, part], T.int64).name
    return product


def _move_axes_last(b: Builder, x: V, rank: int, axes: tuple[int, ...]) -> tuple[V, str]:
    """Transpose reduced axes to the end and flatten them: (..., K); also the kept shape."""
    kept = [i for i in range(rank) if i not in axes]
    perm = kept + list(axes)
    xt = b.node("Transpose", [x.name], x.dtype, perm=perm) if perm != list(range(rank)) else x
    shape = b.node("Shape", [xt.name], T.int64).name
    kept_shape = b.node("Slice", [shape, b.int64s([0]), b.int64s([len(kept)])], T.int64).name
    # the reduced size explicitly: a -1 cannot be inferred when other dimensions are 0
    size = _dims_product(b, shape, range(len(kept), rank))
    flat_shape = b.node("Concat", [kept_shape, size], T.int64, axis=0).name
    return b.node("Reshape", [xt.name, flat_shape], x.dtype), kept_shape


@_register("sum")
def _sum(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, axes, keep = args[0], _axes(node), _keepdims(node)
    if not axes:
        return x
    if x.dtype.kind is Kind.float:
        return _reduce_axes(b, "ReduceSum", x, axes, keep)
    # Integers wrap in numpy; ONNX ReduceSum saturates (and int64 goes through double).
    # A MatMul with a ones vector in int64 wraps exactly; the cast back wraps to the type.
    acc = T.int64
    xi = b.cast(x, acc)
    if not b.target.has("MatMul", "INT64"):
        # CUDA has no integer MatMul; its int64 ReduceSum accumulates in int64 (not checked
        # on a GPU here: the CPU kernel's clamping is why MatMul is used where it exists)
        r = b.node("ReduceSum", [xi.name, b.int64s(axes)], acc, keepdims=keep)
        return b.cast(r, x.dtype)
    rank = node.inputs[0].rank
    flat, _ = _move_axes_last(b, xi, rank, axes)
    k = b.node("Shape", [flat.name], T.int64, start=-1).name
    ones = b.node("Expand", [b.scalar(1, acc).name, k], acc)
    total = b.elementwise("MatMul", [flat, ones], bits=True)
    if keep:
        total = b.node("Unsqueeze", [total.name, b.int64s(axes)], acc)
    return b.cast(total, x.dtype)


@_register("prod")
def _prod(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    x, axes, keep = args[0], _axes(node), _keepdims(node)
    if not axes:
        return x
    if x.dtype.kind is Kind.float:
        return _reduce_axes(b, "ReduceProd", x, axes, keep)
    # Integer products wrap in numpy; ONNX ReduceProd saturates. Scan multiplies exactly.
    r = _scan_reduce(b, node, b.cast(x, T.int64), axes, keep, "Mul", 1)
    return b.cast(r, x.dtype)


def _scan_reduce(
    b: Builder, node: Symbol, x: V, axes: tuple[int, ...], keep: int, op: str, init: int
) -> V:
    """Fold ``op`` over the reduced axes of an int64 value with a Scan, exactly.

    ``op`` is "Mul" (acc * x), or "Less"/"Greater" (take x where acc op x: max/min).
    """
    from onnx import helper

    from exporters.onnx._types import onnx_type

    acc = T.int64
    rank = node.inputs[0].rank
    flat, kept_shape = _move_axes_last(b, x, rank, axes)
    nd = rank - len(axes)
    front = b.node("Transpose", [flat.name], acc, perm=[nd, *range(nd)])
    start = b.node("Expand", [b.scalar(init, acc).name, kept_shape], acc)
    # onnxruntime's Scan fails on zero iterations (an empty reduced axis): one more step
    # with the identity makes at least one and changes nothing
    first = b.node("Unsqueeze", [start.name, b.int64s([0])], acc)
    front = b.node("Concat", [first.name, front.name], acc, axis=0)
    if op == "Mul":
        body_nodes = [helper.make_node("Mul", ["acc_in", "x_i"], ["acc_out"])]
    else:
        body_nodes = [helper.make_node(op, ["acc_in", "x_i"], ["take"]),
                      helper.make_node("Where", ["take", "x_i", "acc_in"],
                                       ["acc_out"])]  # fmt: skip
    body_nodes.append(helper.make_node("Identity", ["acc_out"], ["scan_out"]))
    t = onnx_type(acc)
    body = helper.make_graph(
        body_nodes,
        f"scan_{op.lower()}",
        [helper.make_tensor_value_info("acc_in", t, None),
         helper.make_tensor_value_info("x_i", t, None)],
        [helper.make_tensor_value_info("acc_out", t, None),
         helper.make_tensor_value_info("scan_out", t, None)],
    )  # fmt: skip
    out = b.fresh("scan")
    scan = helper.make_node(
        "Scan", [start.name, front.name], [out, b.fresh("scan_seq")], num_scan_inputs=1, body=body
    )
    b.nodes.add().CopyFrom(scan)
    total = V(out, acc)
    if keep:
        total = b.node("Unsqueeze", [total.name, b.int64s(axes)], acc)
    return total


@_register("softmax")
def _softmax(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return b.elementwise("Softmax", args, narrow_in_f32=True, axis=int(node.attrs["axis"]))


# ---------------------------------------------------------------- shape ops (exact)


@_register("reshape")
def _reshape(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # to the result's type: the target with its -1 resolved by the type rule (neither ONNX
    # nor numpy can infer a -1 beside zero elements); allowzero=1: a 0 is a zero-length
    # dimension, as in numpy (ONNX would copy the input's)
    shape = dims.shape_tensor(node.type.shape)
    return _with_shape(b, "Reshape", args[0], shape, allowzero=1)


def _with_shape(b: Builder, op: str, x: V, shape: str, **attrs: int) -> V:
    cd = b.compute_dtype(op, x.dtype, bits=True)
    r = b.node(op, [b.cast(x, cd).name, shape], cd, "", **attrs)
    return b.cast(r, x.dtype)


@_register("broadcast_to")
def _broadcast_to(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return _with_shape(b, "Expand", args[0], dims.shape_tensor(tuple(node.attrs["shape"])))


@_register("transpose")
def _transpose(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return b.elementwise("Transpose", args, bits=True, perm=list(node.attrs["perm"]))


@_register("concat")
def _concat(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return b.elementwise("Concat", args, bits=True, axis=int(node.attrs["axis"]))


@_register("expand_dims")
def _expand_dims(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return _with_shape(b, "Unsqueeze", args[0], b.int64s(node.attrs["axis"]))


@_register("squeeze")
def _squeeze(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    axes = node.attrs["axis"]
    if not axes:
        return args[0]
    return _with_shape(b, "Squeeze", args[0], b.int64s(axes))


# ---------------------------------------------------------------- casts


@_register("cast")
def _cast(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    return convert(b, args[0], node.attrs["to"])


def convert(b: Builder, x: V, to: DType) -> V:
    """graphdsl's conversion semantics: float -> integer truncates and saturates, NaN -> 0."""
    src = x.dtype
    if src in (T.float8_e4m3fn, T.float8_e5m2):
        x = b.cast(x, T.float32)  # exact; onnxruntime's float8 -> bool reads -0 as True
        src = T.float32
    if not (src.kind is Kind.float and to.is_integer):
        return b.cast(x, to)
    f = T.float32 if src in NARROW else storage(src)
    xf = b.cast(x, f)
    hi, lo = b.scalar(float(to.max), f), b.scalar(float(to.min), f)
    nan = b.node("IsNaN", [xf.name], T.bool)
    big = b.elementwise("GreaterOrEqual", [xf, hi], result_bool=True)
    small = b.elementwise("LessOrEqual", [xf, lo], result_bool=True)
    out_of_range = b.node(
        "Or", [b.node("Or", [big.name, small.name], T.bool).name, nan.name], T.bool
    )
    safe = b.select(out_of_range, b.scalar(0, f), xf)
    c = b.cast(safe, to)
    return b.select(big, b.scalar(to.max, to), b.select(small, b.scalar(to.min, to), c))

