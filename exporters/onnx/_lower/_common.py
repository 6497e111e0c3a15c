"""What every lowering shares: the table (op name -> lowering), ``register``, ``simple``
(one ONNX op with legalization) and run-time symbolic dimensions.

Each function gets the builder, the graphdsl node, and its operands as :class:`V` values
already of the node's operand dtypes (the ``implicit_cast`` pass guarantees that; the
caller asserts it). Results equal ``graphdsl.evaluate``: see each rewrite's comment.
"""

from __future__ import annotations

from collections.abc import Callable

from exporters.onnx._builder import NARROW, Builder, V
from exporters.onnx._types import storage, type_name
from graphdsl.dtypes import DType
from graphdsl.graph import Symbol
from graphdsl.shapes import dim_repr, dim_terms, render_dim

__all__ = ["LOWER", "TYPED", "WEIGHTS", "Lowering", "SymbolicDims", "T", "half_matmul", "register",
           "simple"]

# b.memo[TYPED]: (value name, the Symbol whose type it has) for values made by ops onnx's
# shape inference does not know (onnxruntime's contrib ops): export() declares their types
# (value_info), so that inference reaches what follows them (exporters/onnx/_optimizers.py)
TYPED = ("typed",)
# b.memo[WEIGHTS]: the export's bound Weights (None without), for lowerings that read data
WEIGHTS = ("weights",)

T = DType
Lowering = Callable[[Builder, Symbol, list[V], "SymbolicDims"], V]
LOWER: dict[str, Lowering] = {}


class SymbolicDims:
    """Runtime values of symbolic dimensions, taken from the graph inputs' shapes."""

    def __init__(self, b: Builder, sources: dict[str, tuple[str, int]]) -> None:
        self.b = b
        self.sources = sources
        self._cache: dict[str, str] = {}
        self._shapes: dict[tuple[int | str, ...], str] = {}

    def seen(self, shape: tuple[int | str, ...], name: str) -> None:
        """Record that ONNX value ``name`` has ``shape``: a later shape tensor equal to it is
        one Shape node instead of gathered and concatenated dimensions."""
        if shape not in self._shapes:
            self._shapes[shape] = name

    def shape_tensor(self, dims: tuple[int | str, ...]) -> str:
        """A 1-D int64 tensor holding ``dims`` (symbolic names and dimensions derived from
        them, such as ``batch*2``, resolved at run time)."""
        if all(isinstance(d, int) for d in dims):
            return self.b.int64s([int(d) for d in dims])
        key = "shape:" + ",".join(str(d) for d in dims)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        like = self._shapes.get(dims)
        if like is not None:
            hit = self._cache[key] = self.b.node("Shape", [like], T.int64).name
            return hit
        parts = []
        for d in dims:
            if isinstance(d, int):
                parts.append(self.b.int64s([d]))
            else:
                parts.append(self._dim(d))
        hit = self._cache[key] = self.b.node("Concat", parts, T.int64, axis=0).name
        return hit

    def scalar(self, d: int | str) -> str:
        """A 0-d int64 tensor holding dimension ``d`` (resolved at run time if symbolic)."""
        if isinstance(d, int):
            return self.b.const(d, T.int64).name
        key = f"scalar:{d}"
        hit = self._cache.get(key)
        if hit is None:
            if d in self.sources:  # a scalar index gathers a scalar
                inp, axis = self.sources[d]
                scalar_axis = self.b.const(axis, T.int64).name
                hit = self.b.node("Gather", [self._shape(inp), scalar_axis], T.int64, axis=0).name
            else:
                hit = self.b.node("Reshape", [self._dim(d), self.b.int64s([])], T.int64).name
            self._cache[key] = hit
        return hit

    def _shape(self, inp: str) -> str:
        """The Shape of graph input ``inp`` (one node per input)."""
        key = f"shape_of:{inp}"
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self.b.node("Shape", [inp], T.int64).name
        return hit

    def _dim(self, name: str) -> str:
        hit = self._cache.get(name)
        if hit is None and name not in self.sources:
            hit = self._derived(name)
        if hit is None:
            if name not in self.sources:
                raise self.b.fail(
                    f"the symbolic dimension {dim_repr(name)} is not a dimension of any graph "
                    "input",
                    "use a concrete size or a dimension name that an input has",
                )
            inp, axis = self.sources[name]
            hit = self.b.node("Gather", [self._shape(inp), self.b.int64s([axis])], T.int64,
                              axis=0).name  # fmt: skip
            self._cache[name] = hit
        return hit

    def _derived(self, d: str) -> str | None:
        """A dimension such as ``batch*2``, ``b*3/2`` or ``n+m`` from its names; None for a
        plain name."""
        terms = dim_terms(d)
        if len(terms) > 1:
            parts = [self._dim(t) if isinstance(t, str) else self.b.int64s([t])
                     for t in (render_dim(c, n) for c, n in terms)]  # fmt: skip
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


def register(*names: str) -> Callable[[Lowering], Lowering]:
    def deco(fn: Lowering) -> Lowering:
        for n in names:
            LOWER[n] = fn
        return fn

    return deco


def simple(onnx_op: str, *, narrow: bool = True, bits: bool = False) -> Lowering:
    def lower(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
        # a graphdsl op whose result the reference rounds once: in the half type itself where
        # the target's kernel computes in float32 and rounds once (Target.rounds_once)
        native = (
            narrow
            and args[0].dtype in NARROW
            and b.target.rounds_once(onnx_op, type_name(storage(args[0].dtype)))
        )
        return b.elementwise(onnx_op, args, narrow_in_f32=narrow and not native, bits=bits)

    return lower


def half_matmul(b: Builder, d: DType) -> bool:
    """May a MatMul of ``d`` operands run in ``d`` itself (a float16 / bfloat16 MatMul on
    tensor cores) instead of in float32 between Casts? With ``export(exact=False)``, where
    the target's kernel accumulates in float32 (Target.accumulates_f32: CUDA's)."""
    return not b.exact and d in NARROW and b.target.accumulates_f32("MatMul", type_name(d))
