"""Every example runs as users run it, and prints the results it promises; docs/ is current.

Each ``examples/*.py`` runs in a subprocess (``sys.executable``) in a fresh working
directory; the checks below read its output. ``scripts/gen_docs.py --check`` regenerates
docs/ into a temp dir and fails when any page differs from the library.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import graphdsl as gd

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
GEN_DOCS = ROOT / "scripts" / "gen_docs.py"
TIMEOUT = 120


def run_script(script: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def lines_matching(out: str, pattern: str) -> list[str]:
    return [line for line in out.splitlines() if re.search(pattern, line)]


# ------------------------------------------------------------------ per-example checks


def check_quickstart(out: str, cwd: Path) -> None:
    assert "%2: float32[] = cast %n, to=float32" in out  # the int16 offset is promoted
    assert "graph quickstart, policy 'default': 7 implicit conversions" in out
    assert "output2: int32[2] [-2, -3]" in out
    assert len(lines_matching(out, r"equal: True$")) == 3
    assert "equal: False" not in out
    assert (cwd / "quickstart.onnx").stat().st_size > 0


def check_mlp_bf16(out: str, cwd: Path) -> None:
    assert "%0: bfloat16[4, 16] = constant" in out
    assert "%1: float32[4, 16] = cast %0, to=float32" in out
    assert "graph mlp_bf16, policy 'default': 6 implicit conversions" in out
    assert "policy 'default': float32 x bfloat16 -> float32" in out
    assert re.search(r"^logits: float32\[5, 3\]", out, re.M)
    assert re.search(r"^probs: float32\[5, 3\]", out, re.M)
    (predicted,) = lines_matching(out, r"^predicted classes: ")
    (reference,) = lines_matching(out, r"^reference classes: ")
    assert predicted.split(": ")[1] == reference.split(": ")[1]
    assert out.rstrip().endswith("onnxruntime matches gd.evaluate within 1e-05: True")
    assert (cwd / "mlp_bf16.onnx").stat().st_size > 0


def check_anvil_ambiguity(out: str, cwd: Path) -> None:
    # seed 004: z = x + 1 is i32?, z * y with y i16 is i16, and f(TRUE, 2L) is 4
    assert re.search(r"^1        : int32\?\[\]", out, re.M)
    assert re.search(r"^z = x \+ 1: int32\?\[\]   because \{anvil\} exception", out, re.M)
    assert (
        "z * y    : int16[]   because {anvil}: the ambiguous int32? yields to the known int16"
        in out
    )
    assert "z * y    : int32[]" in out  # with z known, y is promoted instead
    assert "%3: int16[] = cast %2, to=int16" in out  # the ambiguous sum is narrowed
    assert "anvil_f: gd.evaluate -> 4 (int16), onnxruntime -> 4 (int16), equal: True" in out
    assert "anvil_f_known: gd.evaluate -> 4 (int32), onnxruntime -> 4 (int32), equal: True" in out


def parse_table(out: str) -> tuple[list[str], dict[str, dict[str, str]], dict[str, str]]:
    """The side-by-side table: policies, {expression: {policy: cell}}, {footnote: reason}."""
    lines = out.splitlines()
    header = [c.strip() for c in lines[0].split("|")]
    policies = header[1:]
    rows: dict[str, dict[str, str]] = {}
    for line in lines[2:]:
        if not line.strip():
            break
        cells = [c.strip() for c in line.split("|")]
        rows[cells[0]] = dict(zip(policies, cells[1:], strict=True))
    notes = dict(re.findall(r"^\[(\d+)\] (.*)$", out, re.M))
    return policies, rows, notes


def check_policies_side_by_side(out: str, cwd: Path) -> None:
    policies, rows, notes = parse_table(out)
    assert policies == gd.policy_names()
    headline = rows["a + b * 2 + 1.5   (i16, u32)"]
    assert headline["default"] == "float32?"
    assert headline["jax"] == "float64?"
    assert headline["anvil"] == "float32?"
    for policy, kind in (("jax-strict", "PromotionError"), ("max", "LiteralError")):
        n = re.fullmatch(r"error \[(\d+)\]", headline[policy])
        assert n, headline[policy]
        assert notes[n.group(1)].startswith(kind)
    assert rows["a + b             (u32, i32)"]["default"] == "int64"
    assert rows["a + b             (u32, i32)"]["jax-x32"] == "int32"
    assert rows["a + b             (i64, u64)"]["max"] == "float16"
    assert rows["a * b             (f16, bf16)"]["max"] == "bfloat16"
    assert rows["a / 2             (i32)"]["jax"] == "float64"
    literal = rows["a + 1000          (i8)"]
    for cell in literal.values():  # every policy refuses, for the same reason (max-graph
        (n,) = re.findall(r"\d+", cell)  # after max.graph's own words)
        assert notes[n].startswith("LiteralError: "), notes[n]
        assert "the literal 1000 does not fit int8 (range -128..127)" in notes[n]
    assert notes[re.findall(r"\d+", literal["max-graph"])[0]].startswith(
        "LiteralError: Unsafe cast: Can't promote python int with value (1000)"
    )
    for row in rows.values():  # every error cell has its footnote
        for cell in row.values():
            for ref in re.findall(r"error \[(\d+)\]", cell):
                assert ref in notes
    # uint32 wraps in b * 2; float32 rounds the sum, float64 does not
    assert "  jax        float64: [1705032405.5, 18.5, 32770.5]" in out
    assert "  default    float32: [1705032448.0, 18.5, 32770.5]" in out


def check_custom_lattice(out: str, cwd: Path) -> None:
    assert (
        "rejected: lattice 'f8-broken' is not a lattice: float8_e4m3fn and float8_e5m2 have no "
        "least upper bound (the upper bounds bfloat16, float16 are unordered)"
    ) in out
    assert "rejected: lattice 'f8-cyclic' has a cycle: " in out
    assert "float8_e4m3fn x float16  -> float16" in out
    assert "float8_e4m3fn x bfloat16 -> bfloat16" in out
    assert "float16 x bfloat16       -> float32" in out
    assert "float8_e4m3fn x int8     -> float32" in out
    assert "%4: float16[2, 3] = cast %3, to=float16" in out
    assert "output0: float8_e4m3fn[2, 3] [[2.5, -3.5, 2.0], [7.5, 0.5, 0.25]]  equal: True" in out
    assert len(lines_matching(out, r"^output\d: .*equal: True$")) == 4
    assert out.rstrip().endswith("onnxruntime matches gd.evaluate: True")
    assert (cwd / "custom_lattice.onnx").stat().st_size > 0


def check_saved_model(out: str, cwd: Path) -> None:
    (props,) = lines_matching(out, r"^loaded saved_model.onnx: producer graphdsl, props ")
    assert ast.literal_eval(props.split("props ", 1)[1]) == {
        "graphdsl.policy": "default",
        "graphdsl.target": "cpu",
        "graphdsl.exact": "True",
    }
    assert "  input  k: tensor(int16) ['batch', 3]" in out
    assert "output1: int16 [[3, -4, 0], [-16384, 4, 0]]" in out  # floors; by zero gives 0
    assert "output2: int16 [[1, 1, 0], [0, 1, 0]]" in out
    assert "output3: int8 [[100, 127, 50], [127, 0, -128]]" in out  # saturates, NaN -> 0
    assert len(lines_matching(out, r"equal: True$")) == 4
    assert out.rstrip().endswith("plain onnxruntime reproduces gd.evaluate: True")
    assert (cwd / "saved_model.onnx").stat().st_size > 0


def _check_block(name: str, nodes: int) -> Callable[[str, Path], None]:
    def check(out: str, cwd: Path) -> None:
        assert f"graph {name}: " in out and f"-> {nodes} ONNX nodes" in out
        errors = [float(e) for e in re.findall(r"max \|onnxruntime - evaluate\| = (\S+)", out)]
        assert len(errors) == 3 and max(errors) < 1e-5  # float32 rounding of O(1) values
        assert (cwd / f"{name}.onnx").stat().st_size > 0

    return check


def check_hf_llama(out: str, cwd: Path) -> None:
    assert re.search(r"^exported: \d+ ONNX nodes, outputs \['logits', 'present_key_0'", out, re.M)
    equal = lines_matching(out, r"greedy tokens equal .*: True$")
    assert len(equal) == (1 if "is not installed" in out else 2), out
    assert ": False" not in out


CHECKS: dict[str, Callable[[str, Path], None]] = {
    "hf_llama.py": check_hf_llama,
    "quickstart.py": check_quickstart,
    "mlp_bf16.py": check_mlp_bf16,
    "anvil_ambiguity.py": check_anvil_ambiguity,
    "policies_side_by_side.py": check_policies_side_by_side,
    "custom_lattice.py": check_custom_lattice,
    "saved_model.py": check_saved_model,
    # ONNX node counts: those of the hand-written models (tests/test_transformer_blocks.py)
    "gpt2_block.py": _check_block("gpt2_block", 36),
    "llama_block.py": _check_block("llama_block", 65),
}


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script: Path, tmp_path: Path) -> None:
    proc = run_script(script, tmp_path)
    assert proc.returncode == 0, f"{script.name} exited {proc.returncode}:\n{proc.stderr}"
    assert proc.stdout.strip(), f"{script.name} printed nothing"
    check = CHECKS.get(script.name)
    if check is not None:
        check(proc.stdout, tmp_path)


def test_every_documented_example_exists() -> None:
    assert set(CHECKS) <= {p.name for p in EXAMPLES}


def test_saved_model_runs_without_graphdsl(tmp_path: Path) -> None:
    # examples/saved_model.py's run_with_onnxruntime must work where graphdsl is not installed
    proc = run_script(ROOT / "examples" / "saved_model.py", tmp_path)
    assert proc.returncode == 0, proc.stderr
    code = (
        "import sys, runpy, numpy as np\n"
        "sys.modules['graphdsl'] = None\n"  # any graphdsl import now raises ImportError
        "sys.modules['exporters'] = None\n"
        f"ns = runpy.run_path({str(ROOT / 'examples' / 'saved_model.py')!r})\n"
        "x = np.array([[1.0, 2.0, 0.5]], np.float32)\n"
        "k = np.array([[-7, 7, -32768]], np.int16)\n"
        "d = np.array([2, -2, -1], np.int16)\n"
        "out = ns['run_with_onnxruntime']('saved_model.onnx', {'x': x, 'k': k, 'd': d})\n"
        "print('RESULT', *(out[f'output{i}'].tolist() for i in (1, 2, 3)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert proc.returncode == 0, proc.stderr
    assert "RESULT [[-4, -4, -32768]] [[1, -1, 0]] [[100, 127, 50]]" in proc.stdout


# ------------------------------------------------------------------ docs


@pytest.mark.lint  # (generated with the newest releases: an onnx release names its opsets)
def test_docs_are_current() -> None:
    proc = run_script(GEN_DOCS, ROOT, "--check")
    assert proc.returncode == 0, (
        "docs/ is stale; run `python scripts/gen_docs.py` and commit docs/:\n" + proc.stdout
    )
    assert "docs are current" in proc.stdout


def test_docs_check_lists_stale_files(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    page = docs / "policies" / "jax.md"
    page.write_text(page.read_text().replace("f8e4m3fn", "f8e4m3", 1))
    (docs / "policies" / "retired.md").write_text("an old page\n")
    proc = run_script(GEN_DOCS, ROOT, "--check", "--out", str(docs))
    assert proc.returncode == 1
    assert "stale: docs/policies/jax.md differs" in proc.stdout
    assert "stale: docs/policies/retired.md is not generated any more" in proc.stdout
    assert "stale: docs/policies/max.md" not in proc.stdout


def test_readme_first_graph_runs_and_prints_what_the_readme_shows(tmp_path: Path) -> None:
    """The README's first code block runs as written and prints the text IR shown under it."""
    text = (ROOT / "README.md").read_text()
    found = re.search(r"```python\n(.*?)```\s*```\n(.*?)```", text, re.S)
    assert found is not None, "the README's first python block and the output under it"
    code, shown = found.groups()
    check = "print(gd.evaluate(g, inputs)[0].shape, run(export(g), inputs)[0].shape)"
    script = tmp_path / "first_graph.py"
    script.write_text(f"{code}\n{check}\n")
    r = run_script(script, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(shown), f"README shows:\n{shown}\nthe code prints:\n{r.stdout}"
    assert r.stdout.rstrip().endswith("(2, 3) (2, 3)")
    assert (tmp_path / "mlp.onnx").exists()


def test_the_readme_lists_every_example() -> None:
    """README.md names each script of examples/ (its list had fallen behind docs/index.md)."""
    text = (ROOT / "README.md").read_text()
    missing = [p.name for p in sorted((ROOT / "examples").glob("*.py")) if f"`{p.name}`" not in
               text and f"examples/{p.name}" not in text]  # fmt: skip
    assert missing == []
