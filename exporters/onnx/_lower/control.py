"""Control flow: ``cond`` as ONNX ``If``, ``while_loop`` as ``Loop``, ``call`` of a subgraph
as a call of an ONNX local function (or its nodes inlined); the graphs nested in them
(graphdsl.regions) as ONNX subgraphs and functions.

A nested graph arrives canonicalized (the implicit_cast pass made its casts explicit, its
outputs already of the node's result dtypes) and is lowered op by op as the model's graph
is, by a builder of its own scope (:func:`scope`): it shares the model's name counter and
constants (an If branch or a Loop body reads the values around it by name, initializers
included) and starts from copies of the caches of the scope around it (a cast or shape
made there is visible inside; one made inside must not leak out).

Loop runs its body while a condition holds, and takes the first condition as an input:
the predicate is lowered twice, before the Loop on the initial values and at the end of
the body on the new ones (``while p(v): v = body(v)``). The initial values are already of
the carried types (the fixed point of the body's types), as the Loop needs them.

A subgraph becomes one local function (domain ``graphdsl.local``) on its first call; its
body is lowered by a builder that sees nothing around it (a function reads only its
inputs; its constants are Constant nodes), and its symbolic dimensions come from its
inputs. onnxruntime inlines local functions when it loads a model.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence

import numpy as np
from onnx import FunctionProto, GraphProto, NodeProto, helper

from exporters.onnx._builder import Builder, ExportError, V
from exporters.onnx._lower._common import LOWER, SymbolicDims, T, register
from exporters.onnx._types import onnx_type
from graphdsl.dtypes import Kind
from graphdsl.graph import Graph, Symbol
from graphdsl.regions import Region, regions_of, walk
from graphdsl.types import TensorType

__all__ = ["DOMAIN", "FUNCTIONS", "Functions", "lower_graph", "outer_names", "scope"]

# the memo entry that says the model has subgraphs reading values of the graph around them
NESTED = ("nested subgraphs",)
# the memo entry of the model's local functions (made by export, shared by every scope)
FUNCTIONS = ("functions",)
DOMAIN = "graphdsl.local"  # the opset domain of the local functions


# A subgraph whose constants (its nested subgraphs' included) take this many bytes is
# inlined at each call instead of made a local function: a function has no initializers, so
# its constants would be Constant nodes in the model file itself, never external data, and
# read whole by every reader of the model (measured: an int4 Llama of 156M parameters whose
# quantized layers are constants had a 158 MB model.onnx, and a session of it took 1138 MB
# where onnxruntime alone took 468 MB). Inlined, they are initializers like any weight.
INLINE_CONSTANTS_FROM = 1 << 20


class Functions:
    """The model's local functions, one per subgraph called (``gd.ops.call``), or none
    when subgraphs are inlined at each call (``inline``, or a subgraph that holds
    :data:`INLINE_CONSTANTS_FROM` bytes of constants or more)."""

    def __init__(self, opset: int, *, inline: bool) -> None:
        self.opset = opset
        self.inline = inline
        self.protos: list[FunctionProto] = []
        # by id of the subgraph (kept alive): the function's name, the inputs it takes
        self._names: dict[int, tuple[str, tuple[int, ...], Graph]] = {}
        self._heavy: dict[int, tuple[bool, Graph]] = {}

    def contrib(self, name: str, inputs: list[str], outputs: list[str], node: NodeProto,
                doc: str) -> str:  # fmt: skip
        """``name``: a local function (made once) holding ``node``, one onnxruntime contrib
        (com.microsoft) op, so that its opset import goes with it into any graph or function
        that calls it (MatMulNBits, GroupQueryAttention, SkipSimplifiedLayerNormalization)."""
        if not any(p.name == name for p in self.protos):
            self.protos.append(helper.make_function(
                DOMAIN, name, inputs, outputs, [node],
                opset_imports=[helper.make_opsetid("com.microsoft", 1)], doc_string=doc,
            ))  # fmt: skip
        return name

    def inlined(self, graph: Graph) -> bool:
        """Whether calls of ``graph`` are lowered in place (see :data:`INLINE_CONSTANTS_FROM`)."""
        if self.inline:
            return True
        hit = self._heavy.get(id(graph))
        if hit is None:
            total = sum(np.asarray(n.attrs["value"]).nbytes for g in walk(graph)
                        for n in g.nodes if n.op == "constant")  # fmt: skip
            hit = self._heavy[id(graph)] = (total >= INLINE_CONSTANTS_FROM, graph)
        return hit[0]

    def name_of(self, b: Builder, graph: Graph) -> tuple[str, tuple[int, ...]]:
        """The function of ``graph``, made on its first call, and which of the subgraph's
        inputs it takes: those its body reads (onnxruntime refuses a float8 value for an
        input nothing reads: the input's type is then not inferred, and its default type
        list lacks float8; measured on 1.32)."""
        hit = self._names.get(id(graph))
        if hit is not None:
            return hit[0], hit[1]
        taken = {n for n, _, _ in self._names.values()}
        name, k = graph.name, 1
        while name in taken:
            k += 1
            name = f"{graph.name}_{k}"
        child = _function_scope(b)
        inputs = [V(child.fresh(s.attrs["name"]), s.dtype) for s in graph.inputs]
        sources: dict[str, tuple[str, int]] = {}
        for v, s in zip(inputs, graph.inputs, strict=True):
            for axis, d in enumerate(s.shape):
                if isinstance(d, str):
                    sources.setdefault(d, (v.name, axis))
        outs = _outputs(child, lower_graph(child, graph, inputs, SymbolicDims(child, sources)))
        # a function has no initializers: its constants are Constant nodes
        consts = [helper.make_node("Constant", [], [t.name], value=t)
                  for t in child.model.graph.initializer]  # fmt: skip
        read = {x for n in child.nodes for x in n.input} | outer_names(child.nodes)
        kept = tuple(k for k, v in enumerate(inputs) if v.name in read)
        self._names[id(graph)] = (name, kept, graph)
        self.protos.append(helper.make_function(
            DOMAIN, name, [inputs[k].name for k in kept], [v.name for v in outs],
            [*consts, *child.nodes],
            opset_imports=[helper.make_opsetid("", self.opset), helper.make_opsetid(DOMAIN, 1)],
            doc_string=f"graphdsl subgraph {graph.name!r}",
        ))  # fmt: skip
        return name, kept


def scope(b: Builder, dims: SymbolicDims) -> tuple[Builder, SymbolicDims]:
    """A builder (and symbolic dimensions) for a graph nested in ``b``'s: every setting and
    the name counter shared, initializers written to the model's, caches copied."""
    child = copy.copy(b)
    child.model = type(b.model)()
    child.nodes = child.model.graph.node
    child._consts = dict(b._consts)
    child._casts = dict(b._casts)
    child.memo = dict(b.memo)
    child.no_negative_zero = set(b.no_negative_zero)
    child.bypassed = False
    child_dims = SymbolicDims(child, dims.sources)
    child_dims._cache = dict(dims._cache)
    child_dims._shapes = dict(dims._shapes)
    b.memo[NESTED] = True
    return child, child_dims


def _function_scope(b: Builder) -> Builder:
    """A builder for a function's body: only the model's settings, name counter and
    functions; nothing of the scopes around it (a function sees only its inputs)."""
    child = copy.copy(b)
    child.model = type(b.model)()
    child.nodes = child.model.graph.node
    child.initializers = child.model.graph.initializer
    child.external = None
    child._consts, child._casts = {}, {}
    child.memo = {FUNCTIONS: b.memo[FUNCTIONS]}
    child.no_negative_zero = set()
    child.bypassed = False
    return child


def lower_graph(b: Builder, graph: Graph, inputs: Sequence[V], dims: SymbolicDims) -> list[V]:
    """Lower the nodes of a (canonicalized) nested ``graph`` into ``b``, its inputs taking
    ``inputs``; its outputs' values."""
    env: dict[int, V] = {}
    for s, v in zip(graph.inputs, inputs, strict=True):
        if v.dtype is not s.dtype:
            raise ExportError(f"internal: input {s.attrs['name']!r} of graph {graph.name!r} is "
                              f"{s.dtype.name}, given {v.dtype.name}")  # fmt: skip
        env[id(s)] = v
    around = b.context
    for node in graph.nodes:
        op = node.op
        if op == "input":
            continue
        if node.dtype.kind is Kind.complex:
            raise ExportError(
                f"{op} at {node.loc} gives {node.dtype.name}: complex dtypes cannot be exported "
                "to ONNX for onnxruntime; keep complex values out of exported graphs"
            )
        if op == "constant":
            env[id(node)] = b.const(node.attrs["value"], node.dtype, "const")
            continue
        b.context = node
        v = LOWER[op](b, node, [env[id(i)] for i in node.inputs], dims)
        if v.dtype is not node.dtype:
            raise ExportError(
                f"internal: the lowering of {op} at {node.loc} gave {v.dtype.name}, but the "
                f"op's result is {node.dtype.name}"
            )
        env[id(node)] = v
        dims.seen(node.type.shape, v.name)
    b.context = around
    return [env[id(o)] for o in graph.outputs]


def _value_info(name: str, t: TensorType) -> object:
    dims = [d if isinstance(d, str) else int(d) for d in t.shape]
    return helper.make_tensor_value_info(name, onnx_type(t.dtype), dims)


def _outputs(b: Builder, values: Sequence[V]) -> list[V]:
    """``values`` as outputs of ``b``'s graph: each made by a node of it, each once (an
    Identity for a value from around it, an input, or a repeat)."""
    made = {o for n in b.nodes for o in n.output}
    out: list[V] = []
    for v in values:
        if v.name not in made or any(v.name == o.name for o in out):
            v = b.node("Identity", [v.name], v.dtype)
        out.append(v)
    return out


def _subgraph(
    b: Builder, dims: SymbolicDims, r: Region, inputs: Sequence[V], name: str
) -> GraphProto:
    """The If branch of region ``r``: no inputs, the values around it read by name."""
    child, child_dims = scope(b, dims)
    outs = _outputs(child, lower_graph(child, r.graph, inputs, child_dims))
    g = child.model.graph
    g.name = name
    g.output.extend(_value_info(v.name, TensorType(v.dtype, o.shape))
                    for v, o in zip(outs, r.graph.outputs, strict=True))  # fmt: skip
    return g


def _node(b: Builder, op: str, inputs: Iterable[str], outputs: Sequence[str]) -> NodeProto:
    n: NodeProto = b.nodes.add()
    n.op_type = op
    n.input.extend(inputs)
    n.output.extend(outputs)
    return n


@register("cond")
def _cond(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # one If for the results of one cond (each result is a graphdsl node)
    regions = regions_of(node.attrs)
    key = ("cond", id(regions), tuple(a.name for a in args))
    outs: list[V] | None = b.memo.get(key)
    if outs is None:
        then = regions[0]
        label = b.fresh("cond")
        branches = [_subgraph(b, dims, r, [args[i] for i in r.args], f"{label}_{r.role}")
                    for r in regions]  # fmt: skip
        names = [b.fresh("cond") for _ in then.results]
        n = _node(b, "If", [args[0].name], names)
        n.attribute.extend([helper.make_attribute("then_branch", branches[0]),
                            helper.make_attribute("else_branch", branches[1])])  # fmt: skip
        outs = [V(nm, d) for nm, d in zip(names, then.results, strict=True)]
        b.memo[key] = outs
    return outs[int(node.attrs["index"])]


@register("while_loop")
def _while(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # one Loop for the loop variables of one while_loop; its condition input is the first
    # test, made before it on the initial values
    regions = regions_of(node.attrs)
    key = ("while_loop", id(regions), tuple(a.name for a in args))
    outs: list[V] | None = b.memo.get(key)
    if outs is None:
        pred, body = regions
        n = len(body.results)
        first = lower_graph(b, pred.graph, [args[i] for i in pred.args], dims)[0]
        child, child_dims = scope(b, dims)
        iteration = V(child.fresh("iteration"), T.int64)
        go_on = V(child.fresh("go_on"), T.bool)
        carried = [V(child.fresh("carried"), d) for d in body.results]
        new = lower_graph(child, body.graph, [[*carried, *args[n:]][i] for i in body.args],
                          child_dims)  # fmt: skip
        again = lower_graph(child, pred.graph, [[*new, *args[n:]][i] for i in pred.args],
                            child_dims)[0]  # fmt: skip
        results = _outputs(child, [again, *new])
        g = child.model.graph
        g.name = b.fresh("while_loop_body")
        types = [s.type for s in body.graph.inputs[:n]]
        g.input.extend([_value_info(iteration.name, TensorType(T.int64)),
                        _value_info(go_on.name, TensorType(T.bool)),
                        *(_value_info(v.name, TensorType(v.dtype, t.shape))
                          for v, t in zip(carried, types, strict=True))])  # fmt: skip
        g.output.extend([_value_info(results[0].name, TensorType(T.bool)),
                         *(_value_info(v.name, TensorType(v.dtype, t.shape))
                           for v, t in zip(results[1:], types, strict=True))])  # fmt: skip
        names = [b.fresh("while_loop") for _ in range(n)]
        loop = _node(b, "Loop", ["", first.name, *(a.name for a in args[:n])], names)
        loop.attribute.append(helper.make_attribute("body", g))
        outs = [V(nm, d) for nm, d in zip(names, body.results, strict=True)]
        b.memo[key] = outs
    return outs[int(node.attrs["index"])]


@register("call")
def _call(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # a call of the subgraph's local function (one per subgraph), or its nodes inlined
    (r,) = regions_of(node.attrs)
    key = ("call", id(r.graph), tuple(a.name for a in args))
    outs: list[V] | None = b.memo.get(key)
    if outs is None:
        functions: Functions = b.memo[FUNCTIONS]
        if functions.inlined(r.graph):
            sources: dict[str, tuple[str, int]] = {}
            for v, s in zip(args, r.graph.inputs, strict=True):
                for axis, d in enumerate(s.shape):
                    if isinstance(d, str):  # the subgraph's names, from the arguments
                        sources.setdefault(d, (v.name, axis))
            outs = lower_graph(b, r.graph, args, SymbolicDims(b, sources))
        else:
            name, kept = functions.name_of(b, r.graph)
            names = [b.fresh(name) for _ in r.results]
            n = _node(b, name, [args[k].name for k in kept], names)
            n.domain = DOMAIN
            outs = [V(nm, d) for nm, d in zip(names, r.results, strict=True)]
        b.memo[key] = outs
    return outs[int(node.attrs["index"])]


def outer_names(nodes: Iterable[NodeProto]) -> set[str]:
    """The names that the subgraphs of ``nodes`` (at any depth) read: values of the graphs
    around them among them (an over-approximation: names made inside are fresh, unique in
    the model, and never those of values around them)."""
    found: set[str] = set()
    todo = [a.g for n in nodes for a in n.attribute if a.type == a.GRAPH]
    while todo:
        g = todo.pop()
        for n in g.node:
            found.update(n.input)
            todo.extend(a.g for a in n.attribute if a.type == a.GRAPH)
    return found
