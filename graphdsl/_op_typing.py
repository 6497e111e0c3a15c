"""How a node is typed under its graph's policy: the op's type rule on the operand types,
the dtype each literal operand must fit, and the check that it does.

Each is a pure function of the policy, the op, the operand types (and attributes): a graph
decides them once per (op, operand types) for ops without attributes, and the nodes of those
ops share one read-only attributes mapping (:data:`NO_ATTRS`).
"""

from __future__ import annotations

from typing import Any

from graphdsl._promotion_types import LiteralRule
from graphdsl._source import Location
from graphdsl.dtypes import DType
from graphdsl.literals import literal_error, literal_fix
from graphdsl.opdef import OPS
from graphdsl.policies import Policy, Promoted, PromotionError
from graphdsl.shapes import ShapeError, dims_of
from graphdsl.types import OpTypeError, TensorType

__all__ = ["NO_ATTRS", "Typing", "check_literal", "literal_wants", "type_op"]

# what a type rule decides: operand dtypes, result type, operands taken by truth value
Typing = tuple[tuple[DType, ...], TensorType, tuple[int, ...]]


def type_op(
    policy: Policy,
    op: str,
    types: tuple[TensorType, ...],
    attrs: dict[str, Any],
    loc: Location | None,
) -> Typing:
    """``op``'s type rule on ``types``: (operand dtypes, result type, truthy operands); its
    errors name the op and the user's line ``loc``."""
    opdef = OPS[op]
    try:
        in_dtypes, out = opdef.rule(policy, list(types), attrs)
    except PromotionError as e:
        raise PromotionError(
            f"{op} (at {loc}): {e}", lhs=e.lhs, rhs=e.rhs, policy=e.policy, fix=e.fix
        ) from None
    except (OpTypeError, ShapeError) as e:
        raise type(e)(f"{op} (at {loc}): {e}") from None
    shape = dims_of(out.shape)  # a str a rule passed on from the user becomes a Dim
    return in_dtypes, out if shape is out.shape else out._replace(shape=shape), opdef.truthy


def literal_wants(
    policy: Policy, types: tuple[TensorType, ...], typing: Typing
) -> tuple[DType | None, ...]:
    """For each operand of an op typed ``typing`` on ``types``: the dtype a literal there
    must fit (None for an operand taken by truth value). That is the dtype the op computes it
    in, or, where the policy says so (max-graph: Policy.literal_dtype), the operands' common
    dtype."""
    in_dtypes, _, truthy = typing
    kept = [k for k in range(len(types)) if k not in truthy]
    common = policy.literal_dtype(
        [Promoted(types[k].dtype, types[k].ambiguous) for k in kept],
        [in_dtypes[k] for k in kept],
    )
    return tuple(
        None if k in truthy else in_dtypes[k] if common is None else common
        for k in range(len(types))
    )


def check_literal(
    policy: Policy,
    op: str,
    value: bool | int | float | complex,
    want: DType,
    types: tuple[TensorType, ...],
    loc: Location | None,
) -> None:
    """Raise unless the literal ``value`` fits ``want``, the dtype ``op`` converts it to."""
    problem = policy.literal_problem(value, want)
    if problem:
        raise literal_error(
            policy.literals is LiteralRule.max_graph,
            value,
            want,
            f"{op} (at {loc}): the literal {value!r} {problem} (operand types "
            f"{', '.join(str(t) for t in types)}, policy {policy.name!r}); "
            f"{literal_fix(value, want)}",
        )


class _NoAttrs(dict[str, Any]):
    """The attributes of every node built without any, one shared empty dict.

    A node's attributes never change once it is built (passes share them between graphs),
    so one serves all such nodes; it is read-only, so that a mistaken write raises instead
    of changing every one of them. Copies and unpickled graphs share it again.
    """

    def _read_only(self, *args: object, **kwargs: object) -> Any:
        raise TypeError("a node's attributes are read-only; build a new node instead")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (_no_attrs, ())


def _no_attrs() -> _NoAttrs:
    return NO_ATTRS


NO_ATTRS = _NoAttrs()
