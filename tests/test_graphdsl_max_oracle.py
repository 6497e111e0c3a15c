"""graphdsl.max against max.graph 26.7 itself, case by case (issue 25).

tests/data/max_graph_api.json holds what the real ``max`` package did with 817 calls
(scripts/record_max_graph.py, ``--api-only``): MAX's type objects (TensorType, BufferType,
DeviceRef, Shape), dimensions (Dim, StaticDim, SymbolicDim, AlgebraicDim: construction,
arithmetic, equality, hashing, printing), every DType member's methods, the result types of
a broad set of op calls (dtype, shape as each Dim's repr, device), and the exception of bad
calls (axes out of range, operands on different devices, dtypes that do not fit, ranks,
empty inputs). Each case is replayed here on graphdsl.max with the same source and input
types, and must give the same result, or an exception that is an instance of the builtin
class MAX raised (graphdsl's own error class, MAX's builtin base) and whose message carries
MAX's words: each part of the first line of MAX's message that is MAX's wording rather than
the call's values (:func:`max_words`), so that a ``match=`` written for MAX passes;
graphdsl's own explanation may follow.

``DIFFERENCES`` lists the cases where graphdsl.max does not do what max.graph does, each
with what graphdsl gives instead (pinned: a changed behaviour fails here) and why; each
must still differ (so that a fixed one leaves the list). ``MESSAGE_DIFFERENCES`` lists the
refusals of MAX's class whose message does not carry MAX's words, each with why; each must
still lack them.
"""

from __future__ import annotations

import builtins
import json
import re
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
_TENSOR_BOUND = "TypeError: bounds given as tensors need the result's dimension, as MAX asks"
_AXIS = "ShapeError: is out of range for a value of rank 2; use an axis from -2 to 1"
# case: (what graphdsl.max gives: the result as describe() gives it, or "Class: fragment" of
# its exception, the fragment in its message; why)
DIFFERENCES: dict[str, tuple[dict[str, Any] | str, str]] = {
    # dims
    "dims: f32[n,3] | ops.concat([a, a], axis=0).shape": (
        {"value": "Shape", "dims": ["Dim('n') * Dim(2)", "Dim(3)"]},
        "MAX prints n + n as an internal attribute (a `mul` its printer does not know); "
        "graphdsl gives Dim('n') * Dim(2), the value",
    ),
    "dims: f32[n,m] | ops.concat([a, a], axis=1).shape": (
        {"value": "Shape", "dims": ["Dim('n')", "Dim('m') * Dim(2)"]},
        "as above, for m + m",
    ),
    "dims: f32[1,n,n,8] | ops.max_pool2d(a, (2, 2), stride=2).shape": (
        "ShapeError: H is symbolic ('n') and the pooled size cannot be written",
        f"{_CORE}'s pooling refuses a symbolic size it cannot write as a name plus a count "
        "(MAX: n // 2)",
    ),
    "dims: f32[1,n,n,8] | ops.conv2d(a, ops.constant(np.zeros((3, 3, 8, 4), np.float32), "
    "device=cpu)).shape": (
        "ShapeError: H is symbolic ('n') and its output size would be negative",
        f"{_CORE}'s convolution refuses a symbolic spatial size (MAX: n - 2)",
    ),
    # ops
    "ops: f32[4,3], i64[] | a[:b]": (
        _TENSOR_BOUND,
        "MAX fails an assert (AssertionError); graphdsl raises a TypeError that says to give "
        "the result's dimension: (slice(None, b), 'out_dim')",
    ),
    "ops: f32[n,3] | a[(slice(1, None), 'm')]": (
        {"value": "tensor", "dtype": "float32", "shape": ["Dim('m')", "Dim(3)"], "device": "cpu:0"},
        "graphdsl names a slice of a symbolic dimension (MAX: TypeError)",
    ),
    "ops: f32[2,5] | ops.irfft(a, 8)": (
        {"value": "tensor", "dtype": "float32", "shape": ["Dim(2)", "Dim(8)"], "device": "cpu:0"},
        "MAX computes irfft on GPUs only; graphdsl on any device",
    ),
    # errors: calls MAX accepts that graphdsl refuses, or refuses with another builtin
    "errors: f32[2,3] | ops.softmax(a, axis=2)": (
        _AXIS,
        "MAX accepts an axis out of range; graphdsl refuses it",
    ),
    "errors: f32[2,3] | ops.bottom_k(a, 2, axis=-3)": (
        _AXIS,
        "MAX accepts an axis out of range; graphdsl refuses it",
    ),
    "errors: f32[2,3] | ops.pad(a, [1, 1])": (
        "OpTypeError: paddings must be an int or 4 ints, got [1, 1]",
        "MAX fails an assert (AssertionError); graphdsl raises an OpTypeError saying how many "
        "paddings it needs",
    ),
    "errors: f32[1,8,8,2], f32[3,4] | ops.roi_align(a, b, 2, 2)": (
        "ShapeError: roi_align needs rois of shape (M, 5)",
        "MAX accepts rois of 4 columns at build time; graphdsl needs the 5 (batch index and box)",
    ),
    "errors: buf:f32[2,3], f32[3,2] | ops.buffer_store(a, b)": (
        "ShapeError: buffer_store: the source's shape [Dim(3), Dim(2)] is not the buffer's",
        "MAX accepts a store of another shape at build time; graphdsl refuses it",
    ),
    "errors: f32[2,3] | bool(a)": (
        "TypeError: a TensorValue has no truth value at graph-build time",
        "MAX's TensorValue is always true; graphdsl raises TypeError (a value has no truth "
        "value when the graph is built)",
    ),
}

_MLIR = (
    "MAX's first line is MLIR's \"Failed to create op '<op>':\", the reason on the lines "
    "after it (not recorded); graphdsl finds the mistake before it makes a node and names it"
)
# refusals of MAX's class whose message does not carry MAX's words: case: why
MESSAGE_DIFFERENCES: dict[str, str] = {
    "ops: f32[4,3], i64[] | a[b:]": "MAX's TypeError is its Dim conversion failing on the "
    'tensor bound ("Unsupported dimension type TensorValue(...)"; for a[:b] it fails an '
    "assert instead); graphdsl says what to give: the result's dimension",
    "errors: f32[2,3] | ops.top_k(a, 2, axis=2)": _MLIR,
    "errors: f32[2,3] | ops.top_k(a, 5)": _MLIR,
    "errors: f32[2,3] | a[5]": _MLIR,
    "errors: f32[2,3] | a[-3]": _MLIR,
    "errors: f32[2,4], f32[4]@gpu, f32[4] | ops.layer_norm(a, b, c, 1e-5)": _MLIR,
    "errors: f32[4], f32[2] | ops.gather(a, b, 0)": _MLIR,
    "errors: i32[2], i32[2] | ops.logical_and(a, b)": _MLIR,
    "errors: i32[2] | ops.logical_not(a)": _MLIR,
    "errors: i32[] | ops.cond(a, None, lambda: None, lambda: None)": _MLIR,
    "errors: b[2] | ops.cond(a, None, lambda: None, lambda: None)": _MLIR,
    "errors: i32[2,2], f32[2,2] | ops.matmul(a, b)": _MLIR,
    "errors: f32[2,3], f32[4,5] | ops.matmul(a, b)": _MLIR,
    "errors: i32[] | ops.while_loop(a, lambda v: v, lambda v: v + 1)": _MLIR,
    "errors: f32[2,3], f32[4] | ops.add(a, b)": _MLIR,
    "errors: f32[n], f32[m] | ops.add(a, b)": _MLIR,
    "errors: f32[2,3] | ops.broadcast_to(a, [3])": _MLIR,
    "errors: f32[2,3] | ops.broadcast_to(a, [2, 4])": _MLIR,
    "errors: f32[1,5,5,2], f32[3,3,3,4] | ops.conv2d(a, b)": _MLIR,
    "errors: f32[4,4,2] | ops.max_pool2d(a, (2, 2))": _MLIR,
    "errors: buf:f32[2,3], i32[2,3] | ops.buffer_store(a, b)": _MLIR,
    "errors: f32[2], f32[3] | ops.call(g.add_subgraph('s2', lambda v: v * 2, "
    "input_types=[TensorType(DType.float32, [2], cpu)]), b)": _MLIR,
}

# what a message of MAX's holds besides MAX's words: the call's values (numbers, quoted
# names, reprs such as Dim(3) or TensorValue(...), lists, parenthesised values, classes,
# dtypes), the "=" that joins a name to its value, and the ends of its sentences
_NOT_WORDS = re.compile(
    r"""
      <[^<>]*>                                  # <class 'float'>
    | \w+\((?!s\))(?:[^()]|\([^()]*\))*\)       # a repr: Dim(3), TensorValue(...)
    | \[(?:[^\[\]]|\[[^\[\]]*\])*\]             # a list
    | \((?:[^()]|\([^()]*\))*\)                 # a parenthesised value
    | '[^']*' | "[^"]*"                         # a quoted name or value
    | DType\.\w+                                # a dtype as MAX prints it
    | -?\b\d+(?:\.\d+)?\b(?:\*\*\d+)?           # a number
    | =                                         # name=value
    | [.;:!?](?=\s|$)                           # a sentence's end
    """,
    re.X,
)


def max_words(message: str) -> list[str]:
    """The parts of MAX's message (its first line, as recorded) that are MAX's wording: what
    is left between the call's values, each of two words or more.

    >>> max_words("Invalid axis=5 for input x.rank=2")
    ['Invalid axis', 'for input x.rank']
    >>> max_words("Squeeze dim must be 1, got axis=0, shape=[Dim(2), Dim(3)]")
    ['Squeeze dim must be', 'got axis']
    >>> max_words("Failed to create op 'MatmulOp':"), max_words("")
    (['Failed to create op'], [])
    """
    pieces = (p.strip(" ,[(") for p in _NOT_WORDS.split(message))
    return [p for p in pieces if len(re.findall(r"[A-Za-z]{2,}", p)) >= 2]


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
    """graphdsl gives MAX's result, or raises MAX's builtin class (its message: says())."""
    if "error" in case:
        return isinstance(got, getattr(builtins, case["builtin"]))
    if isinstance(got, Exception):
        return False
    want = case["result"]
    if want["value"] == "Graph":  # (MAX's repr is its MLIR text)
        return bool(got["value"] == "Graph")
    return bool(got == want)


def says(case: dict[str, Any], got: Any) -> bool:
    """graphdsl's exception carries MAX's words for the refusal."""
    return isinstance(got, Exception) and all(w in str(got) for w in max_words(case["message"]))


def shown(got: Any) -> Any:
    return f"{type(got).__name__}: {got}" if isinstance(got, Exception) else got


def gives(got: Any, pinned: dict[str, Any] | str) -> bool:
    """graphdsl's result is the pinned one, or its exception is of the pinned class (by name)
    with the pinned fragment in its message."""
    if isinstance(pinned, dict):
        return bool(got == pinned)
    name, _, fragment = pinned.partition(": ")
    return isinstance(got, Exception) and type(got).__name__ == name and fragment in str(got)


def test_recorded_from_max_26_7() -> None:
    assert RECORDED["version"] == "26.7.0"
    assert len(CASES) == 817
    assert all(key(c) in {key(d) for d in CASES} for c in CASES)
    assert len({key(c) for c in CASES}) == len(CASES)  # each case once


@pytest.mark.parametrize("case", CASES, ids=[key(c) for c in CASES])
def test_case_as_max_graph_does(case: dict[str, Any]) -> None:
    got = replay(case)
    want = case.get("result") or f"{case['error']} ({case['builtin']}): {case['message']}"
    difference = DIFFERENCES.get(key(case))
    if difference is not None:
        pinned, why = difference
        assert not agrees(case, got), f"listed as a difference ({why}) but now agrees"
        assert gives(got, pinned), f"graphdsl.max gave {shown(got)}, not {pinned} as listed"
        return
    assert agrees(case, got), f"max.graph: {want}\ngraphdsl.max: {shown(got)}"
    if "error" not in case:
        return
    unlike = MESSAGE_DIFFERENCES.get(key(case))
    if unlike is not None:
        assert not says(case, got), f"listed as a message difference ({unlike}) but now says it"
        return
    assert says(case, got), (
        f"MAX's words {max_words(case['message'])} are not in graphdsl.max's message\n"
        f"max.graph: {want}\ngraphdsl.max: {shown(got)}"
    )


def test_differences_are_recorded_cases() -> None:
    keys = {key(c) for c in CASES}
    assert set(DIFFERENCES) <= keys
    errors = {key(c) for c in CASES if "error" in c}
    assert set(MESSAGE_DIFFERENCES) <= errors - set(DIFFERENCES)
    for k in MESSAGE_DIFFERENCES:  # (each has MAX's words to compare)
        assert max_words(next(c["message"] for c in CASES if key(c) == k)), k


def tally() -> dict[str, tuple[int, int]]:
    """Per kind of case: (recorded, agreeing: MAX's result or MAX's builtin class)."""
    recorded, agreeing = Counter[str](), Counter[str]()
    for c in CASES:
        recorded[c["kind"]] += 1
        agreeing[c["kind"]] += agrees(c, replay(c))
    return {k: (recorded[k], agreeing[k]) for k in recorded}


def message_tally() -> dict[str, tuple[int, int, int]]:
    """Per kind, of the refusals of MAX's class: (how many, those whose message has MAX's
    words to compare, those whose graphdsl message carries them)."""
    counts: dict[str, list[int]] = {}
    for c in CASES:
        if "error" not in c or key(c) in DIFFERENCES:
            continue
        n = counts.setdefault(c["kind"], [0, 0, 0])
        n[0] += 1
        n[1] += bool(max_words(c["message"]))
        n[2] += bool(max_words(c["message"])) and says(c, replay(c))
    return {k: (a, b, c) for k, (a, b, c) in counts.items()}


def test_tally_is_the_documented_one() -> None:
    """The counts docs/max.md states: per kind, the recorded cases and those that agree
    (all but DIFFERENCES)."""
    counts = tally()
    different = Counter(k.split(":", 1)[0] for k in DIFFERENCES)
    assert {k: (n, n - different[k]) for k, (n, _) in counts.items()} == counts
    assert counts == {
        "types": (92, 92),
        "dims": (130, 126),
        "dtype": (288, 288),
        "ops": (191, 188),
        "errors": (116, 110),
    }
    text = (Path(__file__).parent.parent / "docs" / "max.md").read_text()
    for kind, (n, ok) in counts.items():
        assert f"| {kind} | {n} | {ok} |" in text


def test_message_tally() -> None:
    """Of the refusals of MAX's class, those with MAX's words in graphdsl's message: all but
    MESSAGE_DIFFERENCES and those where MAX's message has no words to compare (an empty
    ZeroDivisionError, KeyError('float32'))."""
    counts = message_tally()
    wordless = Counter(c["kind"] for c in CASES
                       if "error" in c and key(c) not in DIFFERENCES
                       and not max_words(c["message"]))  # fmt: skip
    listed = Counter(k.split(":", 1)[0] for k in MESSAGE_DIFFERENCES)
    assert {k: (n, n - wordless[k], n - wordless[k] - listed[k]) for k, (n, _, _) in
            counts.items()} == counts  # fmt: skip
    assert counts == {
        "types": (6, 6, 6),
        "dims": (15, 13, 13),
        "dtype": (6, 5, 5),
        "ops": (5, 5, 4),
        "errors": (101, 101, 80),
    }
