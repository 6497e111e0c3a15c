"""benchmarks/inference.py (issues 18, 24) on one model at quick sizes: the report has the
exact=False ratios and targets; ``--provider cuda`` without a CUDA provider says so and exits
with status 2; the CUDA columns (CPU-provider nodes, device tensors) are made where
onnxruntime runs the CUDA session's nodes on the CPU (no GPU here). Timings are not checked:
the script prints them, measured side by side."""

from __future__ import annotations

import warnings

import onnxruntime as ort
import pytest
from script_modules import load_script

BENCH = load_script("benchmarks/inference.py", "inference_benchmark")


def _row(out: str, name: str) -> list[str]:
    line = next(x for x in out.splitlines() if x.startswith(f"| {name}"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_cpu_report_has_the_exact_false_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    assert BENCH.cli(["--quick", "--only", "cnn NCHW", "--no-start"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Machine: ")
    head = _row(out, "model")
    cells = dict(zip(head, _row(out, "cnn NCHW float32"), strict=True))
    assert cells["nodes (ours / hand / torch)"].startswith("20 / 12 / ")
    assert cells["ours, exact=False (nodes)"].endswith("(12)")  # the bare MaxPool
    assert float(cells["exact=False / hand"]) > 0
    assert "| the CNN, exact=False, against hand-written and torch.onnx" in out


@pytest.mark.skipif("CUDAExecutionProvider" in ort.get_available_providers(),
                    reason="a CUDA provider is here")  # fmt: skip
def test_cuda_without_a_gpu_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert BENCH.cli(["--provider", "cuda"]) == 2
    assert "no CUDA provider here" in capsys.readouterr().err


def test_cuda_columns() -> None:
    setup = BENCH.Setup("cuda", eager=False, half_block=False, only="cnn NCHW")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the CUDA provider missing here: one warning)
        lines, data = BENCH.main(True, lambda msg: None, setup, start_processes=False)
    out = "\n".join(lines)
    assert "CPU-provider nodes (ours / hand / torch)" in out
    (row,) = data["rows"]
    assert row["cpu_nodes"]["ours"] == 0 and "device" in row["times"]
    assert "| no node of an example model on the CPU provider | none | yes |" in out
