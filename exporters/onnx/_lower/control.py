"""Control flow: ``cond`` as ONNX ``If``, ``while_loop`` as ``Loop``; the graphs nested in
them (graphdsl.regions) as ONNX subgraphs.

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
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence

from onnx import GraphProto, NodeProto, helper

from exporters.onnx._builder import Builder, ExportError, V
from exporters.onnx._lower._common import LOWER, SymbolicDims, T, register
from exporters.onnx._types import onnx_type
from graphdsl.dtypes import Kind
from graphdsl.graph import Graph, Symbol
from graphdsl.regions import Region, regions_of
from graphdsl.types import TensorType

__all__ = ["lower_graph", "outer_names", "scope"]

# the memo entry that says the model has subgraphs reading values of the graph around them
NESTED = ("nested subgraphs",)


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
