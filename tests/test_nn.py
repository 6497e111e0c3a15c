"""graphdsl.nn without PyTorch: weights named as torch's state_dict, blocks as one subgraph
called with its weights by name, load_state_dict's checks and errors, g.weights,
gd.ops.call by keyword, and that importing graphdsl never imports torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import floats
import numpy as np
import pytest
from backend import export, run

import graphdsl as gd
from graphdsl import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import hf_gpt2  # noqa: E402
import resnet18  # noqa: E402

SMALL = hf_gpt2.Config(vocab_size=50, n_positions=16, n_embd=16, n_head=2, n_layer=3)


def test_parameters_are_named_as_torchs_state_dict() -> None:
    names = [n for n, _ in hf_gpt2.GPT2Model(SMALL).named_parameters()]
    assert names[:4] == ["wte.weight", "wpe.weight", "h.0.ln_1.weight", "h.0.ln_1.bias"]
    assert "h.2.attn.c_attn.weight" in names and names[-2:] == ["ln_f.weight", "ln_f.bias"]
    shapes = dict(hf_gpt2.GPT2Model(SMALL).named_parameters())
    assert shapes["h.0.attn.c_attn.weight"].shape == (16, 48)  # Conv1D: (in, out)
    r = dict(resnet18.ResNet18().named_parameters())
    assert r["layer2.0.downsample.0.weight"].shape == (128, 64, 1, 1)
    assert r["layer1.1.bn2.num_batches_tracked"] == nn.Parameter((), gd.int64, in_graph=False)
    assert len(r) == 122  # torchvision's resnet18 state_dict has 122 entries


def _gpt2() -> tuple[hf_gpt2.GPT2Model, gd.Graph]:
    model = hf_gpt2.GPT2Model(SMALL)
    model.load_state_dict(hf_gpt2.random_state(model))
    return model, hf_gpt2.build(model)


def test_identical_blocks_are_one_subgraph_called_with_weights_by_name() -> None:
    model, g = _gpt2()
    calls = [n for n in g.nodes if n.op == "call"]
    assert len(calls) == SMALL.n_layer
    subs = {id(n.attrs["regions"][0].graph) for n in calls}
    assert len(subs) == 1  # the three blocks share one subgraph
    sub = calls[0].attrs["regions"][0].graph
    assert sub.input_names[0] == "x" and "attn_c_attn_weight" in sub.input_names
    # each call passes its own block's weights
    assert [n.inputs[sub.input_names.index("mlp_c_fc_bias")].attrs["name"] for n in calls] == [
        f"h.{k}.mlp.c_fc.bias" for k in range(SMALL.n_layer)
    ]
    assert list(g.weights)[:3] == ["wte.weight", "wpe.weight", "h.0.ln_1.weight"]
    model_proto = export(g, weights=model.weights())
    assert [f.name for f in model_proto.functions] == ["Block"]
    assert sum(n.op_type == "Block" for n in model_proto.graph.node) == SMALL.n_layer
    ids = np.random.default_rng(0).integers(0, SMALL.vocab_size, size=(2, 5))
    (want,) = gd.evaluate(g, {"ids": ids}, weights=model.weights())
    (got,) = run(model_proto, {"ids": ids})
    # a whole GPT-2 (3 blocks): no bound derived through it; the suite's figure, 1e-5
    # absolute and relative, through tests/floats.py
    floats.assert_close(got, want, 1e-5 * (1 + np.abs(want)), "GPT-2")


def test_a_module_called_twice_is_one_subgraph_called_twice() -> None:
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
            self.block.subgraph = True  # a container made a block

        def forward(self, x: gd.Symbol) -> gd.Symbol:
            return self.block(self.block(x))

    model = Twice()
    with gd.Graph("twice", input_types={"x": gd.TensorType(gd.float32, ("n", 4))}) as g:
        g.output(model(g.inputs[0]))
    calls = [n for n in g.nodes if n.op == "call"]
    assert len(calls) == 2 and calls[0].attrs["regions"][0].graph is (
        calls[1].attrs["regions"][0].graph)  # fmt: skip
    assert list(g.weights) == ["block.0.weight", "block.0.bias", "block.2.weight", "block.2.bias"]


def test_unused_parameters_are_no_inputs_of_the_block() -> None:
    model = resnet18.ResNet18()
    g = resnet18.build(model, 32)
    assert not any("num_batches_tracked" in n for n in g.weights)
    first = next(n for n in g.nodes if n.op == "call").attrs["regions"][0].graph
    assert not any("num_batches_tracked" in n for n in first.input_names)


def test_load_state_dict_names_missing_unexpected_and_mistyped() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2, bias=False))
    good = {"0.weight": np.ones((4, 3), np.float32), "0.bias": np.zeros(4, np.float32),
            "2.weight": np.ones((2, 4), np.float32)}  # fmt: skip
    assert model.load_state_dict(good) == ([], [])
    bad = {**good, "0.bias": np.zeros(5, np.float32), "2.weight": np.ones((2, 4), np.float16),
           "2.bias": np.zeros(2, np.float32)}  # fmt: skip
    del bad["0.weight"]
    with pytest.raises(nn.StateDictError) as e:
        model.load_state_dict(bad)
    assert e.value.missing == ["0.weight"] and e.value.unexpected == ["2.bias"]
    assert e.value.mistyped == [("0.bias", "float32[4]", "float32[5]"),
                                ("2.weight", "float32[2, 4]", "float16[2, 4]")]  # fmt: skip
    text = str(e.value)
    for part in ("1 missing: '0.weight' (float32[4, 3])", "1 unexpected: '2.bias' (float32[2])",
                 "'2.weight' is float16[2, 4], declared float32[2, 4]", "strict=False"):
        assert part in text, text
    assert isinstance(e.value, gd.WeightError)
    # strict=False returns what it left out, as torch does; mistyped ones still raise
    partial = {k: v for k, v in good.items() if k != "0.bias"}
    partial["extra"] = np.zeros(1, np.float32)
    assert model.load_state_dict(partial, strict=False) == (["0.bias"], ["extra"])


def test_load_state_dict_from_a_safetensors_file(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1, dtype="bfloat16"))
    arrays = {"0.weight": np.eye(2, dtype=np.float32), "0.bias": np.ones(2, np.float32),
              "1.weight": np.array([[1, -1]], gd.bfloat16.np),
              "1.bias": np.array([0.5], gd.bfloat16.np)}  # fmt: skip
    path = tmp_path / "model.safetensors"
    gd.save_weights(path, arrays)
    model.load_state_dict(str(path))
    assert set(model.state_dict()) == set(arrays)
    with gd.Graph("st", input_types={"x": gd.TensorType(gd.float32, ("n", 2))}) as g:
        g.output(model(g.inputs[0]))
    x = np.array([[3, 1]], np.float32)
    (want,) = gd.evaluate(g, [x], weights=model.weights())
    # (4 - 2) + 0.5: both layers' sums exact by construction (checked: x @ I + 1, then
    # 4 - 2 + 0.5), so bit for bit but for a zero's sign
    golden = np.array([[2.5]], np.float32)
    exact = np.array([[3.0, 0.0, 1.0], [0.0, 1.0, 1.0], [4.0, -2.0, 0.5]])
    assert floats.exactly_summable(exact, np.float32)
    floats.assert_exact_sum(want, golden, exact[None, 2:], "gd.evaluate")
    (got,) = run(export(g, tmp_path / "st.onnx", weights=model.weights()), [x])
    floats.assert_exact_sum(got, golden, exact[None, 2:], "onnxruntime")


def test_weights_before_load_and_modules_outside_the_tree_are_errors() -> None:
    with pytest.raises(gd.WeightError, match="load_state_dict"):
        nn.Linear(2, 2).weights()
    stray = nn.Linear(2, 2)

    class Uses(nn.Module):
        def forward(self, x: gd.Symbol) -> gd.Symbol:
            return stray(x)

    g = gd.Graph("stray", input_types={"x": gd.TensorType(gd.float32, (1, 2))})
    with pytest.raises(gd.GraphError, match="not a submodule"):
        Uses()(g.inputs[0])
    class NoInit(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter((1,))

    with pytest.raises(gd.GraphError, match=r"super\(\).__init__"):
        NoInit()


def test_call_by_keyword() -> None:
    g = gd.Graph("g", input_types={"x": gd.TensorType(gd.float32, (2,))})
    sub = g.subgraph("axpy", {"x": gd.TensorType(gd.float32, (2,)),
                              "a": gd.TensorType(gd.float32, ()),
                              "y": gd.TensorType(gd.float32, (2,))})  # fmt: skip
    x, a, y = sub.inputs
    sub.output(a * x + y)
    (v,) = g.inputs
    r = gd.ops.call(sub, v, y=v, a=g.scalar(2.0, gd.float32))
    g.output(r)
    assert gd.evaluate(g, [np.array([1, 2], np.float32)])[0].tolist() == [3.0, 6.0]
    for kwargs, message in (({"a": v, "y": v, "z": v}, "no input named 'z'"),
                            ({"x": v, "a": v, "y": v}, "'x' given by position and by name"),
                            ({"a": v}, "no argument for 'y'")):  # fmt: skip
        with pytest.raises(gd.OpTypeError, match=message):
            gd.ops.call(sub, v, **kwargs)


def test_multihead_attention_matches_its_definition() -> None:
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    rng = np.random.default_rng(3)
    state = {n: rng.normal(scale=0.3, size=p.shape).astype(np.float32)
             for n, p in mha.named_parameters()}  # fmt: skip
    mha.load_state_dict(state)
    t = gd.TensorType(gd.float32, ("n", 5, 8))
    with gd.Graph("mha", input_types={"q": t, "kv": t}) as g:
        q, kv = g.inputs
        out, weights = mha(q, kv, kv, is_causal=True)
        assert weights is None
        g.output(out)
    xq, xkv = rng.normal(size=(2, 5, 8)).astype(np.float32), rng.normal(size=(2, 5, 8))
    xkv = xkv.astype(np.float32)
    (got,) = gd.evaluate(g, [xq, xkv], weights=mha.weights())
    w, b = state["in_proj_weight"].astype(np.float64), state["in_proj_bias"]
    heads = [(x @ w[i * 8:(i + 1) * 8].T + b[i * 8:(i + 1) * 8]).reshape(2, 5, 2, 4)
             .transpose(0, 2, 1, 3) for i, x in enumerate((xq, xkv, xkv))]  # fmt: skip
    s = heads[0] @ heads[1].transpose(0, 1, 3, 2) / 2.0
    s = np.where(np.tril(np.ones((5, 5), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    ctx = (p / p.sum(-1, keepdims=True)) @ heads[2]
    want = ctx.transpose(0, 2, 1, 3).reshape(2, 5, 8) @ state["out_proj.weight"].T.astype(
        np.float64) + state["out_proj.bias"]  # fmt: skip
    bound = _mha_bound(state, heads, p / p.sum(-1, keepdims=True), ctx, (xq, xkv, xkv))
    floats.assert_close(got.astype(np.float64), want, bound, "gd.evaluate")
    (exported,) = run(export(g, weights=mha.weights()), [xq, xkv])
    floats.assert_close(exported, got, 2 * bound, "onnxruntime")  # two evaluations


def _mha_bound(state: dict[str, np.ndarray], heads: list[np.ndarray], p: np.ndarray,
               ctx: np.ndarray, xs: tuple[np.ndarray, ...]) -> np.ndarray:  # fmt: skip
    """How far one float32 evaluation of the causal 2-head attention above may be from its
    float64 definition (tests/floats.py's rule, u = 2**-24, e: one value's distance from the
    exact one, carried through): each projection sums 8 products and the bias, e_h = γ_9
    (|x| @ |W|^T + |b|); the scores, 4 products of values off by e_h, halved exactly: es =
    (γ_4 (|Q| + eQ) @ (|K| + eK)^T + eQ @ |K|^T + |Q| @ eK^T + eQ @ eK^T) / 2; softmax
    (as tests/test_max_programs.py's bounds(): scores off by E move each probability by a
    factor within exp(±2E), s - max rounds, exp within 2 ulps, a sum of 5, a division):
    relative ep = expm1(2E) + u R + 14u; the context, 5 products: e_c = γ_5 ((p + ep) @
    (|V| + eV)) + ep @ |V| + p @ eV; the output projection as the first ones, reading
    values off by e_c: γ_9 ((|c| + e_c) @ |Wo|^T + |bo|) + e_c @ |Wo|^T."""
    u = floats.unit_roundoff(np.float32)
    w, b = np.abs(state["in_proj_weight"].astype(np.float64)), np.abs(state["in_proj_bias"])
    g9, g5 = floats.gamma(9, np.float32), floats.gamma(5, np.float32)
    e = [(g9 * (np.abs(x.astype(np.float64)) @ w[i * 8:(i + 1) * 8].T + b[i * 8:(i + 1) * 8]))
         .reshape(2, 5, 2, 4).transpose(0, 2, 1, 3) for i, x in enumerate(xs)]  # fmt: skip
    q, k, v = (np.abs(h) for h in heads)
    eq, ek, ev = e
    kt, ekt = k.transpose(0, 1, 3, 2), ek.transpose(0, 1, 3, 2)
    es = (floats.gamma(4, np.float32) * ((q + eq) @ (kt + ekt)) + eq @ kt + q @ ekt
          + eq @ ekt) / 2  # fmt: skip
    allowed = np.tril(np.ones((5, 5), bool))
    big_e = np.where(allowed, es, 0).max(-1, keepdims=True)
    s = np.where(allowed, heads[0] @ heads[1].transpose(0, 1, 3, 2) / 2.0, -np.inf)
    r = np.where(allowed, s.max(-1, keepdims=True) - s, 0).max(-1, keepdims=True)
    rel = np.expm1(2 * big_e) + u * r + 14 * u
    ep = rel * (1 + rel) * p
    ec = g5 * ((p + ep) @ (v + ev)) + ep @ v + p @ ev + ep @ ev
    flat = lambda a: a.transpose(0, 2, 1, 3).reshape(2, 5, 8)  # noqa: E731
    wo = np.abs(state["out_proj.weight"].astype(np.float64)).T
    bo = np.abs(state["out_proj.bias"].astype(np.float64))
    out = g9 * ((np.abs(flat(ctx)) + flat(ec)) @ wo + bo) + flat(ec) @ wo
    return np.asarray(out * (1 + 2.0**-30))


def test_graphdsl_never_imports_torch() -> None:
    pytest.importorskip("torch", reason="torch is not installed: nothing could import it")
    code = ("import sys, graphdsl, graphdsl.nn, exporters.onnx\n"
            "print('torch' in sys.modules)")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=ROOT, check=True)  # fmt: skip
    assert r.stdout.strip() == "False"


@pytest.mark.parametrize("example", ["hf_gpt2.py", "hf_llama.py", "resnet18.py"])
def test_examples_port_their_model_in_at_most_60_lines(example: str) -> None:
    text = (ROOT / "examples" / example).read_text().splitlines()
    start = next(i for i, line in enumerate(text) if "model code: begin" in line)
    end = next(i for i, line in enumerate(text) if "model code: end" in line)
    code = [line for line in text[start + 1 : end]
            if line.strip() and not line.strip().startswith("#")]  # fmt: skip
    assert 20 <= len(code) <= 60, len(code)
