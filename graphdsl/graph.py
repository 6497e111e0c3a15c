"""Graph, Symbol and TensorType: the typed graph users build, MAX style.

>>> import numpy as np, graphdsl as gd
>>> g = gd.Graph("demo", input_types={"x": gd.TensorType(gd.int16, ("n",))})
>>> x, = g.inputs
>>> y = x * 2 + g.scalar(1.5)
>>> y.type
TensorType(float32?[n])
>>> g.output(y)
>>> print(g)
graph demo(%x: int16[n]) {
  %0: int32?[] = literal 2
  %1: int16[n] = mul %x, %0
  %2: float32?[] = literal 1.5
  %3: float32?[n] = add %1, %2
  return %3
}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from graphdsl._source import Location, user_location
from graphdsl.dtypes import DType, dtype
from graphdsl.policies import (
    LiteralError,
    Policy,
    PromotionError,
    literal_fix,
    literal_problem,
    policy,
)
from graphdsl.shapes import Shape, ShapeError, shape_of

__all__ = ["Graph", "GraphError", "OpTypeError", "Symbol", "TensorType"]

Scalar = bool | int | float | complex


class GraphError(ValueError):
    """A graph that is malformed, or used in a way its state does not allow."""


class OpTypeError(TypeError):
    """An op given operand dtypes it does not accept."""


class TensorType(NamedTuple):
    """The static type of a value: dtype, shape (ints and symbolic names), ambiguity.

    >>> import graphdsl as gd
    >>> str(gd.TensorType(gd.float32, ("batch", 4), ambiguous=True))
    'float32?[batch, 4]'
    """

    dtype: DType
    shape: Shape = ()
    ambiguous: bool = False

    def __str__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        return f"{self.dtype.name}{'?' if self.ambiguous else ''}[{dims}]"

    def __repr__(self) -> str:
        return f"TensorType({self})"

    @property
    def rank(self) -> int:
        return len(self.shape)


def _as_type(t: object) -> TensorType:
    if isinstance(t, TensorType):
        return TensorType(t.dtype, shape_of(t.shape), t.ambiguous)
    if isinstance(t, tuple) and len(t) == 2:
        return TensorType(dtype(t[0]), shape_of(t[1]))
    return TensorType(dtype(t), ())


class Symbol:
    """A value in a graph: the output of one op. Build new symbols with operators and ``gd.ops``.

    Symbols compare by identity: ``x == y`` builds an ``equal`` node, so use ``x is y`` to
    ask whether two symbols are the same value.
    """

    __slots__ = ("attrs", "graph", "id", "in_dtypes", "inputs", "loc", "op", "type")
    # numpy must not broadcast over a Symbol (np.ones(3) + x would give an object array):
    # with this, it returns NotImplemented and Python calls Symbol.__radd__
    __array_ufunc__ = None

    def __init__(
        self,
        graph: Graph,
        op: str,
        inputs: tuple[Symbol, ...],
        attrs: dict[str, Any],
        type: TensorType,
        in_dtypes: tuple[DType, ...],
        loc: Location | None,
    ) -> None:
        self.graph = graph
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.type = type
        self.in_dtypes = in_dtypes
        self.loc = loc
        self.id = len(graph.nodes)

    # -- type accessors
    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def shape(self) -> Shape:
        return self.type.shape

    @property
    def ambiguous(self) -> bool:
        return self.type.ambiguous

    @property
    def rank(self) -> int:
        return len(self.type.shape)

    def __repr__(self) -> str:
        where = f" at {self.loc}" if self.loc else ""
        return f"<Symbol {self.op} {self.type} of graph {self.graph.name!r}{where}>"

    __hash__ = object.__hash__  # by identity (``==`` builds a node)

    def __bool__(self) -> bool:
        raise TypeError(
            "a Symbol has no truth value at graph-build time; use gd.ops.where(cond, a, b) "
            "for a data-dependent choice, or 'x is y' to compare symbols"
        )

    def cast(self, to: DType | str) -> Symbol:
        """Explicit conversion (``gd.ops.cast``)."""
        from graphdsl import ops

        return ops.cast(self, to)

    # -- operators: all build nodes through gd.ops
    def __add__(self, o: Operand) -> Symbol:
        return self.graph._apply("add", (self, o), {})

    def __radd__(self, o: Operand) -> Symbol:
        return self.graph._apply("add", (o, self), {})

    def __sub__(self, o: Operand) -> Symbol:
        return self.graph._apply("sub", (self, o), {})

    def __rsub__(self, o: Operand) -> Symbol:
        return self.graph._apply("sub", (o, self), {})

    def __mul__(self, o: Operand) -> Symbol:
        return self.graph._apply("mul", (self, o), {})

    def __rmul__(self, o: Operand) -> Symbol:
        return self.graph._apply("mul", (o, self), {})

    def __truediv__(self, o: Operand) -> Symbol:
        return self.graph._apply("div", (self, o), {})

    def __rtruediv__(self, o: Operand) -> Symbol:
        return self.graph._apply("div", (o, self), {})

    def __floordiv__(self, o: Operand) -> Symbol:
        return self.graph._apply("floordiv", (self, o), {})

    def __rfloordiv__(self, o: Operand) -> Symbol:
        return self.graph._apply("floordiv", (o, self), {})

    def __mod__(self, o: Operand) -> Symbol:
        return self.graph._apply("mod", (self, o), {})

    def __rmod__(self, o: Operand) -> Symbol:
        return self.graph._apply("mod", (o, self), {})

    def __pow__(self, o: Operand) -> Symbol:
        return self.graph._apply("pow", (self, o), {})

    def __rpow__(self, o: Operand) -> Symbol:
        return self.graph._apply("pow", (o, self), {})

    def __matmul__(self, o: Operand) -> Symbol:
        return self.graph._apply("matmul", (self, o), {})

    def __rmatmul__(self, o: Operand) -> Symbol:
        return self.graph._apply("matmul", (o, self), {})

    def __and__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_and", (self, o), {})

    def __rand__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_and", (o, self), {})

    def __or__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_or", (self, o), {})

    def __ror__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_or", (o, self), {})

    def __xor__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_xor", (self, o), {})

    def __rxor__(self, o: Operand) -> Symbol:
        return self.graph._apply("bitwise_xor", (o, self), {})

    def __eq__(self, o: object) -> Symbol:  # type: ignore[override]
        return self.graph._apply("equal", (self, o), {})

    def __ne__(self, o: object) -> Symbol:  # type: ignore[override]
        return self.graph._apply("not_equal", (self, o), {})

    def __lt__(self, o: Operand) -> Symbol:
        return self.graph._apply("less", (self, o), {})

    def __le__(self, o: Operand) -> Symbol:
        return self.graph._apply("less_equal", (self, o), {})

    def __gt__(self, o: Operand) -> Symbol:
        return self.graph._apply("greater", (self, o), {})

    def __ge__(self, o: Operand) -> Symbol:
        return self.graph._apply("greater_equal", (self, o), {})

    def __neg__(self) -> Symbol:
        return self.graph._apply("negative", (self,), {})

    def __pos__(self) -> Symbol:
        return self

    def __abs__(self) -> Symbol:
        return self.graph._apply("abs", (self,), {})

    def __invert__(self) -> Symbol:
        return self.graph._apply("bitwise_not", (self,), {})


Operand = Symbol | Scalar | np.ndarray | np.generic


class _NoAttrs(dict[str, Any]):
    """The attributes of every node built without any, one shared empty dict.

    A node's attributes never change once it is built (passes share them between graphs),
    so one serves all such nodes; it is read-only, so that a mistaken write raises instead
    of changing every one of them. Copies and unpickled graphs share it again.
    """

    def _read_only(self, *args: object, **kwargs: object) -> Any:
        raise TypeError("a node's attributes are read-only; build a new node instead")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (_no_attrs, ())


def _no_attrs() -> _NoAttrs:
    return _NO_ATTRS


_NO_ATTRS = _NoAttrs()
# what a type rule decides: operand dtypes, result type, operands taken by truth value
_Typing = tuple[tuple[DType, ...], TensorType, tuple[int, ...]]


def _apply_op(op: str, args: tuple[object, ...], attrs: dict[str, Any]) -> Symbol:
    """Build ``op`` in the graph of its first Symbol operand."""
    for a in args:
        if isinstance(a, Symbol):
            return a.graph._apply(op, args, attrs)
    raise OpTypeError(
        f"{op}: no operand is a Symbol, so there is no graph to build in; make a constant "
        "first with g.constant(...) or g.scalar(...)"
    )


class _ScalarFactory:
    """``g.scalar(1.5)`` (ambiguous), ``g.scalar(1, gd.int16)`` or ``g.scalar[gd.int16](1)``."""

    __slots__ = ("_dtype", "_graph")

    def __init__(self, graph: Graph, dt: DType | None = None) -> None:
        self._graph = graph
        self._dtype = dt

    def __getitem__(self, dt: DType | str) -> _ScalarFactory:
        return _ScalarFactory(self._graph, dtype(dt))

    def __call__(self, value: Scalar, dt: DType | str | None = None) -> Symbol:
        target = dtype(dt) if dt is not None else self._dtype
        return self._graph._scalar(value, target)


class Graph:
    """A typed compute graph.

    Args:
        name: the graph's name (the ONNX model's graph name).
        input_types: ``{name: TensorType}`` or a list of types (named input0, input1, ...).
            A type may also be a dtype (a scalar input) or ``(dtype, shape)``.
        policy: the promotion policy name or a :class:`~graphdsl.Policy`.
        warn_lossy: warn (``LossyCastWarning``) when an implicit cast can lose magnitude or
            precision; see :func:`graphdsl.passes.lint_lossy`.

    ``with gd.Graph(...) as g:`` works too; the block returns the graph unchanged.
    """

    def __init__(
        self,
        name: str,
        input_types: Mapping[str, object] | Sequence[object] = (),
        *,
        policy: str | Policy = "default",
        warn_lossy: bool = False,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise GraphError(f"a graph needs a non-empty name, got {name!r}")
        self.name = name
        self.policy: Policy = _get_policy(policy)
        self.warn_lossy = warn_lossy
        self.nodes: list[Symbol] = []
        self.outputs: list[Symbol] = []
        self._frozen: str | None = None
        self._derived = False
        self._literals: dict[tuple[type, object], Symbol] = {}
        self._rules: dict[tuple[str, tuple[TensorType, ...]], _Typing] = {}
        # (id of a literal, dtype) pairs checked to fit; ids, because a tuple holding a Symbol
        # compares it with == on a hash collision, and == builds a node
        self._fits: set[tuple[int, DType]] = set()
        items = (
            list(input_types.items())
            if isinstance(input_types, Mapping)
            else [(f"input{i}", t) for i, t in enumerate(input_types)]
        )
        self.inputs: list[Symbol] = []
        for in_name, t in items:
            if not isinstance(in_name, str) or not in_name.isidentifier():
                raise GraphError(f"input names must be identifiers, got {in_name!r}")
            typ = _as_type(t)
            if typ.ambiguous:
                raise GraphError(f"input {in_name!r} cannot be ambiguous: inputs have known types")
            sym = self._add("input", (), {"name": in_name}, typ, (), None)
            self.inputs.append(sym)
        self.scalar = _ScalarFactory(self)
        for hook in _ON_CREATE:
            hook(self)

    # -- context manager
    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __repr__(self) -> str:
        return f"<Graph {self.name!r}: {len(self.inputs)} inputs, {len(self.nodes)} nodes>"

    def __str__(self) -> str:
        from graphdsl.printing import format_graph

        return format_graph(self)

    @property
    def input_names(self) -> list[str]:
        return [s.attrs["name"] for s in self.inputs]

    # -- building
    def _check_mutable(self) -> None:
        if self._frozen is not None:
            raise GraphError(
                f"graph {self.name!r} was {self._frozen} and is frozen: changing it now would "
                "make the exported model stale; build a new graph (or call graph.copy()) first"
            )

    def freeze(self, reason: str) -> None:
        """Forbid further changes (the exporter calls this)."""
        if self._frozen is None:
            self._frozen = reason

    def _add(
        self,
        op: str,
        inputs: tuple[Symbol, ...],
        attrs: dict[str, Any],
        typ: TensorType,
        in_dtypes: tuple[DType, ...],
        loc: Location | None,
    ) -> Symbol:
        if self._frozen is not None:
            self._check_mutable()
        sym = Symbol(self, op, inputs, attrs, typ, in_dtypes, loc)
        self.nodes.append(sym)
        return sym

    def _scalar(self, value: Scalar, target: DType | None) -> Symbol:
        loc = user_location()
        if isinstance(value, np.generic):
            value = value.item()
        if not isinstance(value, (bool, int, float, complex)):
            raise OpTypeError(f"scalar (at {loc}): {value!r} is not a Python scalar")
        if target is None:
            return self._literal(value, loc)
        problem = literal_problem(value, target, exact=False)
        if problem:
            raise LiteralError(f"scalar (at {loc}): the value {value!r} {problem}")
        arr = np.asarray(value).astype(target.np)
        return self._add("constant", (), {"value": arr}, TensorType(target, ()), (), loc)

    def _literal(self, value: Scalar, loc: Location | None) -> Symbol:
        # one node per distinct literal: x * 2 in a loop adds one literal, not thousands
        t = type(value)
        # the value itself keys it, except where equal values differ: 0.0 and -0.0, nan,
        # and complex numbers (whose zero parts have signs too)
        key: tuple[type, object] = (
            (t, value) if t is not complex and value == value and value != 0 else (t, repr(value))
        )
        hit = self._literals.get(key)
        if hit is None:
            lt = self.policy.literal_type(value)
            typ = TensorType(lt.dtype, (), lt.ambiguous)
            hit = self._literals[key] = self._add("literal", (), {"value": value}, typ, (), loc)
        return hit

    def constant(self, value: object, dt: DType | str | None = None) -> Symbol:
        """A known-typed constant from a numpy array (or anything ``np.asarray`` takes).

        >>> import numpy as np, graphdsl as gd
        >>> g = gd.Graph("c")
        >>> g.constant(np.ones((2, 3), np.float32)).type
        TensorType(float32[2, 3])
        """
        loc = user_location()
        target = dtype(dt) if dt is not None else None
        arr = np.asarray(value)
        if target is None:
            if arr.dtype == object:
                raise OpTypeError(f"constant (at {loc}): cannot make a tensor of {value!r}")
            target = dtype(arr.dtype)
        arr = arr.astype(target.np, copy=False)
        arr = arr if arr.flags.c_contiguous else arr.copy(order="C")
        return self._add("constant", (), {"value": arr}, TensorType(target, arr.shape), (), loc)

    def output(self, *values: Symbol | Scalar) -> None:
        """Set the graph's outputs (replacing any set before)."""
        self._check_mutable()
        if not values:
            raise GraphError(f"graph {self.name!r}: output() needs at least one value")
        outs = []
        loc = user_location()
        for v in values:
            if not isinstance(v, Symbol):
                v = self._literal(v, loc)
            self._own(v, "output", loc)
            if v.op == "literal":  # returned as is, it takes its default dtype
                problem = self.policy.literal_problem(v.attrs["value"], v.dtype)
                if problem:
                    raise LiteralError(
                        f"output (at {loc}): the literal {v.attrs['value']!r} is returned as "
                        f"{v.dtype.name} (the policy's default) and {problem}; make it a typed "
                        f"constant with g.scalar(value, dtype)"
                    )
            outs.append(v)
        self.outputs = outs

    def _own(self, v: Symbol, op: str, loc: Location | None) -> None:
        if v.graph is not self:
            other = (
                f"another graph that is also named {self.name!r}"
                if v.graph.name == self.name
                else f"graph {v.graph.name!r}, not {self.name!r}"
            )
            raise GraphError(
                f"{op} (at {loc}): {v!r} belongs to {other}; values cannot cross graphs "
                "(pass it as an input instead)"
            )

    def _apply(self, op: str, args: tuple[object, ...], attrs: dict[str, Any]) -> Symbol:
        """Build ``op`` on ``args``: operands become symbols, the type rule runs, checks."""
        loc = user_location()
        inputs: list[Symbol] = []
        for a in args:
            if isinstance(a, Symbol) and a.graph is self:
                inputs.append(a)
            else:
                inputs.append(self._operand(a, op, loc))
        types = tuple([s.type for s in inputs])
        # A rule is a pure function of (policy, operand types, attributes): ops without
        # attributes are decided once per graph and operand types (a loop building the same
        # op repeats them), and their nodes share the resulting type objects.
        hit = None if attrs else self._rules.get((op, types))
        if hit is None:
            hit = self._rule(op, types, attrs, loc)
            if not attrs:
                self._rules[(op, types)] = hit
                attrs = _NO_ATTRS
        in_dtypes, out, truthy = hit
        for k, s in enumerate(inputs):
            if s.op == "literal" and k not in truthy and (id(s), in_dtypes[k]) not in self._fits:
                self._check_literal(op, s, in_dtypes[k], types, loc)
        sym = self._add(op, tuple(inputs), attrs, out, in_dtypes, loc)
        if self.warn_lossy:
            from graphdsl.passes.lint import warn_node

            warn_node(sym)
        return sym

    def _operand(self, a: object, op: str, loc: Location | None) -> Symbol:
        """A non-Symbol operand as a symbol of this graph: a literal or a constant."""
        if isinstance(a, Symbol):
            self._own(a, op, loc)  # raises: a Symbol of another graph
        if isinstance(a, (bool, int, float, complex, np.generic)):
            return self._literal(a.item() if isinstance(a, np.generic) else a, loc)
        if isinstance(a, np.ndarray):
            self._check_mutable()
            return self.constant(a)
        raise OpTypeError(
            f"{op} (at {loc}): cannot use {a!r} (of type {type(a).__name__}) as an "
            "operand; use a Symbol, a Python scalar or a numpy array"
        )

    def _rule(
        self, op: str, types: tuple[TensorType, ...], attrs: dict[str, Any], loc: Location | None
    ) -> tuple[tuple[DType, ...], TensorType, tuple[int, ...]]:
        """``op``'s type rule on ``types``: (operand dtypes, result type, truthy operands)."""
        from graphdsl._rules import OPS

        opdef = OPS[op]
        try:
            in_dtypes, out = opdef.rule(self.policy, list(types), attrs)
        except PromotionError as e:
            raise PromotionError(
                f"{op} (at {loc}): {e}", lhs=e.lhs, rhs=e.rhs, policy=e.policy, fix=e.fix
            ) from None
        except (OpTypeError, ShapeError) as e:
            raise type(e)(f"{op} (at {loc}): {e}") from None
        return in_dtypes, out, opdef.truthy

    def _check_literal(
        self, op: str, s: Symbol, want: DType, types: tuple[TensorType, ...], loc: Location | None
    ) -> None:
        """Raise unless literal ``s`` fits ``want``, the dtype ``op`` converts it to."""
        value = s.attrs["value"]
        problem = self.policy.literal_problem(value, want)
        if problem:
            raise LiteralError(
                f"{op} (at {loc}): the literal {value!r} {problem} (operand types "
                f"{', '.join(str(t) for t in types)}, policy {self.policy.name!r}); "
                f"{literal_fix(value, want)}"
            )
        self._fits.add((id(s), want))

    # -- whole-graph operations
    def verify(self) -> None:
        """Check the graph's invariants; raise :class:`GraphError` naming the first violation.

        Single definition, topological order, ownership, outputs present, and every op's
        type rule recomputed from its operands' types under the graph's policy.
        """
        from graphdsl.verify import verify

        verify(self)

    def release(self) -> None:
        """Drop this graph's nodes (it becomes empty).

        Symbols and their graph refer to each other, so a dropped graph waits for the cycle
        collector; passes release the intermediate graphs they made, so that a million-node
        pipeline frees each one at once instead.
        """
        self.nodes = []
        self.inputs = []
        self.outputs = []
        self._literals = {}
        self._rules = {}
        self._fits = set()

    def copy(self, name: str | None = None) -> Graph:
        """An unfrozen structural copy (same policy, inputs, nodes and outputs)."""
        from graphdsl.passes.rewrite import Rewriter

        return Rewriter(self, name=name or self.name).copy_all()

    def explain(self) -> str:
        """Each implicit cast the ``implicit_cast`` pass inserts, and why."""
        from graphdsl.passes.implicit_cast import explain

        return explain(self)

    def to_dot(self) -> str:
        """Graphviz dot text of the graph; Cast nodes are highlighted."""
        from graphdsl.printing import to_dot

        return to_dot(self)

    def used(self) -> Iterable[Symbol]:
        """Nodes reachable from the outputs, in topological order."""
        live = {id(o) for o in self.outputs}
        keep: list[Symbol] = []
        for node in reversed(self.nodes):
            if id(node) in live or node.op == "input":
                keep.append(node)
                live.update(id(i) for i in node.inputs)
        return reversed(keep)


_get_policy = policy
# called with each new Graph (graphdsl._scripts collects the graphs a script builds)
_ON_CREATE: list[Callable[[Graph], None]] = []
