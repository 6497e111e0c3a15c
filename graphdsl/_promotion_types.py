"""What promotion answers, and how it fails: the values a policy's rules are made of.

A type for promotion is :class:`Promoted` (a dtype and whether it is ambiguous); a
:class:`Decision` adds the rule that decided it; :class:`PromotionError` names the operands,
the policy and a fix. Users import these from :mod:`graphdsl.policies` (or ``graphdsl``),
the module each says it belongs to.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from graphdsl.dtypes import DType

__all__ = ["OP_CLASSES", "Decision", "LiteralRule", "OpTyping", "Promoted", "PromotionError"]


class PromotionError(TypeError):
    """No implicit promotion exists for two types under a policy.

    Attributes name the operand types in argument order, the policy and a fix.

    >>> import graphdsl as gd
    >>> g = gd.Graph("g", input_types={"a": gd.int8, "b": gd.float32}, policy="array-api")
    >>> a, b = g.inputs
    >>> try:
    ...     a + b
    ... except gd.PromotionError as e:
    ...     print(e.lhs, e.rhs, e.policy, "|", e.fix)
    int8 float32 array-api | cast the int8 operand to float32
    """

    def __init__(
        self, message: str, *, lhs: str = "", rhs: str = "", policy: str = "", fix: str = ""
    ) -> None:
        super().__init__(message)
        self.lhs, self.rhs, self.policy, self.fix = lhs, rhs, policy, fix


class Promoted(NamedTuple):
    """The result of promoting typed values: a dtype and whether it is ambiguous.

    >>> import graphdsl as gd
    >>> p = gd.policy("default").result_type(gd.int8, 2.5)  # int8 and a float literal
    >>> p, str(p)
    (Promoted(dtype=DType.float32, ambiguous=True), 'float32?')
    """

    dtype: DType
    ambiguous: bool

    def __str__(self) -> str:
        return f"{self.dtype.name}{'?' if self.ambiguous else ''}"


class Decision(NamedTuple):
    """A promotion result with the rule that decided it (for explanations)."""

    result: Promoted
    rule: str


class LiteralRule(enum.Enum):
    """How a policy types Python literals (ambiguous types): each rule is described in
    :mod:`graphdsl.policies`' docstring and on each policy's page of the docs.

    >>> import graphdsl as gd
    >>> gd.policy("jax").literals, gd.LiteralRule("array-api")
    (<LiteralRule.jax: 'jax'>, <LiteralRule.array_api: 'array-api'>)
    >>> [r.value for r in gd.LiteralRule]
    ['jax', 'anvil', 'max', 'array-api', 'max-graph']
    """

    jax = "jax"
    anvil = "anvil"
    max = "max"
    array_api = "array-api"
    max_graph = "max-graph"


class OpTyping(NamedTuple):
    """How a policy's op rule types one op: the dtype each operand computes in, the result,
    and the rule's reason (for explanations)."""

    in_dtypes: tuple[DType, ...]
    result: Promoted
    rule: str


# The op classes a policy may type itself (``Policy(op_rules=...)``). An op type rule asks
# its policy through :meth:`Policy.op_typing` with its class; a policy without a rule for
# the class (or whose rule returns None) leaves the op to its own rule.
OP_CLASSES: dict[str, str] = {
    "true_divide": "x / y (div): the operand dtypes and result of a true division",
    "float_math": "a floating-only function of one operand (exp, log, sqrt, sin, cos, tanh, "
    "sigmoid, erf, gelu, silu, ...), which computes integers in the default float",
    "logical": "logical_and, logical_or, logical_xor, logical_not: the operands they take "
    "(by truth value, or bools only)",
}


for _public in (PromotionError, Promoted, Decision, LiteralRule, OpTyping):
    # named where users import them from: tracebacks say graphdsl.policies.PromotionError
    _public.__module__ = "graphdsl.policies"
del _public
