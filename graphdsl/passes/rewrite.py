"""Rewriter: build a new graph from an old one, node by node (the base of every pass).

A rewriter may also simplify as it adds, in the manner of a folding IR builder: with
``fold=True`` a node whose operands are all (small) constants becomes a constant of its
value, unless that constant would be larger than those it is made from (folding never grows
a model: see :func:`foldable`), and with ``cse=True`` a node identical to one added before
(same op, operands, attributes and types) is not added again: the earlier one is returned.
The standard pipeline runs implicit_cast, folding and CSE this way in one sweep over the graph.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from graphdsl._source import Location
from graphdsl.dtypes import DType
from graphdsl.graph import Graph, Symbol, TensorType, register_extension
from graphdsl.ops._define import apply_op, uncomputable
from graphdsl.shapes import num_elements

__all__ = ["MAX_FOLDED_ELEMENTS", "TINY_FOLDED_ELEMENTS", "Rewriter", "drop_dead", "foldable"]

# folding reads every operand and writes the result: larger ones are left to run time
MAX_FOLDED_ELEMENTS = 1 << 16
# a folded result may outgrow its constant operands up to this many elements (a scalar made
# a short vector, a small table computed from a few numbers): larger ones must not grow
TINY_FOLDED_ELEMENTS = 64
# constants up to this size are merged by value; larger ones by identity only
_MAX_CSE_CONST_BYTES = 1 << 16


class Rewriter:
    """Copies ``old`` into a fresh graph with the same name, policy and inputs.

    ``map`` sends each old symbol to its new counterpart; passes fill it as they go and
    call :meth:`finish` to set the outputs. ``fold`` and ``cse`` make :meth:`add` fold
    constant nodes and merge identical ones.
    """

    def __init__(
        self, old: Graph, *, name: str | None = None, fold: bool = False, cse: bool = False
    ) -> None:
        # a graphdsl.max Graph: the graphdsl graph underneath (whose inputs are symbols)
        old = self.old = getattr(old, "core_graph", old)
        self.new = Graph(name or old.name, policy=old.policy, warn_lossy=False)
        self.new.warn_lossy = old.warn_lossy
        self.new._derived = True  # made by a pass, not by the user's code
        self.map: dict[int, Symbol] = {}
        self.fold = fold
        self.cse = cse
        # what a pass shares with the rewriters of the graphs nested in this one's nodes
        # (graphdsl.passes.regions: each nested graph rewritten once)
        self.memo: dict[Hashable, Any] = {}
        # CSE: nodes without operands (constants) by value; a node with operands can only
        # equal one with the same first operand, so each value's slot (by position) holds
        # the node it is the first operand of, or a dict by key once it is that of several
        self.seen: dict[Hashable, Symbol] = {}
        self.firsts: list[Symbol | dict[Hashable, Symbol] | None] = []
        for s in old.inputs:
            n = self.new._add("input", (), dict(s.attrs), s.type, (), s.loc)
            self.new.inputs.append(n)
            self.firsts.append(None)
            self.map[id(s)] = n

    def add(
        self,
        op: str,
        inputs: tuple[Symbol, ...],
        attrs: dict[str, Any],
        typ: TensorType,
        in_dtypes: tuple[DType, ...],
        loc: Location | None,
        fold: bool = True,
    ) -> Symbol:
        """Add a node to the new graph (folded, or an identical earlier one, if enabled;
        ``fold=False``: never folded)."""
        if (fold and self.fold and inputs and inputs[0].op == "constant"
                and foldable(inputs, typ)):  # fmt: skip
            value = apply_op(op, attrs, in_dtypes, typ, [a.attrs["value"] for a in inputs], {})
            op, inputs, attrs, in_dtypes = "constant", (), {"value": value}, ()
            typ = TensorType(typ.dtype, typ.shape)
        if not self.cse:
            return self._new(op, inputs, attrs, typ, in_dtypes, loc)
        if not inputs:
            key = _cse_key(op, inputs, attrs, typ, in_dtypes)
            hit = None if key is None else self.seen.get(key)
            if hit is None:
                hit = self._new(op, inputs, attrs, typ, in_dtypes, loc)
                if key is not None:
                    self.seen[key] = hit
            return hit
        firsts = self.firsts
        at = inputs[0].id
        slot = firsts[at]
        if slot is None:  # the first node with this first operand: nothing to compare
            firsts.append(None)  # (self._new, inlined: most nodes come this way)
            hit = firsts[at] = self.new._add(op, inputs, attrs, typ, in_dtypes, loc)
            return hit
        key = _cse_key(op, inputs, attrs, typ, in_dtypes)
        if isinstance(slot, Symbol):  # a second one: from now on, a dict by key
            slot = self.firsts[at] = {_cse_key(slot.op, slot.inputs, slot.attrs, slot.type,
                                                slot.in_dtypes): slot}  # fmt: skip
        hit = slot.get(key)
        if hit is None:
            hit = self._new(op, inputs, attrs, typ, in_dtypes, loc)
            slot[key] = hit
        return hit

    def _new(
        self,
        op: str,
        inputs: tuple[Symbol, ...],
        attrs: dict[str, Any],
        typ: TensorType,
        in_dtypes: tuple[DType, ...],
        loc: Location | None,
    ) -> Symbol:
        self.firsts.append(None)  # the new node's CSE slot, at its position
        return self.new._add(op, inputs, attrs, typ, in_dtypes, loc)

    def copy_node(
        self, node: Symbol, inputs: tuple[Symbol, ...] | None = None, *, known: bool = False
    ) -> Symbol:
        """Add ``node`` with its inputs mapped (or ``inputs``); ``known`` clears ambiguity."""
        m = self.map
        args = inputs if inputs is not None else tuple([m[id(i)] for i in node.inputs])
        typ = node.type
        if known and typ.ambiguous:
            typ = TensorType(typ.dtype, typ.shape)
        # attributes are never changed after a node is built, so graphs may share them;
        # a node max-graph types but nothing computes is not folded (make_casts_explicit)
        fold = not (self.fold and node.graph.policy.bool_arithmetic and uncomputable(node))
        new = self.add(node.op, args, node.attrs, typ, node.in_dtypes, node.loc, fold)
        m[id(node)] = new
        return new

    def copy_all(self) -> Graph:
        """Add every node of the old graph (folded and merged as enabled), then finish."""
        for node in self.old.nodes:
            if node.op != "input":
                self.copy_node(node)
        return self.finish()

    def finish(self) -> Graph:
        self.new.outputs = [self.map[id(o)] for o in self.old.outputs]
        self.new.output_names = list(self.old.output_names)
        return self.new


def drop_dead(graph: Graph) -> Graph:
    """Remove, in place, the nodes no output depends on (inputs stay); returns ``graph``.

    For graphs a pass has just made and nobody else holds; :func:`~graphdsl.passes.dce`
    is the copying pass.
    """
    # a set of Symbols, not of ids: they hash by identity (distinct for live objects), so
    # the set never compares two of them with == (which builds a node)
    live = set(graph.outputs)
    keep: list[Symbol] = []
    for node in reversed(graph.nodes):
        if node in live or node.op == "input":
            keep.append(node)
            live.update(node.inputs)
    if len(keep) != len(graph.nodes):
        keep.reverse()
        for k, node in enumerate(keep):
            node.id = k
        graph.nodes = keep
    return graph


def foldable(inputs: tuple[Symbol, ...], typ: TensorType) -> bool:
    """May a node on ``inputs`` with result type ``typ`` become a constant? Its operands must
    all be constants, none larger than ``MAX_FOLDED_ELEMENTS`` elements, nor the result; and
    the result may not take more bytes than its (distinct) constant operands together,
    unless it is tiny (``TINY_FOLDED_ELEMENTS`` elements at most): folding never grows a
    model. A widening cast of an int8 weight (4 times its bytes as float32), a dequantized
    weight or a scalar broadcast to a large shape stay run-time ops on their small operands.
    """
    consumed = 0
    seen: set[int] = set()
    for a in inputs:
        if a.op != "constant":
            return False
        value = a.attrs["value"]
        if value.size > MAX_FOLDED_ELEMENTS:
            return False
        if id(a) not in seen:
            seen.add(id(a))
            consumed += value.nbytes
    size = num_elements(typ.shape)
    if size is None or size > MAX_FOLDED_ELEMENTS:
        return False
    return size <= TINY_FOLDED_ELEMENTS or size * typ.dtype.np.itemsize <= consumed


def _cse_key(
    op: str,
    inputs: tuple[Symbol, ...],
    attrs: dict[str, Any],
    typ: TensorType,
    in_dtypes: tuple[DType, ...],
) -> Hashable | None:
    if op == "constant" and attrs["value"].nbytes > _MAX_CSE_CONST_BYTES:
        return None  # large constants are compared by identity only
    akey = _attr_key(attrs) if attrs else ()
    return (op, tuple([id(i) for i in inputs]), akey, typ, in_dtypes)


def _attr_key(v: Any) -> Hashable:
    if isinstance(v, np.ndarray):
        return ("nd", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return tuple(_attr_key(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _attr_key(x)) for k, x in v.items()))
    if isinstance(v, (DType, int, str)) or v is None:
        return (type(v).__name__, v)
    if isinstance(v, (float, complex)):
        return (type(v).__name__, repr(v))  # keeps 0.0 and -0.0 apart; nan equals nan
    return (type(v).__name__, v)


def _copy(graph: Graph, name: str) -> Graph:
    return Rewriter(graph, name=name).copy_all()


register_extension("copy", _copy)
