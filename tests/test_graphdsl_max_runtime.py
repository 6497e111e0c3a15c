"""graphdsl.max against what max 26.7 computes on its CPU: bool arithmetic, and casts through
the sub-byte and fnuz float dtypes.

tests/data/max_graph_runtime.json holds, per case, one graph built by a small program (its
exact text is recorded) from input types and one expression over the inputs ``a``, ``b``,
and what ``max.engine.InferenceSession(devices=[CPU()])`` did with it
(scripts/record_max_runtime.py): the output TensorType, then the output's dtype, shape and
values, or the exception and the stage it was raised at (build, compile or execute). The
cases: bool tensors ``[F, F, T, T]`` and ``[F, T, F, T]`` through arithmetic ops and
operators, Python scalars, unary ops, reductions, ``[2, 2]`` bool matmuls and a ``[3, 4]`` bool
sum; and ``[0.0, 0.3, -1.7, 3.0, 500.0, -0.0, inf, nan]`` (float32) cast to each of MAX's
sub-byte, fnuz and float8 dtypes and back, and an ``add`` of two values of that dtype; and
resizes of int32, uint8, bool and float32 images in each interpolation mode (``DIFFERS``:
where graphdsl computes other values on purpose).

Each case runs here on graphdsl.max with the program's imports changed and nothing else:

- MAX refused to build it: graphdsl must refuse too, with an instance of MAX's builtin class;
- otherwise graphdsl must build it with MAX's output type (dtype and each dim), and the
  dtype MAX gave the value read back through a cast (``inner_type``);
- MAX ran it: ``gd.evaluate`` and the exported ONNX model on onnxruntime must both give
  MAX's output bit for bit (dtype, shape, every value, zero signs, NaN places);
- MAX's CPU compiler refused it: for arithmetic on bool (not numeric to its SIMD
  arithmetic) graphdsl refuses to evaluate or export it too (max-graph types it as bool, as
  max.graph does, and computes nothing); for the float8 and sub-byte dtypes ("not supported
  on device 'cpu:0'") graphdsl computes them, and its reference and its ONNX export must
  agree bit for bit.
"""

from __future__ import annotations

import builtins
import json
import re
from pathlib import Path
from typing import Any

import floats
import numpy as np
import pytest
from backend import export, run

import graphdsl as gd

DATA = Path(__file__).parent / "data"
RECORDED: dict[str, Any] = json.loads((DATA / "max_graph_runtime.json").read_text())
CASES: list[dict[str, Any]] = RECORDED["cases"]

IMPORTS = {
    "from max.dtype import DType": "from graphdsl.max import DType",
    "from max.graph import DeviceRef, Graph, TensorType, ops": (
        "from graphdsl.max import DeviceRef, Graph, TensorType, ops"
    ),
}


def on_graphdsl(source: str) -> str:
    """``source`` with its max imports changed to graphdsl.max, and nothing else."""
    lines = source.splitlines()
    changed = [IMPORTS.get(ln, ln) for ln in lines]
    assert [a for a, b in zip(lines, changed, strict=True) if a != b] == [
        ln for ln in lines if re.match(r"(from|import) max\b", ln)
    ], "a max import this test does not know how to change"
    return "\n".join(changed) + "\n"


PROGRAM: dict[str, Any] = {"__name__": "max_runtime_program"}
exec(on_graphdsl(RECORDED["program"]), PROGRAM)


def build(case: dict[str, Any], expression: str | None = None) -> Any:
    types = [[i["dtype"], i["shape"]] for i in case["inputs"]]
    return PROGRAM["build"]("case", types, expression or case["expression"])


def array(entry: dict[str, Any]) -> np.ndarray:
    """A recorded array (NaN and infinities as strings) as numpy, of its dtype."""

    def fix(v: Any) -> Any:
        return [fix(u) for u in v] if isinstance(v, list) else float(v) if isinstance(v, str) else v

    values: np.ndarray = np.asarray(fix(entry["values"]), dtype=np.dtype(entry["dtype"]))
    shape: tuple[int, ...] = tuple(entry["shape"])
    return values.reshape(shape)


def type_of(t: Any) -> dict[str, Any]:
    return {"dtype": t.dtype.name, "shape": [str(d) for d in t.shape]}


def outcome(f: Any) -> np.ndarray | Exception:
    try:
        (out,) = f()
        return np.asarray(out)
    except Exception as e:  # (the exception is the result)
        return e


def test_recorded_from_max_26_7() -> None:
    assert RECORDED["version"] == "26.7.0"
    assert RECORDED["execution"] == "InferenceSession(devices=[CPU()]).load(graph).execute(*inputs)"
    assert len({c["name"] for c in CASES}) == len(CASES)


# bool cases where graphdsl differs from what MAX's CPU does, each on purpose
BEYOND = {
    # the first True (False): well defined, and computed; MAX's compiler has no bool ArgMax
    "ops.argmax(a, axis=-1)": "computed",
    "ops.argmin(a, axis=-1)": "computed",
}
# resize cases where graphdsl computes other values than MAX's CPU, each on purpose
DIFFERS = {
    # MAX's bilinear weights carry float32 rounding (1.4999999 for 1.5, 2.9999998 for 3);
    # graphdsl's are the half-pixel rule's exact fractions, rounded once
    "resize/bilinear float32[2, 2, 1, 1] to [4, 3, 1, 1]": "exact weights",
    # the bicubic value at (0, 0) is -1.35: MAX converts it to uint8 as 255 (wrapping -1);
    # graphdsl's float -> integer casts truncate and saturate (docs/semantics.md), giving 0
    "resize/bicubic uint8[1, 1, 2, 2] to [1, 1, 3, 3]": "saturating cast",
    # MAX 26.7's CPU bicubic of N and C gives values no interpolation makes (0, 1, 2.8e-45
    # for [[0, 1], [2, 3]]: its kernel reads memory as if only H and W were resized);
    # graphdsl resizes N and C as it does H and W
    "resize/bicubic float32[2, 2, 1, 1] to [4, 3, 1, 1]": "N and C interpolated",
}
REFUSED_WHERE_MAX_RUNS = {
    # MAX folds a multiplication by a True literal away before its compiler sees it;
    # graphdsl refuses bool multiplication alike with or without a literal
    "a * True": "refused",
}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case_as_max_runs_it(case: dict[str, Any]) -> None:
    err = case.get("error")
    if err is not None and err["stage"] == "build":
        with pytest.raises(getattr(builtins, err["builtin"])):
            build(case)
        return
    graph = build(case)
    assert type_of(graph.output_types[0]) == case["output_type"], case["expression"]
    if "inner_type" in case:
        inner = build(case, case["inner_expression"])
        assert type_of(inner.output_types[0]) == case["inner_type"]
    feeds = [array(i) for i in case["inputs"]]
    reference = outcome(lambda: gd.evaluate(graph, feeds))
    onnx = outcome(lambda: run(export(graph, check="full"), feeds))
    if err is None and case["expression"] in REFUSED_WHERE_MAX_RUNS:
        for got in (reference, onnx):
            assert "types arithmetic on bool as max.graph does" in str(got), got
        return
    if case["name"] in DIFFERS:
        assert isinstance(reference, np.ndarray) and isinstance(onnx, np.ndarray)
        assert not np.array_equal(reference, array(case["output"])), "now agrees with MAX"
        if reference.dtype.kind == "f":  # (sums of up to 4 products: within the sum bound)
            bound = 8 * float(np.finfo(np.float32).eps) * float(np.abs(reference).max())
            floats.assert_close(onnx, reference, bound)
        else:
            floats.assert_bits(onnx, reference, case["expression"])
        return
    if err is None:
        want = array(case["output"])
        for name, got in (("gd.evaluate", reference), ("onnxruntime", onnx)):
            assert not isinstance(got, Exception), f"{name} raised {type(got).__name__}: {got}"
            floats.assert_bits(got, want, f"{name}: {case['expression']}")
        return
    # MAX's CPU could not compile it. Arithmetic on bool (MAX's kernels need numbers):
    # graphdsl refuses to compute it too, in evaluate and export alike, saying why
    if all(i["dtype"] == "bool" for i in case["inputs"]) and case["expression"] not in BEYOND:
        for got in (reference, onnx):
            assert isinstance(got, Exception), f"{case['expression']} computed: {got!r}"
            assert "types arithmetic on bool as max.graph does" in str(got), got
        return
    # a dtype MAX's CPU lacks kernels for (float8, the sub-byte floats): graphdsl computes
    # it, and its two evaluations agree bit for bit
    for name, got in (("gd.evaluate", reference), ("onnxruntime", onnx)):
        assert not isinstance(got, Exception), f"{name} raised {type(got).__name__}: {got}"
    assert isinstance(reference, np.ndarray) and isinstance(onnx, np.ndarray)
    floats.assert_bits(onnx, reference, f"onnxruntime against gd.evaluate: {case['expression']}")
