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

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import FrameType
from typing import Any

import numpy as np

from graphdsl._op_typing import NO_ATTRS, Typing, check_literal, literal_wants, type_op
from graphdsl._py_values import (
    constant_array,
    graph_inputs,
    literal_key,
    python_scalar,
    scalar_array,
    weight_type,
)
from graphdsl._source import Location, location_from, user_location
from graphdsl.builtin_policies import policy
from graphdsl.dims import Dim, StaticDim
from graphdsl.dtypes import DType, dtype
from graphdsl.literals import LiteralError
from graphdsl.policies import Policy
from graphdsl.symbol import Operand, Scalar, Symbol, _extension, register_extension
from graphdsl.types import GraphError, OpTypeError, TensorType

__all__ = [
    "Graph",
    "GraphError",
    "OpTypeError",
    "Operand",
    "Symbol",
    "TensorType",
    "register_extension",
    "value_names",
]


def building(values: Sequence[object], op: str) -> Graph:
    """The graph an op on ``values`` builds in: that of the first Symbol (or the branch
    being traced inside it), else the ``with`` block's."""
    for a in values:
        if isinstance(a, Symbol):
            return a.graph.innermost()
    if _CURRENT:
        return _CURRENT[-1]
    raise OpTypeError(
        f"{op}: no operand is a Symbol, so there is no graph to build in; build it inside "
        "`with graph:` (MAX's style)"
    )


def _apply_op(op: str, args: tuple[object, ...], attrs: dict[str, Any]) -> Symbol:
    """Build ``op`` in the graph of its first Symbol operand (or the ``with`` block's graph)."""
    for a in args:
        if isinstance(a, Symbol):
            return a.graph._apply(op, args, attrs)
    if _CURRENT:
        return _CURRENT[-1]._apply(op, args, attrs)
    raise OpTypeError(
        f"{op}: no operand is a Symbol, so there is no graph to build in; build it inside "
        "`with graph:` (MAX's style), or make a constant first with g.constant(...) or "
        "g.scalar(...)"
    )


_getframe = sys._getframe
# the graphs of the enclosing ``with`` blocks, innermost last
_CURRENT: list[Graph] = []
# the graphs a branch or loop body is being traced in, innermost last (see Graph.tracing)
_TRACING: list[Graph] = []


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

    >>> import numpy as np, graphdsl as gd
    >>> with gd.Graph("affine", input_types={"x": gd.TensorType(gd.float32, ("batch", 2))}) as g:
    ...     x, = g.inputs
    ...     w = g.constant(np.array([[1, 2], [3, 4]], np.float32))
    ...     g.output(x @ w + 1)
    >>> print(g)
    graph affine(%x: float32[batch, 2]) {
      %0: float32[2, 2] = constant [1.0, 2.0, 3.0, 4.0]
      %1: float32[batch, 2] = matmul %x, %0
      %2: int32?[] = literal 1
      %3: float32[batch, 2] = add %1, %2
      return %3
    }
    >>> gd.evaluate(g, {"x": np.array([[1, 1]], np.float32)})
    [array([[5., 7.]], dtype=float32)]
    """

    # the graph around this one, for a branch or loop body being traced (graphdsl.ops.control)
    parent: Graph | None = None
    # for such a graph: the values of the graphs around it that it uses, each once, in the
    # order of the inputs they became (after its own inputs), and those inputs by id(value)
    captures: list[Symbol]
    _captured: dict[int, Symbol]

    def __init__(
        self,
        name: str,
        input_types: Mapping[str, object] | Sequence[object] = (),
        *,
        policy: str | Policy = "default",
        warn_lossy: bool = False,
    ) -> None:
        if not isinstance(name, str):
            raise GraphError(f"a graph's name is a str, got {name!r}")
        self.name = name
        self.policy: Policy = _get_policy(policy)
        self.warn_lossy = warn_lossy
        self.nodes: list[Symbol] = []
        self.outputs: list[Symbol] = []
        # the outputs' names, given by g.output(name=value); [] leaves the exporter's default
        # (output0, output1, ...)
        self.output_names: list[str] = []
        self._output_called = False  # (a graph given g.output() of nothing returns nothing)
        self._frozen: str | None = None
        self._derived = False
        self._literals: dict[tuple[type, object], Symbol] = {}
        self._rules: dict[tuple[str, tuple[TensorType, ...]], Typing] = {}
        # what a literal operand must fit, per (op, operand types) (see _op_typing.literal_wants)
        self._wants: dict[tuple[str, tuple[TensorType, ...]], tuple[DType | None, ...]] = {}
        # (id of a literal, dtype) pairs checked to fit
        self._fits: set[tuple[int, DType]] = set()
        self.inputs: list[Symbol] = [
            self._add("input", (), {"name": in_name}, typ, (), None)
            for in_name, typ in graph_inputs(input_types)
        ]
        self.scalar = _ScalarFactory(self)
        for hook in _ON_CREATE:
            hook(self)

    # -- context manager
    def __enter__(self) -> Graph:
        """``with Graph(...) as g:`` makes ``g`` the graph that ops without a Symbol operand
        (``gd.ops.range(0, 'seq')``) build in, as MAX's ``with Graph(...)`` does."""
        _CURRENT.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.remove(self)

    def __repr__(self) -> str:
        return f"<Graph {self.name!r}: {len(self.inputs)} inputs, {len(self.nodes)} nodes>"

    def __str__(self) -> str:
        return str(_extension("format")(self))

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
        value = python_scalar(value, loc)
        if target is None:
            return self._literal(value, loc)
        arr = scalar_array(value, target, loc)
        return self._add("constant", (), {"value": arr}, TensorType(target, ()), (), loc)

    def _literal(self, value: Scalar, loc: Location | None) -> Symbol:
        # one node per distinct literal: x * 2 in a loop adds one literal, not thousands
        key = literal_key(value)
        hit = self._literals.get(key)
        if hit is None:
            lt = self.policy.literal_type(value)
            typ = TensorType(lt.dtype, (), lt.ambiguous)
            hit = self._literals[key] = self._add("literal", (), {"value": value}, typ, (), loc)
        return hit

    def weight(self, name: str, dtype: DType | str, shape: Sequence[int] = ()) -> Symbol:
        """A named weight (MAX's ``Weight``): a value of this dtype and static shape whose data
        is bound by name when the graph is evaluated or exported (``weights=``: a ``.npz`` or
        ``.safetensors`` file, :func:`graphdsl.load_weights`, or a dict of arrays).

        Declaring a name again with the same type gives the same value. Branches and loop
        bodies use the weights of the graph around them (declare them there).

        >>> import numpy as np, graphdsl as gd
        >>> g = gd.Graph("w", input_types={"x": gd.TensorType(gd.float32, (2,))})
        >>> w = g.weight("layer0.scale", gd.float32, (2,))
        >>> g.output(g.inputs[0] * w)
        >>> gd.evaluate(g, [np.ones(2, np.float32)], weights={"layer0.scale": np.ones(2, "f4")})
        [array([1., 1.], dtype=float32)]
        """
        loc = user_location()
        if not isinstance(name, str) or not name:
            raise GraphError(f"weight (at {loc}): a weight needs a non-empty name, got {name!r}")
        if self.parent is not None:
            raise GraphError(
                f"weight {name!r} (at {loc}): graph {self.name!r} is traced inside another "
                "graph; declare weights on the top-level graph (a branch or loop body uses "
                "them as it uses any value of the graph around it)"
            )
        typ = weight_type(name, dtype, shape, loc)
        if name in self.input_names:
            raise GraphError(f"weight {name!r} (at {loc}): graph {self.name!r} has an input of "
                             "that name; give the weight another")  # fmt: skip
        for node in self.nodes:
            if node.op == "weight" and node.attrs["name"] == name:
                if node.type != typ:
                    raise GraphError(
                        f"weight {name!r} (at {loc}) is declared {typ}, but it was declared "
                        f"{node.type} at {node.loc}; a weight has one type"
                    )
                return node
        return self._add("weight", (), {"name": name}, typ, (), loc)

    @property
    def weights(self) -> dict[str, TensorType]:
        """The weights this graph declares (:meth:`weight`), by name in declaration order:
        each one's dtype and static shape.

        >>> import graphdsl as gd
        >>> g = gd.Graph("w", input_types={"x": gd.TensorType(gd.float32, (2,))})
        >>> y = g.inputs[0] * g.weight("scale", gd.float32, (2,)) + g.weight("shift", "float16")
        >>> g.weights
        {'scale': TensorType(float32[2]), 'shift': TensorType(float16[])}
        """
        return {n.attrs["name"]: n.type for n in self.nodes if n.op == "weight"}

    def constant(self, value: object, dt: DType | str | None = None) -> Symbol:
        """A known-typed constant from a numpy array (or anything ``np.asarray`` takes).

        >>> import numpy as np, graphdsl as gd
        >>> g = gd.Graph("c")
        >>> g.constant(np.ones((2, 3), np.float32)).type
        TensorType(float32[2, 3])
        """
        loc = user_location()
        arr, target = constant_array(value, dt, loc)
        return self._add("constant", (), {"value": arr}, TensorType(target, arr.shape), (), loc)

    def output(self, *values: Symbol | Scalar, **named: Symbol | Scalar) -> None:
        """Set the graph's outputs (replacing any set before): the positional values, then
        the named ones in the order given. Names reach the exported model (a name that is
        not an identifier, such as ``present.0.key``, goes through ``**{...}``); when any
        output is named, the positional ones are named ``output0``, ``output1``, ... by
        position. With no values the graph returns nothing (as a MAX subgraph that only
        transfers values may); evaluating or exporting such a graph is refused.

        >>> import graphdsl as gd
        >>> g = gd.Graph("kv", input_types={"x": gd.float32})
        >>> x, = g.inputs
        >>> g.output(x + 1, **{"present.0.key": x * 2})
        >>> g.output_names
        ['output0', 'present.0.key']
        """
        self._check_mutable()
        outs = []
        loc = user_location()
        for v in (*values, *named.values()):
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
        names = [f"output{k}" for k in range(len(values))] + list(named) if named else []
        self._check_output_names(names, loc)
        self.outputs = outs
        self.output_names = names
        self._output_called = True

    def _check_output_names(self, names: list[str], loc: Location | None) -> None:
        taken = {s.attrs["name"]: "an input" for s in self.inputs}
        taken.update((n.attrs["name"], "a weight") for n in self.nodes if n.op == "weight")
        seen: set[str] = set()
        for name in names:
            if not name or not name.isprintable():
                raise GraphError(f"output (at {loc}): an output name must be a non-empty "
                                 f"printable str, got {name!r}")  # fmt: skip
            if name in seen:
                raise GraphError(f"output (at {loc}): two outputs are named {name!r}")
            if name in taken:
                raise GraphError(
                    f"output (at {loc}): output {name!r} has the name of {taken[name]} of "
                    f"graph {self.name!r}; ONNX names each value once: rename one of them"
                )
            seen.add(name)

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

    def _apply(
        self,
        op: str,
        args: tuple[object, ...],
        attrs: dict[str, Any],
        caller: FrameType | None = None,
    ) -> Symbol:
        """Build ``op`` on ``args``: operands become symbols, the type rule runs, checks.

        ``caller``: the frame of the code that called the graphdsl function calling this
        (Symbol's operators pass it); the node's location is found from there on (from this
        method's caller if not given), as :func:`~graphdsl._source.user_location` finds it.
        """
        if caller is None:
            caller = _getframe(1)
        if _TRACING and _TRACING[-1] is not self and _TRACING[-1].encloses(self):
            # an op on values of the graphs around a branch being traced builds in the branch
            return _TRACING[-1]._apply(op, args, attrs, caller)
        loc = location_from(caller)
        inputs: list[Symbol] = []
        for a in args:
            if isinstance(a, Symbol) and a.graph is self:
                inputs.append(a)
                continue
            t = type(a)  # a Python float or int used before: its literal (see _literal's keys)
            lit = self._literals.get((t, a)) if t is float or t is int else None
            inputs.append(lit if lit is not None else self._operand(a, op, loc))
        types = tuple([s.type for s in inputs])
        # A rule is a pure function of (policy, operand types, attributes): ops without
        # attributes are decided once per graph and operand types (a loop building the same
        # op repeats them), and their nodes share the resulting type objects.
        cached = not attrs
        hit = self._rules.get((op, types)) if cached else None
        if hit is None:
            hit = type_op(self.policy, op, types, attrs, loc)
            if cached:
                self._rules[(op, types)] = hit
        if cached:
            attrs = NO_ATTRS  # every node without attributes shares one read-only mapping
        in_dtypes, out, _ = hit
        wants: tuple[DType | None, ...] | None = None
        for k, s in enumerate(inputs):
            if s.op == "literal":
                if wants is None:  # (the same for every node of this op on these types)
                    wants = self._wants.get((op, types)) if cached else None
                    if wants is None:
                        wants = literal_wants(self.policy, types, hit)
                        if cached:
                            self._wants[(op, types)] = wants
                want = wants[k]
                if want is not None and (id(s), want) not in self._fits:
                    check_literal(self.policy, op, s.attrs["value"], want, types, loc)
                    # ids, not the literal: a tuple holding a Symbol compares it with == on
                    # a hash collision, and == builds a node
                    self._fits.add((id(s), want))
        sym = self._add(op, tuple(inputs), attrs, out, in_dtypes, loc)
        if self.warn_lossy:
            _extension("warn_lossy")(sym)
        return sym

    def _operand(self, a: object, op: str, loc: Location | None) -> Symbol:
        """A non-Symbol operand as a symbol of this graph: a literal or a constant."""
        if isinstance(a, Symbol):
            if self.parent is not None:  # a value of a graph around this one
                return self.capture(a, op)
            self._own(a, op, loc)  # raises: a Symbol of another graph
        if isinstance(a, (bool, int, float, complex, np.generic)):
            return self._literal(a.item() if isinstance(a, np.generic) else a, loc)
        if isinstance(a, np.ndarray):
            self._check_mutable()
            return self.constant(a)
        if isinstance(a, StaticDim):  # (a shape holds it as the int)
            return self._literal(int(a), loc)
        if isinstance(a, Dim):  # a symbolic size, as max.graph takes it: an int64 scalar
            return self._apply("dim_size", (), {"dim": a})
        raise OpTypeError(
            f"{op} (at {loc}): cannot use {a!r} (of type {type(a).__name__}) as an "
            "operand; use a Symbol, a Python scalar, a Dim or a numpy array"
        )

    def subgraph(
        self, name: str, input_types: Mapping[str, object] | Sequence[object] = ()
    ) -> Graph:
        """A graph to call many times with :func:`graphdsl.ops.call` (MAX's ``add_subgraph``):
        this graph's policy, its own inputs; typed once, frozen at its first call. It reads
        only its inputs (pass weights as arguments); the exporter makes it one ONNX local
        function (or inlines it at each call: ``export(..., functions=False)``).

        >>> import numpy as np, graphdsl as gd
        >>> g = gd.Graph("model", input_types={"x": gd.TensorType(gd.int16, ("n",))})
        >>> with g.subgraph("affine", {"v": gd.TensorType(gd.float32, ("m",))}) as sub:
        ...     sub.output(sub.inputs[0] * 2 + 1)
        >>> y = gd.ops.call(sub, gd.ops.call(sub, g.inputs[0]))
        >>> y.type
        TensorType(float32[n])
        >>> g.output(y)
        >>> gd.evaluate(g, [np.array([1, -1], np.int16)])
        [array([ 7., -1.], dtype=float32)]
        """
        return Graph(name, input_types, policy=self.policy, warn_lossy=self.warn_lossy)

    # -- graphs traced inside others (branches and loop bodies: graphdsl.ops.control)
    def nested(self, name: str, inputs: Sequence[tuple[str, TensorType]] = ()) -> Graph:
        """A new graph inside this one, in which a branch or loop body is traced: it has
        this graph's policy and ``inputs`` (ambiguous types allowed: a loop variable that
        starts as a literal), and the values of this graph (and of those around it) that it
        uses become more inputs (:meth:`capture`)."""
        sub = Graph(name, policy=self.policy, warn_lossy=self.warn_lossy)
        sub._derived = True  # (not one of the graphs a script builds)
        sub.parent = self
        sub.captures = []
        sub._captured = {}
        for in_name, typ in inputs:
            sub.inputs.append(sub._add("input", (), {"name": in_name}, typ, (), None))
        return sub

    def innermost(self) -> Graph:
        """The graph an op on this graph's values builds in now: this one, or the branch or
        loop body being traced inside it."""
        if _TRACING and _TRACING[-1] is not self and _TRACING[-1].encloses(self):
            return _TRACING[-1]
        return self

    def encloses(self, other: Graph) -> bool:
        """Whether ``other`` is a graph around this one (its parent, or the parent's...)."""
        p = self.parent
        while p is not None:
            if p is other:
                return True
            p = p.parent
        return False

    def capture(self, v: Symbol, op: str = "capture") -> Symbol:
        """``v``, a value of a graph around this one, as a value of this one: an input (one
        per value), through each graph between; a literal or a constant is made here."""
        if v.graph is self:
            return v
        hit = self._captured.get(id(v))
        if hit is not None:
            return hit
        outer = self.parent
        if outer is None or not (v.graph is outer or self.encloses(v.graph)):
            self._own(v, op, user_location())  # raises: values cannot cross graphs
        assert outer is not None
        src = v if v.graph is outer else outer.capture(v, op)
        if src.op == "literal":
            new = self._literal(src.attrs["value"], src.loc)
        elif src.op == "constant":  # copied (its array is shared): folding sees it here
            new = self._add("constant", (), src.attrs, src.type, (), src.loc)
        else:
            new = self._add("input", (), {"name": self._input_name(src)}, src.type, (), src.loc)
            self.inputs.append(new)
            self.captures.append(src)
        self._captured[id(v)] = new
        return new

    def _input_name(self, v: Symbol) -> str:
        """A name for the input that captures ``v``: its own name if it is an input, else
        ``c0``, ``c1``...; never one this graph's inputs have."""
        taken = {s.attrs["name"] for s in self.inputs}
        if v.op == "input" and v.attrs["name"] not in taken:
            return str(v.attrs["name"])
        k = len(self.inputs)
        while f"c{k}" in taken:
            k += 1
        return f"c{k}"

    def tracing(self) -> _Tracing:
        """``with sub.tracing():`` ops on values of the graphs around ``sub`` (and ops without
        a Symbol operand) build in ``sub``, as a branch or loop body function runs."""
        return _Tracing(self)

    # -- whole-graph operations
    def verify(self) -> None:
        """Check the graph's invariants; raise :class:`GraphError` naming the first violation.

        Single definition, topological order, ownership, outputs present, and every op's
        type rule recomputed from its operands' types under the graph's policy.
        """
        _extension("verify")(self)

    def release(self) -> None:
        """Drop this graph's nodes (it becomes empty).

        Symbols and their graph refer to each other, so a dropped graph waits for the cycle
        collector; passes release the intermediate graphs they made, so that a million-node
        pipeline frees each one at once instead.
        """
        self.nodes = []
        self.inputs = []
        self.outputs = []
        self.output_names = []
        self._literals = {}
        self._rules = {}
        self._wants = {}
        self._fits = set()

    def copy(self, name: str | None = None) -> Graph:
        """An unfrozen structural copy (same policy, inputs, nodes and outputs)."""
        copied: Graph = _extension("copy")(self, name or self.name)
        return copied

    def explain(self) -> str:
        """Each implicit cast the ``implicit_cast`` pass inserts, and why."""
        return str(_extension("explain")(self))

    def to_dot(self) -> str:
        """Graphviz dot text of the graph; Cast nodes are highlighted."""
        return str(_extension("to_dot")(self))

    def used(self) -> Iterable[Symbol]:
        """Nodes reachable from the outputs, in topological order."""
        live = {id(o) for o in self.outputs}
        keep: list[Symbol] = []
        for node in reversed(self.nodes):
            if id(node) in live or node.op == "input":
                keep.append(node)
                live.update(id(i) for i in node.inputs)
        return reversed(keep)


def value_names(graph: Graph) -> dict[int, str]:
    """``id(symbol) -> '%name'`` as ``print(graph)`` numbers them: inputs by name, the other
    values ``%0``, ``%1``... in order."""
    names: dict[int, str] = {id(s): f"%{s.attrs['name']}" for s in graph.inputs}
    count = 0
    for node in graph.nodes:
        if id(node) not in names:
            names[id(node)] = f"%{count}"
            count += 1
    return names


class _Tracing:
    """The ``with`` block of :meth:`Graph.tracing` (restores the stacks however it ends)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def __enter__(self) -> Graph:
        _TRACING.append(self.graph)
        _CURRENT.append(self.graph)
        return self.graph

    def __exit__(self, *exc: object) -> None:
        _CURRENT.pop()
        _TRACING.pop()


_get_policy = policy
# called with each new Graph (graphdsl._scripts collects the graphs a script builds)
_ON_CREATE: list[Callable[[Graph], None]] = []
