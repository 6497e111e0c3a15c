"""No memory blow-up (issue 30): building, type checking and exporting a graph never makes
data of its inputs' size; the index arithmetic the lowerings need is computed in the model.

tests/memory_graphs.py builds a graph per op family over [2**20, 2**20] float32 inputs
(images [1, 1, 2**20, 2**20], buffers of 2**40 elements: 4 TiB each), and exports each for
the CPU and CUDA targets, in a fresh process whose peak resident set is measured (VmHWM).
Nothing runs them. Measured (Linux x86-64, Python 3.11, numpy 2.4, onnx 1.23,
onnxruntime 1.32): the imports alone peak at 83 MB, the whole run at 91 MB; before the fix,
storing one row into a [50000, 50000] buffer asked for 18.6 GiB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from typing import Any

import memory_graphs
import numpy as np
import pytest

import exporters.onnx as xo
import graphdsl as gd
from graphdsl.opdef import OPS

N = 2**20
GRAPHS = os.path.join(os.path.dirname(__file__), "memory_graphs.py")
IMPORT_MB = 150  # the imports alone (graphdsl, graphdsl.max, exporters.onnx, onnx,
# onnxruntime, numpy): 83 MB measured
PEAK_MB = 200  # the imports and every export
MODEL_BYTES = 64 << 10  # every model: its nodes and small constants (24 KB at most measured)
LARGEST_INITIALIZER = 256  # elements (the small weights of the attention case: 192)
TRACED_BYTES = 4 << 20  # allocations while one graph is built and exported (0.2 MB measured)

proc_status = pytest.mark.skipif(
    not os.path.exists("/proc/self/status"), reason="peak RSS read from /proc (Linux)"
)


def _measure(*args: str) -> dict[str, Any]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, GRAPHS, *args], capture_output=True, text=True,
                          env=env, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


@proc_status
def test_the_imports_alone_stay_under_the_baseline() -> None:
    peak = _measure("import")["peak_mb"]
    assert peak < IMPORT_MB, f"importing graphdsl, onnx and onnxruntime peaks at {peak:.0f} MB"


@proc_status
def test_huge_graphs_build_and_export_in_little_memory() -> None:
    """Every family's graph over 2**20 x 2**20 inputs, built and exported for both targets,
    in under 200 MB (the imports included), each model small, no initializer of the data's
    size."""
    got = _measure("export", str(N))
    assert got["peak_mb"] < PEAK_MB, f"peak RSS {got['peak_mb']:.0f} MB"
    assert len(got["models"]) == 2 * len(memory_graphs.graphs(64))
    for name, (size, largest) in got["models"].items():
        assert size < MODEL_BYTES, f"{name}: {size} bytes"
        assert largest <= LARGEST_INITIALIZER, f"{name}: an initializer of {largest} elements"


def test_no_graph_allocates_much_while_built_and_exported() -> None:
    """The Python and numpy allocations (tracemalloc) of building and exporting each graph
    over 2**20 x 2**20 inputs peak under 4 MB (0.2 MB measured): a table of windows,
    positions or a mask along one axis of 2**20 would take 8 MB and more, per tap."""
    for name, build in memory_graphs.graphs(N).items():
        tracemalloc.start()
        try:
            g, weights = build()
            xo.export(g, weights=weights)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < TRACED_BYTES, f"{name}: {peak / 2**20:.1f} MB allocated at the peak"


def test_the_graphs_cover_every_op() -> None:
    """Every op of the registry (each family's) is in some graph of memory_graphs.py."""
    seen: set[str] = set()

    def walk(g: Any) -> None:
        for node in g.nodes:
            seen.add(node.op)
            for v in node.attrs.values():
                for sub in v if isinstance(v, (list, tuple)) else [v]:
                    if isinstance(sub, gd.Graph):
                        walk(sub)

    for build in memory_graphs.graphs(64).values():
        g, _ = build()
        walk(getattr(g, "_graph", g))
    assert set(OPS) <= seen, f"not covered: {sorted(set(OPS) - seen)}"


def test_export_memory_does_not_grow_with_the_inputs() -> None:
    """The exported models of 64 x 64 and 2**20 x 2**20 inputs have the same initializers
    (but for constants folded at the small size): nothing of the data's size is made."""
    for name in ("pool", "pad_resize", "attention", "max_buffers", "max_max_ops"):
        sizes = []
        for n in (256, N):
            g, weights = memory_graphs.graphs(n)[name]()
            m = xo.export(g, weights=weights)
            sizes.append(sum(int(np.prod(t.dims)) for t in m.graph.initializer))
        assert sizes[1] <= sizes[0], (name, sizes)


def _run_tables(make: Any) -> list[np.ndarray]:
    """Run the tables ``make(b)`` builds (a list of ONNX values) as one model's outputs."""
    import onnxruntime as ort
    from onnx import helper

    from exporters.onnx._builder import Builder
    from exporters.onnx._targets import TARGETS

    b = Builder(TARGETS["cpu"])
    for v in make(b):
        b.model.graph.output.append(helper.make_empty_tensor_value_info(v.name))
    b.model.ir_version = 10
    b.model.opset_import.append(helper.make_opsetid("", 21))
    session = ort.InferenceSession(b.model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(session.run(None, {}))


def test_the_index_tables_computed_in_the_model_equal_the_references() -> None:
    """The lowerings' position tables (exporters/onnx/_lower/_index.py), run on onnxruntime,
    equal the numpy tables the exporter used to make (and graphdsl's reference computes),
    entry for entry, and say exactly when a tap can fall outside; resize's weights bit for
    bit."""
    import itertools

    from exporters.onnx._lower import _index as ix
    from graphdsl.ops._windows import interpolation_taps, nearest_indices, tap_counts

    def conv(n: int, k: int, s: int, d: int, lo: int, out: int) -> np.ndarray:
        pos = np.arange(out)[:, None] * s + np.arange(k)[None, :] * d - lo
        return np.where((pos >= 0) & (pos < n), pos, -1)

    def transposed(n: int, k: int, s: int, d: int, lo: int, out: int) -> np.ndarray:
        num = np.arange(out)[:, None] + lo - np.arange(k)[None, :] * d
        i = num // s
        return np.where((num % s == 0) & (i >= 0) & (i < n), i, -1)

    grid = list(itertools.product((1, 2, 7), (1, 2, 3), (1, 2, 3), (1, 2), (0, 1, 3), (1, 4, 9)))
    for fn, ref in ((ix.conv_taps, conv), (ix.transposed_taps, transposed)):
        made: list[Any] = []

        def build(b: Any, fn: Any = fn, made: list[Any] = made) -> list[Any]:
            made.extend(fn(b, *c) for c in grid)
            return [t.v for t in made]

        got = _run_tables(build)
        for c, t, table in zip(grid, made, got, strict=True):
            want = ref(*c)
            assert np.array_equal(table, want), (fn.__name__, c)
            assert t.outside == bool((want < 0).any()), (fn.__name__, c)
    spans = [(c, (0, c[0] + 2 * c[4]) if boundary else (c[4], c[4] + c[0]))
             for c in grid for boundary in (True, False)]  # fmt: skip
    got = _run_tables(lambda b: [ix.tap_counts(b, k, s, d, out, lo, hi)
                                 for (_, k, s, d, _, out), (lo, hi) in spans])  # fmt: skip
    for ((n, k, s, d, _, out), (lo, hi)), counts in zip(spans, got, strict=True):
        assert np.array_equal(counts, tap_counts(n, k, s, d, out, lo, hi)), (n, k, s, d, out)
    sizes = list(itertools.product(range(1, 13), range(1, 13)))
    got = _run_tables(lambda b: [ix.nearest_taps(b, i, o) for i, o in sizes])
    for (i, o), idx in zip(sizes, got, strict=True):
        assert np.array_equal(idx, nearest_indices(i, o)), (i, o)
    for mode, fn in (("bilinear", ix.linear_taps), ("bicubic", ix.cubic_taps)):
        got = _run_tables(lambda b, fn=fn: [v for i, o in sizes for v in fn(b, i, o)])
        for (i, o), idx, w in zip(sizes, got[::2], got[1::2], strict=True):
            want_idx, want_w = interpolation_taps(i, o, mode)
            assert np.array_equal(idx, want_idx.reshape(-1)), (mode, i, o)
            assert w.tobytes() == want_w.tobytes(), (mode, i, o)


def test_pooling_checks_its_windows_without_a_table_of_them() -> None:
    """The pooling type rule's "no window holds only padding" (it built every window's
    taps: 27 MB for one axis of 2**20) equals the table's answer."""
    import itertools

    from graphdsl.ops._windows import tap_counts, windows_reach_input

    for n, k, s, d, pad, out in itertools.product(
        range(1, 8), range(1, 4), range(1, 4), range(1, 4), range(4), range(10)
    ):
        want = bool(np.all(tap_counts(n, k, s, d, out, pad, pad + n)))
        assert windows_reach_input(n, k, s, d, pad, out) == want, (n, k, s, d, pad, out)
