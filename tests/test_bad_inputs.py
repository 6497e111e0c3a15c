"""Bad inputs raise the documented exception with a message naming the cause and the fix
(tests/bad_input_catalogue.py lists them); inputs that look bad but have defined results
(NaN and inf cast to integers, integer division by zero, INT_MIN // -1) give those results
on the numpy reference and on onnxruntime, without crashing the process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest
from backend import export, run
from bad_input_catalogue import CATALOGUE, DEFINED, BadInput, Defined, gallery

import graphdsl as gd

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("case", CATALOGUE, ids=[c.id for c in CATALOGUE])
def test_bad_input_raises_with_cause_and_fix(case: BadInput) -> None:
    error: Exception | None = None
    try:
        case.trigger()
    except Exception as e:  # any type: a wrong one is reported below, with its message
        error = e
    if error is None:
        pytest.fail(f"{case.doc}: expected {case.raises.__name__}, nothing was raised")
    msg = str(error)
    assert isinstance(error, case.raises), (
        f"{case.doc}: expected {case.raises.__name__}, got {type(error).__name__}: {msg}"
    )
    missing = [s for s in case.says if s not in msg]
    assert not missing, f"{case.doc}: the message does not say {missing}:\n{msg}"
    present = [s for s in case.lacks if s in msg]
    assert not present, f"{case.doc}: the message says {present}:\n{msg}"


def test_catalogue_is_well_formed() -> None:
    ids = [c.id for c in CATALOGUE] + [c.id for c in DEFINED]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for case in CATALOGUE:
        assert case.says, f"{case.id}: no expected substrings"
        assert issubclass(case.raises, BaseException)
    # what the reliability issue asks the catalogue to cover
    required = {
        "dtype-misspelled", "dtype-ambiguous-code", "literal-int8-plus-1000",
        "literal-1e40-into-float32", "literal-minus-1-into-uint8",
        "literal-float-into-int-under-max", "promotion-array-api-int8-float32",
        "promotion-jax-strict-int8-int16", "shape-broadcast-mismatch", "symbol-of-another-graph",
        "no-outputs-export", "no-outputs-evaluate", "cycle-export", "change-after-export",
        "run-model-wrong-input-name", "run-model-wrong-dtype", "run-model-wrong-shape",
        "run-model-missing-input", "run-model-extra-input", "evaluate-wrong-input-name",
        "lattice-two-least-upper-bounds", "export-opset-too-old", "export-float8-input-opset-18",
        "export-path-unwritable",
    }  # fmt: skip
    assert required <= set(ids), f"missing cases: {sorted(required - set(ids))}"


def test_gallery_renders_every_case() -> None:
    text = gallery()
    assert all(f"| {c.id} |" in text for c in CATALOGUE)


# ---------------------------------------------------------------------------- defined results


def _check_outputs(case: Defined, got: list[np.ndarray], where: str) -> None:
    want = case.want()
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype, f"{case.id} output {k} on {where}: {g.dtype}, want {w.dtype}"
        assert g.shape == w.shape
        bad = g != w
        assert not bad.any(), (
            f"{case.id} output {k} ({w.dtype}) on {where}: at positions {np.flatnonzero(bad)} "
            f"got {g[bad]}, want {w[bad]}"
        )


CASTS = [c for c in DEFINED if c.id.startswith("nan-inf-cast")]
DIVISIONS = [c for c in DEFINED if c.id.startswith("integer-division")]


@pytest.mark.parametrize("case", CASTS, ids=[c.id for c in CASTS])
def test_nan_and_inf_cast_to_integers_saturate(case: Defined) -> None:
    g, inputs = case.build()
    _check_outputs(case, gd.evaluate(g, inputs), "gd.evaluate")
    _check_outputs(case, run(export(g), inputs), "onnxruntime")


_CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from bad_input_catalogue import DEFINED
    from backend import export, run
    case = {{c.id: c for c in DEFINED}}[{id!r}]
    g, inputs = case.build()
    np.savez({out!r}, *run(export(g), inputs))
    """
)


@pytest.mark.parametrize("case", DIVISIONS, ids=[c.id for c in DIVISIONS])
def test_integer_division_edges_do_not_crash_onnxruntime(case: Defined) -> None:
    """onnxruntime traps (SIGFPE) on x // 0 and INT_MIN // -1 unless the exporter guards them:
    run the model in a child process first, so that a trap fails this test, not the suite."""
    g, inputs = case.build()
    _check_outputs(case, gd.evaluate(g, inputs), "gd.evaluate")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "outputs.npz")
        code = _CHILD.format(tests=str(ROOT / "tests"), id=case.id, out=out)
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                              text=True, timeout=300, check=False)  # fmt: skip
        if proc.returncode < 0:
            name = signal.Signals(-proc.returncode).name
            pytest.fail(f"{case.id}: onnxruntime killed the process with {name}")
        assert proc.returncode == 0, proc.stderr
        with np.load(out) as z:
            got = [z[f"arr_{k}"] for k in range(len(z.files))]
    _check_outputs(case, got, "onnxruntime (child process)")
    # it did not trap there, so it is safe here too
    _check_outputs(case, run(export(g), inputs), "onnxruntime")


# ---------------------------------------------------------------------------- numpy operands


def test_numpy_array_on_the_left_of_an_operator_builds_a_node() -> None:
    """``x + arr`` builds a constant and an add; ``arr + x`` must too (or raise), not give a
    numpy object array of one Symbol per element."""
    g = gd.Graph("np_left", input_types={"x": gd.TensorType(gd.float32, (3,))})
    (x,) = g.inputs
    arr = np.ones(3, np.float32)
    right = x + arr
    assert isinstance(right, gd.Symbol) and right.type == gd.TensorType(gd.float32, (3,))
    left = arr + x
    assert isinstance(left, gd.Symbol), (
        f"arr + x gave {type(left).__name__} of dtype {getattr(left, 'dtype', None)}: numpy "
        "broadcast over the Symbol; Symbol should set __array_ufunc__ = None so that numpy "
        "defers to Symbol.__radd__"
    )
    assert left.type == gd.TensorType(gd.float32, (3,))
