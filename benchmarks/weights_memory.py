"""Peak memory of exporting a model whose weights come from a file, against their size N.

    python benchmarks/weights_memory.py              # N = 384 MB of float32 weights
    python benchmarks/weights_memory.py --mb 64      # smaller

Writes N bytes of weights (``--layers`` float32 matrices) to a ``.safetensors`` and a
``.npz`` file, then, each in a fresh process, builds a graph that declares them
(``g.weight``) and exports it to a path with ``weights=gd.load_weights(file)``. The child
reports ``resource.getrusage``'s peak RSS just before ``export`` (Python, numpy, onnx,
onnxruntime loaded, the graph built) and after it; the growth over N is the figure the
design bounds (one weight tensor at a time beyond the memory map: far below 1). For
contrast the same model is exported with the weights as constants read into memory
(``g.constant(array)``), which holds all of them at once.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r"""
import json, os, resource, sys
import numpy as np
import onnx, onnxruntime  # loaded before the baseline, as in a user's process
import graphdsl as gd
from exporters.onnx import export

mode, source, out, layers, dim = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:6])

def peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB

g = gd.Graph("mlp", input_types={"x": gd.TensorType(gd.float32, ("batch", dim))})
y = g.inputs[0]
if mode == "constants":
    loaded = np.load(source)
    base = peak()
    for k in range(layers):
        y = gd.ops.relu(y @ g.constant(loaded[f"layers.{k}.w"]))
    weights = None
else:
    for k in range(layers):
        y = gd.ops.relu(y @ g.weight(f"layers.{k}.w", gd.float32, (dim, dim)))
    weights = gd.load_weights(source)
    base = peak()
g.output(y)
export(g, out, weights=weights, check="full")
data = out + ".data"
size = os.path.getsize(out) + (os.path.getsize(data) if os.path.exists(data) else 0)
print(json.dumps({"base": base, "peak": peak(), "size": size}))
"""


def _child(code: str, *argv: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          env=env)  # fmt: skip
    if done.returncode:
        raise SystemExit(f"a child process failed:\n{done.stderr}")
    return done.stdout


def measure(mode: str, source: str, out: str, layers: int, dim: int) -> dict[str, int]:
    """Peak RSS before and after the export, and the model's size on disk, in bytes."""
    stdout = _child(CHILD, mode, source, out, str(layers), str(dim))
    result: dict[str, int] = json.loads(stdout.strip().splitlines()[-1])
    return result


WRITER = r"""
import sys
import numpy as np
import graphdsl as gd

layers, dim, paths = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
rng = np.random.default_rng(0)
arrays = {f"layers.{k}.w": rng.standard_normal((dim, dim), np.float32) / dim
          for k in range(layers)}
for path in paths:
    gd.save_weights(path, arrays)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=384.0, help="weight bytes N, in MB (1e6 bytes)")
    ap.add_argument("--layers", type=int, default=8, help="weight matrices (layers)")
    args = ap.parse_args()
    dim = int((args.mb * 1e6 / args.layers / 4) ** 0.5)
    n = args.layers * dim * dim * 4
    with tempfile.TemporaryDirectory() as tmp:
        files = {"safetensors": os.path.join(tmp, "w.safetensors"),
                 "npz": os.path.join(tmp, "w.npz")}  # fmt: skip
        # written by another process: a child's peak RSS starts at its parent's (Linux keeps
        # the high-water mark across fork and exec), so this one stays small
        _child(WRITER, str(args.layers), str(dim), *files.values())
        print(f"N = {n / 1e6:.1f} MB of weights: {args.layers} float32 matrices of "
              f"{dim}x{dim} ({dim * dim * 4 / 1e6:.1f} MB each)")  # fmt: skip
        print(f"{'export':<30} {'RSS before':>11} {'peak RSS':>10} {'growth':>9} {'growth/N':>9}")
        runs = [("weights from .safetensors", "weights", files["safetensors"]),
                ("weights from .npz (stored)", "weights", files["npz"]),
                ("constants (arrays in memory)", "constants", files["npz"])]  # fmt: skip
        for label, mode, source in runs:
            r = measure(mode, source, os.path.join(tmp, f"m_{mode}.onnx"), args.layers, dim)
            assert r["size"] >= n, r
            growth = r["peak"] - r["base"]
            print(f"{label:<30} {r['base'] / 1e6:>8.0f} MB {r['peak'] / 1e6:>7.0f} MB "
                  f"{growth / 1e6:>6.0f} MB {growth / n:>9.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
