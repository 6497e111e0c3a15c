"""Which of onnxruntime's graph optimizers ``run()`` leaves out of a model's session.

``run()`` makes its sessions with onnxruntime's default optimization level (ORT_ENABLE_ALL:
constant folding, node eliminations, fusions into contrib kernels, NCHWc layouts) and
leaves out, by name, the optimizers that change results. They were found by running the
(op, dtype) matrix (tests/test_onnx_matrix.py) and the fuzzer (tests/test_fuzz.py) under
ORT_ENABLE_ALL with nothing left out and bisecting each disagreement to the optimizer that
caused it (``python scripts/bisect_ort_optimizers.py``); both suites run through ``run()``,
so every test run checks the list again. Measured on onnxruntime 1.32.

Six are always off (:data:`ALWAYS_OFF`, with what each changes). Two change results only
on some models, and cost where they are left out (NCHWc convolutions run the example CNN
1.45x faster; the RMS norm fusion a Llama block 1.3% to 5%, the smaller the more), so they
are left out only where they would: :func:`optimizers_off` reads the model. A third,
MatmulTransposeFusion, crashes onnxruntime on one pattern and is left out where the model
has it. A model with
Q/DQ nodes also gets ``session.disable_quant_qdq`` (:func:`session_config`), which turns
the Q/DQ passes off and lets constant folding dequantize constant weights once at load;
where those would take 1 GiB as float32, ConstantFolding is left out instead, to keep them
int8.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
import onnx.inliner
from onnx import ModelProto, numpy_helper

__all__ = [
    "ALWAYS_OFF",
    "FOLD_DEQUANTIZED_BELOW",
    "SOMETIMES_OFF",
    "optimizers_off",
    "session_config",
    "session_settings",
]

ALWAYS_OFF: dict[str, str] = {
    "ExpandElimination": (
        "drops an Expand whose target shape has a 0 (x of shape [1, 1] expanded to [1, 0]) as "
        "if it did nothing, so the empty result becomes an error in a later Reshape"
    ),
    "GatherToSliceFusion": (
        "turns a Gather of Range(start, limit, step) indices into a Slice, which clamps where "
        "Gather refuses: position embeddings gathered for a sequence longer than their table "
        "(16 rows, 20 positions) gave 16 rows instead of an index error"
    ),
    "MatMulScaleFusion": (
        "turns MatMul(x * s, B) and MatMul(x / s, B) into s * (x @ B): ([2, -1] * inf) @ "
        "[1, 1] gives inf instead of inf + -inf = NaN, and finite results round differently"
    ),
    "NoopElimination": (
        "drops x + 0, x - 0, x * 1 and x / 1, but -0.0 + 0 is +0.0: the exporter's zero-sign "
        "repairs (relu, max, max_pool2d and narrow floats computed in float32) add 0, where "
        "the value may hold -0.0 (not after a convolution with a bias, for one)"
    ),
    "NotWhereFusion": (
        "turns Where(Not(c), a, b) into Where(c, b, a); onnxruntime's Where loses -0.0 from "
        "its first branch only, and the exporter places the branches for that (mod, "
        "floordiv, clip)"
    ),
    "QDQSelectorActionTransformer": (
        "fuses DequantizeLinear + MatMul into MatMulNBits, which quantizes the activations "
        "to int8 (its default accuracy level 4): 0.36 off on a 512x512 int8 layer where the "
        "reference is within 3e-5, NaN for an infinite scale (and other Q/DQ groups into "
        "integer kernels)"
    ),
}

SOMETIMES_OFF: dict[str, str] = {
    "NchwcTransformer": (
        "runs a Conv with a constant filter in the NCHWc layout, which skips the zero "
        "padding: an infinite weight over the padding gives inf there, NaN (0 * inf) in the "
        "reference, and a NaN weight over a window of padding only gives the bias, NaN in the "
        "reference; off where a Conv's filter, once constant folding is done, holds inf or NaN "
        "(a filter computed from the weights, as a folded batch norm's, is evaluated), or is "
        "not known (in a control-flow subgraph, or its data not found)"
    ),
    "MatmulTransposeFusion": (
        "makes onnxruntime crash (1.31 and 1.32: a segmentation fault while the session is "
        "made) on MatMul(Cast(Transpose(x)), B), a float16 or float8 value transposed, widened "
        "to float32 and multiplied (found by the fuzzer; a 3-node model reproduces it); off "
        "where a MatMul reads a Cast of a Transpose (it fuses the other transposes into "
        "FusedMatMul)"
    ),
    "SimplifiedLayerNormFusion": (
        "fuses x / Sqrt(ReduceMean(x ** 2) + eps) into SimplifiedLayerNormalization, whose "
        "kernel refuses an empty normalized axis (the reference gives an empty result); off "
        "where a ReduceMean reduces an axis not known to be non-empty"
    ),
}


# dequantized constant weights up to this many float32 bytes are dequantized once, at load
FOLD_DEQUANTIZED_BELOW = 1 << 30


def session_config(model: ModelProto) -> dict[str, str]:
    """Session config entries for ``model``: ``session.disable_quant_qdq`` where it has
    QuantizeLinear or DequantizeLinear nodes. onnxruntime's Q/DQ optimizations are then off:
    they move Q/DQ pairs around other ops and run what they enclose in integer kernels
    (QDQSelectorActionTransformer above), and QDQS8ToU8Transformer turned the
    DequantizeLinear of an int8 input with a blocked float16 scale into a model that
    fails to load (measured). It also lets constant folding, which leaves Q/DQ nodes to them
    otherwise, dequantize constant weights once when the session starts instead of at every
    call, the same values from the same kernel: the example int8 MLP runs 2.3x faster, as
    fast as its float32 form, at float32's memory for those weights (see
    :func:`optimizers_off` for larger ones)."""
    return _config(_watched(_structure(model).graph))


def session_settings(
    model: ModelProto, folder: str | None = None, providers: Sequence[str] = ()
) -> tuple[dict[str, str], frozenset[str]]:
    """:func:`session_config` and :func:`optimizers_off` of ``model`` for one session, its
    nodes read (and its functions inlined) once."""
    flat = _structure(model)
    found = _watched(flat.graph)
    return _config(found), _off(model, flat, found, folder, providers)


def _config(found: dict[str, list[Found]]) -> dict[str, str]:
    if found["QuantizeLinear"] or found["DequantizeLinear"]:
        return {"session.disable_quant_qdq": "1"}
    return {}


def _dequantized_bytes(model: ModelProto, dequantizes: list[Found]) -> int:
    """float32 bytes of the constant weights that ``model`` dequantizes."""
    if not dequantizes:
        return 0
    constants = {t.name: t for t in model.graph.initializer}
    total = 0
    for node, _ in dequantizes:
        if node.input[0] in constants:
            count = 1
            for d in constants[node.input[0]].dims:
                count *= d
            total += 4 * count
    return total


def optimizers_off(
    model: ModelProto, folder: str | None = None, providers: Sequence[str] = ()
) -> frozenset[str]:
    """The optimizers to leave out of a session of ``model`` on ``providers``:
    :data:`ALWAYS_OFF`, and those of :data:`SOMETIMES_OFF` that would change its results.
    ``folder`` holds its external data (a Conv filter stored there is read to check it)."""
    flat = _structure(model)
    return _off(model, flat, _watched(flat.graph), folder, providers)


def _off(
    model: ModelProto,
    flat: ModelProto,
    found: dict[str, list[Found]],
    folder: str | None,
    providers: Sequence[str],
) -> frozenset[str]:
    """optimizers_off, from ``model``'s structure ``flat`` and its watched nodes ``found``."""
    off = set(ALWAYS_OFF)
    if _dequantized_bytes(model, found["DequantizeLinear"]) >= FOLD_DEQUANTIZED_BELOW:
        # int8 weights that would take this much memory as float32 stay int8 (dequantized
        # at every call): constant folding is left out of such a model
        off.add("ConstantFolding")
    if not _finite_conv_filters(model, flat, folder, found["Conv"]):
        off.add("NchwcTransformer")
    cuda = "CUDAExecutionProvider" in providers
    if _casts_of_transposes_into_matmuls(flat.graph, {}):
        off.add("MatmulTransposeFusion")
    if not _means_over_non_empty_axes(flat, found["ReduceMean"]) or not _norms_fuse_exactly(
        flat, found, cuda
    ):
        off.add("SimplifiedLayerNormFusion")
    if cuda and found["Conv"] and _pads_before_convs(flat):
        # the exporter pads explicitly where CUDA's Conv would leave the padding out of its
        # sums (a filter with inf or NaN): the Pad fusion would move the Pad back into the Conv
        off.add("Pad_Fusion")  # (the rule's name; its class is PadFusion)
    return frozenset(off)


def _casts_of_transposes_into_matmuls(graph: onnx.GraphProto,
                                      outer: dict[str, onnx.NodeProto]) -> bool:  # fmt: skip
    """Does a MatMul (of ``graph`` or a subgraph) read a Cast of a Transpose?"""
    producers = {**outer, **{o: n for n in graph.node for o in n.output}}
    for node in graph.node:
        if node.op_type == "MatMul":
            for name in node.input:
                cast = producers.get(name)
                if cast is not None and cast.op_type == "Cast":
                    source = producers.get(cast.input[0])
                    if source is not None and source.op_type == "Transpose":
                        return True
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else attr.graphs:
                if _casts_of_transposes_into_matmuls(sub, producers):
                    return True
    return False


def _norms_fuse_exactly(model: ModelProto, found: dict[str, list[Found]], cuda: bool) -> bool:
    """The RMS norm fusion computes a float64 norm in float32 (measured: 2.7824329 for
    2.7824333, on CUDA and on onnxruntime 1.31's CPU provider), and on CUDA it also takes in
    a Cast before the pattern (a norm computed in float32 from another type), whose fused
    node then refuses its int16 or bfloat16 input (InvalidGraph, or no kernel at load): safe
    only where every ReduceMean reads a float32 or float16 square (on CUDA: of a value that
    no Cast made)."""
    means = found["ReduceMean"]
    if not means:
        return True
    producers = {o: n for n in model.graph.node for o in n.output}
    types = _value_types(model)
    for node, _ in means:
        if types.get(node.input[0]) not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16):
            return False
        square = producers.get(node.input[0])
        if cuda and square is not None and any(
            producers.get(i) is not None and producers[i].op_type == "Cast"
            for i in square.input
        ):
            return False
    return True


def _pads_before_convs(model: ModelProto) -> bool:
    """Does a Pad node's output feed a Conv?"""
    pads = {n.output[0] for n in model.graph.node if n.op_type == "Pad"}
    return any(n.op_type == "Conv" and n.input[0] in pads for n in model.graph.node)


def _value_types(model: ModelProto) -> dict[str, int]:
    """The element type of every value onnx's shape inference types ({} where it fails)."""
    try:
        g = onnx.shape_inference.infer_shapes(_without_weights(model)).graph
    except Exception:  # onnx's inference refusing a model onnxruntime may still load
        return {}
    return {v.name: v.type.tensor_type.elem_type for v in (*g.input, *g.value_info, *g.output)}


Found = tuple[onnx.NodeProto, bool]  # a node, and whether it is in a subgraph
_WATCHED = ("Conv", "ReduceMean", "QuantizeLinear", "DequantizeLinear")
_SUBGRAPHS = frozenset({"If", "Loop", "Scan", "SequenceMap"})  # standard ops with graphs


def _watched(graph: onnx.GraphProto, nested: bool = False) -> dict[str, list[Found]]:
    """The nodes of the ops the checks read, in ``graph`` and its subgraphs, by op: one
    pass (a million-node model is a few hundred ms of Python per pass)."""
    found: dict[str, list[Found]] = {op: [] for op in _WATCHED}
    for node in graph.node:
        op = node.op_type
        hit = found.get(op)
        if hit is not None:
            hit.append((node, nested))
        elif op in _SUBGRAPHS or node.domain not in ("", "ai.onnx"):
            for attr in node.attribute:
                for sub in [attr.g] if attr.HasField("g") else attr.graphs:
                    for key, inner in _watched(sub, True).items():
                        found[key] += inner
    return found


def _constants(model: ModelProto) -> dict[str, onnx.TensorProto]:
    found = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value":
                    found[node.output[0]] = attr.t
    return found


def _finite_conv_filters(
    model: ModelProto, flat: ModelProto, folder: str | None, convs: list[Found]
) -> bool:
    """Does every Conv that onnxruntime could run in NCHWc read a filter without inf or NaN?

    NCHWc takes a Conv whose filter is constant once constant folding is done: an
    initializer, or a value computed from initializers only (a batch norm folded into the
    convolution: ``flat``'s nodes computing it are evaluated, as folding would). A filter
    that is a graph input, or computed from one, is never constant. ``flat``: ``model``'s
    structure (:func:`_structure`); ``model`` holds the weights, ``folder`` their external
    data (unknown where it is needed and None).
    """
    if not convs:
        return True
    if any(nested for _, nested in convs):
        return False
    constants = {**_constants(model), **_constants(flat)}
    inputs = {i.name for i in model.graph.input} - set(constants)
    producers = {o: n for n in flat.graph.node for o in n.output if o}
    computed: list[str] = []
    needed: set[int] = set()  # ids of the nodes that compute them
    for node, _ in convs:
        name = node.input[1]
        if name in inputs:
            continue
        if name in constants:
            weights = _array(constants[name], folder)
            if weights is None or not _finite(weights):
                return False
            continue
        upstream = _upstream(name, producers, constants, inputs)
        if upstream is None:
            return False
        if upstream is not _RUNTIME:
            computed.append(name)
            needed |= upstream
    if not computed:
        return True
    values = _evaluate(flat, [n for n in flat.graph.node if id(n) in needed], computed,
                       constants, folder)  # fmt: skip
    return values is not None and all(_finite(v) for v in values)


def _finite(weights: np.ndarray) -> bool:
    return weights.dtype.kind != "f" or bool(np.isfinite(weights).all())


def _array(tensor: onnx.TensorProto, folder: str | None) -> np.ndarray | None:
    """A constant's value, None where its data cannot be read."""
    if tensor.data_location == onnx.TensorProto.EXTERNAL and folder is None:
        return None  # not known where its data lies
    try:
        return numpy_helper.to_array(tensor, base_dir=folder or "")
    except Exception:  # missing or unreadable data (onnx raises its ValidationError)
        return None


_RUNTIME: set[int] = set()  # _upstream's answer for a value computed from a graph input


def _upstream(
    name: str,
    producers: dict[str, onnx.NodeProto],
    constants: dict[str, onnx.TensorProto],
    inputs: set[str],
) -> set[int] | None:
    """The ids of the nodes that compute ``name`` from constants; _RUNTIME where a graph
    input is among its sources (never folded), None where a node holds a subgraph or is of
    another domain (not evaluated here)."""
    seen: set[int] = set()
    todo = [name]
    while todo:
        value = todo.pop()
        if value in constants or not value:
            continue
        if value in inputs:
            return _RUNTIME
        node = producers.get(value)
        if node is None or node.op_type in _SUBGRAPHS or node.domain not in ("", "ai.onnx"):
            return None
        if id(node) not in seen:
            seen.add(id(node))
            todo.extend(node.input)
    return seen


def _evaluate(
    flat: ModelProto,
    nodes: list[onnx.NodeProto],
    names: list[str],
    constants: dict[str, onnx.TensorProto],
    folder: str | None,
) -> list[np.ndarray] | None:
    """``names``' values, computed by ``nodes`` (in graph order) from ``constants`` with
    onnx's reference evaluator; None where a constant's data cannot be read or it fails."""
    from onnx.reference import ReferenceEvaluator

    produced = {o for n in nodes for o in n.output}
    sources = sorted({i for n in nodes for i in n.input if i and i not in produced})
    feeds = {}
    for source in sources:
        value = _array(constants[source], folder)
        if value is None:
            return None
        feeds[source] = value
    h = onnx.helper
    graph = h.make_graph(nodes, "filters", [h.make_empty_tensor_value_info(s) for s in sources],
                         [h.make_empty_tensor_value_info(n) for n in names])  # fmt: skip
    sub = h.make_model(graph, opset_imports=flat.opset_import, ir_version=flat.ir_version)
    try:
        return [np.asarray(v) for v in ReferenceEvaluator(sub).run(None, feeds)]
    except Exception:  # an op the reference evaluator lacks: unknown
        return None


def _structure(model: ModelProto) -> ModelProto:
    """``model`` as onnxruntime's optimizers see it: its local functions inlined, as
    onnxruntime inlines them when it loads the model (a Conv or ReduceMean in a function
    is then in the graph), its large initializers typed inputs without data. ``model``
    itself where it has no functions."""
    if not model.functions:
        return model
    out = _without_weights(model)
    out.functions.extend(model.functions)
    flat = onnx.inliner.inline_local_functions(out)
    # the functions' own opset imports (com.microsoft's contrib ops), which the inliner
    # leaves behind: without them onnx's shape inference refuses the whole model
    have = {o.domain for o in flat.opset_import}
    for f in model.functions:
        for o in f.opset_import:
            if o.domain not in have:
                flat.opset_import.append(o)
                have.add(o.domain)
    return flat


_SMALL = 64  # initializers kept for shape inference (shape tensors and axes); others typed


def _means_over_non_empty_axes(model: ModelProto, means: list[Found]) -> bool:
    """Does every ReduceMean reduce axes whose sizes are static and positive?"""
    if not means:
        return True
    if any(nested for _, nested in means):
        return False
    try:
        inferred = onnx.shape_inference.infer_shapes(_without_weights(model))
    except Exception:  # onnx's inference refusing a model onnxruntime may still load
        return False
    g = inferred.graph
    shapes = {v.name: v.type.tensor_type for v in (*g.input, *g.value_info, *g.output)}
    constants = _constants(model)
    for node, _ in means:
        t = shapes.get(node.input[0])
        if t is None or not t.HasField("shape"):
            return False
        dims = t.shape.dim
        axes = _axes(node, constants)
        if axes is None:
            return False
        for axis in axes or range(len(dims)):
            dim = dims[axis]
            if not dim.HasField("dim_value") or dim.dim_value <= 0:
                return False
    return True


def _axes(node: onnx.NodeProto, constants: dict[str, onnx.TensorProto]) -> list[int] | None:
    """ReduceMean's axes ([] for all of them), or None when they are computed."""
    for attr in node.attribute:
        if attr.name == "axes":
            return list(attr.ints)
    if len(node.input) < 2 or not node.input[1]:
        return []
    tensor = constants.get(node.input[1])
    if tensor is None:
        return None
    return [int(a) for a in numpy_helper.to_array(tensor).reshape(-1)]


def _without_weights(model: ModelProto) -> ModelProto:
    """``model`` for shape inference: large initializers become typed inputs, without data."""
    out = ModelProto()
    out.ir_version = model.ir_version
    out.opset_import.extend(model.opset_import)
    g, src = out.graph, model.graph
    g.name = src.name
    g.node.extend(src.node)
    g.input.extend(src.input)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)  # (the export's types of contrib ops' values)
    declared = {i.name for i in src.input}
    for t in src.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL and int(np.prod(t.dims)) <= _SMALL:
            g.initializer.append(t)
        elif t.name not in declared:
            g.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    return out
