# mypy: disable-error-code="no-any-return,no-untyped-call"
# mypy: disallow-subclassing-any=False
# (torch: where it is not installed nn.Module is Any; its calls are untyped)
"""Porting a PyTorch model with graphdsl.nn (issue 26): for examples/hf_gpt2.py and
examples/resnet18.py, the lines of model code, the largest difference from PyTorch, and the
time per call of the graphdsl export against ``torch.onnx.export`` of the same PyTorch
model, both on onnxruntime's CPU provider with one thread, in interleaved rounds (median).

Each model runs in two kinds of session: ``inference_session(model, threads=1)`` (what
``exporters.onnx.run`` makes: onnxruntime's optimizations less the few that change results)
and a plain ``onnxruntime.InferenceSession`` with every optimization and one thread. Needs
the ``models`` and ``vision`` extras (torch, transformers, onnxscript; torchvision).

    python benchmarks/porting.py [--rounds 15] [--calls 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import torch

from exporters.onnx import export, inference_session

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT / "benchmarks")]
import hf_gpt2  # noqa: E402
import resnet18  # noqa: E402
import torch_models  # noqa: E402


def model_lines(path: Path) -> int:
    """Lines of model code between an example's begin and end markers, blank lines and
    comment-only lines left out."""
    text = path.read_text().splitlines()
    start = next(i for i, line in enumerate(text) if "model code: begin" in line)
    end = next(i for i, line in enumerate(text) if "model code: end" in line)
    return sum(1 for line in text[start + 1 : end]
               if line.strip() and not line.strip().startswith("#"))  # fmt: skip


class _LastHidden(torch.nn.Module):
    """transformers' GPT2Model with its last hidden state as the one output."""

    def __init__(self, hf: Any) -> None:
        super().__init__()
        self.hf = hf

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.hf(ids, use_cache=False).last_hidden_state


def _plain_session(model: Any) -> Any:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _median_ms(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return 1000 * (time.perf_counter() - start) / calls


def compare(name: str, ours: Any, theirs: Any, feeds: dict[str, np.ndarray], rounds: int,
            calls: int) -> dict[str, tuple[float, float]]:  # fmt: skip
    """Median ms per call of each model in each kind of session, rounds interleaved."""
    out = {}
    makers: list[tuple[str, Callable[[Any], Any]]] = [
        ("run() session", lambda m: inference_session(m, threads=1)),
        ("plain session", _plain_session),
    ]
    for kind, make in makers:
        a, b = make(ours), make(theirs)
        fa = {a.get_inputs()[0].name: next(iter(feeds.values()))}
        fb = {b.get_inputs()[0].name: next(iter(feeds.values()))}
        for s, f in ((a, fa), (b, fb)):  # warm up
            s.run(None, f)
        ta, tb = [], []
        for _ in range(rounds):
            ta.append(_median_ms(lambda: a.run(None, fa), calls))  # noqa: B023
            tb.append(_median_ms(lambda: b.run(None, fb), calls))  # noqa: B023
        out[kind] = (statistics.median(ta), statistics.median(tb))
    return out


def gpt2(rounds: int, calls: int) -> None:
    cfg = hf_gpt2.Config()
    hf = hf_gpt2.torch_model(cfg)
    model = hf_gpt2.GPT2Model(cfg)
    model.load_state_dict(hf.state_dict())
    ours = export(hf_gpt2.build(model), weights=model.weights())
    ids = np.random.default_rng(0).integers(0, cfg.vocab_size, size=(1, 128))
    wrapped = _LastHidden(hf).eval()
    theirs = torch_models.export_onnx(wrapped, (torch.from_numpy(ids),), ["ids"],
                                      {"ids": {0: "batch", 1: "seq"}})  # fmt: skip
    (got,) = inference_session(ours, threads=1).run(None, {"ids": ids})
    with torch.no_grad():
        want = wrapped(torch.from_numpy(ids)).numpy()
    report("examples/hf_gpt2.py", ours, theirs, float(np.max(np.abs(got - want))),
           compare("gpt2", ours, theirs, {"ids": ids}, rounds, calls), "ids [1, 128]")


def resnet(rounds: int, calls: int) -> None:
    tv = resnet18.torch_model()
    model = resnet18.ResNet18()
    model.load_state_dict(tv.state_dict())
    ours = export(resnet18.build(model, 224), weights=model.weights())
    images = np.random.default_rng(0).normal(size=(1, 3, 224, 224)).astype(np.float32)
    theirs = torch_models.export_onnx(tv, (torch.from_numpy(images),), ["images"],
                                      {"images": {0: "batch"}})  # fmt: skip
    (got,) = inference_session(ours, threads=1).run(None, {"images": images})
    with torch.no_grad():
        want = tv(torch.from_numpy(images)).numpy()
    report("examples/resnet18.py", ours, theirs, float(np.max(np.abs(got - want))),
           compare("resnet18", ours, theirs, {"images": images}, rounds, calls),
           "images [1, 3, 224, 224]")  # fmt: skip


def report(example: str, ours: Any, theirs: Any, err: float,
           times: dict[str, tuple[float, float]], feeds: str) -> None:  # fmt: skip
    def nodes(m: Any) -> int:
        return len(m.graph.node) + sum(len(f.node) for f in m.functions)

    print(f"{example}: {model_lines(ROOT / example)} lines of model code, max |graphdsl - "
          f"torch| = {err:.2e}; ONNX nodes: graphdsl {nodes(ours)} "
          f"({len(ours.functions)} functions), torch.onnx {nodes(theirs)}; {feeds}")  # fmt: skip
    for kind, (a, b) in times.items():
        print(f"  {kind:14s} graphdsl {a:8.2f} ms   torch.onnx {b:8.2f} ms   ratio {a / b:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    print(f"onnxruntime {ort.__version__}, torch {torch.__version__}, 1 thread, "
          f"{args.rounds} interleaved rounds of {args.calls} calls, medians")  # fmt: skip
    gpt2(args.rounds, args.calls)
    resnet(args.rounds, args.calls)


if __name__ == "__main__":
    main()
