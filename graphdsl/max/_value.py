"""MAX's ``TensorValue`` over graphdsl's symbols, and the boundary every graphdsl.max op
crosses: operands in (a TensorValue becomes its graphdsl :class:`~graphdsl.Symbol`, a
``Dim`` an int64 scalar), results out (a Symbol becomes a TensorValue on its operands'
device), graphdsl's errors as MAX's exception types, operands on different devices refused.

A TensorValue's ``type``, ``shape``, ``dtype`` and ``device`` are MAX's objects
(:class:`~graphdsl.max.TensorType`, :class:`~graphdsl.max.Shape` of
:class:`~graphdsl.max.Dim`, :class:`~graphdsl.max.DType`, :class:`~graphdsl.max.DeviceRef`);
the graph underneath holds graphdsl's plain types.

>>> from graphdsl.max import DeviceRef, DType, Graph, TensorType
>>> with Graph("v", input_types=[TensorType(DType.float32, ["n", 3], DeviceRef.CPU())]) as g:
...     x = g.inputs[0].tensor
...     y = x[:-1] * 2
>>> y.shape, y.shape == ["n" , 3], y.type.device
([Dim('n') + Dim(-1), Dim(3)], False, cpu:0)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from types import GeneratorType
from typing import Any, ParamSpec, TypeVar

import numpy as np

import graphdsl.ops as gd
from graphdsl.dims import as_dim
from graphdsl.graph import GraphError, Symbol
from graphdsl.max import _value_compat
from graphdsl.max._dim import Dim, Shape, StaticDim
from graphdsl.max._dim import to_core as dim_to_core
from graphdsl.max._dtype import DType
from graphdsl.max._dtype import from_core as dtype_from_core
from graphdsl.max._dtype import to_core as dtype_to_core
from graphdsl.max._errors import DeviceMismatchError, raising
from graphdsl.max._types import DeviceRef, TensorType, Weight
from graphdsl.max._value_compat import TorchStyleMethods
from graphdsl.types import OpTypeError

__all__ = ["METHOD_OPS", "TensorValue", "Value", "arg", "current_graph", "maxop", "tv"]

# The ops some TensorValue methods are (x.flatten() is ops.flatten(x), MAX's words in its errors
# included), registered by the modules that define them (_shape, _elementwise): they build on
# TensorValue, so this module cannot import them (STYLE 13: the higher layer registers).
METHOD_OPS: dict[str, Callable[..., TensorValue]] = {}

P = ParamSpec("P")
R = TypeVar("R")

CPU = DeviceRef.CPU()
# the graphdsl.max Graphs of the enclosing ``with`` blocks, innermost last (Graph pushes)
STACK: list[Any] = []
# MAX methods that higher graphdsl.max modules provide ("getitem", "print"): registered there
HOOKS: dict[str, Callable[..., Any]] = {}
# the device of the operands of the op being built (None: no tensor operand)
_OP_DEVICE: ContextVar[DeviceRef | None] = ContextVar("max_op_device", default=None)


def current_graph() -> Any:
    """The graphdsl.max Graph of the innermost ``with Graph(...)`` block."""
    if not STACK:
        raise GraphError("no current graph: build MAX ops inside `with Graph(...) as graph:`")
    return STACK[-1]


def note_effect(device: Any, graph: Any = None) -> None:
    """Count a side effect MAX orders on ``device``'s chain (a print, a buffer load or
    store) in ``graph`` (the current one by default): the chain that ``device_chains``
    gives for the device after it is a new one, as MAX's chain values are."""
    g = current_graph() if graph is None else graph
    g = g.__dict__.get("_core", g)  # (graphdsl's graph underneath holds the counts)
    counts: dict[Any, int] = g.__dict__.setdefault("_effects", {})
    for key in {device, None}:  # (None: the graph's global chain, which every effect moves)
        counts[key] = counts.get(key, 0) + 1


class Value:
    """A value of a graphdsl.max graph, as max.graph's ``Value``: a :class:`TensorValue` or
    a buffer (``.tensor`` and ``.buffer`` give it as one; the other raises TypeError).

    >>> from graphdsl.max import BufferType, DeviceRef, DType, Graph, TensorType, Value
    >>> cpu = DeviceRef.CPU()
    >>> types = [TensorType(DType.float32, [2], cpu), BufferType(DType.float32, [2], cpu)]
    >>> with Graph("values", input_types=types) as g:
    ...     x, b = g.inputs
    ...     g.output(x.tensor + b.buffer[...])
    >>> [type(v).__name__ for v in g.inputs], all(isinstance(v, Value) for v in g.inputs)
    (['TensorValue', 'BufferValue'], True)
    >>> b.tensor
    Traceback (most recent call last):
        ...
    TypeError: BufferValue(dtype=float32, shape=[Dim(2)], device=cpu:0) is not a tensor value
    """

    __slots__ = ()

    @property
    def tensor(self) -> TensorValue:
        raise TypeError(f"{self!r} is not a tensor value")

    @property
    def buffer(self) -> Any:
        raise TypeError(f"{self!r} is not a buffer value")


class TensorValue(Value, TorchStyleMethods):
    """A tensor value of a graphdsl.max :class:`~graphdsl.max.Graph`, as max.graph's
    ``TensorValue``: MAX's types (``type``, ``shape``, ``dtype``, ``device``), methods and
    operators (``&``, ``|``, ``^``, ``~`` are logical; ``x < y`` is ``not (x >= y)``;
    reductions keep the reduced axis), over a graphdsl :class:`~graphdsl.Symbol`
    (``.symbol``).

    ``TensorValue(v)`` takes another TensorValue, a graph input, a ``Dim`` or a ``Shape``
    (as int64 tensors); a Python number raises TypeError (use ``ops.constant``).

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl.max import DeviceRef, DType, Graph, TensorType
    >>> with Graph("t", input_types=[TensorType(DType.float32, ["n", 2], DeviceRef.CPU())]) as g:
    ...     x = g.inputs[0].tensor
    ...     y = (x.T @ x).mean(axis=0)  # a reduction keeps its axis, with size 1
    ...     g.output(y, x > 1)
    >>> x
    TensorValue(dtype=float32, shape=[Dim('n'), Dim(2)], device=cpu:0)
    >>> y.type
    TensorType(dtype=float32, shape=[Dim(1), Dim(2)], device=cpu:0)
    >>> gd.evaluate(g, [np.array([[1, 2], [3, 4]], np.float32)])
    [array([[12., 17.]], dtype=float32), array([[False,  True],
           [ True,  True]])]
    """

    __slots__ = ("_device", "_symbol")
    _symbol: Symbol
    _device: DeviceRef

    def __init__(self, value: Any) -> None:
        if isinstance(value, TensorValue):
            symbol, device = value._symbol, value._device
        elif isinstance(value, Symbol):
            symbol, device = value, _device_of_symbol(value)
        elif isinstance(value, (Dim, Shape)):
            made = dim_tensor(value)
            symbol, device = made._symbol, made._device
        elif isinstance(value, (bool, int, float, np.number)):
            raise TypeError(
                f"TensorValue() can not be created directly from a '{type(value).__name__}'. "
                "Use ops.constant to convert to a TensorValue with a specific dtype."
            )
        else:
            raise TypeError(f"TensorValue() can not be created from {value!r}")
        object.__setattr__(self, "_symbol", symbol)
        object.__setattr__(self, "_device", device)

    @classmethod
    def _make(cls, symbol: Symbol, device: DeviceRef) -> TensorValue:
        value = object.__new__(cls)
        object.__setattr__(value, "_symbol", symbol)
        object.__setattr__(value, "_device", device)
        return value

    # -- MAX's types
    @property
    def symbol(self) -> Symbol:
        """graphdsl's symbol of the value (its plain graphdsl type: ``symbol.type``)."""
        return self._symbol

    @property
    def tensor(self) -> TensorValue:
        """The value itself, as MAX's ``Value.tensor``."""
        return self

    @property
    def type(self) -> TensorType:
        """MAX's :class:`~graphdsl.max.TensorType`: dtype, shape and device."""
        return TensorType(self.dtype, self.shape, self._device)

    @property
    def shape(self) -> Shape:
        """MAX's :class:`~graphdsl.max.Shape` (a list of ``Dim``)."""
        return Shape(as_dim(d) for d in self._symbol.shape)  # graphdsl's own Dims

    @property
    def dtype(self) -> DType:
        """MAX's :class:`~graphdsl.max.DType`."""
        return dtype_from_core(self._symbol.dtype)

    @property
    def device(self) -> DeviceRef:
        """The device the value lives on."""
        return self._device

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return self._symbol.rank

    def __repr__(self) -> str:
        return (
            f"TensorValue(dtype={self.dtype!r}, shape={list(self.shape)!r}, device={self._device})"
        )

    __hash__ = object.__hash__  # by identity (``==`` builds a node)

    def __bool__(self) -> bool:
        raise TypeError(
            "a TensorValue has no truth value at graph-build time (max.graph gives True, "
            "whatever the data); use ops.where or ops.cond for a data-dependent choice"
        )

    def __len__(self) -> int:
        raise TypeError("object of type 'TensorValue' has no len()")

    def __iter__(self) -> Iterator[Any]:
        raise TypeError("'TensorValue' object is not iterable")

    # -- MAX's methods
    @property
    def T(self) -> TensorValue:
        """The last two axes swapped: MAX's ``transpose(-1, -2)``, so a value of rank < 2
        raises MAX's IndexError."""
        return self.transpose(-1, -2)

    def reshape(self, *shape: Any) -> TensorValue:
        """Reshaped to ``shape`` (a list, or the dimensions as arguments; one -1 may stand
        for the rest)."""
        if len(shape) == 1 and isinstance(shape[0], Iterable):
            shape = tuple(shape[0])
        return METHOD_OPS["reshape"](self, list(shape))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> TensorValue:
        """Axes ``start_dim..end_dim`` merged into one."""
        return METHOD_OPS["flatten"](self, start_dim, end_dim)

    def broadcast_to(self, shape: Iterable[Any]) -> TensorValue:
        """Broadcast to ``shape``."""
        return apply("broadcast_to", gd.broadcast_to, self, [dim_to_core(d) for d in shape])

    def cast(self, dtype: DType) -> TensorValue:
        """Cast to ``dtype``."""
        return apply("cast", gd.cast, self, dtype_to_core(dtype))

    def rebind(self, shape: Iterable[Any], message: str = "") -> TensorValue:
        """The value with ``shape`` (same rank): checked when the model runs (see
        ``ops.rebind``)."""
        from graphdsl.ops.debug import rebind

        return apply("rebind", rebind, self, [dim_to_core(d) for d in shape], message)

    def permute(self, dims: list[int]) -> TensorValue:
        """Axes reordered as ``dims``."""
        return METHOD_OPS["permute"](self, list(dims))

    def transpose(self, dim_1: int, dim_2: int) -> TensorValue:
        """Axes ``dim_1`` and ``dim_2`` swapped."""
        return METHOD_OPS["transpose"](self, dim_1, dim_2)

    def to(self, device: DeviceRef) -> TensorValue:
        """The value on ``device`` (no copy in the exported model: onnxruntime runs a model
        on one provider)."""
        if not isinstance(device, DeviceRef):
            raise TypeError(f"a device must be a DeviceRef, got {device!r}")
        if device == self._device:
            return self
        return tv(gd.cast(self._symbol, self._symbol.dtype), device)

    def argmax(self, axis: int = -1) -> TensorValue:
        """Indices (int64) of the maxima along ``axis``, which stays with size 1."""
        return METHOD_OPS["argmax"](self, axis=axis)

    def max(self, axis: int = -1) -> TensorValue:
        """The maximum along ``axis``, which stays with size 1."""
        return METHOD_OPS["max"](self, axis=axis)

    def min(self, axis: int = -1) -> TensorValue:
        """The minimum along ``axis``, which stays with size 1."""
        return METHOD_OPS["min"](self, axis=axis)

    def mean(self, axis: int = -1) -> TensorValue:
        """The mean along ``axis``, which stays with size 1."""
        return METHOD_OPS["mean"](self, axis=axis)

    def var(self, axis: int = -1) -> TensorValue:
        """The population variance along ``axis`` (size 1), as MAX builds it:
        ``((x - x.mean(axis)) ** 2).mean(axis)``."""
        if self._symbol.dtype.name == "bool":
            raise OpTypeError("Variance undefined for boolean values.")
        return ((self - self.mean(axis)) ** 2).mean(axis)

    def stdev(self, axis: int = -1) -> TensorValue:
        """The square root of :meth:`var`."""
        return apply("sqrt", gd.sqrt, self.var(axis))

    def print(self, label: str = "debug_tensor") -> None:
        """MAX's debug print (``ops.print``): a no-op in graphdsl (docs/max.md)."""
        HOOKS["print"](self, label)

    def __getitem__(self, index: Any) -> TensorValue:
        return HOOKS["getitem"](self, index)  # type: ignore[no-any-return]

    # -- operators
    def __add__(self, o: Any) -> TensorValue:
        return apply("add", gd.add, self, o)

    def __radd__(self, o: Any) -> TensorValue:
        return apply("add", gd.add, o, self)

    def __sub__(self, o: Any) -> TensorValue:
        return apply("sub", gd.sub, self, o)

    def __rsub__(self, o: Any) -> TensorValue:
        return apply("sub", gd.sub, o, self)

    def __mul__(self, o: Any) -> TensorValue:
        return apply("mul", gd.mul, self, o)

    def __rmul__(self, o: Any) -> TensorValue:
        return apply("mul", gd.mul, o, self)

    def __truediv__(self, o: Any) -> TensorValue:
        return apply("div", gd.div, self, o)

    def __rtruediv__(self, o: Any) -> TensorValue:
        return apply("div", gd.div, o, self)

    def __floordiv__(self, o: Any) -> TensorValue:
        return apply("floor_div", gd.floordiv, self, o)

    def __rfloordiv__(self, o: Any) -> TensorValue:
        return apply("floor_div", gd.floordiv, o, self)

    def __mod__(self, o: Any) -> TensorValue:
        return apply("mod", gd.mod, self, o)

    def __rmod__(self, o: Any) -> TensorValue:
        return apply("mod", gd.mod, o, self)

    def __divmod__(self, o: Any) -> tuple[TensorValue, TensorValue]:
        return self // o, self % o

    def __rdivmod__(self, o: Any) -> tuple[TensorValue, TensorValue]:
        return o // self, o % self

    def __pow__(self, o: Any) -> TensorValue:
        return apply("pow", gd.pow, self, o)

    def __rpow__(self, o: Any) -> TensorValue:
        return apply("pow", gd.pow, o, self)

    def __matmul__(self, o: Any) -> TensorValue:
        return apply("matmul", gd.matmul, self, o)

    def __rmatmul__(self, o: Any) -> TensorValue:
        return apply("matmul", gd.matmul, o, self)

    def __neg__(self) -> TensorValue:
        return apply("negate", gd.negative, self)

    def __pos__(self) -> TensorValue:
        return self

    def __round__(self) -> TensorValue:
        return apply("round", gd.round, self)

    def __invert__(self) -> TensorValue:
        return apply("logical_not", gd.logical_not, self)

    def __and__(self, o: Any) -> TensorValue:
        return apply("logical_and", gd.logical_and, self, o)

    def __rand__(self, o: Any) -> TensorValue:
        return apply("logical_and", gd.logical_and, o, self)

    def __or__(self, o: Any) -> TensorValue:
        return apply("logical_or", gd.logical_or, self, o)

    def __ror__(self, o: Any) -> TensorValue:
        return apply("logical_or", gd.logical_or, o, self)

    def __xor__(self, o: Any) -> TensorValue:
        return apply("logical_xor", gd.logical_xor, self, o)

    def __rxor__(self, o: Any) -> TensorValue:
        return apply("logical_xor", gd.logical_xor, o, self)

    def __eq__(self, o: object) -> TensorValue:  # type: ignore[override]
        _comparable(o, "==")
        return apply("equal", gd.equal, self, o)

    def __ne__(self, o: object) -> TensorValue:  # type: ignore[override]
        _comparable(o, "!=")
        return apply("not_equal", gd.not_equal, self, o)

    def __gt__(self, o: Any) -> TensorValue:
        return apply("greater", gd.greater, self, o)

    def __ge__(self, o: Any) -> TensorValue:
        return apply("greater_equal", gd.greater_equal, self, o)

    def __lt__(self, o: Any) -> TensorValue:
        # MAX's definition: not (x >= y), true where either is NaN
        return apply("greater_equal", lambda a, b: gd.logical_not(gd.greater_equal(a, b)), self, o)

    def __le__(self, o: Any) -> TensorValue:
        return apply("greater", lambda a, b: gd.logical_not(gd.greater(a, b)), self, o)


def _comparable(o: object, what: str) -> None:
    if isinstance(o, str) and not isinstance(o, Dim):
        raise TypeError(f"'{what}' not supported between instance of 'TensorValue' and 'str'")


# ---------------------------------------------------------------------------- the boundary


def _device_of_symbol(s: Symbol) -> DeviceRef:
    graph = s.graph
    devices = getattr(graph, "_devices", None)
    if devices is not None and s.id in devices:
        return devices[s.id]  # type: ignore[no-any-return]
    return CPU


def device_of(x: Any) -> DeviceRef | None:
    """The device of an operand: a TensorValue's, a graph input's or a weight's; None for a
    Python number or numpy array (they take the other operands' device)."""
    if isinstance(x, TensorValue):
        return x._device
    if isinstance(x, Symbol):
        return _device_of_symbol(x)
    if isinstance(x, Weight):
        return x.device
    return None


def _operands(args: Iterable[Any]) -> Iterator[Any]:
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from (b for b in a if not isinstance(b, (list, tuple)))
        else:
            yield a


def common_device(*args: Any, names: Sequence[str] = ()) -> DeviceRef | None:
    """The one device of the tensor operands among ``args`` (lists looked into); raises
    MAX's ValueError when they are on different devices (listing the operands named
    ``names``, one per arg, as MAX lists them)."""
    found: dict[DeviceRef, None] = {}
    for a in _operands(args):
        d = device_of(a)
        if d is not None:
            found[d] = None
    if len(found) > 1:
        listed = "".join(
            f"\n    {name}: {a.type}"
            for name, a in zip(names, args, strict=False)
            if isinstance(a, TensorValue)
        )
        raise DeviceMismatchError(
            f"Input values must be on the same device{listed}\n(graphdsl: the operands are "
            f"on {', '.join(str(d) for d in found)}; move them with x.to(device) or "
            "ops.transfer_to)"
        )
    return next(iter(found), None)


def arg(x: Any) -> Any:
    """An operand as graphdsl's ops take it: a TensorValue's symbol, a ``Dim`` as an int64
    scalar, a Weight as a value of the current graph; others unchanged."""
    if isinstance(x, TensorValue):
        return x._symbol
    if isinstance(x, Dim):
        return dim_tensor(x)._symbol
    if isinstance(x, Weight):
        return current_graph().add_weight(x)._symbol
    return x


def dim_tensor(d: Dim | Shape) -> TensorValue:
    """A ``Dim`` (or Shape) as an int64 tensor, as MAX makes one of it: static dims are a
    constant; a symbolic one is its size when the model runs (``graphdsl.ops.dim_size``: from
    the graph inputs that have its names)."""
    dims = list(d) if isinstance(d, Shape) else [d]
    graph = current_graph()
    if all(isinstance(v, StaticDim) for v in dims):
        value = np.array([int(v) for v in dims], np.int64)
        return tv(graph.constant(value if isinstance(d, Shape) else value[0]), CPU)
    with graph:
        sizes = [gd.dim_size(dim_to_core(v)) for v in dims]
    return tv(gd.stack(sizes) if isinstance(d, Shape) else sizes[0], CPU)


def tv(s: Symbol, device: DeviceRef | None = None) -> TensorValue:
    """``s`` as a TensorValue on ``device`` (default: its op's operands', else CPU)."""
    if not isinstance(s, Symbol):
        raise TypeError(f"expected a graphdsl Symbol, got {s!r}")
    device = device or _OP_DEVICE.get() or _device_of_symbol(s)
    graph = STACK[-1] if STACK else s.graph
    note = getattr(graph, "note_device", None)
    if note is not None:
        note(device)
    return TensorValue._make(s, device)


@contextmanager
def op_scope(op: str, operands: Sequence[Any], names: Sequence[str] = ()) -> Iterator[None]:
    """Build MAX op ``op``: its tensor operands (named ``names``) on one device (the
    results'), graphdsl's errors as MAX's exception types."""
    with raising(op):
        device = common_device(*operands, names=names)
        token = _OP_DEVICE.set(device)
        try:
            yield
        finally:
            _OP_DEVICE.reset(token)


def apply(op: str, fn: Callable[..., Symbol], *args: Any) -> TensorValue:
    """``fn`` (a graphdsl op) on ``args`` as MAX op ``op``: a TensorValue."""
    with op_scope(op, args):
        return tv(fn(*[arg(a) for a in args]))


_value_compat._APPLY.append(apply)  # (its PyTorch-style methods build with it)
def maxop(op: str, one_device: bool = True) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate the graphdsl.max op ``op``: its operands on one device (its results'; not
    checked with ``one_device=False``, for a call whose arguments live where the subgraph
    says), and graphdsl's errors raised as MAX's types."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        positional = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]

        @functools.wraps(fn)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            # a generator of values (``ops.stack(v.tensor for v in ...)``) is read once
            args = tuple(list(a) if isinstance(a, GeneratorType) else a for a in args)  # type: ignore[assignment]
            names = [*positional[: len(args)], *(str(k) for k in kwargs)]
            if not one_device:
                with raising(op):
                    return fn(*args, **kwargs)
            with op_scope(op, [*args, *kwargs.values()], names):
                return fn(*args, **kwargs)

        return inner

    return wrap
