"""Find onnxruntime's graph optimizers that change results, for exporters/onnx/_optimizers.py.

Runs the (op, dtype) matrix (tests/test_onnx_matrix.py) and the fuzzer (tests/test_fuzz.py)
through ``run()`` with onnxruntime's default optimizations (ORT_ENABLE_ALL) and only the
optimizers of ``--off`` left out (none by default; ``--as-run`` adds what run() leaves out
of each model, to look for more), and bisects each disagreement: the
optimizers that changed the model (from onnxruntime's verbose log; a rule-based transformer
stands for its rules) are left out all together, then put back one at a time while the case
still agrees with the reference. What remains must be left out for that case. A case that
also disagrees with every optimization off is not an optimizer's doing and is reported as
such.

    .venv/bin/python scripts/bisect_ort_optimizers.py --matrix
    .venv/bin/python scripts/bisect_ort_optimizers.py --fuzz 3000 --seed 7
    .venv/bin/python scripts/bisect_ort_optimizers.py --fuzz 5 --per-op --off NoopElimination
    .venv/bin/python scripts/bisect_ort_optimizers.py --fuzz 3000 --seed 8 --as-run

Re-run it when onnxruntime is upgraded (then run the test suite, which goes through run()'s
own list). Takes the machine's time: the matrix is a few minutes, 3000 graphs about ten.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import onnx
import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import exporters.onnx._optimizers as optimizers  # noqa: E402
import exporters.onnx._run as run_module  # noqa: E402
from exporters.onnx import export  # noqa: E402
from graphdsl import DType  # noqa: E402

# the rules of onnxruntime 1.32's rule-based transformers (graph_transformer_utils.cc), which
# the verbose log names only as "Level1_RuleBasedTransformer" / "Level2_RuleBasedTransformer"
RULES = {
    "Level1_RuleBasedTransformer": [
        "EliminateIdentity", "EliminateSlice", "UnsqueezeElimination", "EliminateDropout",
        "ExpandElimination", "CastElimination", "PreShapeNodeElimination", "NoopElimination",
        "DivMulFusion", "FuseReluClip", "GemmSumFusion", "GemmTransposeFusion",
        "NotWhereFusion", "ConvAddFusion", "ConvMulFusion", "ConvBNFusion", "Pad_Fusion",
        "MatmulBNFusion", "LabelEncoderFusion",
    ],
    "Level2_RuleBasedTransformer": ["ClipQuantRewrite", "ReluQuantRewrite", "GemmTransposeFusion"],
}  # fmt: skip

_VERBOSE_SESSION = """
import sys, onnxruntime as ort
so = ort.SessionOptions()
so.log_severity_level = 0
so.log_verbosity_level = 10
ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"],
                     disabled_optimizers=set(sys.argv[2:]))
"""


def changed_by(model: onnx.ModelProto, off: frozenset[str]) -> list[str]:
    """The optimizers that change ``model`` in a session without ``off`` (rules expanded)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.onnx")
        onnx.save(model, path)
        proc = subprocess.run([sys.executable, "-c", _VERBOSE_SESSION, path, *sorted(off)],
                              capture_output=True, text=True, check=False)  # fmt: skip
    names: list[str] = []
    for line in (proc.stdout + proc.stderr).splitlines():
        if "GraphTransformer " in line and "modified: 1" in line:
            name = line.split("GraphTransformer ", 1)[1].split(" modified", 1)[0]
            for n in RULES.get(name, [name]):
                if n not in names and n not in off:
                    names.append(n)
    return names


@contextmanager
def sessions(off: frozenset[str] | None) -> Iterator[None]:
    """run()'s sessions with exactly ``off`` left out (None: every optimization off)."""
    saved = optimizers.optimizers_off, run_module.session_options

    def options(opts: run_module.Options | None = None) -> ort.SessionOptions:
        so = saved[1](opts)
        if off is None:
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        return so

    def chosen(
        model: onnx.ModelProto, folder: str | None = None, providers: Sequence[str] = ()
    ) -> frozenset[str]:
        return off or frozenset()

    optimizers.optimizers_off = chosen
    run_module.session_options = options
    run_module._model_sessions.clear()
    run_module._last = None
    try:
        yield
    finally:
        optimizers.optimizers_off, run_module.session_options = saved
        run_module._model_sessions.clear()
        run_module._last = None


def agrees(check: Callable[[], list[str]], off: frozenset[str] | None) -> bool:
    with sessions(off):
        try:
            return not check()
        except Exception:  # a failure to run (an optimizer can make a kernel refuse)
            return False


def bisect(model: onnx.ModelProto, check: Callable[[], list[str]], off: frozenset[str]) -> str:
    """Why ``check`` disagrees under ``off``: the optimizers to leave out, or another cause."""
    if agrees(check, off):
        return "agrees"
    if not agrees(check, None):
        return "disagrees with every optimization off too"
    suspects = changed_by(model, off)
    if not agrees(check, off | set(suspects)):
        return f"disagrees with {suspects} left out too"
    needed = list(suspects)
    for name in suspects:  # put each back while the case still agrees without it
        trial = [n for n in needed if n != name]
        if agrees(check, off | set(trial)):
            needed = trial
    return f"leave out {needed}"


def base(off: frozenset[str], model: onnx.ModelProto, as_run: bool) -> frozenset[str]:
    """What is left out of ``model``'s session to start with: ``off``, and with ``as_run``
    what run() leaves out of it."""
    return off | optimizers.optimizers_off(model) if as_run else off


def matrix(off: frozenset[str], as_run: bool) -> Counter[str]:
    test_onnx_matrix = importlib.import_module("test_onnx_matrix")
    cases = importlib.import_module("onnx_cases")

    found: Counter[str] = Counter()
    for op, dt in cases.all_cases():

        def check(op: str = op, dt: DType = dt) -> list[str]:
            try:
                test_onnx_matrix.check_case(op, dt, exact=True)
            except AssertionError as e:
                return [str(e)]
            return []

        model = export(cases.build(op, dt))
        start = base(off, model, as_run)
        if agrees(check, start):
            continue
        verdict = bisect(model, check, start)
        print(f"{op}-{dt.name}: {verdict}", flush=True)
        found[verdict] += 1
    return found


def fuzz(off: frozenset[str], examples: int, seed: int, per_op: bool, as_run: bool) -> Counter[str]:
    test_fuzz = importlib.import_module("test_fuzz")
    graphs = importlib.import_module("fuzz_graphs")
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as with_seed

    found: Counter[str] = Counter()
    first_ops = sorted(set(graphs.FAMILY) - {"implicit_cast"}) if per_op else [None]
    for first in first_ops:

        @settings(max_examples=examples, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))  # fmt: skip
        @given(graphs.fuzz_cases(first_op=first))
        def draw(case: Any) -> None:
            def check() -> list[str]:
                problems: list[str] = test_fuzz.check_case(case, None, None)
                return problems

            model = export(case.graph)
            start = base(off, model, as_run)
            if agrees(check, start):
                return
            verdict = bisect(model, check, start)
            print(f"{verdict}:\n{case.code}", flush=True)
            found[verdict] += 1

        with_seed(seed)(draw)()
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrix", action="store_true", help="every (op, dtype) of the matrix")
    ap.add_argument("--fuzz", type=int, default=0, metavar="N", help="N random graphs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-op", action="store_true", help="N graphs starting with each op")
    ap.add_argument("--off", nargs="*", default=[], help="optimizers left out from the start")
    ap.add_argument("--as-run", action="store_true",
                    help="also leave out what run() leaves out of each model")  # fmt: skip
    args = ap.parse_args()
    off = frozenset(args.off)
    found: Counter[str] = Counter()
    if args.matrix:
        found += matrix(off, args.as_run)
    if args.fuzz:
        found += fuzz(off, args.fuzz, args.seed, args.per_op, args.as_run)
    print("summary:", dict(found) or "every case agrees")
    return 0


if __name__ == "__main__":
    sys.exit(main())
