"""Test configuration: make tests/ importable (goldens.py), keep hypothesis reproducible, and
choose the onnxruntime provider the suite runs on (``--provider cpu``, the default, or
``--provider cuda``: tests/backend.py)."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest
from hypothesis import Phase, settings

sys.path.insert(0, os.path.dirname(__file__))

import backend

# without hypothesis's "explain" phase: on a failure it reruns the shrunk example under a line
# tracer (one fuzz failure took over 15 minutes of a CI run there); the failure and its
# reproducing blob are printed all the same
_PHASES = [p for p in Phase if p is not Phase.explain]
settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True, phases=_PHASES
)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--provider",
        choices=("cpu", "cuda", "cuda-on-cpu"),
        default=os.environ.get("GRAPHDSL_TEST_PROVIDER", "cpu"),
        help="the onnxruntime provider the suite exports for and runs on (tests/backend.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    backend.configure(config.getoption("--provider"))


# the files that take most of the suite's time: the (op, dtype) matrix, the fuzzer and the
# bad-input catalogue; `pytest -m "not slow"` runs the rest (README.md: the fast part)
SLOW_FILES = frozenset({"test_onnx_matrix.py", "test_fuzz.py", "test_bad_inputs.py"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The provider, and the machine (tests/machine.py): float sums differ between CPUs, so a
    failure names the machine it happened on."""
    import machine

    return [f"graphdsl tests on onnxruntime's {backend.PROVIDER} provider",
            *machine.describe().splitlines()]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The machine again at the end, beside the failures (the header is not shown with -q,
    the suite's default)."""
    import machine

    for line in machine.describe().splitlines():
        terminalreporter.write_line(line)


_RESULTS = os.environ.get("GRAPHDSL_RESULTS")  # a file: one line per test, written as it ends


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """With GRAPHDSL_RESULTS set, append "nodeid, phase, outcome, seconds, message" per test
    as it ends (a run cut short by a time limit keeps what finished: scripts/cuda_check.sh)."""
    if not _RESULTS or not (report.when == "call" or report.outcome != "passed"):
        return
    msg = ""
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        msg = (crash.message if crash else str(report.longrepr)).replace("\n", " | ")[:600]
    line = f"{report.nodeid}\t{report.when}\t{report.outcome}\t{report.duration:.2f}\t{msg}\n"
    with open(_RESULTS, "a", encoding="utf-8") as f:
        f.write(line)


# tests/torch_resnet.py is a helper of the PyTorch oracle (tests/test_hf_examples.py, which
# skips where torch is missing); --doctest-modules would import it and fail there
collect_ignore = [] if importlib.util.find_spec("torch") else ["torch_resnet.py"]
