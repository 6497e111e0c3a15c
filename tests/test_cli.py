"""The command line: table, lattice, promote."""

from __future__ import annotations

import subprocess
import sys

import pytest

from graphdsl.cli import main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphdsl", *args], capture_output=True, text=True, check=False
    )


def test_promote_prints_result_and_rule() -> None:
    r = run("promote", "int16", "f32?", "--policy", "anvil")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "int16 x float32? -> float32?   (policy anvil)"
    assert "{anvil} exception" in r.stdout and "int16 -> int32 -> int64 -> float32" in r.stdout


def test_promote_error_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["promote", "int8", "float32", "--policy", "array-api"]) == 2
    assert "cannot promote int8 and float32" in capsys.readouterr().err
    assert main(["promote", "i8", "float32"]) == 2
    assert "ambiguous" in capsys.readouterr().err


def test_table_md_and_csv(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["table", "--policy", "max"]) == 0
    md = capsys.readouterr().out
    assert md.splitlines()[0].startswith("|   | bool | int8 | int16 |")
    assert main(["table", "--policy", "jax", "--format", "csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == (
        ",b1,u1,u2,u4,u8,i1,i2,i4,i8,bf,f2,f4,f8,c8,c16,uint4,int4,f4e2m1fn,f6e2m3fn,"
        "f6e3m2fn,f8e4m3fn,f8e5m2,f8e4m3fnuz,f8e5m2fnuz,f8e8m0fnu,i*,f*,c*"
    )
    assert main(["table", "--policy", "anvil", "--ambiguous"]) == 0
    assert "| f64? | f64? |" in capsys.readouterr().out


def test_lattice_dot_and_png(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lattice", "--policy", "anvil"]) == 0
    assert '"uint64" -> "int64";' in capsys.readouterr().out
    assert main(["lattice", "--policy", "jax", "--format", "png"]) == 2  # (where to? -o)
    assert "png output needs -o" in capsys.readouterr().err
    pytest.importorskip("matplotlib", reason="PNG output needs the plot extra")
    out = f"{tmp_path}/l.png"
    assert main(["lattice", "--policy", "jax", "--format", "png", "-o", out]) == 0
    with open(out, "rb") as f:
        assert f.read(4) == b"\x89PNG"


@pytest.mark.parametrize("cmd", ["table", "lattice", "promote"])
def test_help(cmd: str) -> None:
    r = run(cmd, "--help")
    assert r.returncode == 0 and "--policy" in r.stdout
