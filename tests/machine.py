"""The machine a test run ran on, in the terms that change float results: the CPU (vendor,
family/model, the instruction-set flags onnxruntime's MLAS and numpy's OpenBLAS dispatch on),
the versions of numpy, onnx and onnxruntime, and the BLAS core numpy's matmul runs on.

Why the BLAS core: ``gd.evaluate`` computes float32 matmuls with numpy, i.e. OpenBLAS's sgemm,
whose summation order is the chosen core's. numpy 1.26.0 bundles OpenBLAS 0.3.23, which does
not know Intel's family 6 model 207 (Emerald Rapids) and falls back to its Prescott (SSE3)
kernels there; the reference's float32 sums then come out in another order than on a
Sapphire Rapids (model 143) or an AMD EPYC (issue 29). The suite compares sums within derived
bounds (tests/floats.py), and names the machine so that a failure names its machine too.

``.ci/run`` prints this at the start of each pass (``python tests/machine.py``); pytest's
report header carries it as well (conftest.py).
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata

# the flags that select kernels: MLAS (onnxruntime), OpenBLAS (numpy) and numpy's own loops
FLAGS = ("sse4_2", "avx", "f16c", "fma", "avx2", "avx512f", "avx512bw", "avx512vl",
         "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16",
         "amx_int8")  # fmt: skip
PACKAGES = ("numpy", "ml_dtypes", "onnx", "onnxruntime", "onnxruntime-gpu", "torch")


def _cpuinfo() -> dict[str, str]:
    """The first processor's entries of /proc/cpuinfo (empty where there is none)."""
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                info[key.strip()] = value.strip()
    except OSError:
        pass
    return info


def blas_core() -> str:
    """numpy's BLAS library, version and the core it dispatched to (threadpoolctl, where
    installed; else what numpy's build says)."""
    try:
        import numpy  # noqa: F401  (threadpoolctl sees only the libraries already loaded)
        import threadpoolctl

        libs = [i for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
        if libs:
            i = libs[0]
            return f"{i.get('internal_api')} {i.get('version')} core {i.get('architecture')}"
    except Exception as e:  # a probe must never stop the run it describes
        return f"unknown ({type(e).__name__})"
    return "unknown (threadpoolctl not installed)"


def numpy_simd() -> str:
    """The instruction sets numpy's dispatch sees (it reads CPUID itself, as onnxruntime's
    MLAS does: under qemu's user mode that is the emulated CPU, not /proc/cpuinfo's)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as f  # numpy >= 2
    except ImportError:
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as f  # numpy 1.x
        except ImportError:
            return "unknown"
    names = ("SSE42", "AVX", "F16C", "FMA3", "AVX2", "AVX512F", "AVX512_SKX", "AVX512_SPR")
    return " ".join(n for n in names if f.get(n)) or "baseline"


def describe() -> str:
    """Lines naming the machine: CPU, flags present and absent, versions, BLAS core."""
    info = _cpuinfo()
    flags = set(info.get("flags", "").split())
    present = [f for f in FLAGS if f in flags]
    absent = [f for f in FLAGS if f not in flags]
    cpu = info.get("model name", platform.processor() or platform.machine())
    ident = (f"{info.get('vendor_id', '?')} family {info.get('cpu family', '?')} model "
             f"{info.get('model', '?')} stepping {info.get('stepping', '?')}")  # fmt: skip
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return "\n".join([
        f"machine: {cpu} ({ident}), {platform.machine()}, Python {platform.python_version()}",
        f"machine: kernel flags: {' '.join(present) or 'none'}; "
        f"absent: {' '.join(absent) or 'none'}",
        f"machine: {', '.join(versions)}; numpy BLAS: {blas_core()}; numpy SIMD (CPUID): "
        f"{numpy_simd()}",
    ])  # fmt: skip


if __name__ == "__main__":
    # --cpu: the processor lines only (before a venv exists, the versions would be the
    # system Python's)
    lines = describe().splitlines()
    print("\n".join(lines[:2] if "--cpu" in sys.argv[1:] else lines))
