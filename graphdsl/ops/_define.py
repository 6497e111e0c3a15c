"""How an op is defined: operand kinds, the promotion helpers type rules share, ``define``
(register an op beside its public function), and the numpy reference executor.

A type rule maps the operand types (and attributes) to ``(in_dtypes, out_type)``: the dtype
each operand must have when the op runs (the ``implicit_cast`` pass makes that explicit
with Cast nodes) and the result's type. Promotion happens in type rules and only there,
through the graph's policy. Implementations receive operands already in ``in_dtypes``
(float16/bfloat16/float8 ones widened to float32 by :func:`apply_op`) and return the result.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from graphdsl.dtypes import DType, Kind
from graphdsl.graph import _apply_op
from graphdsl.opdef import OPS, Impl, OpDef, Rule, register
from graphdsl.ops._convert import cast_array
from graphdsl.policies import Policy, Promoted, PromotionError
from graphdsl.regions import regions_of
from graphdsl.shapes import broadcast_shapes
from graphdsl.symbol import Operand, Symbol
from graphdsl.types import OpTypeError, TensorType

__all__ = [
    "ANY",
    "FLOAT",
    "INTEGER",
    "NUMERIC",
    "REAL",
    "TO_FLOAT",
    "Operand",
    "Symbol",
    "apply_op",
    "define",
    "elementwise",
    "need",
    "np_impl",
    "op",
    "promote",
    "run_node",
    "typed_only",
    "types_str",
]

NUMERIC = frozenset({Kind.signed, Kind.unsigned, Kind.float, Kind.complex})
REAL = frozenset({Kind.signed, Kind.unsigned, Kind.float})
INTEGER = frozenset({Kind.signed, Kind.unsigned})
ANY = frozenset(Kind)
FLOAT = frozenset({Kind.float})
TO_FLOAT = frozenset({Kind.bool, Kind.signed, Kind.unsigned})  # computed in the default float
_KIND_WORDS = {
    NUMERIC: "numeric (not bool)",
    REAL: "real numeric (integer or floating)",
    INTEGER | {Kind.bool}: "bool or integer",
    REAL | {Kind.bool}: "bool, integer or floating",
    ANY: "any",
    FLOAT: "floating",
}


def op(name: str, *args: object, **attrs: Any) -> Symbol:
    """Build op ``name`` on ``args`` in the graph of the first Symbol among them."""
    return _apply_op(name, args, attrs)


def define(
    fn: Callable[..., object], rule: Rule, impl: Impl, accepts: str, truthy: tuple[int, ...] = ()
) -> None:
    """Register the op that public function ``fn`` builds (its name is the op's name)."""
    family = fn.__module__.rsplit(".", 1)[-1]
    register(OpDef(fn.__name__, rule, impl, accepts, truthy, family))


# ---------------------------------------------------------------------------- rules


def promote(p: Policy, types: Sequence[TensorType]) -> Promoted:
    """The join of ``types`` under policy ``p``, left to right (ambiguity included)."""
    acc = Promoted(types[0].dtype, types[0].ambiguous)
    for t in types[1:]:
        acc = p.decide(acc.dtype, acc.ambiguous, t.dtype, t.ambiguous).result
    return acc


def types_str(types: Sequence[TensorType]) -> str:
    return ", ".join(str(t) for t in types)


def need(kinds: frozenset[Kind], c: Promoted, types: Sequence[TensorType], p: Policy) -> None:
    """Raise unless the promoted dtype ``c`` is of ``kinds``, saying what the op needs (a
    policy with ``bool_arithmetic`` types bool arithmetic as bool: :func:`uncomputable`)."""
    if c.dtype.kind in kinds:
        return
    if c.dtype is DType.bool and p.bool_arithmetic and kinds & NUMERIC:
        return
    want = _KIND_WORDS.get(kinds, "/".join(sorted(k.value for k in kinds)))
    via = (
        f"promote to {c.dtype.name} under policy {p.name!r}"
        if len(types) > 1
        else f"is {c.dtype.name} (policy {p.name!r})"
    )
    fix = "cast to a dtype it accepts first (gd.ops.cast)"
    if c.dtype is DType.bool and Kind.signed in kinds:
        fix = "use the logical_* ops for bool values, or cast to an integer dtype first"
    raise OpTypeError(
        f"operand types {types_str(types)} (in argument order) {via}, but the op needs "
        f"{want} operands; {fix}"
    )


def uncomputable(node: Symbol) -> str:
    """Why ``node`` types but cannot be computed ('' if it can): arithmetic on bool that a
    policy with ``bool_arithmetic`` (max-graph) types as bool, as max.graph does, and that
    MAX's compiler then refuses (recorded in tests/data/max_graph_runtime.json: "the SIMD
    type must be numeric", "ReduceSum requires a numeric dtype"...)."""
    p = node.graph.policy
    if not p.bool_arithmetic:
        return ""
    dtypes, instead = _TYPED_ONLY.get(node.op, (frozenset(), ""))
    if node.dtype in dtypes:
        return (
            f"{node.op} (at {node.loc}) of {node.dtype.name}: policy {p.name!r} types it as "
            f"max.graph does, and like MAX's compiler (which fails to compile it) graphdsl "
            f"cannot compute it; {instead}"
        )
    if node.op in _BOOL_KERNELS:
        return ""
    if node.dtype is not DType.bool and not any(i.type.dtype is DType.bool for i in node.inputs):
        return ""  # (bool / bool computes in float64: its result is bool)
    strict = _without_bool_arithmetic(p)
    try:
        typed = OPS[node.op].rule(strict, [i.type for i in node.inputs], dict(node.attrs))
        # sum(bool): int64 in the other policies
        refused = getattr(typed[1], "dtype", None) is not getattr(node.type, "dtype", None)
    except (OpTypeError, PromotionError):
        refused = True
    except Exception:  # another refusal: the node's own rule said it when it was built
        refused = False
    if refused:
        return (
            f"{node.op} (at {node.loc}) of operand types "
            f"{', '.join(i.type.dtype.name for i in node.inputs)} (in argument order): policy "
            f"{p.name!r} types arithmetic on bool as max.graph does, and like MAX's compiler "
            "(which refuses it: its kernels need numeric operands) graphdsl cannot compute "
            "it; cast the bool operands to an integer dtype first, or use logical_or / "
            "logical_and / logical_xor"
        )
    return ""


# the ops MAX computes on bool that graphdsl's other policies refuse: abs (the identity)
_BOOL_KERNELS = frozenset({"abs"})
# op -> (the dtypes a bool_arithmetic policy types its result in but that nothing computes,
# as MAX's compiler refuses them; what to do instead): filled by typed_only()
_TYPED_ONLY: dict[str, tuple[frozenset[DType], str]] = {}


def typed_only(op_name: str, dtypes: Iterable[DType], instead: str) -> None:
    """Declare that a bool_arithmetic policy (max-graph) types ``op_name`` with a result of
    one of ``dtypes`` but that evaluation and export refuse it (:func:`uncomputable`),
    saying ``instead``."""
    _TYPED_ONLY[op_name] = (frozenset(dtypes), instead)


def check_computable(graph: Any, nodes: Sequence[Symbol] | None = None) -> None:
    """Raise :class:`OpTypeError` at the first node of ``graph`` (a graphdsl Graph; of
    ``nodes`` if given) or of a graph nested in one (branches, loop bodies, called
    subgraphs) that :func:`uncomputable` refuses; evaluation and export call it first."""
    if not graph.policy.bool_arithmetic:
        return
    todo = list(graph.used() if nodes is None else nodes)
    seen: set[int] = set()
    while todo:
        node = todo.pop()
        if id(node) in seen or node.op in ("input", "literal", "constant"):
            continue
        seen.add(id(node))
        why = uncomputable(node)
        if why:
            raise OpTypeError(why)
        for region in regions_of(node.attrs):
            todo.extend(region.graph.used())


def _without_bool_arithmetic(p: Policy) -> Policy:
    """``p`` as it types bool operands without ``bool_arithmetic`` (made once, kept on ``p``:
    a table keyed by ``id(p)`` could hand a policy made later another's copy)."""
    found: Policy | None = p.__dict__.get("_without_bool_arithmetic")
    if found is None:
        found = copy.copy(p)
        found.bool_arithmetic = False
        p.__dict__["_without_bool_arithmetic"] = found
    return found


def elementwise(
    kinds: frozenset[Kind],
    *,
    to_float: frozenset[Kind] = frozenset(),
    result_bool: bool = False,
    op_class: str | None = None,
) -> Rule:
    """Promote all operands; ``to_float`` kinds compute in the policy's default float.

    ``op_class`` (one of :data:`graphdsl.policies.OP_CLASSES`) lets a policy with a rule
    for that class decide the operand dtypes and the result instead
    (:meth:`~graphdsl.policies.Policy.op_typing`); the result must be of ``kinds`` or
    ``to_float``.
    """

    def rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
        typing = None
        if op_class is not None:
            typing = p.op_typing(op_class, [Promoted(t.dtype, t.ambiguous) for t in types])
        if typing is None:
            c = promote(p, types)
            if c.dtype.kind in to_float:
                c = Promoted(p.default_float, c.ambiguous)
            need(kinds, c, types, p)
            in_dtypes = (c.dtype,) * len(types)
        else:
            c = typing.result
            need(kinds | to_float, c, types, p)
            in_dtypes = typing.in_dtypes
        shape = types[0].shape
        if len(types) > 1 and any(t.shape != shape for t in types):
            shape = broadcast_shapes(*(t.shape for t in types))
        out = (
            TensorType(DType.bool, shape)
            if result_bool
            else TensorType(c.dtype, shape, c.ambiguous)
        )
        return in_dtypes, out

    return rule


def np_impl(fn: Callable[..., Any]) -> Impl:
    """The implementation that applies numpy function ``fn`` to the operands."""

    def impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*args))

    return impl


# ---------------------------------------------------------------------------- execution

# floats that compute in float32 (every float narrower than it), and the 4-bit integers,
# which compute in the 8-bit ones and wrap back (ml_dtypes' own int4 arithmetic is not
# two's complement everywhere: -int4(-8) gives 8)
_NARROW = frozenset(d for d in DType if d.is_float and d.bits < 19)
_WIDE_INT = {DType.int4: np.dtype(np.int8), DType.uint4: np.dtype(np.uint8)}


def run_node(node: Symbol, values: list[np.ndarray], dims: dict[str, int]) -> np.ndarray:
    """Apply one op node to operand arrays (converted here to the op's operand dtypes)."""
    return apply_op(node.op, node.attrs, node.in_dtypes, node.type, values, dims)


def apply_op(
    op: str,
    attrs: dict[str, Any],
    in_dtypes: tuple[DType, ...],
    out: TensorType,
    values: list[np.ndarray],
    dims: dict[str, int],
) -> np.ndarray:
    """Apply ``op`` (with its typing: operand dtypes and result type) to operand arrays.

    float16, bfloat16 and float8 operands compute in float32 and the result rounds to its
    dtype after the op (as the reference rounds after every op).
    """
    args = [cast_array(v, want) for v, want in zip(values, in_dtypes, strict=True)]
    narrow = out.dtype in _NARROW or any(d in _NARROW for d in in_dtypes)
    if narrow and op != "cast":
        args = [a.astype(np.float32) if d in _NARROW else a
                for a, d in zip(args, in_dtypes, strict=True)]  # fmt: skip
    if op != "cast" and any(d in _WIDE_INT for d in in_dtypes):
        args = [a.astype(_WIDE_INT[d]) if d in _WIDE_INT else a
                for a, d in zip(args, in_dtypes, strict=True)]  # fmt: skip
    if dims:
        attrs = {**attrs, "_bound": dims}
    result = OPS[op].impl(args, attrs, out)
    return cast_array(np.asarray(result), out.dtype) if op != "cast" else result
