#!/usr/bin/env python3
"""Measure onnxruntime's CUDA provider on a GPU machine: its kernels, and where it differs from
the CPU provider.

Two measurements, each written as JSON to ``--out`` (a folder):

``kernels``
    Every op case of ``scripts/probe_ort_kernels.py`` (plus the layouts only CUDA tells
    apart: blocked Q/DQ, the reductions of the scatters) on every element type, and every
    Cast pair, as a one-node model on ``CUDAExecutionProvider`` alone
    (``session.disable_cpu_ep_fallback``: a node CUDA has no kernel for fails the load
    instead of moving to the CPU). Each is ``ok``, ``no_kernel``, ``invalid`` (the ONNX spec
    refuses the type), ``load_error`` or ``run_error`` (a kernel that is registered but fails
    at run time, such as a Cast from float8 to double). Cases that run on both providers run
    again on inputs with NaN, infinities, signed zeros and the type's extremes; where CUDA's
    result differs from the CPU's, ``differs`` keeps both. ``--write`` (here, from the JSON
    brought back) writes ``exporters/onnx/kernels/cuda.json`` from it: the measured rows (the
    documented ones, ``cuda_documented.json``, stand where no row was measured).

``nodes``
    Every (op, dtype) case of the test matrix (tests/onnx_cases.py), exported for the
    ``cpu`` and the ``cuda`` target, on the matrix's inputs: each model runs with every
    intermediate value as an output, graph optimizations off, on the CPU provider and on
    CUDA (CPU behind it), and the first nodes whose outputs differ while their inputs agree
    are recorded (op, attributes, input types, both outputs, where the node ran). Then the
    model runs as ``run()`` runs it; a result that differs from the optimizations-off one is
    an optimizer's doing, and the transformers that changed the model are each left out in
    turn to find it.

    python3 scripts/probe_cuda.py kernels nodes --out $OUT            # on the GPU machine
    .venv/bin/python scripts/probe_cuda.py --write cuda_kernels.json   # here, from its JSON
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "scripts"), str(REPO / "tests")]

import probe_ort_kernels as probe  # noqa: E402

CUDA_EP: Any = ("CUDAExecutionProvider", {"use_tf32": "0"})
if os.environ.get("PROBE_CUDA_FAKE"):  # a dry run of the script where there is no GPU
    CUDA_EP = "CPUExecutionProvider"
GPU_PROVIDERS: list[Any] = (
    [CUDA_EP, "CPUExecutionProvider"] if CUDA_EP != "CPUExecutionProvider" else [CUDA_EP]
)
OUT_JSON = REPO / "exporters" / "onnx" / "kernels" / "cuda.json"
DOCUMENTED_JSON = OUT_JSON.with_name("cuda_documented.json")
Json = dict[str, Any]


def _ort() -> Any:
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    return ort


# ---------------------------------------------------------------------------- kernels


def extra_cases() -> list[probe.Case]:
    """Cases whose kernel CUDA registers for some layouts or reductions only."""
    x: list[probe.InputSpec] = [("x", None, probe.a23)]
    i64 = probe.i64
    cases = []
    # blocked quantization (axis 1, blocks of 2 over 3 columns: 2 blocks)
    for key, zp in (("QuantizeLinear_blocked", "INT8"), ("QuantizeLinear_uint8_blocked", "UINT8")):
        cases.append(probe.Case(
            key, "QuantizeLinear",
            [*x, ("s", None, lambda t: probe.arr([[0.5, 1.0], [2.0, 0.5]], t))],
            out_type=zp, attrs={"axis": 1, "block_size": 2},
            inits=[numpy_helper.from_array(probe.arr([[1, 0], [0, 2]], zp), "z")],
        ))  # fmt: skip
        cases.append(probe.Case(
            key.replace("_blocked", "_axis"), "QuantizeLinear",
            [*x, ("s", None, lambda t: probe.arr([0.5, 1.0, 2.0], t))],
            out_type=zp, attrs={"axis": 1},
            inits=[numpy_helper.from_array(probe.arr([1, 0, 2], zp), "z")],
        ))  # fmt: skip
    for key, scale in (("DequantizeLinear", "FLOAT"), ("DequantizeLinear_float16", "FLOAT16"),
                       ("DequantizeLinear_bfloat16", "BFLOAT16")):  # fmt: skip
        cases.append(probe.Case(
            key + "_blocked", "DequantizeLinear",
            [*x, ("s", scale, _scales([[0.5, 1.0], [2.0, 0.5]], scale)),
             ("z", None, lambda t: probe.arr([[1, 0], [0, 2]], t))],
            out_type=scale, attrs={"axis": 1, "block_size": 2},
        ))  # fmt: skip
        cases.append(probe.Case(
            key + "_axis", "DequantizeLinear",
            [*x, ("s", scale, _scales([0.5, 1.0, 2.0], scale)),
             ("z", None, lambda t: probe.arr([1, 0, 2], t))],
            out_type=scale, attrs={"axis": 1},
        ))  # fmt: skip
    idx: probe.InputSpec = ("i", "INT64", lambda _: probe.arr([[1, 0], [0, 1]], "INT64"))
    upd: probe.InputSpec = ("u", None, lambda t: probe.a23(t)[:, :2])
    for red in ("mul", "max", "min"):
        cases.append(probe.Case(f"ScatterElements_{red}", "ScatterElements",
                                [*x, idx, upd], attrs={"axis": 1, "reduction": red}))
        cases.append(probe.Case(
            f"ScatterND_{red}", "ScatterND",
            [*x, ("i", "INT64", lambda _: probe.arr([[1], [0]], "INT64")),
             ("u", None, lambda t: probe.a23(t)[::-1])],
            attrs={"reduction": red},
        ))  # fmt: skip
    cases.append(probe.Case("TopK_smallest", "TopK", x, inits=[i64("k", [2])],
                            attrs={"axis": 1, "largest": 0}, extra_outputs=1))
    cases.append(probe.Case("CumSum_exclusive_reverse", "CumSum", x, inits=[i64("axis", [1])],
                            attrs={"exclusive": 1, "reverse": 1}))
    cases.append(probe.Case("ConstantOfShape", "ConstantOfShape",
                            [("shape", "INT64", lambda _: probe.arr([2, 3], "INT64"))],
                            attrs={}, out_type="FLOAT"))
    cases.append(probe.Case("Einsum", "Einsum", [("x", None, probe.a23), ("y", None, probe.b32)],
                            attrs={"equation": "ij,jk->ik"}))
    cases.append(probe.Case("ReduceSumSquare", "ReduceSumSquare", x, attrs={"keepdims": 1},
                            inits=[i64("axes", [1])]))
    return cases


def _scales(values: Any, scale: str) -> Any:
    return lambda _t: probe.arr(values, scale)


def edge_values(t: str, shape: tuple[int, ...]) -> np.ndarray | None:
    """An array of ``shape`` cycling through type ``t``'s special values (None for bool)."""
    import ml_dtypes

    if t == "BOOL":
        return None
    np_t = probe.NP_DTYPE[t]
    if t in ("FLOAT16", "BFLOAT16", "FLOAT", "DOUBLE", "FLOAT8E4M3FN", "FLOAT8E5M2"):
        info = ml_dtypes.finfo(np_t)  # type: ignore[no-untyped-call]
        vals = [np.nan, -0.0, 0.0, np.inf, -np.inf, float(info.max), -float(info.max),
                float(info.smallest_subnormal), 1.5, -2.5, 7.0, -1.0]  # fmt: skip
        if t == "FLOAT8E4M3FN":  # no infinity: NaN
            vals = [v for v in vals if np.isfinite(v) or np.isnan(v)]
    elif t.startswith(("INT", "UINT")):
        ii = np.iinfo(np_t)
        vals = [int(ii.min), int(ii.max), 0, 1, int(ii.max) - 1, 7, 100, 3]
        if t.startswith("INT"):
            vals += [-1, -7, int(ii.min) + 1]
    else:
        return None
    n = int(np.prod(shape)) if shape else 1
    cycled = [vals[k % len(vals)] for k in range(n)]
    if t.startswith(("INT", "UINT")):
        return np.array(cycled, dtype=np_t).reshape(shape)
    return np.array(cycled, dtype=np.float64).astype(np_t).reshape(shape)


def _session(model: onnx.ModelProto, cuda: bool, no_fallback: bool) -> Any:
    ort = _ort()
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if no_fallback and CUDA_EP != "CPUExecutionProvider":
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    providers: list[Any] = GPU_PROVIDERS if cuda else ["CPUExecutionProvider"]
    if cuda and no_fallback:
        providers = providers[:1]  # listing the CPU provider too conflicts with the entry
    return ort.InferenceSession(model.SerializeToString(), so, providers=providers)


def _run(sess: Any, feeds: dict[str, tuple[np.ndarray, str]], names: list[str]) -> list[Any]:
    ovs = {k: probe.to_ortvalue(a, t) for k, (a, t) in feeds.items()}
    return [probe.from_ortvalue(v) for v in sess.run_with_ort_values(names, ovs)]


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit, but any NaN equals any NaN."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc" or a.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        af, bf = a.astype(np.float64), b.astype(np.float64)
        nan = np.isnan(af) & np.isnan(bf)
        eq = (af == bf) & (np.signbit(af) == np.signbit(bf))
        return bool((nan | eq).all())
    return bool(np.array_equal(a, b))


def _show(a: Any, limit: int = 24) -> str:
    arr = np.asarray(a)
    flat = arr.reshape(-1)[:limit]
    return f"{arr.dtype}{list(arr.shape)} {flat.tolist()}"


def _classify(e: Exception) -> str:
    msg = str(e)
    if ("fallback to CPU EP has been explicitly disabled" in msg or "NOT_IMPLEMENTED" in msg
            or "Could not find an implementation" in msg):  # fmt: skip
        return "no_kernel"
    if "not currently registered or supported" in msg:
        return "unsupported_type"
    return "load_error"


def probe_case(model: onnx.ModelProto, feeds: dict[str, tuple[np.ndarray, str]],
               edge: dict[str, tuple[np.ndarray, str]] | None, n_out: int,
               label: str, errors: dict[str, str], differs: list[Json]) -> str:
    """One case on CUDA alone: its status; and the CPU/CUDA comparison on ``edge`` inputs."""
    names = [o.name for o in model.graph.output][:n_out]
    try:
        sess = _session(model, cuda=True, no_fallback=True)
    except Exception as e:
        status = _classify(e)
        if status == "load_error":
            errors[label] = str(e).splitlines()[0][:400]
        return status
    try:
        _run(sess, feeds, names)
    except Exception as e:
        errors[label] = str(e).splitlines()[0][:400]
        return "run_error"
    for which, inputs in (("plain", feeds), ("edge", edge)):
        if inputs is None:
            continue
        try:
            cpu = _run(_session(model, cuda=False, no_fallback=False), inputs, names)
        except Exception:
            continue  # no CPU kernel, or the CPU refuses these inputs
        try:
            gpu = _run(sess, inputs, names)
        except Exception as e:
            differs.append({"case": label, "inputs": which, "cuda_error": str(e)[:300],
                            "in": {k: _show(a) for k, (a, _) in inputs.items()},
                            "cpu": [_show(c) for c in cpu]})  # fmt: skip
            continue
        bad = [k for k, (c, g) in enumerate(zip(cpu, gpu, strict=True)) if not same(c, g)]
        if bad:
            differs.append({"case": label, "inputs": which, "outputs": bad,
                            "in": {k: _show(a) for k, (a, _) in inputs.items()},
                            "cpu": [_show(c) for c in cpu], "cuda": [_show(g) for g in gpu]})
    return "ok"


_SHAPE_LIKE = frozenset({"Range", "ConstantOfShape", "Tile", "Expand", "Reshape", "OneHot"})


def _probe_row(job: tuple[int, str]) -> tuple[str, dict[str, str], dict[str, str], list[Json]]:
    """One case (by its index in the case list) on every type, or the Casts from one type."""
    k, src = job
    errors: dict[str, str] = {}
    differs: list[Json] = []
    row: dict[str, str] = {}
    if k < 0:
        data = probe.a23(src)
        for dst in probe.TYPES:
            model = probe.cast_model(src, dst)
            if probe.check(model) is not None:
                row[f"{src}->{dst}"] = "invalid"
                continue
            e = edge_values(src, data.shape)
            row[f"{src}->{dst}"] = probe_case(
                model, {"x": (data, src)}, None if e is None else {"x": (e, src)}, 1,
                f"Cast[{src}->{dst}]", errors, differs,
            )
        return "Cast", row, errors, differs
    case = [*probe.build_cases(), *extra_cases()][k]
    for t in probe.TYPES:
        model = probe.build_model(case, t)
        if probe.check(model) is not None:
            row[t] = "invalid"
            continue
        feeds = {name: (fn(ty or t), ty or t) for name, ty, fn in case.inputs}
        # (no special values for shapes and counts: a Range to inf would not end)
        edge: dict[str, tuple[np.ndarray, str]] | None = (
            None if case.op in _SHAPE_LIKE else dict(feeds)
        )
        for name, ty, _ in case.inputs:
            if ty is None and edge is not None:
                e = edge_values(t, feeds[name][0].shape)
                if e is None:
                    edge = None
                else:
                    edge[name] = (e, t)
        row[t] = probe_case(model, feeds, edge, 1 + case.extra_outputs, f"{case.key}[{t}]",
                            errors, differs)  # fmt: skip
    return case.key, row, errors, differs


def measure_kernels(out: Path, workers: int) -> Json:
    ort = _ort()
    results: dict[str, dict[str, str]] = {"Cast": {}}
    errors: dict[str, str] = {}
    differs: list[Json] = []
    t0 = time.perf_counter()
    (out / "cuda_kernels_info.json").write_text(json.dumps({
        "onnxruntime": ort.__version__, "onnx": onnx.__version__, "device": _device()}))
    n = len([*probe.build_cases(), *extra_cases()])
    jobs = [(k, "") for k in range(n)] + [(-1, src) for src in probe.TYPES]
    # one line per row as it is measured (a run cut short keeps what finished)
    with multiprocessing.get_context("spawn").Pool(workers) as pool, \
            open(out / "cuda_kernels.jsonl", "w") as f:  # fmt: skip
        for key, row, errs, diffs in pool.imap_unordered(_probe_row, jobs):
            results.setdefault(key, {}).update(row)
            errors.update(errs)
            differs += diffs
            f.write(json.dumps({"key": key, "row": row, "errors": errs, "differs": diffs}) + "\n")
            f.flush()
    report = {
        "onnxruntime": ort.__version__, "onnx": onnx.__version__,
        "providers": ort.get_available_providers(), "device": _device(),
        "seconds": round(time.perf_counter() - t0, 1), "types": probe.TYPES,
        "results": results, "errors": errors, "differs": differs,
    }  # fmt: skip
    (out / "cuda_kernels.json").write_text(json.dumps(report, indent=1))
    print(f"kernels: {len(results)} rows, {len(errors)} errors, {len(differs)} differences, "
          f"{report['seconds']} s", flush=True)  # fmt: skip
    return report


def _device() -> str:
    with contextlib.suppress(Exception):
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                              timeout=30).stdout.strip()  # fmt: skip
    return "?"


# ---------------------------------------------------------------------------- nodes


def _matrix_inputs(op: str, dt: Any) -> tuple[Any, list[np.ndarray]]:
    """The graph and inputs tests/test_onnx_matrix.py uses for (op, dt)."""
    from onnx_cases import build, case_inputs

    g = build(op, dt)
    return g, case_inputs(g, op, dt)


def _with_intermediates(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """``model`` with every typed node output of its main graph as a graph output; nodes
    named by position."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for k, node in enumerate(m.graph.node):
        node.name = f"n{k}_{node.op_type}"
    try:
        inferred = onnx.shape_inference.infer_shapes(m)
        types = {v.name: v for v in inferred.graph.value_info}
    except Exception:
        types = {}
    have = {o.name for o in m.graph.output}
    for node in m.graph.node:
        for o in node.output:
            if o and o not in have and o in types:
                m.graph.output.append(types[o])
                have.add(o)
    return m, [o.name for o in m.graph.output]


def _feeds(model: onnx.ModelProto, xs: list[np.ndarray]) -> dict[str, tuple[np.ndarray, str]]:
    names = {v.name: v for v in model.graph.input}
    feeds = {}
    for v, x in zip(model.graph.input, xs, strict=False):
        t = TensorProto.DataType.Name(names[v.name].type.tensor_type.elem_type)
        feeds[v.name] = (x, t)
    return feeds


def _placement(sess: Any) -> dict[str, str]:
    path = sess.end_profiling()
    try:
        with open(path) as f:
            events = json.load(f)
    finally:
        with contextlib.suppress(OSError):
            os.remove(path)
    placed = {}
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            placed[e["name"][: -len("_kernel_time")]] = e["args"].get("provider", "?")
    return placed


def _node_attrs(node: onnx.NodeProto) -> dict[str, Any]:
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode(errors="replace")
        elif isinstance(v, (onnx.GraphProto, onnx.TensorProto)) or (
                isinstance(v, list) and v and not isinstance(v[0], (int, float, bytes, str))):
            v = f"<{type(v).__name__}>"  # fmt: skip
        elif isinstance(v, list):
            v = [x.decode() if isinstance(x, bytes) else x for x in v]
        out[a.name] = v
    return out


def _as_run(model: onnx.ModelProto) -> Any:
    """A CUDA session of ``model`` as run() makes it (its optimizations and leave-outs)."""
    from exporters.onnx import _optimizers

    ort = _ort()
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    for key, value in _optimizers.session_config(model).items():
        so.add_session_config_entry(key, value)
    off = set(_optimizers.optimizers_off(model, None))
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=GPU_PROVIDERS,
                                disabled_optimizers=off), off  # fmt: skip


_VERBOSE = """
import sys, onnxruntime as ort
so = ort.SessionOptions()
so.log_severity_level = 0
so.log_verbosity_level = 10
cuda = ("CUDAExecutionProvider", {"use_tf32": "0"})
providers = [cuda] if cuda[0] in ort.get_available_providers() else []
ort.InferenceSession(sys.argv[1], so, providers=[*providers, "CPUExecutionProvider"],
                     disabled_optimizers=set(sys.argv[2:]))
"""


def _changed_by(model: onnx.ModelProto, off: set[str]) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "m.onnx")
        onnx.save(model, path)
        proc = subprocess.run([sys.executable, "-c", _VERBOSE, path, *sorted(off)],
                              capture_output=True, text=True, check=False, timeout=120)
    names = []
    for line in (proc.stdout + proc.stderr).splitlines():
        if "GraphTransformer " in line and "modified: 1" in line:
            name = line.split("GraphTransformer ", 1)[1].split(" modified", 1)[0]
            if name not in names:
                names.append(name)
    return names


def _bisect(model: onnx.ModelProto, feeds: dict[str, tuple[np.ndarray, str]],
            reference: list[Any], off: set[str]) -> Json:
    """Which transformer, left out alone, makes run()'s CUDA session agree with the
    optimizations-off one?"""
    from bisect_ort_optimizers import RULES

    ort = _ort()
    changed = _changed_by(model, off)
    candidates = [r for name in changed for r in RULES.get(name, [name])]
    names = [o.name for o in model.graph.output]
    culprits = []
    for name in candidates:
        so = ort.SessionOptions()
        so.log_severity_level = 4
        so.intra_op_num_threads = 1
        try:
            sess = ort.InferenceSession(model.SerializeToString(), so,
                                        providers=GPU_PROVIDERS,
                                        disabled_optimizers=off | {name})  # fmt: skip
            got = _run(sess, feeds, names)
        except Exception:
            continue
        if all(same(a, b) for a, b in zip(got, reference, strict=True)):
            culprits.append(name)
    return {"changed_by": changed, "fixed_by_leaving_out": culprits}


def diff_case(op: str, dt_name: str, target: str) -> Json:
    """Node-level CPU/CUDA comparison of one matrix case exported for ``target``."""
    from exporters.onnx import export
    from graphdsl import DType

    dt = DType[dt_name]
    rec: Json = {"case": f"{op}-{dt_name}", "target": target}
    try:
        g, xs = _matrix_inputs(op, dt)
        model = export(g, target=target)
    except Exception as e:
        rec["export_error"] = f"{type(e).__name__}: {str(e)[:300]}"
        return rec
    full, names = _with_intermediates(model)
    feeds = _feeds(full, xs)
    rec["nodes"] = len(model.graph.node)
    try:
        cpu = _run(_session(full, cuda=False, no_fallback=False), feeds, names)
    except Exception as e:
        rec["cpu_error"] = str(e)[:300]
        return rec
    ort = _ort()
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.enable_profiling = True
    so.profile_file_prefix = tempfile.mktemp(prefix="probe_cuda_")
    try:
        sess = ort.InferenceSession(full.SerializeToString(), so,
                                    providers=GPU_PROVIDERS)
        gpu = _run(sess, feeds, names)
        placed = _placement(sess)
    except Exception as e:
        rec["cuda_error"] = f"{type(e).__name__}: {str(e)[:400]}"
        return rec
    rec["on_cpu"] = sorted({n.split("_", 1)[1] for n, p in placed.items()
                            if p == "CPUExecutionProvider"})  # fmt: skip
    differ = {n for n, a, b in zip(names, cpu, gpu, strict=True) if not same(a, b)}
    value = dict(zip(names, zip(cpu, gpu, strict=True), strict=True))
    roots = []
    for node in full.graph.node:
        bad = [o for o in node.output if o in differ]
        if not bad or any(i in differ for i in node.input):
            continue
        roots.append({
            "node": node.name, "op": node.op_type, "attrs": _node_attrs(node),
            "provider": placed.get(node.name, "?"),
            "in": [_show(value[i][0]) if i in value else _show(_const(full, i, feeds))
                   for i in node.input if i],
            "cpu": [_show(value[o][0]) for o in bad], "cuda": [_show(value[o][1]) for o in bad],
        })  # fmt: skip
    if roots:
        rec["roots"] = roots
    outs = [o.name for o in model.graph.output]
    off_ref = [value[o][1] for o in outs]
    try:
        sess_run, off = _as_run(model)
        got = _run(sess_run, _feeds(model, xs), outs)
    except Exception as e:
        rec["as_run_error"] = f"{type(e).__name__}: {str(e)[:400]}"
        return rec
    if not all(same(a, b) for a, b in zip(got, off_ref, strict=True)):
        rec["optimizer"] = _bisect(model, _feeds(model, xs), off_ref, off)
        rec["optimizer"]["as_run"] = [_show(a) for a in got]
        rec["optimizer"]["off"] = [_show(a) for a in off_ref]
    return rec


def _const(model: onnx.ModelProto, name: str, feeds: dict[str, tuple[np.ndarray, str]]) -> Any:
    if name in feeds:
        return feeds[name][0]
    for t in model.graph.initializer:
        if t.name == name:
            with contextlib.suppress(Exception):
                return numpy_helper.to_array(t)
    return np.array([])


def _diff_job(job: tuple[str, str, str]) -> Json:
    try:
        return diff_case(*job)
    except Exception:
        return {"case": f"{job[0]}-{job[1]}", "target": job[2],
                "probe_error": traceback.format_exc()[-600:]}


def measure_nodes(out: Path, workers: int, only: str | None) -> None:
    from onnx_cases import all_cases

    jobs = [(op, dt.name, target) for op, dt in all_cases() for target in ("cuda", "cpu")
            if only is None or op.startswith(only)]  # fmt: skip
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")
    path = out / "cuda_nodes.jsonl"
    counts = {"cases": 0, "roots": 0, "optimizer": 0, "errors": 0}
    with ctx.Pool(workers) as pool, open(path, "w") as f:
        for rec in pool.imap_unordered(_diff_job, jobs, chunksize=8):
            counts["cases"] += 1
            counts["roots"] += bool(rec.get("roots"))
            counts["optimizer"] += "optimizer" in rec
            counts["errors"] += any(k.endswith("error") for k in rec)
            if len(rec) > 4 or any(k.endswith("error") for k in rec) or rec.get("on_cpu"):
                f.write(json.dumps(rec) + "\n")
                f.flush()
    print(f"nodes: {counts}, {time.perf_counter() - t0:.0f} s", flush=True)


# ---------------------------------------------------------------------------- table


NOTES = [
    "Generated file: do not edit by hand (scripts/probe_cuda.py --write, from the JSON its "
    "'kernels' measurement wrote on a GPU machine).",
    "Same shape as cpu.json: op -> onnx.TensorProto type names; \"Cast\" holds \"FROM->TO\" "
    "pairs. Keys beyond cpu.json's: the layouts and reductions CUDA tells apart "
    "(QuantizeLinear_axis / _blocked, DequantizeLinear*_axis / _blocked, ScatterND_mul ...).",
    "kernels: the (op, type) pairs that loaded on CUDAExecutionProvider alone "
    "(session.disable_cpu_ep_fallback) and ran. A pair missing from a measured row runs on "
    "onnxruntime's CPU provider inside a CUDA session (the exporter reports those nodes).",
    "Rows only: an op key the measurement did not reach (a run cut short, an op added to the "
    "lowerings since) has no row here; its row stays the documented one, "
    "cuda_documented.json's, until a probe measures it (exporters/onnx/_targets.py merges "
    "the two, a measured row replacing a documented one).",
    "excluded_run_errors: pairs whose CUDA kernel is registered (onnxruntime places the node "
    "on CUDA, so no CPU fallback takes it) but fails at run time: the exporter must not emit "
    "them for target 'cuda'.",
    "differs: pairs whose CUDA result differs from the CPU provider's on the probe's inputs "
    "(NaN, infinities, signed zeros, extremes), as the pair's name; each that matters to a "
    "lowering is in exporters/onnx/_targets.py's CUDA_BROKEN (with what it does) or "
    "CUDA_QUIRKS, the others are within the ops' tolerances (a few ulps of a transcendental).",
]


def write_table(report_path: Path) -> None:
    from exporters.onnx._kernels import KernelTable, dump_kernels

    if report_path.suffix == ".jsonl":  # the rows as measured (a run cut short: what finished)
        lines = [json.loads(x) for x in report_path.read_text().splitlines() if x.strip()]
        report: Json = {"results": {}, "differs": [], "device": "?", "onnx": "?",
                        "onnxruntime": "?", "types": probe.TYPES}  # fmt: skip
        for line in lines:
            report["results"].setdefault(line["key"], {}).update(line["row"])
            report["differs"] += line["differs"]
        info = report_path.with_name("cuda_kernels_info.json")
        if info.exists():
            report.update(json.loads(info.read_text()))
    else:
        report = json.loads(report_path.read_text())
    kernels = {}
    excluded = []
    for key, row in sorted(report["results"].items()):
        kernels[key] = frozenset(t for t, st in row.items() if st == "ok")
        excluded += [f"{key}[{t}]" for t, st in row.items() if st == "run_error"]
    differs = sorted({d["case"] for d in report["differs"]})
    date = datetime.date.today().isoformat()
    provenance = {
        "date": date, "device": report["device"], "differs": differs,
        "excluded_run_errors": excluded, "generator": "scripts/probe_cuda.py",
        "graph_optimizations": "disabled", "ir_version": probe.IR_VERSION,
        "method": "measured", "notes": NOTES, "onnx": report["onnx"],
        "onnxruntime": report["onnxruntime"], "opset": probe.OPSET,
        "provider": "CUDAExecutionProvider",
        "regenerate": "python3 scripts/probe_cuda.py kernels --out DIR (GPU machine), then "
        ".venv/bin/python scripts/probe_cuda.py --write DIR/cuda_kernels.json",
        "types": report["types"],
    }  # fmt: skip
    documented = set(json.loads(DOCUMENTED_JSON.read_text())["kernels"])
    provenance["unmeasured_documented_rows"] = sorted(documented - set(kernels))
    OUT_JSON.write_text(dump_kernels(KernelTable(provenance, kernels)), encoding="utf-8")
    print(f"wrote {OUT_JSON.relative_to(REPO)}: {len(kernels)} rows, {len(excluded)} run "
          f"errors, {len(differs)} pairs that differ; documented rows not measured: "
          f"{provenance['unmeasured_documented_rows']}")  # fmt: skip


@contextlib.contextmanager
def _timer(what: str) -> Iterator[None]:
    t0 = time.perf_counter()
    yield
    print(f"{what}: {time.perf_counter() - t0:.0f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("what", nargs="*", help="kernels, nodes or both")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/out")))
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--only", help="nodes: the matrix's ops that start with this")
    ap.add_argument("--write", type=Path, metavar="JSON", help="write cuda.json from JSON")
    args = ap.parse_args()
    if set(args.what) - {"kernels", "nodes"}:  # (argparse's choices refuse an empty list)
        ap.error(f"unknown measurement(s): {sorted(set(args.what) - {'kernels', 'nodes'})}")
    if args.write:
        write_table(args.write)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    if "kernels" in args.what:
        with _timer("kernels"):
            measure_kernels(args.out, args.workers)
    if "nodes" in args.what:
        with _timer("nodes"):
            measure_nodes(args.out, args.workers, args.only)


if __name__ == "__main__":
    main()
