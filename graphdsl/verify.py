"""The graph verifier: structural invariants and every op's type rule."""

from __future__ import annotations

from graphdsl.graph import Graph, GraphError, Symbol, register_extension
from graphdsl.opdef import OPS
from graphdsl.policies import PromotionError
from graphdsl.regions import regions_of

__all__ = ["verify"]


def _where(node: Symbol) -> str:
    return f"node %{node.id} ({node.op}{f' at {node.loc}' if node.loc else ''})"


def verify(
    graph: Graph,
    *,
    explicit_casts: bool = False,
    check_types: bool = True,
    _done: set[int] | None = None,
) -> None:
    """Raise :class:`GraphError` naming the first violated invariant.

    Checks: every node is defined once, belongs to ``graph``, and uses only values
    defined before it (so the graph is acyclic and in topological order); outputs exist
    and belong to the graph; every op's type rule, recomputed from its operands under the
    graph's policy, gives the recorded operand dtypes and result type. With
    ``explicit_casts=True`` (after the ``implicit_cast`` pass) also: no node needs an
    implicit conversion and no ambiguous literal is left. ``check_types=False`` checks the
    structure only (types were checked when each node was built). The graphs nested in
    nodes (branches, loop bodies, called subgraphs) are verified too, each once; after
    ``implicit_cast`` their outputs must have the dtypes they take in the node.
    """
    done = set() if _done is None else _done
    seen: dict[int, int] = {}
    for i, node in enumerate(graph.nodes):
        if node.graph is not graph:
            raise GraphError(f"{_where(node)} belongs to graph {node.graph.name!r}")
        if id(node) in seen:
            raise GraphError(f"{_where(node)} is defined twice (positions {seen[id(node)]}, {i})")
        if node.id != i:
            raise GraphError(f"{_where(node)} is at position {i} but numbered {node.id}")
        for arg in node.inputs:
            if arg.graph is not graph:
                raise GraphError(
                    f"{_where(node)} uses a value of graph {arg.graph.name!r}: values cannot "
                    "cross graphs"
                )
            if id(arg) not in seen:
                kind = "itself" if arg is node else f"%{arg.id} ({arg.op}), defined later"
                raise GraphError(
                    f"{_where(node)} uses {kind}: the graph has a cycle or is out of "
                    "topological order"
                )
        seen[id(node)] = i
        if check_types:
            _check_rule(graph, node, explicit_casts)
        for r in regions_of(node.attrs):
            if id(r.graph) not in done:
                done.add(id(r.graph))
                verify(r.graph, explicit_casts=explicit_casts, check_types=check_types,
                       _done=done)  # fmt: skip
            if explicit_casts:
                for k, (o, want) in enumerate(zip(r.graph.outputs, r.results, strict=True)):
                    if o.dtype is not want:
                        raise GraphError(
                            f"{_where(node)}: result {k} of its {r.role} graph is "
                            f"{o.dtype.name} but the node takes it as {want.name}; the "
                            "implicit_cast pass should have cast it inside the graph"
                        )
    for k, out in enumerate(graph.outputs):
        if id(out) not in seen:
            raise GraphError(f"output {k} of graph {graph.name!r} is not a node of the graph")
    if not graph.outputs:
        raise GraphError(f"graph {graph.name!r} has no outputs: call g.output(...)")


def _check_rule(graph: Graph, node: Symbol, explicit_casts: bool) -> None:
    if node.op == "constant":
        value = node.attrs["value"]
        if value.dtype != node.dtype.np or tuple(value.shape) != node.shape:
            raise GraphError(
                f"{_where(node)}: its value is {value.dtype}{list(value.shape)} but its type "
                f"says {node.type}"
            )
        return
    if node.op in ("input", "literal", "weight"):
        if explicit_casts and node.op == "literal":
            raise GraphError(f"{_where(node)}: an ambiguous literal survived implicit_cast")
        return
    opdef = OPS.get(node.op)
    if opdef is None:
        raise GraphError(f"{_where(node)}: unknown op {node.op!r}")
    try:
        in_dtypes, out = opdef.rule(graph.policy, [i.type for i in node.inputs], dict(node.attrs))
    except (PromotionError, TypeError, ValueError) as e:
        raise GraphError(f"{_where(node)}: its type rule fails: {e}") from None
    if in_dtypes != node.in_dtypes or out != node.type:
        raise GraphError(
            f"{_where(node)}: recorded operand dtypes {[d.name for d in node.in_dtypes]} and "
            f"type {node.type}, but the rule gives {[d.name for d in in_dtypes]} and {out}"
        )
    if explicit_casts:
        for arg, want in zip(node.inputs, node.in_dtypes, strict=True):
            if arg.dtype is not want:
                raise GraphError(
                    f"{_where(node)}: operand %{arg.id} is {arg.dtype.name} but the op computes "
                    f"in {want.name}; the implicit_cast pass should have inserted a cast"
                )


register_extension("verify", verify)
