"""The ``implicit_cast`` pass: every conversion becomes an explicit ``cast`` node.

After it, each op's operands already have the dtypes the op computes in, literals are
constants of their final dtype (checked to fit when the node was built), and no type is
ambiguous. Identical casts of one value are made once; a cast to the value's own dtype is
never emitted; a chain of casts is shortened only where the first step is exactly value
preserving (int8 -> int32 -> int64 becomes int8 -> int64; float64 -> float32 -> float64
stays).

>>> import graphdsl as gd
>>> g = gd.Graph("ic", input_types={"x": gd.TensorType(gd.float32, (2,)), "n": gd.int16})
>>> x, n = g.inputs
>>> g.output(x * 2 + n)
>>> print(gd.passes.implicit_cast(g))
graph ic(%x: float32[2], %n: int16[]) {
  %0: float32[] = constant 2.0
  %1: float32[2] = mul %x, %0
  %2: float32[] = cast %n, to=float32
  %3: float32[2] = add %1, %2
  return %3
}
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.graph import Graph, Symbol, TensorType, register_extension, value_names
from graphdsl.opdef import OPS
from graphdsl.ops._convert import cast_array
from graphdsl.ops._define import promote, uncomputable
from graphdsl.passes.regions import explain_regions, rewrite_regions
from graphdsl.passes.rewrite import Rewriter

__all__ = ["explain", "implicit_cast", "is_lossless", "make_casts_explicit"]


def is_lossless(src: DType, dst: DType) -> bool:
    """True if every value of ``src`` converts to ``dst`` and back unchanged."""
    if src is dst:
        return True
    if src is DType.bool:
        return dst is not DType.float8_e8m0fnu  # e8m0 holds no zero
    if dst is DType.bool:
        return False
    if src.is_integer:
        if dst.is_integer:
            return dst.min <= src.min and src.max <= dst.max
        return dst.mantissa_bits >= src.mantissa_bits and dst.max >= src.max
    if src.kind is Kind.complex:
        return dst.kind is Kind.complex and dst.bits >= src.bits
    if dst.is_integer:
        return False
    s_bits, d_bits = src.mantissa_bits, dst.mantissa_bits
    s_max = src.max if src.kind is Kind.float else 0.0
    d_max = dst.max
    real_dst = dst if dst.kind is Kind.float else {64: DType.float32, 128: DType.float64}[dst.bits]
    if not _has_zero_and_sign(src) <= _has_zero_and_sign(real_dst):
        return False  # e8m0 has neither; fnuz floats have no -0.0
    return d_bits >= s_bits and float(d_max) >= float(s_max) and _tiny(real_dst) <= _tiny(src)


def _tiny(d: DType) -> float:
    """The smallest positive value of float dtype ``d``."""
    info = ml_dtypes.finfo(DType.float32.np if d is DType.tensor_float32 else d.np)  # type: ignore[no-untyped-call]
    return float(info.smallest_subnormal)


def _has_zero_and_sign(d: DType) -> set[str]:
    """Which of zero, -0.0, negatives and NaN float dtype ``d`` holds."""
    if d is DType.float8_e8m0fnu:
        return {"nan"}
    have = {"zero", "negative"}
    if not d.name.endswith("fnuz"):
        have.add("-0")
    if d.bits >= 8:
        have.add("nan")
    return have


def _conversion_kind(d: DType) -> str:
    return "float" if d.kind is Kind.float else "complex" if d.kind is Kind.complex else "int"


def _skippable(src: DType, mid: DType, want: DType) -> bool:
    """cast(cast(x: src, mid), want) == cast(x, want) for every x.

    The first step must keep every value, and the second must convert those values the
    way a direct cast would: float -> int saturates while int -> int wraps, so a float
    in the middle may be skipped only when ``want`` holds every ``src`` value.
    """
    if not is_lossless(src, mid):
        return False
    return _conversion_kind(src) == _conversion_kind(mid) or is_lossless(src, want)


def _literal_key(value: Any, want: DType) -> tuple[str, str, DType]:
    return (type(value).__name__, repr(value), want)


class _Caster:
    def __init__(self, rw: Rewriter) -> None:
        self.rw = rw
        self.casts: dict[tuple[int, DType], Symbol] = {}
        self.literals: dict[tuple[str, str, DType], Symbol] = {}
        self.uses: dict[tuple[int, DType], Symbol] = {}

    def literal(self, node: Symbol, want: DType) -> Symbol:
        hit = self.uses.get((id(node), want))
        if hit is not None:
            return hit
        key = _literal_key(node.attrs["value"], want)  # equal literals of other nodes
        hit = self.literals.get(key)
        if hit is None:
            with np.errstate(all="ignore"):
                arr = cast_array(np.asarray(node.attrs["value"]), want)  # as evaluate does
            hit = self.rw.add("constant", (), {"value": arr}, TensorType(want, ()), (), node.loc)
            self.literals[key] = hit
        self.uses[(id(node), want)] = hit
        return hit

    def cast(self, value: Symbol, want: DType, loc: Any) -> Symbol:
        if value.dtype is want:
            return value
        # shorten: cast(cast(s, mid), want) -> cast(s, want) when s -> mid is lossless
        src = value
        while src.op == "cast" and _skippable(src.inputs[0].dtype, src.dtype, want):
            src = src.inputs[0]
            if src.dtype is want:
                return src
        key = (id(src), want)
        hit = self.casts.get(key)
        if hit is None:
            hit = self.rw.add(
                "cast", (src,), {"to": want}, TensorType(want, src.shape), (src.dtype,), loc
            )
            self.casts[key] = hit
        return hit


def _computed_dtype(graph: Graph, node: Symbol) -> DType | None:
    """The dtype ``node``'s op gives on operands of the dtypes it computes in, when that is
    not the node's dtype: a policy's op rule typed the result apart from the computation
    (max-graph's exp(int32) computes in float64 and is int32), so the result converts with
    an explicit cast. None when the op gives the node's dtype itself (every other node)."""
    if not node.in_dtypes or node.dtype in node.in_dtypes:
        return None
    types = [TensorType(d, i.shape) for d, i in zip(node.in_dtypes, node.inputs, strict=True)]
    in_dtypes, out = OPS[node.op].rule(graph.policy, types, dict(node.attrs))
    if tuple(in_dtypes) != node.in_dtypes or out.dtype is node.dtype:
        return None
    return out.dtype


def implicit_cast(graph: Graph) -> Graph:
    """A new graph with explicit casts; ``graph`` is unchanged.

    Every conversion the policy makes implicitly (an operand promoted, a literal typed)
    becomes a ``cast`` node or a typed constant; ``graph.explain()`` says why each happens.

    >>> import graphdsl as gd
    >>> g = gd.Graph("c", input_types={"x": gd.float32, "n": gd.int16})
    >>> x, n = g.inputs
    >>> g.output(x * n + 1)
    >>> print(gd.passes.implicit_cast(g))
    graph c(%x: float32[], %n: int16[]) {
      %0: float32[] = cast %n, to=float32
      %1: float32[] = mul %x, %0
      %2: float32[] = constant 1.0
      %3: float32[] = add %1, %2
      return %3
    }
    """
    return make_casts_explicit(graph, Rewriter(graph))


def make_casts_explicit(graph: Graph, rw: Rewriter) -> Graph:
    """The implicit_cast rewrite of ``graph``, adding through ``rw`` (which may also fold)."""
    caster = _Caster(rw)
    m, add = rw.map, rw.add
    # what the caster gave before, looked up here first: a literal's constant by (literal,
    # dtype); a cast by (value, dtype) (only casts that are not shortened are kept by their
    # value, so a hit is what caster.cast would give)
    uses, casts = caster.uses, caster.casts
    converts_results = bool(graph.policy.op_rules)  # only op rules type results apart
    # a node max-graph types but nothing computes (bool - bool) is never folded: evaluation
    # and export refuse it where an output needs it (check_computable); a dead one of
    # constants reached the fold, where numpy refused it (the fuzzer found it)
    refusals = rw.fold and graph.policy.bool_arithmetic
    for node in graph.nodes:
        op = node.op
        if op == "input" or op == "literal":
            continue
        in_dtypes = node.in_dtypes
        args = []
        for arg, want in zip(node.inputs, in_dtypes, strict=True):
            if arg.op == "literal":
                hit = uses.get((id(arg), want))
                args.append(caster.literal(arg, want) if hit is None else hit)
            else:
                v = m[id(arg)]
                if v.type.dtype is not want:
                    hit = casts.get((id(v), want))
                    v = caster.cast(v, want, node.loc) if hit is None else hit
                args.append(v)
        typ = node.type
        if typ.ambiguous:  # its literals are constants now: nothing is ambiguous after this
            typ = TensorType(typ.dtype, typ.shape)
        attrs = node.attrs
        if "regions" in attrs:  # cond, while_loop, call: the graphs in them are rewritten too
            attrs = rewrite_regions(node, rw, make_casts_explicit)
        computed = _computed_dtype(graph, node) if converts_results else None
        if refusals and uncomputable(node):
            m[id(node)] = rw.add(op, tuple(args), attrs, typ, in_dtypes, node.loc, fold=False)
        elif computed is None:
            m[id(node)] = add(op, tuple(args), attrs, typ, in_dtypes, node.loc)
        else:  # the op computes in ``computed``; its policy converts the result (a cast)
            raw = add(op, tuple(args), attrs, TensorType(computed, typ.shape), in_dtypes,
                      node.loc)  # fmt: skip
            m[id(node)] = caster.cast(raw, typ.dtype, node.loc)
    for out in graph.outputs:  # a literal returned as an output: its own (default) dtype
        if out.op == "literal":
            rw.map[id(out)] = caster.literal(out, out.dtype)
    return rw.finish()


# ---------------------------------------------------------------------------- explain


def _reason(graph: Graph, node: Symbol, k: int) -> str:
    """Why operand ``k`` of ``node`` converts: the join of the operands the op computes
    together (every operand, for most ops; an op that computes its operands in several
    dtypes, such as quantize's float x and scale beside its int8 zero point, joins only
    those it computes in operand ``k``'s dtype), and the dtype the op takes where that
    join is not it."""
    p = graph.policy
    types = [i.type for i in node.inputs]
    want = node.in_dtypes[k]
    mixed = node.op != "where" and len(set(node.in_dtypes)) > 1
    if node.op.startswith("logical_") or (node.op == "where"):
        head = (
            "the condition converts by truth value (x != 0)"
            if node.op == "where"
            else ("logical ops convert their operands by truth value (x != 0)")
        )
        if node.op != "where":
            return head
        types = types[1:]
        prefix = head + "; the branches: "
    else:
        prefix = ""
        if mixed:
            types = [t for t, d in zip(types, node.in_dtypes, strict=True) if d is want]
    if len(types) >= 2:
        rules = []
        acc = types[0]
        for t in types[1:]:
            d = p.decide(acc.dtype, acc.ambiguous, t.dtype, t.ambiguous)
            rules.append(
                f"{acc.dtype.name}{'?' if acc.ambiguous else ''} x "
                f"{t.dtype.name}{'?' if t.ambiguous else ''} -> {d.result}: {d.rule}"
            )
            acc = TensorType(d.result.dtype, (), d.result.ambiguous)
        why = prefix + "; then ".join(rules)
        joined = promote(p, types).dtype
    else:
        why, joined = prefix, types[0].dtype if types else DType.bool
    if want is not joined and node.op != "where":
        if mixed and want not in (p.default_float, p.default_int):
            why += f"; {node.op}'s type rule takes this operand as {want.name}"
        else:
            why += (
                f"; {node.op} computes in the policy's default "
                f"{'float' if want.is_float else 'int'} {want.name}"
            )
    return why.strip("; ") or f"{node.op}'s type rule takes this operand as {want.name}"


def explain(graph: Graph) -> str:
    """Each conversion ``implicit_cast`` makes, with the operand types, policy and rule.

    >>> import graphdsl as gd
    >>> g = gd.Graph("e", input_types={"n": gd.int16})
    >>> g.output(g.inputs[0] * 1.5)
    >>> print(g.explain())  # doctest: +ELLIPSIS
    graph e, policy 'default': 2 implicit conversions
      mul at ...: operand 0 %n int16 -> float32 (operand types int16[], float32?[]); rule: ...
      mul at ...: literal 1.5 -> constant float32 (operand types int16[], float32?[]); rule: ...
    """

    names = value_names(graph)
    counts: dict[str, int] = {}
    shown: set[int] = set()
    for node in graph.nodes:
        if "regions" in node.attrs:  # cond, while_loop, call: in their words, and their graphs'
            for text in explain_regions(graph, node, names, shown, explain):
                counts[text] = counts.get(text, 0) + 1
            continue
        if not node.in_dtypes:
            continue
        for k, (arg, want) in enumerate(zip(node.inputs, node.in_dtypes, strict=True)):
            is_lit = arg.op == "literal"
            if arg.dtype is want and not is_lit:
                continue
            what = (
                f"literal {arg.attrs['value']!r} -> constant {want.name}"
                if is_lit
                else f"operand {k} {names[id(arg)]} {arg.dtype.name} -> {want.name}"
            )
            where = f" at {node.loc}" if node.loc else ""
            src = node.loc.source_line() if node.loc else ""
            types = ", ".join(str(i.type) for i in node.inputs)
            text = (
                f"  {node.op}{where}: {what} (operand types {types}); rule: "
                f"{_reason(graph, node, k)}" + (f"\n      | {src}" if src else "")
            )
            counts[text] = counts.get(text, 0) + 1
        computed = _computed_dtype(graph, node) if graph.policy.op_rules else None
        if computed is not None:
            where = f" at {node.loc}" if node.loc else ""
            text = (
                f"  {node.op}{where}: result {computed.name} -> {node.dtype.name} (policy "
                f"{graph.policy.name!r} types the result apart from the computation)"
            )
            counts[text] = counts.get(text, 0) + 1
    total = sum(counts.values())
    head = f"graph {graph.name}, policy {graph.policy.name!r}: {total} implicit conversions"
    lines = [t if n == 1 else t.replace(": ", f" ({n} times): ", 1) for t, n in counts.items()]
    return "\n".join([head, *lines])


register_extension("explain", explain)
