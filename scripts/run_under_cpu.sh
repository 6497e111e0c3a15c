#!/usr/bin/env bash
# Run the test suite under an emulated x86-64 CPU model, so that onnxruntime's MLAS
# kernel dispatch (which reads CPUID/XGETBV once, at import) picks the kernels that
# CPU would get.  Some MLAS kernels give different float results per instruction set:
#   - Softmax (MlasComputeSumExpF32Kernel*): without AVX-512F every exp(x - max) term
#     with x - max < -87.68 (= -126.5*ln 2) is exactly 0, so outputs that should be
#     float32 subnormals become 0; the AVX-512F kernel (vscalefps) keeps subnormals
#     down to x - max = -103.97.
#   - without FMA3 (SSE/AVX1 machines) Exp, Tanh, Sigmoid, Erf, Gelu, LogSoftmax,
#     LayerNormalization, MatMul/Gemm/Conv round differently (separate mul + add).
#
# Usage:
#   scripts/run_under_cpu.sh CPU_MODEL [pytest args...]
#
# Examples:
#   scripts/run_under_cpu.sh Haswell   tests/test_onnx_matrix.py -q      # AVX2+FMA3, no AVX-512
#   scripts/run_under_cpu.sh EPYC-Rome tests/test_onnx_matrix.py -q      # AMD Zen 2: same kernels as Haswell
#   scripts/run_under_cpu.sh Nehalem   tests/test_onnx_matrix.py -q      # SSE4.2 only: no AVX, no FMA
#   qemu-x86_64 -cpu help                                                # list the CPU models
#
# Requirements: qemu user-mode emulation (Debian/Ubuntu: `apt-get install -y qemu-user`).
#
# Notes:
#   - qemu's TCG (at least up to 7.2, Debian bookworm) emulates up to AVX2/FMA3/F16C but
#     NOT AVX-512: models such as Skylake-Server or Icelake-Server silently lose their
#     AVX-512 features (qemu prints a warning for each) and behave like an AVX2 CPU.
#     AVX-512 results can only be had from real hardware.
#   - `-cpu max` = everything TCG can do = an AVX2/FMA3 machine (same results as Haswell).
#   - Only this python process (and its threads) is emulated.  Child processes that tests
#     start with subprocess (e.g. CLI tests) run natively on the host CPU, unless
#     qemu-user-binfmt is set up.
#   - Emulation is slower: tests/test_onnx_matrix.py took ~1.3 min under Haswell and
#     2.5-6 min under Nehalem, against ~1 min natively (2-core AVX-512 host).
#   - Extra qemu options can be passed in QEMU_OPTS (e.g. QEMU_OPTS="-d unimp").
set -euo pipefail

usage() {
    echo "usage: $0 CPU_MODEL [pytest args...]   (CPU_MODEL e.g. Haswell, EPYC-Rome, Nehalem; see 'qemu-x86_64 -cpu help')" >&2
    exit 2
}

[[ $# -ge 1 ]] || usage
case "$1" in -h|--help) usage ;; esac
cpu_model=$1
shift

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python="$repo/.venv/bin/python"

if [[ "$(uname -m)" != "x86_64" ]]; then
    echo "error: this script emulates x86-64 CPU models and needs an x86-64 host (this is $(uname -m))" >&2
    exit 1
fi

if ! command -v qemu-x86_64 >/dev/null 2>&1; then
    echo "error: qemu-x86_64 (qemu user-mode emulation) is not installed." >&2
    echo "       Install it with:  apt-get install -y qemu-user   (as root, or with sudo)" >&2
    exit 1
fi

if [[ ! -e "$python" ]]; then
    echo "error: no virtual environment python at $python (create .venv first)" >&2
    exit 1
fi

# qemu-user loads the program itself, so the venv's python must resolve (through its
# symlinks, e.g. into pyenv) to a real x86-64 ELF binary -- not a shell-script shim.
real_python=$(readlink -f "$python")
if [[ "$(head -c 4 "$real_python" | od -An -c | tr -d ' ')" != '177ELF' ]]; then
    echo "error: $python resolves to $real_python, which is not an ELF binary" >&2
    echo "       (a wrapper script?); qemu-x86_64 needs the real interpreter binary." >&2
    exit 1
fi

# (`qemu-x86_64 -cpu help` exits with status 1 after printing the list, hence the
# `|| true`; and the list is collected first because with pipefail a `grep -q` that
# closes the pipe early would make qemu die of SIGPIPE and the check fail at random)
known_models=$( (qemu-x86_64 -cpu help 2>/dev/null || true) | awk '{print $2}')
if ! grep -qx -- "${cpu_model%%,*}" <<<"$known_models"; then
    echo "error: qemu-x86_64 does not know the CPU model '${cpu_model%%,*}'; see 'qemu-x86_64 -cpu help'" >&2
    exit 1
fi

# Host features that TCG cannot emulate and that MLAS never looks at.  Removing them
# silences qemu's "TCG doesn't support requested feature" warning, which otherwise is
# printed again for every thread onnxruntime starts.  Warnings about features that DO
# matter (e.g. avx512f on Skylake-Server) are still shown.
quiet=",-pcid,-x2apic,-tsc-deadline,-hle,-rtm,-invpcid"
cpu="$cpu_model"
[[ "$cpu_model" == max ]] || cpu="$cpu_model$quiet"

# We pass the venv path (not the resolved binary) so that python finds pyvenv.cfg
# and uses the venv's site-packages.
qemu=(qemu-x86_64 -cpu "$cpu" ${QEMU_OPTS:-})

# Show what the emulated CPU looks like to software (numpy reads the same CPUID bits
# that onnxruntime's MLAS dispatch reads).
features=$("${qemu[@]}" "$python" -c '
try:
    from numpy._core._multiarray_umath import __cpu_features__ as f
except ImportError:
    from numpy.core._multiarray_umath import __cpu_features__ as f
names = ["SSE41", "SSE42", "AVX", "F16C", "FMA3", "AVX2", "AVX512F", "AVX512_SKX"]
print(" ".join(n for n in names if f.get(n)) or "baseline SSE2 only")
' 2>/dev/null) || {
    echo "error: could not start $python under qemu-x86_64 -cpu $cpu" >&2
    exit 1
}
echo "run_under_cpu: qemu-x86_64 -cpu $cpu_model; CPU features seen: $features" >&2

cd "$repo"
exec "${qemu[@]}" "$python" -m pytest "$@"
