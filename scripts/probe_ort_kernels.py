#!/usr/bin/env python3
"""Probe which (ONNX op, element type) pairs onnxruntime's CPU execution provider can run.

For every op case in ``build_cases()`` and every element type in ``TYPES`` a minimal opset-21
model is built with ``onnx.helper``, validated with strict shape inference plus
``onnx.checker.check_model(full_check=True)`` and then run on ``CPUExecutionProvider``
twice: once with graph optimizations disabled and once with the default session options
(ORT_ENABLE_ALL).  Every probe is classified as

* ``ok``               -- ran, and ORT did not rewrite the node;
* ``ok_upcast``        -- ran, but only because ORT silently inserted Cast nodes around the op
                          (its InsertCastTransformer upcasts float16 ops that have no float16 CPU
                          kernel to float32 -- this happens even with optimizations disabled);
* ``no_kernel``        -- NOT_IMPLEMENTED / "Could not find an implementation";
* ``invalid``          -- the ONNX spec does not allow the type (checker / shape inference fails);
* ``unsupported_type`` -- ORT cannot represent the element type at all (e.g. complex);
* ``load_error`` / ``run_error`` -- any other failure while creating / running the session.

Usage::

    .venv/bin/python scripts/probe_ort_kernels.py              # print summary
    .venv/bin/python scripts/probe_ort_kernels.py --write      # also regenerate
                                                               # exporters/onnx/kernels/cpu.json
    .venv/bin/python scripts/probe_ort_kernels.py --semantics  # print semantic measurements
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from exporters.onnx._kernels import Kernels, KernelTable, dump_kernels

OPSET = 21
IR_VERSION = 10  # onnx>=1.23 defaults to IR 14, which onnxruntime 1.31 refuses (max 13).
REPO = Path(__file__).resolve().parent.parent
OUT_JSON = REPO / "exporters" / "onnx" / "kernels" / "cpu.json"

TYPES: list[str] = [
    "BOOL",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "FLOAT16",
    "BFLOAT16",
    "FLOAT",
    "DOUBLE",
    "COMPLEX64",
    "COMPLEX128",
    "FLOAT8E4M3FN",
    "FLOAT8E5M2",
    "FLOAT8E4M3FNUZ",
    "FLOAT8E5M2FNUZ",
]

NP_DTYPE: dict[str, Any] = {
    "BOOL": np.bool_,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "FLOAT16": np.float16,
    "BFLOAT16": ml_dtypes.bfloat16,
    "FLOAT": np.float32,
    "DOUBLE": np.float64,
    "COMPLEX64": np.complex64,
    "COMPLEX128": np.complex128,
    "FLOAT8E4M3FN": ml_dtypes.float8_e4m3fn,
    "FLOAT8E5M2": ml_dtypes.float8_e5m2,
    "FLOAT8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "FLOAT8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
}
# dtypes onnxruntime's python binding cannot take/return as numpy arrays directly
RAW_VIEW: dict[str, Any] = {
    "BFLOAT16": np.uint16,
    "FLOAT8E4M3FN": np.uint8,
    "FLOAT8E5M2": np.uint8,
    "FLOAT8E4M3FNUZ": np.uint8,
    "FLOAT8E5M2FNUZ": np.uint8,
}


def elem(t: str) -> int:
    return int(getattr(TensorProto, t))


def arr(values: Any, t: str) -> np.ndarray:
    if t == "BOOL":
        return np.asarray(values).astype(bool)
    return np.asarray(values, dtype=np.float64).astype(NP_DTYPE[t])


# --------------------------------------------------------------------------------------------
# Probe case description
# --------------------------------------------------------------------------------------------


InputSpec = tuple[str, str | None, Callable[[str], np.ndarray]]


@dataclass
class Case:
    key: str  # key in the generated table
    op: str
    # (input name, element type or None for "T", value builder) for graph inputs
    inputs: list[InputSpec]
    out_type: str | None = None  # None -> T
    attrs: dict[str, Any] = field(default_factory=dict)
    inits: list[onnx.TensorProto] = field(default_factory=list)
    node_inputs: list[str] | None = None  # defaults to input names followed by init names
    extra_outputs: int = 0  # outputs after the first that the op must declare (TopK: indices)
    out_shape: list[int | str] | None = None  # needed where the checker expands a function op


A23 = [[1, 2, 3], [4, 5, 6]]
B23 = [[2, 1, 2], [1, 3, 2]]


def a23(t: str) -> np.ndarray:
    return arr(A23, t) if t != "BOOL" else arr([[1, 0, 1], [0, 1, 0]], t)


def b23(t: str) -> np.ndarray:
    return arr(B23, t) if t != "BOOL" else arr([[1, 1, 0], [0, 1, 1]], t)


def b32(t: str) -> np.ndarray:
    return arr([[1, 2], [0, 1], [2, 1]], t)


def scalar(v: float) -> Callable[[str], np.ndarray]:
    return lambda t: arr(v, t)


def i64(name: str, values: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def build_cases() -> list[Case]:
    cases: list[Case] = []
    x: list[InputSpec] = [("x", None, a23)]
    xy: list[InputSpec] = [("x", None, a23), ("y", None, b23)]
    for op in ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"]:
        cases.append(Case(op, op, xy))
    cases.append(Case("Mod", "Mod", xy, attrs={"fmod": 0}))
    cases.append(Case("Mod_fmod", "Mod", xy, attrs={"fmod": 1}))
    cases.append(
        Case("Pow_exp_int64", "Pow", [("x", None, a23), ("y", "INT64", lambda _: b23("INT64"))])
    )
    cases.append(
        Case("Pow_exp_float", "Pow", [("x", None, a23), ("y", "FLOAT", lambda _: b23("FLOAT"))])
    )
    for op in [
        "Neg", "Abs", "Sign", "Exp", "Log", "Sqrt", "Sin", "Cos", "Tanh", "Sigmoid", "Relu",
        "Floor", "Ceil", "Round", "Reciprocal", "Not", "BitwiseNot", "Identity", "Erf", "Tan",
        "Asin", "Acos", "Atan", "Sinh", "Cosh", "Atanh",
    ]:  # fmt: skip
        cases.append(Case(op, op, x))
    for op in ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]:
        cases.append(Case(op, op, xy, out_type="BOOL"))
    for op in ["And", "Or", "Xor", "BitwiseAnd", "BitwiseOr", "BitwiseXor"]:
        cases.append(Case(op, op, xy))
    for op in ["IsNaN", "IsInf"]:
        cases.append(Case(op, op, x, out_type="BOOL"))
    cases.append(Case("MatMul", "MatMul", [("x", None, a23), ("y", None, b32)]))
    for op in ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"]:
        cases.append(Case(op, op, x, attrs={"keepdims": 1}, inits=[i64("axes", [1])]))
    cases.append(Case("Reshape", "Reshape", x, inits=[i64("shape", [3, 2])]))
    cases.append(Case("Transpose", "Transpose", x, attrs={"perm": [1, 0]}))
    cases.append(Case("Expand", "Expand", x, inits=[i64("shape", [2, 2, 3])]))
    cases.append(Case("Concat", "Concat", xy, attrs={"axis": 0}))
    cases.append(Case("Unsqueeze", "Unsqueeze", x, inits=[i64("axes", [0])]))
    cases.append(
        Case(
            "Squeeze",
            "Squeeze",
            [("x", None, lambda t: a23(t).reshape(1, 2, 3))],
            inits=[i64("axes", [0])],
        )
    )
    cases.append(
        Case(
            "Where",
            "Where",
            [("c", "BOOL", lambda _: arr([[1, 0, 1], [0, 1, 0]], "BOOL")), *xy],
        )
    )
    cases.append(Case("Softmax", "Softmax", x, attrs={"axis": -1}))
    cases.append(Case("ArgMax", "ArgMax", x, out_type="INT64", attrs={"axis": 1, "keepdims": 1}))
    cases.append(
        Case("Clip", "Clip", [("x", None, a23), ("lo", None, scalar(2)), ("hi", None, scalar(5))])
    )
    # indexing, scans, selection and norms (transformer ops)
    idx = ("i", "INT64", lambda _: arr([[1, 0], [0, 1]], "INT64"))
    cases.append(Case("Gather", "Gather", [("x", None, a23), idx], attrs={"axis": 1}))
    cases.append(Case("GatherElements", "GatherElements", [("x", None, a23), idx],
                      attrs={"axis": 1}))  # fmt: skip
    cases.append(Case("GatherND", "GatherND", [("x", None, a23),
                      ("i", "INT64", lambda _: arr([[1, 2], [0, 0]], "INT64"))]))  # fmt: skip
    upd = ("u", None, lambda t: a23(t)[:, :2])
    for red in ("none", "add", "max", "min", "mul"):
        suffix = "" if red == "none" else f"_{red}"
        cases.append(
            Case(
                f"ScatterElements{suffix}",
                "ScatterElements",
                [("x", None, a23), idx, upd],
                attrs={"axis": 1, "reduction": red},
            )
        )
        cases.append(
            Case(
                f"ScatterND{suffix}",
                "ScatterND",
                [
                    ("x", None, a23),
                    ("i", "INT64", lambda _: arr([[1], [0]], "INT64")),
                    ("u", None, lambda t: a23(t)[::-1]),
                ],
                attrs={"reduction": red},
            )
        )
    cases.append(Case("Slice", "Slice", x, inits=[i64("starts", [1]), i64("ends", [3]),
                                                 i64("axes", [1])]))  # fmt: skip
    cases.append(Case("Split", "Split", x, attrs={"axis": 1, "num_outputs": 1}))
    cases.append(Case("Tile", "Tile", x, inits=[i64("repeats", [2, 1])]))
    cases.append(Case("Trilu", "Trilu", x, attrs={"upper": 0}))
    cases.append(Case("Range", "Range", [("s", None, scalar(0)), ("e", None, scalar(3)),
                                         ("d", None, scalar(1))]))  # fmt: skip
    cases.append(
        Case(
            "OneHot",
            "OneHot",
            [
                ("i", None, lambda t: arr([0, 2, 1], t)),
                ("depth", "INT64", lambda _: arr(3, "INT64")),
                ("v", "FLOAT", lambda _: arr([0, 1], "FLOAT")),
            ],
            out_type="FLOAT",
        )
    )
    cases.append(Case("ArgMin", "ArgMin", x, out_type="INT64", attrs={"axis": 1, "keepdims": 1}))
    cases.append(Case("TopK", "TopK", x, inits=[i64("k", [2])], attrs={"axis": 1},
                      extra_outputs=1))  # fmt: skip
    cases.append(Case("CumSum", "CumSum", x, inits=[i64("axis", [1])]))
    cases.append(Case("ReduceLogSumExp", "ReduceLogSumExp", x, attrs={"keepdims": 1},
                      inits=[i64("axes", [1])]))  # fmt: skip
    cases.append(Case("LogSoftmax", "LogSoftmax", x, attrs={"axis": -1}))
    cases.append(
        Case(
            "LayerNormalization",
            "LayerNormalization",
            [
                ("x", None, a23),
                ("g", None, lambda t: arr([1, 2, 1], t)),
                ("b", None, lambda t: arr([0, 1, 0], t)),
            ],
            attrs={"axis": -1},
        )
    )
    for approx in ("none", "tanh"):
        cases.append(Case("Gelu" if approx == "none" else "Gelu_tanh", "Gelu", x,
                          attrs={"approximate": approx}))  # fmt: skip
    cases.append(
        Case(
            "GroupNormalization",
            "GroupNormalization",
            [
                ("x", None, lambda t: a23(t).reshape(1, 2, 3)),
                ("g", None, lambda t: arr([1, 2], t)),
                ("b", None, lambda t: arr([0, 1], t)),
            ],
            attrs={"num_groups": 2},
            out_shape=[1, 2, 3],
        )
    )
    cases.append(Case("Shape", "Shape", x, out_type="INT64"))
    # graphdsl.max's ops (issue 25): data-dependent NonZero, col2im, RoiAlign, random draws
    cases.append(Case("NonZero", "NonZero", x, out_type="INT64", out_shape=[2, "n"]))
    cases.append(Case("Col2Im", "Col2Im", [("x", None, lambda t: arr(np.ones((1, 4, 4)), t))],
                      inits=[i64("image_shape", [3, 3]), i64("block_shape", [2, 2])],
                      out_shape=[1, 1, 3, 3]))  # fmt: skip
    cases.append(Case("RoiAlign", "RoiAlign", [("x", None, lambda t: arr(np.ones((1, 1, 4, 4)), t)),
                      ("r", None, lambda t: arr([[0, 0, 3, 3]], t)),
                      ("b", "INT64", lambda _: arr([0], "INT64"))],
                      attrs={"output_height": 2, "output_width": 2},
                      out_shape=[1, 1, 2, 2]))  # fmt: skip
    for draw in ("RandomUniform", "RandomNormal"):  # no input: the type is an attribute
        cases.append(Case(draw, draw, [], attrs={"dtype": TYPE_ATTR, "shape": [2, 3]},
                          out_shape=[2, 3]))  # fmt: skip
    cases.extend(vision_cases())
    cases.extend(quant_cases())
    return cases


# --------------------------------------------------------------------------------------------
# Vision ops (exporters/onnx/_lower/vision.py; until these are measured it checks its own
# hand-measured table, MEASURED_CPU): convolution, pooling, Pad per mode, Resize per mode
# --------------------------------------------------------------------------------------------


def vision_cases() -> list[Case]:
    def image(t: str) -> np.ndarray:  # NCHW, 1 x 2 x 3 x 3
        return arr(np.arange(18).reshape(1, 2, 3, 3) % 5, t)

    img: list[InputSpec] = [("x", None, image)]
    with_filter: list[InputSpec] = [*img, ("w", None, lambda t: arr(np.ones((2, 2, 2, 2)), t))]
    cases = [
        Case("Conv", "Conv", with_filter),
        Case("ConvTranspose", "ConvTranspose", with_filter),
        Case("MaxPool", "MaxPool", img, attrs={"kernel_shape": [2, 2]}),
        Case("AveragePool", "AveragePool", img, attrs={"kernel_shape": [2, 2]}),
        Case("GlobalAveragePool", "GlobalAveragePool", img),
    ]
    pads = [i64("pads", [0, 0, 1, 1, 0, 0, 1, 1])]
    for mode in ("constant", "reflect", "edge"):
        key = "Pad" if mode == "constant" else f"Pad_{mode}"
        cases.append(Case(key, "Pad", img, attrs={"mode": mode}, inits=pads))
    sizes = [i64("sizes", [6, 5])]
    for mode in ("linear", "cubic"):  # (nearest is a Gather of exact indices there)
        attrs = {"mode": mode, "axes": [2, 3], "coordinate_transformation_mode": "half_pixel"}
        cases.append(
            Case(
                f"Resize_{mode}",
                "Resize",
                img,
                inits=sizes,
                node_inputs=["x", "", "", "sizes"],
                attrs=attrs,
            )
        )
    return cases


# --------------------------------------------------------------------------------------------
# Quantization (exporters/onnx/_lower/quant.py; until these are measured it checks its own
# hand-measured table, MEASURED_CPU). Keyed by the first input's type, as onnxruntime
# documents its kernels: QuantizeLinear by x's (int8 result; _uint8: uint8),
# DequantizeLinear by q's (float32 scale; _float16, _bfloat16: those scales)
# --------------------------------------------------------------------------------------------


def quant_cases() -> list[Case]:
    x: list[InputSpec] = [("x", None, a23), ("s", None, scalar(0.5))]
    cases = [
        Case(key, "QuantizeLinear", x, out_type=zp,
             inits=[numpy_helper.from_array(arr(3, zp), "z")])
        for key, zp in (("QuantizeLinear", "INT8"), ("QuantizeLinear_uint8", "UINT8"))
    ]  # fmt: skip
    for key, scale in (("DequantizeLinear", "FLOAT"), ("DequantizeLinear_float16", "FLOAT16"),
                       ("DequantizeLinear_bfloat16", "BFLOAT16")):  # fmt: skip
        q: list[InputSpec] = [("q", None, a23), ("s", scale, scalar(0.5)), ("z", None, scalar(0))]
        cases.append(Case(key, "DequantizeLinear", q, out_type=scale))
    cases.append(Case("MatMulInteger", "MatMulInteger", [("x", None, a23), ("y", None, b32)],
                      out_type="INT32"))  # fmt: skip
    cases.append(Case("DynamicQuantizeLinear", "DynamicQuantizeLinear", [("x", None, a23)],
                      out_type="UINT8", extra_outputs=2))  # fmt: skip
    return cases


TYPE_ATTR = "$T"  # an attribute value that stands for the probed element type (dtype=)


def build_model(case: Case, t: str) -> onnx.ModelProto:
    ins = []
    names = []
    for name, ty, fn in case.inputs:
        shape = list(fn(ty or t).shape)
        ins.append(helper.make_tensor_value_info(name, elem(ty or t), shape))
        names.append(name)
    node_inputs = case.node_inputs or names + [i.name for i in case.inits]
    extra = [f"out{k + 1}" for k in range(case.extra_outputs)]
    attrs: dict[str, Any] = {k: elem(t) if v == TYPE_ATTR else v for k, v in case.attrs.items()}
    node = helper.make_node(case.op, node_inputs, ["out", *extra], **attrs)
    out = helper.make_tensor_value_info("out", elem(case.out_type or t), case.out_shape)
    graph = helper.make_graph([node], "probe", ins, [out], initializer=case.inits)
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
    )


def cast_model(src: str, dst: str) -> onnx.ModelProto:
    node = helper.make_node("Cast", ["x"], ["out"], to=elem(dst))
    graph = helper.make_graph(
        [node],
        "probe",
        [helper.make_tensor_value_info("x", elem(src), [2, 3])],
        [helper.make_tensor_value_info("out", elem(dst), None)],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
    )


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def to_ortvalue(a: np.ndarray, t: str) -> ort.OrtValue:
    if t in RAW_VIEW:
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
            np.ascontiguousarray(a).view(RAW_VIEW[t]), elem(t)
        )
    return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(a))


def from_ortvalue(v: ort.OrtValue) -> np.ndarray:
    try:
        return np.asarray(v.numpy())
    except Exception:
        name = v.data_type()[len("tensor(") : -1].upper()
        raw = ctypes.string_at(v.data_ptr(), v.tensor_size_in_bytes())
        dt = NP_DTYPE.get(name, np.uint8)
        result: np.ndarray = np.frombuffer(raw, dtype=dt).reshape(v.shape())
        return result


def session_options(optimize: bool, tmpdir: str, tag: str) -> tuple[ort.SessionOptions, str]:
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    path = os.path.join(tmpdir, f"{tag}.onnx")
    so.optimized_model_filepath = path
    return so, path


def classify_exc(e: Exception) -> str:
    msg = str(e)
    if "NOT_IMPLEMENTED" in msg or "Could not find an implementation" in msg:
        return "no_kernel"
    if "not currently registered or supported" in msg:
        return "unsupported_type"
    return "load_error"


def run_probe(
    model: onnx.ModelProto,
    feeds: dict[str, tuple[np.ndarray, str]],
    optimize: bool,
    tmpdir: str,
    errors: dict[str, str],
    label: str,
) -> tuple[str, np.ndarray | None]:
    so, path = session_options(optimize, tmpdir, "opt" if optimize else "noopt")
    try:
        sess = ort.InferenceSession(
            model.SerializeToString(), so, providers=["CPUExecutionProvider"]
        )
    except Exception as e:
        cls = classify_exc(e)
        if cls == "load_error":
            errors[label] = str(e).splitlines()[0][:300]
        return cls, None
    try:
        ovs = {k: to_ortvalue(a, t) for k, (a, t) in feeds.items()}
        outs = sess.run_with_ort_values(["out"], ovs)
        result = from_ortvalue(outs[0])
    except Exception as e:
        errors[label] = str(e).splitlines()[0][:300]
        return "run_error", None
    n_cast_before = sum(n.op_type == "Cast" for n in model.graph.node)
    try:
        opt = onnx.load(path)
        n_cast_after = sum(n.op_type == "Cast" for n in opt.graph.node)
        op_types = {n.op_type for n in opt.graph.node}
    except Exception:
        n_cast_after, op_types = n_cast_before, set()
    target = model.graph.node[0].op_type
    if n_cast_after > n_cast_before and target != "Cast":
        return "ok_upcast", result
    if target != "Cast" and target not in op_types and op_types:
        return "ok_rewritten", result  # node fused/replaced by the optimizer
    return "ok", result


def check(model: onnx.ModelProto) -> str | None:
    """Validate against the ONNX spec; fills in the graph output shape on success."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        onnx.checker.check_model(inferred, full_check=True)
    except Exception as e:
        return str(e).splitlines()[0][:200]
    model.CopyFrom(inferred)
    return None


Results = dict[str, dict[str, dict[str, str]]]  # level -> key -> type-or-pair -> status


def probe_all(verbose: bool) -> tuple[Results, dict[str, str]]:
    results: Results = {"noopt": {}, "default": {}}
    errors: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        for case in build_cases():
            for lvl in results:
                results[lvl].setdefault(case.key, {})
            for t in TYPES:
                model = build_model(case, t)
                feeds = {}
                for name, ty, fn in case.inputs:
                    feeds[name] = (fn(ty or t), ty or t)
                if check(model) is not None:
                    for lvl in results:
                        results[lvl][case.key][t] = "invalid"
                    continue
                for lvl, optimize in (("noopt", False), ("default", True)):
                    status, _ = run_probe(
                        model, feeds, optimize, tmpdir, errors, f"{case.key}[{t}]/{lvl}"
                    )
                    results[lvl][case.key][t] = status
            if verbose:
                print(f"  probed {case.key}", file=sys.stderr)
        for lvl in results:
            results[lvl]["Cast"] = {}
        for src in TYPES:
            data = a23(src)
            for dst in TYPES:
                pair = f"{src}->{dst}"
                model = cast_model(src, dst)
                if check(model) is not None:
                    for lvl in results:
                        results[lvl]["Cast"][pair] = "invalid"
                    continue
                for lvl, optimize in (("noopt", False), ("default", True)):
                    status, _ = run_probe(
                        model, {"x": (data, src)}, optimize, tmpdir, errors, f"Cast[{pair}]/{lvl}"
                    )
                    results[lvl]["Cast"][pair] = status
    return results, errors


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------

SUMMARY_TYPES = [t for t in TYPES if not t.startswith("FLOAT8")]


def summarize(results: Results, errors: dict[str, str]) -> None:
    noopt = results["noopt"]
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, opset {OPSET}, CPU EP")
    print("Legend: ok=. ok_upcast=u no_kernel=- invalid=x unsupported_type=? other=E\n")
    short = {
        "ok": ".",
        "ok_rewritten": ".",
        "ok_upcast": "u",
        "no_kernel": "-",
        "invalid": "x",
        "unsupported_type": "?",
    }
    abbrev = {
        "BOOL": "bo", "INT8": "i8", "INT16": "i16", "INT32": "i32", "INT64": "i64",
        "UINT8": "u8", "UINT16": "u16", "UINT32": "u32", "UINT64": "u64", "FLOAT16": "f16",
        "BFLOAT16": "bf16", "FLOAT": "f32", "DOUBLE": "f64", "COMPLEX64": "c64",
        "COMPLEX128": "c128", "FLOAT8E4M3FN": "e4m3", "FLOAT8E5M2": "e5m2",
        "FLOAT8E4M3FNUZ": "e4m3fnuz", "FLOAT8E5M2FNUZ": "e5m2fnuz",
    }  # fmt: skip
    header = f"{'op':16s}" + "".join(f"{abbrev[t]:>5s}" for t in TYPES)
    print(header)
    for key, row in noopt.items():
        if key == "Cast":
            continue
        print(f"{key:16s}" + "".join(f"{short.get(row[t], 'E'):>5s}" for t in TYPES))
    print("\nCast (rows: from, cols: to)")
    print(f"{'from/to':16s}" + "".join(f"{abbrev[t]:>5s}" for t in TYPES))
    for src in TYPES:
        cells = "".join(f"{short.get(noopt['Cast'][f'{src}->{dst}'], 'E'):>5s}" for dst in TYPES)
        print(f"{src:16s}" + cells)

    print("\nMissing CPU kernels (spec-valid but no native kernel; u = runs via ORT upcast):")
    for key, row in noopt.items():
        if key == "Cast":
            continue
        miss = [
            abbrev[t] + ("(u)" if row[t] == "ok_upcast" else "")
            for t in SUMMARY_TYPES
            if row[t] not in ("ok", "ok_rewritten", "invalid")
        ]
        if miss:
            print(f"  {key:16s} {' '.join(miss)}")
    cast_miss = [p for p, s in noopt["Cast"].items() if s not in ("ok", "invalid")]
    print(f"  Cast: {len(cast_miss)} spec-valid pairs fail: {' '.join(cast_miss) or '-'}")

    diffs = []
    for key, row in noopt.items():
        for t, s in row.items():
            d = results["default"][key][t]
            if d != s:
                diffs.append(f"{key}[{t}]: noopt={s} default={d}")
    print(f"\nDifferences between disabled and default optimizations: {len(diffs)}")
    for d in diffs:
        print("  " + d)
    if errors:
        print("\nOther errors:")
        for k, v in errors.items():
            print(f"  {k}: {v}")


NOTES = [
    "Generated file: do not edit by hand.",
    "Values are onnx.TensorProto data type names.  Keys are ONNX op names, except: "
    '"Mod" = Mod(fmod=0), "Mod_fmod" = Mod(fmod=1); "Pow" = base and exponent of the same '
    'type; "Pow_exp_int64" / "Pow_exp_float" = base of the listed type with an INT64 / FLOAT '
    'exponent; "Where" lists the X/Y type (condition is BOOL); "Cast" lists "FROM->TO" pairs; '
    "comparisons / IsNaN / IsInf list the input type (output is BOOL); ArgMax lists the input "
    "type (output is INT64).",
    "kernels: the (op, type) pairs that ran on a native CPU kernel.",
    "upcast_kernels: (op, type) pairs that are NOT in kernels but still run, because "
    "onnxruntime silently wraps the node in Cast(to FLOAT) ... Cast(back) "
    "(InsertCastTransformer; this happens even with graph optimizations disabled).  The op is "
    "computed in float32, and chains of such ops keep float32 intermediates (no per-op float16 "
    "rounding).",
    "excluded_run_errors: spec-valid pairs whose kernel exists but fails at run time (excluded "
    "from kernels).",
    "Complex types: the ONNX spec allows them for shape ops, but onnxruntime cannot represent "
    "complex tensors at all (every such model fails to load).",
]


def kernel_table(results: Results, date: str) -> KernelTable:
    """The CPU kernel table of the probe results (optimizations disabled), dated ``date``."""
    noopt = results["noopt"]
    native: Kernels = {}
    upcast: Kernels = {}
    for key, row in noopt.items():
        native[key] = frozenset(t for t, st in row.items() if st in ("ok", "ok_rewritten"))
        up = frozenset(t for t, st in row.items() if st == "ok_upcast")
        if up:
            upcast[key] = up
    provenance = {
        "date": date,
        "excluded_run_errors": [
            f"{k}[{t}]"
            for k, row in sorted(noopt.items())
            for t, st in row.items()
            if st == "run_error"
        ],
        "generator": "scripts/probe_ort_kernels.py",
        "graph_optimizations": "disabled",
        "ir_version": IR_VERSION,
        "method": "measured",
        "notes": NOTES,
        "onnx": onnx.__version__,
        "onnxruntime": ort.__version__,
        "opset": OPSET,
        "provider": "CPUExecutionProvider",
        "regenerate": ".venv/bin/python scripts/probe_ort_kernels.py --write",
        "types": TYPES,
    }
    return KernelTable(provenance, native, upcast)


def write_table(results: Results) -> None:
    """Write OUT_JSON, dated today unless only the date would change (then keep the file)."""
    rel = OUT_JSON.relative_to(REPO)
    if OUT_JSON.exists():
        old = OUT_JSON.read_text(encoding="utf-8")
        if dump_kernels(kernel_table(results, json.loads(old)["provenance"]["date"])) == old:
            print(f"{rel} is up to date")
            return
    today = datetime.date.today().isoformat()
    OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
    OUT_JSON.write_text(dump_kernels(kernel_table(results, today)), encoding="utf-8")
    print(f"wrote {rel}")


# --------------------------------------------------------------------------------------------
# Semantic measurements
# --------------------------------------------------------------------------------------------


def run_graph(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, np.ndarray],
    out_types: dict[str, int],
    optimize: bool = False,
    inits: list[onnx.TensorProto] | None = None,
) -> list[Any]:
    ins = [
        helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
        for k, v in inputs.items()
    ]
    outs = [helper.make_tensor_value_info(k, t, None) for k, t in out_types.items()]
    graph = helper.make_graph(nodes, "sem", ins, outs, initializer=inits or [])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
    )
    so = ort.SessionOptions()
    so.log_severity_level = 4
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(
            model.SerializeToString(), so, providers=["CPUExecutionProvider"]
        )
        return list(sess.run(None, inputs))
    except Exception as e:
        return [f"ERROR: {str(e).splitlines()[0][:160]}"]


def binop(op: str, a: np.ndarray, b: np.ndarray, **attrs: Any) -> Any:
    t = helper.np_dtype_to_tensor_dtype(a.dtype)
    return run_graph(
        [helper.make_node(op, ["a", "b"], ["y"], **attrs)], {"a": a, "b": b}, {"y": t}
    )[0]


def unop(op: str, a: np.ndarray, out: int | None = None, **attrs: Any) -> Any:
    t = out if out is not None else helper.np_dtype_to_tensor_dtype(a.dtype)
    return run_graph([helper.make_node(op, ["a"], ["y"], **attrs)], {"a": a}, {"y": t})[0]


def reduce(op: str, a: np.ndarray) -> Any:
    t = helper.np_dtype_to_tensor_dtype(a.dtype)
    return run_graph(
        [helper.make_node(op, ["a", "axes"], ["y"], keepdims=0)],
        {"a": a},
        {"y": t},
        inits=[i64("axes", [0])],
    )[0]


def isolated(op: str, dtype: str, a: int, b: int) -> str:
    """Run binop in a child process (some integer cases kill the process with SIGFPE)."""
    proc = subprocess.run(
        [sys.executable, __file__, "--binop", op, dtype, str(a), str(b)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode < 0:
        return f"PROCESS KILLED by signal {signal.Signals(-proc.returncode).name}"
    return proc.stdout.strip() or proc.stderr.strip()[-200:]


def semantics() -> None:
    i32 = np.int32
    a = np.array([7, -7, 7, -7, -1, 1], i32)
    b = np.array([2, 2, -2, -2, 2, -2], i32)
    print("== integer Div, a =", a.tolist(), "b =", b.tolist())
    print("   ORT Div      :", binop("Div", a, b))
    print("   numpy //     :", (a // b).tolist(), " trunc:", np.trunc(a / b).astype(i32).tolist())
    for t in (np.int8, np.int32, np.int64, np.uint8):
        print(f"== Div by zero {t.__name__}:", binop("Div", np.array([5], t), np.array([0], t)))
        print(f"== Mod by zero {t.__name__}:", binop("Mod", np.array([5], t), np.array([0], t)))
    print(
        "== Div by zero float32 [1,-1,0]/0:",
        binop("Div", np.array([1, -1, 0], np.float32), np.zeros(3, np.float32)),
    )
    for tname in ("int8", "int16", "int32", "int64"):
        lo = int(np.iinfo(tname).min)
        for op in ("Div", "Mod"):
            res = isolated(op, tname, lo, -1)
            print(f"== {op} {tname} MIN/-1 ({lo}/-1) [isolated process]: {res}")
    print("== Mod fmod=0 int32 a=", a.tolist(), "b=", b.tolist(), "->", binop("Mod", a, b))
    print(
        "   numpy mod (sign of divisor):", np.mod(a, b).tolist(), " fmod:", np.fmod(a, b).tolist()
    )
    print("== Mod fmod=1 int32:", binop("Mod", a, b, fmod=1))
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    print("== Mod fmod=0 float32:", binop("Mod", fa, fb, fmod=0))
    print("== Mod fmod=1 float32:", binop("Mod", fa, fb, fmod=1))
    print(
        "== ReduceSum int8 (spec does not allow int8):",
        reduce("ReduceSum", np.full(3, 100, np.int8)),
    )
    imax, lmax = 2**31 - 1, 2**63 - 1
    for vals in ([imax, 1], [imax, 1, -5], [-(2**31), -1], [2**30] * 8, [imax, -1]):
        exact = sum(vals)
        wrapped = int(np.array(exact, np.int64).astype(i32))
        print(
            f"== ReduceSum int32 {vals}: {reduce('ReduceSum', np.array(vals, i32))}"
            f"  (exact {exact}, wrap {wrapped})"
        )
    for vals in ([lmax, 1], [lmax, -1], [2**53 + 1, 0], [2**60 + 1]):
        print(
            f"== ReduceSum int64 {vals}: {reduce('ReduceSum', np.array(vals, np.int64))}"
            f"  (exact {sum(vals)})"
        )
    for op in ("ReduceProd", "ReduceMean", "ReduceMax"):
        print(f"== {op} int64 [2^60+1, 1]:", reduce(op, np.array([2**60 + 1, 1], np.int64)))
    print(
        "== ReduceProd int32 [65536,65536] / [3]*25:",
        reduce("ReduceProd", np.array([65536, 65536], i32)),
        reduce("ReduceProd", np.full(25, 3, i32)),
    )
    print(
        "== ReduceMean int32 [2^31-1, 1]:",
        reduce("ReduceMean", np.array([imax, 1], i32)),
        "(exact 2^30 = 1073741824)",
    )
    print("== Add int8 127+1:", binop("Add", np.array([127], np.int8), np.array([1], np.int8)))
    print("== Add int32 (2^31-1)+1:", binop("Add", np.array([2**31 - 1], i32), np.array([1], i32)))
    print("== Mul int32 65536*65536:", binop("Mul", np.array([65536], i32), np.array([65536], i32)))
    print("== Add uint8 255+1:", binop("Add", np.array([255], np.uint8), np.array([1], np.uint8)))
    special = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 0.5, -0.5, 1.5], np.float32)
    print("== Cast float32", special.tolist())
    for to in (TensorProto.INT32, TensorProto.INT8, TensorProto.UINT8, TensorProto.INT64):
        print(f"   -> {TensorProto.DataType.Name(to)}:", unop("Cast", special, out=to, to=to))
    big = np.array([127, 128, 255, 256, 300, -129, 2**40 + 5, -1], np.int64)
    print("== Cast int64", big.tolist())
    for to in (TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32):
        print(f"   -> {TensorProto.DataType.Name(to)}:", unop("Cast", big, out=to, to=to))
    print(
        "== Cast float32 -> bool [0, -0, 0.1, nan]:",
        unop(
            "Cast",
            np.array([0, -0.0, 0.1, np.nan], np.float32),
            out=TensorProto.BOOL,
            to=TensorProto.BOOL,
        ),
    )
    print(
        "== Cast float32 -> float16 [70000, 1e-8, 0.1]:",
        unop(
            "Cast",
            np.array([70000, 1e-8, 0.1], np.float32),
            out=TensorProto.FLOAT16,
            to=TensorProto.FLOAT16,
        ),
    )

    # float16 chains
    rng = np.random.default_rng(0)
    x0 = rng.uniform(0.5, 2.0, size=64).astype(np.float16)
    consts = rng.uniform(0.9, 1.1, size=50).astype(np.float16)
    addc = rng.uniform(-0.01, 0.01, size=50).astype(np.float16)
    nodes, inits = [], []
    cur = "x"
    ref = x0.copy()
    ref32 = x0.astype(np.float32)
    for i in range(50):
        if i % 2 == 0:
            inits.append(numpy_helper.from_array(np.array(consts[i], np.float16), f"c{i}"))
            nodes.append(helper.make_node("Mul", [cur, f"c{i}"], [f"t{i}"]))
            ref = (ref * consts[i]).astype(np.float16)
            ref32 = ref32 * np.float32(consts[i])
        else:
            inits.append(numpy_helper.from_array(np.array(addc[i], np.float16), f"c{i}"))
            nodes.append(helper.make_node("Add", [cur, f"c{i}"], [f"t{i}"]))
            ref = (ref + addc[i]).astype(np.float16)
            ref32 = ref32 + np.float32(addc[i])
        cur = f"t{i}"
    nodes.append(helper.make_node("Identity", [cur], ["y"]))
    ref32_16 = ref32.astype(np.float16)
    for optimize in (False, True):
        out = run_graph(nodes, {"x": x0}, {"y": TensorProto.FLOAT16}, optimize, inits)[0]
        if isinstance(out, str):
            print("== fp16 chain:", out)
            continue
        print(
            f"== float16 chain of 50 Mul/Add (optimize={optimize}): "
            f"mismatches vs numpy per-op fp16 = {int(np.sum(out != ref))}/64, "
            f"vs fp32-then-round = {int(np.sum(out != ref32_16))}/64"
        )
    base = np.array([2, 2, 2, 2, -2, 1, 0], i32)
    expo = np.array([-1, -2, 0, 3, -1, -5, -1], i32)
    print("== Pow int32 2^[-1,-2,0,3], (-2)^-1, 1^-5, 0^-1:", binop("Pow", base, expo))
    print(
        "== Pow int32 base, float exponent 2^0.5, 2^-1:",
        run_graph(
            [helper.make_node("Pow", ["a", "b"], ["y"])],
            {"a": np.array([2, 2], i32), "b": np.array([0.5, -1], np.float32)},
            {"y": TensorProto.INT32},
        )[0],
    )
    print("== Pow int32 overflow 3^40:", binop("Pow", np.array([3], i32), np.array([40], i32)))
    r = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999], np.float32)
    print("== Round", r.tolist(), "->", unop("Round", r))
    print("== Round float16", unop("Round", r.astype(np.float16)))
    m = np.array([[1, 2], [2, 2]], i32)
    print(
        "== ReduceMean int32 [[1,2],[2,2]] axis0:", reduce("ReduceMean", m), "(float mean [1.5, 2])"
    )
    m2 = np.array([[-1, 2], [-2, 3]], i32)
    print(
        "== ReduceMean int32 [[-1,2],[-2,3]] axis0:",
        reduce("ReduceMean", m2),
        "(float mean [-1.5, 2.5])",
    )
    print("== ReduceMean int64:", reduce("ReduceMean", m.astype(np.int64)))
    print(
        "== ReduceMean uint8 [[255,255],[255,254]]:",
        reduce("ReduceMean", np.array([[255, 255], [255, 254]], np.uint8)),
    )
    sx = np.array([[1, 2, 3, 4], [10, 11, 12, 100]], np.float16)
    for optimize in (False, True):
        out = run_graph(
            [helper.make_node("Softmax", ["a"], ["y"], axis=-1)],
            {"a": sx},
            {"y": TensorProto.FLOAT16},
            optimize,
        )[0]
        print(f"== Softmax float16 (optimize={optimize}):", out)
    mm_a = np.full((1, 4), 50000, i32)
    mm_b = np.full((4, 1), 50000, i32)
    print(
        "== MatMul int64 [[2^63-1, 1]] @ [[1],[1]]:",
        run_graph(
            [helper.make_node("MatMul", ["a", "b"], ["y"])],
            {"a": np.array([[lmax, 1]], np.int64), "b": np.array([[1], [1]], np.int64)},
            {"y": TensorProto.INT64},
        )[0],
    )
    print(
        "== MatMul int32 [50000]*4 . [50000]*4 (true 1e10):",
        run_graph(
            [helper.make_node("MatMul", ["a", "b"], ["y"])],
            {"a": mm_a, "b": mm_b},
            {"y": TensorProto.INT32},
        )[0],
        "wrap would be",
        np.int64(10**10).astype(np.int32),
    )
    print(
        "== IsNaN/IsInf float16 on [nan, inf, 1]:",
        unop("IsNaN", np.array([np.nan, np.inf, 1], np.float16), out=TensorProto.BOOL),
        unop("IsInf", np.array([np.nan, np.inf, 1], np.float16), out=TensorProto.BOOL),
    )
    print(
        "== Max/Min float32 with NaN [nan,1] vs [1,nan]:",
        binop("Max", np.array([np.nan, 1], np.float32), np.array([1, np.nan], np.float32)),
        binop("Min", np.array([np.nan, 1], np.float32), np.array([1, np.nan], np.float32)),
    )
    print(
        "== Abs/Neg int8 -128:",
        unop("Abs", np.array([-128], np.int8)),
        unop("Neg", np.array([-128], np.int8)),
    )
    print(
        "== Clip int32 min>max (min=5,max=2) on [1,3,7]:",
        run_graph(
            [helper.make_node("Clip", ["a", "lo", "hi"], ["y"])],
            {"a": np.array([1, 3, 7], i32), "lo": np.array(5, i32), "hi": np.array(2, i32)},
            {"y": TensorProto.INT32},
        )[0],
    )
    print("== Sign float32 [-0., nan, -2]:", unop("Sign", np.array([-0.0, np.nan, -2], np.float32)))
    print(
        "== ArgMax ties [1,3,3] (select_last_index=0):",
        run_graph(
            [helper.make_node("ArgMax", ["a"], ["y"], axis=0, keepdims=0)],
            {"a": np.array([1, 3, 3], np.float32)},
            {"y": TensorProto.INT64},
        )[0],
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--write", action="store_true", help=f"write {OUT_JSON.relative_to(REPO)}")
    ap.add_argument("--semantics", action="store_true", help="print semantic measurements only")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--binop", nargs=4, metavar=("OP", "DTYPE", "A", "B"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    ort.set_default_logger_severity(4)  # expected failures would otherwise spam stderr
    if args.binop:
        op, dt, a, b = args.binop
        print(binop(op, np.array([int(a)], dt), np.array([int(b)], dt)))
        return
    if args.semantics:
        semantics()
        return
    t0 = time.perf_counter()
    results, errors = probe_all(args.verbose)
    summarize(results, errors)
    print(f"\nprobe time: {time.perf_counter() - t0:.1f}s")
    if args.write:
        write_table(results)


if __name__ == "__main__":
    main()
