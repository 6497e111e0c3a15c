"""The provider the suite runs on: ``pytest --provider cpu`` (the default) or ``--provider
cuda`` (conftest.py sets it before any test module is imported). ``--provider cuda-on-cpu``
is a development aid without a GPU: models exported for CUDA, run on the CPU provider, which
checks the arithmetic of the CUDA rewrites wherever the CPU has the kernels (it has no
bfloat16 arithmetic, for one: those cases fail to load).

Tests import ``export``, ``run``, ``inference_session`` and ``Session`` from here: ``export``
targets the provider's export target, ``run``, ``inference_session`` and ``Session`` use its
providers (the CUDA provider first and the CPU behind it, as users list them; TF32 off,
run()'s default). A test that pins a fact of one provider (node counts, a kernel's
behaviour) passes ``target=`` or ``providers=`` itself, or is marked with :data:`cpu_only` /
:data:`cuda_only`.
"""

from __future__ import annotations

import os
from typing import Any

import onnxruntime as ort
import pytest

import exporters.onnx as xo

__all__ = [
    "CPU",
    "CUDA",
    "PROVIDER",
    "Session",
    "configure",
    "cpu_only",
    "cuda_only",
    "export",
    "inference_session",
    "providers",
    "run",
    "target",
]

CPU = ["CPUExecutionProvider"]
CUDA = ["CUDAExecutionProvider", "CPUExecutionProvider"]
PROVIDER = "cpu"


def configure(name: str) -> None:
    """Run the suite on provider ``name`` ("cpu" or "cuda"); "cuda" needs onnxruntime-gpu and
    a GPU (pytest stops with the reason otherwise)."""
    global PROVIDER
    if name == "cuda-on-cpu":
        _register_cuda_on_cpu()
    if name == "cuda" and "CUDAExecutionProvider" not in ort.get_available_providers():
        raise pytest.UsageError(
            "--provider cuda: onnxruntime has no CUDA provider here (available: "
            f"{ort.get_available_providers()}); install onnxruntime-gpu on a machine with a GPU"
        )
    PROVIDER = name
    os.environ["GRAPHDSL_TEST_PROVIDER"] = name  # for subprocesses the tests start


def target() -> str:
    """The export target of the provider the suite runs on."""
    return PROVIDER


def _register_cuda_on_cpu() -> None:
    """A target "cuda-on-cpu": CUDA's rewrites (its quirks and broken kernels) over the
    kernels both providers have, everything else on the CPU's: every model runs on the CPU
    provider, and the CUDA rewrites' arithmetic is checked there."""
    from exporters.onnx._targets import TARGETS, Target

    cuda, cpu = TARGETS["cuda"], TARGETS["cpu"]
    both = {op: types & cpu.kernels.get(op, types) for op, types in cuda.kernels.items()}
    TARGETS["cuda-on-cpu"] = Target("cuda-on-cpu", both, cpu.provider, {}, registered=both,
                                    fallback=cpu, quirks=cuda.quirks)  # fmt: skip


def providers() -> list[str]:
    return CUDA if PROVIDER == "cuda" else CPU


def export(graph: Any, path: Any = None, **kwargs: Any) -> Any:
    kwargs.setdefault("target", target())
    return xo.export(graph, path, **kwargs)


def run(model: Any, inputs: Any, **kwargs: Any) -> list[Any]:
    if kwargs.get("providers") is None:
        kwargs["providers"] = providers()
    return xo.run(model, inputs, **kwargs)


def inference_session(model: Any, providers_: Any = None, **kwargs: Any) -> Any:
    return xo.inference_session(model, providers_ or providers(), **kwargs)


def Session(model: Any, providers_: Any = None, **kwargs: Any) -> xo.Session:
    return xo.Session(model, providers_ or providers(), **kwargs)


cpu_only = pytest.mark.skipif(
    "os.environ.get('GRAPHDSL_TEST_PROVIDER', 'cpu') != 'cpu'",
    reason="pins a fact of onnxruntime's CPU provider (node counts, a CPU kernel's behaviour)",
)
cuda_only = pytest.mark.skipif(
    "os.environ.get('GRAPHDSL_TEST_PROVIDER', 'cpu') != 'cuda'",
    reason="pins a fact of onnxruntime's CUDA provider: run with --provider cuda on a GPU",
)
