"""The code stays ruff- and mypy-clean: part of the test command, so CI enforces it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.lint


def _tool(name: str) -> list[str]:
    exe = shutil.which(name, path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.fail(f"{name} is not installed; pip install -e '.[test]'")
    return [exe]


def test_ruff_clean() -> None:
    r = subprocess.run(
        [*_tool("ruff"), "check", "graphdsl", "exporters", "tests", "examples", "benchmarks",
         "scripts"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_clean() -> None:
    r = subprocess.run(
        [*_tool("mypy")],  # strict, on the files pyproject.toml names
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
