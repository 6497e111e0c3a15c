#!/usr/bin/env python3
"""Record what Modular's ``max`` 26.7.0 computes at run time, on its CPU, for bool arithmetic,
for casts through its sub-byte and fnuz float dtypes and for resizes of integers
(tests/data/max_graph_runtime.json).

Recorded against ``max`` 26.7.0 (PyPI package ``max``; ``max-core`` 26.7.0), Python 3.11, on
``max.engine.InferenceSession(devices=[max.driver.CPU()])``. Each case is one graph, built by
the program in ``PROGRAM`` (its exact text is recorded: tests/test_graphdsl_max_runtime.py
runs it on graphdsl.max with only its imports changed) from the case's input types and one
expression over the inputs ``a``, ``b``; it is then compiled (``session.load``) and executed
(``model.execute``) on the case's input arrays. Per case the record holds the graph's output
TensorType (dtype, shape), and either the output (dtype, shape, values as nested lists; NaN
and infinities as the strings "nan", "inf", "-inf"; -0.0 as -0.0) or the exception: its class,
its nearest builtin class, the first line of its message, the stage it was raised at
(``build``: building the graph; ``compile``: ``session.load``; ``execute``: ``execute`` and
reading the output back) and, for a compile failure, the informative line of the compiler's
log (the chained exception's ``constraint failed:`` note or its first ``error:`` line other
than the generic ones). Cases are independent: one failing does not stop the others.

Cases (``CASES``):

* bool: ``a = [False, False, True, True]``, ``b = [False, True, False, True]`` through every
  arithmetic op of ``max.graph.ops`` and TensorValue's operators, Python scalars against a
  bool tensor, unary ops, reductions over the last axis, and ``[2, 2]`` bool matrices through
  ``matmul``; a ``[3, 4]`` bool input summed over its last axis (do sums saturate at True?).
* sub-byte / fnuz / float8: a float32 input ``[0.0, 0.3, -1.7, 3.0, 500.0, -0.0, inf, nan]``
  cast to each of float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e8m0fnu,
  float8_e4m3fnuz, float8_e5m2fnuz, float8_e4m3fn, float8_e5m2 and back to float32 (the
  engine takes no numpy input of these dtypes, so the casts happen inside the graph), and an
  ``add`` of two values cast to it, read back through a cast to float32; bfloat16 as a control
  (a dtype numpy lacks that MAX's CPU does run).
* resize: ``[[0, 4], [9, 1]]`` as int32, uint8, bool and float32 ``[1, 1, 2, 2]`` (and
  negated, int32) resized to 4x4 or 3x3, and a float32 ``[2, 2, 1, 1]`` resized on N and C to
  ``[4, 3, 1, 1]``, in each of MAX's three interpolation modes (what dtype a resize of an
  integer keeps, and how it rounds).

Rerun (``max`` must never be installed into the project's own venv; 10 to 20 minutes: the
CPU compiles each graph)::

    python3 -m venv /tmp/maxvenv && /tmp/maxvenv/bin/pip install max==26.7.0
    /tmp/maxvenv/bin/python scripts/record_max_runtime.py [--only PREFIX]

(``--only resize/`` records the resize cases again and keeps the other records.)

The output is deterministic (sorted keys, fixed inputs, no addresses).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
from max.driver import CPU  # type: ignore[import-not-found, unused-ignore]
from max.engine import InferenceSession  # type: ignore[import-not-found, unused-ignore]
from record_max_graph import to_jsonable  # (beside this script: NaN and inf as strings)

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "data" / "max_graph_runtime.json"
EXPECTED_VERSION = "26.7.0"

JSON = dict[str, Any]

# The program every case runs (recorded verbatim; the test swaps the two max imports).
PROGRAM = '''\
import numpy as np
from max.dtype import DType
from max.graph import DeviceRef, Graph, TensorType, ops

device = DeviceRef.CPU()


def build(name, input_types, expression):
    """One graph: inputs a, b of input_types ([dtype name, shape] each), one output."""
    types = [TensorType(getattr(DType, d), shape, device) for d, shape in input_types]
    with Graph(name, input_types=types) as graph:
        env = {"ops": ops, "DType": DType, "np": np}
        env.update(zip("ab", (v.tensor for v in graph.inputs)))
        graph.output(eval(expression, env))
    return graph
'''

A = [False, False, True, True]
B = [False, True, False, True]
M1 = [[True, False], [True, True]]
M2 = [[True, True], [False, True]]
M34 = [[False, False, False, False], [True, False, True, False], [True, True, True, True]]
FLOATS: list[float | str] = [0.0, 0.3, -1.7, 3.0, 500.0, -0.0, "inf", "nan"]
FLOATS_B: list[float | str] = [0.5, 0.3, 1.7, -3.0, 500.0, -0.0, 1.0, 2.0]

SUBBYTE = [
    "float4_e2m1fn",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float8_e8m0fnu",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e4m3fn",
    "float8_e5m2",
]


def _bool_cases() -> list[JSON]:
    two = [
        {"dtype": "bool", "shape": [4], "values": A},
        {"dtype": "bool", "shape": [4], "values": B},
    ]
    one = two[:1]
    mats = [
        {"dtype": "bool", "shape": [2, 2], "values": M1},
        {"dtype": "bool", "shape": [2, 2], "values": M2},
    ]
    cases: list[JSON] = []

    def add(name: str, inputs: list[JSON], expression: str) -> None:
        cases.append({"name": f"bool/{name}", "inputs": inputs, "expression": expression})

    for op in ("add", "sub", "mul", "div", "floor_div", "mod", "pow", "max", "min"):
        add(f"ops.{op}", two, f"ops.{op}(a, b)")
    for sym in ("+", "-", "*", "/", "//", "%", "**"):
        add(f"a {sym} b", two, f"a {sym} b")
    add("ops.matmul", mats, "ops.matmul(a, b)")
    add("a @ b", mats, "a @ b")
    add("ops.negate", one, "ops.negate(a)")
    add("-a", one, "-a")
    add("ops.abs", one, "ops.abs(a)")
    add("abs(a)", one, "abs(a)")
    add("~a", one, "~a")
    for op in ("sum", "prod", "mean", "argmax", "argmin", "cumsum"):
        add(f"ops.{op}", one, f"ops.{op}(a, axis=-1)")
    add("ops.max (reduce)", one, "ops.max(a, axis=-1)")
    add("ops.min (reduce)", one, "ops.min(a, axis=-1)")
    for lit in ("a + True", "a + 1", "a * 2", "a + 1.5", "a - True", "True - a", "a * True"):
        add(lit, one, lit)
    m34 = [{"dtype": "bool", "shape": [3, 4], "values": M34}]
    add("[3,4] ops.sum", m34, "ops.sum(a, axis=-1)")
    add("[3,4] ops.mean", m34, "ops.mean(a, axis=-1)")
    add("[3,4] ops.cumsum", m34, "ops.cumsum(a, axis=-1)")
    return cases


def _float_cases() -> list[JSON]:
    x = [{"dtype": "float32", "shape": [8], "values": FLOATS}]
    xy = [*x, {"dtype": "float32", "shape": [8], "values": FLOATS_B}]
    cases: list[JSON] = []
    for name in [*SUBBYTE, "bfloat16"]:
        d = f"DType.{name}"
        cases.append({"name": f"{name}/cast round trip", "inputs": x,
                      "expression": f"ops.cast(ops.cast(a, {d}), DType.float32)"})  # fmt: skip
        inner = f"ops.add(ops.cast(a, {d}), ops.cast(b, {d}))"
        cases.append({"name": f"{name}/add", "inputs": xy, "inner_expression": inner,
                      "expression": f"ops.cast({inner}, DType.float32)"})  # fmt: skip
    return cases


def _resize_cases() -> list[JSON]:
    """``ops.resize`` keeping integer and bool dtypes, and resizing N and C."""
    img = [[[[0, 4], [9, 1]]]]
    neg = [[[[0, -4], [-9, -1]]]]
    nc = [[[[0.0]], [[1.0]]], [[[2.0]], [[3.0]]]]
    cases: list[JSON] = []
    for mode in ("NEAREST", "BILINEAR", "BICUBIC"):
        resize = f"ops.resize(a, {{}}, interpolation=ops.InterpolationMode.{mode})"
        for dtype, values, size in (("int32", img, [1, 1, 4, 4]), ("int32", neg, [1, 1, 3, 3]),
                                    ("uint8", img, [1, 1, 3, 3]), ("bool", img, [1, 1, 4, 4]),
                                    ("float32", img, [1, 1, 4, 4]),
                                    ("float32", nc, [4, 3, 1, 1])):  # fmt: skip
            shape = [len(values), len(values[0]), len(values[0][0]), len(values[0][0][0])]
            x = [{"dtype": dtype, "shape": shape,
                  "values": [[[[bool(v) if dtype == "bool" else v for v in row]
                               for row in c] for c in n] for n in values]}]  # fmt: skip
            cases.append({"name": f"resize/{mode.lower()} {dtype}{shape} to {size}",
                          "inputs": x, "expression": resize.format(size)})  # fmt: skip
    return cases


CASES: list[JSON] = _bool_cases() + _float_cases() + _resize_cases()


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def nearest_builtin(exc: BaseException) -> str:
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls.__name__
    return "BaseException"


GENERIC = ("function instantiation failed", "The graph compiler could not elaborate")


def diagnostic(exc: BaseException) -> str | None:
    """The informative line of a compiler failure's chained log, if any."""
    text = "\n".join(str(e) for e in (exc.__cause__, exc.__context__) if e is not None)
    lines = [ln.strip() for ln in text.splitlines()]
    for ln in lines:
        if "constraint failed:" in ln:
            return ln[ln.index("constraint failed:") :]
    for ln in lines:
        if ln.startswith("error:") and not any(g in ln for g in GENERIC):
            return ln
    return None


def error(exc: BaseException, stage: str) -> JSON:
    out: JSON = {"class": type(exc).__name__, "builtin": nearest_builtin(exc),
                 "message": first_line(exc), "stage": stage}  # fmt: skip
    diag = diagnostic(exc)
    if diag is not None:
        out["diagnostic"] = diag
    return out


def fix(v: Any) -> Any:
    if isinstance(v, list):
        return [fix(u) for u in v]
    return float(v) if isinstance(v, str) else v


def feed(entry: JSON) -> np.ndarray:
    return np.asarray(fix(entry["values"]), dtype=np.dtype(entry["dtype"]))


def type_json(t: Any) -> JSON:
    return {"dtype": str(t.dtype.name), "shape": [str(d) for d in t.shape]}


def run_case(session: Any, build: Any, case: JSON) -> JSON:
    types = [[i["dtype"], i["shape"]] for i in case["inputs"]]
    out: JSON = {}
    try:
        if "inner_expression" in case:
            out["inner_type"] = type_json(
                build("inner", types, case["inner_expression"]).output_types[0]
            )
        graph = build("case", types, case["expression"])
        out["output_type"] = type_json(graph.output_types[0])
    except Exception as exc:
        out["error"] = error(exc, "build")
        return out
    try:
        model = session.load(graph)
    except Exception as exc:
        out["error"] = error(exc, "compile")
        return out
    try:
        (result,) = model.execute(*[feed(i) for i in case["inputs"]])
        array = result.to_numpy()
        out["output"] = {"dtype": str(result.dtype.name), "shape": list(array.shape),
                         "values": to_jsonable(array)}  # fmt: skip
    except Exception as exc:
        out["error"] = error(exc, "execute")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", metavar="PREFIX",
                        help="record only the cases whose name starts with PREFIX, keeping "
                        "the others' records from the file")  # fmt: skip
    only = parser.parse_args().only
    kept: dict[str, JSON] = {}
    if only is not None:
        kept = {c["name"]: c for c in json.loads(OUT.read_text(encoding="utf-8"))["cases"]}
    version = importlib.metadata.version("max")
    if version != EXPECTED_VERSION:
        print(f"warning: recording max {version}, docstring says {EXPECTED_VERSION}",
              file=sys.stderr)  # fmt: skip
    env: dict[str, Any] = {"__name__": "max_runtime_program"}
    exec(PROGRAM, env)
    session = InferenceSession(devices=[CPU()])
    recorded: list[JSON] = []
    for k, case in enumerate(CASES):
        if only is not None and not case["name"].startswith(only) and case["name"] in kept:
            recorded.append(kept[case["name"]])
            continue
        result = run_case(session, env["build"], case)
        recorded.append(case | result)
        what = result.get("error", {}).get("stage", "ok")
        print(f"  [{k + 1}/{len(CASES)}] {case['name']}: {what}", file=sys.stderr, flush=True)
    payload: JSON = {
        "version": version,
        "execution": "InferenceSession(devices=[CPU()]).load(graph).execute(*inputs)",
        "program": PROGRAM,
        "conventions": {
            "cases": "name, inputs (dtype, shape, values: the arrays fed to execute), "
            "expression (the graph's one output, over the inputs a and b, built by "
            "program's build()), inner_expression (where the expression reads a value back "
            "through a cast to float32: the value before that cast; inner_type is its type)",
            "result": "output_type (the graph's output TensorType: dtype name, str of each "
            "dim) and output (dtype, shape, values as nested lists; NaN and infinities as "
            "strings) or error: class, builtin (nearest builtin base class), message (first "
            "line), stage (build | compile | execute) and diagnostic (the compiler's "
            "informative line, for a compile failure)",
        },
        "cases": recorded,
    }
    text = json.dumps(payload, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False)
    OUT.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)} ({OUT.stat().st_size} bytes)", file=sys.stderr)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(0)  # (MAX's engine aborts in its teardown after a failed compile)


if __name__ == "__main__":
    raise SystemExit(main())
