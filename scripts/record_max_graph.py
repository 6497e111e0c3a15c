#!/usr/bin/env python3
"""Record what Modular's real ``max`` package (MAX graph API) does, as golden JSON files.

Recorded against ``max`` 26.7.0 (PyPI package ``max``; ``max-core`` 26.7.0) on CPU, Python 3.11.
The goldens let graphdsl's tests check its ``max-graph`` promotion policy and its MAX-compatible
API cell by cell without having ``max`` installed:

* ``tests/data/max_graph_promotion.json`` -- result dtype (or ``"error: <first line>"``) of
  every binary op in ``BINARY_OPS`` on every ordered pair of ``DType`` graph inputs; of
  ``x <op> lit`` and ``lit <op> x`` for the Python literals in ``LITERALS`` (and a few NumPy
  scalars / arrays); of ``ops.constant(lit, dtype)``; of ``ops.cast``; and of unary ops and
  reductions on every dtype.  ``error_types`` maps every distinct error string to the exception
  class raised; ``binary_diagnostics`` keeps the informative ``Diagnostics:`` line that the
  graph compiler (RMO) puts after the uninformative first line ``Failed to create op ...``.
* ``tests/data/max_graph_ops.json`` -- ``inspect.signature`` and first docstring line of every
  public op in ``max.graph.ops``, of ``Graph.__init__``, ``TensorType.__init__``,
  ``DeviceRef``, and of ``TensorValue``'s methods, properties and operator dunders.
* ``tests/data/max_graph_programs.json`` -- three small programs (an MLP, a causal attention
  block, Python scalars against tensors of several dtypes), each with its exact Python source,
  executed on CPU with ``max.engine.InferenceSession``; inputs, constants and outputs are
  recorded as nested lists with dtype and shape.

Rerun (``max`` must never be installed into the project's own venv)::

    python3 -m venv /tmp/maxvenv && /tmp/maxvenv/bin/pip install max==26.7.0
    /tmp/maxvenv/bin/python scripts/record_max_graph.py

The output is deterministic (sorted keys, no addresses, seeded RNG) apart from tiny float
differences should MAX's CPU kernels change.
"""

from __future__ import annotations

import functools
import importlib.metadata
import inspect
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from max.driver import CPU  # type: ignore[import-not-found, unused-ignore]
from max.dtype import DType  # type: ignore[import-not-found, unused-ignore]
from max.engine import InferenceSession  # type: ignore[import-not-found, unused-ignore]
from max.graph import (  # type: ignore[import-not-found, unused-ignore]
    AlgebraicDim,
    BufferType,
    BufferValue,
    DeviceRef,
    Dim,
    Graph,
    Shape,
    StaticDim,
    SymbolicDim,
    TensorType,
    TensorValue,
    ops,
)

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
EXPECTED_VERSION = "26.7.0"

# Every DType member, in the enum's own order; filtered below to those that can be graph inputs.
ALL_DTYPES: list[Any] = list(DType)

SHORT: dict[str, str] = {
    "bool": "b",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "float4_e2m1fn": "f4e2m1",
    "float6_e2m3fn": "f6e2m3",
    "float6_e3m2fn": "f6e3m2",
    "float8_e8m0fnu": "f8e8m0",
    "float8_e4m3fn": "f8e4m3",
    "float8_e4m3fnuz": "f8e4m3z",
    "float8_e5m2": "f8e5m2",
    "float8_e5m2fnuz": "f8e5m2z",
}

# op name -> (callable name in max.graph.ops, shape of both inputs)
BINARY_OPS: dict[str, tuple[str, list[int]]] = {
    "add": ("add", [2]),
    "sub": ("sub", [2]),
    "mul": ("mul", [2]),
    "div": ("div", [2]),
    "floor_div": ("floor_div", [2]),
    "mod": ("mod", [2]),
    "pow": ("pow", [2]),
    "max": ("max", [2]),
    "min": ("min", [2]),
    "equal": ("equal", [2]),
    "not_equal": ("not_equal", [2]),
    "greater": ("greater", [2]),
    "greater_equal": ("greater_equal", [2]),
    "logical_and": ("logical_and", [2]),
    "logical_or": ("logical_or", [2]),
    "logical_xor": ("logical_xor", [2]),
    "matmul": ("matmul", [2, 2]),
    "outer": ("outer", [2]),
    # ops.where(cond, a, b) with a bool condition: a and b are promoted like a binary op.
    "where": ("where", [2]),
}

# Python literals as source text (the JSON key); evaluated with eval().
LITERALS: list[str] = [
    "True",
    "False",
    "0",
    "1",
    "-1",
    "2",
    "127",
    "128",
    "255",
    "256",
    "-128",
    "-129",
    "1000",
    "2048",
    "2049",
    "32767",
    "32768",
    "65535",
    "65536",
    "16777216",
    "16777217",
    "2**31 - 1",
    "2**31",
    "2**32 - 1",
    "2**32",
    "2**53",
    "2**53 + 1",
    "2**63 - 1",
    "2**63",
    "2**64 - 1",
    "2**64",
    "-2**63",
    "-2**63 - 1",
    "0.0",
    "-0.0",
    "0.5",
    "1.0",
    "1.5",
    "-1.5",
    "0.1",
    "1e300",
    "float('inf')",
    "float('-inf')",
    "float('nan')",
    "65504.0",
    "65536.0",
    "3.4e38",
    "1e39",
    "16777217.0",
]

# Ops probed with every literal, both operand orders.
LITERAL_OPS_FULL: list[str] = ["add", "div"]
# Ops probed with LITERALS_SUBSET only, both operand orders.
LITERAL_OPS_SUBSET: list[str] = ["sub", "mul", "floor_div", "mod", "pow", "equal", "max"]
LITERALS_SUBSET: list[str] = [
    "True",
    "0",
    "1",
    "-1",
    "2",
    "255",
    "256",
    "2**31",
    "0.5",
    "-1.5",
    "float('inf')",
    "float('nan')",
]

# NumPy scalars and arrays (DLPack path of _promote_to_strong), x + value only.
NUMPY_LITERALS: list[str] = [
    "np.bool_(True)",
    "np.int8(1)",
    "np.uint8(255)",
    "np.int32(1)",
    "np.int64(1)",
    "np.int64(2**40)",
    "np.float16(0.5)",
    "np.float32(0.5)",
    "np.float64(0.5)",
    "np.array(1, dtype=np.int64)",
    "np.array([1, 2], dtype=np.int64)",
    "np.array([300, 1], dtype=np.int64)",
    "np.array([1, 2], dtype=np.int32)",
    "np.array([0.5, 1.5], dtype=np.float64)",
    "np.array([0.5, 1.5], dtype=np.float32)",
    "np.array([True, False])",
]

UNARY_OPS: list[str] = [
    "abs",
    "negate",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tanh",
    "erf",
    "relu",
    "sigmoid",
    "silu",
    "gelu",
    "floor",
    "ceil",
    "round",
    "trunc",
    "is_nan",
    "is_inf",
    "logical_not",
    "softmax",
    "logsoftmax",
    "sum",
    "mean",
    "prod",
    "argmax",
    "cumsum",
]

# Miscellaneous single probes: name -> source run with x (float32 [2]), i (int32 [2]) in scope.
MISC_PROBES: dict[str, str] = {
    "both_weak_add": "ops.add(1, 2)",
    "both_weak_add_float": "ops.add(1.0, 2.0)",
    "unary_on_python_float": "ops.exp(1.0)",
    "unary_on_python_int": "ops.negate(1)",
    "matmul_with_python_int": "ops.matmul(x, 2)",
    "matmul_with_python_float": "ops.matmul(x, 2.0)",
    "tensor_value_from_int": "TensorValue(1)",
    "constant_without_dtype": "ops.constant(1, device=DeviceRef.CPU())",
    "constant_without_device": "ops.constant(1, DType.int32)",
    "constant_float_into_int32": "ops.constant(0.5, DType.int32, DeviceRef.CPU())",
    "constant_numpy_f64_default": "ops.constant(np.array([0.5]))",
    "constant_numpy_dtype_mismatch": "ops.constant(np.array([0.5]), DType.float32)",
    "constant_list": "ops.constant([[1, 2], [3, 4]], DType.int8, DeviceRef.CPU())",
    "constant_ragged": "ops.constant([[1, 2], [3]], DType.int8, DeviceRef.CPU())",
    "cast_same_dtype_is_identity": "ops.cast(x, DType.float32) is x",
    "method_cast": "x.cast(DType.int8)",
    "eq_operator_tensor": "x == x",
    "eq_operator_int_literal_on_float": "x == 1",
    "eq_operator_float_literal_on_int": "i == 0.5",
    "eq_operator_string": "x == 'a'",
    "lt_operator_literal": "i < 3",
    "neg_operator_on_bool_input": "-b",
    "invert_operator_on_int": "~i",
    "invert_operator_on_bool": "~b",
    "and_operator_bool_bool": "b & b",
    "and_operator_int_int": "i & i",
    "and_operator_bool_literal": "b & True",
    "or_operator_bool_literal_int": "b | 1",
    "xor_operator_bool_bool": "b ^ b",
    "divmod_int": "divmod(i, 2)",
    "round_builtin": "round(x)",
    "abs_builtin": "abs(x)",
    "broadcast_shapes": "x + ops.constant([[1.0], [2.0], [3.0]], DType.float32, DeviceRef.CPU())",
    "broadcast_mismatch": "x + ops.constant([1.0, 2.0, 3.0], DType.float32, DeviceRef.CPU())",
    "int_div_int": "i / i",
    "int_floordiv_int": "i // i",
    "float_floordiv_float": "x // x",
    "int_div_python_int": "i / 2",
    "python_int_div_int": "2 / i",
    "int_floordiv_python_float": "i // 2.0",
    "float_pow_python_int": "x ** 2",
    "int_pow_python_float": "i ** 0.5",
    "shape_dim_plus_int_tensor": "i + i.shape[0]",
    "shape_dim_plus_float_tensor": "x + x.shape[0]",
    "where_bool_literals": "ops.where(b, 1, 2)",
    "where_tensor_literal": "ops.where(b, x, 0)",
    "where_literal_tensor_int": "ops.where(b, 0.5, i)",
}

JSON = dict[str, Any]


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def dname(dtype: Any) -> str:
    return str(dtype.name)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


CAST_HINT = " Insert an explicit cast op if this conversion is wanted."


def diagnostic_line(exc: BaseException) -> str:
    """The informative line of an RMO error (the line after ``Diagnostics:``), else line 1.

    The boilerplate ``CAST_HINT`` sentence that ends every "Unsafe cast" diagnostic is cut.
    """
    lines = [ln.strip() for ln in str(exc).splitlines()]
    for k, ln in enumerate(lines):
        if ln == "Diagnostics:" and k + 1 < len(lines):
            return lines[k + 1].removesuffix(CAST_HINT)
    return first_line(exc)


class Recorder:
    """Collects error strings -> exception class names across all probes."""

    def __init__(self) -> None:
        self.error_types: dict[str, str] = {}

    def error(self, exc: BaseException) -> str:
        cell = f"error: {first_line(exc)}"
        name = type(exc).__name__
        prev = self.error_types.get(cell)
        if prev is not None and prev != name:
            self.error_types[cell] = f"{prev}|{name}" if name not in prev.split("|") else prev
        else:
            self.error_types[cell] = name
        return cell


def cpu() -> Any:
    return DeviceRef.CPU()


def result_name(value: Any) -> str:
    """dtype name of a TensorValue, or a description of a non-tensor result."""
    if isinstance(value, TensorValue):
        return dname(value.dtype)
    if isinstance(value, tuple | list):
        return "(" + ", ".join(result_name(v) for v in value) + ")"
    if isinstance(value, bool):
        return f"python bool {value}"
    return f"{type(value).__name__}"


def can_be_input(dtype: Any) -> str | None:
    """None if ``dtype`` can be a graph input's element type, else the error first line."""
    try:
        with Graph("probe_input", input_types=[TensorType(dtype, [2], cpu())]) as g:
            _ = g.inputs[0].tensor.dtype
    except Exception as exc:
        return first_line(exc)
    return None


# --------------------------------------------------------------------------------------------
# 1. promotion
# --------------------------------------------------------------------------------------------


def probe_binary(
    rec: Recorder, op: Callable[..., Any], a: Any, b: Any, shape: list[int], is_where: bool
) -> tuple[str, str | None]:
    types = [TensorType(a, shape, cpu()), TensorType(b, shape, cpu())]
    if is_where:
        types.append(TensorType(DType.bool, shape, cpu()))
    try:
        with Graph("t", input_types=types) as g:
            x = g.inputs[0].tensor
            y = g.inputs[1].tensor
            out = op(g.inputs[2].tensor, x, y) if is_where else op(x, y)
            return dname(out.dtype), None
    except Exception as exc:
        return rec.error(exc), f"{type(exc).__name__}: {diagnostic_line(exc)}"


def probe_literal(
    rec: Recorder, op: Callable[..., Any], dtype: Any, lit: Any, reverse: bool
) -> str:
    try:
        with Graph("t", input_types=[TensorType(dtype, [2], cpu())]) as g:
            x = g.inputs[0].tensor
            out = op(lit, x) if reverse else op(x, lit)
            return result_name(out)
    except Exception as exc:
        return rec.error(exc)


def probe_constant(rec: Recorder, dtype: Any, lit: Any) -> str:
    try:
        with Graph("t", input_types=[]):
            return result_name(ops.constant(lit, dtype, cpu()))
    except Exception as exc:
        return rec.error(exc)


def probe_cast(rec: Recorder, a: Any, b: Any) -> str:
    try:
        with Graph("t", input_types=[TensorType(a, [2], cpu())]) as g:
            return result_name(ops.cast(g.inputs[0].tensor, b))
    except Exception as exc:
        return rec.error(exc)


def probe_unary(rec: Recorder, name: str, dtype: Any) -> str:
    fn: Callable[..., Any] = getattr(ops, name)
    try:
        with Graph("t", input_types=[TensorType(dtype, [2, 3], cpu())]) as g:
            x = g.inputs[0].tensor
            out = fn(x, axis=-1) if name in ("sum", "mean", "prod", "argmax", "cumsum") else fn(x)
            return result_name(out)
    except Exception as exc:
        return rec.error(exc)


def probe_misc(rec: Recorder, src: str) -> str:
    types = [
        TensorType(DType.float32, [2], cpu()),
        TensorType(DType.int32, [2], cpu()),
        TensorType(DType.bool, [2], cpu()),
    ]
    try:
        with Graph("t", input_types=types) as g:
            env: dict[str, Any] = {
                "ops": ops,
                "np": np,
                "DType": DType,
                "DeviceRef": DeviceRef,
                "TensorValue": TensorValue,
                "x": g.inputs[0].tensor,
                "i": g.inputs[1].tensor,
                "b": g.inputs[2].tensor,
            }
            return result_name(eval(src, env))
    except Exception as exc:
        return rec.error(exc)


def record_promotion(version: str, dtypes: list[Any], skipped: dict[str, str]) -> JSON:
    rec = Recorder()
    names = [dname(d) for d in dtypes]

    binary: dict[str, dict[str, dict[str, str]]] = {}
    diagnostics: dict[str, dict[str, dict[str, str]]] = {}
    missing: list[str] = []
    for key, (attr, shape) in BINARY_OPS.items():
        fn = getattr(ops, attr, None)
        if fn is None:
            missing.append(key)
            continue
        table: dict[str, dict[str, str]] = {}
        diag: dict[str, dict[str, str]] = {}
        for a in dtypes:
            row: dict[str, str] = {}
            for b in dtypes:
                cell, why = probe_binary(rec, fn, a, b, shape, key == "where")
                row[dname(b)] = cell
                if why is not None:
                    diag.setdefault(dname(a), {})[dname(b)] = why
            table[dname(a)] = row
        binary[key] = table
        if key != "add":
            # keep only the diagnostics that differ from add's for the same pair
            base = diagnostics["add"]
            diag = {
                a: kept
                for a, row in diag.items()
                if (kept := {b: v for b, v in row.items() if base.get(a, {}).get(b) != v})
            }
        diagnostics[key] = diag
        print(f"  binary {key}: done", file=sys.stderr)

    literal_values = {src: eval(src) for src in LITERALS}
    literals: dict[str, dict[str, dict[str, dict[str, str]]]] = {}
    for key in LITERAL_OPS_FULL + LITERAL_OPS_SUBSET:
        fn = getattr(ops, BINARY_OPS[key][0])
        subset = LITERALS if key in LITERAL_OPS_FULL else LITERALS_SUBSET
        per_dtype: dict[str, dict[str, dict[str, str]]] = {}
        for d in dtypes:
            per_dtype[dname(d)] = {
                src: {
                    "x_op_lit": probe_literal(rec, fn, d, literal_values[src], reverse=False),
                    "lit_op_x": probe_literal(rec, fn, d, literal_values[src], reverse=True),
                }
                for src in subset
            }
        literals[key] = per_dtype
        print(f"  literals {key}: done", file=sys.stderr)

    # The operator forms must agree with ops.add / ops.div: probe `x + lit`, `lit + x`,
    # `x / lit`, `lit / x` through the dunders and keep only disagreements (expected: none).
    operator_forms: list[tuple[str, str, Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = [
        ("+", "add", lambda x, v: x + v, lambda v, x: v + x),
        ("/", "div", lambda x, v: x / v, lambda v, x: v / x),
    ]
    dunder_checked = 0
    dunder_mismatches: list[JSON] = []
    for sym, key, fwd, rev in operator_forms:
        for d in dtypes:
            for src in LITERALS:
                for order, fn, reverse in (("x_op_lit", fwd, False), ("lit_op_x", rev, True)):
                    got = probe_literal(rec, fn, d, literal_values[src], reverse=reverse)
                    want = literals[key][dname(d)][src][order]
                    dunder_checked += 1
                    if got != want:
                        dunder_mismatches.append(
                            {
                                "operator": sym,
                                "dtype": dname(d),
                                "literal": src,
                                "order": order,
                                "operator_result": got,
                                "op_result": want,
                            }
                        )

    numpy_literals: dict[str, dict[str, str]] = {}
    for d in dtypes:
        numpy_literals[dname(d)] = {
            src: probe_literal(rec, ops.add, d, eval(src), reverse=False) for src in NUMPY_LITERALS
        }

    constant: dict[str, dict[str, str]] = {
        dname(d): {src: probe_constant(rec, d, literal_values[src]) for src in LITERALS}
        for d in dtypes
    }
    cast: dict[str, dict[str, str]] = {
        dname(a): {dname(b): probe_cast(rec, a, b) for b in dtypes} for a in dtypes
    }
    unary: dict[str, dict[str, str]] = {
        name: {dname(d): probe_unary(rec, name, d) for d in dtypes} for name in UNARY_OPS
    }
    misc = {
        name: {"source": src, "result": probe_misc(rec, src)} for name, src in MISC_PROBES.items()
    }

    return {
        "version": version,
        "dtypes": names,
        "short_names": {n: SHORT.get(n, n) for n in names},
        "skipped_dtypes": skipped,
        "conventions": {
            "cell": "result dtype name, or 'error: <first line of the exception message>'",
            "binary": "binary[op][lhs][rhs] for graph inputs TensorType(dtype, shape, CPU)",
            "binary_shapes": {k: v[1] for k, v in BINARY_OPS.items()},
            "where": "ops.where(cond_bool, lhs, rhs)",
            "literals": "literals[op][dtype][literal_source] = {x_op_lit: ops.<op>(x, lit), "
            "lit_op_x: ops.<op>(lit, x)}; x is a [2] graph input of that dtype",
            "literals_via_operators": "x + lit, lit + x, x / lit, lit / x through the "
            "TensorValue dunders, compared with literals[add|div]; only mismatches are listed",
            "numpy_literals": "ops.add(x, value) for NumPy scalars / arrays",
            "constant": "ops.constant(lit, dtype, DeviceRef.CPU()) result dtype",
            "cast": "ops.cast(x, target) result dtype, cast[source][target]",
            "unary": "unary[op][dtype], input shape [2, 3]; reductions use axis=-1",
            "misc": "misc[name] = {source, result}; x float32[2], i int32[2], b bool[2]",
            "build_only": "all cells here only build the graph; a dtype that builds may still "
            "fail to compile or run (see max_graph_programs.json)",
            "binary_diagnostics": "for error cells: '<ExceptionType>: <Diagnostics line>' "
            "(the trailing CAST_HINT sentence cut); for ops other than add only the entries "
            "that differ from binary_diagnostics[add] for the same pair",
            "cast_hint": CAST_HINT.strip(),
            "error_types": "every distinct error cell -> exception class name",
        },
        "literal_sources": LITERALS,
        "literal_subset": LITERALS_SUBSET,
        "missing_ops": missing,
        "binary": binary,
        "binary_diagnostics": diagnostics,
        "literals": literals,
        "literals_via_operators": {"checked": dunder_checked, "mismatches": dunder_mismatches},
        "numpy_literals": numpy_literals,
        "constant": constant,
        "cast": cast,
        "unary": unary,
        "misc": misc,
        "error_types": rec.error_types,
    }


# --------------------------------------------------------------------------------------------
# 2. op signatures
# --------------------------------------------------------------------------------------------

_ADDR = re.compile(r" at 0x[0-9a-fA-F]+")


def clean(text: str) -> str:
    return _ADDR.sub("", text)


def doc_first_line(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    for ln in doc.splitlines():
        if ln.strip():
            return ln.strip()
    return ""


def describe_callable(obj: Any) -> JSON:
    entry: JSON = {"doc": doc_first_line(obj)}
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError) as exc:
        entry["signature"] = None
        entry["signature_error"] = first_line(exc)
        return entry
    entry["signature"] = clean(str(sig))
    params = []
    for p in sig.parameters.values():
        params.append(
            {
                "name": p.name,
                "kind": p.kind.name,
                "default": None if p.default is inspect.Parameter.empty else clean(repr(p.default)),
                "annotation": None
                if p.annotation is inspect.Parameter.empty
                else clean(p.annotation if isinstance(p.annotation, str) else repr(p.annotation)),
            }
        )
    entry["parameters"] = params
    ret = sig.return_annotation
    entry["return"] = (
        None
        if ret is inspect.Signature.empty
        else clean(ret if isinstance(ret, str) else repr(ret))
    )
    return entry


TENSOR_VALUE_MEMBERS: list[str] = [
    "T",
    "reshape",
    "transpose",
    "permute",
    "flatten",
    "broadcast_to",
    "__getitem__",
    "cast",
    "dtype",
    "shape",
    "rank",
    "device",
    "type",
    "to",
    "argmax",
    "max",
    "min",
    "mean",
    "stdev",
    "var",
    "rebind",
    "print",
    "__init__",
]

DUNDERS: list[str] = [
    "__add__",
    "__radd__",
    "__sub__",
    "__rsub__",
    "__mul__",
    "__rmul__",
    "__truediv__",
    "__rtruediv__",
    "__floordiv__",
    "__rfloordiv__",
    "__mod__",
    "__rmod__",
    "__divmod__",
    "__rdivmod__",
    "__pow__",
    "__rpow__",
    "__matmul__",
    "__rmatmul__",
    "__neg__",
    "__invert__",
    "__round__",
    "__and__",
    "__rand__",
    "__or__",
    "__ror__",
    "__xor__",
    "__rxor__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__iter__",
    "__contains__",
    "__len__",
    "__bool__",
    "__abs__",
    "__pos__",
]


def describe_member(cls: Any, name: str) -> JSON:
    raw = inspect.getattr_static(cls, name, None)
    if raw is None and not hasattr(cls, name):
        return {"kind": "absent"}
    if raw is None:
        return {"kind": "none (explicitly disabled)"}
    if isinstance(raw, property):
        entry = describe_callable(raw.fget)
        entry["kind"] = "property"
        entry["settable"] = raw.fset is not None
        return entry
    if isinstance(raw, functools.cached_property):
        entry = describe_callable(raw.func)
        entry["kind"] = "cached_property"
        return entry
    if isinstance(raw, classmethod | staticmethod):
        entry = describe_callable(getattr(cls, name))
        entry["kind"] = type(raw).__name__
        return entry
    if callable(raw):
        entry = describe_callable(raw)
        entry["kind"] = "method"
        return entry
    return {"kind": type(raw).__name__, "repr": clean(repr(raw))}


def record_ops(version: str) -> JSON:
    public: dict[str, JSON] = {}
    non_callables: dict[str, str] = {}
    for name in sorted(n for n in dir(ops) if not n.startswith("_")):
        obj = getattr(ops, name)
        module = getattr(obj, "__module__", "") or ""
        if inspect.ismodule(obj):
            non_callables[name] = "module"
            continue
        if not callable(obj) or not module.startswith("max.graph.ops"):
            non_callables[name] = f"{type(obj).__name__} from {module or '?'}"
            continue
        entry = describe_callable(obj)
        entry["module"] = module
        public[name] = entry

    classes: dict[str, JSON] = {
        "Graph.__init__": describe_callable(Graph.__init__),
        "Graph.output": describe_callable(Graph.output),
        "Graph.inputs": describe_member(Graph, "inputs"),
        "TensorType.__init__": describe_callable(TensorType.__init__),
        "DeviceRef.__init__": describe_callable(DeviceRef.__init__),
        "DeviceRef.CPU": describe_callable(DeviceRef.CPU),
        "DeviceRef.GPU": describe_callable(DeviceRef.GPU),
        "ops.constant": describe_callable(ops.constant),
        "InferenceSession.__init__": describe_callable(InferenceSession.__init__),
        "InferenceSession.load": describe_callable(InferenceSession.load),
    }
    tensor_value = {n: describe_member(TensorValue, n) for n in TENSOR_VALUE_MEMBERS}
    dunders = {n: describe_member(TensorValue, n) for n in DUNDERS}
    dtype_members = [dname(d) for d in ALL_DTYPES]
    return {
        "version": version,
        "ops": public,
        "ops_non_callables": non_callables,
        "classes": classes,
        "tensor_value": tensor_value,
        "tensor_value_dunders": dunders,
        "dtype_members": dtype_members,
        "ops_module_doc": inspect.getdoc(ops) or "",
    }


# --------------------------------------------------------------------------------------------
# 3. executed programs
# --------------------------------------------------------------------------------------------

MLP_SOURCE = """\
import numpy as np
from max.dtype import DType
from max.graph import DeviceRef, Graph, TensorType, ops

rng = np.random.default_rng(0)
w1 = rng.standard_normal((4, 8)).astype(np.float32) * np.float32(0.5)
b1 = rng.standard_normal((8,)).astype(np.float32) * np.float32(0.1)
w2 = rng.standard_normal((8, 3)).astype(np.float32) * np.float32(0.5)
x_in = rng.standard_normal((2, 4)).astype(np.float32)

device = DeviceRef.CPU()
with Graph("mlp", input_types=[TensorType(DType.float32, [2, 4], device)]) as graph:
    x = graph.inputs[0].tensor
    h = ops.relu(ops.matmul(x, ops.constant(w1, device=device)) + ops.constant(b1, device=device))
    y = h @ ops.constant(w2, device=device)
    graph.output(y)

inputs = [x_in]
constants = {"w1": w1, "b1": b1, "w2": w2}
"""

ATTENTION_SOURCE = """\
import math

import numpy as np
from max.dtype import DType
from max.graph import DeviceRef, Graph, TensorType, ops

B, S, D = 2, 4, 8
rng = np.random.default_rng(1)
q_in = rng.standard_normal((B, S, D)).astype(np.float32)
k_in = rng.standard_normal((B, S, D)).astype(np.float32)
v_in = rng.standard_normal((B, S, D)).astype(np.float32)

device = DeviceRef.CPU()
t = TensorType(DType.float32, [B, S, D], device)
with Graph("attention", input_types=[t, t, t]) as graph:
    q, k, v = (inp.tensor for inp in graph.inputs)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(D)
    ones = ops.constant(np.ones((S, S), dtype=np.float32), device=device)
    causal = ops.band_part(ones, num_lower=None, num_upper=0)  # lower triangle incl. diagonal
    scores = ops.where(causal > 0.5, scores, float("-inf"))
    probs = ops.softmax(scores, axis=-1)
    graph.output(probs @ v, probs)

inputs = [q_in, k_in, v_in]
constants = {}
"""

SCALARS_SOURCE = """\
import numpy as np
from max.dtype import DType
from max.graph import DeviceRef, Graph, TensorType, ops

# one graph per input dtype; every expression that builds becomes an output.
EXPRESSIONS = [
    "x * 2 + 1",
    "2 * x - 1",
    "x / 2",
    "2 / x",
    "x // 2",
    "x % 3",
    "x + 0.5",
    "x * 2.5",
    "x ** 2",
    "x + True",
    "-x",
    "x == 1",
    "x > 0",
    "x - 200",
    "x * 100",
]
VALUES = {
    "int32": [-7, -3, -1, 0, 1, 2, 5, 100],
    "int8": [-7, -3, -1, 0, 1, 2, 5, 100],
    "uint8": [0, 1, 2, 3, 5, 7, 100, 200],
    "float32": [-7.5, -3.0, -1.5, 0.0, 0.5, 1.0, 2.25, 100.0],
    "float16": [-7.5, -3.0, -1.5, 0.0, 0.5, 1.0, 2.25, 100.0],
    "bfloat16": [-7.5, -3.0, -1.5, 0.0, 0.5, 1.0, 2.25, 100.0],
}
NUMPY_DTYPE = {
    "int32": np.int32, "int8": np.int8, "uint8": np.uint8,
    "float32": np.float32, "float16": np.float16,
    "bfloat16": np.float32,  # fed as float32 and cast to bfloat16 inside the graph
}
device = DeviceRef.CPU()


def build(dtype_name, expressions):
    dtype = getattr(DType, dtype_name)
    feed = DType.float32 if dtype_name == "bfloat16" else dtype
    with Graph(f"scalars_{dtype_name}", input_types=[TensorType(feed, [8], device)]) as graph:
        x = graph.inputs[0].tensor
        if dtype_name == "bfloat16":
            x = x.cast(DType.bfloat16)
        outs = [eval(e, {"x": x, "ops": ops, "DType": DType}) for e in expressions]
        graph.output(*outs)
    return graph
"""

PROGRAMS: dict[str, tuple[str, str]] = {
    "mlp": (
        MLP_SOURCE,
        "2-layer MLP: relu(x @ w1 + b1) @ w2, float32, weights from default_rng(0)",
    ),
    "attention": (
        ATTENTION_SOURCE,
        "causal attention softmax(q @ k^T / sqrt(d)) @ v with an ops.band_part mask; outputs "
        "(attention output, attention probabilities)",
    ),
    "scalars": (
        SCALARS_SOURCE,
        "Python scalars against [8] tensors of int32, int8, uint8, float32, float16, bfloat16; "
        "'results' maps dtype -> expression -> output (or build error)",
    ),
}


def float_repr(v: float) -> float | str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def to_jsonable(arr: Any) -> Any:
    a = np.asarray(arr)
    if a.dtype.kind == "f":
        return (
            np.vectorize(lambda v: float_repr(float(v)), otypes=[object])(a).tolist()
            if (a.ndim > 0)
            else float_repr(float(a))
        )
    if a.dtype.kind == "b":
        return a.astype(bool).tolist()
    return a.tolist()


def describe_array(arr: Any) -> JSON:
    a = np.asarray(arr)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "values": to_jsonable(a)}


def buffer_to_json(buf: Any) -> JSON:
    """A max.driver.Buffer -> {dtype (MAX name), shape, values}; bfloat16 etc. via float32."""
    dtype_name = dname(buf.dtype)
    shape = [int(s) for s in buf.shape]
    try:
        values = to_jsonable(buf.to_numpy())
        via = None
    except Exception as exc:
        values = None
        via = f"to_numpy failed: {first_line(exc)}"
    entry: JSON = {"dtype": dtype_name, "shape": shape, "values": values}
    if via is not None:
        entry["note"] = via
    return entry


def dim_json(dim: Any) -> int | str:
    """A static Dim as an int, a symbolic one as its string."""
    try:
        return int(dim)
    except (TypeError, ValueError):
        return str(dim)


def run_simple(session: Any, source: str) -> JSON:
    env: dict[str, Any] = {"__name__": "max_program"}
    exec(source, env)
    graph = env["graph"]
    inputs = env["inputs"]
    outputs = session.load(graph).execute(*inputs)
    return {
        "inputs": [describe_array(a) for a in inputs],
        "constants": {k: describe_array(v) for k, v in sorted(env["constants"].items())},
        "outputs": [buffer_to_json(o) for o in outputs],
        "output_types": [
            {"dtype": dname(t.dtype), "shape": [dim_json(d) for d in t.shape]}
            for t in graph.output_types
        ],
    }


def run_scalars(session: Any, source: str, rec: Recorder) -> JSON:
    env: dict[str, Any] = {"__name__": "max_program"}
    exec(source, env)
    build: Callable[[str, list[str]], Any] = env["build"]
    expressions: list[str] = env["EXPRESSIONS"]
    results: dict[str, JSON] = {}
    for dtype_name, values in env["VALUES"].items():
        ok: list[str] = []
        per_expr: dict[str, JSON] = {}
        for e in expressions:
            try:
                build(dtype_name, [e])
                ok.append(e)
            except Exception as exc:
                per_expr[e] = {"error": rec.error(exc)}
        feed = np.asarray(values, dtype=env["NUMPY_DTYPE"][dtype_name])
        pairs: list[tuple[str, Any]] = []
        try:
            outs = session.load(build(dtype_name, ok)).execute(feed)
            pairs = list(zip(ok, outs, strict=True))
        except Exception:
            # some expression builds but does not compile: run them one by one
            for e in ok:
                try:
                    (out,) = session.load(build(dtype_name, [e])).execute(feed)
                    pairs.append((e, out))
                except Exception as exc:
                    per_expr[e] = {"compile_error": rec.error(exc)}
        for e, out in pairs:
            entry = buffer_to_json(out)
            if entry["values"] is None:
                # e.g. bfloat16: re-run that expression with a float32 cast appended.
                g2 = build(dtype_name, [f"({e}).cast(DType.float32)"])
                (o2,) = session.load(g2).execute(feed)
                entry["values"] = to_jsonable(o2.to_numpy())
                entry["note"] = "values read through an in-graph cast to float32 (exact)"
            per_expr[e] = entry
        results[dtype_name] = {
            "input": {"dtype": dtype_name, "shape": [len(values)], "values": values},
            "outputs": per_expr,
        }
        print(f"  scalars {dtype_name}: done", file=sys.stderr)
    return {"results": results}


def record_programs(version: str) -> JSON:
    rec = Recorder()
    out: JSON = {"version": version}
    try:
        session = InferenceSession(devices=[CPU()])
    except Exception as exc:
        out["execution"] = f"InferenceSession failed: {first_line(exc)}"
        return out
    out["execution"] = "ok: InferenceSession(devices=[CPU()]).load(graph).execute(*inputs)"
    programs: dict[str, JSON] = {}
    for name, (source, desc) in PROGRAMS.items():
        entry: JSON = {"source": source, "description": desc}
        try:
            if name == "scalars":
                entry.update(run_scalars(session, source, rec))
            else:
                entry.update(run_simple(session, source))
        except Exception as exc:
            entry["error"] = rec.error(exc)
        programs[name] = entry
        print(f"  program {name}: done", file=sys.stderr)
    out["programs"] = programs
    out["error_types"] = rec.error_types
    return out


# --------------------------------------------------------------------------------------------
# 4. the API oracle: types, dims, DType, ops' result types and the exceptions of bad calls
# --------------------------------------------------------------------------------------------

# An input spec: "<dtype short name>[<dims>]" with an optional "@gpu"; "buf:" makes a
# BufferType input. Sources see the inputs as a, b, c, d (``.tensor`` / ``.buffer``).
SHORT_TO_DTYPE: dict[str, str] = {v: k for k, v in SHORT.items()}

# (kind, subject, inputs, source). kind is one of "types", "dims", "dtype", "ops", "errors":
# "errors" cases are calls MAX is expected to refuse (the recorded result says what it did).
ApiCase = tuple[str, str, list[str], str]

TT = "TensorType(DType.float32, [3, 3], DeviceRef.CPU())"
TYPE_CASES: list[ApiCase] = [
    ("types", "TensorType", [], TT),
    ("types", "TensorType", [], f"{TT} == TensorType(DType.float32, [3, 3], DeviceRef.CPU())"),
    ("types", "TensorType", [], f"{TT} == TensorType(DType.float32, [3, 3], DeviceRef.GPU())"),
    ("types", "TensorType", [], f"{TT} == TensorType(DType.float16, [3, 3], DeviceRef.CPU())"),
    ("types", "TensorType", [], f"{TT} == TensorType(DType.float32, [3, 'n'], DeviceRef.CPU())"),
    ("types", "TensorType", [], f"hash({TT}) == hash(TensorType(DType.float32, (3, 3), cpu))"),
    ("types", "TensorType", [], f"{TT}.shape"),
    ("types", "TensorType", [], f"{TT}.rank"),
    ("types", "TensorType", [], f"{TT}.dtype"),
    ("types", "TensorType", [], f"{TT}.device"),
    ("types", "TensorType", [], f"{TT}.num_elements()"),
    ("types", "TensorType", [], "TensorType(DType.int8, ['n', 2], cpu).num_elements()"),
    ("types", "TensorType", [], f"{TT}.cast(DType.int8)"),
    ("types", "TensorType", [], f"{TT}.as_buffer()"),
    ("types", "TensorType", [], f"list({TT}.parameters)"),
    ("types", "TensorType", [], "list(TensorType(DType.int8, ['n', 'm', 2], cpu).parameters)"),
    ("types", "TensorType", [], "TensorType(DType.float32, [-1], cpu)"),
    ("types", "TensorType", [], "TensorType(DType.float32, [1.5], cpu)"),
    ("types", "TensorType", [], "TensorType(DType.float32, ['1n'], cpu)"),
    ("types", "TensorType", [], "TensorType(DType.float32, [], cpu)"),
    ("types", "TensorType", [], "TensorType(DType.float32, [Dim('n') + 1], cpu)"),
    ("types", "TensorType", [], "str(TensorType(DType.bfloat16, ['n', 2], gpu))"),
    ("types", "BufferType", [], "BufferType(DType.int32, [2, 'n'], cpu)"),
    ("types", "BufferType", [], "BufferType(DType.int32, [2], cpu).as_tensor()"),
    (
        "types",
        "BufferType",
        [],
        "BufferType(DType.int32, [2], cpu) == BufferType(DType.int32, [2], cpu)",
    ),
    (
        "types",
        "BufferType",
        [],
        "BufferType(DType.int32, [2], cpu) == TensorType(DType.int32, [2], cpu)",
    ),
    ("types", "BufferType", [], "BufferType(DType.int32, [2], cpu).rank"),
    ("types", "DeviceRef", [], "DeviceRef.GPU(1)"),
    ("types", "DeviceRef", [], "DeviceRef('gpu', 2)"),
    ("types", "DeviceRef", [], "DeviceRef.CPU() == DeviceRef.CPU(0)"),
    ("types", "DeviceRef", [], "DeviceRef.CPU() == DeviceRef.GPU()"),
    ("types", "DeviceRef", [], "DeviceRef.GPU(-3)"),
    ("types", "DeviceRef", [], "DeviceRef('tpu')"),
    ("types", "DeviceRef", [], "DeviceRef.GPU().is_gpu()"),
    ("types", "DeviceRef", [], "str(DeviceRef.CPU())"),
    ("types", "Shape", [], "Shape([1, 'x'])"),
    ("types", "Shape", [], "Shape([1, 'x']) == [1, 'x']"),
    ("types", "Shape", [], "Shape([1, 'x']) == [1, 'y']"),
    ("types", "Shape", [], "Shape([1, 2]) == (1, 2)"),
    ("types", "Shape", [], "Shape([1, 'x']).rank"),
    ("types", "Shape", [], "Shape([1, 'x', 3]).static_dims"),
    ("types", "Shape", [], "Shape.is_static(Shape([1, 2]))"),
    ("types", "Shape", [], "Shape.is_static(Shape([1, 'x']))"),
    ("types", "Shape", [], "list(Shape([Dim('x') * 2, 'y', 3]).parameters)"),
    ("types", "Shape", [], "Shape([1.5])"),
    ("types", "Shape", [], "isinstance(Shape([1]), list)"),
    ("types", "Shape", [], "Shape([1, 2])[1]"),
    ("types", "Shape", [], "Shape([1, 2, 3])[1:]"),
    ("types", "Shape", [], "len(Shape([1, 2, 3]))"),
    ("types", "Shape", [], "Shape()"),
    ("types", "TensorValue.type", ["f32[2,3]"], "a.type"),
    (
        "types",
        "TensorValue.type",
        ["f32[2,3]"],
        "a.type == TensorType(DType.float32, [2, 3], DeviceRef.CPU())",
    ),
    (
        "types",
        "TensorValue.type",
        ["f32[2,3]@gpu"],
        "a.type == TensorType(DType.float32, [2, 3], DeviceRef.CPU())",
    ),
    ("types", "TensorValue.shape", ["f32[2,3]"], "a.shape"),
    ("types", "TensorValue.shape", ["f32[2,3]"], "a.shape == [2, 3]"),
    ("types", "TensorValue.shape", ["f32[2,n]"], "a.shape == [2, 'n']"),
    ("types", "TensorValue.shape", ["f32[2,n]"], "a.shape[1]"),
    ("types", "TensorValue.shape", ["f32[2,n]"], "type(a.shape).__name__"),
    ("types", "TensorValue.shape", ["f32[2,n]"], "a.shape.static_dims"),
    ("types", "TensorValue.dtype", ["i8[2]"], "a.dtype"),
    ("types", "TensorValue.dtype", ["i8[2]"], "a.dtype == DType.int8"),
    ("types", "TensorValue.device", ["f32[2]@gpu"], "a.device"),
    ("types", "TensorValue.rank", ["f32[2,3,4]"], "a.rank"),
    ("types", "TensorValue", ["f32[2,3]"], "(a + 1).type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.T.type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.cast(DType.int8).type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.to(gpu).type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.reshape([3, 2]).type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.reshape([-1]).type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.flatten().type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.permute([1, 0]).type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.transpose(0, 1).type"),
    ("types", "TensorValue", ["f32[1,3]"], "a.broadcast_to([4, 3]).type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.max().type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.argmax(axis=0).type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.mean(0).type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.var().type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.stdev().type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.min().type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.rebind([2, 3]).type"),
    ("types", "TensorValue", ["f32[n,3]"], "a.rebind(['m', 3]).type"),
    ("types", "TensorValue", ["f32[2,3]"], "a[0].type"),
    ("types", "TensorValue", ["f32[2,3]"], "a[:, 1:].type"),
    ("types", "TensorValue", ["f32[2,3]"], "a[..., None].type"),
    ("types", "TensorValue", ["f32[2,3]"], "isinstance(a, TensorValue)"),
    ("types", "TensorValue", ["f32[2,3]"], "TensorValue(a).type"),
    ("types", "TensorValue", ["f32[2,3]"], "a.print()"),
    ("types", "Graph", ["f32[2,3]", "i32[n]"], "[v.type for v in g.inputs]"),
    ("types", "Graph", ["f32[2,3]"], "list(g.device_chains)"),
    ("types", "Graph", ["buf:f32[2,3]"], "g.inputs[0].type"),
    ("types", "Graph", ["buf:f32[2,3]"], "a.shape"),
    ("types", "Graph", ["buf:f32[2,3]"], "a.dtype"),
]

DIM_CASES: list[ApiCase] = [
    ("dims", "Dim", [], src)
    for src in [
        "Dim(3)",
        "Dim('x')",
        "Dim(np.int64(4))",
        "Dim(Dim(3))",
        "Dim(-1)",
        "Dim(1.5)",
        "Dim('1a')",
        "Dim(2**63)",
        "Dim(-2**63)",
        "Dim(True)",
        "StaticDim(3)",
        "SymbolicDim('n')",
        "SymbolicDim(3)",
        "StaticDim('n')",
        "isinstance(Dim(3), Dim)",
        "isinstance(Dim(3), StaticDim)",
        "isinstance(Dim('x'), SymbolicDim)",
        "isinstance(Dim('x') + 1, AlgebraicDim)",
        "type(Dim | int).__name__",
        "Dim(3) == 3",
        "Dim(3) == Dim(3)",
        "Dim(3) == 4",
        "Dim(3) == '3'",
        "Dim('x') == 'x'",
        "Dim('x') == Dim('x')",
        "Dim('x') == Dim('y')",
        "Dim('x') != 'y'",
        "Dim(3) != 3",
        "hash(Dim(3)) == hash(3)",
        "hash(Dim('x')) == hash(Dim('x'))",
        "len({Dim('x'), Dim('x'), Dim('y')})",
        "{Dim(3): 1}[3]",
        "Dim(3) < 4",
        "Dim(3) < Dim(4)",
        "Dim(3) > 2",
        "Dim(3) <= 3",
        "sorted([Dim(3), Dim(1), Dim(2)])",
        "int(Dim(3))",
        "int(Dim('x'))",
        "[1, 2, 3][Dim(1)]",
        "str(Dim(3))",
        "str(Dim('x'))",
        "repr(Dim('x'))",
        "Dim(3) + 4",
        "Dim(3) * 4",
        "Dim(7) // 2",
        "Dim(7) - 10",
        "4 - Dim(3)",
        "-Dim(3)",
        "Dim(3) + Dim(4)",
        "Dim(5) - Dim(2)",
        "Dim(3) // 0",
        "Dim(3) + 1.5",
        "Dim(3) + 'x'",
        "Dim('x') + 1",
        "Dim('x') + 1 + 1",
        "1 + Dim('x')",
        "Dim('x') * 2",
        "2 * Dim('x')",
        "Dim('x') * Dim('y')",
        "Dim('y') * Dim('x')",
        "Dim('x') + Dim('y')",
        "Dim('y') + Dim('x')",
        "Dim('x') - 1",
        "-Dim('x')",
        "Dim('x') - Dim('x')",
        "Dim('x') * 0",
        "Dim('x') * 1",
        "Dim('x') + 0",
        "Dim('x') // 2",
        "(Dim('x') + 2) // 2",
        "Dim('x') * 2 // 2",
        "Dim('x') // 1",
        "(Dim('x') * 4) // 2",
        "2 * Dim('x') + 3 * Dim('y')",
        "(Dim('x') + 1) * 2",
        "Dim('x') * (Dim('y') + 1)",
        "Dim(3) * Dim('x')",
        "Dim('x') * Dim('x')",
        "(Dim('x') + 1) * (Dim('y') + 1)",
        "Dim('x') // Dim('y')",
        "Dim('x') - 1 + 1",
        "(Dim('x') - 1) + 1 == Dim('x')",
        "Dim('x') + 1 == 1 + Dim('x')",
        "Dim('x') * 2 == 2 * Dim('x')",
        "Dim('x') + Dim('y') == Dim('y') + Dim('x')",
        "Dim('x') + 1 == Dim('x') + 2",
        "Dim('x') + 1 - Dim('x')",
        "(Dim('x') + 1) // 1",
        "Dim('x') * 3 // 3",
        "-(Dim('x') + 1)",
        "Dim('x') - Dim('y')",
        "3 - Dim('x')",
        "Dim('x') // 2 * 2",
        "Dim('x') + 'y'",
        "Dim('x') * 'y'",
        "Dim('x') + 1.5",
        "Dim('x') // 0",
        "str(Dim('x') + 1)",
        "str(Dim('x') * 2 + Dim('y'))",
        "int(Dim('x') + 1)",
        "hash(Dim('x') + 1) == hash(1 + Dim('x'))",
        "list((Dim('x') * Dim('y') + 1).parameters)",
        "list(Dim(3).parameters)",
        "list(Dim('x').parameters)",
        "(Dim('x') + 1).substitute({'x': 4})",
        "Dim('x').substitute({'x': 'y'})",
        "(Dim('x') * Dim('y')).substitute({'x': 2})",
        "Dim(3).substitute({'x': 2})",
        "Dim('x') < 3",
        "Dim('x') == 3",
    ]
] + [
    ("dims", "TensorValue.shape", ["f32[n,3]"], "a.shape[0] + 1"),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "a.shape[0] * a.shape[1]"),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "a[:-1].shape"),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "a[1:].shape"),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "a[::2].shape"),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "a[1:-1].shape"),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "a[:2].shape"),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "ops.reshape(a, [-1]).shape"),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "ops.concat([a, a], axis=0).shape"),
    ("dims", "TensorValue.shape", ["f32[n,m]"], "ops.concat([a, a], axis=1).shape"),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "ops.flatten(a).shape"),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "ops.tile(a, [2, 1]).shape"),
    (
        "dims",
        "TensorValue.shape",
        ["f32[n,3]"],
        "ops.range(0, a.shape[0], 1, dtype=DType.int64, device=cpu).shape",
    ),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "ops.repeat_interleave(a, 2, axis=0).shape"),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "ops.pad(a, [1, 2, 0, 0]).shape"),
    (
        "dims",
        "TensorValue.shape",
        ["f32[n,3]"],
        "ops.split(a, [1, a.shape[0] - 1], axis=0)[1].shape",
    ),
    ("dims", "TensorValue.shape", ["f32[n,3]"], "ops.shape_to_tensor(a.shape).shape"),
    ("dims", "TensorValue.shape", ["f32[1,n,n,8]"], "ops.max_pool2d(a, (2, 2), stride=2).shape"),
    (
        "dims",
        "TensorValue.shape",
        ["f32[1,n,n,8]"],
        "ops.conv2d(a, ops.constant(np.zeros((3, 3, 8, 4), np.float32), device=cpu)).shape",
    ),
]

DTYPE_METHODS: list[str] = [
    "is_float()",
    "is_integral()",
    "is_signed_integral()",
    "is_unsigned_integral()",
    "is_float8()",
    "is_half()",
    "size_in_bits",
    "size_in_bytes",
    "align",
    "to_numpy()",
    "name",
]


def dtype_cases(names: list[str]) -> list[ApiCase]:
    cases: list[ApiCase] = []
    for n in names:
        cases += [("dtype", n, [], f"DType.{n}.{m}") for m in DTYPE_METHODS]
        cases += [("dtype", n, [], f"repr(DType.{n})"), ("dtype", n, [], f"str(DType.{n})")]
    cases += [
        ("dtype", "DType", [], src)
        for src in [
            "DType.from_numpy(np.dtype('float32'))",
            "DType.from_numpy(np.float64)",
            "DType.from_numpy(np.dtype('complex64'))",
            "DType.from_numpy(np.dtype('int8'))",
            "DType('f32')",
            "DType('bf16')",
            "DType('si64')",
            "DType('float32')",
            "DType['int8']",
            "len(list(DType))",
            "[d.name for d in DType]",
            "DType.float32 == DType.float32",
            "DType.float32 == DType.float16",
            "DType.float32 is DType['float32']",
            "isinstance(DType.int8, DType)",
        ]
    ]
    return cases


X23 = ["f32[2,3]"]
OP_CASES: list[ApiCase] = (
    [
        # elementwise and the ops.elementwise submodule
        ("ops", "add", ["f32[2,3]", "f32[3]"], "ops.add(a, b)"),
        ("ops", "add", ["f32[2,1]", "f32[1,4]"], "ops.add(a, b)"),
        ("ops", "add", ["i32[n]", "i32[n]"], "ops.add(a, b)"),
        ("ops", "add", ["f32[n,1]", "f32[1,m]"], "ops.add(a, b)"),
        ("ops", "sub", ["i8[2]", "i8[2]"], "ops.sub(a, b)"),
        ("ops", "mul", ["bf16[2]", "bf16[2]"], "ops.mul(a, b)"),
        ("ops", "div", ["i32[2]", "i32[2]"], "ops.div(a, b)"),
        ("ops", "floor_div", ["f32[2]", "f32[2]"], "ops.floor_div(a, b)"),
        ("ops", "mod", ["i64[2]", "i64[2]"], "ops.mod(a, b)"),
        ("ops", "pow", ["f32[2]", "f32[2]"], "ops.pow(a, b)"),
        ("ops", "max", ["f32[2,3]", "f32[2,3]"], "ops.max(a, b)"),
        ("ops", "min", ["f32[2,3]", "f32[2,3]"], "ops.min(a, b)"),
        ("ops", "equal", ["f32[2]", "f32[2]"], "ops.equal(a, b)"),
        ("ops", "not_equal", ["i32[2]", "i32[2]"], "ops.not_equal(a, b)"),
        ("ops", "greater", ["f32[2]", "f32[2]"], "ops.greater(a, b)"),
        ("ops", "greater_equal", ["f32[2]", "f32[2]"], "ops.greater_equal(a, b)"),
        ("ops", "logical_and", ["b[2]", "b[2]"], "ops.logical_and(a, b)"),
        ("ops", "logical_or", ["b[2]", "b[2]"], "ops.logical_or(a, b)"),
        ("ops", "logical_xor", ["b[2]", "b[2]"], "ops.logical_xor(a, b)"),
        ("ops", "logical_not", ["b[2]"], "ops.logical_not(a)"),
        ("ops", "where", ["b[2,3]", "f32[2,3]", "f32[3]"], "ops.where(a, b, c)"),
        ("ops", "matmul", ["f32[2,3]", "f32[3,4]"], "ops.matmul(a, b)"),
        ("ops", "matmul", ["f32[5,2,3]", "f32[3,4]"], "ops.matmul(a, b)"),
        ("ops", "matmul", ["f32[n,2,3]", "f32[n,3,4]"], "ops.matmul(a, b)"),
        ("ops", "outer", ["f32[3]", "f32[4]"], "ops.outer(a, b)"),
        ("ops", "cast", X23, "ops.cast(a, DType.int8)"),
        ("ops", "cast", X23, "ops.cast(a, DType.float8_e4m3fnuz)"),
        ("ops", "cast", X23, "ops.cast(a, DType.float4_e2m1fn)"),
        ("ops", "elementwise", X23, "ops.elementwise.add(a, a)"),
        ("ops", "elementwise", X23, "ops.elementwise.exp(a)"),
        ("ops", "elementwise", X23, "ops.elementwise.max(a, a)"),
        ("ops", "reduction", X23, "ops.reduction.sum(a)"),
        ("ops", "reduction", X23, "ops.reduction.max(a, axis=0)"),
        ("ops", "reduction", X23, "ops.reduction.argmin(a, axis=0)"),
    ]
    + [
        ("ops", name, ["f32[2,3]"], f"ops.{name}(a)")
        for name in [
            "abs",
            "acos",
            "atanh",
            "ceil",
            "cos",
            "erf",
            "exp",
            "floor",
            "gelu",
            "is_inf",
            "is_nan",
            "log",
            "log1p",
            "negate",
            "relu",
            "round",
            "rsqrt",
            "sigmoid",
            "silu",
            "sin",
            "softmax",
            "logsoftmax",
            "sqrt",
            "tanh",
            "trunc",
            "sum",
            "mean",
            "prod",
            "max",
            "min",
            "argmax",
            "argmin",
            "cumsum",
        ]
    ]
    + [
        ("ops", "sum", ["f32[2,3]"], "ops.sum(a, axis=0)"),
        ("ops", "mean", ["f32[n,3]"], "ops.mean(a, axis=0)"),
        ("ops", "argmax", ["i32[2,3]"], "ops.argmax(a, axis=-2)"),
        ("ops", "cumsum", ["i32[2,3]"], "ops.cumsum(a, axis=0, exclusive=True, reverse=True)"),
        ("ops", "argsort", ["f32[5]"], "ops.argsort(a, ascending=False)"),
        ("ops", "top_k", ["f32[2,5]"], "ops.top_k(a, 2)"),
        ("ops", "top_k", ["f32[5,2]"], "ops.top_k(a, 3, axis=0)"),
        ("ops", "bottom_k", ["f32[2,5]"], "ops.bottom_k(a, 2)"),
        ("ops", "bottom_k", ["i32[5,2]"], "ops.bottom_k(a, 3, axis=0)"),
        # shapes
        ("ops", "reshape", X23, "ops.reshape(a, [3, 2])"),
        ("ops", "reshape", X23, "ops.reshape(a, [-1, 1])"),
        ("ops", "reshape", ["f32[n,3]"], "ops.reshape(a, ['n', 3, 1])"),
        ("ops", "flatten", ["f32[2,3,4]"], "ops.flatten(a, 1)"),
        ("ops", "transpose", ["f32[2,3,4]"], "ops.transpose(a, 0, 2)"),
        ("ops", "permute", ["f32[2,3,4]"], "ops.permute(a, [2, 0, 1])"),
        ("ops", "broadcast_to", ["f32[3]"], "ops.broadcast_to(a, [2, 3])"),
        ("ops", "broadcast_to", ["f32[3]"], "ops.broadcast_to(a, ['n', 3])"),
        ("ops", "squeeze", ["f32[2,1]"], "ops.squeeze(a, 1)"),
        ("ops", "unsqueeze", ["f32[2]"], "ops.unsqueeze(a, -1)"),
        ("ops", "concat", ["f32[2,3]", "f32[4,3]"], "ops.concat([a, b])"),
        ("ops", "concat", ["f32[2,3]", "f32[2,n]"], "ops.concat([a, b], axis=1)"),
        ("ops", "stack", ["f32[2,3]", "f32[2,3]"], "ops.stack([a, b], axis=1)"),
        ("ops", "split", ["f32[5,3]"], "ops.split(a, [2, 3])"),
        ("ops", "chunk", ["f32[6,3]"], "ops.chunk(a, 3)"),
        ("ops", "chunk", ["f32[7,3]"], "ops.chunk(a, 3)"),
        ("ops", "tile", X23, "ops.tile(a, [2, 2])"),
        ("ops", "repeat_interleave", X23, "ops.repeat_interleave(a, 2, axis=1)"),
        ("ops", "repeat_interleave", X23, "ops.repeat_interleave(a, 2)"),
        ("ops", "pad", X23, "ops.pad(a, [1, 1, 0, 2])"),
        ("ops", "band_part", ["f32[3,3]"], "ops.band_part(a, 0, None)"),
        ("ops", "shape_to_tensor", [], "ops.shape_to_tensor([2, 3])"),
        ("ops", "slice_tensor", ["f32[4,3]"], "ops.slice_tensor(a, [slice(1, 3), 0])"),
        ("ops", "slice_tensor", ["f32[4,3]"], "a[1:3, None, -1]"),
        ("ops", "slice_tensor", ["f32[4,3]"], "a[::-1]"),
        ("ops", "slice_tensor", ["f32[4,3]"], "a[..., 1]"),
        ("ops", "slice_tensor", ["f32[4,3]", "i64[]"], "a[b]"),
        ("ops", "slice_tensor", ["f32[4,3]", "i64[]"], "a[b:]"),
        ("ops", "slice_tensor", ["f32[4,3]", "i64[]"], "a[:b]"),
        (
            "ops",
            "slice_tensor",
            ["f32[4,3]", "i64[]"],
            "ops.slice_tensor(a, [(slice(b, None), 'k')])",
        ),
        ("ops", "slice_tensor", ["f32[n,3]"], "a[:-1]"),
        ("ops", "slice_tensor", ["f32[n,3]"], "a[(slice(1, None), 'm')]"),
        # indexing
        ("ops", "gather", ["f32[4,3]", "i64[2,2]"], "ops.gather(a, b, axis=0)"),
        ("ops", "gather", ["f32[4,3]", "i32[5]"], "ops.gather(a, b, axis=1)"),
        ("ops", "gather_nd", ["f32[4,3]", "i64[2,2]"], "ops.gather_nd(a, b)"),
        ("ops", "scatter", ["f32[4,3]", "f32[4,1]", "i64[4,1]"], "ops.scatter(a, b, c, axis=1)"),
        (
            "ops",
            "scatter_add",
            ["f32[4,3]", "f32[4,1]", "i64[4,1]"],
            "ops.scatter_add(a, b, c, axis=1)",
        ),
        (
            "ops",
            "scatter_max",
            ["f32[4,3]", "f32[4,1]", "i64[4,1]"],
            "ops.scatter_max(a, b, c, axis=1)",
        ),
        (
            "ops",
            "scatter_min",
            ["i32[4,3]", "i32[2,3]", "i64[2,3]"],
            "ops.scatter_min(a, b, c, axis=0)",
        ),
        ("ops", "scatter_mul", ["f32[4,3]", "f32[4,1]", "i64[4,1]"], "ops.scatter_mul(a, b, c)"),
        ("ops", "scatter_nd", ["f32[4,3]", "f32[2,3]", "i64[2,1]"], "ops.scatter_nd(a, b, c)"),
        (
            "ops",
            "scatter_nd_add",
            ["f32[4,3]", "f32[2]", "i64[2,2]"],
            "ops.scatter_nd_add(a, b, c)",
        ),
        (
            "ops",
            "scatter_nd_max",
            ["f32[4,3]", "f32[2,3]", "i64[2,1]"],
            "ops.scatter_nd_max(a, b, c)",
        ),
        (
            "ops",
            "scatter_nd_min",
            ["f32[4,3]", "f32[2]", "i64[2,2]"],
            "ops.scatter_nd_min(a, b, c)",
        ),
        (
            "ops",
            "scatter_nd_mul",
            ["i64[4,3]", "i64[2,3]", "i64[2,1]"],
            "ops.scatter_nd_mul(a, b, c)",
        ),
        ("ops", "masked_scatter", ["f32[4]", "b[4]", "f32[4]"], "ops.masked_scatter(a, b, c, 'k')"),
        ("ops", "nonzero", ["f32[5]"], "ops.nonzero(a, 'nz')"),
        ("ops", "nonzero", ["i32[2,3]"], "ops.nonzero(a, 'nz')"),
        ("ops", "nonzero", ["b[2,3,4]"], "ops.nonzero(a, 'count')"),
        ("ops", "range", [], "ops.range(0, 5, 2, dtype=DType.int32, device=cpu)"),
        ("ops", "range", [], "ops.range(0, 6, 2, dtype=DType.int32, device=cpu)"),
        ("ops", "range", [], "ops.range(5, 0, -2, dtype=DType.int64, device=cpu)"),
        ("ops", "range", [], "ops.range(0.5, 2, 0.5, dtype=DType.float32, device=cpu)"),
        ("ops", "range", [], "ops.range(0, 1, 0.3, dtype=DType.float64, device=cpu)"),
        ("ops", "range", [], "ops.range(0, 2**62, 2**61 + 1, dtype=DType.int64, device=cpu)"),
        ("ops", "range", [], "ops.range(-2**63, 2**63 - 1, 2**62, dtype=DType.int64, device=cpu)"),
        ("ops", "range", [], "ops.range(0, 10, 3, dtype=DType.int8, device=gpu)"),
        (
            "ops",
            "range",
            ["i64[]", "i64[]"],
            "ops.range(a, b, 1, out_dim='k', dtype=DType.int64, device=cpu)",
        ),
        ("ops", "range", ["i32[]"], "ops.range(0, a, 1, out_dim=4, dtype=DType.int32, device=cpu)"),
        # nn
        ("ops", "layer_norm", ["f32[2,4]", "f32[4]", "f32[4]"], "ops.layer_norm(a, b, c, 1e-5)"),
        ("ops", "rms_norm", ["f32[2,4]", "f32[4]"], "ops.rms_norm(a, b, 1e-6)"),
        (
            "ops",
            "group_norm",
            ["f32[2,4,3]", "f32[4]", "f32[4]"],
            "ops.group_norm(a, b, c, 2, 1e-5)",
        ),
        ("ops", "conv2d", ["f32[1,5,5,2]", "f32[3,3,2,4]"], "ops.conv2d(a, b)"),
        (
            "ops",
            "conv2d",
            ["f32[1,5,5,2]", "f32[3,3,2,4]"],
            "ops.conv2d(a, b, stride=(2, 2), padding=(1, 1, 1, 1))",
        ),
        ("ops", "conv2d", ["f32[1,5,5,c]", "f32[3,3,c,4]"], "ops.conv2d(a, b)"),
        (
            "ops",
            "conv2d",
            ["f32[1,6,6,3]", "f32[3,3,3,16]"],
            "ops.conv2d(a, b, padding=(1, 1, 1, 1))",
        ),
        ("ops", "conv2d_transpose", ["f32[1,5,5,2]", "f32[3,3,4,2]"], "ops.conv2d_transpose(a, b)"),
        ("ops", "conv3d", ["f32[1,4,4,4,2]", "f32[2,2,2,2,3]"], "ops.conv3d(a, b)"),
        ("ops", "max_pool2d", ["f32[1,4,4,2]"], "ops.max_pool2d(a, (2, 2), stride=2)"),
        (
            "ops",
            "avg_pool2d",
            ["f32[1,5,5,2]"],
            "ops.avg_pool2d(a, (3, 3), stride=2, ceil_mode=True)",
        ),
        ("ops", "resize", ["f32[1,2,4,4]"], "ops.resize(a, [1, 2, 8, 8])"),
        ("ops", "resize_linear", ["f32[1,2,4,4]"], "ops.resize_linear(a, [1, 2, 2, 2])"),
        ("ops", "resize_nearest", ["f32[1,2,4,4]"], "ops.resize_nearest(a, [1, 2, 8, 8])"),
        ("ops", "resize_bicubic", ["f32[1,2,4,4]"], "ops.resize_bicubic(a, [1, 2, 6, 6])"),
        ("ops", "fold", ["f32[1,8,9]"], "ops.fold(a, (4, 4), (2, 2))"),
        ("ops", "fold", ["f32[2,12,4]"], "ops.fold(a, (5, 5), (2, 2), stride=2, padding=0)"),
        ("ops", "roi_align", ["f32[1,8,8,2]", "f32[3,5]"], "ops.roi_align(a, b, 2, 2)"),
        (
            "ops",
            "roi_align",
            ["f32[1,8,8,2]", "f32[3,5]"],
            "ops.roi_align(a, b, 3, 2, 0.5, 2, True, 'MAX')",
        ),
        ("ops", "hann_window", [], "ops.hann_window(5, cpu)"),
        ("ops", "hann_window", [], "ops.hann_window(6, gpu, periodic=False, dtype=DType.float64)"),
        ("ops", "hann_window", [], "ops.hann_window(0, cpu)"),
        ("ops", "irfft", ["f32[2,5]@gpu"], "ops.irfft(a, 8)"),
        ("ops", "irfft", ["f32[2,5]@gpu"], "ops.irfft(a)"),
        ("ops", "irfft", ["f32[2,5,2]@gpu"], "ops.irfft(a, 8, input_is_complex=True)"),
        ("ops", "irfft", ["f32[2,5]"], "ops.irfft(a, 8)"),
        ("ops", "complex", ["f32[2,6]"], "ops.as_interleaved_complex(a)"),
        ("ops", "complex", ["f32[2,6]"], "ops.complex.as_interleaved_complex(a)"),
        ("ops", "complex", ["f32[2,3,2]", "f32[2,3,2]"], "ops.complex.mul(a, b)"),
        (
            "ops",
            "random",
            [],
            "(ops.random.set_seed(0), ops.random.uniform(TensorType(DType.float32, [2, 3], cpu)))"
            "[1]",
        ),
        (
            "ops",
            "random",
            [],
            "(ops.random.set_seed(0), ops.random.normal(TensorType(DType.float32, [4], cpu), 1.0, "
            "2.0))[1]",
        ),
        (
            "ops",
            "random",
            [],
            "(ops.random.set_seed(3), ops.random.gaussian(TensorType(DType.float16, [2], cpu)))[1]",
        ),
        ("ops", "random", [], "ops.random.uniform(TensorType(DType.float32, [2, 3], cpu))"),
        # control flow, calls, devices, constants, debug
        (
            "ops",
            "cond",
            ["b[]", "f32[2]"],
            "ops.cond(a, [TensorType(DType.float32, [2], cpu)], lambda: b + 1, lambda: b)",
        ),
        ("ops", "cond", ["b[]"], "ops.cond(a, None, lambda: None, lambda: None)"),
        ("ops", "while_loop", ["i32[]"], "ops.while_loop(a, lambda v: v < 10, lambda v: v + 1)"),
        (
            "ops",
            "while_loop",
            ["i32[]", "f32[2]"],
            "ops.while_loop([a, b], lambda v, w: v < 10, lambda v, w: [v + 1, w * 2])",
        ),
        (
            "ops",
            "while_loop",
            [],
            "ops.while_loop([], lambda: ops.constant(False, DType.bool, cpu), lambda: [])",
        ),
        (
            "ops",
            "call",
            ["f32[2]"],
            "ops.call(g.add_subgraph('s', lambda v: v * 2, input_types=[TensorType(DType.float32, "
            "[2], cpu)]), a)",
        ),
        ("ops", "transfer_to", ["f32[2]"], "ops.transfer_to(a, gpu)"),
        ("ops", "assert_same_device", ["f32[2]", "f32[2]"], "ops.assert_same_device(a, b)"),
        ("ops", "constant", [], "ops.constant(np.ones((2, 3), np.float32), device=cpu)"),
        ("ops", "constant", [], "ops.constant(3, DType.int8, gpu)"),
        ("ops", "constant", [], "ops.constant([[1, 2]], DType.float16, cpu)"),
        (
            "ops",
            "constant_external",
            [],
            "ops.constant_external('w', TensorType(DType.float32, [2], cpu))",
        ),
        ("ops", "print", ["f32[2]"], "ops.print(a)"),
        ("ops", "print", [], "ops.print('hello')"),
        ("ops", "rebind", ["f32[n,3]"], "ops.rebind(a, [4, 3])"),
        ("ops", "rebind", ["f32[n,3]"], "ops.rebind(a, ['m', 3], message='bad')"),
        ("ops", "buffer", ["buf:f32[2,3]"], "ops.buffer_load(a)"),
        ("ops", "buffer", ["buf:f32[2,3]", "f32[2,3]"], "ops.buffer_store(a, b)"),
        ("ops", "buffer", ["buf:f32[2,3]", "f32[3]"], "ops.buffer_store_slice(a, b, [0])"),
        (
            "ops",
            "buffer",
            ["buf:f32[2,3]", "f32[2,1]"],
            "ops.buffer_store_slice(a, b, [slice(None), slice(1, 2)])",
        ),
        ("ops", "buffer", [], "ops.buffer_create(BufferType(DType.float32, [2], cpu))"),
        ("ops", "buffer", ["buf:f32[2,3]"], "a[0]"),
        ("ops", "buffer", ["buf:i32[4]"], "(a[...] + 1).type"),
    ]
)

ERROR_CASES: list[ApiCase] = [
    # bad axes
    ("errors", "sum", X23, "ops.sum(a, axis=5)"),
    ("errors", "sum", X23, "ops.sum(a, axis=-3)"),
    ("errors", "argmax", X23, "ops.argmax(a, axis=2)"),
    ("errors", "softmax", X23, "ops.softmax(a, axis=2)"),
    ("errors", "cumsum", X23, "ops.cumsum(a, axis=2)"),
    ("errors", "transpose", X23, "ops.transpose(a, 0, 2)"),
    ("errors", "permute", X23, "ops.permute(a, [0, 2])"),
    ("errors", "permute", X23, "ops.permute(a, [0, 0])"),
    ("errors", "squeeze", X23, "ops.squeeze(a, 3)"),
    ("errors", "squeeze", X23, "ops.squeeze(a, 0)"),
    ("errors", "unsqueeze", X23, "ops.unsqueeze(a, 4)"),
    ("errors", "concat", ["f32[2,3]", "f32[2,3]"], "ops.concat([a, b], axis=2)"),
    ("errors", "stack", ["f32[2,3]", "f32[2,3]"], "ops.stack([a, b], axis=4)"),
    ("errors", "split", X23, "ops.split(a, [1, 1], axis=3)"),
    ("errors", "chunk", X23, "ops.chunk(a, 2, axis=3)"),
    ("errors", "gather", ["f32[4,3]", "i64[2]"], "ops.gather(a, b, axis=2)"),
    ("errors", "top_k", X23, "ops.top_k(a, 2, axis=2)"),
    ("errors", "top_k", X23, "ops.top_k(a, 5)"),
    ("errors", "bottom_k", X23, "ops.bottom_k(a, 2, axis=-3)"),
    ("errors", "flatten", X23, "ops.flatten(a, 3)"),
    ("errors", "argsort", X23, "ops.argsort(a)"),
    ("errors", "scatter", ["f32[4,3]", "f32[4,1]", "i64[4,1]"], "ops.scatter(a, b, c, axis=2)"),
    (
        "errors",
        "scatter_max",
        ["f32[4,3]", "f32[4,1]", "i64[4,1]"],
        "ops.scatter_max(a, b, c, axis=2)",
    ),
    ("errors", "getitem", X23, "a[5]"),
    ("errors", "getitem", X23, "a[0, 0, 0]"),
    ("errors", "getitem", X23, "a[-3]"),
    ("errors", "TensorValue.max", X23, "a.max(axis=3)"),
    ("errors", "TensorValue.transpose", X23, "a.transpose(0, 5)"),
    ("errors", "repeat_interleave", X23, "ops.repeat_interleave(a, 2, axis=3)"),
    ("errors", "nonzero", ["f32[]"], "ops.nonzero(a, 'nz')"),
    ("errors", "band_part", ["f32[3]"], "ops.band_part(a, 0, 0)"),
    # mismatched devices
    ("errors", "add", ["f32[2]", "f32[2]@gpu"], "a + b"),
    ("errors", "add", ["f32[2]", "f32[2]@gpu"], "ops.add(a, b)"),
    ("errors", "matmul", ["f32[2,2]", "f32[2,2]@gpu"], "a @ b"),
    ("errors", "concat", ["f32[2]", "f32[2]@gpu"], "ops.concat([a, b])"),
    ("errors", "stack", ["f32[2]", "f32[2]@gpu"], "ops.stack([a, b])"),
    ("errors", "where", ["b[2]", "f32[2]", "f32[2]@gpu"], "ops.where(a, b, c)"),
    ("errors", "gather", ["f32[4]", "i64[2]@gpu"], "ops.gather(a, b, 0)"),
    ("errors", "assert_same_device", ["f32[2]", "f32[2]@gpu"], "ops.assert_same_device(a, b)"),
    ("errors", "scatter", ["f32[4,3]", "f32[4,1]@gpu", "i64[4,1]"], "ops.scatter(a, b, c, axis=1)"),
    ("errors", "layer_norm", ["f32[2,4]", "f32[4]@gpu", "f32[4]"], "ops.layer_norm(a, b, c, 1e-5)"),
    # dtypes
    ("errors", "stack", ["i32[2]", "f32[2]"], "ops.stack([a, b])"),
    ("errors", "concat", ["i32[2]", "f32[2]"], "ops.concat([a, b])"),
    ("errors", "gather", ["f32[4]", "f32[2]"], "ops.gather(a, b, 0)"),
    ("errors", "where", ["i32[2]", "f32[2]", "f32[2]"], "ops.where(a, b, c)"),
    ("errors", "logical_and", ["i32[2]", "i32[2]"], "ops.logical_and(a, b)"),
    ("errors", "logical_not", ["i32[2]"], "ops.logical_not(a)"),
    ("errors", "cond", ["i32[]"], "ops.cond(a, None, lambda: None, lambda: None)"),
    ("errors", "scatter", ["f32[4,3]", "i32[4,1]", "i64[4,1]"], "ops.scatter(a, b, c, axis=1)"),
    ("errors", "scatter_nd", ["f32[4,3]", "f32[2,3]", "f32[2,1]"], "ops.scatter_nd(a, b, c)"),
    ("errors", "top_k", ["b[4]"], "ops.top_k(a, 2)"),
    ("errors", "nonzero", ["f32[4]"], "ops.nonzero(a, 1.5)"),
    ("errors", "matmul", ["i32[2,2]", "f32[2,2]"], "ops.matmul(a, b)"),
    ("errors", "layer_norm", ["f32[2,4]", "f16[4]", "f32[4]"], "ops.layer_norm(a, b, c, 1e-5)"),
    ("errors", "hann_window", [], "ops.hann_window(4, cpu, dtype=DType.int32)"),
    ("errors", "range", [], "ops.range(0, 5, 1, dtype=DType.bool, device=cpu)"),
    ("errors", "while_loop", ["i32[]"], "ops.while_loop(a, lambda v: v, lambda v: v + 1)"),
    (
        "errors",
        "while_loop",
        ["i32[]"],
        "ops.while_loop(a, lambda v: v < 3, lambda v: v.cast(DType.int64))",
    ),
    (
        "errors",
        "cond",
        ["b[]", "f32[2]"],
        "ops.cond(a, [TensorType(DType.float16, [2], cpu)], lambda: b, lambda: b)",
    ),
    # ranks and shapes
    ("errors", "matmul", ["f32[2,3]", "f32[4,5]"], "ops.matmul(a, b)"),
    ("errors", "matmul", ["f32[3]", "f32[3]"], "ops.matmul(a, b)"),
    ("errors", "add", ["f32[2,3]", "f32[4]"], "ops.add(a, b)"),
    ("errors", "add", ["f32[n]", "f32[m]"], "ops.add(a, b)"),
    ("errors", "reshape", X23, "ops.reshape(a, [4, 2])"),
    ("errors", "reshape", X23, "ops.reshape(a, [-1, -1])"),
    ("errors", "broadcast_to", X23, "ops.broadcast_to(a, [3])"),
    ("errors", "broadcast_to", X23, "ops.broadcast_to(a, [2, 4])"),
    ("errors", "concat", ["f32[2,3]", "f32[2,4]"], "ops.concat([a, b])"),
    ("errors", "concat", ["f32[2,3]", "f32[2]"], "ops.concat([a, b])"),
    ("errors", "stack", ["f32[2,3]", "f32[3,2]"], "ops.stack([a, b])"),
    ("errors", "split", X23, "ops.split(a, [1, 2])"),
    ("errors", "chunk", X23, "ops.chunk(a, 0)"),
    ("errors", "conv2d", ["f32[5,5,2]", "f32[3,3,2,4]"], "ops.conv2d(a, b)"),
    ("errors", "conv2d", ["f32[1,5,5,2]", "f32[3,3,3,4]"], "ops.conv2d(a, b)"),
    ("errors", "layer_norm", ["f32[2,4]", "f32[3]", "f32[3]"], "ops.layer_norm(a, b, c, 1e-5)"),
    ("errors", "gather_nd", ["f32[4,3]", "i64[2,3]"], "ops.gather_nd(a, b)"),
    ("errors", "outer", ["f32[2,3]", "f32[3]"], "ops.outer(a, b)"),
    ("errors", "pad", X23, "ops.pad(a, [1, 1])"),
    ("errors", "pad", X23, "ops.pad(a, [-1, 0, 0, 0])"),
    ("errors", "tile", X23, "ops.tile(a, [2])"),
    ("errors", "band_part", ["f32[3,3]"], "ops.band_part(a, -2, 0)"),
    ("errors", "fold", ["f32[1,8,9]"], "ops.fold(a, (4, 4), (3, 3))"),
    ("errors", "fold", ["f32[8,9]"], "ops.fold(a, (4, 4), (2, 2))"),
    ("errors", "roi_align", ["f32[1,8,8,2]", "f32[3,4]"], "ops.roi_align(a, b, 2, 2)"),
    ("errors", "roi_align", ["f32[1,8,8,2]", "f32[3,5]"], "ops.roi_align(a, b, 2, 2, mode='SUM')"),
    ("errors", "rebind", ["f32[n,3]"], "ops.rebind(a, [4])"),
    ("errors", "as_interleaved_complex", ["f32[2,5]"], "ops.as_interleaved_complex(a)"),
    ("errors", "irfft", ["f32[2,5,3]@gpu"], "ops.irfft(a, 8, input_is_complex=True)"),
    ("errors", "hann_window", [], "ops.hann_window(-1, cpu)"),
    ("errors", "resize", ["f32[1,2,4,4]"], "ops.resize(a, [1, 2, 8])"),
    ("errors", "max_pool2d", ["f32[4,4,2]"], "ops.max_pool2d(a, (2, 2))"),
    ("errors", "buffer_store", ["buf:f32[2,3]", "f32[3,2]"], "ops.buffer_store(a, b)"),
    ("errors", "buffer_store", ["buf:f32[2,3]", "i32[2,3]"], "ops.buffer_store(a, b)"),
    ("errors", "rebind", ["f32[n,3]"], "ops.rebind(a, [4, 4])"),
    # empty inputs and bad arguments
    ("errors", "concat", [], "ops.concat([])"),
    ("errors", "stack", [], "ops.stack([])"),
    ("errors", "split", X23, "ops.split(a, [])"),
    ("errors", "top_k", X23, "ops.top_k(a, -1)"),
    ("errors", "top_k", X23, "ops.top_k(a, 0)"),
    ("errors", "range", [], "ops.range(0, 5, 0, dtype=DType.int32, device=cpu)"),
    ("errors", "range", ["i32[]"], "ops.range(0, a, 1, dtype=DType.int32, device=cpu)"),
    ("errors", "range", [], "ops.range(0, 5, dtype=DType.int32, device=cpu, out_dim=4)"),
    ("errors", "constant", [], "ops.constant(1, DType.int32)"),
    ("errors", "constant", [], "ops.constant([[1], [2, 3]], DType.int32, cpu)"),
    ("errors", "constant", [], "ops.constant(300, DType.int8, cpu)"),
    ("errors", "repeat_interleave", X23, "ops.repeat_interleave(a, -1)"),
    (
        "errors",
        "while_loop",
        [],
        "ops.while_loop([], lambda: ops.constant(False, DType.bool, cpu), lambda: [])",
    ),
    ("errors", "cond", ["b[2]"], "ops.cond(a, None, lambda: None, lambda: None)"),
    ("errors", "random", [], "ops.random.uniform(TensorType(DType.int32, [2], cpu))"),
    (
        "errors",
        "call",
        ["f32[2]", "f32[3]"],
        "ops.call(g.add_subgraph('s2', lambda v: v * 2, input_types=[TensorType(DType.float32, "
        "[2], cpu)]), b)",
    ),
    (
        "errors",
        "Graph",
        [],
        "Graph('bad', input_types=[TensorType(DType.float32, [Dim('x') + 1], cpu)])",
    ),
    ("errors", "TensorValue", ["f32[2,3]"], "len(a)"),
    ("errors", "TensorValue", ["f32[2,3]"], "bool(a)"),
    ("errors", "TensorValue", ["f32[2,3]"], "list(a)"),
    ("errors", "TensorValue", ["f32[2,3]"], "a.reshape([7])"),
    ("errors", "TensorValue", ["b[2]"], "a.var()"),
]


def parse_input(spec: str) -> Any:
    """An input spec ("f32[2,n]@gpu", "buf:i32[4]") as MAX's TensorType or BufferType."""
    buffer = spec.startswith("buf:")
    body = spec.removeprefix("buf:")
    device = DeviceRef.GPU() if body.endswith("@gpu") else DeviceRef.CPU()
    body = body.removesuffix("@gpu")
    short, dims = body[:-1].split("[")
    shape = [int(d) if d.lstrip("-").isdigit() else d for d in dims.split(",") if d]
    dtype = getattr(DType, SHORT_TO_DTYPE[short])
    return (BufferType if buffer else TensorType)(dtype, shape, device)


def nearest_builtin(exc: BaseException) -> str:
    """The first builtin exception class in the MRO of ``exc``'s type."""
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return "BaseException"


def describe_value(v: Any) -> JSON:
    """A result as JSON: tensors by dtype, shape (dim reprs) and device; others by type/repr."""
    if isinstance(v, TensorValue | BufferValue):
        return {
            "value": "buffer" if isinstance(v, BufferValue) else "tensor",
            "dtype": dname(v.dtype),
            "shape": [repr(d) for d in v.shape],
            "device": str(v.device),
        }
    if isinstance(v, TensorType | BufferType):
        return {
            "value": type(v).__name__,
            "dtype": dname(v.dtype),
            "shape": [repr(d) for d in v.shape],
            "device": str(v.device),
        }
    if isinstance(v, Shape):
        return {"value": "Shape", "dims": [repr(d) for d in v]}
    if isinstance(v, Dim):
        return {"value": type(v).__name__, "repr": clean(repr(v))}
    if isinstance(v, list | tuple):
        return {"value": type(v).__name__, "items": [describe_value(u) for u in v]}
    if isinstance(v, DType):
        return {"value": "DType", "name": dname(v)}
    if isinstance(v, DeviceRef):
        return {"value": "DeviceRef", "repr": str(v)}
    if isinstance(v, np.dtype):
        return {"value": "numpy.dtype", "repr": str(v)}
    if v is None or isinstance(v, bool | int | str):
        return {"value": type(v).__name__, "repr": repr(v)}
    return {"value": type(v).__name__, "repr": clean(repr(v))}


def run_api_case(inputs: list[str], source: str) -> JSON:
    """Build a graph with ``inputs`` and evaluate ``source`` in it: the result or the error."""
    try:
        types = [parse_input(s) for s in inputs]
        with Graph("api", input_types=types) as g:
            env: dict[str, Any] = {
                "ops": ops, "np": np, "DType": DType, "DeviceRef": DeviceRef,
                "TensorType": TensorType, "BufferType": BufferType, "Shape": Shape,
                "Dim": Dim, "StaticDim": StaticDim, "SymbolicDim": SymbolicDim,
                "AlgebraicDim": AlgebraicDim, "TensorValue": TensorValue,
                "BufferValue": BufferValue, "Graph": Graph, "g": g,
                "cpu": DeviceRef.CPU(), "gpu": DeviceRef.GPU(),
            }  # fmt: skip
            for name, value in zip("abcd", g.inputs, strict=False):
                env[name] = value.buffer if isinstance(value, BufferValue) else value.tensor
            return {"result": describe_value(eval(source, env))}
    except Exception as exc:
        return {
            "error": type(exc).__name__,
            "builtin": nearest_builtin(exc),
            "message": first_line(exc),
        }


def record_api(version: str) -> JSON:
    names = [dname(d) for d in ALL_DTYPES]
    cases = TYPE_CASES + DIM_CASES + dtype_cases(names) + OP_CASES + ERROR_CASES
    out: list[JSON] = []
    for kind, subject, inputs, source in cases:
        out.append(
            {"kind": kind, "subject": subject, "inputs": inputs, "source": source}
            | run_api_case(inputs, source)
        )
    public = {
        "max.graph": sorted(n for n in dir(sys.modules["max.graph"]) if not n.startswith("_")),
        "max.graph.ops": sorted(n for n in dir(ops) if not n.startswith("_")),
        "max.graph.ops.random": sorted(n for n in dir(ops.random) if not n.startswith("_")),
        "max.graph.ops.complex": sorted(n for n in dir(ops.complex) if not n.startswith("_")),
        "max.graph.ops.elementwise": sorted(
            n for n in dir(ops.elementwise) if not n.startswith("_")
        ),
        "max.graph.ops.reduction": sorted(n for n in dir(ops.reduction) if not n.startswith("_")),
        "DType": [dname(d) for d in ALL_DTYPES],
    }
    return {
        "version": version,
        "conventions": {
            "cases": "each case builds Graph('api', input_types=inputs) and evaluates source "
            "with the inputs as a, b, c, d (.tensor, or .buffer for 'buf:' inputs); result: "
            "tensors as dtype, shape (repr of each Dim) and device, other values by type and "
            "repr; error: the exception's class, its nearest builtin base class and the first "
            "line of its message",
            "inputs": "'<dtype short name>[<dims>]' with '@gpu' for DeviceRef.GPU() and 'buf:' "
            "for a BufferType; short names as in max_graph_promotion.json",
            "kinds": "types, dims, dtype, ops (calls expected to build) and errors (calls "
            "expected to be refused); the record says what MAX did",
        },
        "public_names": public,
        "cases": out,
    }


# --------------------------------------------------------------------------------------------


def write(path: Path, payload: JSON) -> None:
    text = json.dumps(payload, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(REPO)} ({path.stat().st_size} bytes)", file=sys.stderr)


def main() -> int:
    version = importlib.metadata.version("max")
    if version != EXPECTED_VERSION:
        print(
            f"warning: recording max {version}, docstring says {EXPECTED_VERSION}", file=sys.stderr
        )
    dtypes: list[Any] = []
    skipped: dict[str, str] = {}
    for d in ALL_DTYPES:
        why = can_be_input(d)
        if why is None:
            dtypes.append(d)
        else:
            skipped[dname(d)] = why
    DATA.mkdir(parents=True, exist_ok=True)
    if "--api-only" in sys.argv[1:]:
        print("recording the API oracle ...", file=sys.stderr)
        write(DATA / "max_graph_api.json", record_api(version))
        return 0
    print("recording the API oracle ...", file=sys.stderr)
    write(DATA / "max_graph_api.json", record_api(version))
    print("recording ops ...", file=sys.stderr)
    write(DATA / "max_graph_ops.json", record_ops(version))
    print("recording promotion ...", file=sys.stderr)
    write(DATA / "max_graph_promotion.json", record_promotion(version, dtypes, skipped))
    print("recording programs ...", file=sys.stderr)
    write(DATA / "max_graph_programs.json", record_programs(version))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
