"""graphdsl.max against max.graph 26.7 itself, case by case (issue 25).

tests/data/max_graph_api.json holds what the real ``max`` package did with 817 calls
(scripts/record_max_graph.py, ``--api-only``): MAX's type objects (TensorType, BufferType,
DeviceRef, Shape), dimensions (Dim, StaticDim, SymbolicDim, AlgebraicDim: construction,
arithmetic, equality, hashing, printing), every DType member's methods, the result types of
a broad set of op calls (dtype, shape as each Dim's repr, device), and the exception of bad
calls (axes out of range, operands on different devices, dtypes that do not fit, ranks,
empty inputs). Each case is replayed here on graphdsl.max with the same source and input
types, and must give the same result, or an exception that is an instance of the builtin
class MAX raised (graphdsl's own error class and message, MAX's builtin base).

``DIFFERENCES`` lists the cases where graphdsl.max does not do what max.graph does, each
with why; each must still differ (so that a fixed one leaves the list).
"""

from __future__ import annotations

import builtins
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphdsl.max import (
    AlgebraicDim,
    BufferType,
    BufferValue,
    DeviceRef,
    Dim,
    DType,
    Graph,
    Shape,
    StaticDim,
    SymbolicDim,
    TensorType,
    TensorValue,
    ops,
)

DATA = Path(__file__).parent / "data"
RECORDED: dict[str, Any] = json.loads((DATA / "max_graph_api.json").read_text())
SHORT: dict[str, str] = json.loads((DATA / "max_graph_promotion.json").read_text())["short_names"]
FROM_SHORT = {v: k for k, v in SHORT.items()}
CASES: list[dict[str, Any]] = RECORDED["cases"]


def key(case: dict[str, Any]) -> str:
    return f"{case['kind']}: {', '.join(case['inputs'])} | {case['source']}"


_CORE = "graphdsl's core"
DIFFERENCES: dict[str, str] = {
    # dims
    "dims: f32[n,3] | ops.concat([a, a], axis=0).shape": "MAX prints n + n as an internal "
    "attribute (a `mul` its printer does not know); graphdsl gives Dim('n') * Dim(2), the value",
    "dims: f32[n,m] | ops.concat([a, a], axis=1).shape": "as above, for m + m",
    "dims: f32[n,3] | ops.split(a, [1, a.shape[0] - 1], axis=0)[1].shape": "MAX's split calls "
    "int() on each size (TypeError for an algebraic one); graphdsl splits by it",
    "dims: f32[n,3] | ops.shape_to_tensor(a.shape).shape": "graphdsl makes shape tensors of "
    "static shapes only (the size of a symbolic dimension as a tensor needs a Shape op in "
    f"{_CORE})",
    "dims: f32[1,n,n,8] | ops.max_pool2d(a, (2, 2), stride=2).shape": f"{_CORE}'s pooling "
    "refuses a symbolic size it cannot write as a name plus a count (MAX: n // 2)",
    "dims: f32[1,n,n,8] | ops.conv2d(a, ops.constant(np.zeros((3, 3, 8, 4), np.float32), "
    "device=cpu)).shape": f"{_CORE}'s convolution refuses a symbolic spatial size (MAX: n - 2)",
    # ops
    "ops: f32[2,3] | ops.cast(a, DType.float8_e4m3fnuz)": f"{_CORE} has no fnuz float dtypes "
    "(UnsupportedError)",
    "ops: f32[2,3] | ops.cast(a, DType.float4_e2m1fn)": f"{_CORE} has no sub-byte float dtypes "
    "(UnsupportedError)",
    "ops: f32[4,3], i64[] | a[:b]": "MAX fails an assert (AssertionError); graphdsl raises a "
    "TypeError that says to give the result's dimension: (slice(None, b), 'out_dim')",
    "ops: f32[n,3] | a[(slice(1, None), 'm')]": "graphdsl names a slice of a symbolic dimension "
    "(MAX: TypeError)",
    "ops: f32[2,5] | ops.irfft(a, 8)": "MAX computes irfft on GPUs only; graphdsl on any device",
    # errors: calls MAX accepts that graphdsl refuses, or refuses with another builtin
    "errors: f32[2,3] | ops.softmax(a, axis=2)": "MAX accepts an axis out of range; graphdsl "
    "refuses it",
    "errors: f32[2,3] | ops.bottom_k(a, 2, axis=-3)": "MAX accepts an axis out of range; "
    "graphdsl refuses it",
    "errors: f32[2,3] | ops.pad(a, [1, 1])": "MAX fails an assert (AssertionError); graphdsl "
    "raises an OpTypeError saying how many paddings it needs",
    "errors: f32[1,8,8,2], f32[3,4] | ops.roi_align(a, b, 2, 2)": "MAX accepts rois of 4 "
    "columns at build time; graphdsl needs the 5 (batch index and box)",
    "errors: buf:f32[2,3], f32[3,2] | ops.buffer_store(a, b)": "MAX accepts a store of another "
    "shape at build time; graphdsl refuses it",
    "errors: f32[2,3] | bool(a)": "MAX's TensorValue is always true; graphdsl raises TypeError "
    "(a value has no truth value when the graph is built)",
}


def parse(spec: str) -> TensorType | BufferType:
    buffer = spec.startswith("buf:")
    body = spec.removeprefix("buf:")
    device = DeviceRef.GPU() if body.endswith("@gpu") else DeviceRef.CPU()
    short, dims = body.removesuffix("@gpu")[:-1].split("[")
    shape = [int(d) if d.lstrip("-").isdigit() else d for d in dims.split(",") if d]
    return (BufferType if buffer else TensorType)(DType[FROM_SHORT[short]], shape, device)


def describe(v: Any) -> dict[str, Any]:
    """A result as the recorder describes MAX's (scripts/record_max_graph.py)."""
    if isinstance(v, (TensorValue, BufferValue)):
        return {"value": "buffer" if isinstance(v, BufferValue) else "tensor",
                "dtype": v.dtype.name, "shape": [repr(d) for d in v.shape],
                "device": str(v.device)}  # fmt: skip
    if isinstance(v, (TensorType, BufferType)):
        return {"value": type(v).__name__, "dtype": v.dtype.name,
                "shape": [repr(d) for d in v.shape], "device": str(v.device)}  # fmt: skip
    if isinstance(v, Shape):
        return {"value": "Shape", "dims": [repr(d) for d in v]}
    if isinstance(v, Dim):
        return {"value": type(v).__name__, "repr": repr(v)}
    if isinstance(v, (list, tuple)):
        return {"value": type(v).__name__, "items": [describe(u) for u in v]}
    if isinstance(v, DType):
        return {"value": "DType", "name": v.name}
    if isinstance(v, DeviceRef):
        return {"value": "DeviceRef", "repr": str(v)}
    if isinstance(v, np.dtype):
        return {"value": "numpy.dtype", "repr": str(v)}
    return {"value": type(v).__name__, "repr": repr(v)}


def replay(case: dict[str, Any]) -> Any:
    """The case's source evaluated on graphdsl.max: the result, or the exception raised."""
    try:
        with Graph("api", input_types=[parse(s) for s in case["inputs"]]) as g:
            env: dict[str, Any] = {
                "ops": ops, "np": np, "DType": DType, "DeviceRef": DeviceRef,
                "TensorType": TensorType, "BufferType": BufferType, "Shape": Shape, "Dim": Dim,
                "StaticDim": StaticDim, "SymbolicDim": SymbolicDim, "AlgebraicDim": AlgebraicDim,
                "TensorValue": TensorValue, "BufferValue": BufferValue, "Graph": Graph, "g": g,
                "cpu": DeviceRef.CPU(), "gpu": DeviceRef.GPU(),
            }  # fmt: skip
            for name, value in zip("abcd", g.inputs, strict=False):
                env[name] = value.buffer if isinstance(value, BufferValue) else value.tensor
            return describe(eval(case["source"], env))
    except Exception as e:  # (the exception is the result)
        return e


def agrees(case: dict[str, Any], got: Any) -> bool:
    if "error" in case:
        return isinstance(got, getattr(builtins, case["builtin"]))
    if isinstance(got, Exception):
        return False
    want = case["result"]
    if want["value"] == "Graph":  # (MAX's repr is its MLIR text)
        return bool(got["value"] == "Graph")
    return bool(got == want)


def test_recorded_from_max_26_7() -> None:
    assert RECORDED["version"] == "26.7.0"
    assert len(CASES) == 817
    assert all(key(c) in {key(d) for d in CASES} for c in CASES)
    assert len({key(c) for c in CASES}) == len(CASES)  # each case once


@pytest.mark.parametrize("case", CASES, ids=[key(c) for c in CASES])
def test_case_as_max_graph_does(case: dict[str, Any]) -> None:
    got = replay(case)
    why = DIFFERENCES.get(key(case))
    if why is not None:
        assert not agrees(case, got), f"listed as a difference ({why}) but now agrees"
        return
    want = case.get("result") or f"{case['error']} ({case['builtin']}): {case['message']}"
    shown = f"{type(got).__name__}: {got}" if isinstance(got, Exception) else got
    assert agrees(case, got), f"max.graph: {want}\ngraphdsl.max: {shown}"


def test_differences_are_recorded_cases() -> None:
    assert set(DIFFERENCES) <= {key(c) for c in CASES}


def tally() -> dict[str, tuple[int, int]]:
    """Per kind of case: (recorded, agreeing)."""
    recorded, agreeing = Counter[str](), Counter[str]()
    for c in CASES:
        recorded[c["kind"]] += 1
        agreeing[c["kind"]] += agrees(c, replay(c))
    return {k: (recorded[k], agreeing[k]) for k in recorded}


def test_tally_is_the_documented_one() -> None:
    """The counts docs/max.md states: per kind, the recorded cases and those that agree
    (all but DIFFERENCES)."""
    counts = tally()
    different = Counter(k.split(":", 1)[0] for k in DIFFERENCES)
    assert {k: (n, n - different[k]) for k, (n, _) in counts.items()} == counts
    assert counts == {
        "types": (92, 92),
        "dims": (130, 124),
        "dtype": (288, 288),
        "ops": (191, 186),
        "errors": (116, 110),
    }
    text = (Path(__file__).parent.parent / "docs" / "max.md").read_text()
    for kind, (n, ok) in counts.items():
        assert f"| {kind} | {n} | {ok} |" in text
