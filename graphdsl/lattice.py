"""Promotion lattices as data: node -> immediate parents, validated, with a precomputed join.

A lattice's nodes are :class:`~graphdsl.DType` members and, for JAX-style lattices, the
weak types :data:`Weak.int` (``i*``), :data:`Weak.float` (``f*``) and :data:`Weak.complex`
(``c*``). An edge ``a -> b`` means "a may be implicitly promoted to b". The join of two
nodes is their least upper bound.

>>> from graphdsl import DType as T
>>> lat = Lattice("tiny", {T.bool: [T.int8], T.int8: [T.int16], T.uint8: [T.int16]})
>>> lat.join(T.int8, T.uint8)
DType.int16
>>> lat.path(T.bool, T.int16)
[DType.bool, DType.int8, DType.int16]
>>> Lattice("bad", {T.int8: [T.int16, T.uint16], T.uint8: [T.int16, T.uint16]})
Traceback (most recent call last):
    ...
graphdsl.lattice.LatticeError: lattice 'bad' is not a lattice: int8 and uint8 have no least
upper bound (the upper bounds int16, uint16 are unordered)

A *comparable-only* order (``comparable_only=True``) joins two nodes only when one is below
the other; incomparable pairs have no join unless ``joins`` chooses one of their minimal
common upper bounds (max.graph's promotion is such an order):

>>> exact = Lattice(
...     "exact",
...     {T.int8: [T.int16, T.float16], T.uint8: [T.int16, T.float16], T.float8_e5m2: [T.float16]},
...     comparable_only=True,
...     joins={(T.int8, T.float8_e5m2): T.float16},
... )
>>> exact.join(T.uint8, T.int16), exact.join(T.int8, T.uint8), exact.join(T.int8, T.float8_e5m2)
(DType.int16, None, DType.float16)
"""

from __future__ import annotations

import enum
import functools
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from graphdsl.dtypes import DType, Kind

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Lattice", "LatticeError", "Node", "Weak", "node_name"]


def _nx() -> Any:
    import networkx

    return networkx


def _topological(parents: Mapping[Node, Sequence[Node]]) -> list[Node] | None:
    """The nodes (keys and parents, first seen first) in networkx's topological order of the
    child -> parent edges (its ``topological_generations``, one generation after another);
    None if there is a cycle. The promotion lattices are made when graphdsl is imported:
    this keeps networkx (17 MB) out of a process that only runs a model."""
    succ: dict[Node, list[Node]] = {}
    for child, ps in parents.items():
        succ.setdefault(child, [])
        for p in ps:
            succ.setdefault(p, [])
            if p not in succ[child]:
                succ[child].append(p)
    indegree = dict.fromkeys(succ, 0)
    for ps in succ.values():
        for p in ps:
            indegree[p] += 1
    generation = [n for n, d in indegree.items() if d == 0]
    order: list[Node] = []
    while generation:
        order += generation
        after = []
        for n in generation:
            for p in succ[n]:
                indegree[p] -= 1
                if indegree[p] == 0:
                    after.append(p)
        generation = after
    return order if len(order) == len(succ) else None


class Weak(enum.Enum):
    """JAX's weak types: the type of a Python scalar, which defers to typed operands.

    >>> import graphdsl as gd
    >>> gd.Weak.of(gd.Kind.float), gd.Weak.float in gd.policy("jax").lattice
    (Weak.float, True)
    >>> gd.policy("jax").literal_type(2.5)  # a weak float: the default float, ambiguous
    Promoted(dtype=DType.float64, ambiguous=True)
    """

    __hash__ = object.__hash__

    int = "i*"
    float = "f*"
    complex = "c*"

    def __repr__(self) -> str:
        return f"Weak.{self.name}"

    def __str__(self) -> str:
        return self.value

    @property
    def kind(self) -> Kind:
        return {Weak.int: Kind.signed, Weak.float: Kind.float, Weak.complex: Kind.complex}[self]

    @staticmethod
    def of(kind: Kind) -> Weak | None:
        """The weak node for a kind (None for bool, which is never weak)."""
        if kind is Kind.bool:
            return None
        if kind.is_integer:
            return Weak.int
        return Weak.float if kind is Kind.float else Weak.complex


Node: TypeAlias = DType | Weak


def node_name(n: Node) -> str:
    return n.name if isinstance(n, DType) else n.value


class LatticeError(ValueError):
    """A graph that is not a valid (partial) promotion lattice.

    >>> import graphdsl as gd
    >>> gd.Lattice("bad", {gd.int8: [gd.int16], gd.int16: [gd.int8]})
    Traceback (most recent call last):
        ...
    graphdsl.lattice.LatticeError: lattice 'bad' has a cycle: int8 -> int16 -> int8
    """


class Lattice:
    """A promotion lattice: a DAG of ``node -> immediate parents`` with a unique join.

    Construction validates the graph: no cycle, and every pair of nodes has a unique
    least upper bound. A *partial* lattice (``partial=True``) may leave pairs with no
    upper bound at all (undefined promotions); a pair with several minimal upper bounds
    is an error either way. Joins are computed once, so :meth:`join` is a dict lookup.

    With ``comparable_only=True`` the DAG is a partial order whose join is defined only
    for comparable pairs (the larger node); common upper bounds of incomparable nodes do
    not make a join, and pairs with several minimal upper bounds are allowed (it implies
    ``partial``). ``joins`` chooses the join of incomparable pairs as data: each value
    must be one of the pair's minimal common upper bounds, and the pair must be
    incomparable (a comparable pair already has its join).

    >>> import graphdsl as gd
    >>> lat = gd.Lattice("mine", {gd.bool: [gd.int32], gd.int32: [gd.float32]})
    >>> lat.join(gd.bool, gd.float32), lat.leq(gd.int32, gd.float32)
    (DType.float32, True)
    >>> lat.path(gd.bool, gd.float32)
    [DType.bool, DType.int32, DType.float32]
    >>> gd.Policy("mine", lat, literals="anvil").promote_types(gd.bool, gd.int32)
    DType.int32
    """

    def __init__(
        self,
        name: str,
        parents: Mapping[Node, Sequence[Node]],
        *,
        partial: bool = False,
        comparable_only: bool = False,
        joins: Mapping[tuple[Node, Node], Node] | None = None,
    ) -> None:
        self.name = name
        self.partial = partial or comparable_only
        self.comparable_only = comparable_only
        self.parents: dict[Node, tuple[Node, ...]] = {k: tuple(v) for k, v in parents.items()}
        order = _topological(self.parents)
        if order is None:
            edges = _nx().find_cycle(self.graph)
            cycle = " -> ".join(node_name(n) for n in [*(a for a, _ in edges), edges[0][0]])
            raise LatticeError(f"lattice {name!r} has a cycle: {cycle}")
        self.nodes: tuple[Node, ...] = tuple(order)
        upper: dict[Node, frozenset[Node]] = {}
        for n in reversed(order):  # (a node's parents come after it)
            upper[n] = frozenset({n}).union(*(upper[p] for p in self.parents.get(n, ())))
        self._upper = {n: upper[n] for n in order}
        self.chosen: dict[tuple[Node, Node], Node] = self._check_chosen(joins or {})
        self._join: dict[tuple[Node, Node], Node | None] = {}
        for a, b in itertools.combinations_with_replacement(order, 2):
            j = self.chosen.get((a, b))
            if j is None:
                j = self._larger(a, b) if comparable_only else self._least_upper_bound(a, b)
            self._join[a, b] = self._join[b, a] = j

    @functools.cached_property
    def graph(self) -> nx.DiGraph:
        """The lattice as a networkx DiGraph, edges from a type to its promotions (made
        when first asked for: networkx is imported only for paths, plots and cycles)."""
        graph = _nx().DiGraph()
        for child, ps in self.parents.items():
            graph.add_node(child)
            for p in ps:
                graph.add_edge(child, p)
        return graph

    def _larger(self, a: Node, b: Node) -> Node | None:
        if b in self._upper[a]:
            return b
        return a if a in self._upper[b] else None

    def _minimal_upper_bounds(self, a: Node, b: Node) -> list[Node]:
        common = self._upper[a] & self._upper[b]
        return sorted(
            (c for c in common if not any(o != c and c in self._upper[o] for o in common)),
            key=node_name,
        )

    def _check_chosen(
        self, joins: Mapping[tuple[Node, Node], Node]
    ) -> dict[tuple[Node, Node], Node]:
        """Validate chosen joins; return them keyed by both orders of each pair."""
        out: dict[tuple[Node, Node], Node] = {}
        for (a, b), c in joins.items():
            for n in (a, b, c):
                if n not in self._upper:
                    raise LatticeError(
                        f"lattice {self.name!r}: the chosen join {node_name(a)} x "
                        f"{node_name(b)} -> {node_name(c)} names {node_name(n)}, which is not "
                        "a node"
                    )
            larger = self._larger(a, b)
            if larger is not None:
                raise LatticeError(
                    f"lattice {self.name!r}: {node_name(a)} and {node_name(b)} are comparable "
                    f"(their join is {node_name(larger)}); choose joins only for incomparable "
                    "pairs"
                )
            minimal = self._minimal_upper_bounds(a, b)
            if c not in minimal:
                bounds = ", ".join(map(node_name, minimal)) or "none"
                raise LatticeError(
                    f"lattice {self.name!r}: the chosen join of {node_name(a)} and "
                    f"{node_name(b)} must be one of their minimal common upper bounds "
                    f"({bounds}), not {node_name(c)}"
                )
            out[a, b] = out[b, a] = c
        return out

    def _least_upper_bound(self, a: Node, b: Node) -> Node | None:
        common = self._upper[a] & self._upper[b]
        least = [c for c in common if common <= self._upper[c]]
        if len(least) == 1:
            return least[0]
        if not common:
            if self.partial:
                return None
            raise LatticeError(
                f"lattice {self.name!r} is not a lattice: {node_name(a)} and {node_name(b)} "
                "have no common upper bound (add an edge, or build it with partial=True "
                "to leave the pair undefined)"
            )
        minimal = self._minimal_upper_bounds(a, b)
        raise LatticeError(
            f"lattice {self.name!r} is not a lattice: {node_name(a)} and {node_name(b)} have "
            f"no least upper bound (the upper bounds {', '.join(map(node_name, minimal))} "
            "are unordered)"
        )

    # ------------------------------------------------------------------ queries

    def __contains__(self, node: object) -> bool:
        return node in self._upper

    def __repr__(self) -> str:
        kind = ", comparable only" if self.comparable_only else ", partial" if self.partial else ""
        return f"Lattice({self.name!r}, {len(self.nodes)} nodes{kind})"

    def join(self, a: Node, b: Node) -> Node | None:
        """The least upper bound of ``a`` and ``b``; None where a partial lattice leaves none
        (in a comparable-only order: the larger of the two, a chosen join, or None).

        Raises KeyError for a node outside the lattice.
        """
        return self._join[a, b]

    def upper_bounds(self, a: Node) -> frozenset[Node]:
        """Every node ``a`` may be promoted to, including itself."""
        return self._upper[a]

    def leq(self, a: Node, b: Node) -> bool:
        """True if ``a`` promotes to ``b`` (a <= b in the lattice order)."""
        return b in self._upper[a]

    def path(self, a: Node, b: Node) -> list[Node]:
        """A shortest chain of edges from ``a`` up to ``b`` (``[a]`` when equal)."""
        return list(_nx().shortest_path(self.graph, a, b))

    def dtypes(self) -> list[DType]:
        """The concrete dtypes the lattice covers, in a stable table order."""
        return sorted((n for n in self.nodes if isinstance(n, DType)), key=_table_key)

    def weak_nodes(self) -> list[Weak]:
        return [w for w in Weak if w in self]

    def table_nodes(self) -> list[Node]:
        return [*self.dtypes(), *self.weak_nodes()]

    # ------------------------------------------------------------------ rendering

    def to_dot(self) -> str:
        """The Hasse diagram in Graphviz dot (edges point from a type to its promotions)."""
        lines = [f'digraph "{self.name}" {{', "  rankdir=LR;", "  node [shape=box, style=rounded];"]
        for n in self.table_nodes():
            style = ', style="rounded,dashed"' if isinstance(n, Weak) else ""
            lines.append(f'  "{node_name(n)}"{" [" + style[2:] + "]" if style else ""};')
        for child in self.table_nodes():
            for p in self.parents.get(child, ()):
                lines.append(f'  "{node_name(child)}" -> "{node_name(p)}";')
        if self.comparable_only:
            lines.append("  // joins only comparable types (the larger one), and these chosen:")
        seen: set[frozenset[Node]] = set()
        for (a, b), c in self.chosen.items():
            if frozenset((a, b)) not in seen:
                seen.add(frozenset((a, b)))
                lines.append(f"  // {node_name(a)} x {node_name(b)} -> {node_name(c)}")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_png(self, path: str) -> None:
        """Draw the Hasse diagram to a PNG file (needs the ``plot`` extra: matplotlib)."""
        from graphdsl._plot import draw_digraph

        labels = {n: node_name(n) for n in self.graph}
        weak = {n for n in self.graph if isinstance(n, Weak)}
        draw_digraph(self.graph, labels, path, title=f"{self.name} promotion lattice", dashed=weak)

    def table(
        self,
        rows: Iterable[Node] | None = None,
        cols: Iterable[Node] | None = None,
        *,
        fmt: str = "md",
        name: Mapping[Node, str] | None = None,
    ) -> str:
        """The join table in markdown (``fmt="md"``) or CSV; ``-`` marks undefined pairs."""
        from graphdsl._table import render_table

        rs = list(rows) if rows is not None else self.table_nodes()
        cs = list(cols) if cols is not None else rs
        label = name or {n: node_name(n) for n in self.nodes}

        def cell(a: Node, b: Node) -> str:
            j = self.join(a, b)
            return "-" if j is None else label[j]

        return render_table(
            [label[r] for r in rs],
            [label[c] for c in cs],
            [[cell(r, c) for c in cs] for r in rs],
            fmt=fmt,
        )


_KIND_ORDER = {Kind.bool: 0, Kind.unsigned: 1, Kind.signed: 2, Kind.float: 3, Kind.complex: 4}
_SPECIAL_ORDER = {
    DType.index: 1,
    DType.address: 2,
    DType.bfloat16: -1,
    DType.tensor_float32: 1,
    DType.float8_e4m3fn: -7,
    DType.float8_e5m2: -6,
    DType.float8_e4m3fnuz: -5,
    DType.float8_e5m2fnuz: -4,
    DType.float8_e8m0fnu: -3,
}


def _table_key(d: DType) -> tuple[int, int, int]:
    return (_KIND_ORDER[d.kind], d.bits if d.bits != 19 else 32, _SPECIAL_ORDER.get(d, 0))
