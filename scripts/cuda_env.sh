#!/bin/bash
# On a GPU machine without network, from the project root with .gpu/ beside it (made here by
# ../shared/gpu/pack.sh: onnxruntime-gpu pruned to sm_90 and compressed): unpacks
# onnxruntime-gpu into /tmp/site, puts it and the CUDA libraries the machine's PyTorch brings
# on the paths, and runs the command given, e.g.
#   bash scripts/cuda_env.sh python3 -m pytest --provider cuda tests/test_onnx_matrix.py
# Nothing here is needed where `pip install onnxruntime-gpu` works.
set -eu
G=$PWD/.gpu
if [ ! -e /tmp/site/onnxruntime/capi/libonnxruntime_providers_cuda.so ]; then
  mkdir -p /tmp/site
  tar xJf "$G/ort_rest.tar.xz" -C /tmp/site
  xz -dc -T0 "$G/cuda.so.xz" > /tmp/site/onnxruntime/capi/libonnxruntime_providers_cuda.so
fi
SP=$(python3 -c "import site; print(site.getsitepackages()[0])")
LD_LIBRARY_PATH=$(find "$SP/nvidia" -name 'lib*.so*' -printf '%h\n' | sort -u | tr '\n' ':')${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
exec "$@"
