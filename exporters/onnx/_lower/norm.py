"""Lowerings of the normalizations (graphdsl.ops.norm).

float32 and narrower floats compute in float32, as onnxruntime's kernels do, and round once
to the result dtype; float64 computes in float64. On a target whose float16 / bfloat16
LayerNormalization kernel computes in float32 and rounds once (Target.rounds_once: CUDA's),
layer_norm of those dtypes runs that kernel on the narrow values themselves (one node, no
Casts): the same float32 computation and rounding. layer_norm and group_norm run onnxruntime's
LayerNormalization kernel in float32 (measured: a two-pass computation, the mean and then the
mean of squared deviations, as the reference's): a row of 10001 +- 0.001 loses its float32
digits to the mean (condition number mean|x| / sqrt(var + eps), which the matrix and fuzz
tolerances state), not more. Its float64 kernel takes epsilon as the float32 attribute
(1e-5 in float32 moved a row of variance 2e-7 by 1.2e-8 relatively, 1e8 float64 ulps): float64
is composed (ReduceMean, Sub, Mul, ReduceMean, Add, Sqrt, Div), as on targets without the
kernel. ONNX's GroupNormalization has no kernel in the tables (onnxruntime expands it into a
function): group_norm reshapes to [N, groups, rest] and normalizes the last axis.

CUDA's LayerNormalization (onnxruntime/core/providers/cuda/nn/layer_norm_impl.cu, read, not
measured) computes the mean and variance in one pass (Welford's update, float32 for float32
and narrower) rather than two, and refuses a last axis of size 1 ("the size must not be 1",
nn/layer_norm.cc): there a size-1 axis is composed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import helper

from exporters.onnx._builder import NARROW, Builder, V
from exporters.onnx._lower._common import TYPED, SymbolicDims, T, register
from exporters.onnx._lower.control import DOMAIN, FUNCTIONS, Functions
from exporters.onnx._lower.layers import _producer
from exporters.onnx._types import type_name
from graphdsl.dtypes import DType
from graphdsl.graph import Symbol


def _compute(out: DType) -> DType:
    """The dtype a norm computes in: float64 for float64, float32 for everything narrower."""
    return T.float64 if out is T.float64 else T.float32


def _epsilon(epsilon: float, f: DType) -> float:
    """``epsilon`` as ``f`` holds it, kept positive and finite: rounded to 0 (below float32's
    smallest subnormal) a constant row would give 0 / 0 = NaN where the reference gives 0."""
    if f is T.float64:
        return epsilon
    info = np.finfo(np.float32)
    return float(np.clip(np.float32(epsilon), info.smallest_subnormal, info.max))


def _kernel(b: Builder, f: DType, size: int | str) -> bool:
    """Does LayerNormalization run in ``f`` here (float32 with a kernel on the target, or a
    narrow float whose kernel rounds once), over a last axis of ``size``? onnxruntime's CPU
    kernel fails on an empty one ("Size of X.shape[axis:] must be at least 1"), its CUDA
    kernel on a size of 1 too: a size that is not a static one above that is composed."""
    if f is T.float32:
        kernel = b.target.has("LayerNormalization", "FLOAT")
    else:
        kernel = b.target.rounds_once("LayerNormalization", type_name(f))
    smallest = 2 if b.target.name == "cuda" else 1
    return kernel and isinstance(size, int) and size >= smallest


def _mean_last(b: Builder, x: V) -> V:
    """ReduceMean over the last axis, kept (``x``'s dtype must have the kernel)."""
    cd = b.compute_dtype("ReduceMean", x.dtype)
    if cd is not x.dtype:
        raise b.fail(f"no ReduceMean kernel for {x.dtype.name}", "export for another target")
    return b.node("ReduceMean", [x.name, b.int64s([-1])], x.dtype, keepdims=1)


def _normalized(b: Builder, x: V, epsilon: float) -> V:
    """(x - mean) / sqrt(var + epsilon) over the last axis, composed in x's dtype in two
    passes (the mean, then the mean of squared deviations), as the reference computes it."""
    f = x.dtype
    d = b.elementwise("Sub", [x, _mean_last(b, x)])
    var = _mean_last(b, b.elementwise("Mul", [d, d]))
    s = b.elementwise("Sqrt", [b.elementwise("Add", [var, b.scalar(_epsilon(epsilon, f), f)])])
    return b.elementwise("Div", [d, s])


def _layer_norm_kernel(b: Builder, x: V, scale: V, bias: V | None, epsilon: float) -> V:
    """onnxruntime's LayerNormalization over the last axis of ``x`` (float32, or a narrow
    float whose kernel computes in float32), scale and bias of x's dtype."""
    inputs = [x.name, scale.name] + ([bias.name] if bias is not None else [])
    eps = _epsilon(epsilon, T.float32)  # the attribute is a float32 on every dtype
    return b.node("LayerNormalization", inputs, x.dtype, axis=-1, epsilon=eps)


@register("layer_norm")
def _layer_norm(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    if 0 in node.inputs[0].shape:  # no elements: the empty result (onnxruntime 1.31's fused
        # norm gives its statistics another shape than they are declared with there, and fails
        # beside other reductions of the same value: "re-use buffer {0} != {1}")
        return b.cast(args[0], node.dtype)
    out = args[0].dtype
    epsilon = float(node.attrs["epsilon"])
    size = node.inputs[0].shape[-1]
    if out in NARROW and all(a.dtype is out for a in args) and _kernel(b, out, size):
        return _layer_norm_kernel(b, args[0], args[1], args[2], epsilon)
    f = _compute(out)
    x, gamma, beta = (b.cast(a, f) for a in args)
    if _kernel(b, f, size):
        return b.cast(_layer_norm_kernel(b, x, gamma, beta, epsilon), out)
    z = _normalized(b, x, epsilon)
    return b.cast(b.elementwise("Add", [b.elementwise("Mul", [z, gamma]), beta]), out)


@register("rms_norm")
def _rms_norm(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # Pow(x, 2), ReduceMean, Add epsilon, Sqrt, Div, Mul (onnxruntime's RMSNormalization is
    # opset 23, the export's 21): onnxruntime's optimizer fuses this whole pattern into its
    # SimplifiedLayerNormalization, but not with Mul(x, x) for the square (measured on 1.32);
    # its Pow(x, 2) is x * x bit for bit (4M float32 and float64 values, NaN, inf, subnormals
    # and +-max among them). All terms positive: no cancellation
    if 0 in node.inputs[0].shape:  # no elements: the empty result (onnxruntime 1.31's fused
        # norm gives its statistics another shape than they are declared with there, and fails
        # beside other reductions of the same value: "re-use buffer {0} != {1}")
        return b.cast(args[0], node.dtype)
    out = args[0].dtype
    f = _compute(out)
    epsilon = _epsilon(float(node.attrs["epsilon"]), f)
    fused = None if b.exact else _skip_norm(b, node, args, epsilon)
    if fused is not None:
        return fused
    x, weight = (b.cast(a, f) for a in args)
    offset = float(node.attrs["weight_offset"])
    ms = _mean_last(b, b.elementwise("Pow", [x, b.scalar(2.0, f)]))
    rms = b.elementwise("Sqrt", [b.elementwise("Add", [ms, b.scalar(epsilon, f)])])
    normalized = b.elementwise("Div", [x, rms])
    if node.attrs["multiply_before_cast"]:  # Gemma: one rounding, at the end
        if offset:
            weight = b.elementwise("Add", [weight, b.scalar(offset, f)])
        return b.cast(b.elementwise("Mul", [normalized, weight]), out)
    # Llama: the normalized input rounded to the result dtype, and weight + offset (the offset
    # rounded to the dtype first) and the product in it; a product or sum of two values of a
    # narrow dtype in float32, rounded once, is the narrow dtype's own (float32 holds 2p + 2
    # bits of a p-bit significand: the double rounding is innocuous)
    normalized = b.cast(b.cast(normalized, out), f)
    if offset:
        rounded = float(np.float64(offset).astype(out.np))
        weight = b.cast(b.cast(b.elementwise("Add", [weight, b.scalar(rounded, f)]), out), f)
    return b.cast(b.elementwise("Mul", [normalized, weight]), out)


def _skip_norm(b: Builder, node: Symbol, args: list[V], epsilon: float) -> V | None:
    """``export(exact=False)``: rms_norm(x + skip, weight) as onnxruntime's
    SkipSimplifiedLayerNormalization (com.microsoft), which also gives the sum, where the
    norm's input is a float32 ``add`` of two operands of its shape whose ONNX Add nothing
    has read yet: the Add is removed and the fused node makes its value (the sum is the
    same float32 addition, bit for bit; the norm is within rms_norm's bound, as onnxruntime's
    SimplifiedLayerNormalization, which its optimizer fuses the composed norm into anyway).
    None elsewhere (the composed norm stays)."""
    src = node.inputs[0]
    if b.target.name not in ("cpu", "cuda") or args[0].dtype is not T.float32:
        return None
    if float(node.attrs["weight_offset"]) or node.attrs["multiply_before_cast"]:
        return None
    if src.op != "add" or any(i.shape != src.shape or i.dtype is not T.float32
                              for i in src.inputs) or args[1].dtype is not T.float32:
        return None  # fmt: skip
    found = _producer(b, args[0].name)
    if found is None or found[1].op_type != "Add":
        return None
    at, add = found
    if any(args[0].name in n.input for n in b.nodes[at + 1:]):
        return None  # the sum is read already: it must stay before its readers
    sources = list(add.input)
    del b.nodes[at]
    name = _skip_norm_function(b, epsilon)
    y = b.fresh("skip_norm")
    n = b.nodes.add()
    n.CopyFrom(helper.make_node(name, [*sources, args[1].name], [y, args[0].name],
                                domain=DOMAIN))  # fmt: skip
    b.memo.setdefault(TYPED, []).append((y, node))
    return V(y, T.float32)


def _skip_norm_function(b: Builder, epsilon: float) -> str:
    functions: Functions = b.memo[FUNCTIONS]
    fused = helper.make_node("SkipSimplifiedLayerNormalization", ["input", "skip", "gamma"],
                             ["output", "", "", "input_skip_bias_sum"], domain="com.microsoft",
                             epsilon=epsilon)  # fmt: skip
    doc = ("graphdsl rms_norm(x + skip) under export(exact=False): onnxruntime's com.microsoft "
           "SkipSimplifiedLayerNormalization, the sum bit for bit, the norm within rms_norm's "
           "bound (exporters/onnx/_lower/norm.py)")  # fmt: skip
    return functions.contrib(f"com.microsoft.SkipSimplifiedLayerNormalization.epsilon{epsilon!r}",
                             ["input", "skip", "gamma"], ["output", "input_skip_bias_sum"],
                             fused, doc)  # fmt: skip


def _group_shape(b: Builder, full: str, shape: Sequence[int | str], groups: int) -> str:
    """[N, groups, rest] as a 1-D int64 tensor from the input's run-time shape ``full`` and
    static ``shape`` (C static): rest = C / groups * the spatial sizes (at run time where
    symbolic)."""
    batch = b.node("Slice", [full, b.int64s([0]), b.int64s([1])], T.int64).name
    per_group = int(shape[1]) // groups
    spatial = shape[2:]
    if all(isinstance(d, int) for d in spatial):
        rest = b.int64s([groups, per_group * int(np.prod([int(d) for d in spatial]))])
        return b.node("Concat", [batch, rest], T.int64, axis=0).name
    size = b.int64s([per_group])
    for axis in range(2, len(shape)):
        dim = b.node("Slice", [full, b.int64s([axis]), b.int64s([axis + 1])], T.int64).name
        size = b.node("Mul", [size, dim], T.int64).name
    return b.node("Concat", [batch, b.int64s([groups]), size], T.int64, axis=0).name


@register("group_norm")
def _group_norm(b: Builder, node: Symbol, args: list[V], dims: SymbolicDims) -> V:
    # ONNX GroupNormalization-21 (scale and bias per channel, as here; opset 18 had them per
    # group) has no kernel in the measured tables: the input is reshaped to [N, groups, rest]
    # and each group normalized over its last axis, then gamma and beta apply per channel
    out = args[0].dtype
    f = _compute(out)
    x, gamma, beta = (b.cast(a, f) for a in args)
    shape = node.inputs[0].shape
    groups = int(node.attrs["num_groups"])
    epsilon = float(node.attrs["epsilon"])
    spatial = [int(d) if isinstance(d, int) else -1 for d in shape[2:]]
    rest = -1 if -1 in spatial else int(shape[1]) // groups * int(np.prod(spatial))
    if rest == 0:  # an empty group (a static 0 among C // groups and the spatial sizes): an
        # empty result, and no Reshape (its 0 would mean "copy that dimension")
        z = x
    elif _kernel(b, f, rest):
        # every size but N static and positive: Reshape's 0 keeps N (allowzero=0)
        grouped = b.node("Reshape", [x.name, b.int64s([0, groups, rest])], f)
        ones = b.node("Expand", [b.scalar(1.0, f).name, b.int64s([rest])], f)
        z = _layer_norm_kernel(b, grouped, ones, None, epsilon)
        z = b.node("Reshape", [z.name, b.int64s([0, *(int(d) for d in shape[1:])])], f)
    else:
        full = b.node("Shape", [x.name], T.int64).name
        grouped = b.node("Reshape", [x.name, _group_shape(b, full, shape, groups)], f)
        z = b.node("Reshape", [_normalized(b, grouped, epsilon).name, full], f)
    per_channel = b.int64s([-1] + [1] * (len(shape) - 2))
    g = b.node("Reshape", [gamma.name, per_channel], f)
    beta_c = b.node("Reshape", [beta.name, per_channel], f)
    return b.cast(b.elementwise("Add", [b.elementwise("Mul", [z, g]), beta_c]), out)
