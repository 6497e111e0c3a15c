"""Text generation with a KV cache: :class:`Generator` and :func:`generate`, on a decoder model
exported with graphdsl (examples/hf_llama.py builds one), on onnxruntime.

The decoder's signature (names as examples/hf_llama.py gives them; the layer count, the
key/value heads, the head size and the cache dtype are read from the model):

* inputs ``input_ids`` int64 ``(batch, seq)``, ``attention_mask`` int64 ``(batch, past +
  seq)`` (1 for a token, 0 for left padding), ``position_ids`` int64 ``(batch, seq)``, and
  per layer i ``past_key_<i>`` and ``past_value_<i>`` ``(batch, kv_heads, past, head_dim)``;
* outputs ``logits`` ``(batch, seq, vocab)`` and per layer ``present_key_<i>`` and
  ``present_value_<i>`` ``(batch, kv_heads, past + seq, head_dim)``.

The prompt is the first step (past 0); each later step feeds one token per row and the
previous step's presents as the pasts.

A decoder may instead hold its cache in a buffer of fixed length, as onnxruntime-genai's
models do (``examples/hf_llama.py``'s ``build_buffered``, on ``gd.ops.group_query_attention``):
no ``position_ids`` input, and ``present_key_<i>`` of the same shape as ``past_key_<i>``
``(batch, kv_heads, buffer, head_dim)``. Its rows are right-padded: ``attention_mask``
``(batch, buffer)`` is 1 at each of a row's tokens (cached and new), then 0; its sum per
row is what the model reads. The Generator moves each left-padded prompt's tokens to the
front, makes buffers of the prompt's length plus ``max_new_tokens``, and takes each row's
logits at its last token (a model may give only those, ``(batch, 1, vocab)``, as
``build_buffered`` and MAX's pipelines do: its head then reads one position per row). Where
the model runs onnxruntime's GroupQueryAttention (``export(exact=False)``) past and present
are one buffer, written in place (onnxruntime-genai's ``past_present_share_buffer``): no
step copies the cache. Otherwise two buffers take turns.

The presents stay onnxruntime OrtValues on the session's device (CUDA device 0 for a CUDA
session) from step to step; only the last position's logits come to the host, where the
next token is chosen. The model's signature is checked once, when the Generator is made,
and the prompt once per call: a step binds its inputs and outputs with onnxruntime's IO
binding and runs, with no Python-side checks.

Token choice follows transformers' ``generate``: greedy is the first index of the largest
logit; sampling applies ``temperature``, then ``top_k``, then ``top_p`` (the smallest set of
the most likely tokens whose probabilities reach ``top_p``, at least one), then draws from
the softmax with numpy's ``default_rng(seed)``. A row that produced an ``eos_token_id``
is finished: its later tokens are ``pad_token_id``; generation stops when every row is
finished or after ``max_new_tokens``. Position ids are ``cumsum(attention_mask) - 1``
(1 where the mask is 0), as transformers makes them for left-padded batches.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator as Generator_
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto

from exporters.onnx._run import RunError
from exporters.onnx._session import Session
from graphdsl.graph import Graph

__all__ = ["Generator", "generate"]

_NP = {"tensor(float)": np.float32, "tensor(float16)": np.float16,
       "tensor(double)": np.float64}  # fmt: skip
_LAYER = re.compile(r"past_key_(\d+)$")


class Generator:
    """A decoder (a Graph, a ModelProto or a path; the signature in the module docstring)
    on onnxruntime, ready to generate: ``providers`` and ``kwargs`` are
    :class:`~exporters.onnx.Session`'s (``threads=``, ...).

    >>> import numpy as np, graphdsl as gd
    >>> from exporters.onnx import Generator
    >>> g = gd.Graph("counter", input_types={
    ...     "input_ids": gd.TensorType(gd.int64, ("batch", "seq")),
    ...     "attention_mask": gd.TensorType(gd.int64, ("batch", "total")),
    ...     "position_ids": gd.TensorType(gd.int64, ("batch", "seq")),
    ...     "past_key_0": gd.TensorType(gd.float32, ("batch", 1, "past", 1)),
    ...     "past_value_0": gd.TensorType(gd.float32, ("batch", 1, "past", 1))})
    >>> ids, mask, pos, pk, pv = g.inputs
    >>> logits = gd.ops.one_hot((ids + 1) % 5, 5).cast(gd.float32)  # next token: id + 1
    >>> kv = ids.cast(gd.float32)[:, None, :, None]
    >>> g.output(logits=logits, present_key_0=gd.ops.concat([pk, kv], axis=2),
    ...          present_value_0=gd.ops.concat([pv, kv], axis=2))
    >>> Generator(g).generate(np.array([[0, 1]]), max_new_tokens=4)
    array([[0, 1, 2, 3, 4, 0]])
    """

    def __init__(
        self,
        model: Graph | ModelProto | str | os.PathLike[str],
        providers: Sequence[str | tuple[str, Mapping[str, Any]]] | None = None,
        *,
        max_length: int | None = None,
        **kwargs: Any,
    ) -> None:
        if max_length is not None and (not isinstance(max_length, int) or max_length < 1):
            raise ValueError(f"max_length must be an int >= 1 or None, got {max_length!r}")
        self.max_length = max_length
        self.session = Session(model, providers, **kwargs)
        sess = self.session.inference_session
        inputs = {i.name: i for i in sess.get_inputs()}
        outputs = {o.name for o in sess.get_outputs()}
        layers = sorted(int(m.group(1)) for n in inputs if (m := _LAYER.match(n)))
        self.layers = len(layers)
        present = next((o for o in sess.get_outputs() if o.name == "present_key_0"), None)
        past_in = inputs.get("past_key_0")
        self.buffered = ("position_ids" not in inputs and present is not None
                         and past_in is not None and len(present.shape) == 4
                         and present.shape[2] == past_in.shape[2])  # fmt: skip
        self.shares = self.buffered and _runs_gqa(self.session.model)
        want_in = {"input_ids", "attention_mask"} | (set() if self.buffered else {"position_ids"})
        want_in |= {f"past_{kv}_{i}" for i in range(self.layers) for kv in ("key", "value")}
        want_out = {"logits"} | {f"present_{kv}_{i}" for i in range(self.layers)
                                 for kv in ("key", "value")}  # fmt: skip
        problems = []
        if layers != list(range(self.layers)) or not layers:
            problems.append(f"past_key_<i> inputs for layers 0..n-1, got layers {layers}")
        if set(inputs) != want_in:
            problems.append(f"inputs {sorted(want_in)}, got {sorted(inputs)}")
        if not want_out <= outputs:
            problems.append(f"outputs {sorted(want_out)}, got {sorted(outputs)}")
        for name in ("input_ids", "attention_mask", "position_ids")[:2 if self.buffered else 3]:
            if name in inputs and inputs[name].type != "tensor(int64)":
                problems.append(f"{name} of int64, got {inputs[name].type}")
        if not problems:
            past = inputs["past_key_0"]
            self.cache_dtype = _NP.get(past.type)
            shape = past.shape
            if self.cache_dtype is None or len(shape) != 4:
                problems.append(f"past_key_0 a float (batch, heads, past, head_dim), got "
                                f"{past.type} {shape}")  # fmt: skip
            elif not (isinstance(shape[1], int) and isinstance(shape[3], int)):
                problems.append(f"past_key_0 with static heads and head_dim, got {shape}")
            else:
                self.kv_heads, self.head_dim = int(shape[1]), int(shape[3])
        if problems:
            raise RunError(
                "Generator: the model is not a decoder with a KV cache as "
                "exporters/onnx/_generate.py describes it: expected " + "; ".join(problems)
            )
        logits = next(o for o in sess.get_outputs() if o.name == "logits")
        last = logits.shape[-1] if logits.shape else None
        self.vocab: int | None = last if isinstance(last, int) else None
        self._outputs = ["logits"] + [f"present_{kv}_{i}" for i in range(self.layers)
                                      for kv in ("key", "value")]  # fmt: skip
        self._device = self.session.device

    # ------------------------------------------------------------------------ public
    def generate(self, input_ids: Any, attention_mask: Any = None, **options: Any) -> np.ndarray:
        """The prompts followed by the tokens generated, int64 ``(batch, prompt + new)``
        (as transformers' ``generate`` returns them); ``options`` as :meth:`stream`'s."""
        ids, mask = self._prompt(input_ids, attention_mask)
        steps = list(self.stream(ids, mask, **options))
        new = np.stack(steps, axis=1) if steps else np.zeros((ids.shape[0], 0), np.int64)
        return np.concatenate([ids, new], axis=1)

    def stream(
        self,
        input_ids: Any,
        attention_mask: Any = None,
        *,
        max_new_tokens: int = 32,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        seed: int | None = None,
        eos_token_id: int | Sequence[int] | None = None,
        pad_token_id: int | None = None,
    ) -> Iterator[np.ndarray]:
        """The next token of each row, int64 ``(batch,)``, one step at a time: greedy, or
        sampled with ``temperature``, ``top_k``, ``top_p`` from ``seed`` (module docstring).
        ``attention_mask`` (1 for a token, 0 for left padding) defaults to all ones."""
        ids, mask = self._prompt(input_ids, attention_mask)
        choose = _chooser(do_sample, temperature, top_k, top_p, seed)
        stops = _ints(eos_token_id, "eos_token_id")
        pad = int(pad_token_id if pad_token_id is not None else (stops[0] if stops else 0))
        if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
        total = ids.shape[1] + max_new_tokens
        if self.max_length is not None and total > self.max_length:
            raise ValueError(
                f"a prompt of {ids.shape[1]} tokens and max_new_tokens={max_new_tokens} make "
                f"{total} positions, past the model's max_length={self.max_length} (its position "
                "table, or the cache's length); shorten the prompt or ask for fewer tokens"
            )
        if max_new_tokens == 0:
            return
        steps = self._buffer_steps(ids, mask, total) if self.buffered else self._steps(ids, mask)
        logits = next(steps)
        unfinished = np.ones(ids.shape[0], np.bool_)
        for i in range(max_new_tokens):
            token = choose(logits)
            if stops:  # (without them every row runs to the end)
                token = np.where(unfinished, token, pad)
                unfinished &= ~np.isin(token, stops)
            yield token
            if i == max_new_tokens - 1 or (stops and not unfinished.any()):
                return
            logits = steps.send(token)

    # ------------------------------------------------------------------------ steps
    def _prompt(self, input_ids: Any, attention_mask: Any) -> tuple[np.ndarray, np.ndarray]:
        ids = np.asarray(input_ids)
        if ids.ndim != 2 or ids.dtype.kind not in "iu" or ids.shape[1] == 0:
            raise ValueError(f"input_ids must be integers (batch, prompt) with a prompt of at "
                             f"least one token, got {ids.dtype} {ids.shape}")  # fmt: skip
        mask = np.ones(ids.shape, np.int64) if attention_mask is None else np.asarray(
            attention_mask)  # fmt: skip
        if mask.shape != ids.shape or mask.dtype.kind not in "iub":
            raise ValueError(f"attention_mask must be ints of the prompt's shape {ids.shape}, "
                             f"got {mask.dtype} {mask.shape}")  # fmt: skip
        outside = (ids < 0) | (ids >= self.vocab) if self.vocab is not None else ids < 0
        if outside.any():
            at = tuple(int(i) for i in np.argwhere(outside)[0])
            raise ValueError(
                f"input_ids: token id {int(ids[at])} at {at} is outside the vocabulary "
                f"[0, {self.vocab if self.vocab is not None else 'vocab'}) of the model's logits "
                "(padding included: give padded positions a valid id, such as 0)"
            )
        if not mask.astype(np.bool_)[:, -1].all():
            raise ValueError("attention_mask: each prompt must end with a token (pad on the "
                             "left, as decoder-only models are batched)")  # fmt: skip
        return ids.astype(np.int64), mask.astype(np.int64)

    def _steps(self, ids: np.ndarray, mask: np.ndarray) -> Generator_[np.ndarray, np.ndarray, None]:
        """The last position's logits of each step: the prompt's, then (sent each row's
        next token) one more token's; the cache grows by concatenation in the model."""
        batch = ids.shape[0]
        positions = np.cumsum(mask, axis=-1) - 1
        positions[mask == 0] = 1
        empty = np.zeros((batch, self.kv_heads, 0, self.head_dim), self.cache_dtype)
        cache = [self.session.ortvalue(empty)] * (2 * self.layers)
        while True:
            logits, cache = self._step(ids, mask, positions, cache)
            token = yield logits[:, -1, :]
            ids = token[:, None]
            mask = np.concatenate([mask, np.ones((batch, 1), np.int64)], axis=1)
            positions = positions[:, -1:] + 1

    def _buffer_steps(self, ids: np.ndarray, mask: np.ndarray,
                      size: int) -> Generator_[np.ndarray, np.ndarray, None]:  # fmt: skip
        """:meth:`_steps` for a decoder whose cache is a buffer of ``size`` positions (the
        module docstring): the prompts right-padded, past and present one buffer where the
        model runs GroupQueryAttention (else two, taking turns). The bindings are made once,
        with an attention mask as wide as the buffer (a new width each step would make
        onnxruntime plan each step's memory anew: 0.13 ms a step, measured); on the CPU the
        ids, the mask and the logits live in arrays the OrtValues share, written in place
        (elsewhere copied to the device each step). The logits yielded may be that array:
        read them before sending the next tokens."""
        batch = ids.shape[0]
        front = np.argsort(mask == 0, axis=1, kind="stable")  # each row's tokens first
        ids = np.take_along_axis(ids, front, axis=1)
        lengths = mask.astype(np.bool_).sum(axis=1).astype(np.int64)  # tokens per row
        shape = (batch, self.kv_heads, size, self.head_dim)
        kind, index = self._device
        on_cpu = kind == "cpu"
        on_device = self.session.ortvalue  # (on the CPU: shares the array's memory)

        def buffers() -> list[Any]:  # (each its own memory)
            return [on_device(np.zeros(shape, self.cache_dtype)) for _ in range(2 * self.layers)]

        past = buffers()
        present = past if self.shares else buffers()
        names = [f"{kv}_{i}" for i in range(self.layers) for kv in ("key", "value")]

        def binding(past: list[Any], present: list[Any]) -> Any:
            b = self.session.inference_session.io_binding()
            b.bind_output("logits", kind, index)  # (first: get_outputs()[0])
            for name, p, q in zip(names, past, present, strict=True):
                b.bind_ortvalue_input(f"past_{name}", p)
                b.bind_ortvalue_output(f"present_{name}", q)
            return b

        # one binding, or two taking turns (the second reads what the first wrote)
        turns = [binding(past, present)] + ([] if self.shares else [binding(present, past)])
        counts = (np.arange(size)[None] < lengths[:, None]).astype(np.int64)  # each row's
        mask_value = on_device(counts)  # tokens: 1, then 0 to the buffer's end
        for b in turns:
            b.bind_ortvalue_input("attention_mask", mask_value)
        b = turns[0]
        b.bind_ortvalue_input("input_ids", on_device(np.ascontiguousarray(ids)))
        self.session.run_binding(b)
        logits = b.get_outputs()[0].numpy()
        # each row's last token (a model may give the last token's logits only: seq 1)
        last = np.minimum(lengths, ids.shape[1]) - 1 if logits.shape[1] > 1 else 0 * lengths
        token = yield logits[np.arange(batch), last]
        step_ids = np.empty((batch, 1), np.int64)
        ids_value = on_device(step_ids)
        out = np.empty((batch, 1, logits.shape[-1]), logits.dtype)
        out_value = on_device(out) if on_cpu else None
        for b in turns:
            b.bind_ortvalue_input("input_ids", ids_value)
            if out_value is not None:
                b.bind_ortvalue_output("logits", out_value)
        rows, step = np.arange(batch), 1  # (the prefill ran turns[0])
        while True:
            counts[rows, lengths] = 1  # the new token
            lengths = lengths + 1
            step_ids[:, 0] = token
            if not on_cpu:
                ids_value.update_inplace(step_ids)
                mask_value.update_inplace(counts)
            b = turns[step % len(turns)]
            self.session.run_binding(b)
            logits = out if on_cpu else b.get_outputs()[0].numpy()
            token = yield logits[:, 0]
            step += 1

    def _step(self, ids: np.ndarray, mask: np.ndarray, positions: np.ndarray,
              cache: list[Any]) -> tuple[np.ndarray, list[Any]]:  # fmt: skip
        sess = self.session.inference_session
        binding = sess.io_binding()
        for name, value in (("input_ids", ids), ("attention_mask", mask),
                            ("position_ids", positions)):  # fmt: skip
            binding.bind_ortvalue_input(name, self.session.ortvalue(value))
        for i in range(self.layers):
            binding.bind_ortvalue_input(f"past_key_{i}", cache[2 * i])
            binding.bind_ortvalue_input(f"past_value_{i}", cache[2 * i + 1])
        kind, index = self._device
        for name in self._outputs:
            binding.bind_output(name, kind, index)
        self.session.run_binding(binding)
        outs = binding.get_outputs()
        return outs[0].numpy(), list(outs[1:])


def generate(
    model: Graph | ModelProto | str | os.PathLike[str] | Generator,
    input_ids: Any,
    attention_mask: Any = None,
    **options: Any,
) -> np.ndarray:
    """``Generator(model).generate(input_ids, attention_mask, **options)``: the prompts and
    the tokens generated (options: ``max_new_tokens``, ``do_sample``, ``temperature``,
    ``top_k``, ``top_p``, ``seed``, ``eos_token_id``, ``pad_token_id``). Make a
    :class:`Generator` once to generate many times from one session.

    A toy decoder whose next token is the last one plus 1 (mod 5), on a left-padded batch
    of two prompts; a row that produces ``eos_token_id`` is padded with it (the default
    ``pad_token_id``), and generation stops once every row has:

    >>> import numpy as np, graphdsl as gd
    >>> from exporters.onnx import generate
    >>> g = gd.Graph("counter", input_types={
    ...     "input_ids": gd.TensorType(gd.int64, ("batch", "seq")),
    ...     "attention_mask": gd.TensorType(gd.int64, ("batch", "total")),
    ...     "position_ids": gd.TensorType(gd.int64, ("batch", "seq")),
    ...     "past_key_0": gd.TensorType(gd.float32, ("batch", 1, "past", 1)),
    ...     "past_value_0": gd.TensorType(gd.float32, ("batch", 1, "past", 1))})
    >>> ids, mask, pos, pk, pv = g.inputs
    >>> kv = ids.cast(gd.float32)[:, None, :, None]
    >>> g.output(logits=gd.ops.one_hot((ids + 1) % 5, 5).cast(gd.float32),
    ...          present_key_0=gd.ops.concat([pk, kv], axis=2),
    ...          present_value_0=gd.ops.concat([pv, kv], axis=2))
    >>> prompts, prompt_mask = np.array([[1, 2], [0, 3]]), np.array([[1, 1], [0, 1]])
    >>> generate(g, prompts, prompt_mask, max_new_tokens=5, eos_token_id=4)
    array([[1, 2, 3, 4],
           [0, 3, 4, 4]])
    """
    gen = model if isinstance(model, Generator) else Generator(model)
    return gen.generate(input_ids, attention_mask, **options)


def _runs_gqa(model: Any) -> bool:
    """Does the model (a ModelProto or a path; a Graph is exported exact) run onnxruntime's
    GroupQueryAttention, which writes the present into the past's buffer when they are one?"""
    if isinstance(model, (str, os.PathLike)):
        model = onnx.load(os.fspath(model), load_external_data=False)
    if not isinstance(model, ModelProto):
        return False
    nodes = [*model.graph.node, *(n for f in model.functions for n in f.node)]
    return any(n.op_type == "GroupQueryAttention" and n.domain == "com.microsoft" for n in nodes)


def _ints(v: int | Sequence[int] | None, what: str) -> list[int]:
    if v is None:
        return []
    items = [v] if isinstance(v, (int, np.integer)) else list(v)
    if not all(isinstance(i, (int, np.integer)) for i in items):
        raise ValueError(f"{what} must be an int or a list of ints, got {v!r}")
    return [int(i) for i in items]


def _chooser(do_sample: bool, temperature: float, top_k: int, top_p: float,
             seed: int | None) -> Any:  # fmt: skip
    """The next-token rule: greedy, or transformers' temperature, top-k, top-p sampling."""
    if not do_sample:
        return lambda logits: np.argmax(logits, axis=-1).astype(np.int64)
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0 when sampling, got {temperature!r}")
    if not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be an int >= 0 (0: no limit), got {top_k!r}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    rng = np.random.default_rng(seed)

    def sample(logits: np.ndarray) -> np.ndarray:
        scores = logits.astype(np.float64) / temperature
        if top_k and top_k < scores.shape[-1]:
            kth = np.sort(scores, axis=-1)[:, -top_k][:, None]
            scores = np.where(scores < kth, -np.inf, scores)
        if top_p < 1:
            order = np.argsort(scores, axis=-1, kind="stable")  # ascending, as transformers
            ranked = np.take_along_axis(scores, order, axis=-1)
            probs = np.exp(ranked - ranked[:, -1:])
            probs /= probs.sum(axis=-1, keepdims=True)
            drop = np.cumsum(probs, axis=-1) <= 1 - top_p
            drop[:, -1] = False  # keep at least the most likely token
            removed = np.zeros_like(drop)
            np.put_along_axis(removed, order, drop, axis=-1)
            scores = np.where(removed, -np.inf, scores)
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        return np.array([rng.choice(len(p), p=p) for p in probs], np.int64)

    return sample
