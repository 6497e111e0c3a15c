"""Text generation speed: graphdsl's exported Llama decoder with its KV cache
(``exporters.onnx.Generator``) against transformers' ``generate`` and onnxruntime-genai, fp32
and int4, on one random-weight checkpoint, side by side in one run.

    python benchmarks/generate_vs_genai.py [--genai-python /tmp/genai-venv/bin/python] \\
        [--rounds 15] [--prompt 32] [--new 64] [--threads 1] [--work DIR] [--json PATH]

The checkpoint is examples/hf_llama.py's ``torch_model(Config())``: a transformers
``LlamaForCausalLM`` with vocab 2000, hidden 256, intermediate 688, 4 layers, 8 heads and 2
key/value heads, random (seeded) weights, saved with ``save_pretrained`` into ``--work``
(default: a temporary folder) with a small byte-level BPE tokenizer trained here on a few
strings (onnxruntime-genai's model builder loads the checkpoint's tokenizer with
``AutoTokenizer``; nothing is downloaded). The sides:

* ``transformers``: ``model.generate(do_sample=False, max_new_tokens=N, min_new_tokens=N)``
  on torch, timed through a streamer (its ``put`` calls mark each token);
* ``graphdsl fp32`` (``export(exact=True)``, and ``exact=False``) and ``graphdsl int4``
  (``nn.quantize(model, "int4", block_size=32, skip=["lm_head"])``, ``export(exact=False)``
  with ``accuracy_level=4`` and ``0``: MatMulNBits), run by ``Generator(path, threads=T)``;
* ``genai fp32``, ``genai int4`` (the model builder's defaults: ``-p fp32|int4 -e cpu``; int4
  quantizes the LM head too, accuracy level 4) and ``genai int4, lm_head fp32``
  (``nodes_to_exclude=/lm_head/MatMul``: graphdsl int4's layout). onnxruntime-genai must not
  go into the project's venv (it pins its own onnxruntime), so its builds and its runs happen
  in another Python (``--genai-python``; a venv with onnxruntime-genai, onnx-ir, onnx,
  transformers, torch and numpy): the builds once per ``--work`` folder (kept while the
  checkpoint's bytes stay the same), the runs in a worker process that takes JSON-lines
  commands on stdin, so that its rounds interleave with the others.

Each side generates greedily at batch 1 from the same random ``--prompt``-token prompt with
``--threads`` intra-op threads (onnxruntime's ``intra_op_num_threads``;
``torch.set_num_threads``; genai's ``model.decoder.session_options.intra_op_num_threads``
through ``Config.overlay``). ``prefill``: from the call until the first new token is known
(setup included); ``decode``: the next ``--new - 1`` tokens, as tokens per second. One
warm-up generation per side, then ``--rounds`` rounds in which every side generates once,
in the opposite order every other round; a figure is the median over rounds. graphdsl
fp32's tokens must equal transformers'; the others' are reported (how many of the new tokens
agree). ``ORT nodes``: the nodes of the model as onnxruntime runs it, after its graph
optimizations (saved with ``SessionOptions.optimized_model_filepath``; graphdsl's models
under run()'s session options, genai's under onnxruntime's defaults, which genai keeps).
Where onnxruntime-genai is missing or its builder fails, the other sides still run and the
reason is printed.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_GENAI_PYTHON = "/tmp/genai-venv/bin/python"
# (side, builder precision, extra builder options)
GENAI_BUILDS = [
    ("genai fp32", "fp32", []),
    ("genai int4", "int4", []),
    ("genai int4, lm_head fp32", "int4", ["nodes_to_exclude=/lm_head/MatMul"]),
]
Timing = tuple[float, float, list[int]]  # prefill s, decode s, the new tokens


# ---------------------------------------------------------------- genai worker (other Python)
def worker() -> None:
    """The onnxruntime-genai side, run with ``--genai-python``: one JSON command per line on
    stdin, one JSON answer per line on stdout (anything the libraries print goes to stderr).

    ``{"op": "load", "name", "dir", "threads"}``; ``{"op": "run", "name", "prompt", "new"}``
    answers ``prefill_s``, ``decode_s`` and ``tokens`` (the new ones); ``{"op": "quit"}``."""
    out: TextIO = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # C-level prints to stderr: stdout carries the answers only
    try:
        import onnxruntime_genai as og  # type: ignore[import-not-found]
    except ImportError as e:
        out.write(json.dumps({"error": f"onnxruntime_genai: {e}"}) + "\n")
        out.flush()
        return
    out.write(json.dumps({"ok": True, "version": og.__version__}) + "\n")
    out.flush()
    models: dict[str, Any] = {}
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd["op"] == "quit":
                return
            if cmd["op"] == "load":
                config = og.Config(cmd["dir"])
                config.clear_providers()  # the CPU
                n = cmd["threads"]
                config.overlay(json.dumps({"model": {"decoder": {"session_options": {
                    "intra_op_num_threads": n, "inter_op_num_threads": 1}}}}))  # fmt: skip
                models[cmd["name"]] = og.Model(config)
                answer: dict[str, Any] = {"ok": True}
            elif cmd["op"] == "run":
                answer = _genai_run(og, models[cmd["name"]], cmd["prompt"], cmd["new"])
            else:
                answer = {"error": f"unknown op {cmd['op']!r}"}
        except Exception as e:  # the answer carries it; the worker goes on
            answer = {"error": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()


def _genai_run(og: Any, model: Any, prompt: list[int], new: int) -> dict[str, Any]:
    total = len(prompt) + new
    t0 = time.perf_counter()
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=total, min_length=total)
    gen = og.Generator(model, params)
    gen.append_tokens(np.array([prompt], np.int32))  # the prompt's forward
    gen.generate_next_token()  # the first token, from the prompt's logits
    t1 = time.perf_counter()
    while not gen.is_done():
        gen.generate_next_token()  # the last token's forward, then the next token
    t2 = time.perf_counter()
    tokens = [int(t) for t in gen.get_sequence(0)[len(prompt):]]  # fmt: skip
    return {"prefill_s": t1 - t0, "decode_s": t2 - t1, "tokens": tokens}


class GenaiWorker:
    """The worker process of :func:`worker`, in ``python``."""

    def __init__(self, python: str) -> None:
        self.proc = subprocess.Popen([python, str(Path(__file__).resolve()), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=_offline_env())  # fmt: skip
        hello = self._read()
        self.version = str(hello["version"])

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the genai worker exited (status {self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def ask(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()


def _offline_env() -> dict[str, str]:
    return os.environ | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


# ---------------------------------------------------------------- checkpoint and genai builds
def save_checkpoint(hf: Any, folder: Path) -> str:
    """``hf`` with ``save_pretrained`` and a small BPE tokenizer beside it (what the genai
    builder loads with AutoTokenizer); returns the sha256 of the weights file."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    hf.save_pretrained(folder)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)  # fmt: skip
    tok.train_from_iterator(["the quick brown fox jumps over the lazy dog",
                             "a small model with random weights"] * 8, trainer=trainer)  # fmt: skip
    assert (tok.token_to_id("<s>"), tok.token_to_id("</s>")) == (1, 2)  # LlamaConfig's ids
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>",  # type: ignore[no-untyped-call]
                                   bos_token="<s>", eos_token="</s>")  # fmt: skip
    fast.save_pretrained(folder)
    return hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()


def genai_builds(python: str, checkpoint: Path, digest: str, work: Path) -> dict[str, Any]:
    """Each of GENAI_BUILDS' model folders (built now, or kept from an earlier run on the
    same weights), or the reason it is missing (a string)."""
    found: dict[str, Any] = {}
    for side, precision, extra in GENAI_BUILDS:
        out = work / ("genai-" + side.split(" ", 1)[1].replace(", ", "-").replace(" ", "-"))
        stamp = out / "checkpoint.sha256"
        if (out / "model.onnx").exists() and stamp.exists() and stamp.read_text() == digest:
            found[side] = out
            continue
        cmd = [python, "-m", "onnxruntime_genai.models.builder", "-i", str(checkpoint), "-o",
               str(out), "-p", precision, "-e", "cpu", "-c", str(work / "genai-cache")]  # fmt: skip
        if extra:
            cmd += ["--extra_options", *extra]
        t0 = time.perf_counter()
        log = work / f"{out.name}.log"
        with log.open("w") as f:
            done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=work,
                                  env=_offline_env(), check=False)  # fmt: skip
        if done.returncode != 0 or not (out / "model.onnx").exists():
            tail = [x for x in log.read_text().splitlines() if x.strip()][-1:] or ["no output"]
            found[side] = f"the model builder failed (status {done.returncode}; {log}): {tail[0]}"
            continue
        stamp.write_text(digest)
        print(f"built {side} in {time.perf_counter() - t0:.1f} s: {out}", flush=True)
        found[side] = out
    return found


def genai_python_problem(python: str) -> str | None:
    """Why ``python`` cannot run onnxruntime-genai's builder and worker, or None."""
    if not Path(python).exists():
        return (f"no Python at {python} (make a venv with onnxruntime-genai, onnx-ir, onnx, "
                "transformers, torch and numpy; pass it as --genai-python)")  # fmt: skip
    probe = subprocess.run([python, "-c", "import onnxruntime_genai, onnx_ir, transformers, torch"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    if probe.returncode != 0:
        lines = probe.stderr.strip().splitlines() or ["no message"]
        return f"{python} cannot import onnxruntime_genai's builder's needs: {lines[-1]}"
    return None


# ---------------------------------------------------------------- main-venv sides
def _hf_llama() -> Any:
    if str(ROOT / "examples") not in sys.path:
        sys.path[:0] = [str(ROOT), str(ROOT / "examples")]
    return importlib.import_module("hf_llama")


def ort_nodes(path: Path, graphdsl: bool, threads: int) -> tuple[int, dict[str, int]]:
    """The nodes (and their op types) of ``path`` after onnxruntime's optimizer (saved with
    ``optimized_model_filepath``): a graphdsl model in run()'s session, the others in a
    session with onnxruntime's defaults."""
    import onnx
    import onnxruntime as ort

    from exporters.onnx import inference_session

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = threads
    opt = path.with_name(path.stem + ".ort-optimized.onnx")
    so.optimized_model_filepath = str(opt)
    if graphdsl:
        inference_session(path, threads=threads, session_options=so)
    else:
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    model = onnx.load(str(opt), load_external_data=False)
    ops = Counter(n.op_type for n in model.graph.node)
    return len(model.graph.node), dict(ops.most_common())


def graphdsl_models(hf: Any, work: Path) -> dict[str, Path]:
    """graphdsl's decoders of ``hf``'s weights, exported to ``work``."""
    from exporters.onnx import export
    from graphdsl import nn

    hf_llama = _hf_llama()
    c = hf_llama.Config()
    state = {k: v.detach().numpy() for k, v in hf.state_dict().items()}
    fp32 = hf_llama.LlamaForCausalLM(c)
    hf_llama.load_hf(fp32, state)
    q = nn.quantize(hf_llama.LlamaForCausalLM(c), "int4", block_size=32, skip=["lm_head"])
    hf_llama.load_hf(q, state)
    plans: list[tuple[str, Any, dict[str, Any]]] = [("graphdsl fp32", fp32, {"exact": True}),
             ("graphdsl fp32, exact=False", fp32, {"exact": False}),
             ("graphdsl int4, acc 4", q, {"exact": False, "accuracy_level": 4}),
             ("graphdsl int4, acc 0", q, {"exact": False, "accuracy_level": 0})]  # fmt: skip
    paths = {}
    for i, (side, model, kw) in enumerate(plans):
        path = work / f"graphdsl-{i}.onnx"
        export(hf_llama.build(model, c), path, weights=model.weights(), **kw)
        paths[side] = path
    return paths


def graphdsl_side(path: Path, prompt: np.ndarray, new: int,
                  threads: int) -> Callable[[], Timing]:  # fmt: skip
    from exporters.onnx import Generator

    gen = Generator(path, threads=threads)

    def once() -> Timing:
        t0 = time.perf_counter()
        steps = gen.stream(prompt[None], max_new_tokens=new)
        first = next(steps)
        t1 = time.perf_counter()
        rest = list(steps)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, [int(t[0]) for t in [first, *rest]]

    return once


def hf_side(hf: Any, prompt: np.ndarray, new: int) -> Callable[[], Timing]:
    import torch
    from transformers.generation.streamers import BaseStreamer

    class Clock(BaseStreamer):
        """The time of each put: the prompt's, then each new token's."""

        def __init__(self) -> None:
            self.times: list[float] = []

        def put(self, value: Any) -> None:
            self.times.append(time.perf_counter())

        def end(self) -> None:
            pass

    ids = torch.from_numpy(prompt[None])
    mask = torch.ones_like(ids)

    def once() -> Timing:
        clock = Clock()
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = hf.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=new,
                              min_new_tokens=new, pad_token_id=0, streamer=clock)  # fmt: skip
        t = clock.times  # [prompt, token 1, ..., token new]
        return t[1] - t0, t[-1] - t[1], [int(x) for x in out[0, len(prompt):]]  # fmt: skip

    return once


def genai_side(w: GenaiWorker, name: str, prompt: np.ndarray, new: int) -> Callable[[], Timing]:
    def once() -> Timing:
        a = w.ask(op="run", name=name, prompt=[int(x) for x in prompt], new=new)
        return float(a["prefill_s"]), float(a["decode_s"]), [int(x) for x in a["tokens"]]

    return once


# ---------------------------------------------------------------- measuring and reporting
def measure(fns: dict[str, Callable[[], Timing]], rounds: int) -> dict[str, list[Timing]]:
    """Every side once per round, in the opposite order every other round."""
    samples: dict[str, list[Timing]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            samples[name].append(fns[name]())
    return samples


def agree(tokens: list[int], want: list[int]) -> int:
    """How many leading tokens equal ``want``'s."""
    n = 0
    for a, b in zip(tokens, want, strict=False):
        if a != b:
            break
        n += 1
    return n


def fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--genai-python", default=DEFAULT_GENAI_PYTHON,
                   help="a Python with onnxruntime-genai, onnx-ir, onnx, transformers and torch "
                        f"(default {DEFAULT_GENAI_PYTHON})")  # fmt: skip
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--prompt", type=int, default=32, help="prompt tokens")
    p.add_argument("--new", type=int, default=64, help="new tokens (the first is prefill's)")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads of every side")
    p.add_argument("--work", type=Path, default=None,
                   help="folder for the checkpoint and the models (genai's builds are kept "
                        "there for the next run; default: a temporary folder)")  # fmt: skip
    p.add_argument("--json", type=Path, default=None, help="write the figures to this file")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker()
        return 0
    if args.new < 2 or args.prompt < 1:
        p.error("--new must be at least 2 and --prompt at least 1")
    with tempfile.TemporaryDirectory(prefix="generate-vs-genai-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        return run(args, work.resolve())


def run(args: argparse.Namespace, work: Path) -> int:
    import onnxruntime as ort
    import torch
    import transformers

    hf_llama = _hf_llama()

    torch.set_num_threads(args.threads)
    c = hf_llama.Config()
    hf = hf_llama.torch_model(c)
    checkpoint = work / "checkpoint"
    digest = save_checkpoint(hf, checkpoint)
    paths: dict[str, Path] = graphdsl_models(hf, work)
    missing: dict[str, str] = {}

    problem = genai_python_problem(args.genai_python)
    built: dict[str, Any] = {}
    if problem:
        missing = {side: problem for side, _, _ in GENAI_BUILDS}
    else:
        built = genai_builds(args.genai_python, checkpoint, digest, work)
        missing = {s: v for s, v in built.items() if isinstance(v, str)}
    worker: GenaiWorker | None = None
    genai_version = None
    try:
        prompt = np.random.default_rng(0).integers(3, c.vocab_size, args.prompt)  # no bos/eos
        fns: dict[str, Callable[[], Timing]] = {"transformers": hf_side(hf, prompt, args.new)}
        for side, path in paths.items():
            fns[side] = graphdsl_side(path, prompt, args.new, args.threads)
        ready = {s: v for s, v in built.items() if isinstance(v, Path)}
        if ready:
            try:
                worker = GenaiWorker(args.genai_python)
                genai_version = worker.version
                for side, folder in ready.items():
                    worker.ask(op="load", name=side, dir=str(folder), threads=args.threads)
                    fns[side] = genai_side(worker, side, prompt, args.new)
                    paths[side] = folder / "model.onnx"
            except RuntimeError as e:
                missing |= {s: f"the genai worker failed: {e}" for s in ready if s not in fns}

        first = {name: fn() for name, fn in fns.items()}  # warm-up, and the tokens to compare
        want = first["transformers"][2]
        print(f"{len(fns)} sides, {args.rounds} rounds ...", flush=True)
        samples = measure(fns, args.rounds)

        nodes: dict[str, tuple[int, dict[str, int]]] = {}
        for side, path in paths.items():
            if side in fns:
                nodes[side] = ort_nodes(path, graphdsl=side.startswith("graphdsl"),
                                        threads=args.threads)  # fmt: skip
    finally:
        if worker is not None:
            worker.close()

    rows: dict[str, dict[str, Any]] = {}
    for side, got in samples.items():
        tokens = first[side][2]
        rows[side] = {
            "prefill_ms": statistics.median(s[0] for s in got) * 1e3,
            "decode_tok_s": statistics.median((args.new - 1) / s[1] for s in got),
            "tokens_equal_transformers": tokens == want,
            "tokens_agreeing": agree(tokens, want),
            "same_tokens_every_round": all(s[2] == tokens for s in got),
            "ort_nodes": nodes[side][0] if side in nodes else None,
            "ort_ops": nodes[side][1] if side in nodes else None,
            "prefill_ms_samples": [s[0] * 1e3 for s in got],
            "decode_s_samples": [s[1] for s in got],
        }
    for ref in ("genai fp32", "genai int4"):
        base = rows.get(ref, {}).get("decode_tok_s")
        for row in rows.values():
            row[f"decode_vs_{ref.replace(' ', '_')}"] = row["decode_tok_s"] / base if base else None

    versions = {"python": platform.python_version(), "torch": torch.__version__,
                "transformers": transformers.__version__, "onnxruntime": ort.__version__,
                "onnxruntime_genai": genai_version, "numpy": np.__version__}  # fmt: skip
    print(f"\nLlama {c.num_hidden_layers} layers, hidden {c.hidden_size}, intermediate "
          f"{c.intermediate_size}, {c.num_attention_heads} heads / {c.num_key_value_heads} KV "
          f"heads, vocab {c.vocab_size} (random weights); batch 1, greedy, prompt {args.prompt} "
          f"tokens, {args.new} new; {args.threads} thread(s) each; medians of {args.rounds} "
          f"interleaved rounds. {platform.machine()}, {os.cpu_count()} cores, "
          + ", ".join(f"{k} {v}" for k, v in versions.items() if v))  # fmt: skip
    print(f"prefill: prompt to first token; decode: the next {args.new - 1} tokens.\n")
    print("| side | prefill ms | decode tok/s | / genai fp32 | / genai int4 | ORT nodes | "
          "tokens = transformers' |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---|")
    for side, row in rows.items():
        same = "yes" if row["tokens_equal_transformers"] else \
            f"no (first {row['tokens_agreeing']} of {args.new})"  # fmt: skip
        print(f"| {side} | {row['prefill_ms']:.2f} | {row['decode_tok_s']:.0f} | "
              f"{fmt(row['decode_vs_genai_fp32'], '.2f')} | "
              f"{fmt(row['decode_vs_genai_int4'], '.2f')} | "
              f"{fmt(row['ort_nodes'], 'd')} | {same} |")  # fmt: skip
    for side, why in missing.items():
        print(f"{side}: not measured: {why}")
    ok = rows["graphdsl fp32"]["tokens_equal_transformers"]
    print(f"\ngraphdsl fp32's greedy tokens equal transformers': {ok}")
    if "genai fp32" in rows:
        print(f"genai fp32's greedy tokens equal transformers': "
              f"{rows['genai fp32']['tokens_equal_transformers']}")  # fmt: skip
    like = "genai int4, lm_head fp32"
    for side in ("graphdsl int4, acc 4", "graphdsl int4, acc 0"):
        if like in first and side in first:  # the same quantization (symmetric int4, blocks of 32)
            n = agree(first[side][2], first[like][2])
            rows[side]["tokens_agreeing_" + like.replace(", ", "_").replace(" ", "_")] = n
            print(f"{side}'s tokens agree with {like}'s: first {n} of {args.new}")
    if args.json:
        args.json.write_text(json.dumps({
            "config": {k: v for k, v in vars(c).items() if k != "rope_scaling"},
            "prompt": args.prompt, "new": args.new, "rounds": args.rounds,
            "threads": args.threads, "machine": platform.machine(), "cores": os.cpu_count(),
            "versions": versions, "sides": rows, "missing": missing,
            "transformers_tokens": want}, indent=1) + "\n")  # fmt: skip
        print(f"figures written to {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
