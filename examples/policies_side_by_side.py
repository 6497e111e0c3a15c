"""The same expressions under every built-in policy: result dtypes side by side.

Each row builds one expression on fresh inputs under each policy of ``gd.policy_names()``
and prints the result's type (``?`` marks an ambiguous one) or, when the policy refuses,
a footnote with the error's short reason (``PromotionError``, ``LiteralError`` or
``OpTypeError``). The headline expression ``a + b * 2 + 1.5`` (a: int16, b: uint32) is
then evaluated under each policy that accepts it, to show that the dtype decides the value:
``b * 2`` wraps in uint32 in some policies and not in others.

    python examples/policies_side_by_side.py
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

import graphdsl as gd

Build = Callable[..., gd.Symbol]

# (label, input dtypes, builder): the inputs are named a, b in order
EXPRESSIONS: list[tuple[str, tuple[str, ...], Build]] = [
    ("a + b * 2 + 1.5   (i16, u32)", ("int16", "uint32"), lambda a, b: a + b * 2 + 1.5),
    ("a + b             (i16, u32)", ("int16", "uint32"), lambda a, b: a + b),
    ("a + b             (u32, i32)", ("uint32", "int32"), lambda a, b: a + b),
    ("a + b             (i64, u64)", ("int64", "uint64"), lambda a, b: a + b),
    ("a + b             (i8, f16)", ("int8", "float16"), lambda a, b: a + b),
    ("a * b             (f16, bf16)", ("float16", "bfloat16"), lambda a, b: a * b),
    ("a + b             (c64, f64)", ("complex64", "float64"), lambda a, b: a + b),
    ("a + 1             (bool)", ("bool",), lambda a: a + 1),
    ("a * 2.5           (i8)", ("int8",), lambda a: a * 2.5),
    ("a + 1000          (i8)", ("int8",), lambda a: a + 1000),
    ("a * 2             (f8e4m3fn)", ("float8_e4m3fn",), lambda a: a * 2),
    ("a / 2             (i32)", ("int32",), lambda a: a / 2),
    ("a + b             (index, i8)", ("index", "int8"), lambda a, b: a + b),
]
ERRORS = (gd.PromotionError, gd.LiteralError, gd.OpTypeError)


def build(
    policy: str, dtypes: tuple[str, ...], fn: Build
) -> tuple[gd.Graph, gd.Symbol | Exception]:
    types = [gd.TensorType(gd.dtype(d), (3,)) for d in dtypes]
    g = gd.Graph("expr", input_types=dict(zip("ab", types, strict=False)), policy=policy)
    try:
        out = fn(*g.inputs)
    except ERRORS as e:
        return g, e
    g.output(out)
    return g, out


def short_reason(e: Exception) -> str:
    """The error's reason without the source location, the operand list and the fix."""
    msg = re.sub(r"^\w+ \(at [^)]*\): ", "", str(e))
    if isinstance(e, gd.PromotionError):
        why = msg.split(f"under policy {e.policy!r}: ", 1)[-1].split("; ")[0]
        return f"PromotionError: {e.lhs} x {e.rhs}: {why}"
    head = re.sub(r" \(operand types .*\)$", "", msg.split("; ")[0])
    return f"{type(e).__name__}: {head}"


def type_table(policies: list[str]) -> None:
    notes: dict[str, int] = {}  # reason -> footnote number (shared by the policies that give it)
    rows = []
    for label, dtypes, fn in EXPRESSIONS:
        cells = []
        for p in policies:
            _, result = build(p, dtypes, fn)
            if isinstance(result, Exception):
                n = notes.setdefault(short_reason(result), len(notes) + 1)
                cells.append(f"error [{n}]")
            else:
                cells.append(f"{result.dtype.name}{'?' if result.ambiguous else ''}")
        rows.append([label, *cells])
    header = ["expression (input dtypes)", *policies]
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]

    def line(cells: list[str]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    print(line(header))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(line(r))
    print()
    for text, n in notes.items():
        print(f"[{n}] {text}")


def headline_values(policies: list[str]) -> None:
    label, dtypes, fn = EXPRESSIONS[0]
    a = np.array([-300, 7, 32767], np.int16)
    b = np.array([3_000_000_000, 5, 1], np.uint32)
    inputs = {"a": a, "b": b}
    print(f"\n{label.split('(')[0].strip()} with a = {a.tolist()}, b = {b.tolist()}:")
    for p in policies:
        g, result = build(p, dtypes, fn)
        if isinstance(result, Exception):
            print(f"  {p:<10} {short_reason(result)}")
            continue
        (value,) = gd.evaluate(g, inputs)
        print(f"  {p:<10} {value.dtype}: {value.tolist()}")


def main() -> None:
    policies = gd.policy_names()
    type_table(policies)
    headline_values(policies)


if __name__ == "__main__":
    main()
