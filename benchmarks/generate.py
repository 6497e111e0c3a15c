"""Text generation, side by side (issue 31, item 6): graphdsl's exported Llama decoder with its
KV cache (``exporters.onnx.Generator``) against onnxruntime-genai's model builder, transformers
(PyTorch eager) and optimum's ONNX export, fp32 and int4, on one random-weight checkpoint, in
one run.

    python benchmarks/generate.py [--rounds 3] [--batches 1,4] [--threads 1,2] [--prompt 128]
        [--new 128] [--sides ...] [--work DIR] [--json PATH] [--genai-python PY]
        [--optimum-python PY] [--smoke]

The checkpoint: a transformers ``LlamaForCausalLM`` (examples/hf_llama.py's
``torch_model``) with hidden 1024, 8 layers, 16 heads, 4 key/value heads, intermediate 2816
and vocab 32000 (155M parameters, 620 MB of float32), random (seeded) weights, saved with
``save_pretrained`` (safetensors) into ``--work`` (default: a temporary folder) with a small
byte-level BPE tokenizer trained here on a few strings beside it (onnxruntime-genai's model
builder loads the checkpoint's tokenizer with ``AutoTokenizer``; nothing is downloaded).
``--smoke`` uses examples/hf_llama.py's small ``Config()`` (vocab 2000, hidden 256, 4 layers)
and tiny sizes, to check that the script runs.

The sides (``--sides``, keys in brackets):

* ``transformers`` [hf]: ``AutoModelForCausalLM.from_pretrained`` of the checkpoint (float32,
  its default attention), ``generate(do_sample=False, max_new_tokens=N, min_new_tokens=N)``,
  timed through a streamer whose ``put`` marks each token;
* ``graphdsl fp32`` [gd-fp32] (``export(exact=True)``), ``graphdsl fp32, exact=False``
  [gd-fp32-fast], ``graphdsl int4`` [gd-int4] (``nn.quantize(model, "int4",
  block_size=32, skip=["lm_head"])``, ``export(exact=False, accuracy_level=4)``:
  MatMulNBits) and ``graphdsl int4, lm_head int4`` [gd-int4-head4] (the LM head quantized
  too, as genai's int4 default), examples/hf_llama.py's port loaded from the checkpoint's
  state dict, run by ``Generator(path, threads=T)``; exported afresh on every run (they are
  what is measured);
* ``genai fp32`` [genai-fp32] and ``genai int4`` [genai-int4]: onnxruntime-genai's model
  builder (``-p fp32|int4 -e cpu``; int4: blocks of 32, accuracy level 4, the LM head
  quantized too), and ``genai int4, lm_head fp32`` [genai-int4-head32]
  (``nodes_to_exclude=/lm_head/MatMul``: graphdsl int4's layout). The int4 targets are
  checked like for like: gd-int4-head4 against genai int4, gd-int4 against genai int4 with
  its LM head in fp32;
* ``optimum fp32`` [optimum]: ``optimum-cli export onnx --task text-generation-with-past``
  (no ``--optimize``), run by ``ORTModelForCausalLM.generate`` as transformers' side.

onnxruntime-genai and optimum must stay out of the project's venv (each pins its own
onnxruntime or transformers), so each lives in its own Python (``--genai-python``: a venv with
onnxruntime-genai, onnx-ir, onnx, transformers, torch; ``--optimum-python``: a venv with
``pip install "optimum[onnxruntime]"``). Their builds happen once per ``--work`` folder and
are kept while the checkpoint's bytes stay the same (a sha256 stamp). Where a Python is
missing, a build fails or a side's worker fails, the other sides still run and the reason is
printed.

Every side runs in a process of its own (this file with ``--worker KIND``, in its side's
Python), one per (batch, threads) setting, which loads its model and then takes JSON-lines
commands on stdin, so that the sides take turns and each side's peak RSS (``VmHWM`` of
/proc/self/status at the end: the interpreter, its libraries, the model's load and every
generation of that setting; not ``getrusage``'s ``ru_maxrss``, which Linux carries over from
the parent's resident set at the fork) is its own. Each worker's stderr goes to
``--work``/logs/. In each setting (``--batches`` x ``--threads``: batch 1 is the first
prompt, batch 4 four different prompts of equal length, no padding; ``--threads`` is
onnxruntime's ``intra_op_num_threads``, ``torch.set_num_threads`` and genai's decoder
``session_options.intra_op_num_threads``), each side generates greedily ``--new`` tokens from
the ``--prompt``-token prompts (the length forced: no stop token); one warm-up generation per
side, then ``--rounds`` rounds in which every side generates once, in the opposite order every
other round; a figure is the median over rounds.

* ``prefill ms``: from the call until the first new token of every row is known (setup
  included: the cache's allocation, the prompt's forward, the first token's choice);
* ``decode tok/s``: the next ``--new - 1`` steps; ``per seq`` is steps per second (tokens
  per second of one sequence), ``batch`` that times the batch (tokens per second over the
  whole batch);
* ``peak RSS MB``: as above, in MiB. Each side's model files leave the page cache before it
  loads (``evict_page_cache``: mapped weights are then charged alike, whoever wrote them last).

Ratios are against ``genai fp32`` and ``genai int4`` (decode: side / genai, above 1 is
faster; prefill and RSS: side / genai, below 1 is better), and the issue's targets are
checked per setting: graphdsl fp32 (both exports) against genai fp32 and graphdsl int4
against genai int4, decode >= 1.0x, prefill <= 1.1x, peak RSS <= 1.1x. ``ORT nodes``: the
nodes of each model as onnxruntime runs it, after its graph optimizations (saved with
``SessionOptions.optimized_model_filepath``; graphdsl's models under run()'s session
options, the others under onnxruntime's defaults, which genai and optimum keep), and the
com.microsoft (contrib) ops of each model as exported and as optimized. Tokens are compared
with transformers' (the fp32 sides should give the same; int4 tokens differ on random
weights); the exit status is 1 where graphdsl fp32's differ in the first setting. Everything
goes to ``--json`` (default benchmarks/results/generate.json; none for ``--smoke`` unless
given). The default 3 rounds keep a full run (4 settings, 9 sides) within 12 to 18 minutes on
a 2-core machine, plus about a minute for the first builds in a new ``--work`` folder.
"""

from __future__ import annotations

import argparse
import gc
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_GENAI_PYTHON = "/tmp/genai-venv/bin/python"
DEFAULT_OPTIMUM_PYTHON = "/tmp/optimum-venv/bin/python"
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "generate.json"
# the checkpoint (examples/hf_llama.py's Config fields)
LLAMA = {"vocab_size": 32000, "hidden_size": 1024, "intermediate_size": 2816,
         "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 4}  # fmt: skip
DECODE_MIN, PREFILL_MAX, RSS_MAX = 1.0, 1.1, 1.1  # the targets


@dataclass(frozen=True)
class Side:
    key: str  # for --sides
    name: str  # in the tables
    kind: str  # the worker: hf, graphdsl, genai, optimum
    default: bool = True


SIDES = (
    Side("hf", "transformers", "hf"),
    Side("gd-fp32", "graphdsl fp32", "graphdsl"),
    Side("gd-fp32-fast", "graphdsl fp32, exact=False", "graphdsl", default=False),
    Side("gd-fp32-gqa", "graphdsl fp32, buffer + GQA", "graphdsl"),
    Side("gd-int4", "graphdsl int4", "graphdsl", default=False),
    Side("gd-int4-head4", "graphdsl int4, lm_head int4", "graphdsl", default=False),
    Side("gd-int4-gqa", "graphdsl int4, buffer + GQA", "graphdsl"),
    Side("gd-int4-head4-gqa", "graphdsl int4, lm_head int4, buffer + GQA", "graphdsl"),
    Side("genai-fp32", "genai fp32", "genai"),
    Side("genai-int4", "genai int4", "genai"),
    Side("genai-int4-head32", "genai int4, lm_head fp32", "genai"),
    Side("optimum", "optimum fp32", "optimum"),
)
# graphdsl side -> export options
GRAPHDSL_EXPORTS: dict[str, dict[str, Any]] = {
    "gd-fp32": {"exact": True},
    "gd-fp32-fast": {"exact": False},
    "gd-int4": {"exact": False, "accuracy_level": 4},
    "gd-int4-head4": {"exact": False, "accuracy_level": 4},
    # examples/hf_llama.py's build_buffered: the cache a fixed buffer, attention onnxruntime's
    # GroupQueryAttention (rotary inside, past and present one buffer), as genai's models
    "gd-fp32-gqa": {"exact": False},
    "gd-int4-gqa": {"exact": False, "accuracy_level": 4},
    "gd-int4-head4-gqa": {"exact": False, "accuracy_level": 4},
}
# genai side -> builder precision, extra options
GENAI_BUILDS = {
    "genai-fp32": ("fp32", []),
    "genai-int4": ("int4", []),
    "genai-int4-head32": ("int4", ["nodes_to_exclude=/lm_head/MatMul"]),
}
# (graphdsl side, genai side) pairs the targets are checked on
# (graphdsl int4 quantizes the LM head as genai's int4 does by default; with it in fp32, it
# is checked against genai's build that keeps it so)
TARGETS = (("gd-fp32", "genai-fp32"), ("gd-fp32-fast", "genai-fp32"),
           ("gd-fp32-gqa", "genai-fp32"), ("gd-int4-head4", "genai-int4"),
           ("gd-int4-head4-gqa", "genai-int4"), ("gd-int4", "genai-int4-head32"),
           ("gd-int4-gqa", "genai-int4-head32"))  # fmt: skip
REFERENCES = ("genai-fp32", "genai-int4", "genai-int4-head32")
Sample = tuple[float, float, list[list[int]]]  # prefill s, decode s, the new tokens per row


# ================================================================ workers (each side's Python)
def _status_mb(field: str) -> float:
    """``field`` of /proc/self/status (kB) in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _peak_rss_mb() -> float:
    """The peak resident set of this process since its exec (VmHWM: getrusage's ru_maxrss
    would also hold the parent's resident set at the fork, which Linux carries across exec)."""
    return _status_mb("VmHWM")


def _rss_mb() -> float:
    return _status_mb("VmRSS")


class Engine:
    """One side's model in its worker: ``load`` it, then ``run`` generations."""

    version = ""

    def load(self, path: str, threads: int) -> None:
        raise NotImplementedError

    def run(self, prompts: list[list[int]], new: int) -> Sample:
        raise NotImplementedError


class GraphdslEngine(Engine):
    def __init__(self) -> None:
        sys.path[:0] = [str(ROOT)]
        self.onnx = importlib.import_module("exporters.onnx")
        ort = importlib.import_module("onnxruntime")
        self.version = f"onnxruntime {ort.__version__}"

    def load(self, path: str, threads: int) -> None:
        self.gen = self.onnx.Generator(path, threads=threads)

    def run(self, prompts: list[list[int]], new: int) -> Sample:
        ids = np.array(prompts, np.int64)
        t0 = time.perf_counter()
        steps = self.gen.stream(ids, max_new_tokens=new)  # no eos: always `new` tokens
        first = next(steps)
        t1 = time.perf_counter()
        rest = list(steps)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, np.stack([first, *rest], axis=1).tolist()


class GenaiEngine(Engine):
    def __init__(self) -> None:
        self.og = importlib.import_module("onnxruntime_genai")
        self.version = f"onnxruntime-genai {self.og.__version__}"

    def load(self, path: str, threads: int) -> None:
        config = self.og.Config(path)
        config.clear_providers()  # the CPU
        config.overlay(json.dumps({"model": {"decoder": {"session_options": {
            "intra_op_num_threads": threads, "inter_op_num_threads": 1}}}}))  # fmt: skip
        self.model = self.og.Model(config)

    def run(self, prompts: list[list[int]], new: int) -> Sample:
        og, total = self.og, len(prompts[0]) + new
        t0 = time.perf_counter()
        params = og.GeneratorParams(self.model)
        params.set_search_options(do_sample=False, max_length=total, min_length=total,
                                  batch_size=len(prompts))  # fmt: skip
        gen = og.Generator(self.model, params)
        gen.append_tokens(np.array(prompts, np.int32))  # the prompts' forward
        gen.generate_next_token()  # the first token, from the prompts' logits
        t1 = time.perf_counter()
        while not gen.is_done():
            gen.generate_next_token()  # the last token's forward, then the next token
        t2 = time.perf_counter()
        tokens = [[int(t) for t in gen.get_sequence(r)[len(prompts[0]):]]
                  for r in range(len(prompts))]  # fmt: skip
        return t1 - t0, t2 - t1, tokens


class HfEngine(Engine):
    """transformers' generate on torch (``optimum``: on an ORTModelForCausalLM)."""

    def __init__(self, optimum: bool = False) -> None:
        self.torch = importlib.import_module("torch")
        transformers = importlib.import_module("transformers")
        self.optimum = importlib.import_module("optimum.onnxruntime") if optimum else None
        self.streamer = importlib.import_module("transformers.generation.streamers").BaseStreamer
        self.version = f"torch {self.torch.__version__}, transformers {transformers.__version__}"
        if self.optimum is not None:
            ort = importlib.import_module("onnxruntime")
            self.ort = ort
            version = importlib.import_module("importlib.metadata").version
            self.version += (f", optimum {version('optimum')}, optimum-onnx "
                             f"{version('optimum-onnx')}, "
                             f"onnxruntime {ort.__version__}")  # fmt: skip

    def load(self, path: str, threads: int) -> None:
        self.torch.set_num_threads(threads)
        if self.optimum is None:
            auto = importlib.import_module("transformers").AutoModelForCausalLM
            self.model = auto.from_pretrained(path, dtype=self.torch.float32).eval()
        else:
            so = self.ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            self.model = self.optimum.ORTModelForCausalLM.from_pretrained(
                path, session_options=so, provider="CPUExecutionProvider")  # fmt: skip

    def run(self, prompts: list[list[int]], new: int) -> Sample:
        torch = self.torch
        times: list[float] = []

        class Clock(self.streamer):  # type: ignore[name-defined,misc]
            """The time of each put: the prompt's, then each new token's."""

            def put(self, value: Any) -> None:
                times.append(time.perf_counter())

            def end(self) -> None:
                pass

        ids = torch.tensor(prompts, dtype=torch.int64)
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                      max_new_tokens=new, min_new_tokens=new, pad_token_id=0,
                                      streamer=Clock())  # fmt: skip
        # times: [prompt, token 1, ..., token new]
        return times[1] - t0, times[-1] - times[1], out[:, ids.shape[1]:].tolist()  # fmt: skip


def _optimum_engine() -> Engine:
    return HfEngine(optimum=True)


ENGINES: dict[str, Callable[[], Engine]] = {"graphdsl": GraphdslEngine, "genai": GenaiEngine,
                                            "hf": HfEngine, "optimum": _optimum_engine}  # fmt: skip


def worker(kind: str) -> None:
    """A side's process: one JSON command per line on stdin, one JSON answer per line on
    stdout (anything the libraries print goes to stderr). ``{"op": "load", "path",
    "threads"}``; ``{"op": "run", "prompts", "new"}`` answers ``prefill_s``, ``decode_s`` and
    ``tokens`` (the new ones, per row); ``{"op": "stats"}`` answers ``peak_rss_mb`` and
    ``rss_mb``; ``{"op": "quit"}``."""
    out: TextIO = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # C-level prints to stderr: stdout carries the answers only

    def send(answer: dict[str, Any]) -> None:
        out.write(json.dumps(answer) + "\n")
        out.flush()

    try:
        engine: Engine = ENGINES[kind]()
    except Exception as e:
        send({"error": f"{type(e).__name__}: {e}"})
        return
    send({"ok": True, "version": engine.version, "rss_mb": _rss_mb()})
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd["op"] == "quit":
                return
            if cmd["op"] == "load":
                engine.load(cmd["path"], cmd["threads"])
                answer: dict[str, Any] = {"ok": True, "rss_mb": _rss_mb(),
                                          "peak_rss_mb": _peak_rss_mb()}  # fmt: skip
            elif cmd["op"] == "run":
                prefill, decode, tokens = engine.run(cmd["prompts"], cmd["new"])
                answer = {"prefill_s": prefill, "decode_s": decode, "tokens": tokens}
            elif cmd["op"] == "stats":
                answer = {"peak_rss_mb": _peak_rss_mb(), "rss_mb": _rss_mb()}
            else:
                answer = {"error": f"unknown op {cmd['op']!r}"}
        except Exception as e:  # the answer carries it; the worker goes on
            answer = {"error": f"{type(e).__name__}: {e}"}
        send(answer)


class Worker:
    """A :func:`worker` process of ``kind`` in ``python``; its stderr goes to ``log``."""

    def __init__(self, python: str, kind: str, log: Path) -> None:
        self.log = log
        with log.open("w") as err:
            self.proc = subprocess.Popen([python, str(Path(__file__).resolve()), "--worker", kind],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, text=True, env=_offline_env())  # fmt: skip
        hello = self._read()
        self.version = str(hello["version"])
        self.imports_rss_mb = float(hello["rss_mb"])

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            status = self.proc.wait()
            tail = [x for x in self.log.read_text().splitlines() if x.strip()][-1:] or [""]
            raise RuntimeError(f"the worker exited (status {status}; {self.log}): {tail[0]}")
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
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def _offline_env() -> dict[str, str]:
    return dict(os.environ) | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


# ================================================================ the checkpoint and the models
def _hf_llama() -> Any:
    if str(ROOT / "examples") not in sys.path:
        sys.path[:0] = [str(ROOT), str(ROOT / "examples")]
    return importlib.import_module("hf_llama")


def save_checkpoint(hf: Any, folder: Path) -> str:
    """``hf`` with ``save_pretrained`` and a small BPE tokenizer beside it (what the genai
    builder loads with AutoTokenizer); returns the sha256 of the weights file."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from transformers.utils import logging

    logging.disable_progress_bar()  # type: ignore[no-untyped-call]
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
    digest = hashlib.sha256()
    with (folder / "model.safetensors").open("rb") as f:
        while chunk := f.read(1 << 24):
            digest.update(chunk)
    return digest.hexdigest()


def graphdsl_models(hf: Any, c: Any, keys: list[str], work: Path) -> dict[str, Path]:
    """graphdsl's decoders of ``hf``'s weights (the sides ``keys``), exported to ``work``."""
    from exporters.onnx import export
    from graphdsl import nn

    hf_llama = _hf_llama()
    state = {k: v.detach().numpy() for k, v in hf.state_dict().items()}
    paths = {}
    for key in keys:
        t0 = time.perf_counter()
        kw = GRAPHDSL_EXPORTS[key]
        model = hf_llama.LlamaForCausalLM(c)
        if key.startswith("gd-int4-head4"):
            model = nn.quantize(model, "int4", block_size=32)
        elif key.startswith("gd-int4"):
            model = nn.quantize(model, "int4", block_size=32, skip=["lm_head"])
        hf_llama.load_hf(model, state)
        path = work / f"graphdsl-{key}" / "model.onnx"
        path.parent.mkdir(exist_ok=True)
        build = hf_llama.build_buffered if key.endswith("-gqa") else hf_llama.build
        export(build(model, c), path, weights=model.weights(), **kw)
        del model
        gc.collect()
        print(f"exported {key} in {time.perf_counter() - t0:.1f} s: {path}", flush=True)
        paths[key] = path
    return paths


def _stamped(out: Path, model: str, digest: str) -> bool:
    stamp = out / "checkpoint.sha256"
    return (out / model).exists() and stamp.exists() and stamp.read_text() == digest


def _build(cmd: list[str], out: Path, model: str, digest: str, work: Path, what: str) -> Path | str:
    """Run the build ``cmd`` (its output to a log beside ``out``); ``out`` or why not."""
    t0 = time.perf_counter()
    log = work / f"{out.name}.log"
    with log.open("w") as f:
        done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=work,
                              env=_offline_env(), check=False)  # fmt: skip
    if done.returncode != 0 or not (out / model).exists():
        tail = [x for x in log.read_text().splitlines() if x.strip()][-1:] or ["no output"]
        return f"{what} failed (status {done.returncode}; {log}): {tail[0]}"
    (out / "checkpoint.sha256").write_text(digest)
    print(f"built {out.name} in {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def genai_builds(python: str, keys: list[str], checkpoint: Path, digest: str,
                 work: Path) -> dict[str, Path | str]:  # fmt: skip
    """Each genai side's model folder (built now, or kept from an earlier run on the same
    weights), or the reason it is missing."""
    found: dict[str, Path | str] = {}
    for key in keys:
        precision, extra = GENAI_BUILDS[key]
        out = work / key
        if _stamped(out, "model.onnx", digest):
            found[key] = out
            continue
        cmd = [python, "-m", "onnxruntime_genai.models.builder", "-i", str(checkpoint), "-o",
               str(out), "-p", precision, "-e", "cpu", "-c", str(work / "genai-cache")]  # fmt: skip
        if extra:
            cmd += ["--extra_options", *extra]
        found[key] = _build(cmd, out, "model.onnx", digest, work, "the genai model builder")
    return found


def optimum_build(python: str, checkpoint: Path, digest: str, work: Path) -> Path | str:
    out = work / "optimum"
    if _stamped(out, "model.onnx", digest):
        return out
    cmd = [str(Path(python).with_name("optimum-cli")), "export", "onnx", "-m", str(checkpoint),
           "--task", "text-generation-with-past", str(out)]  # fmt: skip
    return _build(cmd, out, "model.onnx", digest, work, "optimum-cli export onnx")


def python_problem(python: str, imports: str, what: str) -> str | None:
    """Why ``python`` cannot import ``imports``, or None."""
    if not Path(python).exists():
        return f"no Python at {python} ({what})"
    probe = subprocess.run([python, "-c", f"import {imports}"], capture_output=True, text=True,
                           check=False, env=_offline_env())  # fmt: skip
    if probe.returncode != 0:
        lines = probe.stderr.strip().splitlines() or ["no message"]
        return f"{python} cannot import {imports}: {lines[-1]}"
    return None


def model_nodes(path: Path, graphdsl: bool) -> dict[str, Any]:
    """The ops of ``path`` as exported, and its nodes (and their op types) after onnxruntime's
    optimizer (saved with ``optimized_model_filepath``): a graphdsl model in run()'s
    session, the others in a session with onnxruntime's defaults (1 thread)."""
    import onnx
    import onnxruntime as ort

    from exporters.onnx import inference_session

    def nodes(m: Any) -> list[Any]:  # the graph's and its local functions'
        return [*m.graph.node, *(n for f in m.functions for n in f.node)]

    def contrib(m: Any) -> dict[str, int]:
        return dict(Counter(n.op_type for n in nodes(m) if n.domain == "com.microsoft"))

    exported = onnx.load(str(path), load_external_data=False)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    opt = path.with_name(path.stem + ".ort-optimized.onnx")
    so.optimized_model_filepath = str(opt)
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                opt.name + ".data")  # fmt: skip
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes",
                                "1024")  # fmt: skip
    if graphdsl:
        inference_session(path, threads=1, session_options=so)
    else:
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    model = onnx.load(str(opt), load_external_data=False)
    ops = Counter(n.op_type for n in nodes(model))
    result = {"exported_nodes": len(exported.graph.node), "exported_functions":
              len(exported.functions), "exported_function_nodes": len(nodes(exported)) -
              len(exported.graph.node), "ort_nodes": len(nodes(model)),
              "ort_ops": dict(ops.most_common()), "contrib_ops_exported": contrib(exported),
              "contrib_ops_ort": contrib(model)}  # fmt: skip
    opt.unlink()
    opt.with_name(opt.name + ".data").unlink(missing_ok=True)
    return result


# ================================================================ measuring
def _load_avg() -> float:
    return os.getloadavg()[0]


Rows = dict[str, dict[str, Any]]


def evict_page_cache(path: Path) -> None:
    """Drop the page cache of the model files at ``path`` (a folder, or a file and its
    folder's): every side then loads cold. onnxruntime maps external data into memory, and a
    mapped file's pages count in a process's RSS once touched; a freshly written model's
    pages are all in the cache, so each fault maps many around it (measured: graphdsl int4's
    128-token prefill mapped 90 MB of its embedding table hot, 7 MB cold; genai's the same
    after reading its file once), which would charge graphdsl, exported in the same run, for
    the cache's state rather than for its memory."""
    folder = path if path.is_dir() else path.parent
    for f in folder.iterdir():
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def run_setting(sides: list[Side], where: dict[str, Path], pythons: dict[str, str],
                prompts: np.ndarray, args: argparse.Namespace, batch: int, threads: int,
                logs: Path) -> tuple[Rows, dict[str, str], list[float]]:  # fmt: skip
    """Every side of ``sides`` (its model at ``where[key]``) at one (batch, threads) setting,
    each in its own worker: the rows, the sides that failed (why) and the 1-minute load
    average after each round."""
    rows: dict[str, dict[str, Any]] = {}
    missing: dict[str, str] = {}
    workers: dict[str, Worker] = {}
    ids = prompts[:batch].tolist()
    firsts: dict[str, Sample] = {}
    samples: dict[str, list[Sample]] = {}
    loads: list[float] = []
    try:
        for side in sides:
            w: Worker | None = None
            try:
                t0 = time.perf_counter()
                w = Worker(pythons[side.kind], side.kind,
                           logs / f"{side.key}-b{batch}-t{threads}.log")  # fmt: skip
                evict_page_cache(where[side.key])  # each side loads from a cold cache
                loaded = w.ask(op="load", path=str(where[side.key]), threads=threads)
                firsts[side.key] = _sample(w.ask(op="run", prompts=ids, new=args.new))
                workers[side.key] = w
                rows[side.key] = {"version": w.version, "imports_rss_mb": w.imports_rss_mb,
                                  "loaded_rss_mb": float(loaded["rss_mb"]),
                                  "load_peak_rss_mb": float(loaded["peak_rss_mb"]),
                                  "start_and_warmup_s": time.perf_counter() - t0}  # fmt: skip
            except RuntimeError as e:
                missing[side.key] = f"its worker failed: {e}"
                if w is not None:
                    w.close()
        order = list(workers)
        samples = {key: [] for key in order}
        for r in range(args.rounds):
            for key in order if r % 2 == 0 else order[::-1]:
                try:
                    a = workers[key].ask(op="run", prompts=ids, new=args.new)
                except RuntimeError as e:
                    missing[key] = f"a generation failed: {e}"
                    continue
                samples[key].append(_sample(a))
            loads.append(_load_avg())
            print(f"  round {r + 1}/{args.rounds} done (load average {loads[-1]:.2f})",
                  flush=True)  # fmt: skip
        for key, w in workers.items():
            rows[key] |= {k: float(v) for k, v in w.ask(op="stats").items() if k != "ok"}
    finally:
        for w in workers.values():
            w.close()
    want = firsts["hf"][2] if "hf" in firsts else None
    out: dict[str, dict[str, Any]] = {}
    for key, got in samples.items():
        if key in missing or not got:
            continue
        tokens = firsts[key][2]
        seq = statistics.median((args.new - 1) / s[1] for s in got)
        row = rows[key] | {
            "prefill_ms": statistics.median(s[0] for s in got) * 1e3,
            "decode_tok_s_per_seq": seq,
            "decode_tok_s_batch": seq * batch,
            "tokens_equal_transformers": None if want is None else tokens == want,
            "tokens_agreeing_transformers": None if want is None else
            [_agree(a, b) for a, b in zip(tokens, want, strict=True)],
            "same_tokens_every_round": all(s[2] == tokens for s in got),
            "prefill_ms_samples": [s[0] * 1e3 for s in got],
            "decode_s_samples": [s[1] for s in got],
        }  # fmt: skip
        out[key] = row
    for ref in REFERENCES:
        base = out.get(ref)
        for row in out.values():
            for what, field in (("decode", "decode_tok_s_per_seq"), ("prefill", "prefill_ms"),
                                ("rss", "peak_rss_mb")):  # fmt: skip
                row[f"{what}_vs_{ref}"] = row[field] / base[field] if base else None
    return out, missing, loads


def _sample(a: dict[str, Any]) -> Sample:
    return float(a["prefill_s"]), float(a["decode_s"]), [[int(t) for t in r] for r in a["tokens"]]


def _agree(tokens: list[int], want: list[int]) -> int:
    """How many leading tokens equal ``want``'s."""
    n = 0
    for a, b in zip(tokens, want, strict=False):
        if a != b:
            break
        n += 1
    return n


def targets(rows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's targets at one setting: each (graphdsl side, genai side) pair measured."""
    checks = []
    for ours, ref in TARGETS:
        if ours not in rows or ref not in rows:
            continue
        row = rows[ours]
        for what, limit in (("decode", DECODE_MIN), ("prefill", PREFILL_MAX), ("rss", RSS_MAX)):
            ratio = float(row[f"{what}_vs_{ref}"])
            ok = ratio >= limit if what == "decode" else ratio <= limit
            checks.append({"side": ours, "against": ref, "what": what, "ratio": ratio,
                           "limit": limit, "pass": ok})  # fmt: skip
    return checks


# ================================================================ reporting
NAMES = {s.key: s.name for s in SIDES}
WHAT = {"decode": "decode tok/s", "prefill": "prefill ms", "rss": "peak RSS"}


def _f(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def print_setting(batch: int, threads: int, rows: dict[str, dict[str, Any]],
                  missing: dict[str, str], checks: list[dict[str, Any]], new: int,
                  loads: list[float]) -> None:  # fmt: skip
    span = f"{min(loads):.2f} to {max(loads):.2f}" if loads else "n/a"
    print(f"\n### batch {batch}, {threads} thread(s) (1-minute load average after each round: "
          f"{span})\n")  # fmt: skip
    print("| side | prefill ms | decode tok/s (batch) | decode tok/s (per seq) | peak RSS MB | "
          "decode / genai fp32 | prefill / genai fp32 | RSS / genai fp32 | decode / genai int4 "
          "| prefill / genai int4 | RSS / genai int4 | decode / genai int4, head fp32 "
          "| prefill / genai int4, head fp32 | RSS / genai int4, head fp32 "
          "| tokens = transformers' |")  # fmt: skip
    print("|---|" + "---:|" * (4 + 3 * len(REFERENCES)) + "---|")
    for key, row in rows.items():
        if row["tokens_equal_transformers"] is None:
            same = "n/a"
        elif row["tokens_equal_transformers"]:
            same = "yes"
        else:
            agree = ", ".join(str(n) for n in row["tokens_agreeing_transformers"])
            same = f"no (leading agree: {agree} of {new})"
        ratios = " | ".join(_f(row[f"{w}_vs_{r}"], ".2f") for r in REFERENCES
                            for w in ("decode", "prefill", "rss"))  # fmt: skip
        print(f"| {NAMES[key]} | {row['prefill_ms']:.1f} | {row['decode_tok_s_batch']:.1f} | "
              f"{row['decode_tok_s_per_seq']:.1f} | {row['peak_rss_mb']:.0f} | {ratios} | "
              f"{same} |")  # fmt: skip
    for key, why in missing.items():
        print(f"{NAMES[key]}: not measured: {why}")
    if checks:
        print()
    for c in checks:
        sign = ">=" if c["what"] == "decode" else "<="
        verdict = "PASS" if c["pass"] else "FAIL"
        print(f"target: {NAMES[c['side']]} / {NAMES[c['against']]}, {WHAT[c['what']]}: "
              f"{c['ratio']:.2f}x ({sign} {c['limit']:.1f}x): {verdict}")  # fmt: skip


def print_models(models: dict[str, dict[str, Any]]) -> None:
    print("\n### Models: nodes after onnxruntime's graph optimizations, and contrib ops\n")
    print("| side | nodes exported (+ in local functions) | ORT nodes | top ORT ops | "
          "com.microsoft ops exported | com.microsoft ops after ORT |")  # fmt: skip
    print("|---|---:|---:|---|---|---|")

    def ops(d: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in d.items()) or "none"

    for key, m in models.items():
        top = dict(list(m["ort_ops"].items())[:6])
        funcs = (f" (+ {m['exported_function_nodes']} in {m['exported_functions']})"
                 if m["exported_functions"] else "")  # fmt: skip
        print(f"| {NAMES[key]} | {m['exported_nodes']}{funcs} | {m['ort_nodes']} | {ops(top)} | "
              f"{ops(m['contrib_ops_exported'])} | {ops(m['contrib_ops_ort'])} |")  # fmt: skip


# ================================================================ main
def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    about = "Text generation side by side: graphdsl, onnxruntime-genai, transformers, optimum"
    p = argparse.ArgumentParser(description=about)
    keys = [s.key for s in SIDES]
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 3)")
    p.add_argument("--batches", type=_ints, default=None, help="comma-separated (default 1,4)")
    p.add_argument("--threads", type=_ints, default=None, help="comma-separated (default 1,2)")
    p.add_argument("--prompt", type=int, default=None, help="prompt tokens (default 128)")
    p.add_argument("--new", type=int, default=None, help="new tokens (default 128)")
    p.add_argument("--sides", type=lambda s: s.split(","), default=None,
                   help=f"comma-separated, of {', '.join(keys)} (default: all)")  # fmt: skip
    p.add_argument("--genai-python", default=DEFAULT_GENAI_PYTHON,
                   help="a Python with onnxruntime-genai, onnx-ir, onnx, transformers and torch "
                        f"(default {DEFAULT_GENAI_PYTHON})")  # fmt: skip
    p.add_argument("--optimum-python", default=DEFAULT_OPTIMUM_PYTHON,
                   help="a Python with optimum[onnxruntime] (optimum-cli beside it; default "
                        f"{DEFAULT_OPTIMUM_PYTHON})")  # fmt: skip
    p.add_argument("--work", type=Path, default=None,
                   help="folder for the checkpoint, the models and the workers' logs (genai's "
                        "and optimum's builds are kept there for the next run; default: a "
                        "temporary folder)")  # fmt: skip
    p.add_argument("--json", type=Path, default=None,
                   help=f"write the figures here (default {DEFAULT_JSON.relative_to(ROOT)}; "
                        "with --smoke, none)")  # fmt: skip
    p.add_argument("--smoke", action="store_true",
                   help="examples/hf_llama.py's small Config(), prompt 16, 8 new tokens, 1 "
                        "round, batch 1, 1 thread (each unless given): checks that the script "
                        "runs")  # fmt: skip
    p.add_argument("--worker", choices=sorted(ENGINES), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    smoke = args.smoke
    defaults = {"rounds": 1 if smoke else 3, "batches": [1] if smoke else [1, 4],
                "threads": [1] if smoke else [1, 2], "prompt": 16 if smoke else 128,
                "new": 8 if smoke else 128}  # fmt: skip
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.sides is None:
        args.sides = [s.key for s in SIDES if s.default]
    if unknown := set(args.sides) - set(keys):
        p.error(f"--sides: unknown {sorted(unknown)}; known: {', '.join(keys)}")
    if args.new < 2 or args.prompt < 1 or args.rounds < 1:
        p.error("--new must be at least 2, --prompt and --rounds at least 1")
    if args.json is None and not smoke:
        args.json = DEFAULT_JSON
    with tempfile.TemporaryDirectory(prefix="generate-bench-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        return run(args, work.resolve())


def run(args: argparse.Namespace, work: Path) -> int:
    import onnx
    import onnxruntime as ort
    import torch
    import transformers

    started = time.perf_counter()
    uptime_before = _uptime()
    hf_llama = _hf_llama()
    fields = {} if args.smoke else dict(LLAMA)
    fields["max_position_embeddings"] = max(512, args.prompt + args.new)
    c = hf_llama.Config(**fields)
    sides = [s for s in SIDES if s.key in args.sides]
    keys = [s.key for s in sides]
    pythons = {"hf": sys.executable, "graphdsl": sys.executable, "genai": args.genai_python,
               "optimum": args.optimum_python}  # fmt: skip
    print(f"machine load before: {uptime_before}", flush=True)

    t0 = time.perf_counter()
    hf = hf_llama.torch_model(c)
    checkpoint = work / "checkpoint"
    digest = save_checkpoint(hf, checkpoint)
    params = sum(p.numel() for p in hf.parameters())
    print(f"checkpoint: {params / 1e6:.1f}M parameters, saved in "
          f"{time.perf_counter() - t0:.1f} s: {checkpoint}", flush=True)  # fmt: skip
    where: dict[str, Path] = {"hf": checkpoint} if "hf" in keys else {}
    where |= graphdsl_models(hf, c, [k for k in keys if k in GRAPHDSL_EXPORTS], work)
    del hf
    gc.collect()

    missing: dict[str, str] = {}
    genai_keys = [k for k in keys if k in GENAI_BUILDS]
    if genai_keys:
        problem = python_problem(args.genai_python, "onnxruntime_genai, onnx_ir, transformers, "
                                 "torch", "make a venv with onnxruntime-genai, onnx-ir, onnx, "
                                 "transformers, torch; pass it as --genai-python")  # fmt: skip
        if problem:
            missing |= dict.fromkeys(genai_keys, problem)
        else:
            for k, v in genai_builds(args.genai_python, genai_keys, checkpoint, digest,
                                     work).items():  # fmt: skip
                if isinstance(v, Path):
                    where[k] = v
                else:
                    missing[k] = v
    if "optimum" in keys:
        problem = python_problem(args.optimum_python, "optimum.onnxruntime", "make a venv with "
                                 'pip install "optimum[onnxruntime]"; pass it as '
                                 "--optimum-python")  # fmt: skip
        if not problem and not Path(args.optimum_python).with_name("optimum-cli").exists():
            problem = f"no optimum-cli beside {args.optimum_python}"
        built = problem or optimum_build(args.optimum_python, checkpoint, digest, work)
        if isinstance(built, Path):
            where["optimum"] = built
        else:
            missing["optimum"] = built
    for key, why in missing.items():
        print(f"{NAMES[key]}: not measured: {why}", flush=True)
    ready = [s for s in sides if s.key in where]
    prep_s = time.perf_counter() - t0

    prompts = np.random.default_rng(0).integers(3, c.vocab_size, (max(args.batches),
                                                                   args.prompt))  # fmt: skip
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    settings = []
    versions: dict[str, str] = {}
    for batch in args.batches:
        for threads in args.threads:
            print(f"\nbatch {batch}, {threads} thread(s): {len(ready)} sides, warm-up and "
                  f"{args.rounds} rounds ...", flush=True)  # fmt: skip
            t1 = time.perf_counter()
            load_before = _load_avg()
            rows, failed, loads = run_setting(ready, where, pythons, prompts, args, batch,
                                              threads, logs)  # fmt: skip
            checks = targets(rows)
            print_setting(batch, threads, rows, failed, checks, args.new, loads)
            versions |= {NAMES[k]: r["version"] for k, r in rows.items()}
            settings.append({"batch": batch, "threads": threads, "sides": rows,
                             "missing": failed, "targets": checks,
                             "load_average_1min": {"before": load_before, "after_rounds": loads},
                             "wall_s": time.perf_counter() - t1})  # fmt: skip

    models: dict[str, dict[str, Any]] = {}
    for side in ready:
        if side.kind == "hf":
            continue
        path = where[side.key]
        models[side.key] = model_nodes(path if path.suffix == ".onnx" else path / "model.onnx",
                                       graphdsl=side.kind == "graphdsl")  # fmt: skip
    print_models(models)

    wall = time.perf_counter() - started
    uptime_after = _uptime()
    summary = [c for s in settings for c in s["targets"]]
    if summary:
        passed = sum(c["pass"] for c in summary)
        print(f"\ntargets: {passed} of {len(summary)} PASS over {len(settings)} setting(s)")
    lib = {"python": platform.python_version(), "numpy": np.__version__, "onnx": onnx.__version__,
           "onnxruntime": ort.__version__, "torch": torch.__version__,
           "transformers": transformers.__version__}  # fmt: skip
    print(f"\nLlama {c.num_hidden_layers} layers, hidden {c.hidden_size}, intermediate "
          f"{c.intermediate_size}, {c.num_attention_heads} heads / {c.num_key_value_heads} KV "
          f"heads, vocab {c.vocab_size}, {params / 1e6:.1f}M parameters (random weights); "
          f"greedy, prompt {args.prompt} tokens, {args.new} new; medians of {args.rounds} "
          f"interleaved rounds after a warm-up. {platform.machine()}, {os.cpu_count()} cores; "
          + ", ".join(f"{k} {v}" for k, v in lib.items()))  # fmt: skip
    for name, v in versions.items():
        print(f"  {name}: {v}")
    print(f"prefill: the call to the first new token; decode: the next {args.new - 1} steps "
          "(per seq: steps/s; batch: x batch).")  # fmt: skip
    print(f"preparation (checkpoint, exports, builds) {prep_s:.0f} s; whole run {wall:.0f} s")
    print(f"machine load before: {uptime_before}\nmachine load after:  {uptime_after}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "config": {k: v for k, v in vars(c).items() if k != "rope_scaling"},
            "parameters": params, "prompt": args.prompt, "new": args.new,
            "rounds": args.rounds, "batches": args.batches, "threads": args.threads,
            "machine": platform.machine(), "cores": os.cpu_count(), "libraries": lib,
            "side_versions": versions, "side_names": {s.key: s.name for s in sides},
            "targets": {"decode_min": DECODE_MIN, "prefill_max": PREFILL_MAX,
                        "rss_max": RSS_MAX, "pairs": [list(t) for t in TARGETS]},
            "date": time.strftime("%Y-%m-%d"), "uptime_before": uptime_before,
            "uptime_after": uptime_after, "wall_s": wall, "preparation_s": prep_s,
            "settings": settings, "models": models, "missing": missing,
        }, indent=1) + "\n")  # fmt: skip
        print(f"figures written to {args.json}")
    first = settings[0]["sides"] if settings else {}
    ok = all(first[k]["tokens_equal_transformers"] is not False for k in ("gd-fp32",)
             if k in first)  # fmt: skip
    return 0 if ok else 1


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True,
                              check=False).stdout.strip()  # fmt: skip
    except OSError:
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    raise SystemExit(main())
