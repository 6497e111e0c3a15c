"""The fenced Python blocks of the documentation pages, and running them.

A ```` ```python ```` block runs unless the line before it (blank lines aside) is
``<!-- not run: REASON -->`` with a reason. The blocks of a page run in order in one
namespace, in a fresh process and an empty working directory, as a reader pastes them into
one session. A fenced block after a ``<!-- output -->`` line is what the last block before it
prints (compared exactly, trailing spaces aside).

    python tests/doc_blocks.py docs/quickstart.md    # run one page's blocks, print the report
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<ticks>```+)(?P<lang>[\w+-]*)[^\n]*\n"  # the opening fence
    r"(?P<body>.*?)^(?P=indent)(?P=ticks)[ \t]*$",  # the code, the closing fence
    re.M | re.S,
)
_NOT_RUN = re.compile(r"<!--\s*not run\s*(?::\s*(?P<reason>.*?))?\s*-->\s*$")
_OUTPUT = re.compile(r"<!--\s*output\s*-->\s*$")


@dataclass
class Block:
    """A fenced Python block of a page."""

    page: str
    line: int  # of its opening fence, 1-based
    code: str
    not_run: str | None = None  # the reason, where it is marked as not run
    expect: str | None = None  # what it prints, where the page shows it
    problems: list[str] = field(default_factory=list)


def _line_before(text: str, pos: int) -> str:
    """The last non-blank line of ``text`` before offset ``pos``."""
    before = text[:pos].rstrip().rsplit("\n", 1)
    return before[-1].strip() if before else ""


def blocks(page: str, text: str) -> list[Block]:
    """The Python blocks of the Markdown ``text`` of ``page``, each with its marks."""
    found: list[Block] = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = _line_before(text, m.start())
        lang = m["lang"].lower()
        body = "\n".join(s[len(m["indent"]) :] for s in m["body"].splitlines())
        if _OUTPUT.match(before):
            runnable = [b for b in found if b.not_run is None]
            if not runnable:
                raise ValueError(f"{page}:{line}: an output block with no run block before it")
            runnable[-1].expect = body
            continue
        if lang not in ("python", "py"):
            continue
        block = Block(page, line, body)
        nr = _NOT_RUN.match(before)
        if nr:
            reason = (nr["reason"] or "").strip()
            block.not_run = reason
            if not reason:
                block.problems.append("marked 'not run' without a reason")
        found.append(block)
    return found


_DRIVER = r"""
import contextlib, io, json, sys, traceback
blocks = json.load(sys.stdin)
ns = {"__name__": "__main__"}
report = []
for k, code in enumerate(blocks):
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"<block {k + 1}>", "exec"), ns)
        report.append({"ok": True, "stdout": out.getvalue()})
    except BaseException:
        report.append({"ok": False, "stdout": out.getvalue(), "error": traceback.format_exc()})
        break
sys.__stdout__.write("\n@@REPORT@@" + json.dumps(report))
"""


def run_page(page: str, found: list[Block], timeout: float = 300) -> list[str]:
    """Run the runnable blocks of one page; the problems found (empty when all is well)."""
    problems = [f"{b.page}:{b.line}: {p}" for b in found for p in b.problems]
    runnable = [b for b in found if b.not_run is None]
    if not runnable:
        return problems
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "MPLBACKEND": "Agg",
    }
    with tempfile.TemporaryDirectory(prefix="graphdsl-doc-") as cwd:
        proc = subprocess.run(
            [sys.executable, "-c", _DRIVER],
            input=json.dumps([b.code for b in runnable]),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env=env,
            check=False,
        )
    if "@@REPORT@@" not in proc.stdout:
        return [*problems, f"{page}: the blocks' process failed:\n{proc.stderr[-3000:]}"]
    report = json.loads(proc.stdout.rsplit("@@REPORT@@", 1)[1])
    for block, result in zip(runnable, report, strict=False):
        where = f"{block.page}:{block.line}"
        if not result["ok"]:
            problems.append(f"{where}: the block fails:\n{result['error'][-3000:]}")
            continue
        if block.expect is not None:
            got = "\n".join(s.rstrip() for s in result["stdout"].rstrip().splitlines())
            want = "\n".join(s.rstrip() for s in block.expect.rstrip().splitlines())
            if got != want:
                problems.append(f"{where}: prints\n{got}\nwhere the page shows\n{want}")
    return problems


def main(argv: list[str]) -> int:
    bad = []
    for path in argv:
        found = blocks(path, Path(path).read_text())
        ran = sum(b.not_run is None for b in found)
        print(f"{path}: {len(found)} blocks, {ran} run")
        bad += run_page(path, found)
    print("\n\n".join(bad) or "all blocks run")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
