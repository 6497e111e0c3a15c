"""Rewriter: build a new graph from an old one, node by node (the base of every pass)."""

from __future__ import annotations

from typing import Any

from graphdsl._source import Location
from graphdsl.dtypes import DType
from graphdsl.graph import Graph, Symbol, TensorType

__all__ = ["Rewriter"]


class Rewriter:
    """Copies ``old`` into a fresh graph with the same name, policy and inputs.

    ``map`` sends each old symbol to its new counterpart; passes fill it as they go and
    call :meth:`finish` to set the outputs.
    """

    def __init__(self, old: Graph, *, name: str | None = None) -> None:
        self.old = old
        self.new = Graph(name or old.name, policy=old.policy, warn_lossy=False)
        self.new.warn_lossy = old.warn_lossy
        self.new._derived = True  # made by a pass, not by the user's code
        self.map: dict[int, Symbol] = {}
        for s in old.inputs:
            n = self.new._add("input", (), dict(s.attrs), s.type, (), s.loc)
            self.new.inputs.append(n)
            self.map[id(s)] = n

    def add(
        self,
        op: str,
        inputs: tuple[Symbol, ...],
        attrs: dict[str, Any],
        typ: TensorType,
        in_dtypes: tuple[DType, ...],
        loc: Location | None,
    ) -> Symbol:
        return self.new._add(op, inputs, attrs, typ, in_dtypes, loc)

    def copy_node(
        self, node: Symbol, inputs: tuple[Symbol, ...] | None = None, *, known: bool = False
    ) -> Symbol:
        """Copy ``node`` with its inputs mapped (or ``inputs``); ``known`` clears ambiguity."""
        m = self.map
        args = inputs if inputs is not None else tuple([m[id(i)] for i in node.inputs])
        typ = node.type
        if known and typ.ambiguous:
            typ = TensorType(typ.dtype, typ.shape)
        # attributes are never changed after a node is built, so graphs may share them
        new = self.new._add(node.op, args, node.attrs, typ, node.in_dtypes, node.loc)
        m[id(node)] = new
        return new

    def finish(self) -> Graph:
        self.new.outputs = [self.map[id(o)] for o in self.old.outputs]
        return self.new
