"""A decode-style loop of the GPT-2 block (issue 24, part 3): tensors that stay on the device
against numpy in, numpy out, side by side in one run.

    python benchmarks/decode_loop.py                       # CPU, examples/gpt2_block.py's sizes
    python benchmarks/decode_loop.py --provider cuda --batch 8 --prompt 64 --d-model 1024 \\
        --n-head 16 --vocab 50257 --n-ctx 1024             # GPT-2 medium's width on a GPU

Each step runs two sessions: examples/gpt2_block.py's block (ids [batch, seq] -> hidden
[batch, seq, d]) and a greedy head (the last position's hidden state times the token
embeddings, argmax, appended to the ids: [batch, seq + 1]), so the ids grow by one token a
step, as in decoding without a KV cache. ``numpy``: both sessions called as run() is
(``Session.__call__``), numpy in and numpy out: the hidden state and the ids cross to the host
and back every step. ``device``: ``Session.run_with_ortvalues``, each output OrtValue passed
on as the next input where onnxruntime put it (CUDA device 0, or the CPU). The two loops
take turns (``--rounds`` each, alternating order); a figure is the median over rounds of the
loop's time per step. Both loops must end with the same ids (the same sessions compute
both). On the CPU the host copies are memory-to-memory and the two ways should tie.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

import graphdsl as gd
from exporters.onnx import Session

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "examples")]
gpt2_block = importlib.import_module("gpt2_block")

PROVIDERS = {"cpu": ["CPUExecutionProvider"],
             "cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"]}  # fmt: skip


def head(wte: np.ndarray) -> gd.Graph:
    """The greedy step: ids [batch, seq] and hidden [batch, seq, d] -> the ids with the
    argmax of ``hidden[:, -1] @ wte.T`` appended, [batch, seq + 1]."""
    d = wte.shape[1]
    types = {"ids": gd.TensorType(gd.int64, ("batch", "seq")),
             "hidden": gd.TensorType(gd.float32, ("batch", "seq", d))}  # fmt: skip
    with gd.Graph("greedy_head", input_types=types) as g:
        ids, hidden = g.inputs
        logits = hidden[:, -1] @ g.constant(np.ascontiguousarray(wte.T))
        token = gd.ops.argmax(logits, axis=-1)
        g.output(gd.ops.concat([ids, gd.ops.unsqueeze(token, 1)], axis=1))
    return g


def loops(block: Session, greedy: Session, prompt: np.ndarray,
          steps: int) -> dict[str, Callable[[], np.ndarray]]:  # fmt: skip
    """The two loops, each returning the final ids as numpy."""

    def numpy_loop() -> np.ndarray:
        ids = prompt
        for _ in range(steps):
            (hidden,) = block({"ids": ids})
            (ids,) = greedy({"ids": ids, "hidden": hidden})
        return ids

    def device_loop() -> np.ndarray:
        ids = block.ortvalue(prompt)
        for _ in range(steps):
            (hidden,) = block.run_with_ortvalues([ids])
            (ids,) = greedy.run_with_ortvalues({"ids": ids, "hidden": hidden})
        out: np.ndarray = ids.numpy()
        return out

    return {"numpy": numpy_loop, "device": device_loop}


def measure(fns: dict[str, Callable[[], np.ndarray]], rounds: int,
            steps: int) -> dict[str, float]:  # fmt: skip
    """Median seconds per step of each loop, the loops taking turns in alternating order."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            t0 = time.perf_counter()
            fns[name]()
            samples[name].append((time.perf_counter() - t0) / steps)
    return {name: statistics.median(s) for name, s in samples.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--provider", choices=sorted(PROVIDERS), default="cpu")
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--prompt", type=int, default=16, help="prompt length (the first seq)")
    p.add_argument("--d-model", type=int, default=gpt2_block.Config.d_model)
    p.add_argument("--n-head", type=int, default=gpt2_block.Config.n_head)
    p.add_argument("--vocab", type=int, default=gpt2_block.Config.vocab)
    p.add_argument("--n-ctx", type=int, default=gpt2_block.Config.n_ctx)
    p.add_argument("--threads", type=int, default=None,
                   help="intra-op threads (default: 1 on the CPU)")  # fmt: skip
    args = p.parse_args(argv)
    available = ort.get_available_providers()
    if args.provider == "cuda" and "CUDAExecutionProvider" not in available:
        print(f"--provider cuda: onnxruntime has no CUDA provider here (available: {available});"
              " install onnxruntime-gpu on a machine with a GPU", file=sys.stderr)  # fmt: skip
        return 2
    if args.prompt + args.steps > args.n_ctx:
        p.error(f"--prompt + --steps ({args.prompt + args.steps}) exceeds --n-ctx ({args.n_ctx})")
    cfg = gpt2_block.Config(args.vocab, args.n_ctx, args.d_model, args.n_head)
    w = gpt2_block.random_weights(cfg)
    threads = args.threads if args.threads is not None else (
        1 if args.provider == "cpu" else None)  # fmt: skip
    kw: dict[str, Any] = {"providers": PROVIDERS[args.provider], "threads": threads}
    block = Session(gpt2_block.build(w, cfg), **kw)
    greedy = Session(head(w["wte"]), **kw)
    prompt = np.random.default_rng(0).integers(0, cfg.vocab, (args.batch, args.prompt))
    fns = loops(block, greedy, prompt, args.steps)
    ends = {name: fn() for name, fn in fns.items()}  # warm-up, and the loops must agree
    same = np.array_equal(ends["numpy"], ends["device"])
    t = measure(fns, args.rounds, args.steps)
    host_mb = 4 * args.batch * (args.prompt + args.steps / 2) * cfg.d_model / 1e6
    print(f"GPT-2 block decode loop: {args.steps} steps, batch {args.batch}, seq {args.prompt} to "
          f"{args.prompt + args.steps}, d_model {cfg.d_model}, {cfg.n_head} heads, vocab "
          f"{cfg.vocab}; providers {block.providers} (outputs bound to {block.device[0]}:"
          f"{block.device[1]}), threads {threads or 'default'}; onnxruntime {ort.__version__}")
    print(f"numpy in, numpy out (run()):     {t['numpy'] * 1e3:.3f} ms per step "
          f"(the hidden state, {host_mb:.2f} MB on average, to the host and back each step)")
    print(f"device tensors (OrtValues):      {t['device'] * 1e3:.3f} ms per step")
    print(f"device / numpy: {t['device'] / t['numpy']:.3f} (median of {args.rounds} rounds each, "
          f"taking turns); final ids equal: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
