"""The command line on user scripts: ``python -m graphdsl explain|draw FILE.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """\
import graphdsl as gd

g = gd.Graph("demo", input_types={"x": gd.TensorType(gd.int16, (4,)), "y": gd.float32})
x, y = g.inputs
z = x * 2 + y
g.output(z)
"""

TWO_GRAPHS = """\
import graphdsl as gd


def build(name, policy):
    g = gd.Graph(name, input_types={"u": gd.uint32, "i": gd.int32}, policy=policy)
    u, i = g.inputs
    g.output(u + i)
    return g


if __name__ == "__main__":
    first = build("wide", "jax")
    second = build("narrow", "jax-x32")
    gd.passes.run_passes(first)  # graphs made by passes are not the script's
"""

EXPLICIT_CAST = """\
import graphdsl as gd

g = gd.Graph("ex", input_types={"d": gd.float64})
(d,) = g.inputs
g.output(d.cast(gd.float32))
"""

NO_GRAPH = """\
import graphdsl as gd

print(gd.policy_names())
"""

CAST_FILL = 'fillcolor="#f4a261"'


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphdsl", *args],
        capture_output=True, text=True, check=False, cwd=cwd, timeout=120,
    )  # fmt: skip


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------- explain


def test_explain_lists_the_conversions(tmp_path: Path) -> None:
    script = write(tmp_path, "demo.py", SCRIPT)
    r = run("explain", str(script), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "graph demo, policy 'default': 2 implicit conversions"
    # the literal 2 yields to int16 ({anvil} rule); int16 x float32 -> float32 (lattice join)
    assert lines[1].startswith("  mul at demo.py:5: literal 2 -> constant int16 (operand types")
    assert "{anvil}: the ambiguous int32? yields to the known int16" in lines[1]
    assert lines[2] == "      | z = x * 2 + y"
    assert lines[3].startswith("  add at demo.py:5: operand 0 %1 int16 -> float32")
    assert "(operand types int16[4], float32[])" in lines[3]
    assert "join in the jax lattice: int16 -> int32 -> int64 -> f* ->" in lines[3]
    assert lines[4] == "      | z = x * 2 + y"
    assert len(lines) == 5


def test_explain_every_graph_the_script_builds(tmp_path: Path) -> None:
    script = write(tmp_path, "two.py", TWO_GRAPHS)
    r = run("explain", str(script), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    heads = [t for t in r.stdout.splitlines() if t.startswith("graph ")]
    assert heads == [
        "graph wide, policy 'jax': 2 implicit conversions",
        "graph narrow, policy 'jax-x32': 1 implicit conversions",
    ]
    # x64: both go to int64; x32: uint32 x int32 -> int32, only the uint32 is cast
    assert "operand 0 %u uint32 -> int64" in r.stdout
    assert "operand 1 %i int32 -> int64" in r.stdout
    assert "operand 0 %u uint32 -> int32" in r.stdout
    assert r.stdout.count("| g.output(u + i)") == 3


def test_explain_script_without_graphs_exits_1(tmp_path: Path) -> None:
    script = write(tmp_path, "none.py", NO_GRAPH)
    r = run("explain", str(script), cwd=tmp_path)
    assert r.returncode == 1
    assert "built no graphs" in r.stdout


def test_explain_reports_a_build_error(tmp_path: Path) -> None:
    bad = SCRIPT.replace('"demo"', '"demo", policy="array-api"')
    script = write(tmp_path, "bad.py", bad)
    r = run("explain", str(script), cwd=tmp_path)
    assert r.returncode == 2
    assert "cannot promote int16 and float32" in r.stderr and "bad.py:5" in r.stderr


def test_explain_missing_script_is_an_error_message(tmp_path: Path) -> None:
    """The CLI reports errors as 'error: ...' with exit code 2, not as a traceback."""
    r = run("explain", str(tmp_path / "missing.py"), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "no such script" in r.stderr
    assert "Traceback" not in r.stderr


# ---------------------------------------------------------------------------- draw


def _node_lines(dot: str, op: str) -> list[str]:
    return [t for t in dot.splitlines() if f"= {op}" in t and "[label=" in t]


def test_draw_writes_dot_with_explicit_cast_highlighted(tmp_path: Path) -> None:
    script = write(tmp_path, "ex.py", EXPLICIT_CAST)
    prefix = tmp_path / "out" / "drawn"
    prefix.parent.mkdir()
    r = run("draw", str(script), "--format", "dot", "-o", str(prefix), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    path = Path(f"{prefix}.dot")
    assert r.stdout.strip() == f"wrote {path}"
    dot = path.read_text()
    assert dot.startswith('digraph "ex" {')
    (cast,) = _node_lines(dot, "cast")
    assert "to=float32" in cast and CAST_FILL in cast
    assert dot.count(CAST_FILL) == 1  # only the cast is orange


def test_draw_shows_implicit_conversions_as_highlighted_casts(tmp_path: Path) -> None:
    """z = x * 2 + y converts int16 to float32: the drawing shows that Cast, highlighted."""
    script = write(tmp_path, "demo.py", SCRIPT)
    r = run("draw", str(script), "--format", "dot", "-o", str(tmp_path / "demo"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    dot = (tmp_path / "demo.dot").read_text()
    casts = _node_lines(dot, "cast")
    assert len(casts) == 1, dot
    assert "to=float32" in casts[0] and "float32[4]" in casts[0] and CAST_FILL in casts[0]


def test_draw_one_file_per_graph(tmp_path: Path) -> None:
    script = write(tmp_path, "two.py", TWO_GRAPHS)
    r = run("draw", str(script), "--format", "dot", "-o", str(tmp_path / "p"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p-wide.dot").read_text().startswith('digraph "wide" {')
    assert (tmp_path / "p-narrow.dot").read_text().startswith('digraph "narrow" {')
    assert sorted(p.name for p in tmp_path.glob("*.dot")) == ["p-narrow.dot", "p-wide.dot"]


def test_draw_writes_nothing_where_it_was_not_told(tmp_path: Path) -> None:
    """Without -o the DOT text goes to stdout (it wrote ex.dot into the working directory);
    PNG, which cannot, asks for -o."""
    script = write(tmp_path, "ex.py", EXPLICIT_CAST)
    r = run("draw", str(script), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith('digraph "ex" {') and CAST_FILL in r.stdout
    r = run("draw", str(script), "--format", "png", cwd=tmp_path)
    assert r.returncode == 2 and "png output needs -o" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ex.py"]


def test_draw_script_without_graphs_exits_1(tmp_path: Path) -> None:
    script = write(tmp_path, "none.py", NO_GRAPH)
    r = run("draw", str(script), "--format", "dot", "-o", str(tmp_path / "n"), cwd=tmp_path)
    assert r.returncode == 1
    assert "built no graphs" in r.stdout
    assert list(tmp_path.glob("*.dot")) == []


@pytest.mark.parametrize("cmd", ["explain", "draw"])
def test_help(cmd: str, tmp_path: Path) -> None:
    r = run(cmd, "--help", cwd=tmp_path)
    assert r.returncode == 0 and "script" in r.stdout
