"""MAX programs run unchanged on graphdsl.max (issue 17, part 3).

tests/data/max_graph_programs.json holds three programs written against max.graph's
documented API (an MLP, a causal attention block, Python scalars of every kind against
tensors of six dtypes), their exact source, and what max 26.7 computed on its CPU engine
(scripts/record_max_graph.py). Each test takes that source, changes only its import lines
(``from max.graph import ...`` and ``from max.dtype import DType`` become ``from graphdsl.max
import ...``), executes it, exports the graph to ONNX and runs it on onnxruntime's CPU
provider, and compares dtypes, shapes and values with MAX's:

- the scalars program bit for bit (integers wrap, float16 and bfloat16 round after each op,
  int / int is float64, signed zeros included), and its build errors class for class;
- the MLP and the attention block within float32 rounding: MAX's and onnxruntime's matmul
  and softmax kernels sum in their own orders, so an output may differ by a few roundings of
  the terms it sums. Each output must be within the bound :func:`bounds` derives through the
  program from its inputs (tests/floats.py's rule: dot products within γ_n Σ|terms|, exp
  within 2 ulps, errors carried through the layers; twice one evaluation's, for two
  evaluations), so the attention probabilities' masked zeros must be exact. Measured on
  onnxruntime 1.32: the MLP bit for bit, the attention block within 1.8 (output) and 1.4
  (probabilities) roundings of the terms' magnitudes, graphdsl's reference interpreter
  within 2.9 and 5.6.

One cell differs by design: ``-x`` on uint8 builds in max.graph but its compiler refuses it
("Failed to compile the model"); graphdsl negates modulo 2**8.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import floats
import numpy as np
import pytest
from backend import export, run

import graphdsl as gd
from graphdsl import DType

DATA = Path(__file__).parent / "data"
RECORDED: dict[str, Any] = json.loads((DATA / "max_graph_programs.json").read_text())
PROGRAMS: dict[str, Any] = RECORDED["programs"]

IMPORTS = {
    "from max.dtype import DType": "from graphdsl.max import DType",
    "from max.graph import DeviceRef, Graph, TensorType, ops": (
        "from graphdsl.max import DeviceRef, Graph, TensorType, ops"
    ),
}


def on_graphdsl(source: str) -> str:
    """``source`` with its max imports changed to graphdsl.max, and nothing else."""
    lines = source.splitlines(keepends=True)
    changed = [IMPORTS.get(ln.rstrip("\n"), ln.rstrip("\n")) + "\n" for ln in lines]
    diff = [(a, b) for a, b in zip(lines, changed, strict=True) if a != b]
    assert [a.rstrip("\n") for a, _ in diff] == [
        ln.rstrip("\n") for ln in lines if re.match(r"(from|import) max\b", ln)
    ], "a max import this test does not know how to change"
    return "".join(changed)


def execute(name: str) -> dict[str, Any]:
    env: dict[str, Any] = {"__name__": "max_program"}
    exec(on_graphdsl(PROGRAMS[name]["source"]), env)
    return env


def recorded_array(entry: dict[str, Any]) -> np.ndarray:
    """A recorded output (NaN and infinities as strings) as an array of its MAX dtype."""

    def fix(v: Any) -> Any:
        if isinstance(v, list):
            return [fix(u) for u in v]
        return float(v) if isinstance(v, str) else v

    return np.asarray(fix(entry["values"]), dtype=DType(entry["dtype"]).np)


def test_recorded_runs() -> None:
    assert RECORDED["version"] == "26.7.0"
    assert RECORDED["execution"].startswith("ok: InferenceSession(devices=[CPU()])")
    assert set(PROGRAMS) == {"mlp", "attention", "scalars"}


def test_only_the_imports_change() -> None:
    for entry in PROGRAMS.values():
        src = entry["source"]
        new = on_graphdsl(src)
        assert "max." not in new.replace("graphdsl.max", "")
        assert sum(a != b for a, b in zip(src.splitlines(), new.splitlines(), strict=True)) == 2


# ---------------------------------------------------------------------------- mlp, attention


def bounds(name: str, env: dict[str, Any]) -> list[np.ndarray]:
    """Per output, how far two float32 evaluations of the program (MAX's and ours, each
    summing in its own order) may be apart, derived from its values in float64 (u = 2**-24,
    γ_n = n u / (1 - n u); e is one evaluation's distance from the exact value, doubled at
    the end).

    MLP: relu(x @ w1 + b1) @ w2. The first layer is a sum of 5 terms (the bias one of them),
    any order: e1 = γ_5 (|x| @ |w1| + |b1|); ReLU moves nothing apart; the second layer sums
    8 products of values within e1 of the exact ones: e2 = ((1 + γ_8) e1 + γ_8 |h1|) @ |w2|.

    Attention: s = q @ k^T / sqrt(D) (D products, a division and sqrt(D) rounded: es =
    γ_D (|q| @ |k|^T) / sqrt(D) + 2u |s|); masked scores are -inf on both sides. softmax:
    scores off by at most E (the row's largest es) move each probability by a factor within
    exp(±2E); s - max rounds (u R of exp's argument, R the row's largest s_max - s); exp
    within 2 ulps (4u), the sum of S of them γ_S and their 4u, the division u: a relative
    ep = expm1(2E) + u R + (4 + 4 + S + 1) u, with a margin for the second order. The
    output, p @ v: eo = γ_S ((p + ep p) @ |v|) + (ep p) @ |v|. The masked probabilities
    are 0 exactly (exp(-inf)), so are their bounds."""
    u = floats.unit_roundoff(np.float32)
    if name == "mlp":
        x, w1, b1, w2 = (a.astype(np.float64) for a in (env["inputs"][0],
                         *(env["constants"][k] for k in ("w1", "b1", "w2"))))  # fmt: skip
        g1, g2 = floats.gamma(w1.shape[0] + 1, np.float32), floats.gamma(w2.shape[0], np.float32)
        e1 = g1 * (np.abs(x) @ np.abs(w1) + np.abs(b1))
        h1 = np.maximum(x @ w1 + b1, 0)
        e2 = ((1 + g2) * e1 + g2 * h1) @ np.abs(w2)
        return [2 * e2 * (1 + 2.0**-30)]
    q, k, v = (a.astype(np.float64) for a in env["inputs"])
    d, n = q.shape[-1], k.shape[-2]
    kt = np.swapaxes(k, -1, -2)
    s = q @ kt / np.sqrt(d)
    es = floats.gamma(d, np.float32) * (np.abs(q) @ np.abs(kt)) / np.sqrt(d) + 2 * u * np.abs(s)
    allowed = np.tril(np.ones(s.shape[-2:], bool))
    s = np.where(allowed, s, -np.inf)
    big_e = np.where(allowed, es, 0).max(-1, keepdims=True)
    r = np.where(allowed, s.max(-1, keepdims=True) - s, 0).max(-1, keepdims=True)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    rel = np.expm1(2 * big_e) + u * r + (9 + n) * u
    ep = rel * (1 + rel) * (1 + 2.0**-30) * p
    eo = floats.gamma(n, np.float32) * ((p + ep) @ np.abs(v)) + ep @ np.abs(v)
    return [2 * eo * (1 + 2.0**-30), 2 * ep]


@pytest.mark.parametrize("name", ["mlp", "attention"])
def test_program_runs_as_max_ran_it(name: str) -> None:
    entry = PROGRAMS[name]
    env = execute(name)
    graph, inputs = env["graph"], env["inputs"]
    # the program's own seeded inputs and constants are the ones MAX ran on (data)
    for arr, rec in zip(inputs, entry["inputs"], strict=True):
        floats.assert_bits(arr, recorded_array(rec), "input")
    for key, rec in entry["constants"].items():
        floats.assert_bits(env["constants"][key], recorded_array(rec), key)
    assert [(t.dtype.name, t.shape) for t in graph.output_types] == [
        (t["dtype"], t["shape"]) for t in entry["output_types"]
    ]
    export(graph, check="full")
    outs = run(graph, inputs)
    wants = [recorded_array(o) for o in entry["outputs"]]
    assert len(outs) == len(wants)
    derived = bounds(name, env)
    for got, want, bound in zip(outs, wants, derived, strict=True):
        floats.assert_close(got, want, bound, f"{name} on onnxruntime")
    for got, want, bound in zip(gd.evaluate(graph, inputs), wants, derived, strict=True):
        floats.assert_close(got, want, bound, f"{name} on gd.evaluate")  # the reference too


def test_mlp_export_is_the_plain_mlp() -> None:
    graph = execute("mlp")["graph"]
    ops = [n.op_type for n in export(graph).graph.node]
    assert ops.count("MatMul") == 2 and ops.count("Relu") == 1 and "Cast" not in ops


def test_attention_masks_the_future() -> None:
    env = execute("attention")
    _, probs = run(env["graph"], env["inputs"])
    assert (np.triu(probs[0], 1) == 0).all() and (np.triu(probs[1], 1) == 0).all()
    # each probability within ep of the exact one (bounds(), one evaluation: half of it),
    # and the sum of S of them within γ_S of the sum of the computed ones
    ep = bounds("attention", env)[1] / 2
    s = probs.shape[-1]
    total = probs.astype(np.float64).sum(-1)
    bound = ep.sum(-1) + floats.gamma(s, np.float32) * total
    floats.assert_close(total, np.ones_like(total), bound, "the probabilities' sums")


# ---------------------------------------------------------------------------- scalars

SCALARS = PROGRAMS["scalars"]["results"]
CASES = [(dt, e) for dt, r in SCALARS.items() for e in r["outputs"]]


def max_outcome(entry: dict[str, Any]) -> str:
    """What graphdsl must give for a recorded cell: a dtype, or its exception class."""
    if "dtype" in entry:
        return str(entry["dtype"])
    if "compile_error" in entry:
        return "compile_error"
    error = entry["error"]
    if "Can't promote python float" in error:  # a float literal never becomes an integer
        return "PromotionError"
    if "It would lose precision" in error:  # an int literal outside the tensor's dtype
        return "LiteralError"
    raise AssertionError(f"no graphdsl equivalent is defined for {error!r}")


@pytest.fixture(scope="module")
def scalars() -> dict[str, Any]:
    """Per dtype, as the recorder ran them: every expression that builds in one graph, run
    once on onnxruntime, its outputs by expression; and the build error of each other."""
    env = execute("scalars")
    results: dict[str, Any] = {}
    for dtype_name, values in env["VALUES"].items():
        built, errors = [], {}
        for e in env["EXPRESSIONS"]:
            try:
                env["build"](dtype_name, [e])
                built.append(e)
            except (gd.PromotionError, gd.LiteralError) as exc:
                errors[e] = type(exc).__name__
        graph = env["build"](dtype_name, built)
        feed = np.asarray(values, dtype=env["NUMPY_DTYPE"][dtype_name])
        export(graph, check="full")
        outs = run(graph, [feed])
        results[dtype_name] = {"outputs": dict(zip(built, outs, strict=True)), "errors": errors}
    return results


def test_scalars_program_covers_every_recorded_cell(scalars: dict[str, Any]) -> None:
    assert set(scalars) == set(SCALARS)
    for dt, r in scalars.items():
        assert set(r["outputs"]) | set(r["errors"]) == set(SCALARS[dt]["outputs"])


@pytest.mark.parametrize(("dtype", "expr"), CASES, ids=[f"{d}: {e}" for d, e in CASES])
def test_scalars_program_runs_as_max_ran_it(scalars: dict[str, Any], dtype: str, expr: str) -> None:
    want = max_outcome(SCALARS[dtype]["outputs"][expr])
    ours = scalars[dtype]
    if want in ("PromotionError", "LiteralError"):
        assert ours["errors"].get(expr) == want
        return
    got = ours["outputs"][expr]
    if want == "compile_error":
        # max.graph builds uint8 -x and its compiler refuses it; graphdsl negates mod 2**8
        assert (dtype, expr) == ("uint8", "-x")
        feed = np.asarray(SCALARS[dtype]["input"]["values"], np.uint8)
        assert got.dtype == np.uint8 and got.tolist() == ((256 - feed.astype(int)) % 256).tolist()
        return
    rec = recorded_array(SCALARS[dtype]["outputs"][expr])
    # elementwise ops, each rounding once: bit for bit (tests/floats.py)
    floats.assert_bits(got, rec, f"{expr} on {dtype}: graphdsl {got.tolist()}, MAX {rec.tolist()}")
