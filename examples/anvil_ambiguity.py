"""{anvil}'s ambiguity propagation, step by step (seed 004, "Propagating Ambiguity").

The {anvil} program

    f <- jit(function(x, y) { z <- x + 1L; z * y })
    f(nv_scalar(TRUE), nv_scalar(2L, dtype = "i16"))     # 4, i16

gives ``z`` the type ``i32?``: ``x`` (bool) is promoted to the literal's default int32, and
because the literal was only a guess the result stays *ambiguous*. In ``z * y`` the
ambiguous int32 then yields to the known int16, so the result is int16 and not int32.

This example builds the same graph under the ``anvil`` policy, prints the type of each
step with the rule that decided it, contrasts it with a known (explicitly cast) ``z``,
and runs both on the numpy reference and on onnxruntime.

    python examples/anvil_ambiguity.py
"""

from __future__ import annotations

import numpy as np

import graphdsl as gd
from exporters.onnx import export, run

INPUTS = {"x": np.bool_(True), "y": np.int16(2)}


def build(*, known_z: bool) -> tuple[gd.Graph, gd.Symbol, gd.Symbol]:
    """f(x, y) = (x + 1) * y; with ``known_z`` the sum is cast to int32 (no longer ambiguous)."""
    g = gd.Graph(
        "anvil_f" if not known_z else "anvil_f_known",
        input_types={"x": gd.TensorType(gd.bool, ()), "y": gd.TensorType(gd.int16, ())},
        policy="anvil",
    )
    x, y = g.inputs
    z = x + 1  # the literal 1 is int32? (the default int, ambiguous)
    if known_z:
        z = z.cast(gd.int32)
    out = z * y
    g.output(out)
    return g, z, out


def rule(p: gd.Policy, a: gd.Symbol, b: gd.Symbol) -> str:
    return p.explain(a.dtype, b.dtype, a.ambiguous, b.ambiguous)


def main() -> None:
    g, z, out = build(known_z=False)
    p = g.policy
    x, y = g.inputs
    one = z.inputs[1]
    print(f"policy {p.name!r}: {p.description}")
    print(f"x        : {x.type}")
    print(f"y        : {y.type}")
    print(f"1        : {one.type}   (an R/Python literal: its default dtype, ambiguous)")
    print(f"z = x + 1: {z.type}   because {rule(p, x, one)}")
    print(f"z * y    : {out.type}   because {rule(p, z, y)}")
    print()
    print(g)
    print()
    print(gd.passes.implicit_cast(g))
    print()
    print(g.explain())

    g_known, z_known, out_known = build(known_z=True)
    print("\nIf z were known (z = cast(x + 1, int32)), the multiplication would promote y instead:")
    print(f"z * y    : {out_known.type}   because {rule(p, z_known, g_known.inputs[1])}")

    print("\nf(TRUE, 2L as i16):")
    for graph in (g, g_known):
        (want,) = gd.evaluate(graph, INPUTS)
        (got,) = run(export(graph), INPUTS)
        same = want.dtype == got.dtype and np.array_equal(want, got)
        print(
            f"  {graph.name}: gd.evaluate -> {want.item()} ({want.dtype}), "
            f"onnxruntime -> {got.item()} ({got.dtype}), equal: {same}"
        )
        if not same:
            raise SystemExit(f"{graph.name}: onnxruntime and the numpy reference disagree")


if __name__ == "__main__":
    main()
