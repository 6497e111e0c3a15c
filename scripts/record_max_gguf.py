"""Record max 26.7's Q4_0 ``ops.dequantize`` and ``ops.qmatmul`` on its CPU into
tests/data/max_gguf_q4_0.json (tests/test_graphdsl_max_gguf.py's goldens): 32 rows of two
Q4_0 blocks (random codes, scales among a few float16 values; MAX's Q4_0 kernels repack the
weight and want N a multiple of 32), and a 2 x 64 lhs of small integers. Run with a Python
that has Modular's ``max`` (a throwaway venv: it is large):

    /tmp/maxvenv/bin/python scripts/record_max_gguf.py
"""

import json
from pathlib import Path

import numpy as np
from max import engine  # type: ignore[import-not-found, unused-ignore]
from max.driver import CPU, Buffer  # type: ignore[import-not-found, unused-ignore]
from max.dtype import DType  # type: ignore[import-not-found, unused-ignore]
from max.graph import DeviceRef, Graph, TensorType, ops  # type: ignore[import-not-found, unused-ignore]
from max.graph.quantization import QuantizationEncoding  # type: ignore[import-not-found, unused-ignore]

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "max_gguf_q4_0.json"


def main() -> None:
    rng = np.random.default_rng(7)
    rows, k = 32, 64
    blocks = []
    for _ in range(rows * k // 32):
        d = np.float16(rng.choice([0.5, -0.25, 1.5, 0.125, 3.0, -2.0]))
        codes = rng.integers(0, 256, size=16, dtype=np.uint8)
        blocks.append(np.concatenate([np.frombuffer(d.tobytes(), np.uint8), codes]))
    q = np.concatenate(blocks).reshape(rows, -1)
    x = rng.integers(-3, 4, size=(2, k)).astype(np.float32)
    cpu = DeviceRef.CPU()
    types = [TensorType(DType.uint8, list(q.shape), cpu), TensorType(DType.float32, [2, k], cpu)]
    q4 = QuantizationEncoding.Q4_0
    with Graph("gguf", input_types=types) as g:
        qq, xx = (v.tensor for v in g.inputs)
        g.output(ops.dequantize(q4, qq), ops.qmatmul(q4, None, xx, qq))
    model = engine.InferenceSession(devices=[CPU()]).load(g)
    deq, mm = (o.to_numpy() for o in model.execute(Buffer.from_numpy(q), Buffer.from_numpy(x)))
    record = {"max": "26.7", "q": q.tolist(), "x": x.tolist(), "dequantize": deq.tolist(),
              "qmatmul": mm.tolist()}  # fmt: skip
    with open(OUT, "w") as f:
        json.dump(record, f)
    print(f"wrote {OUT}: dequantize {deq.shape}, qmatmul {mm.shape}")


if __name__ == "__main__":
    main()
