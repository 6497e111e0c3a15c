#!/usr/bin/env python3
"""Record what Modular's ``max`` 26.7.0 graph builder does with thousands of randomly drawn op
calls (tests/data/max_graph_random.json).

Recorded against ``max`` 26.7.0 (PyPI package ``max``; ``max-core`` 26.7.0), Python 3.11.
Graphs are only built (``Graph(...)``, the op call, ``graph.output(...)``), never compiled or
run, so thousands of cases take seconds. The draws come from ``random.Random(SEED)`` through
generators shaped like MAX's own hypothesis strategies for its graph tests: for each op in
``OPS`` a fixed number of calls, with inputs of any of the 21 ``DType`` members (half of the
draws from all of them, half from the common ones), of rank 0 to 5, whose dimensions are
static (0 and 1 included), symbolic (``batch``, ``n``, ``m``) or algebraic (``n + 1``,
``n * 2``, ``n // 2`` ...), with shapes that match the op's needs, are broadcastable, or are
deliberately off (other dims, ranks, axes out of range, wrong dtypes).

Each case records the exact call: ``op`` (its name: ``max.graph.ops``' name, a TensorValue
method as ``TensorValue.<name>``, an operator as its dunder), ``inputs`` (the graph's input
TensorTypes, all on ``DeviceRef.CPU()``, as ``[dtype name, [str(dim), ...]]``; they are
``a``, ``b``, ``c``, ``d`` in the source), ``args`` (the call's other arguments, as JSON) and
``source`` (the call as a Python expression over ``ops``, ``DType``, ``Dim``, ``np``,
``cpu`` = ``DeviceRef.CPU()``, the inputs ``a``-``d`` and the dims ``batch``, ``n``, ``m``
as ``Dim`` objects); and MAX's result: ``result`` (the output types, ``[dtype name,
[str(dim), ...]]`` each, and ``container``: tensor, list or tuple) or ``error`` (the
exception's class, its nearest builtin class, the first line of its message, the
``Diagnostics:`` line that MLIR's "Failed to create op" errors carry after their first line,
and the stage: ``op`` for the call, ``output`` for ``graph.output``).

Rerun (``max`` must never be installed into the project's own venv)::

    python3 -m venv /tmp/maxvenv && /tmp/maxvenv/bin/pip install max==26.7.0
    /tmp/maxvenv/bin/python scripts/record_max_random.py

The output is deterministic (a fixed seed, sorted keys, one case a line, no addresses).
"""

from __future__ import annotations

import importlib.metadata
import itertools
import json
import random
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from max.dtype import DType  # type: ignore[import-not-found, unused-ignore]
from max.graph import (  # type: ignore[import-not-found, unused-ignore]
    DeviceRef,
    Dim,
    Graph,
    TensorType,
    TensorValue,
    ops,
)

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "data" / "max_graph_random.json"
EXPECTED_VERSION = "26.7.0"
SEED = 20260726

JSON = dict[str, Any]
Spec = tuple[str, list[str]]  # (dtype name, dims as source: "3", "n", "n + 1")

ALL_DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "bfloat16", "float4_e2m1fn", "float6_e2m3fn",
    "float6_e3m2fn", "float8_e8m0fnu", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz",
]  # fmt: skip
COMMON = ["float32", "float32", "float32", "float16", "bfloat16", "float64", "int32", "int64",
          "int64", "int8", "uint8", "bool"]  # fmt: skip
FLOATS = ["float32", "float32", "float16", "bfloat16", "float64"]
INDEX = ["int32", "int64", "int64", "uint32", "uint64", "int8", "float32"]
STATIC = ["0", "1", "1", "1", "2", "2", "2", "3", "3", "4", "4", "5", "6", "8"]
SYMBOLIC = ["batch", "n", "n", "m"]
ALGEBRAIC = ["n + 1", "n * 2", "n // 2", "n - 1", "m * n", "n + m", "batch * 2"]
LITERALS = ["2", "-1", "0", "1", "1.5", "-0.5", "True", "False", "300", "2**31", "-(2**63)",
            "2**64", "1e40", "float('nan')", "np.float32(2.5)", "np.int64(3)", "np.int8(-2)",
            "np.float16(1.0)"]  # fmt: skip


class Draw:
    """Drawing helpers over one ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.r = rng

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, items: list[Any]) -> Any:
        return items[self.r.randrange(len(items))]

    def dim(self, static: float = 0.65, algebraic: float = 0.03) -> str:
        """A dimension: static with probability ``static``, algebraic with ``algebraic``
        (rare in graph inputs, where MAX refuses them when it verifies the graph), else
        symbolic."""
        u = self.r.random()
        if u < static:
            return str(self.pick(STATIC))
        if u < static + algebraic:
            return str(self.pick(ALGEBRAIC))
        return str(self.pick(SYMBOLIC))

    def target_dim(self) -> str:
        """A dimension of a shape argument (reshape, broadcast_to, rebind): algebraic ones
        are common there."""
        return self.dim(0.6, 0.15)

    def rank(self, lo: int = 0, hi: int = 5) -> int:
        weights = [1, 3, 4, 3, 2, 1][lo : hi + 1]
        return lo + self.r.choices(range(len(weights)), weights)[0]

    def shape(self, lo: int = 0, hi: int = 5, static: float = 0.65) -> list[str]:
        return [self.dim(static) for _ in range(self.rank(lo, hi))]

    def dtype(self, pool: list[str] | None = None) -> str:
        if pool is not None and self.chance(0.85):
            return str(self.pick(pool))
        return str(self.pick(ALL_DTYPES if self.chance(0.5) else COMMON))

    def axis(self, rank: int, extra: int = 0) -> int:
        """An axis of a value of ``rank`` (``extra`` more allowed, e.g. for stack), now and
        then one out of range."""
        n = rank + extra
        if self.chance(0.1) or n == 0:
            return self.r.randint(-n - 2, n + 1)
        return self.r.randint(-n, n - 1)

    def partner(self, shape: list[str]) -> list[str]:
        """A shape that broadcasts with ``shape`` mostly, is equal often, and differs now and
        then."""
        u = self.r.random()
        if u < 0.35:
            return list(shape)
        if u < 0.8:
            cut = self.r.randint(0, len(shape))
            out = ["1" if self.chance(0.3) else d for d in shape[cut:]]
            if self.chance(0.2):
                out = [self.dim() for _ in range(self.r.randint(1, 2))] + list(shape)
            return out[:5]
        return self.shape()

    def static_int(self, d: str) -> int | None:
        return int(d) if d.lstrip("-").isdigit() else None


def dims_src(dims: Sequence[str | int]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


Case = tuple[list[Spec], JSON, str]
Generator = Callable[[Draw], Case]
OPS: dict[str, tuple[int, Generator]] = {}


def op(name: str, count: int = 40) -> Callable[[Generator], Generator]:
    def register(fn: Generator) -> Generator:
        OPS[name] = (count, fn)
        return fn

    return register


# ---------------------------------------------------------------------------- elementwise


BINARY = ["add", "sub", "mul", "div", "floor_div", "mod", "pow", "max", "min", "equal",
          "not_equal", "greater", "greater_equal", "logical_and", "logical_or",
          "logical_xor"]  # fmt: skip
OPERATORS = {"__add__": "+", "__sub__": "-", "__mul__": "*", "__truediv__": "/",
             "__floordiv__": "//", "__mod__": "%", "__pow__": "**", "__eq__": "==",
             "__ne__": "!=", "__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">=",
             "__and__": "&", "__or__": "|", "__xor__": "^"}  # fmt: skip
REFLECTED = {"__radd__": "+", "__rsub__": "-", "__rmul__": "*", "__rtruediv__": "/",
             "__rfloordiv__": "//", "__rmod__": "%", "__rpow__": "**", "__rand__": "&",
             "__ror__": "|", "__rxor__": "^"}  # fmt: skip
UNARY = ["abs", "negate", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh",
         "sigmoid", "relu", "gelu", "silu", "floor", "ceil", "round", "trunc", "erf", "is_nan",
         "is_inf", "logical_not", "acos", "atanh"]  # fmt: skip
UNARY_OPERATORS = {"__neg__": "-a", "__invert__": "~a", "__abs__": "abs(a)",
                   "__round__": "round(a)"}  # fmt: skip


def binary_inputs(g: Draw, pool: list[str] | None = None) -> list[Spec]:
    s = g.shape()
    t = g.partner(s)
    if g.chance(0.5):
        s, t = t, s
    da = g.dtype(pool)
    db = da if g.chance(0.5) else g.dtype(pool)
    return [(da, s), (db, t)]


def _binary(name: str) -> Generator:
    pool = ["bool"] if name.startswith("logical") else None

    def gen(g: Draw) -> Case:
        return binary_inputs(g, pool), {}, f"ops.{name}(a, b)"

    return gen


def _operator(sym: str) -> Generator:
    def gen(g: Draw) -> Case:
        return binary_inputs(g), {}, f"a {sym} b"

    return gen


def _literal(sym: str, reflected: bool) -> Generator:
    def gen(g: Draw) -> Case:
        lit = g.pick(LITERALS)
        src = f"{lit} {sym} a" if reflected else f"a {sym} {lit}"
        return [(g.dtype(), g.shape())], {"literal": lit}, src

    return gen


def _unary(src: str) -> Generator:
    def gen(g: Draw) -> Case:
        return [(g.dtype(FLOATS if g.chance(0.5) else None), g.shape())], {}, src

    return gen


for _name in BINARY:
    op(_name, 50)(_binary(_name))
for _dunder, _sym in OPERATORS.items():
    op(_dunder, 30)(_operator(_sym))
    op(f"{_dunder} (literal)", 25)(_literal(_sym, False))
for _dunder, _sym in REFLECTED.items():
    op(f"{_dunder} (literal)", 25)(_literal(_sym, True))
for _name in UNARY:
    op(_name, 25)(_unary(f"ops.{_name}(a)"))
for _dunder, _src in UNARY_OPERATORS.items():
    op(_dunder, 25)(_unary(_src))


@op("__divmod__", 20)
def _divmod(g: Draw) -> Case:
    return binary_inputs(g), {}, "divmod(a, b)"


@op("where", 50)
def _where(g: Draw) -> Case:
    s = g.shape()
    c = g.partner(s)
    t = g.partner(s)
    dc = "bool" if g.chance(0.85) else g.dtype()
    da = g.dtype()
    db = da if g.chance(0.6) else g.dtype()
    return [(dc, c), (da, s), (db, t)], {}, "ops.where(a, b, c)"


@op("cast", 60)
def _cast(g: Draw) -> Case:
    to = g.pick(ALL_DTYPES)
    return [(g.dtype(), g.shape())], {"dtype": to}, f"ops.cast(a, DType.{to})"


@op("TensorValue.cast", 20)
def _cast_method(g: Draw) -> Case:
    to = g.pick(ALL_DTYPES)
    return [(g.dtype(), g.shape())], {"dtype": to}, f"a.cast(DType.{to})"


# ---------------------------------------------------------------------------- reductions


def _reduction(template: str, pool: list[str] | None = None) -> Generator:
    def gen(g: Draw) -> Case:
        s = g.shape()
        axis = g.axis(len(s))
        return [(g.dtype(pool), s)], {"axis": axis}, template.format(axis=axis)

    return gen


for _name in ("sum", "prod", "mean", "argmax", "argmin", "cumsum"):
    op(_name, 40)(_reduction(f"ops.{_name}(a, axis={{axis}})"))
op("max (reduce)", 30)(_reduction("ops.max(a, axis={axis})"))
op("min (reduce)", 30)(_reduction("ops.min(a, axis={axis})"))
for _name in ("argmax", "max", "min", "mean", "stdev", "var"):
    op(f"TensorValue.{_name}", 20)(_reduction(f"a.{_name}(axis={{axis}})", FLOATS))
op("softmax", 30)(_reduction("ops.softmax(a, axis={axis})", FLOATS))
op("logsoftmax", 30)(_reduction("ops.logsoftmax(a, axis={axis})", FLOATS))


# ---------------------------------------------------------------------------- linear algebra


@op("matmul", 70)
def _matmul(g: Draw) -> Case:
    ra, rb = g.rank(1, 4), g.rank(1, 4)
    k = g.dim(0.8)
    a = [g.dim(0.8) for _ in range(ra - 1)] + [k]
    b = [g.dim(0.8) for _ in range(rb)]
    if rb >= 2:
        b[-2] = k if g.chance(0.8) else g.dim()
        batch_a, batch_b = a[:-2], b[:-2]
        if g.chance(0.6):  # broadcastable batch dims
            n = min(len(batch_a), len(batch_b))
            for i in range(1, n + 1):
                b[-2 - i] = a[-2 - i] if g.chance(0.7) else "1"
    elif g.chance(0.8):
        b[0] = k
    da = g.dtype(FLOATS)
    db = da if g.chance(0.8) else g.dtype()
    src = "a @ b" if g.chance(0.3) else "ops.matmul(a, b)"
    return [(da, a), (db, b)], {"operator": src == "a @ b"}, src


@op("outer", 30)
def _outer(g: Draw) -> Case:
    da = g.dtype(FLOATS)
    db = da if g.chance(0.7) else g.dtype()
    return [(da, g.shape(0, 2)), (db, g.shape(0, 2))], {}, "ops.outer(a, b)"


# ---------------------------------------------------------------------------- shape ops


@op("reshape", 80)
def _reshape(g: Draw) -> Case:
    s = g.shape(0, 4)
    u = g.r.random()
    target: list[str | int]
    if u < 0.35:  # the same dims, merged or split where static
        target = list(s)
        if g.chance(0.3):
            g.r.shuffle(target)
        if len(target) >= 2 and g.chance(0.5):
            x, y = target[0], target[1]
            if g.static_int(str(x)) is not None and g.static_int(str(y)) is not None:
                target = [int(str(x)) * int(str(y)), *target[2:]]
    elif u < 0.6:  # one -1
        target = list(s)
        if target:
            target[g.r.randrange(len(target))] = -1
        if g.chance(0.2):
            target.append(-1)
    else:
        target = [g.target_dim() for _ in range(g.rank(0, 4))]
    src = dims_src(target)
    method = g.chance(0.25)
    call = f"a.reshape({src})" if method else f"ops.reshape(a, {src})"
    return [(g.dtype(), s)], {"shape": [str(t) for t in target], "method": method}, call


@op("transpose", 40)
def _transpose(g: Draw) -> Case:
    s = g.shape()
    i, j = g.axis(len(s)), g.axis(len(s))
    if g.chance(0.25):
        return [(g.dtype(), s)], {"axes": [i, j]}, f"a.transpose({i}, {j})"
    return [(g.dtype(), s)], {"axes": [i, j]}, f"ops.transpose(a, {i}, {j})"


@op("TensorValue.T", 20)
def _t(g: Draw) -> Case:
    return [(g.dtype(), g.shape())], {}, "a.T"


@op("permute", 40)
def _permute(g: Draw) -> Case:
    s = g.shape()
    dims = list(range(len(s)))
    g.r.shuffle(dims)
    dims = [d - len(s) if g.chance(0.3) else d for d in dims]
    if g.chance(0.15) and dims:
        dims[0] = dims[-1]
    elif g.chance(0.1):
        dims.append(len(s))
    src = f"a.permute({dims})" if g.chance(0.25) else f"ops.permute(a, {dims})"
    return [(g.dtype(), s)], {"dims": dims}, src


@op("broadcast_to", 50)
def _broadcast_to(g: Draw) -> Case:
    s = g.shape(0, 4)
    if g.chance(0.75):
        target: list[str] = [g.target_dim() for _ in range(g.r.randint(0, 2))]
        target += [g.target_dim() if d == "1" and g.chance(0.7) else d for d in s]
    else:
        target = [g.target_dim() for _ in range(g.rank(0, 4))]
    src = dims_src(target)
    call = f"a.broadcast_to({src})" if g.chance(0.25) else f"ops.broadcast_to(a, {src})"
    return [(g.dtype(), s)], {"shape": target}, call


@op("squeeze", 40)
def _squeeze(g: Draw) -> Case:
    s = [("1" if g.chance(0.4) else g.dim()) for _ in range(g.rank())]
    axis = g.axis(len(s))
    return [(g.dtype(), s)], {"axis": axis}, f"ops.squeeze(a, {axis})"


@op("unsqueeze", 40)
def _unsqueeze(g: Draw) -> Case:
    s = g.shape()
    axis = g.axis(len(s), 1)
    return [(g.dtype(), s)], {"axis": axis}, f"ops.unsqueeze(a, {axis})"


@op("flatten", 40)
def _flatten(g: Draw) -> Case:
    s = g.shape()
    i, j = g.axis(len(s)), g.axis(len(s))
    if g.chance(0.5) and len(s) > 0:
        i, j = sorted((i % len(s), j % len(s)))
    call = f"a.flatten({i}, {j})" if g.chance(0.25) else f"ops.flatten(a, {i}, {j})"
    return [(g.dtype(), s)], {"start_dim": i, "end_dim": j}, call


@op("concat", 60)
def _concat(g: Draw) -> Case:
    s = g.shape(0, 4)
    axis = g.axis(len(s))
    k = 3 if g.chance(0.2) else 2
    specs: list[Spec] = []
    da = g.dtype()
    for _ in range(k):
        t = list(s)
        if t and -len(s) <= axis < len(s):
            t[axis] = g.dim()
        if g.chance(0.1):
            t = g.shape(0, 4)
        specs.append((da if g.chance(0.85) else g.dtype(), t))
    names = ", ".join("abc"[:k])
    return specs, {"axis": axis, "count": k}, f"ops.concat([{names}], axis={axis})"


@op("stack", 50)
def _stack(g: Draw) -> Case:
    s = g.shape(0, 4)
    axis = g.axis(len(s), 1)
    da = g.dtype()
    t = list(s) if g.chance(0.8) else g.partner(s)
    specs = [(da, s), (da if g.chance(0.85) else g.dtype(), t)]
    return specs, {"axis": axis}, f"ops.stack([a, b], axis={axis})"


@op("split", 50)
def _split(g: Draw) -> Case:
    s = g.shape(1, 4, static=0.8)
    axis = g.axis(len(s))
    d = s[axis] if -len(s) <= axis < len(s) else "3"
    size = g.static_int(d)
    sizes: list[str | int]
    if size is not None and g.chance(0.75):
        cut = sorted(g.r.randint(0, size) for _ in range(g.r.randint(0, 2)))
        bounds = [0, *cut, size]
        sizes = [q - p for p, q in itertools.pairwise(bounds)]
    elif size is None and g.chance(0.5):
        sizes = [d]
    else:
        sizes = [g.r.randint(0, 4) for _ in range(g.r.randint(1, 3))]
    return ([(g.dtype(), s)], {"sizes": [str(x) for x in sizes], "axis": axis},
            f"ops.split(a, {dims_src(sizes)}, axis={axis})")  # fmt: skip


@op("chunk", 40)
def _chunk(g: Draw) -> Case:
    s = g.shape(0, 4, static=0.8)
    axis = g.axis(len(s))
    chunks = g.pick([1, 2, 2, 3, 4, 0, -1])
    return [(g.dtype(), s)], {"chunks": chunks, "axis": axis}, f"ops.chunk(a, {chunks}, {axis})"


@op("tile", 40)
def _tile(g: Draw) -> Case:
    s = g.shape(0, 4)
    reps: list[int] = [g.pick([1, 1, 2, 3, 0]) for _ in s]
    if g.chance(0.15):
        reps.append(2)
    if g.chance(0.05) and reps:
        reps[0] = -1
    return [(g.dtype(), s)], {"repeats": reps}, f"ops.tile(a, {reps})"


@op("pad", 40)
def _pad(g: Draw) -> Case:
    s = g.shape(1, 4, static=0.8)
    pads = [g.pick([0, 0, 1, 2]) for _ in range(2 * len(s))]
    if g.chance(0.1):
        pads = pads[:-1]
    if g.chance(0.1) and pads:
        pads[0] = -1
    mode = "constant" if g.chance(0.8) else g.pick(["reflect", "edge"])
    return ([(g.dtype(), s)], {"paddings": pads, "mode": mode},
            f"ops.pad(a, {pads}, mode={mode!r})")  # fmt: skip


@op("rebind", 30)
def _rebind(g: Draw) -> Case:
    s = g.shape(0, 4)
    target = [g.target_dim() if g.chance(0.4) else d for d in s]
    if g.chance(0.15):
        target = [g.target_dim() for _ in range(g.rank(0, 4))]
    src = dims_src(target)
    return [(g.dtype(), s)], {"shape": target}, f"ops.rebind(a, {src})"


@op("band_part", 30)
def _band_part(g: Draw) -> Case:
    s = g.shape(0, 4)
    lo, hi = g.pick([None, 0, 1, 2]), g.pick([None, 0, 1, -1])
    ex = g.chance(0.3)
    return ([(g.dtype(), s)], {"num_lower": lo, "num_upper": hi, "exclude": ex},
            f"ops.band_part(a, {lo}, {hi}, {ex})")  # fmt: skip


@op("repeat_interleave", 30)
def _repeat_interleave(g: Draw) -> Case:
    s = g.shape(0, 3)
    axis = None if g.chance(0.3) else g.axis(len(s))
    reps = g.pick([1, 2, 3, 0])
    return ([(g.dtype(), s)], {"repeats": reps, "axis": axis},
            f"ops.repeat_interleave(a, {reps}, axis={axis})")  # fmt: skip


# ---------------------------------------------------------------------------- indexing


def _index_item(g: Draw, d: str) -> tuple[Any, str]:
    """One index item for a dimension ``d``: (JSON, source)."""
    size = g.static_int(d) or 4
    u = g.r.random()
    if u < 0.3:
        k = g.r.randint(-size - 1, size)
        return k, str(k)
    if u < 0.85:
        parts = [
            None if g.chance(0.5) else g.r.randint(-size - 1, size),
            None if g.chance(0.5) else g.r.randint(-size - 1, size + 1),
            None if g.chance(0.6) else g.pick([1, 2, -1, 3, 0]),
        ]
        shown = ["" if p is None else str(p) for p in parts]
        return {"slice": parts}, ":".join(shown if parts[2] is not None else shown[:2])
    if u < 0.93:
        return "None", "None"
    return "Ellipsis", "..."


@op("__getitem__", 150)
def _getitem(g: Draw) -> Case:
    s = g.shape(0, 4)
    k = g.r.randint(0, len(s) + 1) if g.chance(0.9) else len(s) + 2
    items = [_index_item(g, s[i] if i < len(s) else "4") for i in range(k)]
    if not items:
        return [(g.dtype(), s)], {"index": []}, "a[()]"
    text = ", ".join(t for _, t in items)
    return [(g.dtype(), s)], {"index": [j for j, _ in items]}, f"a[{text}]"


@op("gather", 60)
def _gather(g: Draw) -> Case:
    s = g.shape(1, 4)
    axis = g.axis(len(s))
    idx = g.shape(0, 3)
    return ([(g.dtype(), s), (g.pick(INDEX), idx)], {"axis": axis},
            f"ops.gather(a, b, axis={axis})")  # fmt: skip


@op("gather_nd", 40)
def _gather_nd(g: Draw) -> Case:
    s = g.shape(1, 4, static=0.8)
    k = g.r.randint(1, len(s) + 1)
    idx = [*g.shape(0, 2, static=0.8), str(k)]
    batch = g.pick([0, 0, 0, 1])
    if batch and s:
        idx = [s[0], *idx]
    return ([(g.dtype(), s), (g.pick(INDEX), idx)], {"batch_dims": batch},
            f"ops.gather_nd(a, b, batch_dims={batch})")  # fmt: skip


@op("scatter", 40)
def _scatter(g: Draw) -> Case:
    s = g.shape(1, 3, static=0.8)
    axis = g.axis(len(s))
    idx = list(s) if g.chance(0.6) else g.shape(1, 3, static=0.8)
    da = g.dtype()
    du = da if g.chance(0.85) else g.dtype()
    return ([(da, s), (du, idx), (g.pick(INDEX), idx)], {"axis": axis},
            f"ops.scatter(a, b, c, axis={axis})")  # fmt: skip


@op("scatter_nd", 30)
def _scatter_nd(g: Draw) -> Case:
    s = g.shape(1, 3, static=0.8)
    k = g.r.randint(1, len(s))
    lead = g.shape(1, 2, static=0.8)
    upd = [*lead, *s[k:]] if g.chance(0.8) else g.shape(1, 3)
    da = g.dtype()
    return ([(da, s), (da if g.chance(0.85) else g.dtype(), upd),
             (g.pick(INDEX), [*lead, str(k)])], {}, "ops.scatter_nd(a, b, c)")  # fmt: skip


@op("top_k", 40)
def _top_k(g: Draw) -> Case:
    s = g.shape(1, 3)
    axis = g.axis(len(s))
    d = g.static_int(s[axis]) if -len(s) <= axis < len(s) else None
    k = g.r.randint(0, (d or 3) + 1)
    return [(g.dtype(), s)], {"k": k, "axis": axis}, f"ops.top_k(a, {k}, axis={axis})"


@op("bottom_k", 20)
def _bottom_k(g: Draw) -> Case:
    s = g.shape(1, 3)
    axis = g.axis(len(s))
    k = g.r.randint(0, 4)
    return [(g.dtype(), s)], {"k": k, "axis": axis}, f"ops.bottom_k(a, {k}, axis={axis})"


@op("argsort", 20)
def _argsort(g: Draw) -> Case:
    asc = g.chance(0.5)
    return ([(g.dtype(), g.shape(0, 2))], {"ascending": asc},
            f"ops.argsort(a, ascending={asc})")  # fmt: skip


@op("nonzero", 20)
def _nonzero(g: Draw) -> Case:
    return [(g.dtype(), g.shape(0, 3))], {"out_dim": "nz"}, "ops.nonzero(a, 'nz')"


@op("range", 30)
def _range(g: Draw) -> Case:
    start, stop, step = g.pick([0, 1, -2]), g.pick([0, 5, 8, -3]), g.pick([1, 2, -1, 3])
    dt = g.dtype(["int32", "int64", "float32"])
    src = f"ops.range({start}, {stop}, {step}, dtype=DType.{dt}, device=cpu)"
    return [], {"start": start, "stop": stop, "step": step, "dtype": dt}, src


# ---------------------------------------------------------------------------- nn


def _norm_inputs(g: Draw, k: int) -> list[Spec]:
    s = g.shape(1, 4)
    last = s[-1] if g.chance(0.8) else g.dim()
    da = g.dtype(FLOATS)
    return [(da, s)] + [(da if g.chance(0.85) else g.dtype(), [last]) for _ in range(k)]


@op("layer_norm", 40)
def _layer_norm(g: Draw) -> Case:
    return _norm_inputs(g, 2), {"epsilon": 1e-5}, "ops.layer_norm(a, b, c, 1e-05)"


@op("rms_norm", 30)
def _rms_norm(g: Draw) -> Case:
    return _norm_inputs(g, 1), {"epsilon": 1e-6}, "ops.rms_norm(a, b, 1e-06)"


@op("group_norm", 30)
def _group_norm(g: Draw) -> Case:
    s = g.shape(2, 4, static=0.8)
    c = s[1] if g.chance(0.85) else g.dim()
    da = g.dtype(FLOATS)
    groups = g.pick([1, 2, 3])
    return ([(da, s), (da, [c]), (da, [c])], {"num_groups": groups, "epsilon": 1e-5},
            f"ops.group_norm(a, b, c, {groups}, 1e-05)")  # fmt: skip


def _image(g: Draw) -> list[str]:
    if g.chance(0.9):
        return [g.pick(["1", "2", "batch"]), g.pick(["5", "6", "8", "n", "1"]),
                g.pick(["5", "6", "8", "m", "3"]), g.pick(["1", "2", "3", "4"])]  # fmt: skip
    return g.shape(3, 5)


@op("conv2d", 60)
def _conv2d(g: Draw) -> Case:
    x = _image(g)
    groups = g.pick([1, 1, 1, 2])
    cin = x[-1] if len(x) == 4 else "3"
    cf = str(int(cin) // groups) if cin.isdigit() and g.chance(0.85) else g.pick(["1", "2", "3"])
    w = [g.pick(["1", "2", "3"]), g.pick(["1", "2", "3"]), cf, g.pick(["2", "4"])]
    stride = (g.pick([1, 2]), g.pick([1, 2]))
    dilation = (g.pick([1, 1, 2]), 1)
    padding = tuple(g.pick([0, 0, 1]) for _ in range(4))
    dt = g.dtype(FLOATS)
    args = {"stride": list(stride), "dilation": list(dilation), "padding": list(padding),
            "groups": groups}  # fmt: skip
    src = (f"ops.conv2d(a, b, stride={stride}, dilation={dilation}, padding={padding}, "
           f"groups={groups})")  # fmt: skip
    return [(dt, x), (dt if g.chance(0.9) else g.dtype(), w)], args, src


@op("conv2d_transpose", 25)
def _conv2d_transpose(g: Draw) -> Case:
    x = _image(g)
    cin = x[-1] if len(x) == 4 else "3"
    w = [g.pick(["1", "2", "3"]), g.pick(["1", "2", "3"]), g.pick(["2", "4"]),
         cin if g.chance(0.85) else "5"]  # fmt: skip
    stride = (g.pick([1, 2]), g.pick([1, 2]))
    dt = g.dtype(FLOATS)
    return ([(dt, x), (dt, w)], {"stride": list(stride)},
            f"ops.conv2d_transpose(a, b, stride={stride})")  # fmt: skip


def _pool(name: str) -> Generator:
    def gen(g: Draw) -> Case:
        x = _image(g)
        kernel = (g.pick([1, 2, 3]), g.pick([1, 2, 3]))
        stride = g.pick([1, 2, (1, 2)])
        dilation = g.pick([1, 1, 2])
        padding = g.pick([0, 0, 1])
        ceil = g.chance(0.3)
        args = {"kernel_size": list(kernel), "stride": stride, "dilation": dilation,
                "padding": padding, "ceil_mode": ceil}  # fmt: skip
        src = (f"ops.{name}(a, {kernel}, stride={stride}, dilation={dilation}, "
               f"padding={padding}, ceil_mode={ceil})")  # fmt: skip
        return [(g.dtype(FLOATS), x)], args, src

    return gen


op("max_pool2d", 50)(_pool("max_pool2d"))
op("avg_pool2d", 30)(_pool("avg_pool2d"))


# ---------------------------------------------------------------------------- recording


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def diagnostic_line(exc: BaseException) -> str | None:
    """The first informative line after ``Diagnostics:`` (for a graph that fails to verify:
    the verifier's ``error:`` line)."""
    lines = [ln.strip() for ln in str(exc).splitlines()]
    if "Diagnostics:" not in lines:
        return None
    for ln in lines[lines.index("Diagnostics:") + 1 :]:
        if ln and ln != "Verification failed:":
            return ln
    return None


def nearest_builtin(exc: BaseException) -> str:
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return "BaseException"


def type_json(v: Any) -> list[Any]:
    return [str(v.dtype.name), [str(d) for d in v.shape]]


def describe(result: Any) -> JSON:
    if isinstance(result, TensorValue):
        return {"container": "tensor", "types": [type_json(result)]}
    if isinstance(result, list | tuple) and all(isinstance(v, TensorValue) for v in result):
        return {"container": type(result).__name__, "types": [type_json(v) for v in result]}
    return {"container": type(result).__name__, "types": []}


DIMS = {"batch": Dim("batch"), "n": Dim("n"), "m": Dim("m")}


def run(specs: list[Spec], source: str) -> tuple[list[Any], JSON]:
    """Build the case's graph on MAX: its input types as recorded, and its result."""
    cpu = DeviceRef.CPU()
    types = [TensorType(getattr(DType, dt), [eval(d, dict(DIMS)) for d in dims], cpu)
             for dt, dims in specs]  # fmt: skip
    inputs = [type_json(t) for t in types]
    stage = "op"
    try:
        with Graph("random", input_types=types) as graph:
            env: dict[str, Any] = {"ops": ops, "DType": DType, "Dim": Dim, "np": np,
                                   "cpu": cpu, **DIMS}  # fmt: skip
            env.update(zip("abcd", (v.tensor for v in graph.inputs), strict=False))
            result = eval(source, env)
            out = describe(result)
            stage = "output"
            if out["types"]:
                graph.output(*(result if out["container"] != "tensor" else [result]))
    except Exception as exc:
        err: JSON = {"class": type(exc).__name__, "builtin": nearest_builtin(exc),
                     "message": first_line(exc), "stage": stage}  # fmt: skip
        diag = diagnostic_line(exc)
        if diag is not None:
            err["diagnostic"] = diag
        return inputs, {"error": err}
    return inputs, {"result": out}


def record() -> tuple[list[JSON], dict[str, int]]:
    rng = random.Random(SEED)
    cases: list[JSON] = []
    counts: dict[str, int] = {}
    for name, (count, gen) in OPS.items():
        for k in range(count):
            specs, args, source = gen(Draw(rng))
            inputs, outcome = run(specs, source)
            cases.append({"id": f"{name}#{k}", "op": name, "inputs": inputs, "args": args,
                          "source": source} | outcome)  # fmt: skip
        counts[name] = count
    return cases, counts


CONVENTIONS = {
    "cases": "id (op#k), op, inputs (the graph's input TensorTypes on DeviceRef.CPU(), "
    "[dtype name, [str(dim), ...]]; a, b, c, d in source), args (the call's other arguments "
    "as JSON), source (the call: a Python expression over ops, DType, Dim, np, cpu = "
    "DeviceRef.CPU(), the inputs a-d and the Dim objects batch, n, m), then result or error",
    "result": "container (tensor, list or tuple) and types: [dtype name, [str(dim), ...]] "
    "of each output value",
    "error": "class, builtin (its nearest builtin base class), message (first line), "
    "diagnostic (the line after 'Diagnostics:' in MLIR's 'Failed to create op' errors) and "
    "stage (op: the call raised; output: graph.output raised)",
    "draws": "random.Random(seed); per op a fixed count of calls (counts), in OPS' order",
}


def write(payload: JSON, cases: list[JSON]) -> None:
    head = json.dumps(payload, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False)
    lines = ",\n".join(
        "  " + json.dumps(c, sort_keys=True, ensure_ascii=False, allow_nan=False) for c in cases
    )
    text = '{\n "cases": [\n' + lines + "\n ],\n" + head.removeprefix("{\n")
    json.loads(text)  # (valid JSON)
    OUT.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)} ({OUT.stat().st_size} bytes)", file=sys.stderr)


def main() -> int:
    version = importlib.metadata.version("max")
    if version != EXPECTED_VERSION:
        print(f"warning: recording max {version}, docstring says {EXPECTED_VERSION}",
              file=sys.stderr)  # fmt: skip
    cases, counts = record()
    outcomes = Counter("error" if "error" in c else "result" for c in cases)
    print(f"{len(cases)} cases: {dict(outcomes)}", file=sys.stderr)
    write({"version": version, "seed": SEED, "conventions": CONVENTIONS, "counts": counts},
          cases)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
