"""graphdsl's records of MAX's dimension attributes (``max._core.dialects.builtin`` and
``kgen``): small immutable values with MAX's names and fields, no MLIR. ``Dim.to_mlir()``
gives them and ``Dim(attr)`` / ``Dim.from_mlir(attr)`` read them (graphdsl.dims).

>>> from graphdsl.dims import Dim
>>> Dim("n").to_mlir() == ParamDeclRefAttr("n", IntegerType(64, SignednessSemantics.signed))
True
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "POC",
    "IntegerAttr",
    "IntegerType",
    "ParamDeclRefAttr",
    "ParamOperatorAttr",
    "SignednessSemantics",
    "StringAttr",
    "TypedAttr",
]


class TypedAttr:
    """The base of graphdsl's records of MAX's dimension attributes (``builtin.TypedAttr``).

    max.graph describes a dimension to its compiler as an MLIR attribute: a static one as an
    integer (``builtin.IntegerAttr``), a symbolic one as a reference to a parameter
    (``kgen.ParamDeclRefAttr``), an algebraic one as an operator over those
    (``kgen.ParamOperatorAttr``). graphdsl has no MLIR: these are small immutable records with
    MAX's names and fields, equal by value and needing no context, which ``Dim.to_mlir()``
    gives and ``Dim(attr)`` and ``Dim.from_mlir(attr)`` read (graphdsl.max exposes them as
    ``max._core.dialects.builtin`` and ``kgen``). One difference: MAX's ``Dim(3).to_mlir()``
    is its compiler's scalar (``kgen.SIMDAttr``); graphdsl's is the ``IntegerAttr``, which MAX
    reads as the same dim.

    >>> from graphdsl.dims import Dim
    >>> Dim("n").to_mlir(), Dim(3).to_mlir()
    (ParamDeclRefAttr("n" : si64), IntegerAttr(3 : si64))
    """

    __slots__ = ()


class SignednessSemantics(enum.Enum):
    """MAX's ``builtin.SignednessSemantics``: an integer type's signedness.

    >>> SignednessSemantics.signed
    <SignednessSemantics.signed: 1>
    """

    signless = 0
    signed = 1
    unsigned = 2


@dataclass(frozen=True)
class IntegerType:
    """MAX's ``builtin.IntegerType(width, signedness)``, as a record.

    >>> IntegerType(64, SignednessSemantics.signed)
    IntegerType(si64)
    """

    width: int
    signedness: SignednessSemantics = SignednessSemantics.signless

    def __repr__(self) -> str:
        prefix = {"signless": "i", "signed": "si", "unsigned": "ui"}[self.signedness.name]
        return f"IntegerType({prefix}{self.width})"


_SI64 = IntegerType(64, SignednessSemantics.signed)


@dataclass(frozen=True)
class StringAttr(TypedAttr):
    """MAX's ``builtin.StringAttr(value)``, as a record (a parameter's name).

    >>> StringAttr("batch").value
    'batch'
    """

    value: str

    def __repr__(self) -> str:
        return f"StringAttr({self.value!r})".replace("'", '"')


@dataclass(frozen=True)
class IntegerAttr(TypedAttr):
    """MAX's ``builtin.IntegerAttr(type, value)``, as a record: a static dimension.

    >>> from graphdsl.dims import Dim
    >>> a = IntegerAttr(IntegerType(64, SignednessSemantics.signed), 5)
    >>> a, a.value, Dim(a), a == Dim(5).to_mlir()
    (IntegerAttr(5 : si64), 5, Dim(5), True)
    """

    type: IntegerType
    value: int = 0

    def __repr__(self) -> str:
        return f"IntegerAttr({self.value} : {repr(self.type)[12:-1]})"


@dataclass(frozen=True, init=False)
class ParamDeclRefAttr(TypedAttr):
    """MAX's ``kgen.ParamDeclRefAttr(name, type)``, as a record: a symbolic dimension (a
    reference to the parameter ``name``; ``name`` is a ``StringAttr``, given as one or as a
    str).

    >>> from graphdsl.dims import Dim
    >>> a = ParamDeclRefAttr("batch", IntegerType(64, SignednessSemantics.signed))
    >>> a.name.value, Dim(a), a == Dim("batch").to_mlir()
    ('batch', Dim('batch'), True)
    """

    name: StringAttr
    type: IntegerType

    def __init__(self, name: str | StringAttr, type: IntegerType) -> None:
        object.__setattr__(self, "name", name if isinstance(name, StringAttr) else StringAttr(name))
        object.__setattr__(self, "type", type)

    def __repr__(self) -> str:
        return f'ParamDeclRefAttr("{self.name.value}" : {repr(self.type)[12:-1]})'


POC = enum.Enum(
    "POC",
    "accelerator_arch add and_ apply apply_result_slot attr_to_str ceil_div_s ceil_div_u cond "
    "cross_compilation current_target data_to_str div div_s div_u eq floor_div_s "
    "function_get_arg_types get_alignof get_env get_sizeof le load_from_mem lt max min mod mul "
    "mul_no_wrap or_ ptr_bitcast rebind rem_s rem_u shl shr str_concat string_address "
    "target_get_field target_has_feature variadic_ptr_map variadic_ptrremove_map xor",
    module=__name__,
)
POC.__doc__ = """MAX's ``kgen.POC``: the parameter operators (MAX's member names). graphdsl's
dims evaluate ``add``, ``mul_no_wrap`` (and ``mul``) and ``div`` (MAX's floor division).

>>> POC.add, POC.mul_no_wrap.name
(<POC.add: 2>, 'mul_no_wrap')
"""


@dataclass(frozen=True, init=False)
class ParamOperatorAttr(TypedAttr):
    """MAX's ``kgen.ParamOperatorAttr(opcode, operands)``, as a record: an algebraic dimension
    (``opcode`` applied to the ``operands``, kept as a tuple). Unlike MAX's, the record does not
    fold on construction: ``Dim(attr)`` evaluates it with graphdsl's dim algebra.

    >>> from graphdsl.dims import Dim
    >>> n = Dim("n").to_mlir()
    >>> a = ParamOperatorAttr(POC.add, [n, Dim(1).to_mlir()])
    >>> a.opcode, a.operands[0] == n, Dim(a), (Dim("n") + 1).to_mlir() == a
    (<POC.add: 2>, True, Dim('n') + Dim(1), True)
    >>> Dim(ParamOperatorAttr(POC.mul_no_wrap, [Dim(2).to_mlir(), Dim(3).to_mlir()]))
    Dim(6)
    """

    opcode: POC
    operands: tuple[TypedAttr, ...]

    def __init__(self, opcode: POC, operands: Iterable[TypedAttr]) -> None:
        operands = tuple(operands)
        if not isinstance(opcode, POC):
            raise TypeError(f"ParamOperatorAttr: opcode must be a kgen.POC, got {opcode!r}")
        for o in operands:
            if not isinstance(o, TypedAttr):
                raise TypeError(f"ParamOperatorAttr: operands must be attributes, got {o!r}")
        object.__setattr__(self, "opcode", opcode)
        object.__setattr__(self, "operands", operands)

    def __repr__(self) -> str:
        return f"ParamOperatorAttr({self.opcode}, [{', '.join(map(repr, self.operands))}])"
