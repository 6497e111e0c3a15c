""".ci/run's two passes: the constraints of the oldest-versions pass are pyproject's bounds."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENT = re.compile(r'^\s*"([A-Za-z0-9_.-]+)(?:\[[^]]*\])?\s*(>=|==)\s*([0-9][^",<;]*)')


def _bounds(section: str) -> dict[str, str]:
    """name -> lowest version, of the requirements in pyproject.toml's ``section`` list."""
    text = (ROOT / "pyproject.toml").read_text()
    start = text.index(section) + len(section)
    body = text[start : text.index("]", start)]  # (no requirement names an extra)
    found = {}
    for line in body.splitlines():
        m = REQUIREMENT.match(line)
        if m:
            found[m.group(1).lower().replace("_", "-")] = m.group(3).strip()
    return found


def test_the_oldest_versions_pass_pins_pyprojects_bounds() -> None:
    pins = {}
    for line in (ROOT / ".ci" / "constraints-min.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.strip().lower().replace("_", "-")] = version.strip()
    wanted = {**_bounds("dependencies = ["), **_bounds("test = ["), **_bounds("plot = [")}
    assert "onnxruntime" in wanted and "ruff" in wanted and "matplotlib" in wanted
    def release(v: str) -> tuple[int, ...]:  # "8" and "8.0.0" are the same release
        parts = [int(p) for p in v.split(".")]
        while parts and parts[-1] == 0:
            parts.pop()
        return tuple(parts)

    for name, version in wanted.items():
        assert release(pins.get(name, "-1")) == release(version), name
    # jaxlib is jax's own pin; nothing else is pinned that pyproject does not bound
    assert set(pins) - set(wanted) == {"jaxlib"}


def test_ci_runs_the_readme_command_then_the_oldest_versions() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    command = ("pip install -c .ci/torch-cpu.txt -e '.[test,plot,models,docs]' && "
               ".venv/bin/python -m pytest")
    assert command in readme and command in ci
    # the oldest-versions passes leave out the linters and the site (pass 1 runs them)
    assert "constraints-min.txt" in ci and ci.count("-m 'not lint and not docs'") == 2


def test_each_pass_names_its_machine() -> None:
    import machine

    text = machine.describe()
    # the CPU, the flags that select kernels (present or absent: each named), the versions
    for word in ("family", "model", "avx2", "avx512f", "avx512_fp16", "amx_tile", "numpy ",
                 "onnxruntime ", "BLAS"):  # fmt: skip
        assert word in text, word
    ci = (ROOT / ".ci" / "run").read_text()
    # pass 1 (before its venv), passes 2 and 3, the comment
    assert ci.count("tests/machine.py") == 4
    assert ci.count("OPENBLAS_CORETYPE=Prescott") == 2
