"""benchmarks/generate.py (issue 31, item 6) in its smoke mode (examples/hf_llama.py's small
Config, a 16-token prompt, 8 new tokens, one round, batch 1, 1 thread): each side runs in a
worker process of its own and reports its timings, tokens and peak RSS; graphdsl fp32's
tokens equal transformers', and so do the buffered decoder's on GroupQueryAttention;
graphdsl int4 exports MatMulNBits; a side whose Python is
missing is reported with the reason and the others still run. Timings are not checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_modules import load_script

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

BENCH = load_script("benchmarks/generate.py", "generate_benchmark")


def test_smoke_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    figures = tmp_path / "generate.json"
    argv = ["--smoke", "--work", str(tmp_path / "work"), "--json", str(figures),
            "--sides", "hf,gd-fp32,gd-int4,gd-fp32-gqa,genai-fp32",
            "--genai-python", str(tmp_path / "no-python")]  # fmt: skip
    assert BENCH.main(argv) == 0
    out = capsys.readouterr().out
    assert "### batch 1, 1 thread(s)" in out
    row = next(x for x in out.splitlines() if x.startswith("| graphdsl fp32 |"))
    assert row.rstrip().endswith("| yes |")
    assert "genai fp32: not measured: no Python at" in out

    data = json.loads(figures.read_text())
    (setting,) = data["settings"]
    assert (setting["batch"], setting["threads"]) == (1, 1)
    sides = setting["sides"]
    assert set(sides) == {"hf", "gd-fp32", "gd-int4", "gd-fp32-gqa"}
    assert sides["gd-fp32"]["tokens_equal_transformers"] is True
    # the buffered decoder on onnxruntime's GroupQueryAttention gives transformers' tokens too
    assert sides["gd-fp32-gqa"]["tokens_equal_transformers"] is True
    assert "GroupQueryAttention" in data["models"]["gd-fp32-gqa"]["contrib_ops_exported"]
    for r in sides.values():
        assert r["prefill_ms"] > 0 and r["decode_tok_s_per_seq"] > 0
        assert r["decode_tok_s_batch"] == r["decode_tok_s_per_seq"]  # batch 1
        assert 0 < r["imports_rss_mb"] <= r["loaded_rss_mb"] <= r["peak_rss_mb"]
        assert r["decode_vs_genai-fp32"] is None  # no genai side to compare with
    assert setting["targets"] == []
    assert "MatMulNBits" in data["models"]["gd-int4"]["contrib_ops_exported"]
    assert data["models"]["gd-fp32"]["contrib_ops_exported"] == {}
    assert "genai-fp32" in data["missing"]
