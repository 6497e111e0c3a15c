#!/bin/bash
# The CUDA verification, on a GPU machine, from the project root (with onnxruntime-gpu; where
# it cannot be installed, through scripts/cuda_env.sh and ../shared/gpu/pack.sh's .gpu/):
#   bash scripts/cuda_env.sh bash scripts/cuda_check.sh
# Runs, side by side and each bounded by $T seconds:
#   - every test module that exports or runs models, with --provider cuda (one line per test
#     in $OUT/results.tsv as it ends, so that a run cut short keeps what finished);
#   - the fuzzer's random graphs with fresh seeds ($FUZZ_N graphs in $FUZZ_P processes, seeds
#     $FUZZ_SEED, $FUZZ_SEED + 1, ...);
#   - the example models (.gpu/examples_cuda.py, where present): placement, deviation from
#     gd.evaluate and time per call on CUDA;
#   - the kernel probe (scripts/probe_cuda.py kernels: cuda_kernels.jsonl).
# TESTS= picks the test files or ids; EXAMPLES=0 and PW=0 leave out the examples and the probe.
# Everything lands in $OUT/cuda_check.tgz (and pytest.txt beside it).
set -u
DEST=${OUT:-/tmp/out}
OUT=$DEST/files  # everything lands here, then in one archive: $DEST/cuda_check.tgz
T=${T:-400}
mkdir -p "$OUT"
{ nvidia-smi -L; python3 -c "import onnxruntime as o; print(o.__version__, o.get_available_providers())"; } \
  > "$OUT/smoke.txt" 2>&1
FILES=${TESTS:-"$(grep -l '^from backend import\|^import backend' tests/test_*.py | tr '\n' ' ') tests/test_cuda_rewrites.py"}
export PYTHONUNBUFFERED=1
(GRAPHDSL_RESULTS=$OUT/results.tsv timeout "$T" python3 -m pytest --provider cuda -n "${NW:-10}" \
   -q -p no:cacheprovider --timeout 240 $FILES > "$OUT/pytest.txt" 2>&1
 echo "rc=$?" >> "$OUT/pytest.txt") &
for k in $(seq 0 $((${FUZZ_P:-4} - 1))); do  # FUZZ_N graphs in FUZZ_P processes, one seed each
  (GRAPHDSL_FUZZ_EXAMPLES=$((${FUZZ_N:-1000} / ${FUZZ_P:-4})) \
     GRAPHDSL_FUZZ_SEED=$((${FUZZ_SEED:-20261127} + k)) GRAPHDSL_RESULTS=$OUT/fuzz_fresh.tsv \
     timeout "$T" python3 -m pytest --provider cuda -q -p no:cacheprovider tests/test_fuzz.py \
     -k test_random_graphs > "$OUT/fuzz_fresh_$k.txt" 2>&1
   echo "rc=$?" >> "$OUT/fuzz_fresh_$k.txt") &
done
if [ -e .gpu/examples_cuda.py ] && [ "${EXAMPLES:-1}" = 1 ]; then
  (SKIP_TORCH_ONNX=1 GPU_TF32=0 timeout $((T - 30)) python3 .gpu/examples_cuda.py "$PWD" \
     > "$OUT/examples.txt" 2>&1) &
fi
if [ "${PW:-3}" -gt 0 ]; then
  (timeout $((T - 30)) python3 scripts/probe_cuda.py kernels --out "$OUT" --workers "${PW:-3}" \
     > "$OUT/kernels.log" 2>&1) &
fi
wait
tail -n 2 "$OUT"/pytest.txt "$OUT"/fuzz_fresh_*.txt
cut -f3 "$OUT/results.tsv" | sort | uniq -c
tar czf "$DEST/cuda_check.tgz" -C "$OUT" . && cp "$OUT/pytest.txt" "$DEST/" && rm -rf "$OUT"
