"""The graphs nested in nodes (:mod:`graphdsl.regions`) through the implicit_cast pass.

When the pass meets a ``cond``, ``while_loop`` or ``call`` node it canonicalizes each graph
in it once (the several nodes of an op with several results, and the calls of one
subgraph, share the result): implicit casts made explicit, constants folded, identical
nodes merged, dead ones dropped, loop variables that started as literals no longer
ambiguous, and each output cast to the dtype it takes in the node (a branch's result to
the join of the branches' types, a loop body's to the carried type) inside the graph.
``explain`` says the same of them: the casts at the node (a loop's initial values, a call's
arguments), the casts of the nested graphs' results, and the conversions inside them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from graphdsl.graph import Graph, Symbol, TensorType
from graphdsl.ops._convert import cast_array
from graphdsl.passes.rewrite import Rewriter, drop_dead
from graphdsl.regions import Region, regions_of

__all__ = ["explain_regions", "rewrite_regions"]

Rewrite = Callable[[Graph, Rewriter], Graph]


def rewrite_regions(node: Symbol, rw: Rewriter, rewrite: Rewrite) -> dict[str, Any]:
    """``node``'s attributes with each nested graph rewritten by ``rewrite`` (the
    implicit_cast rewrite, which calls back here for the graphs nested in those)."""
    regions = node.attrs["regions"]
    key = ("regions", id(regions))
    hit = rw.memo.get(key)
    if hit is None:
        new = tuple(r._replace(graph=_canonical(r, rw, rewrite)) for r in regions)
        hit = rw.memo[key] = (regions, new)  # (the old tuple kept alive: its id is the key)
    return {**node.attrs, "regions": hit[1]}


def _canonical(r: Region, rw: Rewriter, rewrite: Rewrite) -> Graph:
    key = ("graph", id(r.graph), r.results)
    hit = rw.memo.get(key)
    if hit is not None:
        return hit[1]  # type: ignore[no-any-return]
    old = r.graph
    child = Rewriter(old, fold=True, cse=True)
    child.memo = rw.memo  # one rewrite per nested graph, however deep
    for s in child.new.inputs:  # a loop variable traced from a literal: known from now on
        if s.type.ambiguous:
            s.type = TensorType(s.dtype, s.shape)
    new = rewrite(old, child)
    outputs = []
    for o, v, want in zip(old.outputs, new.outputs, r.results, strict=True):
        if o.op == "literal":  # straight to the node's dtype (it was checked to fit)
            with np.errstate(all="ignore"):
                value = cast_array(np.asarray(o.attrs["value"]), want)  # as evaluate
            v = child.add("constant", (), {"value": value}, TensorType(want, ()), (), o.loc)
        elif v.dtype is not want:
            v = child.add("cast", (v,), {"to": want}, TensorType(want, v.shape), (v.dtype,), o.loc)
        outputs.append(v)
    new.outputs = outputs
    drop_dead(new)
    rw.memo[key] = (old, new)
    return new


# ---------------------------------------------------------------------------- explain


def explain_regions(
    graph: Graph,
    node: Symbol,
    names: dict[int, str],
    shown: set[int],
    explain: Callable[[Graph], str],
) -> list[str]:
    """The conversions of a ``cond``, ``while_loop`` or ``call`` node, once per op (its
    several result nodes share them) and, for the graphs nested in it, once per graph."""
    regions = regions_of(node.attrs)
    if id(regions) in shown:
        return []
    shown.add(id(regions))
    p = graph.policy
    where = f"{node.op}{_name(regions)}" + (f" at {node.loc}" if node.loc else "")
    out: list[str] = []
    for k, (arg, want) in enumerate(zip(node.inputs, node.in_dtypes, strict=True)):
        if arg.dtype is want and arg.op != "literal":
            continue
        what = (
            f"literal {arg.attrs['value']!r} -> constant {want.name}"
            if arg.op == "literal"
            else f"{names[id(arg)]} {arg.dtype.name} -> {want.name}"
        )
        if node.op == "while_loop":
            out.append(f"  {where}: the initial value of loop variable {k}, {what} (the carried "
                       f"type: {_fixed_point(regions[1], k)})")  # fmt: skip
        elif node.op == "call":
            param = regions[0].graph.inputs[k]
            d = p.decide(arg.dtype, arg.ambiguous, want, False)
            out.append(f"  {where}: argument {k}, {what} (parameter {param.attrs['name']!r} "
                       f"is {param.type}; rule: {d.rule})")  # fmt: skip
    for r in regions:
        for k, (o, want) in enumerate(zip(r.graph.outputs, r.results, strict=True)):
            if o.dtype is want and (o.op != "literal" or r.role == "call"):
                continue
            kind = f"literal {o.attrs['value']!r}" if o.op == "literal" else str(o.type)
            text = f"  {where}: {_of(r)}'s result {k}, {kind} -> {want.name}"
            if r.role in ("then", "else"):
                a, b = (x.graph.outputs[k].type for x in regions)
                d = p.decide(a.dtype, a.ambiguous, b.dtype, b.ambiguous)
                text += f" (the join of the branches' types {a} x {b}: {d.rule})"
            elif r.role == "body":
                text += f" (the carried type: {_fixed_point(r, k)})"
            out.append(text)
        if id(r.graph) in shown:
            continue
        shown.add(id(r.graph))
        inside = f"{where}, in {_of(r)}"
        for entry in re.split(r"\n(?=  \S)", explain(r.graph))[1:]:
            out.append(f"  {inside}: {entry.strip()}")
    return out


def _name(regions: tuple[Region, ...]) -> str:
    return f" {regions[0].graph.name}" if regions and regions[0].role == "call" else ""


def _of(r: Region) -> str:
    if r.role == "call":
        return f"subgraph {r.graph.name}"
    return {"then": "the then branch", "else": "the else branch", "body": "the body",
            "predicate": "the predicate"}[r.role]  # fmt: skip


def _fixed_point(body: Region, k: int) -> str:
    carried = body.graph.inputs[k].type
    returned = body.graph.outputs[k].type
    return (
        f"{carried.dtype.name}, the least fixed point of the loop over the policy's lattice: "
        f"for loop variables of the carried types the body returns {returned} for it"
    )
