"""Build+export speed of two checkouts side by side: chain(N) against onnx.helper in each.

    python benchmarks/compare_trees.py OLD_CHECKOUT [NEW_CHECKOUT] [--steps 10000] [--rounds 7]

For a refactor's before/after figure (``git worktree add /tmp/before REV`` makes the old
checkout). Each round runs one fresh process per checkout, the checkouts taking turns; a
process times graphdsl's chain (build with the garbage collector on, then ``export`` with its
defaults, as benchmarks/run.py does) and the hand-written onnx.helper model, best of 3 each,
and reports the ratio. The script prints each checkout's best ratio and the median.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/benchmarks")
import graphdsl
import run as bench
assert graphdsl.__file__.startswith(sys.argv[1]), graphdsl.__file__
steps = int(sys.argv[2])
def best(fn):
    times = []
    for _ in range(3):
        t0 = time.perf_counter(); fn(steps); times.append(time.perf_counter() - t0)
    return min(times)
ours, helper = best(bench.chain_graphdsl), best(bench.chain_helper)
print(json.dumps({"graphdsl": ours, "helper": helper}))
"""


def measure(tree: Path, steps: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tree), str(steps)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path, nargs="?", default=HERE.parent)
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    ratios: dict[str, list[float]] = {k: [] for k in trees}
    seconds: dict[str, list[float]] = {k: [] for k in trees}
    for r in range(args.rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for k in order:
            m = measure(trees[k], args.steps)
            ratios[k].append(m["graphdsl"] / m["helper"])
            seconds[k].append(m["graphdsl"])
    print(f"chain({args.steps}) build+export / onnx.helper, {args.rounds} rounds, each a best "
          "of 3 in a fresh process, the checkouts taking turns")  # fmt: skip
    for k, tree in trees.items():
        print(f"  {k} ({tree}): best {min(ratios[k]):.2f}x, median "
              f"{statistics.median(ratios[k]):.2f}x; graphdsl {min(seconds[k]):.3f} s")  # fmt: skip
    change = statistics.median(ratios["new"]) / statistics.median(ratios["old"])
    print(f"  new / old (medians): {change:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
