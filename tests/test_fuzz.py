"""Random graphs run three ways and agree: ``gd.evaluate`` (the numpy reference),
onnxruntime (``exporters.onnx.export`` + ``run``) and ``onnx.reference.ReferenceEvaluator``
on the exported model; dtypes, shapes and values (see tests/fuzz_graphs.py for the graphs,
the inputs and how outputs are compared).

Every value no later node reads is an output, so every op drawn is compared: the summary
counts the ops run (their nodes reach an output), and the default run asserts every op of
the generator runs (the few its random graphs leave out by chance in graphs drawn for
them); each op also runs in every graph of its own in test_every_op_agrees_on_three_backends.

Where the ReferenceEvaluator cannot run a model at all (a kernel it lacks), its outputs are
left out; where an output disagrees through a known deviation of its own (its Pow computes
x ** 0.5 as sqrt, ...), it is excused only if it depends on a node meeting that deviation:
that output is compared on the other two backends only, the graph's other outputs on all
three. The reasons are recorded, and the test asserts such outputs stay a small fraction
of the run. Nothing is skipped silently.

The normal suite runs a fixed-seed set of 300 graphs (``derandomize=True``). Long mode::

    GRAPHDSL_FUZZ_EXAMPLES=10000 .venv/bin/python -m pytest tests/test_fuzz.py -q -s \
        -p no:cacheprovider

draws 10000 graphs and prints progress to stderr every 500 graphs, then a summary (ops,
policies, dtypes covered, ReferenceEvaluator gaps). ``GRAPHDSL_FUZZ_SEED=N`` picks another
fixed seed set (it switches ``derandomize`` off and seeds hypothesis with N). A failure prints
the Python code that rebuilds the graph and its inputs; each one found so far is pinned as a
small explicit graph in tests/test_fuzz_regressions.py.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import pytest
from backend import export, run
from fuzz_graphs import (
    ALL_DTYPES,
    FAMILY,
    STEP_OPS,
    FuzzCase,
    Tol,
    ancestors,
    compare,
    fuzz_cases,
    intermediates,
    tolerances,
)
from hypothesis import HealthCheck, given, seed, settings
from onnx.reference import ReferenceEvaluator

import graphdsl as gd
from exporters.onnx._carried import CARRIER, carried_io
from graphdsl.ops.cast import cast_array
from graphdsl.shapes import bind_dim

EXAMPLES = int(os.environ.get("GRAPHDSL_FUZZ_EXAMPLES", "300"))
COVERAGE_FROM = 250  # graphs per run from which the coverage assertions hold (4 fresh seeds held)
SEED = os.environ.get("GRAPHDSL_FUZZ_SEED")
PROGRESS_EVERY = 500
# exact float outputs agree bit for bit, the sign of zero included
ZERO_SIGN = True
# ReferenceEvaluator gaps may cost at most this fraction of the outputs' three-way comparisons
MAX_REFERENCE_GAPS = 0.05
# ops the default run need not run (each runs in every graph of its own in
# test_every_op_agrees_on_three_backends): none
NOT_EVERY_RUN: frozenset[str] = frozenset()
# graphs drawn for each op the default run's random graphs left out (they hold some 190
# distinct op sequences: a few ops are left out by chance), and at most how many such ops
TOP_UP = 2
MAX_TOPPED_UP = 8


@dataclass
class Stats:
    graphs: int = 0
    outputs: int = 0
    approximate_outputs: int = 0
    # outputs the ReferenceEvaluator was left out of, by reason, and the graphs with any
    reference_gaps: Counter[str] = field(default_factory=Counter)
    gap_graphs: int = 0
    # the ops run (their nodes reach an output: FuzzCase.executed), and the ops built
    ops: Counter[str] = field(default_factory=Counter)
    built: Counter[str] = field(default_factory=Counter)
    policies: Counter[str] = field(default_factory=Counter)
    dtypes: Counter[str] = field(default_factory=Counter)
    # graphs with a symbolic dimension, by the sizes bound to it (first run, then the rerun)
    bindings: Counter[str] = field(default_factory=Counter)
    started: float = field(default_factory=time.monotonic)

    def summary(self) -> str:
        gaps = sum(self.reference_gaps.values())
        built, ran = sum(self.built.values()), sum(self.ops.values())
        never = sorted(set(STEP_OPS) - set(self.ops))
        lines = [
            f"{self.graphs} graphs, {self.outputs} outputs ({self.approximate_outputs} "
            f"compared within a tolerance) in {time.monotonic() - self.started:.1f} s",
            f"ReferenceEvaluator left out of {gaps} output comparisons in {self.gap_graphs} "
            f"graphs: {dict(self.reference_gaps)}",
            f"ops built {built}, run {ran} ({ran / max(built, 1):.0%}: their nodes reach an "
            f"output); of the {len(set(STEP_OPS))} ops drawn, never run: {never}",
            f"ops run: {dict(sorted(self.ops.items()))}",
            f"policies: {dict(sorted(self.policies.items()))}",
            f"dtypes: {dict(sorted(self.dtypes.items()))}",
            f"symbolic graphs by bound sizes (first, rerun): {dict(sorted(self.bindings.items()))}",
        ]
        return "\n".join(lines)


def reference_evaluator(
    model: onnx.ModelProto, inputs: dict[str, np.ndarray]
) -> tuple[list[np.ndarray], None] | tuple[None, str]:
    """Outputs of onnx's ReferenceEvaluator, or (None, why it cannot run this model)."""
    # the dtypes onnxruntime cannot hold are carried in wider types (int4 in int8, float6
    # in float32: exporters/onnx/_carried.py), as run() converts them
    carried_in, carried_out = carried_io({p.key: p.value for p in model.metadata_props})
    inputs = {k: v.astype(CARRIER[carried_in[k]].np) if k in carried_in else v
              for k, v in inputs.items()}  # fmt: skip
    try:
        sess = ReferenceEvaluator(model)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            outs = sess.run(None, inputs)
    except Exception as e:  # any failure to run is recorded as a gap, with its reason
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return None, f"{type(e).__name__}: {first[:120]}"
    names = [o.name for o in model.graph.output]
    return [np.asarray(o).astype(carried_out[n].np) if n in carried_out else np.asarray(o)
            for o, n in zip(outs, names, strict=True)], None  # fmt: skip


# onnx.reference's MatMul calls np.dot for operands of rank <= 2, and np.dot (BLAS gemv/gemm)
# skips zero terms: [0] @ [[inf]] gives 0 there, NaN in numpy's matmul and onnxruntime.
BLAS_ZERO_SKIP = "ReferenceEvaluator MatMul uses np.dot, which skips 0 * inf/NaN terms"


def _blas_zero_skip(g: gd.Graph, env: dict[int, np.ndarray]) -> set[int]:
    """The float matmuls of ``g`` on whose operands np.dot differs from np.matmul, and the
    linears and attentions of rank 2 (their lowerings' MatMuls) with a non-finite operand
    or, for attention, non-finite scores or a NaN result (softmax weights of NaN: a fully
    masked row, an infinite score): a product there may meet a 0 that np.dot skips."""
    hit = set()
    for node in g.used():
        if node.op not in ("matmul", "linear", "scaled_dot_product_attention"):
            continue
        if not node.in_dtypes[0].is_float:
            continue
        ops = [cast_array(env[id(i)], d).astype(np.float32 if d.bits < 32 else d.np)
               for i, d in zip(node.inputs, node.in_dtypes, strict=True)]  # fmt: skip
        if any(a.ndim > 2 for a in ops[:3]):
            continue
        with np.errstate(all="ignore"):
            if node.op == "matmul":
                a, b = ops
                if not np.array_equal(np.dot(a, b), np.matmul(a, b), equal_nan=True):
                    hit.add(id(node))
            elif not all(np.isfinite(a).all() for a in ops) or (
                    node.op == "scaled_dot_product_attention"
                    and (not np.isfinite(np.matmul(ops[0], np.swapaxes(ops[1], -1, -2))).all()
                         or np.isnan(np.asarray(env[id(node)], np.float64)).any())):
                hit.add(id(node))  # fmt: skip
    return hit


# onnx.reference's Pow calls np.power, which computes a scalar exponent of 0.5 as sqrt:
# (-inf) ** 0.5 gives NaN there, +inf in C's pow (the reference's, onnxruntime's).
NUMPY_SQRT_POW = "ReferenceEvaluator Pow is np.power, which computes x ** 0.5 as sqrt"


def _numpy_sqrt_pow(g: gd.Graph, env: dict[int, np.ndarray]) -> set[int]:
    """The pows of ``g`` raising floats to a one-element exponent of 0.5."""
    hit = set()
    for node in g.used():
        if node.op == "pow" and node.in_dtypes[0].is_float:
            e = env.get(id(node.inputs[1]))
            if e is not None and np.size(e) == 1 and float(np.asarray(e).reshape(-1)[0]) == 0.5:
                hit.add(id(node))
    return hit


# onnx.reference's LogSoftmax is log(Softmax(x)): -inf (or a rounded log of a subnormal)
# where the softmax underflows, where onnxruntime's and the reference's (x - max) - log(sum)
# stay finite: below -87.3 (the log of float32's smallest normal) for float32 operands (the
# float64 lowering is composed, not LogSoftmax).
LOG_OF_SOFTMAX = "ReferenceEvaluator LogSoftmax is log(Softmax(x)), -inf where it underflows"


def _log_of_softmax(g: gd.Graph, env: dict[int, np.ndarray]) -> set[int]:
    """The float32 LogSoftmaxes of ``g`` giving a finite value whose exp is not normal."""
    low = float(np.log(np.finfo(np.float32).tiny))
    hit = set()
    for node in g.used():
        if node.op == "logsoftmax" and node.in_dtypes[0] is not gd.float64:
            r = np.asarray(env[id(node)]).astype(np.float64)
            if np.any(np.isfinite(r) & (r < low)):
                hit.add(id(node))
    return hit


# onnx.reference's QuantizeLinear converts round(x / scale) to int32 before it saturates
# (|x / scale| from 2**31 on, inf too, wrap to INT_MIN: 1e30 / 0.5 gives -128, not 127) and
# divides float16 by float16 in float16 (onnxruntime and the reference divide in float32,
# measured: a quotient rounded to float16 can move a tie)
QUANTIZE_INT32 = "ReferenceEvaluator QuantizeLinear wraps through int32, divides float16 in float16"


def _quantize_gap(g: gd.Graph, env: dict[int, np.ndarray]) -> set[int]:
    """The quantizes of ``g`` where onnx.reference's QuantizeLinear, run alone on their
    operands, gives other values than the reference."""
    hit = set()
    for node in g.used():
        if node.op != "quantize":
            continue
        dts = node.in_dtypes
        args = [cast_array(env[id(i)], d) for i, d in zip(node.inputs, dts, strict=True)]
        one = gd.Graph("q", input_types=[gd.TensorType(d, a.shape)
                                         for a, d in zip(args, dts, strict=True)])  # fmt: skip
        attrs = {k: node.attrs[k] for k in ("dtype", "axis", "block_size")}
        one.output(gd.ops.quantize(*one.inputs, **attrs))
        got, _ = reference_evaluator(export(one), {f"input{k}": a for k, a in enumerate(args)})
        if got is not None and not np.array_equal(got[0], env[id(node)]):
            hit.add(id(node))
    return hit


# onnx.reference's Conv dilates its kernel by inserting zeros between the taps, and its Resize
# weighs the neighbours it does not pick (nearest) and the axes it does not resize by 0 and
# adds them: where they hold inf or NaN, 0 * inf gives NaN, and -0.0 + 0 * y gives +0.0
# (onnxruntime and the reference never read them).
ZERO_TAPS = "ReferenceEvaluator dilated Conv and Resize add 0 * unread elements"
# its MaxPool reads pads [h_begin, w_begin, h_end, w_end] as [h_begin, h_end, w_begin, w_end]
# (measured: kernel 2x2, pads [0, 1, 0, 1] on 3x2 gives 3x2, onnxruntime 2x3)
MAXPOOL_PADS = "ReferenceEvaluator MaxPool takes its pads in the wrong order"
# and its Conv, ConvTranspose and pools fail or give other shapes on empty batches
EMPTY_WINDOWS = "ReferenceEvaluator Conv/ConvTranspose/pools on an empty value"
_WINDOWED = ("conv2d", "conv3d", "conv2d_transpose", "max_pool2d", "avg_pool2d")


def _vision_gap(g: gd.Graph, env: dict[int, np.ndarray]) -> dict[str, set[int]]:
    """The vision ops of ``g`` by the ReferenceEvaluator deviation each meets."""
    hit: dict[str, set[int]] = {EMPTY_WINDOWS: set(), MAXPOOL_PADS: set(), ZERO_TAPS: set()}
    for node in g.used():
        if node.op in _WINDOWED and env[id(node.inputs[0])].size == 0:
            hit[EMPTY_WINDOWS].add(id(node))
            continue
        if node.op == "max_pool2d" and (
            len(set(node.attrs["padding"])) > 1 or node.attrs["ceil_mode"]
        ):
            hit[MAXPOOL_PADS].add(id(node))
            continue
        dilated = node.op in _WINDOWED[:3] and any(d > 1 for d in node.attrs["dilation"])
        if (dilated or node.op == "resize") and node.in_dtypes[0].is_float:
            for i, d in zip(node.inputs, node.in_dtypes, strict=True):
                with np.errstate(all="ignore"):
                    v = cast_array(env[id(i)], d).astype(np.float64)
                if not np.isfinite(v).all() or (np.signbit(v) & (v == 0)).any():
                    hit[ZERO_TAPS].add(id(node))
    return hit


# its AveragePool marks the padding with NaN and averages with np.nanmean where padding is
# not counted (count_include_pad=0): a NaN in a window is left out, (NaN, 2.25) gives 2.25
# (measured on onnx 1.23; onnxruntime and the reference give NaN)
AVGPOOL_NAN = "ReferenceEvaluator AveragePool (count_include_pad=0) leaves NaN out of a window"


def _avgpool_nan(g: gd.Graph, model: onnx.ModelProto, env: dict[int, np.ndarray]) -> set[int]:
    """The average pools of ``g`` over a NaN, where ``model`` has an AveragePool that does
    not count its padding."""
    uncounted = any(
        n.op_type == "AveragePool"
        and not any(a.name == "count_include_pad" and a.i for a in n.attribute)
        for n in _nodes(model)
    )
    if not uncounted:
        return set()
    hit = set()
    for node in g.used():
        if node.op in ("avg_pool2d", "adaptive_avg_pool2d") and node.in_dtypes[0].is_float:
            with np.errstate(all="ignore"):
                v = cast_array(env[id(node.inputs[0])], node.in_dtypes[0]).astype(np.float64)
            if np.isnan(v).any():
                hit.add(id(node))
    return hit


def _nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """The nodes of ``model``'s graph and of its local functions."""
    return [*model.graph.node, *(n for f in model.functions for n in f.node)]


def _inner(node: onnx.NodeProto, functions: dict[str, onnx.FunctionProto]) -> list[onnx.NodeProto]:
    """``node`` and the nodes it runs: those of its subgraphs (If, Loop) and of the local
    function it calls, recursively."""
    out = [node]
    for a in node.attribute:
        for sub in [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs):
            for n in sub.node:
                out += _inner(n, functions)
    f = functions.get(node.op_type)
    if f is not None and node.domain == f.domain:
        for n in f.node:
            out += _inner(n, functions)
    return out


def _model_needs(model: onnx.ModelProto) -> list[list[onnx.NodeProto]]:
    """For each output of ``model``, the nodes it needs: the main graph's nodes it depends on
    (a subgraph's reads from around it included), with the nodes each runs (:func:`_inner`)."""
    functions = {f.name: f for f in model.functions}
    producer = {o: n for n in model.graph.node for o in n.output}
    needs = []
    for out in model.graph.output:
        seen: set[int] = set()
        nodes: list[onnx.NodeProto] = []
        stack = [out.name]
        while stack:
            n = producer.get(stack.pop())
            if n is None or id(n) in seen:
                continue
            seen.add(id(n))
            inner = _inner(n, functions)
            nodes += inner
            stack += [i for m in inner for i in m.input]  # (a subgraph's outer reads too)
        needs.append(nodes)
    return needs


# onnx.reference's GatherElements returns an empty 1-D array for empty indices, whatever
# their shape (measured on onnx 1.18 to 1.20; 1.23 gives the indices' shape): a top_k with
# k=0, or a sort of an empty axis, then has the wrong shape there
EMPTY_GATHER = "ReferenceEvaluator GatherElements gives shape (0,) for empty indices"


def _empty_gather(
    needs: list[onnx.NodeProto], needed: set[int], env: dict[int, np.ndarray]
) -> bool:
    """Does an output that needs the model ``needs`` and the graph's nodes ``needed`` go
    through a GatherElements and an empty value?"""
    return any(n.op_type == "GatherElements" for n in needs) and any(
        np.size(env[i]) == 0 for i in needed if i in env
    )


# onnx.reference's ScatterElements has no "mul" reduction (it writes the update) and its
# ScatterND's "max" and "min" read the data at the index array instead of its tuple
# (measured on onnx 1.18 and 1.19; 1.23 computes both right): a gap before 1.23
REDUCING_SCATTER = "ReferenceEvaluator reducing ScatterElements and ScatterND (onnx < 1.23)"
_WRONG_REDUCTIONS = {"ScatterElements": {b"mul", b"max", b"min"}, "ScatterND": {b"max", b"min"}}
# Its ScatterElements "max" and "min" keep the data's zero where -0.0 and +0.0 meet (the
# reference orders -0.0 < +0.0): seen on 1.19, measured on 1.23.2 too ([+0.0] min [-0.0]
# gives +0.0), so on every version
SCATTER_ZERO_SIGNS = "ReferenceEvaluator ScatterElements max/min keep the data's zero"


# onnx.reference's Div of integers divides in float64 and casts back (onnx 1.19.1:
# (-2**63 + 1) // 1 gives -2**63; 1.23.2 is exact): int64 values past 2**53 lose their low
# bits there, a gap before 1.23
INT_DIV_FLOAT = "ReferenceEvaluator integer Div through float64 (onnx < 1.23)"


def _int_div_float(
    needs: list[onnx.NodeProto], needed: set[int], env: dict[int, np.ndarray]
) -> bool:
    """Is onnx older than 1.23, and does an output that needs the model ``needs`` and the
    graph's nodes ``needed`` go through a Div and a 64-bit integer past 2**53?"""
    if tuple(int(p) for p in onnx.__version__.split(".")[:2]) >= (1, 23):
        return False
    if not any(n.op_type == "Div" for n in needs):
        return False
    for i in needed:
        v = env.get(i)
        if v is not None and np.asarray(v).dtype in (np.int64, np.uint64) and np.size(v):
            big = np.abs(np.asarray(v).astype(np.float64)) > 2.0**53
            if big.any():
                return True
    return False


def _reducing_scatter(needs: list[onnx.NodeProto]) -> bool:
    """Is onnx older than 1.23, and do the model's nodes ``needs`` scatter with a reduction
    it gets wrong?"""
    if tuple(int(p) for p in onnx.__version__.split(".")[:2]) >= (1, 23):
        return False
    return any(
        a.name == "reduction" and a.s in _WRONG_REDUCTIONS.get(n.op_type, ())
        for n in needs
        for a in n.attribute
    )


def _scatter_zero_signs(needs: list[onnx.NodeProto]) -> bool:
    """Do the model's nodes ``needs`` take a max or min in a ScatterElements?"""
    return any(
        n.op_type == "ScatterElements" and a.name == "reduction" and a.s in (b"max", b"min")
        for n in needs
        for a in n.attribute
    )


def _excuses(
    g: gd.Graph, model: onnx.ModelProto, env: dict[int, np.ndarray], outputs: set[int]
) -> dict[int, str]:
    """The known ReferenceEvaluator deviations that may move ``outputs`` (indices): each
    output that depends on a node meeting one, with its reason. An output whose value does
    not depend on such a node is excused by none (it is compared all the same)."""
    hits = {
        BLAS_ZERO_SKIP: _blas_zero_skip(g, env),
        NUMPY_SQRT_POW: _numpy_sqrt_pow(g, env),
        **_vision_gap(g, env),
        LOG_OF_SOFTMAX: _log_of_softmax(g, env),
        QUANTIZE_INT32: _quantize_gap(g, env),
        AVGPOOL_NAN: _avgpool_nan(g, model, env),
    }
    needs = _model_needs(model)
    if len(needs) != len(g.outputs):  # (not one model output per graph output: any may need all)
        needs = [_nodes(model)] * len(g.outputs)
    found = {}
    for k in sorted(outputs):
        needed = ancestors([g.outputs[k]])
        why = next((w for w, ids in hits.items() if ids & needed), None)
        if why is None and _empty_gather(needs[k], needed, env):
            why = EMPTY_GATHER
        if why is None and _reducing_scatter(needs[k]):
            why = REDUCING_SCATTER
        if why is None and _int_div_float(needs[k], needed, env):
            why = INT_DIV_FLOAT
        if why is None and _scatter_zero_signs(needs[k]):
            why = SCATTER_ZERO_SIGNS
        if why is not None:
            found[k] = why
    return found


def _disagreements(
    g: gd.Graph, want: list[np.ndarray], got: list[np.ndarray], tols: dict[int, Tol], name: str
) -> dict[int | None, str]:
    """What differs between ``got`` (from backend ``name``) and the reference ``want``, by
    output index (None: the outputs as a whole)."""
    if len(got) != len(want):
        return {None: f"{name} gave {len(got)} outputs, the reference {len(want)}"}
    problems: dict[int | None, str] = {}
    for k, (out, w, o) in enumerate(zip(g.outputs, want, got, strict=True)):
        msg = compare(o, w, out.dtype, tols[id(out)], zero_sign=ZERO_SIGN)
        if msg:
            problems[k] = f"output {k} ({out.type}) on {name}: {msg}"
    return problems


def _shape_problems(
    g: gd.Graph, inputs: dict[str, np.ndarray], outs: list[np.ndarray]
) -> list[str]:
    """Outputs whose shapes are not their static types with the inputs' sizes bound."""
    sizes: dict[str, int] = {}
    for s in g.inputs:
        arr = inputs[s.attrs["name"]]
        sizes.update({d: n for d, n in zip(s.shape, arr.shape, strict=True) if isinstance(d, str)})
    problems = []
    for k, (o, arr) in enumerate(zip(g.outputs, outs, strict=True)):
        want = tuple(bind_dim(d, sizes) for d in o.shape)
        if want != arr.shape:
            problems.append(f"output {k}: type {o.type} with {sizes} is {want}, got {arr.shape}")
    return problems


def _bound_sizes(g: gd.Graph, inputs: dict[str, np.ndarray]) -> str:
    return ",".join(
        str(inputs[s.attrs["name"]].shape[i])
        for s in g.inputs[:1]
        for i, d in enumerate(s.shape)
        if isinstance(d, str)
    )


def check_case(case: FuzzCase, stats: Stats | None = None, path: str | None = None) -> list[str]:
    """Run ``case`` three ways; the list of disagreements (empty when all agree).

    With ``path`` the model is exported there and onnxruntime runs the file: the fuzz test
    passes one path for every graph, so each run follows a re-export to the same path.
    A case with ``rebound`` inputs runs again on the same model with another size bound.
    """
    g, inputs = case.graph, case.inputs
    want = gd.evaluate(g, inputs)
    problems = _shape_problems(g, inputs, want)
    env = intermediates(g, inputs)
    tols = tolerances(g, env)
    model = export(g, path, check="full")
    runnable = model if path is None else path
    problems += _disagreements(g, want, run(runnable, inputs), tols, "onnxruntime").values()
    got_ref, failed = reference_evaluator(model, inputs)
    gaps: Counter[str] = Counter()
    if got_ref is None:  # it cannot run the model at all: every output left out
        gaps[str(failed)] += len(g.outputs)
    else:
        ref_problems = _disagreements(g, want, got_ref, tols, "ReferenceEvaluator")
        mismatched = {k for k in ref_problems if k is not None}
        excused = _excuses(g, model, env, mismatched) if mismatched else {}
        for k, msg in ref_problems.items():
            if k is not None and k in excused:  # a known deviation of its own, on this output
                gaps[excused[k]] += 1
            else:
                problems.append(msg)
    if case.rebound is not None:
        again = gd.evaluate(g, case.rebound)
        problems += [f"rebound: {p}" for p in _shape_problems(g, case.rebound, again)]
        tols2 = tolerances(g, intermediates(g, case.rebound))
        got2 = run(runnable, case.rebound)  # the same session, other sizes
        problems += _disagreements(g, again, got2, tols2, "onnxruntime (rebound)").values()
    if stats is not None:
        stats.graphs += 1
        stats.outputs += len(want)
        stats.approximate_outputs += sum(not tols[id(o)].exact for o in g.outputs)
        stats.reference_gaps.update(gaps)
        stats.gap_graphs += bool(gaps)
        stats.built.update(case.ops)
        stats.ops.update(case.executed())
        stats.policies[g.policy.name] += 1
        stats.dtypes.update(s.dtype.name for s in g.used())  # (what the outputs need)
        if case.rebound is not None:
            sizes = f"{_bound_sizes(g, inputs)}->{_bound_sizes(g, case.rebound)}"
            stats.bindings[sizes] += 1
        if EXAMPLES > PROGRESS_EVERY and stats.graphs % PROGRESS_EVERY == 0:
            n_gaps = sum(stats.reference_gaps.values())
            elapsed = time.monotonic() - stats.started
            print(f"fuzz: {stats.graphs}/{EXAMPLES} graphs, {n_gaps} ReferenceEvaluator gaps, "
                  f"{elapsed:.0f} s", file=sys.stderr, flush=True)  # fmt: skip
    return problems


def test_random_graphs_agree_on_three_backends(tmp_path: Path) -> None:
    stats = Stats()
    path = str(tmp_path / "fuzz.onnx")  # every graph is exported to this one path

    @settings(
        max_examples=EXAMPLES,
        derandomize=SEED is None,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(fuzz_cases())
    def check(case: FuzzCase) -> None:
        problems = check_case(case, stats, path)
        assert not problems, "backends disagree:\n" + "\n".join(problems) + "\n" + case.code

    if SEED is not None:
        check = seed(int(SEED))(check)
    check()
    assert stats.graphs >= EXAMPLES
    # the ops the random graphs did not run (hypothesis draws an op sequence again in the
    # examples it mutates from another: 300 graphs hold some 190, and leave a few ops out by
    # chance), each the first op of a few graphs more
    topped = sorted(set(STEP_OPS) - set(stats.ops) - NOT_EVERY_RUN)
    topped = topped if EXAMPLES >= COVERAGE_FROM else []
    for op in topped:
        _first_op_run(op, stats, path, TOP_UP)
    print(stats.summary() + f"\nops run in graphs drawn for them: {topped}", file=sys.stderr)
    gaps = sum(stats.reference_gaps.values())
    assert gaps <= MAX_REFERENCE_GAPS * stats.outputs, (
        f"the ReferenceEvaluator was left out of {gaps} of {stats.outputs} output comparisons: "
        f"{dict(stats.reference_gaps)}"
    )
    if EXAMPLES < COVERAGE_FROM:  # a short run (a GPU smoke run of a few graphs a seed) checks
        return  # agreement only: a handful of draws need not reach every policy and dtype
    # the generator runs every op (its node reaches an output: compared on three backends;
    # each op alone in the test below too), most of them in its random graphs, and reaches
    # every policy and every dtype
    never = set(STEP_OPS) - set(stats.ops) - NOT_EVERY_RUN
    assert not never, f"ops never run: {sorted(never)}\n{stats.summary()}"
    assert len(topped) <= MAX_TOPPED_UP, f"ops the random graphs left out: {topped}"
    assert set(stats.policies) == set(gd.policy_names())
    wanted = {d.name for d in ALL_DTYPES}
    assert wanted <= set(stats.dtypes), f"dtypes never drawn: {sorted(wanted - set(stats.dtypes))}"
    # symbolic dimensions bound at run time, to empty sizes too, and rebound on one model
    symbolic = sum(stats.bindings.values())
    empty = sum(k for b, k in stats.bindings.items() if "0" in b.replace("->", ",").split(","))
    assert symbolic >= stats.graphs // 10 and empty >= symbolic // 10, stats.summary()


def _first_op_run(op: str, stats: Stats, path: str, examples: int) -> None:
    """Run ``examples`` random graphs whose first step builds ``op`` three ways; each must
    run it (its node reaches an output)."""

    @settings(max_examples=examples, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])  # fmt: skip
    @given(fuzz_cases(first_op=op))
    def check(case: FuzzCase) -> None:
        assert op in case.executed(), f"{op} does not reach an output:\n{case.code}"
        problems = check_case(case, stats, path)
        assert not problems, "backends disagree:\n" + "\n".join(problems) + "\n" + case.code

    check()


@pytest.mark.parametrize("op", sorted(FAMILY))
def test_every_op_agrees_on_three_backends(op: str, tmp_path: Path) -> None:
    """Each op of the catalogue, as the first step of a few random graphs, in each of which
    it reaches an output: coverage by construction (hypothesis's draws reach an op late in a
    long list a few times in 300 graphs, or not at all when other cases use up its data)."""
    stats = Stats()
    _first_op_run(op, stats, str(tmp_path / "fuzz.onnx"), 5)
    assert stats.graphs == 5 and stats.ops[op] >= 5, f"{op}: {stats.summary()}"


def test_the_fuzz_families_cover_the_catalogue() -> None:
    # an alias (a second public name of an op: gd.ops.clamp is gd.ops.clip) is drawn as its op
    aliases = {"clamp": "clip"}
    assert all(getattr(gd.ops, a) is getattr(gd.ops, op) for a, op in aliases.items())
    # quantize_weights is numpy only (it builds no node: nothing to draw); its spec's test is
    # tests/test_int4_quant.py
    assert set(FAMILY) == set(gd.ops.__all__) - set(aliases) - {"quantize_weights"}


def test_canonicalize_is_the_pass_pipeline_in_one_sweep() -> None:
    """export lowers ``canonicalize(g)``: node for node the graph ``run_passes(g)`` gives."""
    differ = []

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
    @given(fuzz_cases())
    def check(case: FuzzCase) -> None:
        one, four = gd.passes.canonicalize(case.graph), gd.passes.run_passes(case.graph)
        gd.verify.verify(one, explicit_casts=True)
        if str(one) != str(four):
            differ.append(f"{case.code}\none sweep:\n{one}\nfour passes:\n{four}")

    check()
    assert not differ, f"{len(differ)} graphs differ; the first:\n{differ[0]}"
