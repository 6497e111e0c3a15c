"""Transpose sinking: layout transposes pushed through elementwise ops and reductions, so that
pairs of them cancel.

A channels-last network built on channels-first vision ops (graphdsl's conv2d and pools
take NCHW; ``input_layout="NHWC"`` wraps each in a transpose in and one out) transposes
every activation out of channels first and back between two convolutions: ``conv -> T ->
relu -> T' -> conv`` where T' undoes T. An elementwise op commutes with a transpose
(``relu(T(x)) == T(relu(x))``, element for element), so the pass carries each transpose
past the elementwise ops after it, onto their results, until it meets another transpose
(the two compose, and cancel when they undo each other) or an op that reads the layout
(a convolution, a matmul, a reshape, an output), where it is made. Constant operands of
the elementwise ops (a per-channel bias or scale) are transposed when the graph is
exported, once; a reduction reduces the corresponding axes of the untransposed value.
The example CNN's channels-last graph goes from 7 transposes to 1 (its input's).

Results are the same values, element for element: transposes move data, elementwise ops
compute each element from the same operands, and a reduction reduces the same elements
(in another memory order: float sums are free in their order, as everywhere in the
exporter). The pass keeps the graph as it was unless it has fewer transposes afterwards,
and leaves graphs with nested graphs (cond, while_loop, call) alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphdsl._source import Location
from graphdsl.graph import Graph, Symbol, TensorType
from graphdsl.opdef import OPS
from graphdsl.passes.rewrite import Rewriter, drop_dead

__all__ = ["sink_transposes"]

# op families whose ops compute each element from the same element of each (broadcast)
# operand, with no attribute naming an axis
_ELEMENTWISE_FAMILIES = frozenset({"unary", "activation", "cast", "elementwise", "logic"})
# reductions whose only attributes are the axes and keepdims
_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "all", "any"})

Perm = tuple[int, ...]


@dataclass(frozen=True)
class _Carried:
    """An old value, not made in the new graph: it is ``transpose(value, perm)``; ``loc`` is
    where the transpose was written (the node it becomes, if it must be made)."""

    value: Symbol
    perm: Perm
    loc: Location | None


def _inverse(p: Perm) -> Perm:
    inv = [0] * len(p)
    for j, a in enumerate(p):
        inv[a] = j
    return tuple(inv)


def _untransposed_type(t: TensorType, p: Perm) -> TensorType:
    """The type of ``v`` where ``transpose(v, p)`` has type ``t``."""
    shape: list[object] = [None] * len(p)
    for j, a in enumerate(p):
        shape[a] = t.shape[j]
    return TensorType(t.dtype, tuple(shape), t.ambiguous)  # type: ignore[arg-type]


def _elementwise(op: str) -> bool:
    d = OPS.get(op)
    return d is not None and d.family in _ELEMENTWISE_FAMILIES


class _Sinker:
    def __init__(self, graph: Graph) -> None:
        self.old = graph
        self.rw = Rewriter(graph)
        self.carried: dict[int, _Carried] = {}  # by id of the old symbol
        self.made: dict[int, Symbol] = {}  # carried transposes made, by id of the old symbol

    def value(self, s: Symbol) -> Symbol:
        """The new graph's value of old symbol ``s``: a carried transpose is made here."""
        c = self.carried.get(id(s))
        if c is None:
            return self.rw.map[id(s)]
        made = self.made.get(id(s))
        if made is None:
            made = self.made[id(s)] = self.rw.add(
                "transpose", (c.value,), {"perm": c.perm}, s.type, (s.dtype,), c.loc
            )
        return made

    def run(self) -> Graph:
        for node in self.old.nodes:
            if node.op == "input":
                continue
            if node.op == "transpose":
                self.transpose(node)
            elif not ((_elementwise(node.op) and self.elementwise(node))
                      or (node.op in _REDUCTIONS and self.reduction(node))):  # fmt: skip
                self.rw.copy_node(node, tuple(self.value(i) for i in node.inputs))
        self.rw.new.outputs = [self.value(o) for o in self.old.outputs]
        self.rw.new.output_names = list(self.old.output_names)
        return drop_dead(self.rw.new)

    def transpose(self, node: Symbol) -> None:
        src = node.inputs[0]
        q: Perm = node.attrs["perm"]
        c = self.carried.get(id(src))
        base, p = (c.value, tuple(c.perm[i] for i in q)) if c else (self.rw.map[id(src)], q)
        if p == tuple(range(len(p))):  # it undoes the carried one
            self.rw.map[id(node)] = base
        else:
            self.carried[id(node)] = _Carried(base, p, node.loc)

    def elementwise(self, node: Symbol) -> bool:
        """Carry the transpose of a carried operand past ``node`` when every other operand
        is carried the same way, a constant (transposed here) or a scalar."""
        ins = node.inputs
        carried = [self.carried.get(id(i)) for i in ins]
        first = next((c for c in carried if c is not None), None)
        if first is None:
            return False
        p, rank = first.perm, node.rank
        if len(p) != rank:
            return False
        args: list[Symbol] = []
        for s, c in zip(ins, carried, strict=True):
            if c is not None:
                if c.perm != p:
                    return False
                args.append(c.value)
                continue
            if s.rank == 0:
                args.append(self.value(s))
                continue
            mapped = self.rw.map[id(s)]
            if mapped.op != "constant" or s.rank > rank:
                return False
            value = np.asarray(mapped.attrs["value"])
            value = value.reshape((1,) * (rank - value.ndim) + value.shape)
            moved = np.ascontiguousarray(np.transpose(value, _inverse(p)))
            typ = TensorType(mapped.dtype, tuple(moved.shape))
            args.append(self.rw.add("constant", (), {"value": moved}, typ, (), mapped.loc))
        new = self.rw.add(node.op, tuple(args), node.attrs, _untransposed_type(node.type, p),
                          node.in_dtypes, node.loc)  # fmt: skip
        self.carried[id(node)] = _Carried(new, p, first.loc)
        return True

    def reduction(self, node: Symbol) -> bool:
        """Reduce the carried operand's corresponding axes; the kept axes come out in the
        untransposed value's order, carried by the permutation that orders them back."""
        c = self.carried.get(id(node.inputs[0]))
        if c is None or set(node.attrs) != {"axis", "keepdims"}:
            return False
        p = c.perm
        axes: tuple[int, ...] = node.attrs["axis"]
        new_axes = tuple(sorted(p[a] for a in axes))
        attrs = {"axis": new_axes, "keepdims": node.attrs["keepdims"]}
        if node.attrs["keepdims"]:
            typ, q = _untransposed_type(node.type, p), p
        else:
            kept = [j for j in range(len(p)) if j not in axes]  # the result's axes, in order
            order = sorted(p[j] for j in kept)  # where they are in the untransposed value
            inv = _inverse(p)
            shape = tuple(node.type.shape[kept.index(inv[a])] for a in order)
            typ = TensorType(node.type.dtype, shape, node.type.ambiguous)
            q = tuple(order.index(p[j]) for j in kept)
        new = self.rw.add(node.op, (c.value,), attrs, typ, node.in_dtypes, node.loc)
        if q == tuple(range(len(q))):
            self.rw.map[id(node)] = new
        else:
            self.carried[id(node)] = _Carried(new, q, c.loc)
        return True


def _transposes(graph: Graph) -> int:
    return sum(1 for n in graph.nodes if n.op == "transpose")


def sink_transposes(graph: Graph) -> Graph:
    """A copy of ``graph`` with its transposes carried past elementwise ops and reductions
    and cancelled where they meet their inverse (module doc); ``graph`` itself where that
    leaves as many transposes (or the graph has nested graphs).

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("t", input_types={"x": gd.TensorType(gd.float32, (2, 3, 4))})
    >>> bias = np.arange(3, dtype=np.float32)  # per channel: the last axis, transposed
    >>> y = gd.ops.relu(gd.ops.transpose(g.inputs[0], (0, 2, 1)) + bias)
    >>> g.output(gd.ops.transpose(y, (0, 2, 1)))
    >>> print(gd.passes.sink_transposes(gd.passes.canonicalize(g)))
    graph t(%x: float32[2, 3, 4]) {
      %0: float32[1, 3, 1] = constant [0.0, 1.0, 2.0]
      %1: float32[2, 3, 4] = add %x, %0
      %2: float32[2, 3, 4] = relu %1
      return %2
    }
    """
    before = _transposes(graph)
    if before == 0 or any("regions" in n.attrs for n in graph.nodes):
        return graph
    new = _Sinker(graph).run()
    if _transposes(new) >= before:
        new.release()
        return graph
    return new
